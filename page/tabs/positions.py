"""The Positions tab: position-embedding similarity, encodings compared, other resolutions."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit import vocab
from vizvit.session import PhotoKey, Workbench
from vizvit.views import positions

from .. import flip, ids, kit
from ..kit import Ctx

CONTROLS = ["size"]  # the PositionsParams fields the tab's controls set, in the order its events list them
SHOWN = ["grid", "tile", "cls", "text", "compare", "numbers"]  # the Page fields shown (page names: the fields')
OPENED = [*SHOWN, "marks"]
RESOLUTION = {"grid_img": "res_grid", "top5": "res_top5", "text": "res_text"}  # ResolutionPanel field -> page name
CLICKED = ["grid", "tile"]
Ui = dict[str, gr.components.Component]


def params(v: tuple) -> positions.PositionsParams:
    """The controls' values (in CONTROLS order) as PositionsParams."""
    return positions.PositionsParams.from_controls(dict(zip(CONTROLS, v)))


# -- handlers: explicit values in, {name: value} out (page names: OPENED, RESOLUTION's values, CLICKED) -------
def show(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """The tab opened (or a new photo or model while open): the grid, the tile, [CLS], the encodings compared."""
    if key is None:
        return kit.skip(OPENED)
    ph = wb.handle(key)
    page = positions.show(ph, params(v))
    # A tile chosen by the arrow keys and Enter too (web/a11y.js)
    grid = kit.with_cells(page.grid, *positions.tile_layout(ph))
    # No [CLS] (SigLIP): its chart hidden, shown again for the next model that has one
    cls = gr.update(value=page.cls, visible=page.cls is not None)
    return {**kit.values(page, {n: n for n in SHOWN}), "grid": grid, "cls": cls,
            "marks": flip.marks_for_page("pos-grid", page.marks, ui["grid"])}


def resize(wb: Workbench, key: PhotoKey | None, *v: Any) -> dict:
    """The other resolution: a forward at the chosen size, its position similarity and top-5."""
    if key is None:
        return kit.skip(list(RESOLUTION.values()))
    return kit.values(positions.resolution_panel(wb.handle(key), params(v).size), RESOLUTION)


def click(wb: Workbench, key: PhotoKey | None, evt: gr.SelectData) -> dict:
    """A tile clicked: the grid outlined at it and the tile drawn large."""
    hit = None if key is None else positions.click_tile(wb.handle(key), *kit.click_at(evt))
    return kit.skip(CLICKED) if hit is None else dict(zip(CLICKED, hit))


# -- the page: components by name, then the wiring ---------------------------------------------------
def _layout() -> Ui:
    """The tab's components by page name: the grid and its marks, the tile, [CLS], the encodings, other sizes."""
    with gr.Row():
        with gr.Column(scale=3):
            # Short: a long label wraps under the image's toolbar and covers row 0.
            grid_img = gr.Image(label="Position-embedding cosine: tile (r, c) vs every patch (click a tile)",
                                interactive=False, format="png", elem_id="pos-grid")  # JPEG blurred the cells
        with gr.Column(scale=2):
            tile_plot = gr.Plot(label="The clicked tile, large (hover for values)", elem_id=ids.POS_TILE)
            cls_plot = gr.Plot(label="[CLS] position embedding vs patch positions", elem_id="pos-cls")
    text = gr.Markdown(elem_id="pos-text")
    # The grid without its outline and the outline alone: the page outlines a clicked tile at once
    # (page/web/flipbook.js).
    marks = flip.component("pos-grid")
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Same scale, same grid:** learned vs 1-D sinusoidal vs 2-D sin-cos vs random init")
            compare = gr.Image(label="Learned vs 1-D sinusoidal vs 2-D sin-cos vs random init", show_label=False,
                               interactive=False, format="png", elem_id="pos-compare")
        with gr.Column(scale=2):
            # shares, not content widths: at 390 px the last column ("near − far", the contrast) was cut
            numbers = gr.Dataframe(headers=positions.CONTRAST_HEADERS, label="Neighbour contrast",
                                   interactive=False, elem_id="pos-numbers", wrap=True,
                                   column_widths=["29%", "29%", "21%", "21%"])
    gr.Markdown("## Other resolutions")
    size = gr.Dropdown([int(s) for s in vocab.RESOLUTIONS], value=384, label="input size (px)",
                       elem_id="pos-size")
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Position similarity after `interpolate_pos_encoding`** (same layout and scale)")
            res_img = gr.Image(label="Position similarity after interpolate_pos_encoding", show_label=False,
                               interactive=False, format="png", elem_id="pos-res-grid")
        with gr.Column(scale=2):
            res_top5 = gr.Plot(label="Predictions at that size", elem_id="pos-res-top5")
            res_text = gr.Markdown(elem_id="pos-res-text")
    return dict(grid=grid_img, tile=tile_plot, cls=cls_plot, text=text, compare=compare, numbers=numbers,
                marks=marks, size=size, res_grid=res_img, res_top5=res_top5, res_text=res_text)


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = _layout()
    ins = [ctx.key, *(ui[n] for n in CONTROLS)]
    resized = [ui[n] for n in RESOLUTION.values()]
    resize_ = kit.answer(resize, ui, ctx.wb)  # one handler object: both events share its concurrency group
    # Then the other resolution (a forward at that size), once the grid is painted.
    ctx.on_show(tab, kit.answer(show, ui, ctx.wb, ui), ins, [ui[n] for n in OPENED],
                then=(resize_, ins, resized, "#pos-grid img"), first=ui["grid"])
    ui["size"].change(resize_, ins, resized)
    ui["grid"].select(kit.answer(click, ui, ctx.wb), [ctx.key], [ui[n] for n in CLICKED], show_progress="hidden")
