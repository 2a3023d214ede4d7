"""The Patches tab: the grid, the sequence, the top-5, the numbers (and CLIP / SigLIP's label map)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit.session import PhotoKey
from vizvit.views import common as panels, patches
from vizvit.views.flip import Flipbook

from .. import flip, kit, web
from ..kit import Ctx, safe


def _layout(ctx: Ctx) -> dict[str, gr.components.Component]:
    """The tab's components: the grid and its boxes, the top-5 and numbers, the label map, the sequence."""
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
    return dict(grid_img=grid_img, lines=lines, indices=indices, patch_info=patch_info, top5=top5,
                numbers=numbers, label_pick=label_pick, label_text=label_text, label_img=label_img,
                labels_book=labels_book, strip=strip, explanation=explanation, clicked=clicked, book=book)


def build(ctx: Ctx, tab: gr.Tab) -> None:
    c = _layout(ctx)
    (grid_img, lines, indices, patch_info, top5, numbers, label_pick, label_text, label_img, labels_book,
     strip, explanation, clicked, book) = (
        c[n] for n in ("grid_img", "lines", "indices", "patch_info", "top5", "numbers", "label_pick",
                       "label_text", "label_img", "labels_book", "strip", "explanation", "clicked", "book"))

    # Every control by the PatchesParams field it sets; every component by the Page field it shows.
    named = dict(lines=lines, indices=indices, clicked=clicked)
    shown = dict(grid=grid_img, strip=strip, top5=top5, numbers=numbers, patch_info=patch_info,
                 explanation=explanation, label_map=label_img, label_text=label_text)
    read = kit.reader(named)

    def params(v: tuple) -> patches.PatchesParams:
        return patches.PatchesParams.from_controls(read(v))

    def book_value(b: Flipbook) -> str:
        return flip.for_page("patch-grid", b, shown, named)

    def labels_value(b: Flipbook) -> str:
        return flip.for_page("label-map", b, shown, {"label": label_pick})

    @safe
    def show(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.skip(outs)
        ph = ctx.wb.handle(key)
        page = patches.show(ph, params(v))
        # The grid's rows × cols as a class: the page's keys choose a patch by it (web/a11y.js). An
        # update, not a gr.Image(...): that would encode its own file (webp) apart from the component's
        # settings, and the work ahead (kit._ahead) would not know it for the picture it is.
        cells = web.cells_class(*ph.vm.geometry.grid)
        return {**kit.values(page, shown), grid_img: gr.update(value=page.grid, elem_classes=[cells]), label_pick: gr.Dropdown(choices=page.labels, value=page.label),
                book: book_value(page.book), labels_book: None if page.label_book is None else labels_value(page.label_book)}

    @safe
    def preview(key: PhotoKey, *v: Any) -> dict:
        return {grid_img: patches.preview(ctx.wb.handle(key), params(v))}

    @safe
    def show_label(key: PhotoKey | None, label: str | None) -> dict:
        if key is None or not label:
            return kit.skip([label_img, label_text, labels_book])
        ph = ctx.wb.handle(key)
        img, text = patches.label_map(ph, label)
        return {label_img: img, label_text: text, labels_book: labels_value(patches.label_book(ph, [label], merge=True))}

    @safe
    def redraw(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.skip(redrawn)
        ch = patches.change(ctx.wb.handle(key), params(v))
        return {**kit.values(ch, shown_redrawn), book: book_value(ch.book)}

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData) -> dict:
        if key is None:
            return kit.skip([clicked])
        return {clicked: panels.clicked_patch(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])}

    ins = [ctx.key, *named.values()]
    outs = [*shown.values(), label_pick, book, labels_book]
    ctx.on_show(tab, show, ins, outs, first=grid_img)
    # The grid alone: one picture to encode, fetch and decode while the forward takes the CPU.
    ctx.on_preview(tab, preview, list(named.values()), [grid_img])
    label_pick.input(show_label, [ctx.key, label_pick], [label_img, label_text, labels_book], show_progress="hidden")
    # Controls redraw only the grid: no forward, no re-encoding of the other panels.
    shown_redrawn = dict(grid=grid_img, patch_info=patch_info, strip=strip)
    redrawn = [*shown_redrawn.values(), book]
    lines.change(redraw, ins, redrawn, show_progress="hidden", api_name="patches_view")
    indices.change(redraw, ins, redrawn, show_progress="hidden")
    grid_img.select(click, [ctx.key], clicked).then(redraw, ins, redrawn, show_progress="hidden")
