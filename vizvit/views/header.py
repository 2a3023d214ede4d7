"""The page's header, shared by every tab (not a tab itself): the session's key for a new photo,
model or label list, and the lines that say what is shown. No gradio here; page/shell.py wires it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from vizvit.model.catalog import ModelId
from vizvit.model.zeroshot import check_template, required_labels
from vizvit.session import PhotoKey, Workbench
from vizvit.views import common, inside
from vizvit.views.patches import label_rule_text


def labelled(wb: Workbench, k: PhotoKey, labels_text: str, template: str) -> PhotoKey:
    """The key with the typed labels, for a CLIP / SigLIP model (others: none)."""
    if not wb.model(k.model_id).is_zero_shot:
        return dataclasses.replace(k, labels=(), template="")
    return dataclasses.replace(k, labels=required_labels(labels_text), template=check_template(template))


def status_of(wb: Workbench, k: PhotoKey) -> str:
    """The status line of the session's photo under its model (common.photo_status)."""
    return common.photo_status(wb, k)


def label_rule(wb: Workbench, model_id: str, labels_text: str, template: str) -> str:
    """What the labels box means for this model, with these labels."""
    return label_rule_text(wb.labelled(labelled(wb, PhotoKey(model_id, ""), labels_text, template)))


def photo_key(wb: Workbench, model_id: str, sha1: str, heads: str, ablate_mode: str, labels_text: str,
              template: str) -> PhotoKey:
    """A new photo's key: the heads switched off (Inside tab, or a link's ablate=) stay off, the
    typed labels stay."""
    g = wb.model(model_id).geometry
    return labelled(wb, PhotoKey(model_id, sha1, inside.session_ablation(heads, ablate_mode, g)), labels_text,
                    template)


@dataclass(frozen=True)
class LabelsChange:
    key: PhotoKey | None  # the session's new key; None: no photo yet
    rule: str
    status: str | None  # None: no photo yet


def new_labels(wb: Workbench, k: PhotoKey | None, model_id: str, labels_text: str, template: str) -> LabelsChange:
    """New zero-shot labels or template (Enter in either box)."""
    rule = label_rule(wb, k.model_id if k is not None else model_id, labels_text, template)
    if k is None:
        return LabelsChange(None, rule, None)
    k = labelled(wb, k, labels_text, template)
    return LabelsChange(k, rule, status_of(wb, k))


@dataclass(frozen=True)
class ModelChange:
    loaded: bool  # False: the model could not be loaded; the page keeps `model`
    key: PhotoKey | None  # the session's new key; None: unchanged (no photo yet, or not loaded)
    status: str
    model: str  # the model shown now (the requested one, or the current one when it failed)
    banner: str = ""
    rule: str = ""  # what the labels box means for this model
    zero_shot: bool = False  # whether the labels box and the label map show


def new_model(wb: Workbench, model_id: ModelId, k: PhotoKey | None, labels_text: str, template: str,
              default_model: str, offline: bool) -> ModelChange:
    """A model picked from the list, checked at the request's entry (Catalog.check). One that fails
    to load (offline, broken) leaves the list (see Workbench.model): the current model stays, and
    the status says why and names its random-weights twin when that is on the list."""
    catalog = wb.catalog
    try:
        vm = wb.model(model_id)
    except ValueError:
        current = wb.model(k.model_id if k else default_model)
        text = common.model_unavailable(model_id, current, catalog.twin(model_id) if catalog is not None else None)
        if k is not None:
            text += "\n\n" + status_of(wb, k)
        return ModelChange(False, None, text, current.id)
    b, rule = common.banner(vm, offline), label_rule(wb, model_id, labels_text, template)
    if k is None:
        return ModelChange(True, None, common.model_line(vm), model_id, b, rule, vm.is_zero_shot)
    k = labelled(wb, PhotoKey(model_id, k.sha1), labels_text, template)
    return ModelChange(True, k, status_of(wb, k), model_id, b, rule, vm.is_zero_shot)
