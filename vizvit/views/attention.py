"""Panel functions for the Attention tab: cached Analysis + UI params -> pictures, text,
figures. No gradio here; app.py only wires these.

Nothing here runs the model except `relevance_panel` (one backward pass, on request).
Heavy stacks (rollouts) go through `cache(name, compute)`, which the app binds to
`Workbench.derived` for the photo, so moving a control reuses them.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterator

import cv2
import numpy as np
import plotly.colors
import plotly.graph_objects as go
import torch

from .. import artifacts as art_mod
from .. import attention as att_mod
from .. import maps, render
from ..cancel import NEVER, Cancel
from ..errors import UserError
from ..engine import Analysis
from ..models import MAP_HEAD, Geometry, VitModel
from ..patches import patch_at, token_index
from ..maps import Cache, no_cache, relevance_map  # noqa: F401 (relevance_map: part of this tab's API)
from ..session import ATTENTION_FLOW, Photo, distance_name, grid_image_name, strip_image_name
from ..vocab import DISCARD_MODES, DISTANCE_NORMS, DiscardMode, DistanceNorm
from ..vocab import ATTN_SCALES, AttnScale
from ..vocab import COLORMAPS, DIRECTIONS, FUSIONS, MODES, ONE_HEAD, SHOW_CHOICES, Direction, Fusion, Mode
from .common import artifact_masks

# ------------------------------------------------------------------ texts
MAP_SENSE_RAW = ("SigLIP has no [CLS]: its summary is the **MAP head** (a learned probe that attends once, after "
                 "the last block). Shown: the MAP head's weights read back through this layer's attention, s·A "
                 "(at the last layer, what the patches that the MAP head reads were attending to)")
MAP_SENSE_ROLLOUT = ("SigLIP has no [CLS]: the rollout ends with the **MAP head**'s attention s, so the map is "
                     "s·R through this layer")
MAIN_TEXT = """**Main map.** By default: how much the **[CLS] token** attends to each patch, in the chosen layer
and head (or the heads fused by mean / max / min), drawn over exactly the pixels the model saw. Each row
of attention sums to 1 over *all* tokens, [CLS] included, so the numbers beside the map say how much
went to [CLS] itself. **Click a patch** to use it as the query: *row* = what that patch attends to,
*column* = how much every patch attends to it. **Rolled out**: instead of one layer's attention, the
attention composed through all layers up to the chosen one (see the strip). **Colour scale**: *0 to max*
(the default) shows near-uniform attention as near-uniform; *this map's range* stretches the smallest
difference over the whole colour map (noise then looks like structure: the line under the table says
how narrow the range is); *fixed across layers and heads* keeps one range while you move the sliders.
The blue line on the colour bar is the uniform level 1/N (N tokens). A clicked patch's weight on itself
is left out of the range (in rollout it would make every other patch dark): it shows in the top colour,
and the table gives it."""

GRID_TEXT = """**All layers × heads.** One small map per (layer, head), rows = layers from the first (top)
to the last, columns = heads. It shows the same query and direction as the main map. **Click a cell**
to open that layer and head above (the main map's cell is outlined in yellow; when it fuses the heads,
the whole layer is). By default each cell runs from **0 to its own 99th percentile** (the
bar says *tile p99* and, under it, that top's value for the outlined cell; the one or two brightest patches take the top colour, never more than twice
the top: a tile's top is at least half its max), so every head's pattern shows, and a near-uniform cell still looks near-uniform (it starts
at 0, not at its minimum). *One shared colour scale*: one range for every cell, from 0 to the bar's top
(compare heads; the blue line is the uniform level 1/N). Artifact tokens (cyan) are left out of every
range unless you tick *artifact tokens in the colour range*. *Rolled out*: per-head
rollout, R(l, h) = Â(l, h) · R(l − 1): head h of layer l on top of the mean rollout of the layers below;
its mean over the heads is exactly the layer's rollout."""

ROLLOUT_TEXT = """**Attention rollout** (Abnar & Zuidema 2020), one map per layer. Each layer's heads are fused
(mean, max or min), optionally the lowest fraction of the weights is discarded (*per row*: each row's
lowest patch weights, [CLS] never discarded; *global (vit-explain)*: the lowest of the whole matrix,
only [CLS]→[CLS] kept, as jacobgil/vit-explain does), the residual connection is modelled by
Â = ½F + ½I (rows renormalised), and the layers are multiplied in order, R = Â(l) ⋯ Â(1). Tile *≤l* is
the [CLS] row of R through layer l. Formulas, sources and how peers differ: docs/methods.md."""

DISTANCE_TEXT = """**Mean attention distance** (ViT paper, Fig. 7), on this photo: for each head, the average over
query patches of the attention-weighted distance (in model-input pixels) to the patches it attends to
([CLS] left out, and by default the remaining weights renormalised to sum to 1; *raw (probing-vits)*
leaves them as they are). Low = local heads (like convolutions), high = global ones. Hover a dot for its head;
**click a dot** (or choose a head in the list) to open its map."""


RELEVANCE_TEXT = """**Class-specific maps.** *Class relevance*, Chefer et al. 2021b (generic attention; not their
2021a LRP method): unlike rollout, it depends on the class: one backward pass gives the gradient of that
class's logit with respect to every attention map, and R ← R + meanₕ[(∇A ⊙ A)⁺] · R (from R = I, layer by
layer) keeps the attention that *raised* that class. The map is R's [CLS] row. *Gradient rollout*
(vit-explain): rollout of meanₕ(A ⊙ ∇A)⁺ with the lowest 90 % dropped. *LeGrad* (Bousselham et al. 2024):
each of the last two layers read out by the model's own head ([CLS]), and the positive gradient of that score
with respect to that layer's attention, averaged; *LeGrad (token mean)* reads the mean of all tokens
instead, as torchcam's LeGrad and LeGrad on CLIP do. *Grad-CAM*: the last block's first layernorm, weighted
by its mean gradient (pytorch-grad-cam's ViT recipe). *Attention flow* (Abnar & Zuidema 2020): an exact
max-flow from [CLS] to each input token through the attention graph; not class-specific, minutes on a
12-layer model, streamed and stoppable. Each runs only when you press the button (one forward and at
most one backward), then it is cached. AttnLRP is not offered: docs/methods.md says why."""

# The methods of the Attention tab's map menu: Chefer's, the other class-specific ones, attention flow.
EXPLAIN_METHODS = ("class relevance", *maps.CLASS_METHODS, *maps.CLASS_VARIANTS, "attention flow")
FLOW_PROGRESS_EVERY = 10  # max-flows between two progress lines


# ------------------------------------------------------------------ params
@dataclass(frozen=True)
class AttnParams:
    """Everything a control on the tab sets. layer and head are 1-based, as shown."""

    layer: int = 1
    head: int = 1
    show: str = "mean"  # ONE_HEAD or a fusion
    mode: Mode = "raw"
    query: tuple[int, int] | None = None  # clicked patch (row, col); None = [CLS]
    direction: Direction = "row"
    discard: float = 0.0  # rollout: lowest fraction of the fused weights dropped
    discard_mode: DiscardMode = "per row"  # or "global (vit-explain)": see attention.discard_lowest
    distance_norm: DistanceNorm = "renormalised"  # or "raw (probing-vits)": see attention.attention_distance
    alpha: float = 0.6
    cmap: str = "inferno"
    tau: float = 0.0  # mass threshold; 0 = off
    # Each grid tile and strip tile from 0 to its own max by default: on trained weights one shared
    # range is set by a few layers' peaks and leaves most tiles black (issue 25).
    shared_scale: bool = False
    summary: str | None = None  # the token maps are read from (Geometry.summaries); None = the family's default
    scale: AttnScale = "0 to max"  # the main map's colour scale (vocab.ATTN_SCALES)
    # Artifact tokens (vizvit.artifacts) take most of a trained ViT's late attention: by default
    # they are left out of every colour range (clipped to the top colour when above it, marked) so the rest shows.
    artifacts_in_range: bool = False

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> "AttnParams":
        """The page's control values by field name -> AttnParams (numbers typed, empty summary = default)."""
        return cls(layer=int(v["layer"]), head=int(v["head"]), show=v["show"], mode=v["mode"], query=v["query"],
                   direction=v["direction"], discard=float(v["discard"]), alpha=float(v["alpha"]), cmap=v["cmap"],
                   tau=float(v["tau"]), shared_scale=bool(v["shared_scale"]), summary=v["summary"] or None,
                   discard_mode=v["discard_mode"], distance_norm=v["distance_norm"], scale=v["scale"],
                   artifacts_in_range=bool(v.get("artifacts_in_range", False)))

    def checked(self, g: Geometry) -> "AttnParams":
        if not 1 <= self.layer <= g.num_layers:
            raise UserError(f"Layer must be 1..{g.num_layers}.")
        if not 1 <= self.head <= g.num_heads:
            raise UserError(f"Head must be 1..{g.num_heads}.")
        if self.show not in SHOW_CHOICES:
            raise UserError(f"Show one head or fuse by {', '.join(FUSIONS)}.")
        if self.mode not in MODES:
            raise UserError("Mode must be raw or rolled out.")
        if self.cmap not in COLORMAPS:
            raise UserError(f"Unknown colour map {self.cmap!r}.")
        if self.discard_mode not in DISCARD_MODES:
            raise UserError(f"Discard mode must be {' or '.join(DISCARD_MODES)}.")
        if self.distance_norm not in DISTANCE_NORMS:
            raise UserError(f"Distance normalisation must be {' or '.join(DISTANCE_NORMS)}.")
        if self.summary is not None and self.summary not in g.summaries:
            raise UserError(f"Read maps from one of: {', '.join(g.summaries)}.")
        if self.scale not in ATTN_SCALES:
            raise UserError(f"Colour scale must be one of: {', '.join(ATTN_SCALES)}.")
        return self

    def who(self, g: Geometry) -> str:
        """The summary token's name ([CLS], [DIST], patch mean)."""
        return self.summary or g.summaries[0]

    @property
    def head_or_fusion(self) -> int | Fusion:
        """0-based head index, or the fusion name."""
        return self.head - 1 if self.show == ONE_HEAD else self.show  # type: ignore[return-value]


_full_attentions = maps.full_attentions


# ------------------------------------------------------------------ cached stacks
def layer_rollout(a: Analysis, fusion: Fusion, discard: float, cache: Cache = no_cache,
                  discard_mode: DiscardMode = "per row") -> torch.Tensor:
    """(L, N, N) rollout after each layer, cached per (fusion, discard, discard mode) (vizvit.maps)."""
    return maps.rollout(a, fusion, discard, cache, discard_mode)


def head_rollout(a: Analysis, cache: Cache = no_cache) -> torch.Tensor:
    """(L, H, N, N) per-head rollout (mean fusion below, no discard), cached per photo."""
    return maps.head_rollout(a, cache)


def distances(a: Analysis, cache: Cache = no_cache, norm: DistanceNorm = "renormalised") -> torch.Tensor:
    """(L, H) mean attention distance in pixels, cached per photo and normalisation."""
    return cache(distance_name(norm),
                 lambda: att_mod.attention_distance(_full_attentions(a), a.geometry, norm))


def main_matrix(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> torch.Tensor:
    """(N, N) float32 matrix behind the main map: one layer's attention (a head or fused),
    or, rolled out, the per-head rollout R_{l,h} or the fused rollout through layer l."""
    l, h = p.layer - 1, p.head_or_fusion
    if p.mode == "raw":
        return att_mod.select_matrix(_full_attentions(a), l, h)
    if isinstance(h, int):
        return head_rollout(a, cache)[l, h]
    return layer_rollout(a, h, p.discard, cache, p.discard_mode)[l]


def summary_of(a: Analysis, name: str | None = None) -> str | torch.Tensor | None:
    """What attention.summary_row reads a map from: the summary's name, or for SigLIP's MAP head (not
    a token of the sequence) its weights over the tokens (Analysis.summary_weights)."""
    if (name or a.geometry.summaries[0]) == MAP_HEAD:
        return a.summary_weights
    return name


def query_token(p: AttnParams, g: Geometry) -> int:
    """The query's sequence position: a clicked patch, else the summary token (-1: patch mean)."""
    return g.summary_index(p.summary) if p.query is None else token_index(*p.query, g)


# ------------------------------------------------------------------ main map
@dataclass(frozen=True)
class MainPanel:
    image: np.ndarray  # (s·H, s·W, 3) uint8
    values: np.ndarray  # (gh, gw) float32: the map drawn
    readout: str  # markdown with exact numbers


# The page's drawing of the main map (layer, head, fusion and a clicked query, with no round
# trip): a port of map_image, beside the view it mirrors; its constants come from page_style().
PAGE_SCRIPT = "attention_map.js"  # page/web/: the page reads it, the library only names it
MAP_DRAW_SCRIPT = "map_draw.js"  # its drawing, shared with the live camera: run first
DIM = 0.3  # the τ threshold darkens the view outside the kept patches to this fraction
UNIFORM_MARK = "1/N"  # the uniform level's name on a map's colour bar


def _dim_outside(img: np.ndarray, view: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Replace pixels of patches not in `keep` (gh, gw bool) by the darkened view."""
    inside = render.upsample_map(keep.astype(np.float32), img.shape[:2]) > 0.5
    out = img.copy()
    out[~inside] = (view[~inside] * DIM).astype(np.uint8)
    return out


# A colour range is never narrower than NEAR_ZERO of the uniform level 1/N: a map whose values
# are all near zero (a head whose query attends only to [CLS]) stays dark instead of stretching
# 0 … 1e-7 into a made-up pattern.
NEAR_ZERO = 0.01


def range_floor(g: Geometry) -> float:
    """The narrowest colour range a map gets (NEAR_ZERO · 1/N)."""
    return NEAR_ZERO * uniform_level(g)


def artifact_stack(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> np.ndarray:
    """(L, gh, gw) bool: the artifact tokens behind each layer's map in p.mode (raw: that layer's;
    rolled out through layer l: those of any layer up to l)."""
    per_layer = artifact_masks(a, cache)
    return per_layer if p.mode == "raw" else art_mod.through_layers(per_layer)


def excluded(artifacts: np.ndarray, p: AttnParams) -> np.ndarray | None:
    """What the colour ranges leave out: the artifact tokens, unless asked to keep them."""
    return None if p.artifacts_in_range or not artifacts.any() else artifacts


def map_range(values: np.ndarray, scale: AttnScale, highlight: tuple[int, int] | None = None,
              fixed_max: float | None = None, exclude: np.ndarray | None = None,
              floor: float = 1e-12) -> tuple[float, float]:
    """The colour range (lo, hi) of a (gh, gw) map under a scale choice (vocab.ATTN_SCALES).

    "0 to max": near-uniform attention looks near-uniform (the default: noise is not shown as
    structure). "this map's range": min..max, every difference stretched to the whole colour map.
    "fixed across layers and heads": 0..fixed_max, one range while the layer and head change.
    The outlined patch (the query) is left out of the range: its attention to itself often
    dwarfs every other patch (rollout keeps half of each layer on the diagonal), so it takes the
    top colour and the readout gives its value. exclude: (gh, gw) bool, patches left out the same
    way (artifact tokens). floor: the narrowest range (see NEAR_ZERO)."""
    keep = np.ones(values.shape, bool) if exclude is None else ~exclude
    if highlight is not None:
        keep[highlight] = False
    if not keep.any():  # nothing left to set the range: every patch counts
        keep[:] = True
    others = values[keep]
    lo, hi = float(np.nanmin(others)), float(np.nanmax(others))
    if scale == "this map's range":
        return lo, max(hi, lo + floor)
    if scale == "fixed across layers and heads" and fixed_max is not None:
        return 0.0, max(float(fixed_max), floor)
    return 0.0, max(hi, floor)


def artifact_outline(g: Geometry, scale: int | None = None) -> int:
    """Width of an artifact token's outline on the enlarged map: half the query's."""
    step = (scale or render.display_scale(g)) * g.image_size[0] / g.grid[0]
    return max(1, int(step // 24))


def map_image(view: np.ndarray, values: np.ndarray, g: Geometry, p: AttnParams,
              highlight: tuple[int, int] | None = None, lo_hi: tuple[float, float] | None = None,
              marks: dict[str, float] | None = None, artifacts: np.ndarray | None = None,
              scale: int | None = None) -> np.ndarray:
    """Overlay a (gh, gw) map on the view, apply the τ mass threshold, enlarge, outline a patch,
    and add a colour bar on the right (the map keeps its pixel coordinates, so clicks map as
    before and a click on the bar is outside the grid). lo_hi: the colour range (default: see
    map_range for p.scale); marks: levels named on the bar (the uniform 1/N); artifacts: (gh, gw)
    bool, patches outlined in render.ARTIFACT_COLOR (under the query's outline); scale: the
    enlargement (default render.display_scale: two maps side by side, the Compare tab, take
    less; so does the camera's live picture)."""
    lo, hi = lo_hi if lo_hi is not None else map_range(values, p.scale, highlight, floor=range_floor(g))
    img = render.overlay(view, values, p.alpha, p.cmap, vmin=lo, vmax=hi)
    if p.tau > 0:
        keep = att_mod.mass_threshold(torch.from_numpy(values), p.tau).numpy()
        img = _dim_outside(img, view, keep)
    big = render.enlarge(img, render.display_scale(g) if scale is None else scale)
    if artifacts is not None and artifacts.any():
        big = render.outline_patches(big, g, artifacts, render.ARTIFACT_COLOR, artifact_outline(g, scale))
    return render.with_colorbar(render.draw_grid(big, g, lines=False, highlight=highlight), p.cmap, lo, hi,
                                marks=marks, text_width=bar_text_width())


# The widest labels a map's colour bar carries (attention and rollout lie in [0, 1]). Its room is
# kept for every map, so the picture keeps one width while the layer and head change (the page
# draws those changes itself: see MapBook).
BAR_TEXT = (UNIFORM_MARK + render.ABOVE, UNIFORM_MARK + render.BELOW, "0.000888", "8.88e-05")


@lru_cache(maxsize=1)
def bar_text_width() -> int:
    return max(render.text_size(t)[0] for t in BAR_TEXT)


def uniform_level(g: Geometry) -> float:
    """1/N: each weight of an attention row (raw or rolled out) if it spread evenly over the N tokens."""
    return 1.0 / g.seq_len


def scale_note(values: np.ndarray, lo: float, hi: float, scale: str, g: Geometry,
               elsewhere: str = "the prefix tokens") -> str:
    """One line under the map: the colour range, and how narrow the map's own spread is (or that
    it is nearly zero everywhere). elsewhere: where the rest of the row's attention goes."""
    u = uniform_level(g)
    vmin, vmax = float(values.min()), float(values.max())
    note = (f"Colours: **{scale}**, {lo:.3g} … {hi:.3g}; the blue line on the bar is the uniform level "
            f"1/N = 1/{g.seq_len} = {u:.3g}.")
    spread = (vmax - vmin) / u
    if vmax < range_floor(g):  # nothing to see: say so instead of calling it uniform
        note += (f" ⚠️ **Nearly zero everywhere**: every patch gets less than {vmax:.2g} (in all "
                 f"{float(values.sum()):.2g}); the rest goes to {elsewhere}. The colours start at "
                 f"{NEAR_ZERO:.0%} of 1/N, so no pattern is made up from it.")
    elif spread < 0.5:
        note += (f" ⚠️ This map is nearly uniform: all patches lie within {vmin:.3g} … {vmax:.3g}, "
                 f"a spread of {spread:.0%} of 1/N")
        note += ("; *this map's range* stretches that to the whole colour map." if scale == "this map's range"
                 else ".")
    return note


def _where(values: np.ndarray, fn: Callable) -> tuple[float, int, int]:
    i = int(fn(values))
    r, c = divmod(i, values.shape[1])
    return float(values.flat[i]), r, c


@dataclass(frozen=True)
class MainMap:
    """main_panel's map before it is drawn: what map_image paints over the view."""

    values: np.ndarray  # (gh, gw) float32
    lo_hi: tuple[float, float]  # its colour range (map_range)
    artifacts: np.ndarray  # (gh, gw) bool: the artifact tokens behind it (outlined; out of the range)


def main_map(a: Analysis, p: AttnParams, cache: Cache = no_cache, fixed_max: float | None = None,
             m: torch.Tensor | None = None, one_row: bool = False) -> MainMap:
    """The main map of checked params p (m: main_matrix's (N, N), when already computed;
    fixed_max: see main_panel). one_row: a rolled-out map that reads a row is computed as that row
    alone (attention.rollout_row: ~12x less work than the whole rollout, which nothing else then
    needs: the live camera), equal to the whole rollout's up to float32 summation order."""
    g = a.geometry
    q = read_weights(a, p) if one_row and p.mode != "raw" and m is None else None
    if q is not None:
        h = p.head_or_fusion
        row = att_mod.rollout_row(_full_attentions(a), q, p.layer, "mean" if isinstance(h, int) else h, p.discard,
                                  g.num_prefix_tokens, p.discard_mode, h if isinstance(h, int) else None)
        values = row[g.num_prefix_tokens:].reshape(g.grid).numpy().astype(np.float32)
    else:
        m = main_matrix(a, p, cache) if m is None else m
        if g.pools_with_map_head and p.query is None:  # SigLIP's summary: the MAP head, not a token
            values = att_mod.cls_to_patches(m, g, a.summary_weights).numpy().astype(np.float32)
        else:
            values = att_mod.query_map(m, query_token(p, g), p.direction, g).numpy().astype(np.float32)
    arts = artifact_stack(a, p, cache)[p.layer - 1]  # (gh, gw)
    if p.scale == "fixed across layers and heads" and fixed_max is None:
        fixed_max = fixed_scale_max(a, p, cache)
    lo_hi = map_range(values, p.scale, p.query, fixed_max, excluded(arts, p), range_floor(g))
    return MainMap(values, lo_hi, arts)


def read_weights(a: Analysis, p: AttnParams) -> torch.Tensor | None:
    """The query weights q (N,) whose row of the main matrix, q · M, main_map reads (cut to the
    patch keys): token t's row e_t, the patch queries' mean (a mean-pooling head), SigLIP's MAP
    weights; None for a column (each patch query's weight on one key)."""
    g = a.geometry
    if g.pools_with_map_head and p.query is None:
        return a.summary_weights.float() if a.summary_weights is not None else None
    if p.direction != "row":
        return None
    t, pre = query_token(p, g), g.num_prefix_tokens
    q = torch.zeros(g.seq_len)
    if t < 0:
        q[pre:] = 1.0 / (g.seq_len - pre)
    else:
        q[t] = 1.0
    return q


def main_panel(vm: VitModel, a: Analysis, p: AttnParams, cache: Cache = no_cache,
               fixed_max: float | None = None, scale: int | None = None) -> MainPanel:
    """fixed_max: the top of the "fixed across layers and heads" scale (default: computed from
    every layer and head of this query and direction); scale: the picture's enlargement (see map_image)."""
    g = vm.geometry
    p = p.checked(g)
    m = main_matrix(a, p, cache)  # (N, N)
    t = query_token(p, g)
    pooling = g.pools_with_map_head and p.query is None  # SigLIP's summary: the MAP head, not a token
    mm = main_map(a, p, cache, fixed_max, m)
    values, arts, (lo, hi) = mm.values, mm.artifacts, mm.lo_hi
    pre = g.num_prefix_tokens
    what = "head " + str(p.head) if p.show == ONE_HEAD else f"{p.show} of {g.num_heads} heads"
    kind = ("attention" if p.mode == "raw" else
            ("per-head rollout" if p.show == ONE_HEAD else
             f"{att_mod.rollout_label(p.show, p.discard, p.discard_mode)} through layers 1–{p.layer}"))
    s_name = p.who(g)
    s = g.summary_index(s_name)
    who = s_name if p.query is None else f"patch (row {p.query[0]}, col {p.query[1]})"
    sense = (f"what {who} attends to (its row)" if p.direction == "row"
             else f"how much each patch attends to {who} (its column)")
    if pooling:
        sense = (MAP_SENSE_RAW if p.mode == "raw" else MAP_SENSE_ROLLOUT)
    vmax, rmax, cmax = _where(values, np.argmax)
    vmin, rmin, cmin = _where(values, np.argmin)
    lines = [
        f"**Layer {p.layer} · {what} · {kind}** — {sense}.",
        "",
        "| number | value |", "|---|---|",
    ]
    if pooling:
        if a.summary_weights is not None:
            lines.append(f"| MAP head's largest weight (after block {g.num_layers}) | {float(a.summary_weights.max()):.4f} |")
    elif s >= 0:
        lines.append(f"| {s_name}→{s_name} | {float(m[s, s]):.4f} |")
    else:
        lines.append(f"| patch mean→patches (its row's patch sum) | {float(m[pre:, pre:].sum(-1).mean()):.4f} |")
    # Every prefix token's share of the patches' attention: registers show here what they receive.
    lines += [f"| mean patch→{name} | {float(m[pre:, j].mean()):.4f} |" for j, name in enumerate(g.prefix_names)]
    if p.query is not None:
        if s >= 0:
            lines += [f"| this patch→{s_name} | {float(m[t, s]):.4f} |",
                      f"| {s_name}→this patch | {float(m[s, t]):.4f} |"]
        lines.append(f"| this patch→itself | {float(m[t, t]):.4f} |")
    lines += [
        f"| map sum over patches | {float(values.sum()):.4f} |",
        f"| max | {vmax:.4f} at (row {rmax}, col {cmax}) |",
        f"| min | {vmin:.4f} at (row {rmin}, col {cmin}) |",
    ]
    if s < 0 and p.query is None and not pooling:
        lines.append("| note | this model's head reads the mean of the patch tokens, not [CLS]: the map is the "
                     "mean of the patch queries' rows |")
    if arts.any():
        rest = np.where(arts, -np.inf, values)
        v2, r2, c2 = _where(rest, np.argmax)
        lines += [f"| artifact tokens' share of the map | {float(values[arts].sum()):.4f} ({int(arts.sum())} patches) |",
                  f"| max outside them | {v2:.4f} at (row {r2}, col {c2}) |"]
    if p.tau > 0:
        k = int(att_mod.mass_threshold(torch.from_numpy(values), p.tau).sum())
        lines.append(f"| patches holding τ={p.tau:.2f} of the mass | {k} of {g.num_patches} |")
    lines += ["", scale_note(values, lo, hi, p.scale, g, " and ".join(g.prefix_names) or "the MAP head"),
              artifact_note(arts, p, "through layer" if p.mode != "raw" else "in layer", p.layer)]
    image = map_image(a.input_view, values, g, p, highlight=p.query, lo_hi=(lo, hi),
                      marks={UNIFORM_MARK: uniform_level(g)}, artifacts=arts, scale=scale)
    return MainPanel(image=image, values=values, readout="\n".join(lines).rstrip())


def artifact_note(arts: np.ndarray, p: AttnParams, where: str, layer: int) -> str:
    """The caption naming a map's artifact tokens and what the colours do with them ('' if none)."""
    n = int(arts.sum())
    if not n:
        return ""
    kept = ("are **in the colour range** (untick *artifact tokens in the colour range* to leave them out)"
            if p.artifacts_in_range else
            "are **not in the colour range**: the range is set by the other patches, and an artifact token above "
            "it is clipped to the top colour (tick *artifact tokens in the colour range* to put them back)")
    return (f"🔷 **{n} artifact token{'s' * (n > 1)}** {where} {layer}, {art_mod.describe(arts)}, outlined in cyan, {kept}. "
            "A trained ViT turns a few low-information patches into scratch space with very long tokens that soak "
            "up attention (Darcet et al. 2024, *Vision Transformers Need Registers*). "
            f"Artifact token: {art_mod.ARTIFACT_SHORT}. A patch that only receives much attention is not one: "
            "it is what the model looks at, and keeps its colour.")


def fixed_scale_max(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> float:
    """The top of the fixed scale: the largest weight of this query and direction over every layer
    and head (raw, or rolled out per head and fused), the query's weight on itself left out."""
    maps = [grid_maps(a, p, cache).numpy()]
    if p.mode != "raw":  # the fused rollout through every layer, same query and direction
        fusion = p.show if p.show in FUSIONS else "mean"
        stack = layer_rollout(a, fusion, p.discard, cache, p.discard_mode)
        maps.append(att_mod.query_map(stack, query_token(p, a.geometry), p.direction, a.geometry).numpy()[:, None])
    out = excluded(artifact_stack(a, p, cache), p)  # (L, gh, gw) or None
    top = 0.0
    for m in maps:
        m = m.copy()
        if out is not None:
            m[np.broadcast_to(out[:, None], m.shape)] = 0.0
        if p.query is not None:
            m[..., p.query[0], p.query[1]] = 0.0
        top = max(top, float(m.max()))
    return top


# ------------------------------------------------------------------ layers × heads grid
GRID_LEFT = 66  # px for the "L12" labels (render.TEXT_PX)
GRID_TOP = 30  # px for the "H12" labels
GRID_SEP = 2
GRID_TILE = 56  # target tile size; rounded to a multiple of the grid
GRID_WIDTH = 672  # few heads (ViT-Ti: 3) get larger tiles, up to 1.5 × GRID_TILE, within this width


def grid_tile(g: Geometry) -> int:
    """Tile edge in px: a whole number of pixels per patch."""
    return tile_edge(g.grid, g.num_heads)


def tile_edge(grid: tuple[int, int], heads: int = 12) -> int:
    """Edge of one cell of the layers × heads grid: a whole number of pixels per patch."""
    target = min(3 * GRID_TILE // 2, max(GRID_TILE, GRID_WIDTH // max(1, heads)))
    return max(grid) * max(1, round(target / max(grid)))


def grid_maps(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> torch.Tensor:
    """(L, H, gh, gw): the main map's query and direction for every (layer, head), raw or
    per-head rolled out."""
    g = a.geometry
    stack = maps.HEAD_STACKS[p.mode](a, cache)  # (L, H, N, N)
    if g.pools_with_map_head and p.query is None:  # SigLIP: the MAP head's weights through each matrix
        return att_mod.cls_to_patches(stack, g, a.summary_weights).float()
    return att_mod.query_map(stack, query_token(p, g), p.direction, g).float()


# Each tile of the grid runs from 0 to the TILE_PERCENTILE-th percentile of its patches, or to
# half its max if that is higher: a single hot patch (not an artifact) would otherwise leave the
# rest of its tile black, and no patch is clipped past twice the top (a lone peak on a flat tile
# still stands out). On the trained ViT-Ti this takes the cat's tiles with structure from 81 %
# (tile max) to 92 %.
TILE_PERCENTILE = 99
TILE_MAX = f"tile p{TILE_PERCENTILE}"  # the per-tile colour bar's top label


def compose_grid(maps: np.ndarray, cmap: str = "inferno", shared: bool = True,
                 selected: tuple[int, int] | None = None, vmax: float | None = None,
                 marks: dict[str, float] | None = None, artifacts: np.ndarray | None = None,
                 exclude: np.ndarray | None = None, floor: float = 1e-12, bar: bool = True) -> np.ndarray:
    """(L, H, gh, gw) maps -> ONE labelled image: row l = layer l+1, column h = head h+1.

    shared: one colour scale 0..vmax (default: the maps' max), shown by a colour bar on the
    right; otherwise each cell runs from 0 to its own TILE_PERCENTILE-th percentile (at least
    `floor`), outside the (L, gh, gw) `exclude` patches, and the bar says so. artifacts: (L, gh, gw) bool, patches
    painted render.ARTIFACT_COLOR in every head of that layer.
    Cell (l, h) (0-based) has its top-left pixel at (GRID_LEFT + h·(t+GRID_SEP),
    GRID_TOP + l·(t+GRID_SEP)), t = tile edge; see grid_cell_at. selected: 0-based
    (layer, head) outlined in yellow (head None: the whole layer, when the heads are fused). bar:
    False leaves out the colour bar (grid_bar adds it).
    """
    n_l, n_h, gh, gw = maps.shape
    t = tile_edge((gh, gw), n_h)
    s = t // max(gh, gw)
    flat = maps.reshape(n_l * n_h, gh, gw).astype(np.float32)
    if shared:  # one colorize call for all cells: 144 small calls cost ~10 ms
        vmax = float(flat.max()) if vmax is None else vmax
        rgb = render.colorize(flat, cmap, 0.0, vmax)
    else:  # from 0, as the main map's default: a near-uniform tile stays near one colour
        top = tile_tops(maps, exclude, floor).reshape(-1)[:, None, None]
        rgb = render.colorize(flat / top, cmap, 0.0, 1.0)
    if artifacts is not None and artifacts.any():
        rgb[np.repeat(artifacts, n_h, 0)] = render.ARTIFACT_COLOR
    # Enlarge and space the cells in one gather (render.mosaic + repeat cost ~10 ms here):
    # every output pixel picks its source patch, or the white pixel appended at the end.
    small = rgb.reshape(n_l, n_h, gh, gw, 3).transpose(0, 2, 1, 3, 4).reshape(n_l * gh, n_h * gw, 3)
    small = np.pad(small, ((0, 1), (0, 1), (0, 0)), constant_values=255)
    rows, cols = _gather_index(n_l, gh, s, GRID_TOP), _gather_index(n_h, gw, s, GRID_LEFT)
    out = np.take(np.take(small, rows, axis=0), cols, axis=1)  # two 1-D takes beat a 2-D fancy index
    step = t + GRID_SEP
    cap = render.text_size("H")[1]
    # Header labels as large as a hall needs; when a cell is narrower than "H12", every other one.
    every = 1 if render.text_size(f"H{n_h}")[0] <= step else 2
    for h in range(0, n_h, every):
        w = render.text_size(f"H{h + 1}")[0]
        render.put_text(out, f"H{h + 1}", (GRID_LEFT + h * step + (t - w) // 2, GRID_TOP - 6))
    for l in range(n_l):
        render.put_text(out, f"L{l + 1}", (3, GRID_TOP + l * step + (t + cap) // 2))
    if not bar:  # attention_view adds the bar with the selected cell's top (grid_bar)
        return out if selected is None else outline_grid_cell(out, maps.shape, selected)
    tops = None if shared else top.reshape(n_l, n_h)
    return grid_bar(out if selected is None else outline_grid_cell(out, maps.shape, selected), cmap,
                    vmax, marks, tops, selected)


def tile_tops(maps: np.ndarray, exclude: np.ndarray | None = None, floor: float = 1e-12) -> np.ndarray:
    """(L, H, gh, gw) -> (L, H): the top of each tile's own colour range: its TILE_PERCENTILE-th
    percentile outside the (L, gh, gw) `exclude` patches, or half its max if higher, at least floor."""
    n_l, n_h = maps.shape[:2]
    flat = maps.reshape(n_l * n_h, -1).astype(np.float32)
    counted = flat if exclude is None else np.where(np.repeat(exclude.reshape(n_l, -1), n_h, 0), np.nan, flat)
    with np.errstate(all="ignore"):  # a tile of artifacts only: all-NaN, counted whole below
        top = np.nanpercentile(counted, TILE_PERCENTILE, axis=1)
        half = np.nanmax(counted, axis=1) / 2
    whole = np.percentile(flat, TILE_PERCENTILE, axis=1)
    top = np.where(np.isfinite(top), np.maximum(top, half), whole)
    return np.maximum(top, floor).reshape(n_l, n_h)


def grid_bar(img: np.ndarray, cmap: str, vmax: float | None = None, marks: dict[str, float] | None = None,
             tops: np.ndarray | None = None, selected: tuple[int, int | None] | None = None) -> np.ndarray:
    """compose_grid's colour bar. tops None: one shared scale 0..vmax, with numbers. tops (L, H): each
    tile runs 0..its own top (tile_tops): the bar's top says TILE_MAX, and under it the selected
    cell's top value ("L12 H1 = 0.0312"), or the selected layer's range when the heads are fused
    (head None), so the top colour has a number."""
    if tops is None:
        return render.with_colorbar(img, cmap, 0.0, vmax if vmax is not None else 1.0, marks=marks)
    note = ""
    if selected is not None:
        l, h = selected
        note = (f"L{l + 1} H{h + 1} = {tops[l, h]:.3g}" if h is not None
                else f"L{l + 1}: {tops[l].min():.2g}-{tops[l].max():.2g}")
    # Room for the widest note this grid can have, so the picture keeps its width while the cell changes.
    n_l, n_h = tops.shape
    widest = max(render.text_size(t)[0] for t in (f"L{n_l} H{n_h} = 8.88e-05", f"L{n_l}: 8.8e-05-8.8e-05"))
    out = render.with_colorbar(img, cmap, 0.0, 1.0, ticks=(0.0, 1.0), tick_names=("0", TILE_MAX), text_width=widest)
    if note:  # one line under the top label, no tick: it is that label's value, not a level of its own
        cap = render.text_size("0")[1]
        y = cap + render.LABEL_TOP + int(cap * render.LINE_SPACING)
        render.put_text(out, note, (img.shape[1] + render.BAR_GAP + render.BAR_WIDTH + render.LABEL_OFFSET, y))
    return out


def outline_grid_cell(img: np.ndarray, shape: tuple[int, ...], selected: tuple[int, int | None]) -> np.ndarray:
    """A copy of a compose_grid image with the 0-based (layer, head) cell outlined in yellow; head
    None outlines every head of the layer (the main map fuses them: no one cell is what it shows)."""
    _, n_h, gh, gw = shape
    t = tile_edge((gh, gw), n_h)
    step = t + GRID_SEP
    l, h = selected
    x0, y0 = GRID_LEFT + (0 if h is None else h) * step, GRID_TOP + l * step
    x1 = x0 + (n_h * step - GRID_SEP if h is None else t)
    out = img.copy()
    cv2.rectangle(out, (x0 - 1, y0 - 1), (x1, y0 + t), render.HIGHLIGHT_COLOR, 2)
    return out


@lru_cache(maxsize=64)
def _gather_index(cells: int, patches: int, scale: int, margin: int) -> np.ndarray:
    """Source index along one axis of compose_grid's image: `margin` px of white, then
    `cells` cells of patches·scale px separated by GRID_SEP px; -1 = the white pixel."""
    t = patches * scale
    idx = np.full(margin + cells * (t + GRID_SEP) - GRID_SEP, -1, np.intp)
    for k in range(cells):
        start = margin + k * (t + GRID_SEP)
        idx[start:start + t] = k * patches + np.arange(t) // scale
    return idx


def grid_cell_at(g: Geometry, x: float, y: float) -> tuple[int, int]:
    """A click at pixel (x, y) of compose_grid's image -> 1-based (layer, head)."""
    step = grid_tile(g) + GRID_SEP
    col, row = int((x - GRID_LEFT) // step), int((y - GRID_TOP) // step)
    if not (0 <= row < g.num_layers and 0 <= col < g.num_heads) or x < GRID_LEFT or y < GRID_TOP:
        raise UserError("Click inside one of the small maps to open its layer and head.")
    return row + 1, col + 1


# ------------------------------------------------------------------ rollout strip
STRIP_TILE = 96


def compose_strip(view: np.ndarray, maps: np.ndarray, p: AttnParams, selected: int | None = None,
                  vmax: float | None = None, per_row: int = 12, artifacts: np.ndarray | None = None,
                  floor: float = 1e-12) -> np.ndarray:
    """(L, gh, gw) rollout maps -> one row of small overlays, each with "≤l" written below it (not
    over the map); selected: 0-based layer outlined. vmax: a shared scale (None = each tile from 0
    to its own max, at least `floor`, outside its artifact tokens unless p.artifacts_in_range).
    artifacts: (L, gh, gw) bool, painted render.ARTIFACT_COLOR."""
    small = cv2.resize(view, (STRIP_TILE, STRIP_TILE), interpolation=cv2.INTER_AREA)
    tiles = []
    for l, m in enumerate(maps):
        arts = artifacts[l] if artifacts is not None else np.zeros(m.shape, bool)
        counted = m if p.artifacts_in_range or not arts.any() or arts.all() else m[~arts]
        # From 0 (never the tile's own minimum): a near-uniform rollout must not look patterned.
        lo_hi = (0.0, max(float(counted.max()), floor) if vmax is None else vmax)
        tile = render.overlay(small, m, p.alpha, p.cmap, *lo_hi)
        if arts.any():
            tile = render.paint_patches(tile, arts, render.ARTIFACT_COLOR)
        tiles.append(render.caption_below(tile, f"<={l + 1}"))
    n = len(tiles)
    cols = min(n, per_row)
    out = render.mosaic(np.stack(tiles), -(-n // cols), cols, sep=3)
    return out if selected is None else outline_strip_tile(out, n, selected, per_row)


def outline_strip_tile(img: np.ndarray, n: int, selected: int, per_row: int = 12) -> np.ndarray:
    """A copy of a compose_strip image with the 0-based layer's tile outlined in yellow."""
    cols = min(n, per_row)
    r, c = divmod(selected, cols)
    x0, y0 = c * (STRIP_TILE + 3), r * (STRIP_TILE + strip_caption() + 3)
    out = img.copy()
    cv2.rectangle(out, (x0, y0), (x0 + STRIP_TILE - 1, y0 + STRIP_TILE - 1), render.HIGHLIGHT_COLOR, 3)
    return out


@lru_cache(maxsize=1)
def strip_caption() -> int:
    """Height of the band under each strip tile (render.caption_below)."""
    cap = render.text_size("<=12")[1]
    return cap + 2 * max(3, cap // 4)


def strip_maps(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> torch.Tensor:
    """(L, gh, gw) fused rollout after each layer ([CLS] row); fusion = the shown one, or mean
    when a single head is shown."""
    fusion = p.show if p.show in FUSIONS else "mean"
    return att_mod.cls_to_patches(layer_rollout(a, fusion, p.discard, cache, p.discard_mode), a.geometry,
                                  summary_of(a, p.summary))


# ------------------------------------------------------------------ everything a control changes
@dataclass(frozen=True)
class AttentionView:
    main: np.ndarray
    readout: str
    grid: np.ndarray
    strip: np.ndarray


def attention_view(vm: VitModel, a: Analysis, p: AttnParams, cache: Cache = no_cache) -> AttentionView:
    """Main map, readout, layers × heads grid and rollout strip for one set of controls."""
    p = p.checked(vm.geometry)
    main = main_panel(vm, a, p, cache)  # first: the fixed scale reads the same cached stacks
    gmaps = grid_maps(a, p, cache).numpy()
    smaps = strip_maps(a, p, cache).numpy()
    g = vm.geometry
    arts = artifact_stack(a, p, cache)  # (L, gh, gw) for the grid's mode
    strip_arts = art_mod.through_layers(artifact_masks(a, cache))  # the strip is always rolled out
    vmax = None
    if p.shared_scale:  # strip and grid share one scale on request (issue 10)
        # The query's attention to itself would set the scale alone (see map_image), and so
        # would the artifact tokens: drawn (clipped to the top colour), but not counted.
        scale_maps = gmaps.copy()
        out = excluded(arts, p)
        if out is not None:
            scale_maps[np.broadcast_to(out[:, None], scale_maps.shape)] = 0.0
        if p.query is not None:
            scale_maps[..., p.query[0], p.query[1]] = 0.0
        strip_max = float(np.where(strip_arts, 0.0, smaps).max() if not p.artifacts_in_range else smaps.max())
        vmax = float(scale_maps.max()) if p.mode == "raw" else float(max(scale_maps.max(), strip_max))
    # The pictures without their yellow outline are cached per look (controls other than
    # layer and head), so moving the layer or head slider only outlines a copy.
    grid_key = grid_image_name(p.mode, p.query, p.direction, p.cmap, p.shared_scale, vmax, p.who(g),
                p.artifacts_in_range)
    marks = {UNIFORM_MARK: uniform_level(g)}
    grid = cache(grid_key, lambda: compose_grid(gmaps, p.cmap, p.shared_scale, None, vmax, marks, arts,
                                                excluded(arts, p), range_floor(g), bar=False))
    # The grid shows the main map's cell; fused heads are no one cell, so the whole layer is outlined.
    selected = (p.layer - 1, p.head - 1 if p.show == ONE_HEAD else None)
    tops = None if p.shared_scale else tile_tops(gmaps, excluded(arts, p), range_floor(g))
    strip_vmax = vmax if p.shared_scale and p.mode != "raw" else None
    strip_key = strip_image_name(p.show if p.show in FUSIONS else "mean", p.discard, p.discard_mode, p.alpha,
                 p.cmap, strip_vmax, p.who(g), p.artifacts_in_range)
    strip = cache(strip_key, lambda: compose_strip(a.input_view, smaps, p, None, strip_vmax, artifacts=strip_arts,
                                                   floor=range_floor(g)))
    return AttentionView(main.image, main.readout,
                         grid_bar(outline_grid_cell(grid, gmaps.shape, selected), p.cmap, vmax, marks, tops, selected),
                         outline_strip_tile(strip, len(smaps), p.layer - 1))


# ------------------------------------------------------------------ the main map, drawn in the page
BOOK_MAX_BYTES = 1_500_000  # larger models (e.g. 24 layers on a 37×37 grid) are drawn by the server


@dataclass(frozen=True)
class MapBook:
    """The main map of every layer × (each head, then each fusion), under the controls other
    than layer, head and show (query, direction, mode, discard, scale, τ, colours). With it the
    page draws a layer, head or fusion change itself, with no round trip (issue 16;
    vizvit/views/attention_map.js). Map (l, k) is main_panel's map for layer l + 1 and head k + 1
    (k < H), or the heads fused by FUSIONS[k − H]."""

    maps: np.ndarray  # (L, H + F, gh, gw) float32
    lo_hi: np.ndarray  # (L, H + F, 2) float64: each map's colour range (map_range)
    keep: np.ndarray | None  # (L, H + F, gh, gw) bool: the τ mass threshold; None when τ = 0
    bars: list  # [l][k]: each map's colour-bar labels, render.colorbar_labels
    params: AttnParams  # the controls it was made for
    artifacts: np.ndarray  # (L, gh, gw) bool: each layer's artifact tokens in this mode (outlined)
    # Every colour scale's (lo_hi, bars), params.scale's among them: the page draws a scale change
    # at once too, from the same maps (issue 27).
    by_scale: dict = dataclasses.field(default_factory=dict)


def draws_in_page(g: Geometry) -> bool:
    """Whether the page draws this model's layer, head and fusion changes itself (its MapBook
    is small enough to send with every query change)."""
    return g.num_layers * (g.num_heads + len(FUSIONS)) * g.grid[0] * g.grid[1] * 4 <= BOOK_MAX_BYTES


def fused_maps(a: Analysis, p: AttnParams, fusion: Fusion, cache: Cache = no_cache) -> torch.Tensor:
    """(L, gh, gw): main_panel's map for every layer with the heads fused by `fusion` (raw: the
    fused attention; rolled out: the fused rollout through each layer)."""
    g = a.geometry
    stack = (att_mod.fuse_heads(_full_attentions(a), fusion) if p.mode == "raw"
             else layer_rollout(a, fusion, p.discard, cache, p.discard_mode))  # (L, N, N)
    if g.pools_with_map_head and p.query is None:  # SigLIP: the MAP head's weights through each matrix
        return att_mod.cls_to_patches(stack, g, a.summary_weights).float()
    return att_mod.query_map(stack, query_token(p, g), p.direction, g).float()


def map_book(vm: VitModel, a: Analysis, p: AttnParams, cache: Cache = no_cache) -> MapBook:
    g = vm.geometry
    p = p.checked(g)
    fused = np.stack([fused_maps(a, p, f, cache).numpy() for f in FUSIONS], 1)  # (L, F, gh, gw)
    maps = np.concatenate([grid_maps(a, p, cache).numpy(), fused], 1).astype(np.float32)  # (L, H + F, gh, gw)
    n_l, n_k = maps.shape[:2]
    shows = [ONE_HEAD] * g.num_heads + list(FUSIONS)
    arts = artifact_stack(a, p, cache)
    out = excluded(arts, p)
    height = render.display_scale(g) * g.image_size[0]
    marks = {UNIFORM_MARK: uniform_level(g)}

    def ranges(scale: AttnScale) -> tuple[np.ndarray, list]:
        """(L, H + F, 2) colour ranges of the maps on this scale, and their colour bars' labels."""
        fixed = ({s: fixed_scale_max(a, dataclasses.replace(p, show=s, scale=scale), cache) for s in set(shows)}
                 if scale == "fixed across layers and heads" else {})
        lo_hi = np.array([[map_range(maps[l, k], scale, p.query, fixed.get(shows[k]),
                                     None if out is None else out[l], range_floor(g)) for k in range(n_k)]
                          for l in range(n_l)], np.float64)
        return lo_hi, [[render.colorbar_labels(height, *lo_hi[l, k], marks=marks) for k in range(n_k)]
                       for l in range(n_l)]

    by_scale = {scale: ranges(scale) for scale in ATTN_SCALES}
    keep = None
    if p.tau > 0:
        keep = np.stack([att_mod.mass_threshold(torch.from_numpy(m), p.tau).numpy()
                         for m in maps.reshape(-1, *g.grid)]).reshape(maps.shape)
    lo_hi, bars = by_scale[p.scale]
    return MapBook(maps, lo_hi, keep, bars, p, arts, by_scale)


def look(p: AttnParams) -> str:
    """The controls a MapBook depends on besides the query: the page keeps the [CLS] book of the
    same look, and goes back to it at once ("Query: back to the summary token")."""
    return "|".join(str(getattr(p, f.name)) for f in dataclasses.fields(p)
                    if f.name not in ("layer", "head", "show", "query", "distance_norm", "shared_scale"))


def book_index(book: MapBook, lo_hi: np.ndarray | None = None) -> np.ndarray:
    """(L, H + F, gh, gw) uint8: each map's colour-table rows, as map_image's render.overlay paints them
    (render.color_index of the map under its colour range: the book's, or lo_hi (L, H + F, 2))."""
    lo_hi = book.lo_hi if lo_hi is None else lo_hi
    n_l, n_k = book.maps.shape[:2]
    return np.stack([np.stack([render.color_index(book.maps[l, k], *lo_hi[l, k]) for k in range(n_k)])
                     for l in range(n_l)])


def book_for_page(book: MapBook, view: np.ndarray, g: Geometry, photo: str = "") -> str:
    """The MapBook as the page's script reads it: ONE JSON string (Gradio's page copies an output
    value on every event, and a nested value costs one copy per list: 48 000 copies, ~150 ms, for
    ViT-B/16's colour-bar layouts), arrays as base64 little-endian bytes. Everything map_image draws is here: the view, the colour table, the outline's place
    and width, the colour bar's layout, so the script draws the server's very pixels (the bar's
    text aside: the browser's font)."""
    p = book.params
    png = cv2.imencode(".png", cv2.cvtColor(view, cv2.COLOR_RGB2BGR))[1]
    return json.dumps({
        **page_drawing(g, p, render.display_scale(g)),
        "for": [p.layer, p.head, p.show], "look": look(p), "photo": photo, "layers": g.num_layers, "heads": g.num_heads, "fusions": list(FUSIONS),
        # Each map as the colour-table rows its patches are painted with (render.color_index, with its
        # colour range): all the page's drawing reads of a map's values (L·K·gh·gw bytes, not floats).
        "index": base64.b64encode(book_index(book).tobytes()).decode(),
        "lo_hi": book.lo_hi.reshape(-1).tolist(),
        "keep": None if book.keep is None else base64.b64encode(book.keep.astype(np.uint8).tobytes()).decode(),
        "bars": book.bars,
        "highlight": list(p.query) if p.query is not None else None,
        # Each layer's artifact tokens (row-major patch numbers): outlined on every map (a clicked
        # query's too; its colour range leaves them out on the server: query_book).
        "artifacts": [np.flatnonzero(m).tolist() for m in book.artifacts],
        "view": "data:image/png;base64," + base64.b64encode(png.tobytes()).decode(),
        # The look's settings by name (the browser tests wait on them).
        "scale_name": p.scale, "artifacts_in_range": p.artifacts_in_range,
        # The other colour scales of the same maps (the radio's choices): their rows and ranges (their
        # bars' labels the page lays out from the range, as for a clicked query: +~55 kB a scale for
        # ViT-B/16 instead of ~80 kB).
        "scales": {name: {"index": base64.b64encode(book_index(book, lh).tobytes()).decode(),
                          "lo_hi": lh.reshape(-1).tolist()}
                   for name, (lh, _) in book.by_scale.items() if name != p.scale},
    }, separators=(",", ":"))


def page_drawing(g: Geometry, p: AttnParams, scale: int) -> dict[str, object]:
    """What map_draw.js needs besides a map and the view to draw map_image's picture at enlargement
    `scale`: sizes, the colour table and blend, the outlines' widths and colours, the colour bar's
    layout (page_style), and for a click drawn in the page the patch it falls on and the uniform
    level its colour bar marks."""
    step = scale * g.image_size[0] / g.grid[0]
    return {
        "grid": list(g.grid), "size": list(g.image_size), "scale": scale, "style": page_style(),
        "width": scale * g.image_size[1] + render.BAR_GAP + render.BAR_WIDTH + render.BAR_PAD + bar_text_width(),
        "alpha": p.alpha, "lut": base64.b64encode(render.lut(p.cmap).tobytes()).decode(),
        "outline": max(1, int(step // 12)), "artifact_outline": artifact_outline(g, scale),
        "colors": {"highlight": list(render.HIGHLIGHT_COLOR), "mark": list(render.MARK_COLOR),
                   "mark_text": list(render.MARK_TEXT_COLOR), "artifact": list(render.ARTIFACT_COLOR)},
        "patch": g.patch_size, "uniform": uniform_level(g),
    }


def page_style() -> dict[str, object]:
    """The constants the page's drawing (attention_map.js) shares with map_image: the colour bar's
    layout and words, the τ dimming, the name of the "one head" choice. (A clicked query's colour
    range and τ mask come computed, in matrix_for_page: the scale and direction names are not needed.)"""
    return {**render.colorbar_style(), "dim": DIM, "mark": UNIFORM_MARK, "one_head": ONE_HEAD}


@dataclass(frozen=True)
class QueryBook:
    """main_panel's map of the shown layer, head and fusion for each patch as the clicked query (the
    row or column of the matrix behind the shown map), as the page paints it: with it the page draws
    a click on the map at once, and the server's MapBook for the new query follows. Query i is patch
    divmod(i, gw)."""

    index: np.ndarray  # (Q, gh, gw) uint8: each map's colour-table rows (render.color_index)
    lo_hi: np.ndarray  # (Q, 2) float64: each map's colour range (map_range, the query itself left out)
    keep: np.ndarray | None  # (Q, gh, gw) bool: the τ mass threshold; None when τ = 0


def query_ranges(values: np.ndarray, scale: AttnScale, exclude: np.ndarray | None = None,
                 floor: float = 1e-12) -> np.ndarray:
    """(Q, gh, gw) finite maps, map i that of patch i as the query -> (Q, 2): map_range of each, its
    query outlined (left out), on the "0 to max" or "this map's range" scale, in one pass."""
    q = len(values)
    flat = values.reshape(q, -1)
    keep = np.ones(flat.shape, bool) if exclude is None else np.tile(~exclude.reshape(-1), (q, 1))
    keep[np.arange(q), np.arange(q)] = False
    keep[~keep.any(1)] = True  # nothing left to set the range: every patch counts
    lo = np.where(keep, flat, np.inf).min(1).astype(np.float64)
    hi = np.where(keep, flat, -np.inf).max(1).astype(np.float64)
    if scale == "this map's range":
        return np.stack([lo, np.maximum(hi, lo + floor)], 1)
    return np.stack([np.zeros(q), np.maximum(hi, floor)], 1)


def query_book(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> QueryBook | None:
    """The QueryBook of p's shown map: main_panel's map, colour range and τ mask for each patch as the
    query (None on the fixed scale: its top spans every layer and head, so the server draws a click
    there)."""
    g = a.geometry
    if p.scale == "fixed across layers and heads":
        return None
    if p.direction not in DIRECTIONS:
        raise UserError(f"Unknown direction {p.direction!r}: use row or column.")
    pre = g.num_prefix_tokens
    patches = main_matrix(a, p, cache)[pre:, pre:]  # (P, P): query patches × key patches
    # Patch i's row (what it attends to) or column (what attends to it): attention.query_map's values.
    values = (patches if p.direction == "row" else patches.T).numpy().astype(np.float32).reshape(-1, *g.grid)
    lo_hi = query_ranges(values, p.scale, excluded(artifact_stack(a, p, cache)[p.layer - 1], p), range_floor(g))
    index = render.color_index(values, lo_hi[:, :1, None], lo_hi[:, 1:, None])
    keep = (att_mod.mass_thresholds(torch.from_numpy(values.reshape(len(values), -1)), p.tau).numpy()
            .reshape(values.shape) if p.tau > 0 else None)
    return QueryBook(index, lo_hi, keep)


def matrix_for_page(a: Analysis, p: AttnParams, cache: Cache = no_cache, photo: str = "") -> str:
    """The QueryBook behind the shown map as ONE JSON string, arrays as base64 little-endian bytes (the
    τ masks one bit a patch); "index": null on the fixed scale. Once this was the (N, N) float32 matrix,
    from which the page computed each query's map, range and τ mask: ViT-B/16's was 207 kB with every
    picture, these rows ~57 kB, and the page paints the server's own rows. photo: names the photo and
    model (the session key; the book carries it too), so the page never mixes two photos'."""
    qb = query_book(a, p, cache)
    enc = lambda x: base64.b64encode(x.tobytes()).decode()  # noqa: E731
    return json.dumps({"for": "|".join(map(str, (p.layer, p.head, p.show))), "look": look(p), "photo": photo,
                       "index": None if qb is None else enc(qb.index),
                       "lo_hi": None if qb is None else enc(qb.lo_hi.astype("<f8")),
                       "keep": None if qb is None or qb.keep is None else enc(np.packbits(qb.keep.reshape(-1)))},
                      separators=(",", ":"))


def clicked_query(g: Geometry, x: float, y: float) -> tuple[int, int]:
    """A click at (x, y) on the enlarged main map -> patch (row, col)."""
    return patch_at(x, y, g, render.display_scale(g))


# ------------------------------------------------------------------ attention distance
def distance_figure(d: np.ndarray, model_id: str = "", norm: DistanceNorm = "renormalised") -> go.Figure:
    """(L, H) distances -> plotly scatter: x = layer, y = distance in px, hover = head."""
    n_l, n_h = d.shape
    layers = np.repeat(np.arange(1, n_l + 1), n_h)
    heads = np.tile(np.arange(1, n_h + 1), n_l)
    # Heads are categories, not a quantity: one colour each and a legend (a continuous bar had
    # ticks at 1.5 and 2.5). The points stay ONE trace (page.js reads a click's x and customdata);
    # the legend's entries are point-less traces.
    colors = head_colors(n_h)
    fig = go.Figure(go.Scatter(
        x=layers, y=d.reshape(-1), mode="markers", customdata=heads, showlegend=False,
        marker=dict(size=8, color=[colors[h - 1] for h in heads], opacity=0.85),
        hovertemplate="layer %{x} · head %{customdata}<br>%{y:.1f} px<extra></extra>"))
    for h in range(n_h):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"head {h + 1}", hoverinfo="skip",
                                 marker=dict(size=8, color=colors[h])))
    short = model_id if len(model_id) <= 64 else "…" + model_id[-63:]
    how = "" if norm == "renormalised" else " ([CLS] weight not renormalised, probing-vits)"
    # The model on a second, smaller line: one line was cut at the chart's width.
    fig.update_layout(title="Mean attention distance per head" + how + (f"<br><sub>{short}</sub>" if model_id else ""),
                      xaxis=dict(title="layer", dtick=1), yaxis=dict(title="distance (model-input px)"),
                      margin=dict(l=10, r=10, t=64, b=10), height=340,
                      # Below the axis, in one row: a legend on the right took a phone's plot width.
                      legend=dict(title=dict(text="head"), orientation="h", yanchor="top", y=-0.28, x=0))
    return fig


def head_colors(n: int) -> list[str]:
    """n distinct colours, one per head (plotly's qualitative palettes: 10, then 24 colours)."""
    q = plotly.colors.qualitative
    palette = q.Plotly if n <= len(q.Plotly) else q.Dark24
    return [palette[h % len(palette)] for h in range(n)]


def distance_view(vm: VitModel, a: Analysis, norm: DistanceNorm = "renormalised",
                  cache: Cache = no_cache) -> tuple[go.Figure, list[tuple[str, str]]]:
    """The distance chart and the 'open a head' list for one normalisation (its control's change)."""
    if norm not in DISTANCE_NORMS:
        raise UserError(f"Distance normalisation must be {' or '.join(DISTANCE_NORMS)}.")
    d = distances(a, cache, norm).numpy()
    return distance_figure(d, vm.display_name, norm), distance_choices(d)


def layer_label(mode: str) -> str:
    """The layer slider's label: what the layer means in this mode."""
    return "layer" if mode == "raw" else "layer (rolled out through this layer)"


def choice_value(p: AttnParams) -> str:
    """The 'open a head' list's value for the shown layer and head (the head slider's head)."""
    return f"{p.layer},{p.head}"


def distance_choices(d: np.ndarray) -> list[tuple[str, str]]:
    """(label, "layer,head") pairs for the 'open a head' list, nearest-looking heads first."""
    n_l, n_h = d.shape
    order = sorted(((float(d[l, h]), l, h) for l in range(n_l) for h in range(n_h)))
    return [(f"layer {l + 1} · head {h + 1} · {v:.1f} px", f"{l + 1},{h + 1}") for v, l, h in order]


def parse_choice(value: str) -> tuple[int, int]:
    """"layer,head" from distance_choices, or "layer,head,n" from a chart click -> (layer, head),
    1-based. (n counts clicks, so clicking the same dot again is still a change.)"""
    try:
        l, h, *rest = (int(x) for x in value.split(","))
        if len(rest) > 1:
            raise ValueError(value)
    except (AttributeError, ValueError):
        raise UserError("Choose a head from the list.") from None
    return l, h


# ------------------------------------------------------------------ class relevance
def class_choices(a: Analysis, labels: tuple[str, ...] | list[str] = ()) -> list[tuple[str, int]]:
    """(name, class index) for the class menu: the top-5 first ("Egyptian cat (82.2%)"), then every
    other class of `labels` in index order, named in full with its probability to two significant
    digits ("tabby, tabby cat (0.0031%)"), so a search for any of its names finds it. Empty without a classifier."""
    top = [(f"{p.label.split(',')[0]} ({p.prob:.1%})", p.index) for p in a.top5]
    if a.probs is None or not top:
        return top
    seen = {i for _, i in top}
    probs = a.probs.reshape(-1).tolist()
    # Two significant digits: most of the 1000 classes are far below 0.01 % and would all read "0.00%".
    return top + [(f"{name} ({100 * probs[i]:.2g}%)", i) for i, name in enumerate(labels[:len(probs)]) if i not in seen]


def relevance_panel(vm: VitModel, a: Analysis, class_index: int, p: AttnParams,
                    cache: Cache = no_cache) -> tuple[np.ndarray, str]:
    g = vm.geometry
    values = relevance_map(vm, a, class_index, cache, p.summary)
    name = vm.labels[int(class_index)].split(",")[0]
    v, r, c = _where(values, np.argmax)
    arts = art_mod.through_layers(artifact_masks(a, cache))[-1]  # relevance runs through every layer
    text = (f"Relevance for **{name}** (class {class_index}) from {p.who(g)}'s row: sum over patches "
            f"{values.sum():.4f}, max {v:.4f} at (row {r}, col {c}). Method: {att_mod.RELEVANCE_METHOD}.")
    if arts.any():
        v2, r2, c2 = _where(np.where(arts, -np.inf, values), np.argmax)
        top = np.argsort(values, axis=None)[::-1][:int(arts.sum())]
        hit = int(arts.reshape(-1)[top].sum())
        text += (f" Outside the artifact tokens the max is {v2:.4f} at (row {r2}, col {c2}); {hit} of the "
                 f"{int(arts.sum())} most relevant patches are artifact tokens.\n\n"
                 + artifact_note(arts, p, "through layer", g.num_layers))
    lo_hi = map_range(values, p.scale, None, exclude=excluded(arts, p))
    return map_image(a.input_view, values, g, p, lo_hi=lo_hi, artifacts=arts), text


def method_panel(vm: VitModel, a: Analysis, method: str, class_index: int | None, p: AttnParams,
                 cache: Cache = no_cache) -> tuple[np.ndarray, str]:
    """The map of one EXPLAIN_METHODS method (for `class_index`; attention flow has no class), drawn
    as the relevance map is, with its readout."""
    if method not in EXPLAIN_METHODS:
        raise UserError(f"Unknown method {method!r}: use one of {', '.join(EXPLAIN_METHODS)}.")
    if method == "class relevance":
        if class_index is None:
            raise UserError("This model has no classifier, so there is no class to explain.")
        return relevance_panel(vm, a, int(class_index), p, cache)
    g = vm.geometry
    if method == "attention flow":
        values, about = maps.flow_map(a, cache), "from the summary token, any class"
    else:
        if class_index is None:
            raise UserError("This model has no classifier, so there is no class to explain.")
        values = maps.class_map(method, vm, a, int(class_index), cache)
        about = f"for **{vm.labels[int(class_index)].split(',')[0]}** (class {class_index})"
    v, r, c = _where(values, np.argmax)
    arts = art_mod.through_layers(artifact_masks(a, cache))[-1]
    text = (f"**{method}** {about}: sum over patches {values.sum():.4g}, max {v:.4g} at (row {r}, col {c}). "
            f"Method: {maps.METHOD_TEXT[method]}.")
    if method == "attention flow":  # max-flows share their bottlenecks: the map is nearly flat
        text += (f" Every patch gets between {values.min():.4g} and {v:.4g} (uniform: {1 / values.size:.4g}): flow "
                 f"spreads over many paths, so its maps are flatter than rollout's.")
    if arts.any():
        top = np.argsort(values, axis=None)[::-1][:int(arts.sum())]
        text += (f" {int(arts.reshape(-1)[top].sum())} of the {int(arts.sum())} highest patches are artifact "
                 f"tokens.\n\n" + artifact_note(arts, p, "through layer", g.num_layers))
    lo_hi = map_range(values, p.scale, None, exclude=excluded(arts, p))
    return map_image(a.input_view, values, g, p, lo_hi=lo_hi, artifacts=arts), text


def flow_progress(ph: Photo, p: AttnParams, cancel: Cancel = NEVER) -> Iterator[tuple[np.ndarray | None, str]]:
    """Attention flow as a job: progress lines (no picture) every FLOW_PROGRESS_EVERY max-flows, then
    the map; from the cache at once once computed. Closing the generator (Stop) ends the job, and
    so does `cancel` (checked between max-flows: Cancelled)."""
    a = ph.analysis()
    if ph.peek(ATTENTION_FLOW) is None:
        yield None, "Attention flow: building the attention graph…"
        for step in maps.flow_steps(a, ph.derived, cancel=cancel):
            if step.flows is None and step.done % FLOW_PROGRESS_EVERY == 0:
                left = step.seconds / step.done * (step.total - step.done)
                yield None, (f"Attention flow: {step.done} of {step.total} max-flows in {step.seconds:.0f} s, about "
                             f"{left:.0f} s left. Stop ends it (nothing is kept until it is done).")
    yield method_panel(ph.vm, a, "attention flow", None, p, ph.derived)


# ------------------------------------------------------------------ export
def attention_arrays(vm: VitModel, a: Analysis, cache: Cache = no_cache) -> dict[str, np.ndarray]:
    """arrays.npz keys of the Attention tab (see README)."""
    g = vm.geometry
    att = _full_attentions(a)
    stack = maps.mean_rollout(a, cache)  # (L, N, N)
    s = summary_of(a)  # SigLIP: the MAP head's weights (N,); else the default summary's name
    out = {
        "attentions": att.numpy().astype(np.float16),  # (L, H, N, N)
        "cls_attention": att_mod.cls_to_patches(att.float(), g, s if g.pools_with_map_head else "[CLS]"
                                                ).numpy().astype(np.float32),  # (L, H, gh, gw)
        "rollout": att_mod.cls_to_patches(stack, g, s).numpy().astype(np.float32),  # (L, gh, gw), default summary
        # (T, L, gh, gw) / (L, H, T, gh, gw): rollout and raw attention from every prefix token
        # ([CLS], [DIST], [REG1..R]); the rollout from [CLS] is prefix_rollout[0]; SigLIP: T = 0
        "prefix_rollout": np.stack([att_mod.cls_to_patches(stack, g, n).numpy() for n in g.prefix_names]
                                   ).astype(np.float32) if g.prefix_names
        else np.zeros((0, g.num_layers, *g.grid), np.float32),
        "prefix_attention": att[:, :, :g.num_prefix_tokens, g.num_prefix_tokens:].float().reshape(
            *att.shape[:2], g.num_prefix_tokens, *g.grid).numpy().astype(np.float32),
        "rollout_heads": att_mod.cls_to_patches(head_rollout(a, cache), g, s).numpy().astype(np.float32),
        "attention_distance": distances(a, cache).numpy().astype(np.float32),  # (L, H)
    }
    if a.summary_attention is not None:  # (H, gh, gw) SigLIP: the MAP head's attention per head
        out["summary_attention"] = a.summary_attention[:, g.num_prefix_tokens:].reshape(-1, *g.grid).numpy()
    if vm.has_classifier and a.top5:
        out["relevance"] = relevance_map(vm, a, a.top5[0].index, cache)  # (gh, gw), top-1 class
        for name in maps.CLASS_METHODS:  # (gh, gw) each, top-1 class: gradient rollout, LeGrad, Grad-CAM
            out[export_name(name)] = maps.class_map(name, vm, a, a.top5[0].index, cache)
    return out


def export_name(method: str) -> str:
    """arrays.npz key of a class-specific method's map: "gradient rollout" -> "map_gradient_rollout"."""
    return "map_" + method.lower().replace(" ", "_").replace("-", "")


def attention_figures(vm: VitModel, a: Analysis, cache: Cache = no_cache) -> dict[str, "np.ndarray | go.Figure"]:
    p = AttnParams()
    v = attention_view(vm, a, p, cache)
    out: dict[str, np.ndarray | go.Figure] = {
        "attention_cls_mean": v.main, "attention_heads_grid": v.grid, "rollout_strip": v.strip,
        "attention_distance_chart": distance_figure(distances(a, cache).numpy(), vm.display_name),
    }
    if vm.has_classifier and a.top5:
        out["relevance_top1"] = relevance_panel(vm, a, a.top5[0].index, p, cache)[0]
    return out


# ------------------------------------------------------------------ what opening the tab shows
@dataclass(frozen=True)
class AttentionPage:
    """Everything the tab shows when opened or when the photo/model changes, each field named
    like the component that shows it."""

    params: AttnParams  # the controls clipped to this model (layer, head, query, summary)
    main: np.ndarray
    readout: str
    grid: np.ndarray
    strip: np.ndarray
    distance: go.Figure
    distance_choices: list[tuple[str, str]]
    classes: list[tuple[str, int]]  # (label, class index): top-5 first, then every class; empty without a classifier
    book: str | None  # every layer × head of the main map, for the page to draw (None: the server draws)
    matrix: str | None  # the matrix behind the main map, for a click drawn in the page (None: drawn here)

    @property
    def view(self) -> AttentionView:
        return AttentionView(self.main, self.readout, self.grid, self.strip)


def attention_page(vm: VitModel, a: Analysis, p: AttnParams, cache: Cache = no_cache,
                   book: str | None = None, matrix: str | None = None) -> AttentionPage:
    """Everything the tab shows when opened or when the photo/model changes."""
    d = distances(a, cache, p.distance_norm).numpy()
    fig = distance_figure(d, vm.display_name, p.distance_norm)
    v = attention_view(vm, a, p, cache)
    return AttentionPage(p, v.main, v.readout, v.grid, v.strip, fig, distance_choices(d), class_choices(a, vm.labels), book,
                         matrix)


def clip_params(p: AttnParams, g: Geometry) -> AttnParams:
    """The same controls, with layer/head/query pulled inside a (possibly new) model's range, and a
    summary token this model lacks back to its default."""
    from dataclasses import replace

    q = p.query if p.query is not None and p.query[0] < g.grid[0] and p.query[1] < g.grid[1] else None
    summary = p.summary if p.summary in g.summaries else None
    return replace(p, layer=min(max(1, p.layer), g.num_layers), head=min(max(1, p.head), g.num_heads), query=q,
                   summary=summary)


def page_book(ph: Photo, p: AttnParams) -> str | None:
    """The main map of every layer and head for the page to draw (None: too large, drawn by the server)."""
    g = ph.vm.geometry
    if not draws_in_page(g):
        return None
    a = ph.analysis()
    return book_for_page(map_book(ph.vm, a, p, ph.derived), a.input_view, g, photo=repr(ph.key))


def page_matrix(ph: Photo, p: AttnParams) -> str | None:
    """The matrix behind the shown map, for a click drawn in the page (None: drawn by the server)."""
    return matrix_for_page(ph.analysis(), p, ph.derived, photo=repr(ph.key)) if draws_in_page(ph.vm.geometry) else None


@dataclass(frozen=True)
class AttentionChange:
    """A control change: what it redraws, each field named like its component."""

    main: np.ndarray | None  # None: unchanged (a layer, head or fusion change the page draws from its book)
    readout: str
    grid: np.ndarray
    strip: np.ndarray
    matrix: str | None
    book: str | None  # only when asked for (a new look or query); None also when drawn by the server


# ------------------------------------------------------------------ entry points
def warm_photo(ph: Photo) -> None:
    """The photo's work for this tab, after its forward, in the background (Workbench.photo_work):
    the heads' mean attention distances (~400 ms on ViT-B/16 on 2 cores), which the tab's first
    answer would otherwise compute while the visitor waits for the map."""
    distances(ph.analysis(), ph.derived, DISTANCE_NORMS[0])


def show(ph: Photo, p: AttnParams) -> AttentionPage:
    """On open (a new photo or model): the whole tab, for the params clipped to this model."""
    p = clip_params(p, ph.vm.geometry)
    return attention_page(ph.vm, ph.analysis(), p, ph.derived, page_book(ph, p), page_matrix(ph, p))


def change(ph: Photo, p: AttnParams, drawn_in_page: bool = False, with_book: bool = False) -> AttentionChange:
    """On a control change: the main map, its readout, the layers × heads grid, the strip and the
    matrix behind the map. drawn_in_page: a layer, head or fusion change, which the page draws
    itself from its book (when it has one). with_book: a new look or query, a new book too."""
    view = attention_view(ph.vm, ph.analysis(), p, ph.derived)
    m = page_matrix(ph, p)
    return AttentionChange(None if drawn_in_page and m is not None else view.main, view.readout, view.grid,
                           view.strip, m, page_book(ph, p) if with_book else None)


def relevance(ph: Photo, class_index: int, p: AttnParams) -> tuple[np.ndarray, str]:
    """On request: the class-specific relevance map (one backward pass, then cached)."""
    return relevance_panel(ph.vm, ph.analysis(), int(class_index), p, ph.derived)


def explain(ph: Photo, method: str, class_index: int | None, p: AttnParams) -> tuple[np.ndarray, str]:
    """On request: one EXPLAIN_METHODS map (attention flow: only once computed, see flow_progress)."""
    if method == "attention flow" and ph.peek(ATTENTION_FLOW) is None:
        raise UserError("Attention flow runs as a job: use flow_progress.")
    return method_panel(ph.vm, ph.analysis(), method, class_index, p, ph.derived)


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    return attention_arrays(ph.vm, ph.analysis(), ph.derived)


def export_figures(ph: Photo) -> dict[str, "np.ndarray | go.Figure"]:
    return attention_figures(ph.vm, ph.analysis(), ph.derived)
