"""Pixel layout of the Attention pictures: one map over the view with its colour bar (map_image),
the layers × heads grid (compose_grid, and a click on it: grid_cell_at) and the rollout strip
(compose_strip). numpy/OpenCV over maps already computed (vizvit.readings.attention); the camera
and the Compare tab draw their maps with the same map_image, so every map looks alike.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np
import torch

from vizvit.errors import UserError
from vizvit.methods import maths as att_mod
from vizvit.model.models import Geometry
from vizvit.pictures import render
from vizvit.readings.attention import AttnParams, map_range, range_floor

# ------------------------------------------------------------------ one map
DIM = 0.3  # the τ threshold darkens the view outside the kept patches to this fraction
UNIFORM_MARK = "1/N"  # the uniform level's name on a map's colour bar


def _dim_outside(img: np.ndarray, view: np.ndarray, keep: np.ndarray, g: Geometry) -> np.ndarray:
    """Replace pixels of patches not in `keep` (gh, gw bool) by the darkened view. The strip no patch
    reads (a side not a multiple of P) is no patch left out: it stays as the overlay drew it."""
    kept = render.upsample_map(keep.astype(np.float32), img.shape[:2], g=g)  # NaN: no patch
    dim = kept < 0.5
    out = img.copy()
    out[dim] = (view[dim] * DIM).astype(np.uint8)
    return out


def artifact_outline(g: Geometry, scale: int | None = None) -> int:
    """Width of an artifact token's outline on the enlarged map: half the query's."""
    step = (scale or render.display_scale(g)) * g.patch_size
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
    img = render.overlay(view, values, p.alpha, p.cmap, vmin=lo, vmax=hi, g=g)
    if p.tau > 0:
        keep = att_mod.mass_threshold(torch.from_numpy(values), p.tau).numpy()
        img = _dim_outside(img, view, keep, g)
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
    `floor`), outside the (L, gh, gw) `exclude` patches, and the bar says so. artifacts: (L, gh, gw)
    bool, patches painted render.ARTIFACT_COLOR in every head of that layer.
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


def _span(tops: np.ndarray) -> str:
    """A layer's tile tops as "lo-hi", at the fewest significant digits (2 to 4) that write two different ends
    apart ("L12: 0.0058-0.0058" read as one value over tops 0.00575 and 0.00584: a reviewer); one value where
    they are equal even at 4."""
    lo, hi = float(tops.min()), float(tops.max())
    for d in (2, 3, 4):
        a, b = f"{lo:.{d}g}", f"{hi:.{d}g}"
        if a != b:
            return f"{a}-{b}"
    return a


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
        note = f"L{l + 1} H{h + 1} = {tops[l, h]:.3g}" if h is not None else f"L{l + 1}: {_span(tops[l])}"
    # Room for the widest note this grid can have, so the picture keeps its width while the cell changes.
    n_l, n_h = tops.shape
    widest = max(render.text_size(t)[0] for t in (f"L{n_l} H{n_h} = 8.88e-05", f"L{n_l}: 8.888e-05-8.888e-05"))
    out = render.with_colorbar(img, cmap, 0.0, 1.0, ticks=(0.0, 1.0), tick_names=("0", TILE_MAX),
                               text_width=widest)
    if note:  # one line under the top label, no tick: it is that label's value, not a level of its own
        cap = render.text_size("0")[1]
        y = cap + render.LABEL_TOP + int(cap * render.LINE_SPACING)
        x = img.shape[1] + render.BAR_GAP + render.BAR_WIDTH + render.LABEL_OFFSET
        render.put_text(out, note, (x, y))
    return out


def outline_grid_cell(img: np.ndarray, shape: tuple[int, ...],
                      selected: tuple[int, int | None]) -> np.ndarray:
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
# Six tiles a row (12 layers: two rows, ~600 px wide): one row of twelve was ~1,190 px, which a 390-px
# phone shrank to 0.3×, its "<=l" labels to ~8 px (issue 51); at six, ~0.6×: ~17 px.
STRIP_PER_ROW = 6


def compose_strip(view: np.ndarray, maps: np.ndarray, p: AttnParams, selected: int | None = None,
                  vmax: float | None = None, per_row: int = STRIP_PER_ROW, artifacts: np.ndarray | None = None,
                  floor: float = 1e-12, g: Geometry | None = None) -> np.ndarray:
    """(L, gh, gw) rollout maps -> rows of `per_row` small overlays, each with "≤l" written below it (not
    over the map); selected: 0-based layer outlined. vmax: a shared scale (None = each tile from 0
    to its own max, at least `floor`, outside its artifact tokens unless p.artifacts_in_range).
    artifacts: (L, gh, gw) bool, painted render.ARTIFACT_COLOR. g: the model's geometry, so each
    patch sits on its own pixels of the shrunk view (None: the grid fills the tile)."""
    small = cv2.resize(view, (STRIP_TILE, STRIP_TILE), interpolation=cv2.INTER_AREA)
    tiles = []
    for l, m in enumerate(maps):
        arts = artifacts[l] if artifacts is not None else np.zeros(m.shape, bool)
        counted = m if p.artifacts_in_range or not arts.any() or arts.all() else m[~arts]
        # From 0 (never the tile's own minimum): a near-uniform rollout must not look patterned.
        lo_hi = (0.0, max(float(counted.max()), floor) if vmax is None else vmax)
        tile = render.overlay(small, m, p.alpha, p.cmap, *lo_hi, g=g)
        if arts.any():
            tile = render.paint_patches(tile, arts, render.ARTIFACT_COLOR, g)
        tiles.append(render.caption_below(tile, f"<={l + 1}"))
    n = len(tiles)
    cols = min(n, per_row)
    out = render.mosaic(np.stack(tiles), -(-n // cols), cols, sep=3)
    return out if selected is None else outline_strip_tile(out, n, selected, per_row)


def outline_strip_tile(img: np.ndarray, n: int, selected: int, per_row: int = STRIP_PER_ROW) -> np.ndarray:
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
