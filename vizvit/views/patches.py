"""The Patches tab: the model-input view cut into its grid, the token sequence, the top-5
and the model's numbers. No gradio here; page/tabs/patches.py wires these."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from vizvit.classroom.numbers import model_numbers
from vizvit.errors import UserError
from vizvit.model.engine import Analysis
from vizvit.model.models import Geometry, VitModel
from vizvit.model.patches import describe_patch
from vizvit.model.zeroshot import PATCH_LABEL_CAVEAT, patch_label_method
from vizvit.pictures import render
from vizvit.readings import patches as rp
from vizvit.session import Photo
from vizvit.views import flip
from vizvit.views.common import on_grid, top5_figure

PATCHES_TEXT = """**What you see.** The photo resized exactly as the model's image processor does it,
cut into a grid of P×P patches. Each patch is flattened (P·P·3 numbers) and projected to one
token; the grid is read row by row into a sequence, after a learned [CLS] token whose final state
feeds the classifier. **Click a patch** to see its row, column, token index and pixel box.
**Counting:** rows, columns and patch numbers count from 0 (patch k is row k // width, column
k % width); token 0 is [CLS], so patch k is token k + 1. Layers and heads count from 1."""


def patches_panel(vm: VitModel, a: Analysis, lines: bool = True, indices: bool = False,
                  clicked: tuple[int, int] | None = None) -> PatchesPage:
    """Everything on the Patches tab for a new photo or model (a plain ViT's: no labels)."""
    g = vm.geometry
    return PatchesPage(
        grid=patch_grid(vm, a, lines, indices, clicked),
        strip=render.sequence_strip(a.input_view, g, highlight=on_grid(clicked, g)),
        top5=top5_figure(vm, a),
        numbers=[[k, v] for k, v in model_numbers(vm)],
        patch_info=patch_text(g, clicked),
        explanation=patches_explanation(vm),
        label_text=label_rule_text(vm),
    )


def patches_explanation(vm: VitModel) -> str:
    """The Patches tab's text, with the numbers of the model on screen."""
    g = vm.geometry
    p, (gh, gw), (h, w) = g.patch_size, g.grid, g.image_size
    # SigLIP has no token in front of the patches
    front = f"with {' '.join(g.prefix_names)} in front" if g.prefix_names else "with no token in front (no [CLS])"
    return (f"**On this model:** the {w}×{h} input is cut into {gh}×{gw} = **{g.num_patches} patches** of "
            f"{p}×{p}×3 = **{p * p * 3:,} numbers** each. Each patch is multiplied by one learned {p * p * 3:,}×"
            f"{g.hidden_size} matrix to become a {g.hidden_size}-number token; {front} "
            f"the sequence has **{g.seq_len} tokens**, so each of the {g.num_heads} heads in each of the "
            f"{g.num_layers} layers "
            f"fills a {g.seq_len}×{g.seq_len} = {g.seq_len ** 2:,}-weight attention table. "
            f"**{vm.family.title}**: on top, {vm.family.head_text}. {vm.family.pe_text}")


def patch_grid(vm: VitModel, a: Analysis, lines: bool = True, indices: bool = False,
               clicked: tuple[int, int] | None = None) -> np.ndarray:
    """The enlarged model-input view with grid lines, numbers and the clicked patch."""
    return grid_of_view(vm.geometry, a.input_view, lines, indices, clicked)


def grid_of_view(g: Geometry, view: np.ndarray, lines: bool = True, indices: bool = False,
                 clicked: tuple[int, int] | None = None) -> np.ndarray:
    """patch_grid from the (H, W, 3) uint8 model-input view itself (no Analysis needed)."""
    big = render.enlarge(view, render.display_scale(g))
    return render.draw_grid(big, g, lines=lines, indices=indices, highlight=on_grid(clicked, g))


def patch_text(g: Geometry, clicked: tuple[int, int] | None) -> str:
    clicked = on_grid(clicked, g)
    return describe_patch(*clicked, g) if clicked else "*Click a patch in the grid.*"


# ------------------------------------------------------------------ entry points
@dataclass(frozen=True)
class PatchesParams:
    """Everything a control on the tab sets."""

    lines: bool = True  # grid lines
    indices: bool = False  # patch numbers
    clicked: tuple[int, int] | None = None  # (row, col)

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> PatchesParams:
        """The page's control values by field name -> PatchesParams."""
        return cls(lines=bool(v["lines"]), indices=bool(v["indices"]), clicked=v["clicked"])


@dataclass(frozen=True)
class PatchesPage:
    """What the tab shows on open, each field named like the component that shows it."""

    grid: np.ndarray  # (s·H, s·W, 3) uint8: enlarged model-input view with the grid
    strip: np.ndarray  # sequence strip, uint8
    top5: go.Figure | None  # None when the model has no classifier
    numbers: list[list[str]]
    patch_info: str
    explanation: str  # what you see, with this model's numbers
    # CLIP / SigLIP: which patches match a label (the top-1 at first); a plain ViT: no labels, no map
    labels: list[str] = dataclasses.field(default_factory=list)
    label: str | None = None
    label_map: np.ndarray | None = None
    label_text: str = ""
    book: flip.Flipbook | None = None  # the grid with lines and numbers on and off (grid_book)
    label_book: flip.Flipbook | None = None  # the top-5 labels' maps (label_book)


@dataclass(frozen=True)
class PatchesChange:
    """A control change (grid lines, numbers, a click): what it redraws."""

    grid: np.ndarray
    patch_info: str
    strip: np.ndarray  # outlines the clicked patch's token
    book: flip.Flipbook


GRID_CONTROLS = ("lines", "indices")


def grid_book(ph: Photo, p: PatchesParams) -> flip.Flipbook:
    """The grid with lines and numbers each on and off (four pictures, ~4 ms each), for the page
    to swap as the two boxes are ticked."""
    g, view = ph.vm.geometry, ph.input_view()
    pages = {flip.page_key(lines, indices): {"grid": grid_of_view(g, view, lines, indices, p.clicked)}
             for lines in (True, False) for indices in (True, False)}
    return flip.Flipbook(f"{ph.key!r}|{on_grid(p.clicked, g)}", GRID_CONTROLS, pages)


def show(ph: Photo, p: PatchesParams) -> PatchesPage:
    """On open (a new photo or model)."""
    vm, a = ph.vm, ph.analysis()
    page = dataclasses.replace(patches_panel(vm, a, p.lines, p.indices, p.clicked), book=grid_book(ph, p))
    if vm.zero_shot is None:
        return page
    img, text = label_map(ph)
    return dataclasses.replace(page, labels=label_choices(vm), label=a.top5[0].label, label_map=img, label_text=text,
                               label_book=label_book(ph, [p.label for p in a.top5]))


def preview(ph: Photo, p: PatchesParams) -> np.ndarray:
    """A new photo's grid before its forward pass: it needs none (it shows the model-input view).
    Pixel for pixel what show() draws once the forward is done, so the page gets the same file
    again and nothing flickers."""
    g = ph.wb.model(ph.key.model_id).geometry  # not ph.vm: no text forward for CLIP labels
    return grid_of_view(g, ph.input_view(), p.lines, p.indices, p.clicked)


def change(ph: Photo, p: PatchesParams) -> PatchesChange:
    """On a control change (grid lines, numbers, a click): the grid, the patch text and the
    sequence strip (which outlines the clicked patch's token)."""
    vm, a = ph.vm, ph.analysis()
    strip = render.sequence_strip(a.input_view, vm.geometry, highlight=on_grid(p.clicked, vm.geometry))
    return PatchesChange(patch_grid(vm, a, p.lines, p.indices, p.clicked), patch_text(vm.geometry, p.clicked), strip,
                         grid_book(ph, p))


# ------------------------------------------------------------------ CLIP / SigLIP: which patches match a label
def label_rule_text(vm: VitModel) -> str:
    """What the labels box means for this model (shown beside it)."""
    if vm.zero_shot is None:
        return ("*Labels apply to image-text models (CLIP, SigLIP) only: this model has its own "
                f"{len(vm.labels):,} classes.*" if vm.has_classifier
                else "*This model has no classifier and no text tower.*")
    return (f"**Zero-shot labels** ({len(vm.labels)}), each read as “{vm.zero_shot.template or '{}'}”. "
            f"Probabilities: {vm.zero_shot.rule_text}.")


def label_map(ph: Photo, label: int | str | None = None, alpha: float = 0.6) -> tuple[np.ndarray, str]:
    """The patch-label map of one label (index or text; None: the top-1): an overlay on the
    enlarged view and a text with the numbers and the caveat."""
    vm, a = ph.vm, ph.analysis()
    g = vm.geometry
    cos = rp.label_cosines(ph)
    if label is None or label == "":
        i = a.top5[0].index
    elif isinstance(label, str) and not label.lstrip("-").isdigit():
        if label not in vm.labels:
            raise UserError(f"{label!r} is not one of the labels: pick one from the list.")
        i = vm.labels.index(label)
    else:
        i = int(label)
        if not 0 <= i < len(vm.labels):
            raise UserError(f"Label index {i} is outside 0..{len(vm.labels) - 1}.")
    m = cos[i]
    lo, hi = float(m.min()), float(m.max())
    img = render.overlay(a.input_view, m, alpha, "RdBu_r", vmin=-max(abs(lo), abs(hi)), vmax=max(abs(lo), abs(hi)),
                         g=g)
    big = render.enlarge(img, render.display_scale(g))
    r, c = divmod(int(m.argmax()), g.grid[1])
    how = patch_label_method(vm.model)
    text = (f"**Which patches match “{vm.labels[i]}”** — {how}. Red: closer to the label, blue: "
            f"further (scale ±{max(abs(lo), abs(hi)):.3f}). Max {hi:+.3f} at (row {r}, col {c}), min {lo:+.3f}, "
            f"mean {float(m.mean()):+.3f}. ⚠️ {PATCH_LABEL_CAVEAT}")
    if not vm.is_pretrained:
        text += " **Untrained weights: this map means nothing.**"
    return big, text


LABEL_CONTROLS = ("label",)


def label_book(ph: Photo, labels: list[str], merge: bool = False) -> flip.Flipbook:
    """The patch-label maps of `labels` (~3 ms each), for the page to swap when one is picked from
    the list; merge: add them to the ones the page holds (a label picked since)."""
    return flip.Flipbook(repr(ph.key), LABEL_CONTROLS,
                         {flip.page_key(label): {"label_map": label_map(ph, label)[0]} for label in labels},
                         merge=merge)


def label_choices(vm: VitModel) -> list[str]:
    return list(vm.labels) if vm.zero_shot is not None else []


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    """arrays.npz: input_view (H, W, 3) uint8 and probs (C,) float32; CLIP / SigLIP also
    zero_shot_probs (C,), label_names (C,) and patch_label_cosine (C, gh, gw)."""
    a = ph.analysis()
    out = {"input_view": a.input_view}
    if a.probs is not None:
        out["probs"] = a.probs.numpy().astype(np.float32)
    vm = ph.vm
    if vm.zero_shot is not None and a.probs is not None:
        out["zero_shot_probs"] = a.probs.numpy().astype(np.float32)
        out["label_names"] = np.array(vm.labels)
        out["patch_label_cosine"] = rp.label_cosines(ph)
    return out


def export_figures(ph: Photo) -> dict[str, np.ndarray | go.Figure]:
    vm, a = ph.vm, ph.analysis()
    g = vm.geometry
    s = render.display_scale(g)
    out: dict[str, np.ndarray | go.Figure] = {
        "patch_grid": render.draw_grid(render.enlarge(a.input_view, s), g, indices=True),
        "sequence_strip": render.sequence_strip(a.input_view, g),
    }
    top5 = top5_figure(vm, a)
    if top5 is not None:
        out["top5_chart"] = top5
    return out
