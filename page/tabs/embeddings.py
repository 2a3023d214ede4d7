"""The embeddings tab's components and events."""

from __future__ import annotations

import gradio as gr

from vizvit import vocab, web
from vizvit.session import PhotoKey
from vizvit.views import embeddings

from ..kit import Ctx, safe

def build(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown(embeddings.EMBED_TEXT)
    gr.Markdown("### 1 · The embedding stage on this photo")
    with gr.Row():
        with gr.Column(scale=3):
            steps = gr.Dataframe(headers=["step", "shape", "what happens"], label="Shapes, step by step",
                                 interactive=False, wrap=True, column_widths=["22%", "22%", "56%"],
                                 elem_id="emb-steps")
            check = gr.Markdown(elem_id="emb-check")
        with gr.Column(scale=2):
            params = gr.Dataframe(headers=["stage", "parameters", "share"], interactive=False, wrap=True,
                                  column_widths=["56%", "26%", "18%"],
                                  label="Parameters per stage and block", max_height=420,
                                  elem_id="emb-params")
            params_total = gr.Markdown(elem_id="emb-params-total")
    gr.Markdown("### 2 · Tokens at depth l")
    gr.Markdown(embeddings.DEPTH_TEXT)
    depth = gr.Slider(0, 12, value=0, step=1, elem_id="emb-depth",
                      label="depth l (0 = after the embedding stage; l = after block l)")
    depth_md = gr.Markdown(elem_id="emb-depth-info")
    with gr.Row(elem_id="emb-pictures"):  # first on the screen in projector mode (style.css)
        # JPEG (also for the maps below): these change on every slider move or click, and
        # PNG-encoding 672² px costs ~25 ms each, JPEG ~2 ms (benchmarks/bench_embeddings.py).
        pca_img = gr.Image(label="Patch-token PCA as RGB over the photo (click a patch)", interactive=False,
                           format="jpeg", elem_id="emb-pca")
        sim_img = gr.Image(label="Cosine similarity of the clicked token to every patch (click a patch)",
                           interactive=False, format="jpeg", elem_id="emb-sim")
    sim_md = gr.Markdown(elem_id="emb-sim-info")
    maps_img = gr.Image(label="PCA map alone | token norms", interactive=False, format="jpeg",
                        elem_id="emb-maps")
    with gr.Row():
        with gr.Column(scale=4):
            scatter = gr.Plot(label="Patch tokens, first two principal components", elem_id="emb-scatter")
        with gr.Column(scale=1):
            color_by = gr.Radio(list(vocab.COLOR_CHOICES), value="row", label="colour points by",
                                elem_id="emb-color")
    cls_md = gr.Markdown(elem_id="emb-cls-info")
    cls_img = gr.Image(label="cos([CLS], patch) at each depth", interactive=False, format="png",
                       elem_id="emb-cls")
    gr.Markdown("### 3 · Patch-embedding filters")
    gr.Markdown(embeddings.FILTERS_TEXT)
    filters_md = gr.Markdown(elem_id="emb-filters-info")
    filters_img = gr.Image(label="Principal components of the embedding filters", interactive=False,
                           format="png", elem_id="emb-filters")
    clicked = gr.State(None)  # (row, col)

    def data(key: PhotoKey):
        ph = ctx.wb.handle(key)
        return ph.vm, ph.analysis(), embeddings.data(ph)

    @safe
    def show_depth(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None):
        if key is None:
            return None, None, None, "", ""
        vm, a, d = data(key)
        p = embeddings.depth_panel(vm, a, d, depth_l, rc)
        s = embeddings.similarity_panel(vm, a, d, depth_l, rc)
        return p.pca_over_photo, p.maps, s.image, s.text, p.text

    @safe
    def show_all(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None, color: str):
        if key is None:
            return (None, None, None, "", "", None, None, "", "", "", None, "", None, None, gr.skip())
        pg = embeddings.show(ctx.wb.handle(key), depth_l, rc, color)
        p, s = pg.depth_panel, pg.similarity
        return (p.pca_over_photo, p.maps, s.image, s.text, p.text, pg.scatter, pg.stage.steps, pg.stage.check,
                pg.cls_text, pg.filters_text, pg.stage.params, pg.stage.total, pg.cls_image, pg.filters_image,
                gr.Slider(maximum=ctx.wb.model(key.model_id).geometry.num_layers, value=pg.depth))

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        r, c, _ = embeddings.clicked_token(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return r, c

    @safe
    def show_similarity(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None):
        if key is None:
            return None, None, ""
        vm, a, d = data(key)
        s = embeddings.similarity_panel(vm, a, d, depth_l, rc)
        return embeddings.pca_over_photo(vm, d, depth_l, rc), s.image, s.text

    @safe
    def show_scatter(key: PhotoKey | None, depth_l: int, color: str):
        if key is None:
            return None
        vm, _, d = data(key)
        return embeddings.scatter_figure(vm, d, depth_l, color)

    depth_outs = [pca_img, maps_img, sim_img, sim_md, depth_md]
    all_outs = [*depth_outs, scatter, steps, check, cls_md, filters_md, params, params_total, cls_img,
                filters_img, depth]
    ctx.on_show(tab, show_all, [ctx.key, depth, clicked, color_by], all_outs)
    # Pictures first, then the scatter (its figure is the slowest part of a slider move).
    depth.change(show_depth, [ctx.key, depth, clicked], depth_outs, show_progress="hidden").then(
        show_scatter, [ctx.key, depth, color_by], scatter, show_progress="hidden",
        js=web.after_paint("#emb-pictures img"))
    for img in (pca_img, sim_img):
        img.select(click, [ctx.key], clicked).then(show_similarity, [ctx.key, depth, clicked],
                                                    [pca_img, sim_img, sim_md], show_progress="hidden")
    color_by.change(show_scatter, [ctx.key, depth, color_by], scatter, show_progress="hidden")

