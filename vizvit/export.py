"""Write every figure and number of one photo to a folder, no server needed.

Each tab's module contributes arrays (``ARRAY_BUILDERS``) and PNG figures
(``FIGURE_BUILDERS``); README.md documents every key of arrays.npz.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from . import (
    attention_panels,
    embed_panels,
    experiments,
    figures,
    panels,
    positional,
    positions_panel,
    render,
)
from .engine import Analysis, analyze
from .images import View, load_image
from .models import VitModel, load_model
from .numbers import model_numbers

ArrayBuilder = Callable[[VitModel, Analysis], dict[str, np.ndarray]]
# A figure is a uint8 (H, W, 3) picture or a plotly chart; both become PNG files, and
# the charts also go, interactive, into charts.html.
FigureBuilder = Callable[[VitModel, Analysis], dict[str, "np.ndarray | go.Figure"]]


def core_arrays(vm: VitModel, a: Analysis) -> dict[str, np.ndarray]:
    out = {"input_view": a.input_view}
    if a.probs is not None:
        out["probs"] = a.probs.numpy().astype(np.float32)
    return out


def core_figures(vm: VitModel, a: Analysis) -> dict[str, "np.ndarray | go.Figure"]:
    g = vm.geometry
    s = render.display_scale(g)
    out: dict[str, np.ndarray | go.Figure] = {
        "patch_grid": render.draw_grid(render.enlarge(a.input_view, s), g, indices=True),
        "sequence_strip": render.sequence_strip(a.input_view, g),
    }
    top5 = panels.top5_figure(vm, a)
    if top5 is not None:
        out["top5_chart"] = top5
    return out


# One builder per tab, in the page's order.
ARRAY_BUILDERS: list[ArrayBuilder] = [core_arrays, embed_panels.embedding_arrays, attention_panels.attention_arrays,
                                      positional.export_arrays, experiments.experiment_arrays]
FIGURE_BUILDERS: list[FigureBuilder] = [core_figures, embed_panels.embedding_figures,
                                        attention_panels.attention_figures, positions_panel.export_figures,
                                        experiments.experiment_figures]


def export(image_path: str | Path, out_dir: str | Path, model: str | VitModel = "google/vit-base-patch16-224",
           device: str = "auto", view: View = View()) -> dict:
    """Analyse one photo and write summary.json, arrays.npz and one PNG per figure."""
    t0 = time.perf_counter()
    vm = model if isinstance(model, VitModel) else load_model(model, device)
    t_load = time.perf_counter() - t0
    image = load_image(image_path)
    base = analyze(vm, image)
    a = analyze(vm, image, view) if not view.is_identity else base
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    t1 = time.perf_counter()
    arrays: dict[str, np.ndarray] = {}
    for build in ARRAY_BUILDERS:
        arrays.update(build(vm, base))
    if not view.is_identity and a.probs is not None:
        arrays["masked_probs"] = a.probs.numpy().astype(np.float32)
    np.savez_compressed(out / "arrays.npz", **arrays)
    written: list[str] = []
    charts: dict[str, go.Figure] = {}
    for build in FIGURE_BUILDERS:
        for name, fig in build(vm, base).items():
            if isinstance(fig, go.Figure):
                charts[name] = fig
            else:
                Image.fromarray(fig).save(out / f"{name}.png")
                written.append(f"{name}.png")
    if charts:
        (out / "charts.html").write_text(figures.charts_html([(n, f.to_json()) for n, f in charts.items()],
                                                             f"vizvit: {Path(image_path).name}"))
        written += figures.charts_png(charts, out)
    g = vm.geometry
    summary = {
        "model": vm.id,
        "pretrained": vm.is_pretrained,
        "image": Path(image_path).name,
        "geometry": {
            "image_size": list(g.image_size), "patch_size": g.patch_size, "grid": list(g.grid),
            "num_prefix_tokens": g.num_prefix_tokens, "seq_len": g.seq_len,
            "num_layers": g.num_layers, "num_heads": g.num_heads, "hidden_size": g.hidden_size,
        },
        "num_parameters": vm.num_parameters,
        "numbers": dict(model_numbers(vm)),
        "top5": [{"index": p.index, "label": p.label, "prob": p.prob} for p in base.top5],
        "view": {"dx": view.dx, "dy": view.dy, "fill": view.fill, "mask": list(view.mask),
                 "mask_mode": view.mask_mode},
        "masked_top5": [{"index": p.index, "label": p.label, "prob": p.prob} for p in a.top5]
        if not view.is_identity else None,
        "timings_s": {"load_model": t_load, "forward": base.seconds,
                      "arrays_and_figures": time.perf_counter() - t1,
                      "total": time.perf_counter() - t0},
        "arrays": {k: [list(v.shape), str(v.dtype)] for k, v in arrays.items()},
        "figures": written,
        "charts_as_png": all(f"{n}.png" in written for n in charts),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
