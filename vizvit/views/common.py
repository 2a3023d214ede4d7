"""What every tab shares: the page header and status lines, the top-5 chart, a click on
an enlarged grid -> a patch, clamping a patch to the grid, the highlight colour."""

from __future__ import annotations

import plotly.graph_objects as go

from .. import figures, render
from ..engine import Analysis
from ..models import RANDOM_ARCHS, RANDOM_PREFIX, Geometry, VitModel, short_name
from ..patches import patch_at

HEADER_TEXT = """# vizvit: watch a Vision Transformer read your photo
Upload a photo (or pick an example). The model cuts it into square patches, turns each
patch into a token, and lets every token attend to every other. Each tab shows one step."""


def on_grid(clicked: tuple[int, int] | None, g: Geometry) -> tuple[int, int] | None:
    """The clicked patch if it exists on this grid (a model switch can shrink the grid)."""
    if clicked is None or not (0 <= clicked[0] < g.grid[0] and 0 <= clicked[1] < g.grid[1]):
        return None
    return clicked


def top5_figure(vm: VitModel, a: Analysis, baseline: Analysis | None = None) -> go.Figure | None:
    """Top-5 bars; with `baseline`, each bar shows its change from the baseline's probability."""
    if not vm.has_classifier or a.probs is None:
        return None
    # A second line, not a longer one: plotly cuts a title at the chart's width.
    title = "Top-5 predictions" + ("" if vm.is_pretrained else "<br><sub>UNTRAINED weights: meaningless</sub>")
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


def status_line(vm: VitModel, a: Analysis, photo_size: tuple[int, int] | None = None) -> str:
    best = f" · top-1: **{a.top5[0].label.split(',')[0]}** ({a.top5[0].prob:.1%})" if a.top5 else ""
    return f"{model_line(vm)}{best} · forward {a.seconds * 1000:.0f} ms{resize_note(vm, photo_size)}"


def resize_note(vm: VitModel, photo_size: tuple[int, int] | None) -> str:
    """Say how the upload became the model input, and when its shape was squashed."""
    if photo_size is None:
        return ""
    w, h = photo_size
    H, W = vm.geometry.image_size
    note = f"  \nYour photo: {w}×{h} px → the model sees {W}×{H} px"
    r = (w / h) / (W / H)  # 1 when the photo has the input's shape, whatever the orientation
    squash = max(r, 1 / r)
    if squash > 1.25 and vm.preprocess.crop is None:
        note += " (its shape was squashed to a square, as the model's image processor does)"
    if squash > 3 and vm.preprocess.crop is None:
        note += f". ⚠️ Squashed {squash:.0f}:1, so shapes are distorted: a crop nearer to square reads better"
    enlarged = max(W / w, H / h)
    if enlarged > 4:
        note += (f". ⚠️ Enlarged {enlarged:.0f}×: the model sees blurred pixels, each patch holds "
                 "little of the photo")
    return note


def upload_status(had_photo: bool, failed: bool) -> str:
    """The status line after an upload that gave no new photo (a bad file, or the box cleared):
    say what the tabs still show, so the old photo's numbers are not taken for the new file's."""
    first = ("⚠️ That file could not be used (the message in the corner says why)." if failed
             else "The upload box is empty.")
    rest = (" The tabs still show the previous photo; upload another or pick an example." if had_photo
            else " Upload a photo or pick an example to begin.")
    return first + rest


def random_twin(model_id: str) -> str | None:
    """random:<arch> with the architecture a hub id names (google/vit-base-patch32-384 ->
    random:vit-base-patch32-384), or None: what to offer when the weights cannot be had."""
    arch = model_id.rsplit("/", 1)[-1]
    return RANDOM_PREFIX + arch if arch in RANDOM_ARCHS and not model_id.startswith(RANDOM_PREFIX) else None


def model_unavailable(requested: str, current: VitModel, alternative: str | None = None) -> str:
    text = (f"⚠️ **{short_name(requested)}** cannot be loaded here (no internet connection, or the weights "
            f"are not on this server), so it is gone from the list. Still showing {model_line(current)}.")
    if alternative:
        text += f" The same architecture with untrained weights is in the list: **{alternative}**."
    return text
