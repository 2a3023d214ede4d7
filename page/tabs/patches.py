"""The Patches tab: the grid, the sequence, the top-5, the numbers (and CLIP / SigLIP's label map)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit.session import PhotoKey, Workbench
from vizvit.views import common as panels, patches
from vizvit.views.flip import Flipbook

from .. import flip, kit, web
from ..kit import Ctx

# The PatchesParams fields the tab's controls set, in the order its events list them.
CONTROLS = ["lines", "indices", "clicked"]
# The Page fields the tab shows (the page names are the fields' names).
SHOWN = ["grid", "strip", "top5", "numbers", "patch_info", "explanation", "label_map", "label_text"]
OPENED = [*SHOWN, "label_pick", "book", "labels_book"]
LABEL = ["label_map", "label_text", "labels_book"]  # a label picked
SHOWN_REDRAWN = ["grid", "patch_info", "strip"]  # a Change's fields shown: controls redraw only the grid
REDRAWN = [*SHOWN_REDRAWN, "book"]
Ui = dict[str, gr.components.Component]


def params(v: tuple) -> patches.PatchesParams:
    """The controls' values (in CONTROLS order) as PatchesParams."""
    return patches.PatchesParams.from_controls(dict(zip(CONTROLS, v)))


def book_value(ui: Ui, b: Flipbook) -> str:
    """The grid's book as the page reads it (page/web/flipbook.js)."""
    return flip.for_page("patch-grid", b, {n: ui[n] for n in SHOWN}, {n: ui[n] for n in CONTROLS})


def labels_value(ui: Ui, b: Flipbook) -> str:
    """The label maps' book as the page reads it."""
    return flip.for_page("label-map", b, {n: ui[n] for n in SHOWN}, {"label": ui["label_pick"]})


# -- handlers: explicit values in, {name: value} out (page names: CONTROLS, OPENED, LABEL, REDRAWN) -----------
def show(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """The tab opened (or a new photo or model while open): every panel, the label menu, both books."""
    if key is None:
        return kit.skip(OPENED)
    ph = wb.handle(key)
    page = patches.show(ph, params(v))
    # The grid's rows × cols as a class: the page's keys choose a patch by it (web/a11y.js). An
    # update, not a gr.Image(...): that would encode its own file (webp) apart from the component's
    # settings, and the work ahead (kit._ahead) would not know it for the picture it is.
    cells = web.cells_class(*ph.vm.geometry.grid)
    return {**kit.values(page, {n: n for n in SHOWN}), "grid": gr.update(value=page.grid, elem_classes=[cells]),
            "label_pick": gr.Dropdown(choices=page.labels, value=page.label), "book": book_value(ui, page.book),
            "labels_book": None if page.label_book is None else labels_value(ui, page.label_book)}


def preview(wb: Workbench, key: PhotoKey, *v: Any) -> dict:
    """A new photo's grid before its forward pass (Ctx.on_preview)."""
    return {"grid": patches.preview(wb.handle(key), params(v))}


def show_label(wb: Workbench, ui: Ui, key: PhotoKey | None, label: str | None) -> dict:
    """A label picked (CLIP / SigLIP): its map, its text, and its page in the label maps' book."""
    if key is None or not label:
        return kit.skip(LABEL)
    ph = wb.handle(key)
    img, text = patches.label_map(ph, label)
    return {"label_map": img, "label_text": text,
            "labels_book": labels_value(ui, patches.label_book(ph, [label], merge=True))}


def redraw(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """A box ticked or a patch clicked: the grid, its text and the sequence (no forward)."""
    if key is None:
        return kit.skip(REDRAWN)
    ch = patches.change(wb.handle(key), params(v))
    return {**kit.values(ch, {n: n for n in SHOWN_REDRAWN}), "book": book_value(ui, ch.book)}


def click(wb: Workbench, key: PhotoKey | None, evt: gr.SelectData) -> dict:
    """A click on the grid: the patch under the pixel clicked, as (row, col)."""
    if key is None:
        return kit.skip(["clicked"])
    return {"clicked": panels.clicked_patch(wb.model(key.model_id).geometry, *kit.click_at(evt))}


# -- the page: components by name, then the wiring ---------------------------------------------------
def _layout(ctx: Ctx) -> dict[str, gr.components.Component]:
    """The tab's components by page name: the grid and its boxes, the top-5 and numbers, the label map,
    the sequence."""
    with gr.Row():
        with gr.Column(scale=3):
            grid_img = gr.Image(label="What the model sees: the patch grid (click a patch)",
                                interactive=False, format="jpeg", elem_id="patch-grid")
            with gr.Row():
                lines = gr.Checkbox(value=True, label="grid lines", elem_id="patch-lines")
                indices = gr.Checkbox(value=False, label="patch numbers (from 0)", elem_id="patch-indices")
            patch_info = gr.Markdown(elem_id="patch-info")
        with gr.Column(scale=2):
            top5 = gr.Plot(label="Top-5 predictions", elem_id="top5")
            numbers = gr.Dataframe(headers=["what", "value"], label="Numbers", interactive=False,
                                   elem_id="numbers", wrap=True, column_widths=["45%", "55%"])
    with gr.Accordion("Which patches match this label (CLIP / SigLIP)", open=True, elem_id="label-map-box",
                      elem_classes=[kit.ZERO_SHOT_ONLY]) as label_box:
        ctx.zero_shot_only.append(label_box)
        with gr.Row():
            label_pick = gr.Dropdown([], label="label", elem_id="label-pick", scale=1)
            label_text = gr.Markdown(elem_id="label-map-text")
        label_img = gr.Image(label="cosine of each patch token with the label's text embedding", interactive=False,
                             format="jpeg", elem_id="label-map")
        labels_book = flip.component("label-map")  # the top-5 labels' maps, and each one picked since
    strip = gr.Image(label="The sequence it becomes: token 0 is [CLS], then patch k is token k + 1, one grid "
                           "row per line (numbers: first token of the line)",
                     interactive=False, format="jpeg", elem_id="sequence-strip")
    gr.Markdown(patches.PATCHES_TEXT)
    explanation = gr.Markdown(elem_id="patches-numbers")
    clicked = gr.State(None)  # (row, col)
    # The grid with lines and numbers on and off, swapped in by the page as the boxes are ticked (page/web/flipbook.js).
    book = flip.component("patch-grid")
    return dict(grid=grid_img, lines=lines, indices=indices, patch_info=patch_info, top5=top5, numbers=numbers,
                label_pick=label_pick, label_text=label_text, label_map=label_img, labels_book=labels_book,
                strip=strip, explanation=explanation, clicked=clicked, book=book)


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = _layout(ctx)
    ins = [ctx.key, *(ui[n] for n in CONTROLS)]
    ctx.on_show(tab, kit.answer(show, ui, ctx.wb, ui), ins, [ui[n] for n in OPENED], first=ui["grid"])
    # The grid alone: one picture to encode, fetch and decode while the forward takes the CPU.
    ctx.on_preview(tab, kit.answer(preview, ui, ctx.wb), [ui[n] for n in CONTROLS], [ui["grid"]])
    ui["label_pick"].input(kit.answer(show_label, ui, ctx.wb, ui), [ctx.key, ui["label_pick"]], [ui[n] for n in LABEL],
                           show_progress="hidden")
    # Controls redraw only the grid: no forward, no re-encoding of the other panels. One handler
    # object for the three events: an event's concurrency group is its fn's id.
    redraw_ = kit.answer(redraw, ui, ctx.wb, ui)
    redrawn = [ui[n] for n in REDRAWN]
    ui["lines"].change(redraw_, ins, redrawn, show_progress="hidden", api_name="patches_view")
    ui["indices"].change(redraw_, ins, redrawn, show_progress="hidden")
    ui["grid"].select(kit.answer(click, ui, ctx.wb), [ctx.key], ui["clicked"]).then(
        redraw_, ins, redrawn, show_progress="hidden")
