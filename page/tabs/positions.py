"""The positions tab's components and events."""

from __future__ import annotations

import gradio as gr

from vizvit import vocab
from vizvit.session import PhotoKey
from vizvit.views import positions

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
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Same scale, same grid:** learned vs 1-D sinusoidal vs 2-D sin-cos vs random init")
            compare = gr.Image(show_label=False, interactive=False, format="png", elem_id="pos-compare")
        with gr.Column(scale=2):
            numbers = gr.Dataframe(headers=positions.CONTRAST_HEADERS, label="Neighbour contrast",
                                   interactive=False, elem_id="pos-numbers", wrap=True)
    gr.Markdown("### Other resolutions")
    size = gr.Dropdown([int(s) for s in vocab.RESOLUTIONS], value=384, label="input size (px)",
                       elem_id="pos-size")
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Position similarity after `interpolate_pos_encoding`** (same layout and scale)")
            res_img = gr.Image(show_label=False, interactive=False, format="png", elem_id="pos-res-grid")
        with gr.Column(scale=2):
            res_top5 = gr.Plot(label="Predictions at that size", elem_id="pos-res-top5")
            res_text = gr.Markdown(elem_id="pos-res-text")

    @safe
    def show(key: PhotoKey | None, px: int):
        if key is None:
            return (None,) * 9
        p, r = positions.show(ctx.wb.handle(key), px)
        return p.grid_img, p.tile_fig, p.cls_fig, p.text, p.compare_img, p.numbers, r.grid_img, r.top5, r.text

    @safe
    def resize(key: PhotoKey | None, px: int):
        if key is None:
            return None, None, ""
        r = positions.resolution_panel(ctx.wb.handle(key), px)
        return r.grid_img, r.top5, r.text

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        hit = None if key is None else positions.click_tile(ctx.wb.handle(key), evt.index[0], evt.index[1])
        return (gr.skip(), gr.skip()) if hit is None else hit

    ctx.on_show(tab, show, [ctx.key, size],
                [grid_img, tile_plot, cls_plot, text, compare, numbers, res_img, res_top5, res_text])
    size.change(resize, [ctx.key, size], [res_img, res_top5, res_text])
    grid_img.select(click, [ctx.key], [grid_img, tile_plot], show_progress="hidden")

