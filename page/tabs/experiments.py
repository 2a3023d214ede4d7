"""The Experiments tab: shift, masks, the shift sweep, deletion and insertion curves."""

from __future__ import annotations

import gradio as gr

from typing import Any, Callable

from vizvit import vocab
from vizvit.errors import UserError
from vizvit.session import PhotoKey
from vizvit.views import experiments
from vizvit.views.flip import Flipbook

from .. import flip, kit
from ..kit import Ctx, safe


def build(ctx: Ctx, tab: gr.Tab) -> None:
    wb = ctx.wb
    gr.Markdown(experiments.EXPERIMENTS_TEXT)
    with gr.Row(elem_id="shift-controls"):
        dx = gr.Slider(-32, 32, value=0, step=1, label="dx: shift right (pixels)", elem_id="shift-dx")
        dy = gr.Slider(-32, 32, value=0, step=1, label="dy: shift down (pixels)", elem_id="shift-dy")
        fill = gr.Radio(list(vocab.FILLS), value="edge", label="what enters at the border",
                        elem_id="shift-fill")
    with gr.Row(elem_id="shift-pictures"):  # first on the screen in projector mode (style.css)
        shift_img = gr.Image(label="Shifted view, as the model sees it", interactive=False, format="jpeg",
                             elem_id="shift-view")
        cos_img = gr.Image(label="Patch cosine, original vs shifted",
                           interactive=False, format="jpeg", elem_id="shift-cos")
        shift_top5 = gr.Plot(label="Top-5, Δ from the unshifted photo", elem_id="shift-top5")
    shift_info = gr.Markdown(elem_id="shift-info")
    # The shifts seen so far, swapped in by the page when a slider comes back to one (page/web/flipbook.js).
    book = flip.component("shift")

    gr.Markdown("### Shift sweep: k = 0..2P pixels right, edge fill, batched")
    with gr.Row():
        sweep_btn = gr.Button("Run the shift sweep", variant="primary", elem_id="sweep-run")
        stop_btn = gr.Button("Stop", elem_id="sweep-stop")
    sweep_text = gr.Markdown(elem_id="sweep-text")
    sweep_plot = gr.Plot(label="Cosine and probability against the shift", elem_id="sweep-plot")
    sweep_table = gr.Dataframe(headers=experiments.SWEEP_HEADERS, interactive=False, elem_id="sweep-table")

    gr.Markdown("### Masks")
    gr.Markdown(experiments.MASKS_TEXT)
    with gr.Row():
        mode = gr.Radio([(vocab.MASK_MODE_LABELS.get(m, m), m) for m in vocab.MASK_MODES], value="drop",
                        label="mask mode", elem_id="mask-mode")
        percent = gr.Slider(0, 100, value=25, step=1, label="p % / k % for the buttons", elem_id="mask-percent")
    with gr.Row():
        b_clear = gr.Button("clear", size="sm", elem_id="mask-clear")
        b_invert = gr.Button("invert", size="sm", elem_id="mask-invert")
        b_random = gr.Button("random p %", size="sm", elem_id="mask-random")
        b_top = gr.Button("top k % by the map", size="sm", elem_id="mask-top")
        b_bottom = gr.Button("bottom k % by the map", size="sm", elem_id="mask-bottom")
        rank_by = gr.Dropdown(list(experiments.MASK_MAPS), value=experiments.MASK_MAPS[0], label="map (top-1 class)",
                              elem_id="mask-rank-by")
    with gr.Row():
        mask_grid = gr.Image(label="Click patches to mask them", interactive=False, format="jpeg",
                             elem_id="mask-grid")
        masked_img = gr.Image(label="What the model gets (hatched = token dropped or [MASK])", interactive=False,
                              format="jpeg", elem_id="masked-view")
        mask_top5 = gr.Plot(label="Top-5, Δ from the unmasked photo", elem_id="mask-top5")
    mask_info = gr.Markdown(elem_id="mask-info")
    mask = gr.State(())  # row-major patch ids
    # The masks seen so far, swapped in by the page when a click comes back to one; the page writes
    # the mask after each click in mask_box (the click's answer may come after the next click).
    mask_book = flip.component("mask")
    mask_box = gr.Textbox(visible="hidden", elem_id="mask-box")
    ctx.links.update(dx=dx, dy=dy, mask=mask)
    seed = gr.State(0)  # random-mask draws, one more per click

    gr.Markdown("### Faithfulness contest: deletion and insertion for every map")
    gr.Markdown(experiments.CURVES_TEXT)
    with gr.Row():
        steps = gr.Slider(2, 20, value=10, step=1, label="steps", elem_id="curves-steps")
        curve_mode = gr.Radio(list(vocab.CURVE_MODES), value="black", label="remove patches by",
                              elem_id="curves-mode")
        curves_btn = gr.Button(experiments.CONTEST_BUTTON, variant="primary", elem_id="curves-run")
    curves_text = gr.Markdown(elem_id="curves-text")
    del_plot = gr.Plot(label="Deletion (solid) and insertion (dashed), every map", elem_id="deletion-plot")
    auc_table = gr.Dataframe(headers=experiments.CURVES_HEADERS, interactive=False, elem_id="auc-table")

    # Every control by the ExperimentsParams field it sets; every component by the field it shows.
    named = dict(dx=dx, dy=dy, fill=fill, mask=mask, mode=mode)
    ctx.controls[tab.id] = named  # a lesson step sets them (page/tabs/lesson.py)
    shown_shift = dict(view=shift_img, cosine=cos_img, cosine_text=shift_info, top5=shift_top5)  # ShiftPanel
    shown_mask = dict(grid=mask_grid, masked=masked_img, text=mask_info, top5=mask_top5)  # MaskPanel
    shown = dict(shift_view=shift_img, shift_cos=cos_img, shift_info=shift_info,
                 mask_grid=mask_grid, masked_view=masked_img, mask_info=mask_info)
    # The two top-5 charts follow the pictures on open (Plotly's first render held them back).
    shown_charts = dict(shift_top5=shift_top5, mask_top5=mask_top5)
    read = kit.reader(named)
    ins = [ctx.key, *named.values()]
    shift_outs, mask_outs = [*shown_shift.values(), book], [*shown_mask.values(), mask_book]

    # A shift or mask the page holds no pages for is asked for over plain HTTP (flip.Fetcher) and
    # drawn about one forward after the move; the event then goes to Gradio for the rest.
    shift_fetch = flip.Fetcher("shift", wb, experiments.shift_book_at, shown_shift, named)
    mask_fetch = flip.Fetcher("mask", wb, experiments.mask_book_at, {**shown_mask, "box": mask_box}, named)
    ctx.routes.extend([shift_fetch.route(), mask_fetch.route()])

    def book_value(b: Flipbook, key: PhotoKey) -> str:
        return shift_fetch.value(b, key)

    def mask_value(b: Flipbook, key: PhotoKey) -> str:
        return mask_fetch.value(b, key)

    def params(v: tuple, **changed: Any) -> experiments.ExperimentsParams:
        return experiments.ExperimentsParams.from_controls({**read(v), **changed})

    @safe
    def show(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty(outs, keep=(dx, dy))
        page = experiments.show(wb.handle(key), params(v))
        lo, hi = page.shift_limits
        return {**kit.values(page, shown), dx: gr.update(minimum=lo, maximum=hi), dy: gr.update(minimum=lo, maximum=hi),
                book: book_value(page.shift_book, key), mask_book: mask_value(page.mask_book, key)}

    @safe
    def show_charts(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty(list(shown_charts.values()))
        return kit.values(experiments.show(wb.handle(key), params(v)), shown_charts)  # cached: ~10 ms again

    @safe
    def show_shift(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty(shift_outs)
        p = params(v)
        panel = experiments.shift_panel(wb.handle(key), p.dx, p.dy, p.fill)
        return {**kit.values(panel, shown_shift), book: book_value(panel.book, key)}

    def mask_views(key: PhotoKey, m: tuple[int, ...], md: str, clicked: bool = False) -> dict:
        ph = wb.handle(key)
        panel = experiments.mask_panel(ph, m, md)
        return {**kit.values(panel, shown_mask), mask_book: mask_value(experiments.mask_book(ph, m, md, panel, clicked), key)}

    @safe
    def show_mask(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty(mask_outs)
        p = params(v)
        return mask_views(key, p.mask, p.mode)

    # A toggle or a mask button answers in ONE event (the new mask and its views), not a state
    # event and a .then(): each event costs the page a queue round trip and Gradio's own work.
    @safe
    def click(key: PhotoKey | None, m: tuple[int, ...], md: str, written: str, evt: gr.SelectData) -> dict:
        if key is None:
            return kit.skip([mask, *mask_outs])
        ph = wb.handle(key)
        # The page's own mask after this click, if it wrote one (it has seen every click before it).
        new = experiments.page_mask(written, ph.vm.geometry)
        m = experiments.toggle_at(ph, m, evt.index[0], evt.index[1]) if new is None else new
        return {mask: m, **mask_views(key, m, md, clicked=True)}

    def action(name: str) -> Callable:
        @safe
        def run(key: PhotoKey | None, m: tuple[int, ...], pct: float, s: int, md: str, by: str) -> dict:
            if key is None:
                return kit.skip([mask, seed, *mask_outs])
            m = experiments.mask_action(wb.handle(key), m, name, pct, s, by)
            return {mask: m, seed: s + (name == "random"), **mask_views(key, m, md)}

        return run

    @safe
    def sweep(key: PhotoKey | None, request: gr.Request = None):
        if key is None:
            raise UserError("Upload a photo first.")
        with kit.JOBS.hold(request, "shift sweep") as cancel:
            for p in experiments.sweep_progress(wb.handle(key), cancel=cancel):
                yield {sweep_plot: p.figure, sweep_table: p.table, sweep_text: p.text}

    @safe
    def curves(key: PhotoKey | None, n: int, md: str, request: gr.Request = None):
        if key is None:
            raise UserError("Upload a photo first.")
        with kit.JOBS.hold(request, "deletion curves") as cancel:
            for p in experiments.curves_progress(wb.handle(key), int(n), md, cancel=cancel):
                if p.chart is None:  # only the news that work has started
                    yield {curves_text: p.text}
                else:
                    yield {del_plot: p.chart, auc_table: p.table, curves_text: p.text}

    outs = [*shown.values(), dx, dy, book, mask_book]
    ctx.on_show(tab, show, ins, outs, then=(show_charts, ins, list(shown_charts.values()), "#mask-grid img"), first=mask_grid)
    # input (user moves or types), not change: on_show's range update must not re-run it.
    # always_last: while dragging, one forward in flight, then the latest value.
    for ev in (dx.input, dy.input, fill.input):
        ev(show_shift, ins, shift_outs, show_progress="hidden", trigger_mode="always_last")

    mode.change(show_mask, ins, mask_outs, show_progress="hidden")
    # always_last: a click while one is answered is sent after it (Gradio's default drops it);
    # clicks in between are carried by the mask the page writes in mask_box.
    mask_grid.select(click, [ctx.key, mask, mode, mask_box], [mask, *mask_outs], show_progress="hidden",
                     trigger_mode="always_last")
    for btn, name in ((b_clear, "clear"), (b_invert, "invert"), (b_random, "random"), (b_top, "top"),
                      (b_bottom, "bottom")):
        btn.click(action(name), [ctx.key, mask, percent, seed, mode, rank_by], [mask, seed, *mask_outs],
                  show_progress="minimal")  # "top"/"bottom" may run the model

    running = sweep_btn.click(sweep, [ctx.key], [sweep_plot, sweep_table, sweep_text], **kit.COSTLY)
    curving = curves_btn.click(curves, [ctx.key, steps, curve_mode], [del_plot, auc_table, curves_text], **kit.COSTLY)
    stop_btn.click(None, None, None, cancels=[running, curving])
    ctx.long_work.extend([running, curving])
