"""Panel functions for the Patches tab and the page header: Analysis + UI params ->
what the components show. No gradio here; app.py only wires these."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from . import figures, render
from .errors import UserError
from .engine import Analysis
from .models import RANDOM_ARCHS, RANDOM_PREFIX, Geometry, VitModel, short_name
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
    explanation: str  # what you see, with this model's numbers


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
        explanation=patches_explanation(vm),
    )


def patches_explanation(vm: VitModel) -> str:
    """The Patches tab's text, with the numbers of the model on screen."""
    g = vm.geometry
    p, (gh, gw), (h, w) = g.patch_size, g.grid, g.image_size
    return (f"**On this model:** the {w}×{h} input is cut into {gh}×{gw} = **{g.num_patches} patches** of "
            f"{p}×{p}×3 = **{p * p * 3:,} numbers** each. Each patch is multiplied by one learned {p * p * 3:,}×"
            f"{g.hidden_size} matrix to become a {g.hidden_size}-number token; with [CLS] in front the sequence "
            f"has **{g.seq_len} tokens**, so each of the {g.num_heads} heads in each of the {g.num_layers} layers "
            f"fills a {g.seq_len}×{g.seq_len} = {g.seq_len ** 2:,}-weight attention table.")


def on_grid(clicked: tuple[int, int] | None, g: Geometry) -> tuple[int, int] | None:
    """The clicked patch if it exists on this grid (a model switch can shrink the grid)."""
    if clicked is None or not (0 <= clicked[0] < g.grid[0] and 0 <= clicked[1] < g.grid[1]):
        return None
    return clicked


def patch_grid(vm: VitModel, a: Analysis, lines: bool = True, indices: bool = False,
               clicked: tuple[int, int] | None = None) -> np.ndarray:
    """The enlarged model-input view with grid lines, numbers and the clicked patch."""
    g = vm.geometry
    clicked = on_grid(clicked, g)
    big = render.enlarge(a.input_view, render.display_scale(g))
    return render.draw_grid(big, g, lines=lines, indices=indices, highlight=clicked)


def patch_text(g: Geometry, clicked: tuple[int, int] | None) -> str:
    clicked = on_grid(clicked, g)
    return describe_patch(*clicked, g) if clicked else "*Click a patch in the grid.*"


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


LECTURE_TEXT = """## For lecturers
**Link straight to a view.** Add query parameters to the page address, e.g.
`?example=chelsea&tab=attention&layer=6&head=3` opens the cat on the Attention tab at layer 6,
head 3. Parameters: `example` (astronaut, chelsea, coffee), `model`, `tab` (patches, embeddings,
attention, positions, experiments, lecture), `layer` and `head` (1-based; `head` may also be
mean, max or min), `query` (the attention query patch as row,col counted from 0, e.g. `4,7`),
`direction` (row or column), `mode` (raw or rollout), `dx` and `dy` (shift in pixels), `mask`
(patch numbers, e.g. `3,17,40`) and `projector=1`. A wrong value falls back to the default with a
note at the top. Or set the view up and press **Copy link to this view** at the bottom of the page.

**Projector mode** (bottom of the page, or `projector=1`) enlarges all text and uses black on white.
Every picture has a download button; each tab's charts download as one HTML file that works offline.
`python -m vizvit export photo.jpg --out slides/` writes every figure as PNG, ready for slides.

**A 15-minute walk through:** Patches (196 patches of 16×16×3 = 768 numbers; the sequence has
197 tokens with [CLS]) → Embeddings (one linear map per patch; the conv is the same thing) →
Attention (layer 1 heads look near, late heads look far: the distance plot) → Positions (nobody
told the model about 2-D, yet the similarity grid shows rows and columns) → Experiments (shift by
8 px and by 16 px: only whole-patch shifts leave the tokens unchanged).

### Why patches? The attention-cost calculator
Attention compares every token with every other: n tokens make an n×n table per head and layer."""


def attention_cost_panel(side: int, patch: int) -> tuple[list[list[str]], str]:
    """The calculator: a square image of `side` pixels, as pixel tokens vs P×P patches."""
    from .numbers import attention_cost, attention_cost_table, human_bytes

    try:
        c = attention_cost(side, side, patch)
    except UserError as e:  # said where the numbers were, so no stale table stays up
        return [], f"⚠️ {e}"
    saving = (f"**{c.ratio:,.0f}× smaller**" if c.ratio >= 2 else
              f"{c.ratio:.2f}× as large: **no saving**, P = 1 makes every pixel a token (plus [CLS])"
              if c.ratio < 1 else f"only **{c.ratio:.2f}×** smaller")
    text = (f"At {side}×{side} px, one token per pixel gives **{c.pixel_tokens:,}** tokens and a table of "
            f"**{c.pixel_weights:,}** weights (**{human_bytes(c.pixel_bytes)}** in float32) for ONE head of ONE "
            f"layer. Cutting it into {patch}×{patch} patches gives {c.patch_tokens:,} tokens (with [CLS]), "
            f"{c.patch_weights:,} weights, {human_bytes(c.patch_bytes)}: {saving}.")
    if c.uncovered[0]:
        text += (f" {side} is not a multiple of {patch}: the {side // patch}×{side // patch} patches leave the last "
                 f"{c.uncovered[0]} px of each row and column unread (a ViT needs a multiple of P).")
    return attention_cost_table(c)[1:], text  # the header row is the Dataframe's headers
