"""Write every figure and number of one photo to a folder, no server needed.

Each tab's view module contributes arrays (``export_arrays``) and PNG figures
(``export_figures``), through the same ``Photo`` handle and caches as the page, so shared
work (rollouts, relevance, the sweep, the curves) is done once; README.md documents
every key of arrays.npz. The costly readings (the shift sweep, the contest's maps and its
hundreds of views, head importance) run first, each with its own progress bar on stderr
(``progress=True``: the command line), and the tabs then read them from the cache.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
from PIL import Image
from tqdm import tqdm

from vizvit.classroom.numbers import model_numbers
from vizvit.errors import UserError
from vizvit.methods import maths as attention
from vizvit.model.ablation import Ablation, format_heads
from vizvit.model.engine import Analysis, Prediction, Progress, load_model
from vizvit.model.images import View
from vizvit.model.models import Geometry, VitModel
from vizvit.model.tokens import OUTLIER_METHOD
from vizvit.model.zeroshot import DEFAULT_TEMPLATE, parse_labels, patch_label_method
from vizvit.pictures import figures
from vizvit.readings import artifacts_rule as artifacts, contest, heads, methods, sweep
from vizvit.session import Photo, PhotoKey, Workbench
from vizvit.views import VIEWS


class Bars:
    """One tqdm bar per stage of the export, on stderr (stdout carries the command's JSON); each new
    stage closes the one before. Disabled: no output at all (a library call, the tests' default)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None

    def stage(self, name: str, total: int | None = None, unit: str = "step") -> Bars:
        self.close()
        self.bar = tqdm(total=total, desc=name, unit=unit, file=sys.stderr, disable=not self.enabled,
                        dynamic_ncols=True, leave=True)
        return self

    def tell(self, done: int, total: int) -> None:
        """A batched run's (views done, views in all): engine.Progress."""
        if self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def step(self, n: int = 1) -> None:
        self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def costly_readings(ph: Photo, bars: Bars) -> None:
    """Run the readings that take most of an export's time, each under its own bar, into the caches the
    tabs' export_arrays and export_figures then read (the same calls with the same defaults)."""
    bars.stage("shift sweep", unit="view")
    sweep.full_sweep(ph, progress=bars.tell)
    if not ph.vm.has_classifier:
        return
    bars.stage("contest maps", total=1, unit="step")  # the class-specific maps: a backward pass each
    contest.curve_maps(ph)
    bars.step()

    def fill(name: str) -> Progress:
        bars.stage(f"contest views ({name} fill)", unit="view")
        return bars.tell

    contest.compute_contest(ph, progress=fill)
    bars.stage("head importance", unit="forward")
    for _, done, total in heads.importance_steps(ph):
        bars.tell(done, total)


def export(image_path: str | Path, out_dir: str | Path, model: str | VitModel = "google/vit-base-patch16-224",
           device: str = "auto", view: View = View(), ablation: Ablation = Ablation(),
           labels: str | tuple[str, ...] | None = None, template: str = DEFAULT_TEMPLATE,
           progress: bool = False, charts_png: bool = True, load_seconds: float | None = None) -> dict:
    """Analyse one photo and write summary.json, arrays.npz and one PNG per figure. Every array is
    of the intact model; with `ablation`, ``ablated_probs`` (C,) adds its heads-off prediction.
    labels (CLIP / SigLIP): "a cat,a dog" are the classes (default: the model's list), read through
    `template`; arrays then hold zero_shot_probs and label_names. progress: a bar per stage on stderr.
    charts_png=False: the charts only in charts.html, no PNG of them (kaleido starts a browser: seconds).
    load_seconds: how long the caller took to load `model` when it passes a loaded one (the command line
    loads it first, to refuse a bad model at once): summary.json's load_model, None when not told."""
    bars = Bars(progress)
    try:
        return _export(image_path, out_dir, model, device, view, ablation, labels, template, bars, charts_png,
                       load_seconds)
    finally:
        bars.close()


def _export(image_path: str | Path, out_dir: str | Path, model: str | VitModel, device: str, view: View,
            ablation: Ablation, labels: str | tuple[str, ...] | None, template: str, bars: Bars,
            charts_png: bool, load_seconds: float | None) -> dict:
    given = isinstance(model, VitModel)
    # A model passed in was loaded before this call: its time is the caller's to tell (it read ~1e-6 s
    # here), and the total counts it from where the caller's load began.
    t0 = time.perf_counter() - ((load_seconds or 0.0) if given else 0.0)
    vm = model if isinstance(model, VitModel) else load_model(model, device)
    t_load = load_seconds if given else time.perf_counter() - t0
    wb = Workbench(cache_bytes=1 << 40, photo_bytes=1 << 40)  # one photo: keep everything
    wb.add_model(vm)
    labs = parse_labels(labels)
    if labs and not vm.is_zero_shot:
        raise UserError("--labels needs an image-text model (CLIP or SigLIP); this model has its own classes.")
    ph = Photo(wb, PhotoKey(vm.id, wb.add_photo(image_path), labels=labs, template=template if labs else ""))
    bars.stage("forward", total=1)
    base = ph.analysis()
    a = ph.analysis(view) if not view.is_identity else base
    bars.step()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    t1 = time.perf_counter()
    costly_readings(ph, bars)
    arrays = _tab_arrays(ph, bars)
    if not view.is_identity and a.probs is not None:
        arrays["masked_probs"] = a.probs.numpy().astype(np.float32)
    ablated = (wb.analysis(PhotoKey(vm.id, ph.key.sha1, ablation.checked(vm.geometry), labs, ph.key.template), view)
               if ablation else None)
    if ablated is not None and ablated.probs is not None:
        arrays["ablated_probs"] = ablated.probs.numpy().astype(np.float32)
    # allow_pickle named (its default): mypy checks a ** of arrays against that keyword too
    np.savez_compressed(out / "arrays.npz", allow_pickle=True, **arrays)
    written, charts = _figures(ph, out, Path(image_path).name, bars, charts_png)
    bars.close()
    summary = {
        **_summary(vm, ph, Path(image_path).name, base, a, view, ablation, ablated),
        "timings_s": {"load_model": t_load, "forward": base.seconds,
                      "arrays_and_figures": time.perf_counter() - t1,
                      "total": time.perf_counter() - t0},
        "arrays": {k: [list(v.shape), str(v.dtype)] for k, v in arrays.items()},
        "figures": written,
        "methods": methods_used(vm),
        "charts_as_png": all(f"{n}.png" in written for n in charts),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _tab_arrays(ph: Photo, bars: Bars) -> dict[str, np.ndarray]:
    """Every tab's arrays of the photo (export_arrays), one bar step a tab."""
    arrays: dict[str, np.ndarray] = {}
    bars.stage("arrays", total=len(VIEWS), unit="tab")
    for v in VIEWS:
        arrays.update(v.export_arrays(ph))
        bars.step()
    return arrays


def _figures(ph: Photo, out: Path, image_name: str, bars: Bars,
             charts_png: bool) -> tuple[list[str], dict[str, go.Figure]]:
    """Every tab's figures written to `out`: a picture (uint8) as a PNG, a chart as a part of charts.html and,
    where kaleido can and `charts_png`, a PNG. -> (the PNG files written, the charts by name)."""
    written: list[str] = []
    charts: dict[str, go.Figure] = {}
    bars.stage("figures", total=len(VIEWS), unit="tab")
    for v in VIEWS:
        for name, fig in v.export_figures(ph).items():
            if isinstance(fig, go.Figure):
                charts[name] = fig
            else:
                Image.fromarray(fig).save(out / f"{name}.png")
                written.append(f"{name}.png")
        bars.step()
    if charts:
        (out / "charts.html").write_text(figures.charts_html([(n, f.to_json()) for n, f in charts.items()],
                                                             f"vizvit: {image_name}"))
    if charts and charts_png:
        bars.stage("charts as PNG (kaleido)", total=len(charts), unit="chart")
        written += figures.charts_png(charts, out)
        bars.step(len(charts))
    return written, charts


def _top5(predictions: Sequence[Prediction]) -> list[dict[str, Any]]:
    return [{"index": p.index, "label": p.label, "prob": p.prob} for p in predictions]


def _geometry(g: Geometry) -> dict[str, Any]:
    """summary.json "geometry": the model's shape and its token layout."""
    return {
        "image_size": list(g.image_size), "patch_size": g.patch_size, "grid": list(g.grid),
        "num_prefix_tokens": g.num_prefix_tokens, "seq_len": g.seq_len,
        "num_layers": g.num_layers, "num_heads": g.num_heads, "hidden_size": g.hidden_size,
        # every token in sequence order: [CLS], [DIST] or [REG1..R], then patch 0 … patch P−1 (row-major)
        "token_layout": list(g.token_names),
        "summary_tokens": list(g.summaries),
    }


def _summary(vm: VitModel, ph: Photo, image_name: str, base: Analysis, a: Analysis, view: View,
             ablation: Ablation, ablated: Analysis | None) -> dict[str, Any]:
    """summary.json up to its timings: the model, the photo, the predictions of the intact model (`base`), of
    the view (`a`) and with the heads off (`ablated`); the zero-shot labels are the photo's (`ph.vm`)."""
    zs = ph.vm.zero_shot
    return {
        "model": vm.id,
        "pretrained": vm.is_pretrained,
        "image": image_name,
        "geometry": _geometry(vm.geometry),
        "family": {"model_type": vm.family.key, "title": vm.family.title, "position_encoding": vm.family.pe,
                   "position_text": vm.family.pe_text, "head": vm.family.head_text},
        "num_parameters": vm.num_parameters,
        "numbers": dict(model_numbers(vm)),
        "top5": _top5(base.top5),
        "zero_shot": {"labels": list(ph.vm.labels), "template": zs.template, "rule": zs.rule, "scale": zs.scale,
                      "bias": zs.bias} if zs is not None else None,
        # DeiT distilled: each head's top-5 (the model's prediction, top5, is the mean of their logits)
        "head_top5": {name: [{"index": int(i), "label": vm.labels[int(i)], "prob": float(v)}
                             for v, i in zip(*logits.softmax(-1).topk(min(5, logits.numel())))]
                      for name, logits in base.head_logits.items()},
        "view": {"dx": view.dx, "dy": view.dy, "fill": view.fill, "mask": list(view.mask),
                 "mask_mode": view.mask_mode},
        "masked_top5": _top5(a.top5) if not view.is_identity else None,
        "ablation": {"heads": format_heads(ablation.heads), "mode": ablation.mode, "top5": _top5(ablated.top5)}
        if ablated is not None else None,
    }


def _positions_used(vm: VitModel) -> dict[str, str]:
    """summary.json "methods" for the position arrays: what this family's table is and how it is resized."""
    fam, used = vm.family, {}
    if not fam.has_positions:
        return {"positions": fam.pe_text}
    if fam.has_bias_table:
        alone = "" if fam.has_position_table else "; no absolute position table"
        used["relative_position_bias"] = ("the learned bias added to the attention logits, per offset (Δrow, Δcol), "
                                          "per layer (or shared) and head" + alone)
    if fam.has_position_table:  # a BEiT may have both
        aa = "antialiased" if fam.pe_antialias else "no antialias"
        used["pos_similarity"] = "cosine similarity of the learned patch position embeddings"
        used["position_interpolation"] = f"bicubic, align_corners=False, {aa} ({fam.title}'s interpolate_pos_encoding)"
    return used


def _lens_used(vm: VitModel) -> str:
    """summary.json "methods" logit_lens: the model's own head, as this family reads it, at every depth."""
    head = vm.family.head_text
    probs = "" if vm.zero_shot is not None else "; probabilities: softmax of the logits"
    return f"the model's own head applied to the hidden states after block l, l = 0..L ({head}){probs}"


def methods_used(vm: VitModel) -> dict[str, str]:
    """summary.json "methods": the exact method and convention behind each array (the defaults
    the export uses; docs/methods.md has the formulas and how peers' code differs), in this
    model's family's terms (its head, its positions)."""
    return {
        "rollout": attention.rollout_label("mean", 0.0)
        + "; Â = ½A + ½I, rows renormalised; the summary token's row ([CLS]; a mean-pooling head such as "
          "BEiT's: the mean of the patch rows), not rescaled; prefix_rollout: every prefix token's row",
        "norm_outliers": OUTLIER_METHOD,
        "rollout_heads": attention.PER_HEAD_ROLLOUT_METHOD,
        "discard_mode": attention.DISCARD_MODES[0],
        "attention_distance": attention.distance_label(attention.DISTANCE_NORMS[0]),
        **_positions_used(vm),
        "token_pca_rgb": "PCA per depth; sign: each component's largest-|loading| entry positive "
                         "(scikit-learn's svd_flip(u_based_decision=False))",
        "token_pca_rgb_no_artifacts": "the same PCA fitted without that depth's artifact tokens "
                                      "(artifact_tokens_at_depth); they are projected and clipped to [0, 1]",
        "artifact_tokens_at_depth": "‖x‖₂ of the patch token at depth l > Q3 + 3·IQR of that depth's patch norms "
                                    f"and > {artifacts.NORM_FACTOR:g}× their median "
                                    "(vizvit.readings.artifacts_rule.high_norm_at_depth)",
        "shift_sweep": "patch pairing: moved back d/P patches rounded toward 0",
        "deletion_curves": "deletion (Petsiuk et al. 2018) over whole patches, black fill, 11 steps",
        "insertion_curves": "insertion: the same maps, patches added back to an all-removed photo, black fill",
        "contest_auc": "deletion AUC, insertion AUC, insertion − deletion (trapezoid over 0..1); "
                       "contest_ranking: best first by insertion − deletion, random order the baseline",
        "contest_random_auc": "the baseline: the same AUCs for 10 random patch orders (seeds 0-9); a map beats "
                              "random on a curve only outside that curve's mean ± sd (ddof 1). Each order inserts "
                              "in the reverse of its deletion order (the same views read back), so its insertion "
                              "AUC is its deletion AUC and insertion − deletion is 0: not a spread to judge the "
                              "ranking's column by",
        "contest_auc_second_fill": "contest_auc and contest_random_auc with the patches removed by a blur "
                                   "(Gaussian, kernel 2P+1, sigma P/2) instead of black",
        **{m.export_key: m.export_text for m in methods.EXPORTED if m.export_key},  # relevance, map_<method>
        "logit_lens": _lens_used(vm),
        "head_importance": "p_top1(intact) − p_top1(that head alone zeroed before the output projection)",
        "zero_shot_probs": "CLIP: softmax over the labels of exp(logit_scale)·cos(image, text); "
                           "SigLIP: sigmoid(exp(logit_scale)·cos + logit_bias) per label",
        "patch_label_cosine": patch_label_method(vm.model) + " (not trained to align: a probe, not an explanation)",
        "summary_attention": "SigLIP: the MAP head's attention over the patches, per head; rollout and "
                             "relevance end with it (summary·R)",
        "docs": "docs/methods.md",
    }
