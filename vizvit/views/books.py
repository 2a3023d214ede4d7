"""The data the page draws the Attention tab's main map from, with no round trip: the map book
(every layer × head and fusion of the main map, as colour-table rows) and the query book (the shown
map for every patch as the clicked query), each as ONE JSON string that page/web/map_draw.js
and attention_map.js read.

Here, not in page/: the tab's answers (views.attention.show, change) carry a book, and vizvit
never imports page/. Its maps come from vizvit.readings.attention, its pixels' rules from
vizvit.views.layout (map_image), so the page paints the server's very pixels.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass

import cv2
import numpy as np
import torch

from vizvit.errors import UserError
from vizvit.methods import maths as att_mod
from vizvit.methods.maps import Cache, no_cache
from vizvit.model.engine import Analysis
from vizvit.model.models import Geometry, VitModel
from vizvit.pictures import render
from vizvit.readings.attention import (
    AttnParams,
    artifact_stack,
    excluded,
    fixed_scale_max,
    fixed_scale_tops,
    fused_maps,
    grid_maps,
    main_matrix,
    map_range,
    range_floor,
    uniform_level,
)
from vizvit.session import Photo
from vizvit.views.layout import DIM, UNIFORM_MARK, artifact_outline, bar_text_width
from vizvit.vocab import ATTN_SCALES, DIRECTIONS, FUSIONS, ONE_HEAD, AttnScale

# ------------------------------------------------------------------ the main map, drawn in the page
BOOK_MAX_BYTES = 1_500_000  # larger models (e.g. 24 layers on a 37×37 grid) are drawn by the server


@dataclass(frozen=True)
class MapBook:
    """The main map of every layer × (each head, then each fusion), under the controls other
    than layer, head and show (query, direction, mode, discard, scale, τ, colours). With it the
    page draws a layer, head or fusion change itself, with no round trip (issue 16;
    page/web/attention_map.js). Map (l, k) is main_panel's map for layer l + 1 and head k + 1
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
        return lo_hi, [[render.colorbar_labels(height, lo_hi[l, k, 0], lo_hi[l, k, 1], marks=marks) for k in range(n_k)]
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
    ViT-B/16's colour-bar layouts), arrays as base64 little-endian bytes. Everything map_image draws
    is here: the view, the colour table, the outline's place and width, the colour bar's layout, so
    the script draws the server's very pixels (the bar's text aside: the browser's font)."""
    p = book.params
    png = cv2.imencode(".png", cv2.cvtColor(view, cv2.COLOR_RGB2BGR))[1]
    return json.dumps({
        **page_drawing(g, p, render.display_scale(g)),
        "for": [p.layer, p.head, p.show], "look": look(p), "photo": photo, "layers": g.num_layers,
        # "Query: back to the summary token" goes back to its row (page/tabs/attention.py to_cls_view): the
        # page draws the summary's row book of this look at once, and only a row book is kept for it.
        "direction": p.direction, "row_look": look(dataclasses.replace(p, direction="row")),
        "heads": g.num_heads, "fusions": list(FUSIONS),
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
    step = scale * g.patch_size  # a patch's side in the picture (not the side over gh: see render.patch_step)
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


def query_book(a: Analysis, p: AttnParams, cache: Cache = no_cache) -> QueryBook:
    """The QueryBook of p's shown map: main_panel's map, colour range and τ mask for each patch as the
    query (on the fixed scale, each query's own top over every layer and head: fixed_scale_tops)."""
    g = a.geometry
    if p.direction not in DIRECTIONS:
        raise UserError(f"Unknown direction {p.direction!r}: use row or column.")
    pre = g.num_prefix_tokens
    patches = main_matrix(a, p, cache)[pre:, pre:]  # (P, P): query patches × key patches
    # Patch i's row (what it attends to) or column (what attends to it): attention.query_map's values.
    values = (patches if p.direction == "row" else patches.T).numpy().astype(np.float32).reshape(-1, *g.grid)
    if p.scale == "fixed across layers and heads":  # map_range's 0 .. the top, never below the floor
        lo_hi = np.stack([np.zeros(len(values)), np.maximum(fixed_scale_tops(a, p, cache), range_floor(g))], 1)
    else:
        lo_hi = query_ranges(values, p.scale, excluded(artifact_stack(a, p, cache)[p.layer - 1], p), range_floor(g))
    index = render.color_index(values, lo_hi[:, :1, None], lo_hi[:, 1:, None])
    keep = (att_mod.mass_thresholds(torch.from_numpy(values.reshape(len(values), -1)), p.tau).numpy()
            .reshape(values.shape) if p.tau > 0 else None)
    return QueryBook(index, lo_hi, keep)


def matrix_for_page(a: Analysis, p: AttnParams, cache: Cache = no_cache, photo: str = "") -> str:
    """The QueryBook behind the shown map as ONE JSON string, arrays as base64 little-endian bytes (the
    τ masks one bit a patch). Once this was the (N, N) float32 matrix,
    from which the page computed each query's map, range and τ mask: ViT-B/16's was 207 kB with every
    picture, these rows ~57 kB, and the page paints the server's own rows. photo: names the photo and
    model (the session key; the book carries it too), so the page never mixes two photos'."""
    qb = query_book(a, p, cache)
    enc = lambda x: base64.b64encode(x.tobytes()).decode()  # noqa: E731
    return json.dumps({"for": "|".join(map(str, (p.layer, p.head, p.show))), "look": look(p), "photo": photo,
                       "index": enc(qb.index), "lo_hi": enc(qb.lo_hi.astype("<f8")),
                       "keep": None if qb.keep is None else enc(np.packbits(qb.keep.reshape(-1)))},
                      separators=(",", ":"))


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
