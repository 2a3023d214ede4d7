"""The Embeddings tab: the embedding stage, tokens at depth l (PCA, similarity, norms), the filters."""

from __future__ import annotations

import dataclasses
from typing import Any

import gradio as gr

from vizvit import vocab
from vizvit.session import PhotoKey, Workbench
from vizvit.views import embeddings
from vizvit.views.flip import Flipbook

from .. import flip, kit, web
from ..kit import Ctx

# The EmbeddingsParams fields the tab's controls set, in the order its events list them.
CONTROLS = ["depth", "clicked", "color_by", "dropout"]
SHOWN_DEPTH = ["pca", "maps", "similarity", "similarity_text", "depth_text"]  # a DepthChange's fields shown
# The Page fields the tab shows on opening (the page names are the fields' names).
SHOWN = [*SHOWN_DEPTH, "steps", "check", "cls_text", "filters_text", "params", "params_total", "dropout_image",
         "dropout_text"]
SHOWN_REST = ["scatter", "cls_image", "filters_image"]  # after the pictures
SHOWN_CLICK = ["pca", "similarity", "similarity_text"]  # a ClickChange's fields shown
DROPOUT = {"image": "dropout_image", "text": "dropout_text"}  # DropoutPanel field -> page name
OPENED = [*SHOWN, "depth", "book"]
CLICKED = ["clicked", *SHOWN_CLICK, "book"]
SCATTER = ["scatter", "colors"]
Ui = dict[str, gr.components.Component]


def params(v: tuple, **changed: Any) -> embeddings.EmbeddingsParams:
    """The controls' values (in CONTROLS order) as EmbeddingsParams, with `changed` fields replaced."""
    return embeddings.EmbeddingsParams.from_controls({**dict(zip(CONTROLS, v)), **changed})


def book_value(ui: Ui, b: Flipbook) -> str:
    """The depth book as the page reads it (page/web/flipbook.js)."""
    return flip.for_page("emb-depth", b, {t: ui[t] for t in embeddings.DEPTH_TARGETS}, {n: ui[n] for n in CONTROLS})


def colors_value(ui: Ui, b: Flipbook) -> str:
    """The scatter's other colourings at this depth, as the page reads them."""
    return flip.for_page("emb-color", b, {"scatter": ui["scatter"]}, {n: ui[n] for n in CONTROLS})


# -- handlers: explicit values in, {name: value} out (page names: CONTROLS, OPENED, CLICKED, SCATTER) -----------
def show(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """The tab opened (or a new photo or model while open): every table, text and depth picture."""
    if key is None:
        return kit.skip([*OPENED, "depth"])
    ph = wb.handle(key)
    page = embeddings.show(ph, params(v))
    g = ph.vm.geometry  # both pictures' patches chosen by the arrow keys and Enter too (web/a11y.js)
    cells = {n: kit.patch_cells(getattr(page, n), g) for n in ("pca", "similarity")}
    return {**kit.values(page, {n: n for n in SHOWN}), **cells,
            "depth": gr.Slider(maximum=page.num_layers, value=page.depth), "book": book_value(ui, page.book)}


def show_rest(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """The scatter, [CLS] similarity and filters, and what a click needs (after the pictures are painted)."""
    if key is None:
        return kit.skip([*SHOWN_REST, "tokens"])
    ph, p = wb.handle(key), params(v)
    return {**kit.values(embeddings.rest(ph, p), {n: n for n in SHOWN_REST}),
            "tokens": embeddings.token_book(ph, dataclasses.replace(p, depth=min(p.depth, ph.vm.geometry.num_layers)))}


def show_depth(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """The depth slider moved: the pictures at that depth and what a click needs there."""
    if key is None:
        return kit.skip([*SHOWN_DEPTH, "tokens"])
    ph, p = wb.handle(key), params(v)
    return {**kit.values(embeddings.change_depth(ph, p), {n: n for n in SHOWN_DEPTH}),
            "tokens": embeddings.token_book(ph, p, with_view=False)}


def clicked_at(wb: Workbench, ui: Ui, key: PhotoKey, v: tuple, rc: tuple[int, int]) -> dict:
    """Patch rc clicked: its pictures, text and the depth book's new look."""
    ch = embeddings.change_click(wb.handle(key), params(v, clicked=rc))
    return {"clicked": rc, **kit.values(ch, {n: n for n in SHOWN_CLICK}), "book": book_value(ui, ch.book)}


# A click answers in ONE event (the clicked patch and its pictures), not a state event and a
# .then(): each event costs this page a round trip of Gradio's own work (~250 ms).
def click(wb: Workbench, ui: Ui, key: PhotoKey | None, depth_v: float, clicked_v: Any, color_v: str,
          dropout_v: float, evt: gr.SelectData) -> dict:
    """A click the page did not draw (no book yet): the server's select, at pixel evt.index."""
    if key is None:
        return kit.skip(CLICKED)
    r, c, _ = embeddings.clicked_token(wb.model(key.model_id).geometry, *kit.click_at(evt))
    return clicked_at(wb, ui, key, (depth_v, clicked_v, color_v, dropout_v), (r, c))


def picked(wb: Workbench, ui: Ui, key: PhotoKey | None, depth_v: float, clicked_v: Any, color_v: str,
           dropout_v: float, cell: str) -> dict:
    """A click the page drew (page/web/embeddings_click.js): its patch as "row,col,n"."""
    if key is None:
        return kit.skip(CLICKED)
    rc = embeddings.picked_cell(wb.model(key.model_id).geometry, cell)
    return clicked_at(wb, ui, key, (depth_v, clicked_v, color_v, dropout_v), rc)


def show_scatter(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    if key is None:
        return kit.skip(["scatter", "colors"])
    ch = embeddings.scatter(wb.handle(key), params(v))
    return {"scatter": ch.scatter, "colors": colors_value(ui, ch.book)}


def fill_book(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """The pictures at every depth, and the scatter's colourings."""
    if key is None:
        return kit.skip(["book", "colors"])
    ph, p = wb.handle(key), params(v)
    return {"book": book_value(ui, embeddings.depth_book(ph, p)),
            "colors": colors_value(ui, embeddings.color_book(ph, p))}


def show_dropout(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    if key is None:
        return kit.skip(DROPOUT.values())
    ph = wb.handle(key)
    return kit.values(embeddings.dropout_panel(ph.vm, ph.analysis(), params(v).dropout), DROPOUT)


# -- the page: components, then wiring ---------------------------------------------------------------
def _stage() -> Ui:
    """Section 1: the embedding stage's shapes, the parameters, dropout."""
    gr.Markdown(embeddings.EMBED_TEXT)
    gr.Markdown("## 1 · The embedding stage on this photo")
    with gr.Row():
        with gr.Column(scale=3):
            steps = gr.Dataframe(headers=["step", "shape", "what happens"], label="Shapes, step by step",
                                 interactive=False, wrap=True, column_widths=["22%", "22%", "56%"],
                                 elem_id="emb-steps")
            check = gr.Markdown(elem_id="emb-check")
        with gr.Column(scale=2):
            params_df = gr.Dataframe(headers=["stage", "parameters", "share"], interactive=False, wrap=True,
                                     column_widths=["56%", "26%", "18%"],
                                     label="Parameters per stage and block", max_height=420,
                                     elem_id="emb-params")
            params_total = gr.Markdown(elem_id="emb-params-total")
    with gr.Row(elem_id="emb-dropout-row"):
        with gr.Column(scale=2):
            dropout = gr.Slider(0, 0.9, value=vocab.DEFAULT_DROPOUT, step=0.05, elem_id="emb-dropout",
                                label="Dropout p on the tokens (train against eval)")
            dropout_text = gr.Markdown(elem_id="emb-dropout-info")
        with gr.Column(scale=3):
            dropout_image = gr.Image(label="Tokens before | after dropout in train mode (zeros black)",
                                     interactive=False, format="png", elem_id="emb-dropout-img")
    return dict(steps=steps, check=check, params=params_df, params_total=params_total, dropout=dropout,
                dropout_text=dropout_text, dropout_image=dropout_image)


def _depth() -> Ui:
    """Section 2: tokens at depth l (PCA, similarity, norms, the scatter, [CLS])."""
    gr.Markdown("## 2 · Tokens at depth l")
    gr.Markdown(embeddings.DEPTH_TEXT)
    depth = kit.ClampedSlider(0, 12, value=0, step=1, elem_id="emb-depth",
                              label="depth l (0 = after the embedding stage; l = after block l)")
    depth_text = gr.Markdown(elem_id="emb-depth-info")
    with gr.Row(elem_id="emb-pictures"):  # first on the screen in projector mode (style.css)
        # JPEG (also for the maps below): these change on every slider move or click, and
        # PNG-encoding 672² px costs ~25 ms each, JPEG ~2 ms (benchmarks/bench_embeddings.py).
        pca = gr.Image(label=f"{embeddings.PCA_TITLE} (click a patch)", interactive=False,
                       format="jpeg", elem_id="emb-pca")
        similarity = gr.Image(label=f"{embeddings.SIM_TITLE} (click a patch)",
                              interactive=False, format="jpeg", elem_id="emb-sim")
    similarity_text = gr.Markdown(elem_id="emb-sim-info")
    maps = gr.Image(label="PCA map alone | token norms", interactive=False, format="jpeg", elem_id="emb-maps")
    with gr.Row():
        with gr.Column(scale=4):
            scatter = gr.Plot(label="Patch tokens, first two principal components", elem_id="emb-scatter")
        with gr.Column(scale=1):
            color_by = gr.Radio(list(vocab.COLOR_CHOICES), value="row", label="colour points by",
                                elem_id="emb-color")
    cls_text = gr.Markdown(elem_id="emb-cls-info")
    cls_image = gr.Image(label="cos([CLS], patch) at each depth", interactive=False, format="png",
                         elem_id="emb-cls")
    return dict(depth=depth, depth_text=depth_text, pca=pca, similarity=similarity, similarity_text=similarity_text,
                maps=maps, scatter=scatter, color_by=color_by, cls_text=cls_text, cls_image=cls_image)


def _filters_and_carriers() -> Ui:
    """Section 3 (the filters) and the hidden parts the page scripts read and write."""
    gr.Markdown("## 3 · Patch-embedding filters")
    gr.Markdown(embeddings.FILTERS_TEXT)
    filters_text = gr.Markdown(elem_id="emb-filters-info")
    filters_image = gr.Image(label="Principal components of the embedding filters", interactive=False,
                             format="png", elem_id="emb-filters")
    clicked = gr.State(None)  # (row, col)
    # The depth pictures at every depth, swapped in by the page as the slider moves (page/web/flipbook.js).
    book = flip.component("emb-depth")
    colors = flip.component("emb-color")  # the scatter's other colourings, at this depth
    # What a click on either picture needs at this depth: the page draws the click at once
    # (page/web/embeddings_click.js), then the server's answer brings the text.
    tokens = gr.HTML(None, html_template="<span></span>",
                     js_on_load=web.on_load(web.HAND_ON, web.MAP_DRAW, web.EMBEDDINGS_CLICK),
                     visible="hidden", elem_id="emb-tokens", apply_default_css=False)
    pick = gr.Textbox(visible="hidden", elem_id="emb-click")  # a drawn click's patch (embeddings_click.js)
    return dict(filters_text=filters_text, filters_image=filters_image, clicked=clicked, book=book, colors=colors,
                tokens=tokens, pick=pick)


def _layout() -> Ui:
    """Every component of the tab, by its page name."""
    return {**_stage(), **_depth(), **_filters_and_carriers()}


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = _layout()
    ctx.controls[tab.id] = {n: ui[n] for n in CONTROLS}  # a lesson step sets them (page/tabs/lesson.py)
    ctx.links.update(depth=ui["depth"])  # a link's depth= sets it; "Copy link to this view" reads it
    ins = [ctx.key, *(ui[n] for n in CONTROLS)]

    # One handler object per function: an event's concurrency group is its fn's id, so the two
    # pictures' selects share one, and the depth's scatter and the colour's do too (as before the split).
    h = {f.__name__: kit.answer(f, ui, ctx.wb, ui)
         for f in (show, show_rest, show_depth, click, picked, show_scatter, fill_book, show_dropout)}

    def comps(names: list[str]) -> list:
        return [ui[n] for n in names]

    ctx.on_show(tab, h["show"], ins, comps(OPENED),
                then=(h["show_rest"], ins, comps([*SHOWN_REST, "tokens"]), "#emb-pictures img"), first=ui["pca"])
    # The open's token book always lands: it carries the picture the page draws clicks on, a depth
    # move's does not (with_view=False); held back, clicks went to the server until a reopen (review).
    ctx.unguarded.append(ui["tokens"])
    # Pictures first, then the scatter (its figure is the slowest part of a slider move).
    ui["depth"].change(h["show_depth"], ins, comps([*SHOWN_DEPTH, "tokens"]), show_progress="hidden").then(
        h["show_scatter"], ins, comps(SCATTER), show_progress="hidden", js=web.after_paint("#emb-pictures img"))
    for img in ("pca", "similarity"):  # a click the page does not draw (no book yet): the server's select
        ui[img].select(h["click"], ins, comps(CLICKED), show_progress="hidden")
    # A click the page drew (embeddings_click.js): its patch "row,col,n" comes here, not through the
    # picture's select event. Gradio loses a second click on a picture whose first is being
    # answered (its pending state takes the click); always_last answers every last one, in order.
    ui["pick"].change(h["picked"], [*ins, ui["pick"]], comps(CLICKED), show_progress="hidden",
                      trigger_mode="always_last")
    # A book with no pages (a new photo, model or clicked patch) is filled once its pictures are painted.
    flip.filled_later(ui["book"], h["fill_book"], ins, comps(["book", "colors"]), after="#emb-pictures img")
    ui["color_by"].change(h["show_scatter"], ins, comps(SCATTER), show_progress="hidden")
    ui["dropout"].change(h["show_dropout"], ins, comps(list(DROPOUT.values())), show_progress="hidden")
