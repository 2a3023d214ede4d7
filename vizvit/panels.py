"""Panel functions for the Patches tab and the page header: Analysis + UI params ->
what the components show. No gradio here; app.py only wires these."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from . import figures, render
from .forward import Analysis
from .models import Geometry, VitModel, short_name
from .numbers import model_numbers
from .patches import describe_patch, patch_at

HEADER_TEXT = """# vizvit: watch a Vision Transformer read your photo
Upload a photo (or pick an example). The model cuts it into square patches, turns each
patch into a token, and lets every token attend to every other. Each tab shows one step."""

PATCHES_TEXT = """**What you see.** The photo resized exactly as the model's image processor does it,
cut into a grid of P×P patches. Each patch is flattened (P·P·3 numbers) and projected to one
token; the grid is read row by row into a sequence, after a learned [CLS] token whose final state
feeds the classifier. **Click a patch** to see its row, column, token index and pixel box."""


@dataclass(frozen=True)
class PatchesPanel:
    grid: np.ndarray  # (s·H, s·W, 3) uint8: enlarged model-input view with the grid
    strip: np.ndarray  # sequence strip, uint8
    top5: go.Figure | None  # None when the model has no classifier
    numbers: list[list[str]]
    patch_text: str


def patches_panel(vm: VitModel, a: Analysis, lines: bool = True, indices: bool = False,
                  clicked: tuple[int, int] | None = None) -> PatchesPanel:
    """Everything on the Patches tab, for a new photo or model."""
    g = vm.geometry
    return PatchesPanel(
        grid=patch_grid(vm, a, lines, indices, clicked),
        strip=render.sequence_strip(a.input_view, g),
        top5=top5_figure(vm, a),
        numbers=[[k, v] for k, v in model_numbers(vm)],
        patch_text=patch_text(g, clicked),
    )


def patch_grid(vm: VitModel, a: Analysis, lines: bool = True, indices: bool = False,
               clicked: tuple[int, int] | None = None) -> np.ndarray:
    """The enlarged model-input view with grid lines, numbers and the clicked patch."""
    g = vm.geometry
    big = render.enlarge(a.input_view, render.display_scale(g))
    return render.draw_grid(big, g, lines=lines, indices=indices, highlight=clicked)


def patch_text(g: Geometry, clicked: tuple[int, int] | None) -> str:
    return describe_patch(*clicked, g) if clicked else "*Click a patch in the grid.*"


def top5_figure(vm: VitModel, a: Analysis, baseline: Analysis | None = None) -> go.Figure | None:
    """Top-5 bars; with `baseline`, each bar shows its change from the baseline's probability."""
    if not vm.has_classifier or a.probs is None:
        return None
    title = "Top-5 predictions" + ("" if vm.is_pretrained else " (UNTRAINED weights: meaningless)")
    base = None
    if baseline is not None and baseline.probs is not None:
        base = {p.index: float(baseline.probs[p.index]) for p in a.top5}
    return figures.top5_bar(a.top5, base, title)


def clicked_patch(g: Geometry, x: float, y: float) -> tuple[int, int]:
    """A click at (x, y) on the enlarged grid image -> patch (row, col)."""
    return patch_at(x, y, g, render.display_scale(g))


def model_line(vm: VitModel) -> str:
    g = vm.geometry
    flag = "" if vm.is_pretrained else " ⚠️ **untrained random weights**"
    head = "" if vm.has_classifier else " · no classifier: predictions hidden"
    return (f"**{short_name(vm.id)}**{flag} · {g.image_size[0]}×{g.image_size[1]} px · {g.grid[0]}×{g.grid[1]} "
            f"patches of {g.patch_size}px · {g.num_layers} layers × {g.num_heads} heads{head} · {vm.device}")


def status_line(vm: VitModel, a: Analysis) -> str:
    best = f" · top-1: **{a.top5[0].label.split(',')[0]}** ({a.top5[0].prob:.1%})" if a.top5 else ""
    return f"{model_line(vm)}{best} · forward {a.seconds * 1000:.0f} ms"
