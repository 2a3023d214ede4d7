"""The Positions tab: position-embedding similarity, encodings compared, other resolutions."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit import vocab
from vizvit.session import PhotoKey
from vizvit.views import positions

from .. import flip, kit
from ..kit import Ctx, safe


def build(ctx: Ctx, tab: gr.Tab) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            # Short: a long label wraps under the image's toolbar and covers row 0.
            grid_img = gr.Image(label="Position-embedding cosine: tile (r, c) vs every patch (click a tile)",
                                interactive=False, format="png", elem_id="pos-grid")  # JPEG blurred the cells
        with gr.Column(scale=2):
            tile_plot = gr.Plot(label="The clicked tile, large (hover for values)", elem_id="pos-tile")
            cls_plot = gr.Plot(label="[CLS] position embedding vs patch positions", elem_id="pos-cls")
    text = gr.Markdown(elem_id="pos-text")
    # The grid without its outline and the outline alone: the page outlines a clicked tile at once (page/web/flipbook.js).
    marks = flip.component("pos-grid")
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Same scale, same grid:** learned vs 1-D sinusoidal vs 2-D sin-cos vs random init")
            compare = gr.Image(label="Learned vs 1-D sinusoidal vs 2-D sin-cos vs random init", show_label=False, interactive=False, format="png", elem_id="pos-compare")
        with gr.Column(scale=2):
            numbers = gr.Dataframe(headers=positions.CONTRAST_HEADERS, label="Neighbour contrast",
                                   interactive=False, elem_id="pos-numbers", wrap=True)
    gr.Markdown("### Other resolutions")
    size = gr.Dropdown([int(s) for s in vocab.RESOLUTIONS], value=384, label="input size (px)",
                       elem_id="pos-size")
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Position similarity after `interpolate_pos_encoding`** (same layout and scale)")
            res_img = gr.Image(label="Position similarity after interpolate_pos_encoding", show_label=False, interactive=False, format="png", elem_id="pos-res-grid")
        with gr.Column(scale=2):
            res_top5 = gr.Plot(label="Predictions at that size", elem_id="pos-res-top5")
            res_text = gr.Markdown(elem_id="pos-res-text")

    # Every control by the PositionsParams field it sets; every component by the Page field it shows.
    named = dict(size=size)
    shown = dict(grid=grid_img, tile=tile_plot, cls=cls_plot, text=text, compare=compare, numbers=numbers)
    shown_size = dict(grid_img=res_img, top5=res_top5, text=res_text)  # a ResolutionPanel's fields
    read = kit.reader(named)
    ins = [ctx.key, *named.values()]

    @safe
    def show(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.skip(outs)
        ph = ctx.wb.handle(key)
        page = positions.show(ph, positions.PositionsParams.from_controls(read(v)))
        # A tile chosen by the arrow keys and Enter too (web/a11y.js)
        grid = kit.with_cells(page.grid, *positions.tile_layout(ph))
        return {**kit.values(page, shown), grid_img: grid, marks: flip.marks_for_page("pos-grid", page.marks, grid_img)}

    @safe
    def resize(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.skip(list(shown_size.values()))
        p = positions.PositionsParams.from_controls(read(v))
        return kit.values(positions.resolution_panel(ctx.wb.handle(key), p.size), shown_size)

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData) -> dict:
        hit = None if key is None else positions.click_tile(ctx.wb.handle(key), evt.index[0], evt.index[1])
        return kit.skip([grid_img, tile_plot]) if hit is None else dict(zip([grid_img, tile_plot], hit))

    outs = [*shown.values(), marks]
    # Then the other resolution (a forward at that size), once the grid is painted.
    ctx.on_show(tab, show, ins, outs, then=(resize, ins, list(shown_size.values()), "#pos-grid img"), first=grid_img)
    size.change(resize, ins, list(shown_size.values()))
    grid_img.select(click, [ctx.key], [grid_img, tile_plot], show_progress="hidden")
