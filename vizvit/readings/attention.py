"""The Attention tab's readings: what its controls mean, as numbers, cached per photo.

AttnParams is every control; main_matrix / main_map the main map of a setting (with its colour
range, map_range); grid_maps / strip_maps / fused_maps the stacks the grid, the strip and the page's
map book show; distances the heads' mean attention distance. The SigLIP MAP-head case (a summary
that is not a token of the sequence) is decided in summary_of and read_weights, nowhere else.
Nothing here draws: vizvit.views.layout lays the pictures out, vizvit.views.attention presents them.

`cache(name, compute)` is ``Photo.derived`` (or maps.no_cache); the names are this module's
(distance_name) and vizvit.methods.maps' (the rollouts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from vizvit.errors import UserError
from vizvit.methods import maps, maths as att_mod
from vizvit.methods.maps import Cache, no_cache
from vizvit.model.engine import Analysis
from vizvit.model.models import MAP_HEAD, Geometry
from vizvit.model.patches import token_index
from vizvit.readings import artifacts_rule as art_mod
from vizvit.readings.artifacts import artifact_masks
from vizvit.vocab import (
    ATTN_SCALES,
    COLORMAPS,
    DISCARD_MODES,
    DISTANCE_NORMS,
    FUSIONS,
    MODES,
    ONE_HEAD,
    SHOW_CHOICES,
    AttnScale,
    Direction,
    DiscardMode,
    DistanceNorm,
    Fusion,
    Mode,
)

full_attentions = maps.full_attentions  # (L, H, N, N), refused (UserError) after a token drop


def distance_name(norm: str = "renormalised") -> tuple:
    """(L, H) mean attention distance, per normalisation."""
    return ("attention_distance",) + (() if norm == "renormalised" else (norm,))


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
    # Artifact tokens (vizvit.readings.artifacts_rule) take most of a trained ViT's late attention: by default
    # they are left out of every colour range (clipped to the top colour when above it, marked) so the rest shows.
    artifacts_in_range: bool = False

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> AttnParams:
        """The page's control values by field name -> AttnParams (numbers typed, empty summary = default)."""
        return cls(layer=int(v["layer"]), head=int(v["head"]), show=v["show"], mode=v["mode"], query=v["query"],
                   direction=v["direction"], discard=float(v["discard"]), alpha=float(v["alpha"]), cmap=v["cmap"],
                   tau=float(v["tau"]), shared_scale=bool(v["shared_scale"]), summary=v["summary"] or None,
                   discard_mode=v["discard_mode"], distance_norm=v["distance_norm"], scale=v["scale"],
                   artifacts_in_range=bool(v.get("artifacts_in_range", False)))

    def checked(self, g: Geometry) -> AttnParams:
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


# ------------------------------------------------------------------ cached stacks
def layer_rollout(a: Analysis, fusion: Fusion, discard: float, cache: Cache = no_cache,
                  discard_mode: DiscardMode = "per row") -> torch.Tensor:
    """(L, N, N) rollout after each layer, cached per (fusion, discard, discard mode) (vizvit.methods.maps)."""
    return maps.rollout(a, fusion, discard, cache, discard_mode)


def head_rollout(a: Analysis, cache: Cache = no_cache) -> torch.Tensor:
    """(L, H, N, N) per-head rollout (mean fusion below, no discard), cached per photo."""
    return maps.head_rollout(a, cache)


def distances(a: Analysis, cache: Cache = no_cache, norm: DistanceNorm = "renormalised") -> torch.Tensor:
    """(L, H) mean attention distance in pixels, cached per photo and normalisation."""
    return cache(distance_name(norm),
                 lambda: att_mod.attention_distance(full_attentions(a), a.geometry, norm))


def main_matrix(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> torch.Tensor:
    """(N, N) float32 matrix behind the main map: one layer's attention (a head or fused),
    or, rolled out, the per-head rollout R_{l,h} or the fused rollout through layer l."""
    l, h = p.layer - 1, p.head_or_fusion
    if p.mode == "raw":
        return att_mod.select_matrix(full_attentions(a), l, h)
    if isinstance(h, int):
        return head_rollout(a, cache)[l, h]
    return layer_rollout(a, h, p.discard, cache, p.discard_mode)[l]


def summary_of(a: Analysis, name: str | None = None) -> str | torch.Tensor | None:
    """What attention.summary_row reads a map from: the summary's name, or for SigLIP's MAP head (not
    a token of the sequence) its weights over the tokens (Analysis.summary_weights)."""
    if (name or a.geometry.summaries[0]) == MAP_HEAD:
        return a.summary_weights
    return name


def query_maps(a: Analysis, p: AttnParams, stack: torch.Tensor) -> torch.Tensor:
    """(..., N, N) matrices -> (..., gh, gw): the main map's query and direction read from each: a
    clicked patch's row or column, else the summary's row; SigLIP's summary is its MAP head (not a
    token of the sequence): its weights times each matrix. The one place that case is decided."""
    g = a.geometry
    if g.pools_with_map_head and p.query is None:
        return att_mod.cls_to_patches(stack, g, a.summary_weights)
    return att_mod.query_map(stack, query_token(p, g), p.direction, g)


def query_token(p: AttnParams, g: Geometry) -> int:
    """The query's sequence position: a clicked patch, else the summary token (-1: patch mean)."""
    return g.summary_index(p.summary) if p.query is None else token_index(*p.query, g)


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


def uniform_level(g: Geometry) -> float:
    """1/N: each weight of an attention row (raw or rolled out) if it spread evenly over the N tokens."""
    return 1.0 / g.seq_len


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
        row = att_mod.rollout_row(full_attentions(a), q, p.layer, "mean" if isinstance(h, int) else h, p.discard,
                                  g.num_prefix_tokens, p.discard_mode, h if isinstance(h, int) else None)
        values = row[g.num_prefix_tokens:].reshape(g.grid).numpy().astype(np.float32)
    else:
        m = main_matrix(a, p, cache) if m is None else m
        values = query_maps(a, p, m).numpy().astype(np.float32)
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


def fusion_of(show: str) -> Fusion:
    """The heads' fusion a `show` control names: itself, or mean for one head (its rollout and strip)."""
    return next((f for f in FUSIONS if f == show), "mean")


def fixed_scale_max(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> float:
    """The top of the fixed scale: the largest weight of this query and direction over every layer
    and head (raw, or rolled out per head and fused), the query's weight on itself left out."""
    maps = [grid_maps(a, p, cache).numpy()]
    if p.mode != "raw":  # the fused rollout through every layer, same query and direction
        stack = layer_rollout(a, fusion_of(p.show), p.discard, cache, p.discard_mode)
        maps.append(query_maps(a, p, stack).numpy()[:, None])
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


def fixed_scale_tops(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> np.ndarray:
    """(P,) float64: fixed_scale_max for every patch as the query (patch i = divmod(i, gw)), the
    page's QueryBook on the fixed scale, one layer at a time. Left out (as zero, as there): each query
    itself, and each layer's artifact tokens. A max over heads taken before the zeros is the same
    max, and rounding to float32 (grid_maps) keeps order, so each top is fixed_scale_max's."""
    g, pre = a.geometry, a.geometry.num_prefix_tokens
    out = excluded(artifact_stack(a, p, cache), p)  # (L, gh, gw) or None
    stacks = [(maps.HEAD_STACKS[p.mode](a, cache), True)]  # (L, H, N, N), read as float32
    if p.mode != "raw":
        stacks.append((layer_rollout(a, fusion_of(p.show), p.discard, cache, p.discard_mode), False))  # (L, N, N)
    top = np.zeros(g.num_patches)
    for stack, as_float32 in stacks:
        for layer in range(g.num_layers):
            m = stack[layer, ..., pre:, pre:]
            m = m.amax(0) if m.dim() == 3 else m.clone()  # (P, P): query patch × key patch (a copy)
            m = m.float() if as_float32 else m
            if p.direction != "row":
                m = m.T  # patch i's column: what attends to it
            m.fill_diagonal_(0.0)
            if out is not None:
                m[:, torch.from_numpy(out[layer].reshape(-1))] = 0.0
            top = np.maximum(top, m.amax(1).double().numpy())
    return top


def grid_maps(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> torch.Tensor:
    """(L, H, gh, gw): the main map's query and direction for every (layer, head), raw or
    per-head rolled out."""
    stack = maps.HEAD_STACKS[p.mode](a, cache)  # (L, H, N, N)
    return query_maps(a, p, stack).float()


def strip_maps(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> torch.Tensor:
    """(L, gh, gw) fused rollout after each layer ([CLS] row); fusion = the shown one, or mean
    when a single head is shown."""
    return rollout_maps(a, fusion_of(p.show), p.discard, cache, p.discard_mode, p.summary)


def rollout_maps(a: Analysis, fusion: Fusion = "mean", discard: float = 0.0, cache: Cache = no_cache,
                 discard_mode: DiscardMode = "per row", summary: str | None = None) -> torch.Tensor:
    """(L, gh, gw) the summary's row of the rollout after each layer (SigLIP's default: the MAP head's
    weights times R), from the cached stack: the strip, /rollout, the Compare tab and the lesson
    read this one map."""
    return att_mod.cls_to_patches(layer_rollout(a, fusion, discard, cache, discard_mode), a.geometry,
                                  summary_of(a, summary))


def rollout_through(a: Analysis, layer: int, cache: Cache = no_cache) -> np.ndarray:
    """(gh, gw) float32 the summary's mean rollout (no discard) through `layer` (1-based): the /rollout
    endpoint's map of that layer, from the same cached stack (the Compare tab and /compare)."""
    return rollout_maps(a, cache=cache)[layer - 1].numpy().astype(np.float32)


def fused_maps(a: Analysis, p: AttnParams, fusion: Fusion, cache: Cache = no_cache) -> torch.Tensor:
    """(L, gh, gw): main_panel's map for every layer with the heads fused by `fusion` (raw: the
    fused attention; rolled out: the fused rollout through each layer)."""
    stack = (att_mod.fuse_heads(full_attentions(a), fusion) if p.mode == "raw"
             else layer_rollout(a, fusion, p.discard, cache, p.discard_mode))  # (L, N, N)
    return query_maps(a, p, stack).float()
