"""The Embeddings tab: the embedding stage, tokens at depth l (PCA, similarity, norms), the filters."""

from __future__ import annotations

import dataclasses
from typing import Any

import gradio as gr

from vizvit import vocab
from .. import web
from vizvit.session import PhotoKey
from vizvit.views import attention as ap
from vizvit.views import embeddings
from vizvit.views.flip import Flipbook

from .. import flip, kit
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
    with gr.Row(elem_id="emb-dropout-row"):
        with gr.Column(scale=2):
            dropout = gr.Slider(0, 0.9, value=embeddings.DEFAULT_DROPOUT, step=0.05, elem_id="emb-dropout",
                                label="Dropout p on the tokens (train against eval)")
            dropout_md = gr.Markdown(elem_id="emb-dropout-info")
        with gr.Column(scale=3):
            dropout_img = gr.Image(label="Tokens before | after dropout in train mode (zeros black)", interactive=False,
                                   format="png", elem_id="emb-dropout-img")
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
    # The depth pictures at every depth, swapped in by the page as the slider moves (page/web/flipbook.js).
    book = flip.component("emb-depth")
    colors = flip.component("emb-color")  # the scatter's other colourings, at this depth
    # What a click on either picture needs at this depth: the page draws the click at once
    # (page/web/embeddings_click.js), then the server's answer brings the text.
    tokens = gr.HTML(None, html_template="<span></span>", js_on_load=web.with_hand_on(ap.MAP_DRAW_SCRIPT, embeddings.CLICK_SCRIPT),
                     visible="hidden", elem_id="emb-tokens", apply_default_css=False)
    pick = gr.Textbox(visible="hidden", elem_id="emb-click")  # a drawn click's patch (embeddings_click.js)

    # Every control by the EmbeddingsParams field it sets; every component by the Page field it shows.
    named = dict(depth=depth, clicked=clicked, color_by=color_by, dropout=dropout)
    ctx.controls[tab.id] = named  # a lesson step sets them (page/tabs/lesson.py)
    shown_depth = dict(pca=pca_img, maps=maps_img, similarity=sim_img, similarity_text=sim_md, depth_text=depth_md)
    shown_dropout = dict(image=dropout_img, text=dropout_md)  # DropoutPanel
    shown = dict(**shown_depth, steps=steps, check=check, cls_text=cls_md, filters_text=filters_md,
                 params=params, params_total=params_total, dropout_image=dropout_img, dropout_text=dropout_md)
    shown_rest = dict(scatter=scatter, cls_image=cls_img, filters_image=filters_img)  # after the pictures
    shown_click = dict(pca=pca_img, similarity=sim_img, similarity_text=sim_md)
    targets = {t: shown_depth[t] for t in embeddings.DEPTH_TARGETS}
    read = kit.reader(named)
    ins = [ctx.key, *named.values()]

    def book_value(b: Flipbook) -> str:
        return flip.for_page("emb-depth", b, targets, named)

    def params_of(v: tuple) -> embeddings.EmbeddingsParams:
        return embeddings.EmbeddingsParams.from_controls(read(v))

    @safe
    def show(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty(outs, keep=(depth,))
        page = embeddings.show(ctx.wb.handle(key), params_of(v))
        return {**kit.values(page, shown), depth: gr.Slider(maximum=page.num_layers, value=page.depth),
                book: book_value(page.book)}

    @safe
    def show_rest(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty([*shown_rest.values(), tokens])
        ph, p = ctx.wb.handle(key), params_of(v)
        return {**kit.values(embeddings.rest(ph, p), shown_rest),
                tokens: embeddings.token_book(ph, dataclasses.replace(p, depth=min(p.depth, ph.vm.geometry.num_layers)))}

    @safe
    def show_depth(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty([*shown_depth.values(), tokens])
        ph, p = ctx.wb.handle(key), params_of(v)
        return {**kit.values(embeddings.change_depth(ph, p), shown_depth),
                tokens: embeddings.token_book(ph, p, with_view=False)}

    # A click answers in ONE event (the clicked patch and its pictures), not a state event and a
    # .then(): each event costs this page a round trip of Gradio's own work (~250 ms).
    @safe
    def click(key: PhotoKey | None, depth_v: float, clicked_v: Any, color_v: str, dropout_v: float,
              evt: gr.SelectData) -> dict:
        if key is None:
            return {clicked: None, **kit.empty([*shown_click.values(), book])}
        r, c, _ = embeddings.clicked_token(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return clicked_at(key, (depth_v, clicked_v, color_v, dropout_v), (r, c))

    def clicked_at(key: PhotoKey, v: tuple, rc: tuple[int, int]) -> dict:
        """Patch rc clicked: its pictures, text and the depth book's new look."""
        ch = embeddings.change_click(ctx.wb.handle(key), embeddings.EmbeddingsParams.from_controls({**read(v), "clicked": rc}))
        return {clicked: rc, **kit.values(ch, shown_click), book: book_value(ch.book)}

    def colors_value(b: Flipbook) -> str:
        return flip.for_page("emb-color", b, {"scatter": scatter}, named)

    @safe
    def show_scatter(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return {scatter: None, colors: gr.skip()}
        ch = embeddings.scatter(ctx.wb.handle(key), params_of(v))
        return {scatter: ch.scatter, colors: colors_value(ch.book)}

    def fill_book(key: PhotoKey | None, *v: Any) -> dict:
        """The pictures at every depth, and the scatter's colourings."""
        if key is None:
            return kit.skip([book, colors])
        ph, p = ctx.wb.handle(key), params_of(v)
        return {book: book_value(embeddings.depth_book(ph, p)), colors: colors_value(embeddings.color_book(ph, p))}

    outs = [*shown.values(), depth, book]
    ctx.on_show(tab, show, ins, outs, then=(show_rest, ins, [*shown_rest.values(), tokens], "#emb-pictures img"), first=pca_img)
    # Pictures first, then the scatter (its figure is the slowest part of a slider move).
    depth.change(show_depth, ins, [*shown_depth.values(), tokens], show_progress="hidden").then(
        show_scatter, ins, [scatter, colors], show_progress="hidden",
        js=web.after_paint("#emb-pictures img"))
    for img in (pca_img, sim_img):  # a click the page does not draw (no book yet): the server's select
        img.select(click, ins, [clicked, *shown_click.values(), book], show_progress="hidden")

    # A click the page drew (embeddings_click.js): its patch "row,col,n" comes here, not through the
    # picture's select event. Gradio loses a second click on a picture whose first is being
    # answered (its pending state takes the click); always_last answers every last one, in order.
    @safe
    def picked(key: PhotoKey | None, depth_v: float, clicked_v: Any, color_v: str, dropout_v: float,
               cell: str) -> dict:
        if key is None:
            return {clicked: None, **kit.empty([*shown_click.values(), book])}
        rc = embeddings.picked_cell(ctx.wb.model(key.model_id).geometry, cell)
        return clicked_at(key, (depth_v, clicked_v, color_v, dropout_v), rc)

    pick.change(picked, [*ins, pick], [clicked, *shown_click.values(), book], show_progress="hidden",
               trigger_mode="always_last")
    # A book with no pages (a new photo, model or clicked patch) is filled once its pictures are painted.
    flip.filled_later(book, fill_book, ins, [book, colors], after="#emb-pictures img")
    color_by.change(show_scatter, ins, [scatter, colors], show_progress="hidden")

    @safe
    def show_dropout(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty(list(shown_dropout.values()))
        p = params_of(v)
        ph = ctx.wb.handle(key)
        return kit.values(embeddings.dropout_panel(ph.vm, ph.analysis(), p.dropout), shown_dropout)

    dropout.change(show_dropout, ins, list(shown_dropout.values()), show_progress="hidden")
