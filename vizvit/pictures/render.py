"""Pictures as uint8 RGB arrays: colour maps, heatmap overlays, grid lines, mosaics.

numpy/OpenCV only, so a 14×14 grid of 14×14 maps is one image built in
milliseconds, not a figure with 196 subplots.
"""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np

from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.vocab import COLORMAPS

GRID_COLOR = (255, 255, 255)
HIGHLIGHT_COLOR = (255, 230, 0)  # a clicked or chosen patch, cell or tile, outlined
CLS_COLOR = (214, 39, 40)  # [CLS] is drawn in red everywhere
# Artifact tokens (vizvit.readings.artifacts_rule), outlined on maps and filled in small tiles: cyan is on no
# colour map the page offers (inferno, viridis, magma, ...), so it never reads as a value.
ARTIFACT_COLOR = (0, 230, 255)

# Text drawn into pictures (issue 17: a lecture hall reads it from the back row). Sizes are font
# sizes in picture pixels, as CSS would say them: the cap height (an "H") is CAP_RATIO of it.
# TEXT_PX is every label's size; MIN_TEXT_PX the least any label may have (put_text refuses
# less). The page shows pictures in projector mode at a display scale of at least
# PROJECTOR_MIN_SCALE (checked in the browser tests), so a label's effective size there is
# ≥ MIN_TEXT_PX · PROJECTOR_MIN_SCALE ≥ READABLE_PX.
TEXT_PX = 28
MIN_TEXT_PX = 24
READABLE_PX = 22  # ~24 px nominal on a 1366-px projector, after rounding and anti-aliasing
PROJECTOR_MIN_SCALE = 0.92
CAP_RATIO = 0.7
_FONT = cv2.FONT_HERSHEY_SIMPLEX
_CAP_AT_SCALE_1 = 20.0  # ink height of "H" in HERSHEY_SIMPLEX at font scale 1 (measured, see tests)


def font_scale(px: float) -> float:
    """OpenCV font scale whose cap height is CAP_RATIO · px picture pixels."""
    return CAP_RATIO * float(px) / _CAP_AT_SCALE_1


def _thickness(px: float) -> int:
    return max(1, int(round(px / 14)))


def text_size(text: str, px: float = TEXT_PX) -> tuple[int, int]:
    """(width, cap height) in pixels of `text` drawn by put_text at font size px."""
    (w, _), _ = cv2.getTextSize(text, _FONT, font_scale(px), _thickness(px))
    return w, int(round(CAP_RATIO * px))


def put_text(img: np.ndarray, text: str, org: tuple[int, int], px: float = TEXT_PX,
             color: tuple[int, int, int] = (0, 0, 0), outline: tuple[int, int, int] | None = None) -> None:
    """Draw text in place, baseline-left at org, at font size px (≥ MIN_TEXT_PX). The one way
    text gets into a picture, so the size rule holds everywhere. outline: a halo colour that keeps
    text readable over a photo or a colour map."""
    if px < MIN_TEXT_PX:
        raise ValueError(f"text {text!r} at {px} px is below the {MIN_TEXT_PX} px a lecture hall can read")
    s, t = font_scale(px), _thickness(px)
    org = (int(org[0]), int(org[1]))
    if outline is not None:
        cv2.putText(img, text, org, _FONT, s, outline, t + 3, cv2.LINE_AA)
    cv2.putText(img, text, org, _FONT, s, color, t, cv2.LINE_AA)


def display_scale(g: Geometry, target: int = 600) -> int:
    """Integer enlargement so a model-input view shows at about `target` px."""
    return max(1, round(target / max(g.image_size)))


@cache
def lut(cmap: str) -> np.ndarray:
    """(256, 3) uint8 lookup table of a matplotlib colour map."""
    import matplotlib

    try:
        cm = matplotlib.colormaps[cmap]
    except KeyError as e:
        raise UserError(f"Unknown colour map {cmap!r}: use one of {', '.join(COLORMAPS)}.") from e
    return (cm(np.linspace(0.0, 1.0, 256))[:, :3] * 255).round().astype(np.uint8)


def color_index(values: np.ndarray, vmin: float | np.ndarray | None = None,
                vmax: float | np.ndarray | None = None) -> np.ndarray:
    """Floats -> the uint8 row of the colour table (lut) that colorize paints each one with:
    round(clip((v - lo) / (hi - lo), 0, 1) · 255), rounded half to even (0 where hi <= lo).
    vmin/vmax default to the values' own finite range; arrays give each map of a stack its own
    (broadcast against values, e.g. (Q, 1, 1) for (Q, gh, gw)). NaN gets the middle row (colorize
    paints it grey instead). The page gets these rows for the attention maps it draws
    (views.books: book_for_page, matrix_for_page), so its pixels are these, not a port."""
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    lo = float(np.min(v[finite])) if vmin is None and finite.any() else (0.0 if vmin is None else vmin)
    hi = float(np.max(v[finite])) if vmax is None and finite.any() else (1.0 if vmax is None else vmax)
    span = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # where hi <= lo: 0, as a flat map
        scaled = np.where(span > 0, (v - lo) / np.where(span > 0, span, 1.0), 0.0)
    return (np.clip(np.nan_to_num(scaled, nan=0.5), 0.0, 1.0) * 255).round().astype(np.uint8)


def colorize(values: np.ndarray, cmap: str = "inferno", vmin: float | None = None,
             vmax: float | None = None) -> np.ndarray:
    """(h, w) floats -> (h, w, 3) uint8. vmin/vmax default to the map's own range.
    NaN is drawn mid-grey."""
    out = lut(cmap)[color_index(values, vmin, vmax)]
    out[~np.isfinite(np.asarray(values, dtype=np.float64))] = 128
    return out


def enlarge(img: np.ndarray, scale: int) -> np.ndarray:
    """Nearest-neighbour enlargement by an integer factor, so pixels stay crisp."""
    if scale == 1:
        return img
    # Same pixels as np.repeat on both axes, ~6× faster (this runs on every slider move).
    return cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_NEAREST_EXACT)


def patch_step(g: Geometry, height: int) -> float:
    """Pixels per patch side in a picture `height` px tall of the model-input view (any enlargement):
    patch_size · height / the view's height. Not height / gh: where a side is not a multiple of the
    patch (SigLIP so400m: 384 = 27·14 + 6) the last side mod P pixels are read by no patch
    (patches.patch_box), so the grid stops short of the picture's edge."""
    return height * g.patch_size / g.image_size[0]


def grid_extent(grid: tuple[int, int], size: tuple[int, int], step: float) -> tuple[int, int]:
    """(rows, cols) of pixels a (gh, gw) grid of `step`-px patches covers in a picture of `size`
    (H, W): round(gh·step), round(gw·step), at most the picture; the rest is read by no patch."""
    return min(size[0], round(grid[0] * step)), min(size[1], round(grid[1] * step))


def upsample_map(values: np.ndarray, size: tuple[int, int], smooth: bool = False, *,
                 g: Geometry | None) -> np.ndarray:
    """(gh, gw) -> (H, W) float32, patch (r, c) on its own pixels: with the model's geometry `g`,
    rows ⌊y·gh/ch⌋ over the ch = round(gh·step) rows the grid covers (patch_step; columns likewise),
    so at an integer enlargement s exactly patches.patch_box's pixels × s. Pixels past the grid (the
    last side mod P, read by no patch) are NaN, which colorize paints grey. g None: a map that fills
    the picture (no photo under it); required, so no caller stretches a grid over a photo by
    forgetting it. Nearest keeps one flat tile per patch (honest), or bilinear."""
    v = np.asarray(values, dtype=np.float32)
    rows, cols = patch_rows_cols(v.shape, size, g)
    out = np.full(size, np.nan, np.float32)
    if smooth:
        out[:len(rows), :len(cols)] = cv2.resize(v, (len(cols), len(rows)), interpolation=cv2.INTER_LINEAR)
    else:
        out[:len(rows), :len(cols)] = v[rows[:, None], cols[None, :]]
    return out


def patch_rows_cols(grid: tuple[int, int], size: tuple[int, int],
                    g: Geometry | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The patch row of each pixel row the grid covers, (ch,) int, and the patch column of each
    pixel column, (cw,) int, in a picture of `size` (H, W) of the model-input view (g: the model's
    geometry; None: the grid fills the picture): ⌊y·gh/ch⌋ in integers, exact, as the page's
    scripts compute it (Math.floor(y * gh / ch)). Pixel rows ≥ ch and columns ≥ cw: no patch."""
    gh, gw = grid
    ch, cw = grid_extent(grid, size, size[0] / gh if g is None else patch_step(g, size[0]))
    return np.arange(ch) * gh // ch, np.arange(cw) * gw // cw


def tile_picture(tiles: np.ndarray, size: tuple[int, int], g: Geometry, fill: int = 128) -> np.ndarray:
    """(gh, gw, 3) uint8 patch colours -> (H, W, 3) uint8 over the model-input view's pixels: each
    patch's colour on its own pixels (upsample_map's layout), the strip no patch reads `fill` (the
    grey colorize gives a NaN, so blending this equals overlay's picture)."""
    rows, cols = patch_rows_cols(tiles.shape[:2], size, g)
    out = np.full((*size, tiles.shape[2]), fill, np.uint8)
    out[:len(rows), :len(cols)] = tiles[rows[:, None], cols[None, :]]
    return out


def overlay(view: np.ndarray, values: np.ndarray, alpha: float = 0.6, cmap: str = "inferno",
            vmin: float | None = None, vmax: float | None = None, smooth: bool = False, *,
            g: Geometry | None) -> np.ndarray:
    """Blend a (gh, gw) map over the (H, W, 3) view it was computed on -> (H, W, 3) uint8, each
    patch on its pixels (upsample_map with the model's geometry `g`); the strip no patch reads is
    blended grey, as a NaN value is."""
    heat = colorize(upsample_map(values, view.shape[:2], smooth, g=g), cmap, vmin, vmax)
    return cv2.addWeighted(heat, float(alpha), view, 1.0 - float(alpha), 0.0)


GRID_ON_LIGHT = (70, 70, 70)  # the default grid line over light pixels
LIGHT = 170  # luminance (0-255) from which a white line would not show
LUMA = (299, 587, 114)  # BT.601 luma weights x 1000: integers, so the page's script sums exactly the same


def _line_colors(under: np.ndarray, color: tuple[int, int, int], starts: list[int]) -> np.ndarray:
    """(n, 3) pixels a grid line covers -> (n, 3) its colours: the default white line turns dark grey over
    light pixels, where it did not show (a white background, snow, a page: no grid on the Patches tab).
    Decided for each patch's side at once (starts: where each begins, the first 0), by its mean luminance:
    pixel by pixel, a light pixel in a mid-tone patch put a dark speck in a white line (a reviewer, the
    cat's fur on the trained ViT-Ti)."""
    out = np.empty_like(under)
    out[:] = color
    if color == GRID_COLOR and len(under):
        lum = under.astype(np.int64) @ np.array(LUMA, np.int64)
        counts = np.diff([*starts, len(under)])
        light = np.add.reduceat(lum, starts) >= LIGHT * 1000 * counts
        out[np.repeat(light, counts)] = GRID_ON_LIGHT
    return out


def grid_lines_style() -> dict[str, object]:
    """The grid lines' colours and rule, for a page that draws draw_grid's lines itself (map_draw.js
    gridLines): the line colour, the colour over light pixels, and the luminance from which a pixel is light."""
    return {"color": list(GRID_COLOR), "on_light": list(GRID_ON_LIGHT), "light": LIGHT, "luma": list(LUMA)}


def draw_grid(img: np.ndarray, g: Geometry, lines: bool = True, indices: bool = False,
              highlight: tuple[int, int] | None = None, marked: tuple[int, ...] = (),
              color: tuple[int, int, int] = GRID_COLOR) -> np.ndarray:
    """Patch grid on an image that is the model-input view enlarged by any integer factor.

    marked: row-major patch indices to hatch (e.g. masked patches); highlight: (row, col)
    outlined in yellow; indices: each patch's 0-based row-major number (every other patch's, in a
    checkerboard, where the widest does not fit a cell). Lines sit on the patch borders (patch_step);
    where the grid stops short of the edge (a side not a multiple of P) a line closes it, so the
    strip beyond shows as outside every patch.
    """
    out = np.ascontiguousarray(img.copy())
    gh, gw = g.grid
    step = patch_step(g, out.shape[0])
    for i in marked:
        r, c = divmod(int(i), gw)
        y0, x0 = int(round(r * step)), int(round(c * step))
        y1, x1 = int(round((r + 1) * step)), int(round((c + 1) * step))
        tile = out[y0:y1, x0:x1]
        tile[:] = (tile * 0.35).astype(np.uint8)
        cv2.line(out, (x0, y0), (x1 - 1, y1 - 1), (255, 80, 80), 1, cv2.LINE_AA)
        cv2.line(out, (x0, y1 - 1), (x1 - 1, y0), (255, 80, 80), 1, cv2.LINE_AA)
    if lines:
        ch, cw = grid_extent(g.grid, out.shape[:2], step)
        under = out.copy()  # the colours follow the picture, not the lines already drawn (crossings)
        # each patch's side along a line: from round(k·step), as the lines across it
        across = [s for s in (int(round(k * step)) for k in range(gw)) if s < cw]
        down = [s for s in (int(round(k * step)) for k in range(gh)) if s < ch]
        for k in range(1, gh + 1):  # k = gh: the grid's closing line, where it ends before the edge
            y = int(round(k * step))
            if y < out.shape[0]:
                out[y, :cw] = _line_colors(under[y, :cw], color, across)
        for k in range(1, gw + 1):
            x = int(round(k * step))
            if x < out.shape[1]:
                out[:ch, x] = _line_colors(under[:ch, x], color, down)
    if indices:
        widest = str(gh * gw - 1)
        px = max(MIN_TEXT_PX, min(TEXT_PX, TEXT_PX * (step - 4) / max(1, text_size(widest)[0])))
        wide, cap = text_size(widest, px)
        # Where the widest number does not fit a cell at the least readable size ("195" is 49 px at 24 px,
        # a 3× cell 48), every other patch is numbered, in a checkerboard, each centred in its cell: its
        # neighbours left and right are empty, so no two numbers run together ("100101102…": a
        # walk-through); the numbers between are the ones either side ± 1.
        sparse = wide > step - 4
        for r in range(gh):
            for c in range(gw):
                if sparse and (r + c) % 2:
                    continue
                text = str(r * gw + c)
                org = (int(c * step + (step - text_size(text, px)[0]) / 2), int(r * step + (step + cap) / 2))
                put_text(out, text, org, px, (255, 255, 255), outline=(0, 0, 0))
    if highlight is not None:
        r, c = highlight
        p0 = (int(round(c * step)), int(round(r * step)))
        p1 = (int(round((c + 1) * step)) - 1, int(round((r + 1) * step)) - 1)
        outline(out, p0, p1, HIGHLIGHT_COLOR, max(1, int(step // 12)))
    return out


def outline(img: np.ndarray, p0: tuple[int, int], p1: tuple[int, int], color: tuple[int, int, int],
            thickness: int) -> None:
    """A rectangle outline in place, corners p0 and p1 (x, y) inclusive, as cv2.rectangle draws
    it but with square corners: each edge is `thickness` px wide, centred on the edge (t//2
    outward for t = 1, (t+1)//2 outward beyond). Plain slicing, so the page's script draws the
    very same pixels (page/web/attention_map.js)."""
    h = 0 if thickness <= 1 else (thickness + 1) // 2
    (x0, y0), (x1, y1) = p0, p1
    top, bottom = max(0, y0 - h), min(img.shape[0], y1 + h + 1)
    left, right = max(0, x0 - h), min(img.shape[1], x1 + h + 1)
    img[top:min(bottom, y0 + h + 1), left:right] = color
    img[max(top, y1 - h):bottom, left:right] = color
    img[top:bottom, left:min(right, x0 + h + 1)] = color
    img[top:bottom, max(left, x1 - h):right] = color


def outline_patches(img: np.ndarray, g: Geometry, cells: np.ndarray, color: tuple[int, int, int],
                    thickness: int) -> np.ndarray:
    """A copy of an enlarged model-input picture with the patches where `cells` (gh, gw bool) is
    True outlined (as draw_grid outlines its highlight)."""
    out = np.ascontiguousarray(img.copy())
    step = patch_step(g, out.shape[0])
    for r, c in np.argwhere(cells):
        outline(out, (int(round(c * step)), int(round(r * step))),
                (int(round((c + 1) * step)) - 1, int(round((r + 1) * step)) - 1), color, thickness)
    return out


def paint_patches(img: np.ndarray, cells: np.ndarray, color: tuple[int, int, int],
                  g: Geometry | None) -> np.ndarray:
    """A copy of an (h, w, 3) picture of a (gh, gw) grid with the pixels of the patches where
    `cells` is True set to `color` (nearest-neighbour, as upsample_map lays patches out with `g`)."""
    out = img.copy()
    out[upsample_map(cells.astype(np.float32), img.shape[:2], g=g) > 0.5] = color
    return out


def caption_below(img: np.ndarray, text: str, px: float = TEXT_PX) -> np.ndarray:
    """img with a white band below it holding `text`, black (a label that covers nothing)."""
    tw, cap = text_size(text, px)
    pad = max(3, cap // 4)
    band = np.full((cap + 2 * pad, img.shape[1], 3), 255, np.uint8)
    put_text(band, text, (max(0, (img.shape[1] - tw) // 2), cap + pad), px, (0, 0, 0))
    return np.concatenate([img, band], axis=0)


def label(img: np.ndarray, text: str, px: float = TEXT_PX) -> np.ndarray:
    """Write a short label in the top-left corner, white on a dark box."""
    out = np.ascontiguousarray(img.copy())
    tw, cap = text_size(text, px)
    pad = max(3, cap // 4)
    cv2.rectangle(out, (0, 0), (tw + 2 * pad, cap + 2 * pad), (0, 0, 0), -1)
    put_text(out, text, (pad, cap + pad), px, (255, 255, 255))
    return out


def mosaic(tiles: np.ndarray, rows: int, cols: int, sep: int = 1,
           sep_color: tuple[int, int, int] = (255, 255, 255)) -> np.ndarray:
    """(rows·cols, h, w, 3) uint8 tiles -> one image, row-major, `sep` px separators.

    Tile k sits at row k // cols, column k % cols; its top-left pixel is at
    (row·(h+sep), col·(w+sep)).
    """
    n, h, w, _ = tiles.shape
    if n > rows * cols:
        raise UserError(f"{n} tiles do not fit a {rows}×{cols} mosaic.")
    out = np.empty((rows * (h + sep) - sep, cols * (w + sep) - sep, 3), np.uint8)
    out[:] = sep_color
    for k in range(n):
        r, c = divmod(k, cols)
        out[r * (h + sep):r * (h + sep) + h, c * (w + sep):c * (w + sep) + w] = tiles[k]
    return out


STRIP_TILE = 40
STRIP_SEP = 2


def strip_layout(n_tokens: int, prefix: int, per_row: int) -> list[list[int]]:
    """Positions in the kept sequence, row by row: the prefix tokens on the first row, then
    `per_row` tokens a row (the grid's width, so row r+1 of the strip is row r of the photo)."""
    rows = [list(range(prefix))] if prefix else []
    rest = list(range(prefix, n_tokens))
    return rows + [rest[i:i + per_row] for i in range(0, len(rest), per_row)]


def sequence_strip(view: np.ndarray, g: Geometry, per_row: int | None = None, tile: int = STRIP_TILE,
                   kept: np.ndarray | None = None, highlight: tuple[int, int] | None = None) -> np.ndarray:
    """The token sequence the grid becomes: [CLS], then patches row-major.

    Row 0 holds the prefix tokens, named from the geometry's token layout ([CLS], [DIST]: red
    tiles; registers [REG1..]: grey); then `per_row` tokens a row (default: the grid's width, so
    the strip's rows are the photo's rows, read one after another). The left margin gives each
    row's first token index and, for the prefix row, its tokens' names (patch k is token
    num_prefix_tokens + k), large enough to read from the back of a hall. highlight: (row, col)
    of a clicked patch, outlined in yellow. kept: sequence positions that survived a token drop;
    others are left out, as the model never sees them.
    """
    gh, gw = g.grid
    p = g.patch_size
    pre = g.num_prefix_tokens
    per_row = per_row or gw
    patches = view[: gh * p, : gw * p].reshape(gh, p, gw, p, 3).transpose(0, 2, 1, 3, 4).reshape(-1, p, p, 3)
    cls = np.empty((p, p, 3), np.uint8)
    cls[:] = CLS_COLOR
    seq = [cls] * pre + list(patches)
    positions = list(range(len(seq))) if kept is None else [int(t) for t in kept]
    n_pre = sum(1 for t in positions if t < pre)
    rows = strip_layout(len(positions), n_pre, per_row)
    labels = [(f"{positions[r[0]]} " + " ".join(g.prefix_names[positions[k]] for k in r if positions[k] < pre)
               if positions[r[0]] < pre else str(positions[r[0]])) for r in rows]
    margin = max(text_size(t)[0] for t in labels) + 16
    step = tile + STRIP_SEP
    cols = max(len(r) for r in rows)
    out = np.full((len(rows) * step - STRIP_SEP, margin + cols * step - STRIP_SEP, 3), 255, np.uint8)
    cap = text_size("0")[1]
    target = None if highlight is None else pre + highlight[0] * gw + highlight[1]
    for i, (row, text) in enumerate(zip(rows, labels)):
        y = i * step
        put_text(out, text, (6, y + (tile + cap) // 2))
        for j, k in enumerate(row):
            x = margin + j * step
            out[y:y + tile, x:x + tile] = cv2.resize(seq[positions[k]], (tile, tile),
                                                     interpolation=cv2.INTER_NEAREST)
            if positions[k] < pre and g.prefix_names[positions[k]].startswith("[REG"):
                out[y:y + tile, x:x + tile] = REGISTER_COLOR  # registers: grey, not [CLS]'s red
            if positions[k] == target:
                cv2.rectangle(out, (x, y), (x + tile - 1, y + tile - 1), HIGHLIGHT_COLOR, 3)
    return out


REGISTER_COLOR = (110, 110, 110)
MARK_COLOR = (0, 170, 255)  # a level marked on a colour bar (the uniform 1/N): blue, off every map's ends


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def colorbar_labels(height: int, vmin: float, vmax: float, ticks: tuple[float, ...] | None = None,
                    marks: dict[str, float] | None = None,
                    tick_names: tuple[str, ...] | None = None) -> list[tuple[int | None, int, str, bool]]:
    """Where a colour bar of `height` px puts its labels: (row, text baseline, text, is a mark).

    ticks: None = up to five, evenly spaced from vmin to vmax (−1, −0.5, 0, 0.5, 1 for ±1; fewer
    on a short bar, so labels never overlap), three significant digits. marks: {name: value}
    levels, labelled "name", with a line at their row. A level outside the range has no row on the
    bar (row None: no line): its label "name above" / "below" sits one line inside the end tick's
    label, which stays, so the bar still says where it ends (a grey photo's 1/N, 9x over the map's
    top, took the top tick's place and hid the range). Ticks that would collide with a mark's label
    are left out. tick_names: words written instead of the ticks' numbers (e.g. "0", "tile max")."""
    cap = text_size("0")[1]
    line = int(cap * LINE_SPACING)  # one label's height, with room
    if ticks is None:
        n = int(np.clip(height // (2 * line), *TICK_COUNT))
        ticks = tuple(np.linspace(vmin, vmax, n)) if vmax > vmin else (vmin,)
    span = vmax - vmin if vmax > vmin else 1.0

    def row(v: float) -> int:
        return int(round((vmax - min(max(v, vmin), vmax)) / span * (height - 1)))

    def baseline(y: int) -> int:  # a label's text beside its row, inside the bar's height
        return min(max(y + cap // 2, cap + LABEL_TOP), height - LABEL_BOTTOM)

    out: list[tuple[int | None, int, str, bool]] = []
    taken: list[int] = []  # the rows the marks' labels are centred on
    for name, v in (marks or {}).items():
        if vmin <= v <= vmax:
            out.append((row(v), baseline(row(v)), name, True))
            taken.append(row(v))
        else:
            above = v > vmax
            b = baseline(0) + line if above else baseline(height - 1) - line
            out.append((None, min(max(b, cap + LABEL_TOP), height - LABEL_BOTTOM), name + (ABOVE if above else BELOW),
                        True))
            taken.append(b - cap // 2)
    for i, t in enumerate(ticks):
        y = row(t)
        if all(abs(y - my) >= line for my in taken):
            out.append((y, baseline(y), tick_names[i] if tick_names else _fmt(t), False))
    return out


BAR_WIDTH = 18  # the colour bar itself; its labels start BAR_WIDTH + LABEL_OFFSET px from its left edge
BAR_GAP = 8  # white columns between a picture and its colour bar
BAR_PAD = 12  # columns a bar adds besides its labels' text
TICK_LEN = 5  # a tick's length, right of the bar
MARK_OVERHANG = 6  # a mark's line reaches this far past the bar
LABEL_OFFSET = 8  # a label starts this far right of the bar
LINE_SPACING = 1.6  # a label's line height, in cap heights
TICK_COUNT = (2, 5)  # the fewest and most ticks a bar gets
ABOVE, BELOW = " above", " below"  # after a mark's name, when its level is outside the range
LABEL_TOP, LABEL_BOTTOM = 2, 3  # a label's baseline keeps this far from the bar's top and bottom
MARK_TEXT_COLOR = (0, 90, 200)


def colorbar(height: int, cmap: str = "RdBu_r", vmin: float = -1.0, vmax: float = 1.0,
             width: int = BAR_WIDTH, ticks: tuple[float, ...] | None = None,
             marks: dict[str, float] | None = None, text_width: int = 0,
             tick_names: tuple[str, ...] | None = None) -> np.ndarray:
    """A vertical colour bar (vmax on top) with tick labels on its right -> (height, width+labels, 3).

    Labels as colorbar_labels places them, TEXT_PX (see put_text); a mark in the range is drawn as a
    blue line across the bar with a white gap (one outside it: its label only). text_width: room
    for labels at least this wide (a bar whose width must not change with its numbers, e.g. while a
    slider moves)."""
    placed = colorbar_labels(height, vmin, vmax, ticks, marks, tick_names)
    text_w = max([text_width] + [text_size(t)[0] for _, _, t, _ in placed])
    values = np.linspace(vmax, vmin, height)[:, None].repeat(width, axis=1)
    out = np.full((height, width + BAR_PAD + text_w, 3), 255, np.uint8)
    out[:, :width] = colorize(values, cmap, vmin, vmax)
    for y, ty, text, is_mark in placed:
        if is_mark and y is not None:
            y0, y1 = max(0, y - 1), min(height, y + 2)
            out[y0:y1, :width + MARK_OVERHANG] = MARK_COLOR
            out[y0:y1, width // 3:2 * width // 3] = 255  # a white gap: visible on any colour map
        elif not is_mark:
            out[y, width:width + TICK_LEN] = 0
        put_text(out, text, (width + LABEL_OFFSET, ty), color=MARK_TEXT_COLOR if is_mark else (0, 0, 0))
    return out


def with_colorbar(img: np.ndarray, cmap: str = "RdBu_r", vmin: float = -1.0, vmax: float = 1.0,
                  gap: int = BAR_GAP, marks: dict[str, float] | None = None, text_width: int = 0,
                  ticks: tuple[float, ...] | None = None, tick_names: tuple[str, ...] | None = None) -> np.ndarray:
    """img with a colour bar of its height on the right; img keeps its pixel coordinates."""
    bar = colorbar(img.shape[0], cmap, vmin, vmax, marks=marks, text_width=text_width, ticks=ticks,
                   tick_names=tick_names)
    pad = np.full((img.shape[0], gap, 3), 255, np.uint8)
    return np.concatenate([img, pad, bar], axis=1)


def colorbar_style() -> dict[str, object]:
    """Every number and word colorbar() and colorbar_labels() draw with, for the page's script,
    which draws the same bar (page/web/attention_map.js): nothing there is a literal."""
    return {"gap": BAR_GAP, "bar": BAR_WIDTH, "pad": BAR_PAD, "tick": TICK_LEN, "overhang": MARK_OVERHANG,
            "label_offset": LABEL_OFFSET, "line_spacing": LINE_SPACING, "ticks": list(TICK_COUNT),
            "above": ABOVE, "below": BELOW, "label_top": LABEL_TOP, "label_bottom": LABEL_BOTTOM,
            "text_px": TEXT_PX, "cap": text_size("0")[1]}
