"""Panel functions of the Positions tab: the position readings (vizvit.readings.positions) as
pictures, plotly heatmaps and text. No gradio; page/tabs/positions.py only wires these.

Position embeddings do not depend on the photo, so the pictures drawn of them are cached per model
(Photo.per_model), under this module's names, beside the readings they draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np
import plotly.graph_objects as go

from vizvit.classroom.claims import nth
from vizvit.errors import UserError
from vizvit.model import positional
from vizvit.model.models import VitModel
from vizvit.pictures import figures, render
from vizvit.readings import positions as rp
from vizvit.session import Photo
from vizvit.views import flip

if TYPE_CHECKING:
    import pandas as pd

# The names this module's pictures are cached under (per_model), beside the readings they draw.
DRAWN = "positions-drawn"  # the Positions tab's pictures of the position report
BIAS_DRAWN = "relative-bias-drawn"  # a relative-bias family's pictures


def drawn_at_name(size: int) -> tuple:
    """The interpolated table's similarity grid for a size×size input, drawn."""
    return ("positions-at-drawn", size)


CMAP = "RdBu_r"  # diverging: red = similar, white = orthogonal, blue = opposite
PLOTLY_CMAP = "RdBu_r"
SEP = 2  # px between tiles: 1 px vanished between 70-px tiles, and the tiles ran into one pattern
SEP_COLOR = (70, 70, 70)  # dark: white would read as similarity 0 in RdBu


# A trained ViT-Ti's position similarities alternate from one position to the next (stripes of
# period ~2 along rows and columns): at 3 px per position they alias into a moiré, so each position
# gets at least MIN_CELL px, and the grid is drawn nearest-neighbour (the page shows it as PNG,
# pixelated; a JPEG or a smoothing resize would blur one tile's cells into the next).
# GRID_TARGET: px the whole grid of tiles aims at; projector mode shows it at scale >= 0.92 (its bar labels readable).
GRID_TARGET = 640
MIN_CELL = 3  # px per position inside a tile, at least: 42-px tiles on a 14×14 grid (crisp at 1:1, PNG, no smoothing)
MAX_TILES = 14  # tiles per side at most; a bigger grid (384 px: 24×24) shows every k-th tile


def tile_stride(grid: tuple[int, int], max_tiles: int = MAX_TILES) -> int:
    """Show every k-th tile along rows and columns so at most max_tiles a side are drawn."""
    return max(1, -(-max(grid) // max_tiles))


MAX_GRID_PX = 1400  # ... but the picture no wider than this (DINOv2's 37×37 grid: 1 px per position)


def tile_cell(grid: tuple[int, int], target: int = GRID_TARGET, stride: int = 1) -> int:
    """Integer enlargement of each map pixel so the (shown) grid of tiles is about target px,
    at least MIN_CELL px (or the row and column stripes alias) while that fits MAX_GRID_PX."""
    side = max(grid) * -(-max(grid) // stride)  # map pixels across the shown tiles
    return max(1, min(max(MIN_CELL, round(target / side)), MAX_GRID_PX // side))


def similarity_grid(sim: np.ndarray, grid: tuple[int, int], cell: int, sep: int = SEP,
                    stride: int = 1) -> np.ndarray:
    """(P, P) similarities -> ONE uint8 image of gh×gw tiles, each a (gh, gw) map.

    Tile (r, c) is row r·gw + c of sim reshaped to the grid; its pixel (k, m), enlarged
    cell×cell by repetition (no smoothing), is sim((r, c), (k, m)). Fixed scale −1..1.
    stride k: only the tiles of rows and columns 0, k, 2k, … (each tile still whole).
    """
    gh, gw = grid
    rows, cols = range(0, gh, stride), range(0, gw, stride)
    pick = [r * gw + c for r in rows for c in cols]
    rgb = render.colorize(sim[pick], CMAP, -1.0, 1.0).reshape(len(pick), gh, gw, 3)  # (tiles, gh, gw, 3)
    tiles = np.repeat(np.repeat(rgb, cell, axis=1), cell, axis=2)
    return render.mosaic(tiles, len(rows), len(cols), sep=sep, sep_color=SEP_COLOR)


def tile_at(x: float, y: float, grid: tuple[int, int], cell: int, sep: int = SEP) -> tuple[int, int] | None:
    """A click at pixel (x, y) of similarity_grid's image -> tile (row, col); None off the grid
    (e.g. on the colour bar). A click on a separator goes to the tile before it."""
    gh, gw = grid
    step = gh * cell + sep  # a tile is gh·cell px high (gw·cell wide) plus its separator
    stepx = gw * cell + sep
    r, c = int(y // step), int(x // stepx)
    if x < 0 or y < 0 or r >= gh or c >= gw:
        return None
    return r, c


@dataclass(frozen=True)
class TileOutline:
    """The outline of one tile of a grid of equal tiles (gap px between them), as cv2 draws it."""

    size: tuple[int, int]  # (w, h) px of a tile
    cells: tuple[int, int]  # (rows, cols) of tiles
    color: tuple[int, int, int]
    thickness: int
    gap: int = SEP

    @property
    def step(self) -> tuple[int, int]:
        return self.size[0] + self.gap, self.size[1] + self.gap

    def draw(self, img: np.ndarray, x0: int, y0: int) -> None:
        """In place: the outline of the tile starting at (x0, y0)."""
        w, h = self.size
        cv2.rectangle(img, (x0, y0), (x0 + w - 1, y0 + h - 1), self.color, self.thickness)

    def on(self, img: np.ndarray, rc: tuple[int, int]) -> np.ndarray:
        """A copy of img with tile rc outlined."""
        out = img.copy()
        self.draw(out, rc[1] * self.step[0], rc[0] * self.step[1])
        return out

    def marks(self, look: str, base: np.ndarray, rc: tuple[int, int]) -> flip.Marks:
        """For the page to outline a clicked tile itself (page/web/flipbook.js)."""
        mark, offset = flip.stamp(self.draw, self.size, self.thickness + 2)
        return flip.Marks(look, base, mark, offset, self.step, self.cells, rc)


def tile_outline(grid: tuple[int, int], cell: int, sep: int = SEP) -> TileOutline:
    """The outline of a similarity_grid tile: a map of `grid` positions, `cell` px each."""
    gh, gw = grid
    return TileOutline((gw * cell, gh * cell), grid, render.HIGHLIGHT_COLOR, max(1, cell // 2 + 1), sep)


def highlight_tile(img: np.ndarray, rc: tuple[int, int], grid: tuple[int, int], cell: int,
                   sep: int = SEP) -> np.ndarray:
    return tile_outline(grid, cell, sep).on(img, rc)



def similarity_heatmap(values: np.ndarray, title: str, vmax: float = 1.0) -> go.Figure:
    """(gh, gw) similarities as a plotly heatmap on the symmetric scale −vmax..vmax (default the
    fixed −1..1), exact values on hover.

    Built from one dict: plotly's update_* calls validate again each time and cost ~5× more,
    which matters on a click.
    """
    gh, gw = values.shape
    return go.Figure(dict(
        data=[dict(type="heatmap", z=values, zmin=-vmax, zmax=vmax, colorscale=PLOTLY_CMAP,
                   x=list(range(gw)), y=list(range(gh)), colorbar=dict(thickness=12, len=0.9),
                   hovertemplate="row %{y}, col %{x}<br>cos = %{z:.4f}<extra></extra>")],
        # The title sits in its own band above the top axis and its "col" title (t=70 put them on one line),
        # and below the page's panel label, which floats over the chart's top 34 px (at y=0.98 the title
        # hid behind it: issue 51). Lines short enough for the chart's width at the projector's 24 px.
        layout=dict(title=dict(text=title, font=dict(size=13), yref="container", y=1, yanchor="top",
                               pad=dict(t=figures.PANEL_LABEL_PX)), height=430,
                    margin=dict(l=10, r=10, t=figures.PANEL_LABEL_PX + 22 * (title.count("<br>") + 1) + 60, b=10),
                    xaxis=dict(constrain="domain", title=dict(text="col"), side="top"),
                    yaxis=dict(autorange="reversed", scaleanchor="x", constrain="domain",
                               title=dict(text="row"))),
    ))


def tile_figure(sim: np.ndarray, grid: tuple[int, int], rc: tuple[int, int]) -> go.Figure:
    r, c = rc
    return similarity_heatmap(sim[r * grid[1] + c].reshape(grid),
                              f"Position ({r}, {c})<br>vs every patch position")


def cls_scale(cls_sim: np.ndarray) -> float:
    """The [CLS] chart's own symmetric range: max |cos|, rounded up to 0.01. On the trained ViT-Ti
    [CLS]'s position is within ±0.1 of every patch's, a pale wash on the grid's ±1."""
    return round(max(0.01, float(np.ceil(np.abs(cls_sim).max() * 100) / 100)), 2)


def cls_figure(cls_sim: np.ndarray) -> go.Figure:
    v = cls_scale(cls_sim)
    # The scale's line at the title's size (a <sub> drew it at ~8 px).
    return similarity_heatmap(cls_sim, f"[CLS] position embedding<br>vs every patch position<br>"
                                       f"own scale ±{v:.2f} (grid: ±1)", v)


@dataclass(frozen=True)
class ModelPositions:
    """Per-model results and pictures (cached; no photo involved)."""

    report: positional.PositionReport
    cell: int
    grid_img: np.ndarray  # similarity_grid + colour bar, uint8
    compare_img: np.ndarray  # 2×2 labelled grids on the same scale + colour bar
    numbers: list[list[str]]
    text: str


def model_positions(vm: VitModel, r: positional.PositionReport) -> ModelPositions:
    cell = tile_cell(r.grid)
    grid_img = render.with_colorbar(similarity_grid(r.sim, r.grid, cell), CMAP)
    return ModelPositions(report=r, cell=cell, grid_img=grid_img, compare_img=compare_image(r),
                          numbers=contrast_rows(r), text=explanation(vm, r))


def compare_positions(grid: tuple[int, int]) -> list[tuple[int, int]]:
    """The positions the comparison shows for every encoding: a corner, the centre, and a place
    off both axes of symmetry."""
    gh, gw = grid
    return [(0, 0), (gh // 2, gw // 2), (gh // 4, (3 * gw) // 4)]


COMPARE_TILE = 168  # px per comparison tile: a 14×14 map at 12 px per position


def compare_image(r: positional.PositionReport) -> np.ndarray:
    """One row per encoding (learned, 1-D sinusoidal, 2-D sin-cos, random init), one large tile
    per position of compare_positions, the tile's own position outlined; one −1..1 scale.
    Fewer, larger tiles than the full grid: 24-px tiles of four 14×14 grids could not be read."""
    gh, gw = r.grid
    cell = max(2, COMPARE_TILE // max(gh, gw))
    named = {"learned (this model)": r.sim, **r.baselines}
    keys = {"learned (this model)": "learned", **{k: k for k in r.baselines}}
    where = compare_positions(r.grid)
    rows = []
    for name, s in named.items():
        tiles = []
        for pr, pc in where:
            t = render.enlarge(render.colorize(s[pr * gw + pc].reshape(gh, gw), CMAP, -1.0, 1.0), cell)
            render.outline(t, (pc * cell, pr * cell), ((pc + 1) * cell - 1, (pr + 1) * cell - 1),
                           render.HIGHLIGHT_COLOR, 1)
            tiles.append(t)
        row = render.mosaic(np.stack(tiles), 1, len(tiles), sep=10)
        contrast = r.contrasts[keys[name]].shown()[2]  # as the table and the text write it
        title = f"{name}: contrast {contrast}"
        if render.text_size(title)[0] + 2 > row.shape[1]:  # a grid over 14 has narrower rows: the table's name
            title = f"{keys[name]}: contrast {contrast}"
        rows.append(_titled(row, title))
    cap = render.text_size("0")[1]
    head = np.full((2 * cap, rows[0].shape[1], 3), 255, np.uint8)
    for i, (pr, pc) in enumerate(where):  # each position's name over its own column of tiles
        render.put_text(head, f"({pr}, {pc})", (2 + i * (gw * cell + 10), int(1.5 * cap)))
    body = np.concatenate([head] + [np.concatenate([row, np.full((12, row.shape[1], 3), 255, np.uint8)])
                                    for row in rows])
    return render.with_colorbar(body, CMAP)


def _titled(img: np.ndarray, text: str) -> np.ndarray:
    """A white strip with the title above img (a label on top would hide the first tiles)."""
    cap = render.text_size(text)[1]
    strip = np.full((2 * cap, img.shape[1], 3), 255, np.uint8)
    render.put_text(strip, text, (2, int(1.5 * cap)))
    return np.concatenate([strip, img], axis=0)


def contrast_rows(r: positional.PositionReport) -> list[list[str]]:
    return [[name, *c.shown()] for name, c in r.contrasts.items()]


CONTRAST_HEADERS = ["encoding", "cos, 4 neighbours", f"cos, ≥{positional.FAR} apart", "near − far"]


def explanation(vm: VitModel, r: positional.PositionReport) -> str:
    c = r.contrasts
    gh, gw = r.grid
    near, far, contrast = c["learned"].shown()
    cls = r.cls_sim
    if cls is None:
        cls_text = ("**No [CLS] position**: this model has no [CLS] token (its attention-pooling head reads every "
                    "patch after the last block), so every row of its position table belongs to a patch.")
    else:
        cls_text = (f"The **[CLS] position** is not a place in the photo: its embedding's similarity to the patch "
                    f"positions ranges {float(cls.min()):+.2f} … {float(cls.max()):+.2f} "
                    f"(mean {float(cls.mean()):+.2f}).")
    warn = ("\n\n⚠️ **This model has untrained random weights**: its \"learned\" embeddings are a random "
            "init, so expect a contrast near 0 and no structure." if not vm.is_pretrained else "")
    excluded = "" if cls is None else ", [CLS] excluded"
    th, tw = vm.position_grid
    resized = ""
    if (th, tw) != (gh, gw):  # DINOv2: the table is stored at its training grid, resized at every forward
        resized = (f", from the stored {th}×{tw} table resized to the {gh}×{gw} grid this model runs at, as its "
                   "forward adds it (so is the random init below)")
    return f"""**What to notice.** Each of the {gh}×{gw} small tiles is one patch position
(row-major{excluded}){resized}; its {gh}×{gw} pixels show the cosine similarity of that position's
embedding to every patch position (red +1, white 0, blue −1). A position of **{vm.display_name}** is on average
**{near}** similar to its 4 neighbours and **{far}** to positions at least
{positional.FAR} apart (Chebyshev distance: ≥ {positional.FAR} rows or ≥ {positional.FAR} columns away),
a contrast of **{contrast}**. For comparison, on the same scale: 1-D sinusoidal
encodings of the row-major sequence {c[positional.BASELINES[0]].shown()[2]}, 2-D sin-cos (MAE)
{c[positional.BASELINES[1]].shown()[2]}, the same architecture's random init
{c[positional.BASELINES[2]].shown()[2]}. Nothing tells a ViT that patches lie on a 2-D grid:
a contrast well above the random init's means training put the grid into the embeddings (in the
ViT paper's Fig. 7, tiles show a bright spot at their own place plus row and column stripes).

{cls_text}{warn}"""


# ------------------------------------------------------------------ relative position bias (BEiT)
@dataclass(frozen=True)
class BiasPositions:
    """Per-model pictures of a relative position bias (a family whose Family.pe is "relative bias")."""

    bias: positional.RelativeBias
    cell: int
    grid_img: np.ndarray  # (layers or 1) × heads tables, one colour scale, + colour bar
    compare_img: np.ndarray  # each layer's table averaged over heads
    numbers: pd.DataFrame
    text: str
    vmax: float


def _bias_tiles(tables: np.ndarray, cell: int, vmax: float) -> np.ndarray:
    """(K, th, tw) tables -> (K, th·cell, tw·cell, 3) uint8, diverging scale −vmax..vmax."""
    rgb = render.colorize(tables, CMAP, -vmax, vmax)
    return np.repeat(np.repeat(rgb, cell, axis=1), cell, axis=2)


def bias_positions(vm: VitModel, rb: positional.RelativeBias) -> BiasPositions:
    n_l, n_h, th, tw = rb.tables.shape
    vmax = float(np.abs(rb.tables).max()) or 1.0
    cell = max(1, round(56 / max(th, tw)))
    grid_img = render.with_colorbar(render.mosaic(_bias_tiles(rb.tables.reshape(-1, th, tw), cell, vmax), n_l, n_h,
                                                  sep=SEP, sep_color=SEP_COLOR), CMAP, -vmax, vmax)
    tiles = [_titled(t, f"layer {l + 1}" if not rb.shared else "all layers")
             for l, t in enumerate(_bias_tiles(rb.tables.mean(1), max(1, round(96 / max(th, tw))), vmax))]
    cols = min(len(tiles), 6)
    while len(tiles) % cols:
        tiles.append(np.full_like(tiles[0], 255))
    compare = render.with_colorbar(render.mosaic(np.stack(tiles), len(tiles) // cols, cols, sep=8), CMAP, -vmax, vmax)
    return BiasPositions(rb, cell, grid_img, compare, bias_numbers(rb, vm.geometry.grid), bias_text(vm, rb, vmax),
                         vmax)


def bias_numbers(rb: positional.RelativeBias, grid: tuple[int, int]) -> pd.DataFrame:
    """The table of each layer's mean bias at offset 0, at the 4 neighbours, far (readings.positions)."""
    import pandas as pd

    rows = [[("all layers" if rb.shared else f"layer {l + 1}") + " (mean of heads)", f"{z:+.3f}", f"{n:+.3f}",
             "—" if np.isnan(f) else f"{f:+.3f}"] for l, (z, n, f) in enumerate(rp.bias_contrast(rb, grid))]
    return pd.DataFrame(rows, columns=["relative bias", "Δ = (0, 0)", "4 neighbours", f"≥{positional.FAR} apart"])


def bias_text(vm: VitModel, rb: positional.RelativeBias, vmax: float) -> str:
    n_l, n_h = rb.tables.shape[:2]
    gh, gw = vm.geometry.grid
    fam = vm.family
    which = "one table shared by all layers" if rb.shared else f"one table per layer ({n_l})"
    zero = (" (every bias is 0: BEiT starts its tables at zero, so the tables are blank)"
            if not np.abs(rb.tables).max() else "")
    warn = (f"\n\n⚠️ **Untrained random weights**: the bias tables are an initialisation, not learned{zero}."
            if not vm.is_pretrained else "")
    head = ("its relative bias tables (its position table is added too, not drawn here)" if fam.has_position_table
            else "no position embeddings to compare")
    return f"""**{fam.title}: {head}.** {fam.pe_text} This model has {which}, each
with {n_h} heads. Each small table above is one (layer, head) — rows = layers, columns = heads; its pixel
(Δrow + {gh - 1}, Δcol + {gw - 1}) is the bias added when a query patch is Δrow rows below and Δcol columns right
of the key patch (Δ = query − key, centre = the patch itself). Red raises attention, blue lowers it; one
scale ±{vmax:.2f} for all. **Click a table** to open it large. Three more values per head concern [CLS]
(chart on the right). Method: {positional.RELATIVE_BIAS_METHOD}. Attention rollout and every other view
are unchanged: the bias is already inside the attention weights they read.{warn}"""


def bias_figure(table: np.ndarray, grid: tuple[int, int], layer: int, head: int, vmax: float,
                shared: bool = False) -> go.Figure:
    """One (2gh−1, 2gw−1) bias table as a heatmap over (Δrow, Δcol), exact values on hover."""
    gh, gw = grid
    where = "all layers" if shared else f"layer {layer + 1}"
    return go.Figure(dict(
        data=[dict(type="heatmap", z=table, zmin=-vmax, zmax=vmax, colorscale=PLOTLY_CMAP,
                   x=list(range(-(gw - 1), gw)), y=list(range(-(gh - 1), gh)), colorbar=dict(thickness=12, len=0.9),
                   hovertemplate="Δrow %{y}, Δcol %{x}<br>bias = %{z:.4f}<extra></extra>")],
        layout=dict(title=dict(text=f"Relative position bias, {where}, head {head + 1}", font=dict(size=13)),
                    height=380, margin=dict(l=10, r=10, t=70, b=10),
                    xaxis=dict(constrain="domain", title=dict(text="Δcol (query − key)"), side="top"),
                    yaxis=dict(autorange="reversed", scaleanchor="x", constrain="domain",
                               title=dict(text="Δrow (query − key)"))),
    ))


def bias_special_figure(special: np.ndarray, layer: int, head: int) -> go.Figure:
    """The three [CLS] entries of one (layer, head)."""
    names = ["[CLS]→patch", "patch→[CLS]", "[CLS]→[CLS]"]
    return go.Figure(dict(data=[dict(type="bar", x=names, y=[float(v) for v in special],
                                     hovertemplate="%{x}: %{y:.4f}<extra></extra>")],
                          layout=dict(title=dict(text=f"[CLS] biases, layer {layer + 1}, head {head + 1}",
                                                 font=dict(size=13)), height=300,
                                      margin=dict(l=10, r=10, t=50, b=10))))


def _bias_cell_at(bp: BiasPositions, x: float, y: float) -> tuple[int, int] | None:
    n_l, n_h, th, tw = bp.bias.tables.shape
    r, c = int(y // (th * bp.cell + SEP)), int(x // (tw * bp.cell + SEP))
    return (r, c) if x >= 0 and y >= 0 and r < n_l and c < n_h else None


def bias_outline(bp: BiasPositions) -> TileOutline:
    """The outline of one (layer, head) table of the bias grid."""
    n_l, n_h, th, tw = bp.bias.tables.shape
    return TileOutline((tw * bp.cell, th * bp.cell), (n_l, n_h), (255, 215, 0), 2)


def _bias_outline(bp: BiasPositions, rc: tuple[int, int]) -> np.ndarray:
    return bias_outline(bp).on(bp.grid_img, rc)


def _bias_panel(vm: VitModel, bp: BiasPositions, rc: tuple[int, int] | None) -> PositionsPanel:
    rc = rc or (bp.bias.tables.shape[0] - 1, 0)
    l, h = rc
    return PositionsPanel(grid_img=_bias_outline(bp, rc), marks=bias_outline(bp).marks(marks_look(vm), bp.grid_img, rc),
                          tile_fig=bias_figure(bp.bias.tables[l, h], vm.geometry.grid, l, h, bp.vmax, bp.bias.shared),
                          cls_fig=bias_special_figure(bp.bias.special[l, h], l, h), compare_img=bp.compare_img,
                          numbers=bp.numbers, text=bp.text)


def marks_look(vm: VitModel) -> str:
    """The grid is the model's (not the photo's)."""
    return f"positions|{vm.id}"


def cached_bias_positions(ph: Photo) -> BiasPositions:
    """The model's relative-bias pictures, drawn once per model."""
    return ph.per_model(BIAS_DRAWN, lambda: bias_positions(ph.vm, rp.relative_bias(ph.vm, ph.per_model)))


@dataclass(frozen=True)
class PositionsPanel:
    grid_img: np.ndarray
    marks: flip.Marks  # the grid without its outline, for the page to outline a clicked tile
    tile_fig: go.Figure
    cls_fig: go.Figure | None  # None: the model has no [CLS] (SigLIP), and the page hides the chart
    compare_img: np.ndarray
    numbers: list[list[str]]
    text: str


def cached_model_positions(ph: Photo) -> ModelPositions:
    """The model's position results, computed once per model (not per photo)."""
    return ph.per_model(DRAWN, lambda: model_positions(ph.vm, rp.report(ph.vm, ph.per_model)))


def positions_panel(ph: Photo, rc: tuple[int, int] | None = None) -> PositionsPanel:
    if ph.vm.family.has_bias_table:
        return _bias_panel(ph.vm, cached_bias_positions(ph), rc)
    mp = cached_model_positions(ph)
    r = mp.report
    rc = rc or (r.grid[0] // 2, r.grid[1] // 2)
    outline = tile_outline(r.grid, mp.cell)
    return PositionsPanel(grid_img=outline.on(mp.grid_img, rc), marks=outline.marks(marks_look(ph.vm), mp.grid_img, rc),
                          tile_fig=tile_figure(r.sim, r.grid, rc),
                          cls_fig=None if r.cls_sim is None else cls_figure(r.cls_sim),
                          compare_img=mp.compare_img, numbers=mp.numbers, text=mp.text)


def click_tile(ph: Photo, x: float, y: float) -> tuple[np.ndarray, go.Figure] | None:
    """A click at (x, y) on the grid image -> (grid with the tile outlined, the tile large);
    None when the click is off the tiles. BEiT: a (layer, head) bias table."""
    if ph.vm.family.has_bias_table:
        bp = cached_bias_positions(ph)
        lh = _bias_cell_at(bp, x, y)
        return None if lh is None else (_bias_panel(ph.vm, bp, lh).grid_img, _bias_panel(ph.vm, bp, lh).tile_fig)
    mp = cached_model_positions(ph)
    r = mp.report
    rc = tile_at(x, y, r.grid, mp.cell)
    if rc is None:
        return None
    return highlight_tile(mp.grid_img, rc, r.grid, mp.cell), tile_figure(r.sim, r.grid, rc)


def tile_layout(ph: Photo) -> tuple[int, int, tuple[int, int]]:
    """The grid image's tiles as click_tile finds them: (rows, cols, (x, y) px from one tile's corner
    to the next, its separator included), from the image's top-left corner. BEiT: the (layer, head) tables."""
    if ph.vm.family.has_bias_table:
        bp = cached_bias_positions(ph)
        n_l, n_h, th, tw = bp.bias.tables.shape
        return n_l, n_h, (tw * bp.cell + SEP, th * bp.cell + SEP)
    mp = cached_model_positions(ph)
    gh, gw = mp.report.grid
    return gh, gw, (gw * mp.cell + SEP, gh * mp.cell + SEP)


@dataclass(frozen=True)
class ResolutionPanel:
    grid_img: np.ndarray  # grid of maps at the new size + colour bar
    top5: go.Figure | None
    text: str


@dataclass(frozen=True)
class PositionsAtSize:
    """Per (model, input size): the interpolated table's similarity (readings.positions.at_size), drawn."""

    at: rp.SimilarityAtSize
    grid_img: np.ndarray  # uint8, with colour bar
    stride: int  # every stride-th row and column of tiles is drawn


def positions_at_size(at: rp.SimilarityAtSize) -> PositionsAtSize:
    k = tile_stride(at.grid)
    img = render.with_colorbar(similarity_grid(at.sim, at.grid, tile_cell(at.grid, stride=k), stride=k), CMAP)
    return PositionsAtSize(at, img, k)


def cached_positions_at_size(ph: Photo, size: int) -> PositionsAtSize:
    """The interpolated table's similarity grid for a size×size input, drawn once per model."""
    return ph.per_model(drawn_at_name(size), lambda: positions_at_size(rp.at_size(ph.vm, size, ph.per_model)))


def resolution_panel(ph: Photo, size: int) -> ResolutionPanel:
    vm = ph.vm
    size = int(size)
    if vm.family.has_bias_table:
        return _bias_resolution_panel(ph, size)
    at = cached_positions_at_size(ph, size)
    pred = rp.predict_at(ph, size)
    native = ph.analysis()
    fig = None
    if pred.probs is not None and native.probs is not None:
        base = {p.index: float(native.probs[p.index]) for p in pred.top5}
        title = f"Top-5 at {size}×{size} px<br><sub>change vs {vm.geometry.image_size[0]} px"
        title += ("; UNTRAINED weights: meaningless</sub>" if not vm.is_pretrained else "</sub>")
        fig = figures.top5_bar(pred.top5, base, title)
    g = vm.geometry
    nh, nw = at.at.grid
    c = at.at.contrast
    top = ""
    if pred.top5 and native.top5:
        top = (f" Top-1 at {size} px: **{pred.top5[0].label.split(',')[0]}** ({pred.top5[0].prob:.1%}); "
               f"at {g.image_size[0]} px: **{native.top5[0].label.split(',')[0]}** ({native.top5[0].prob:.1%}).")
    th, tw = rp.stored_grid(vm)
    shown = ("" if at.stride == 1 else f" The picture shows every {nth(at.stride)} "
             f"row and column of tiles ({-(-nh // at.stride)}×{-(-nw // at.stride)} of the {nh}×{nw}), each tile "
             "whole, so the stripes stay readable.")
    aa = ", antialiased" if vm.family.pe_antialias else ""
    learned = "only " if th * tw < nh * nw else ""
    own = g.prefix_names[:vm.family.pe_prefix]  # SigLIP: none, and no clause about them
    kept = f"; {' and '.join(own)} {'keep their' if len(own) > 1 else 'keeps its'} own" if own else ""
    parts = c.shown()
    text = (f"**At {size}×{size} px** the photo gives {nh}×{nw} = {nh * nw} patches; the model learned {learned}"
            f"{th}×{tw} positions. `interpolate_pos_encoding` resizes the {th}×{tw} table bicubically "
            f"(align_corners=False{aa}) to {nh}×{nw}{kept}. Contrast at this size: "
            f"**{parts[2]}** (neighbours {parts[0]}, ≥{positional.FAR} apart {parts[1]}): "
            f"one new step is {th / nh:.2f} of a learned one"
            f"{', so neighbours look more alike' if th < nh else ''}.{top} "
            f"Forward at {size} px: {pred.seconds * 1000:.0f} ms.{shown}")
    return ResolutionPanel(grid_img=at.grid_img, top5=fig, text=text)


def _bias_resolution_panel(ph: Photo, size: int) -> ResolutionPanel:
    """BEiT at another size: the bias tables are resized bilinearly to the new offsets."""
    vm = ph.vm
    g = vm.geometry
    pred = rp.predict_at(ph, size)
    nh, nw = positional.grid_at(g, size)
    bp = cached_bias_positions(ph)
    tables = rp.bias_at_size(vm, size)  # (L or 1, H, 2nh−1, 2nw−1)
    mean = tables.mean(1)[-6:]  # the last layers, mean of heads
    cell = max(1, round(96 / max(mean.shape[1:])))
    img = render.with_colorbar(render.mosaic(_bias_tiles(mean, cell, bp.vmax), 1, len(mean), sep=8),
                               CMAP, -bp.vmax, bp.vmax)
    native = ph.analysis()
    fig = None
    if pred.probs is not None and native.probs is not None:
        base = {p.index: float(native.probs[p.index]) for p in pred.top5}
        fig = figures.top5_bar(pred.top5, base, f"Top-5 at {size}×{size} px")
    gh, gw = g.grid
    text = (f"**At {size}×{size} px** the photo gives {nh}×{nw} patches; offsets now run to ±{nh - 1}, but the "
            f"model learned biases for ±{gh - 1}. transformers resizes each ({2 * gh - 1}×{2 * gw - 1}) table "
            f"bilinearly to {2 * nh - 1}×{2 * nw - 1} (shown: mean of heads, last layers). "
            + (f"Its absolute position table is resized too, bicubically, from {gh}×{gw} to {nh}×{nw} (not shown). "
               if vm.family.has_position_table else "")
            + f"Forward at {size} px: {pred.seconds * 1000:.0f} ms.")
    return ResolutionPanel(grid_img=img, top5=fig, text=text)


# ------------------------------------------------------------------ entry points
def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    """arrays.npz keys: pos_similarity (P, P) float32, cls_pos_similarity (gh, gw) float32;
    a relative-bias family (BEiT) instead: relative_position_bias (L or 1, H, 2gh−1, 2gw−1) and
    relative_position_bias_cls (L or 1, H, 3); none for a model told no positions."""
    fam = ph.vm.family
    out: dict[str, np.ndarray] = {}
    if fam.has_bias_table:
        rb = rp.relative_bias(ph.vm, ph.per_model)
        out.update(relative_position_bias=rb.tables, relative_position_bias_cls=rb.special)
    if fam.has_position_table:  # a BEiT may have both
        r = rp.report(ph.vm, ph.per_model)
        out["pos_similarity"] = r.sim
        if r.cls_sim is not None:  # SigLIP: no [CLS], no array
            out["cls_pos_similarity"] = r.cls_sim
    return out


def export_figures(ph: Photo) -> dict[str, np.ndarray | go.Figure]:
    fam = ph.vm.family
    out: dict[str, np.ndarray | go.Figure] = {}
    if fam.has_bias_table:
        bp = cached_bias_positions(ph)
        out.update(relative_position_bias_grid=bp.grid_img, relative_position_bias_layers=bp.compare_img)
    if fam.has_position_table:  # a BEiT may have both
        mp = cached_model_positions(ph)
        out.update(pos_similarity_grid=mp.grid_img, pos_comparisons=mp.compare_img)
        if mp.report.cls_sim is not None:
            out["cls_pos_similarity_chart"] = cls_figure(mp.report.cls_sim)
    return out


@dataclass(frozen=True)
class PositionsParams:
    """Everything a control on the tab sets."""

    size: int = 384  # the other resolution's input side (px, vocab.RESOLUTIONS)

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> PositionsParams:
        try:  # a caller may send anything (None passes Gradio's Dropdown): int(None) was "Something went wrong"
            return cls(size=int(v["size"]))
        except (TypeError, ValueError):
            raise UserError("The input size is a number of pixels: pick one from the list.") from None


@dataclass(frozen=True)
class PositionsPage:
    """What the tab shows on open, each field named like its component. The other resolution
    (resolution_panel: a forward at that size, ~1.5 s for ViT-B/16 at 384 px on 2 CPU cores)
    follows in its own answer, so this first picture never waits for it."""

    grid: np.ndarray
    marks: flip.Marks
    tile: go.Figure
    cls: go.Figure | None  # None: no [CLS] (SigLIP): the chart is hidden
    text: str
    compare: np.ndarray
    numbers: list[list[str]]


def show(ph: Photo, p: PositionsParams) -> PositionsPage:
    """On open: the model's position similarity (per model: cached, see warm_model)."""
    pp = positions_panel(ph)
    return PositionsPage(grid=pp.grid_img, marks=pp.marks, tile=pp.tile_fig, cls=pp.cls_fig, text=pp.text,
                         compare=pp.compare_img, numbers=pp.numbers)


def warm_model(ph: Photo) -> None:
    """The model's own work, when the model is warmed (Workbench.model_work): the position tables'
    pictures and, at the default other size, the interpolated table's."""
    if not ph.vm.family.has_positions:
        return
    if ph.vm.family.has_bias_table:
        cached_bias_positions(ph)
        return
    cached_model_positions(ph)
    cached_positions_at_size(ph, PositionsParams().size)
