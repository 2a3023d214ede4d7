"""Pictures as uint8 RGB arrays: colour maps, heatmap overlays, grid lines, mosaics.

numpy/OpenCV only, so a 14×14 grid of 14×14 maps is one image built in
milliseconds, not a figure with 196 subplots.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

from .errors import UserError
from .models import Geometry
from .vocab import COLORMAPS

GRID_COLOR = (255, 255, 255)
CLS_COLOR = (214, 39, 40)  # [CLS] is drawn in red everywhere


def display_scale(g: Geometry, target: int = 600) -> int:
    """Integer enlargement so a model-input view shows at about `target` px."""
    return max(1, round(target / max(g.image_size)))


@lru_cache(maxsize=None)
def _lut(cmap: str) -> np.ndarray:
    """(256, 3) uint8 lookup table of a matplotlib colour map."""
    import matplotlib

    try:
        cm = matplotlib.colormaps[cmap]
    except KeyError as e:
        raise UserError(f"Unknown colour map {cmap!r}: use one of {', '.join(COLORMAPS)}.") from e
    return (cm(np.linspace(0.0, 1.0, 256))[:, :3] * 255).round().astype(np.uint8)


def colorize(values: np.ndarray, cmap: str = "inferno", vmin: float | None = None,
             vmax: float | None = None) -> np.ndarray:
    """(h, w) floats -> (h, w, 3) uint8. vmin/vmax default to the map's own range.
    NaN is drawn mid-grey."""
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    lo = float(np.min(v[finite])) if vmin is None and finite.any() else (vmin or 0.0)
    hi = float(np.max(v[finite])) if vmax is None and finite.any() else (vmax if vmax is not None else 1.0)
    scaled = (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
    idx = (np.clip(np.nan_to_num(scaled, nan=0.5), 0.0, 1.0) * 255).round().astype(np.uint8)
    out = _lut(cmap)[idx]
    out[~finite] = 128
    return out


def enlarge(img: np.ndarray, scale: int) -> np.ndarray:
    """Nearest-neighbour enlargement by an integer factor, so pixels stay crisp."""
    if scale == 1:
        return img
    # Same pixels as np.repeat on both axes, ~6× faster (this runs on every slider move).
    return cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_NEAREST_EXACT)


def upsample_map(values: np.ndarray, size: tuple[int, int], smooth: bool = False) -> np.ndarray:
    """(gh, gw) -> (H, W) floats; nearest keeps one flat tile per patch (honest), or bilinear."""
    h, w = size
    interp = cv2.INTER_LINEAR if smooth else cv2.INTER_NEAREST
    return cv2.resize(np.asarray(values, dtype=np.float32), (w, h), interpolation=interp)


def overlay(view: np.ndarray, values: np.ndarray, alpha: float = 0.6, cmap: str = "inferno",
            vmin: float | None = None, vmax: float | None = None, smooth: bool = False) -> np.ndarray:
    """Blend a (gh, gw) map over the (H, W, 3) view it was computed on -> (H, W, 3) uint8."""
    heat = colorize(upsample_map(values, view.shape[:2], smooth), cmap, vmin, vmax)
    return cv2.addWeighted(heat, float(alpha), view, 1.0 - float(alpha), 0.0)


def draw_grid(img: np.ndarray, g: Geometry, lines: bool = True, indices: bool = False,
              highlight: tuple[int, int] | None = None, marked: tuple[int, ...] = (),
              color: tuple[int, int, int] = GRID_COLOR) -> np.ndarray:
    """Patch grid on an image that is the model-input view enlarged by any integer factor.

    marked: row-major patch indices to hatch (e.g. masked patches); highlight: (row, col)
    outlined in yellow; indices: each patch's 0-based row-major number.
    """
    out = np.ascontiguousarray(img.copy())
    gh, gw = g.grid
    step = out.shape[0] / gh
    for i in marked:
        r, c = divmod(int(i), gw)
        y0, x0 = int(round(r * step)), int(round(c * step))
        y1, x1 = int(round((r + 1) * step)), int(round((c + 1) * step))
        tile = out[y0:y1, x0:x1]
        tile[:] = (tile * 0.35).astype(np.uint8)
        cv2.line(out, (x0, y0), (x1 - 1, y1 - 1), (255, 80, 80), 1, cv2.LINE_AA)
        cv2.line(out, (x0, y1 - 1), (x1 - 1, y0), (255, 80, 80), 1, cv2.LINE_AA)
    if lines:
        for k in range(1, gh):
            y = int(round(k * step))
            out[y, :] = color
        for k in range(1, gw):
            x = int(round(k * step))
            out[:, x] = color
    if indices:
        font_scale = max(0.25, step / 110)
        for r in range(gh):
            for c in range(gw):
                org = (int(c * step + 2), int(r * step + step * 0.45))
                cv2.putText(out, str(r * gw + c), org, cv2.FONT_HERSHEY_SIMPLEX, font_scale,
                            (0, 0, 0), 2, cv2.LINE_AA)
                cv2.putText(out, str(r * gw + c), org, cv2.FONT_HERSHEY_SIMPLEX, font_scale,
                            (255, 255, 255), 1, cv2.LINE_AA)
    if highlight is not None:
        r, c = highlight
        p0 = (int(round(c * step)), int(round(r * step)))
        p1 = (int(round((c + 1) * step)) - 1, int(round((r + 1) * step)) - 1)
        cv2.rectangle(out, p0, p1, (255, 230, 0), max(1, int(step // 12)))
    return out


def label(img: np.ndarray, text: str, scale: float = 0.4) -> np.ndarray:
    """Write a short label in the top-left corner, white on a dark box."""
    out = np.ascontiguousarray(img.copy())
    (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    cv2.rectangle(out, (0, 0), (tw + 4, th + base + 3), (0, 0, 0), -1)
    cv2.putText(out, text, (2, th + 2), cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255), 1, cv2.LINE_AA)
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


def sequence_strip(view: np.ndarray, g: Geometry, per_row: int = 25, tile: int = 28,
                   kept: np.ndarray | None = None) -> np.ndarray:
    """The token sequence the grid becomes: [CLS], then patches row-major.

    Each tile is one token's pixels with its sequence index underneath; prefix tokens
    are coloured tiles named from the geometry's token layout (CLS, DIST, REG1...). Wrapped every `per_row` tokens (deliberately not a
    multiple of the grid width, so it reads as a sequence, not as the photo again).
    kept: sequence positions that survived a token drop; others are left out, as the
    model never sees them.
    """
    gh, gw = g.grid
    p = g.patch_size
    patches = view[: gh * p, : gw * p].reshape(gh, p, gw, p, 3).transpose(0, 2, 1, 3, 4).reshape(-1, p, p, 3)
    cls = np.empty((p, p, 3), np.uint8)
    cls[:] = CLS_COLOR
    seq = [cls] * g.num_prefix_tokens + list(patches)
    positions = range(len(seq)) if kept is None else [int(t) for t in kept]
    tiles = []
    for t in positions:
        cell = np.full((tile + 12, tile, 3), 255, np.uint8)
        cell[:tile] = cv2.resize(seq[t], (tile, tile), interpolation=cv2.INTER_NEAREST)
        if t < g.num_prefix_tokens:
            name = g.prefix_names[t].strip("[]")
            if name.startswith("REG"):  # registers: grey, not [CLS]'s red
                cell[:tile] = (110, 110, 110)
            cv2.putText(cell, name, (1, tile // 2 + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.33 if len(name) <= 3 else 0.27,
                        (255, 255, 255), 1, cv2.LINE_AA)
        cv2.putText(cell, str(t), (1, tile + 10), cv2.FONT_HERSHEY_SIMPLEX, 0.3, (0, 0, 0), 1, cv2.LINE_AA)
        tiles.append(cell)
    rows = -(-len(tiles) // per_row)
    return mosaic(np.stack(tiles), rows, per_row, sep=2)


def colorbar(height: int, cmap: str = "RdBu_r", vmin: float = -1.0, vmax: float = 1.0,
             width: int = 14, ticks: tuple[float, ...] | None = None) -> np.ndarray:
    """A vertical colour bar (vmax on top) with tick labels on its right -> (height, width+labels, 3).

    ticks: None = five, evenly spaced from vmin to vmax (−1, −0.5, 0, 0.5, 1 for ±1), each
    labelled with three significant digits, so small attention weights stay readable."""
    if ticks is None:
        ticks = tuple(np.linspace(vmin, vmax, 5)) if vmax > vmin else (vmin,)
    labels = [f"{t:.3g}" for t in ticks]
    # Tall bars are shown shrunk to the page width: larger text keeps the labels readable.
    font, size = cv2.FONT_HERSHEY_SIMPLEX, float(np.clip(height / 1100, 0.42, 0.6))
    text_w, text_h = (max(d) for d in zip(*(cv2.getTextSize(t, font, size, 1)[0] for t in labels)))
    values = np.linspace(vmax, vmin, height)[:, None].repeat(width, axis=1)
    out = np.full((height, width + 10 + text_w, 3), 255, np.uint8)
    out[:, :width] = colorize(values, cmap, vmin, vmax)
    span = vmax - vmin if vmax > vmin else 1.0
    for t, text in zip(ticks, labels):
        y = int(round((vmax - t) / span * (height - 1)))
        out[y, width:width + 4] = 0
        ty = min(max(y + 4, text_h + 2), height - 2)
        cv2.putText(out, text, (width + 6, ty), font, size, (0, 0, 0), 1, cv2.LINE_AA)
    return out


def with_colorbar(img: np.ndarray, cmap: str = "RdBu_r", vmin: float = -1.0, vmax: float = 1.0,
                  gap: int = 8) -> np.ndarray:
    """img with a colour bar of its height on the right; img keeps its pixel coordinates."""
    bar = colorbar(img.shape[0], cmap, vmin, vmax)
    pad = np.full((img.shape[0], gap, 3), 255, np.uint8)
    return np.concatenate([img, pad, bar], axis=1)
