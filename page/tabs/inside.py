"""The Inside tab: the logit lens, head ablation, which heads matter."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit import vocab
from vizvit.errors import UserError
from vizvit.session import PhotoKey
from vizvit.views import inside

from .. import flip, kit
from ..kit import Ctx, safe


def build(ctx: Ctx, tab: gr.Tab) -> None:
    wb = ctx.wb
    gr.Markdown(inside.LENS_TEXT)
    with gr.Row():
        lens_table = gr.Dataframe(headers=inside.LENS_HEADERS, interactive=False, elem_id="lens-table", scale=3,
                                  wrap=True, max_height=inside.LENS_TABLE_PX)  # every depth, no scroll box
        with gr.Column(scale=2):
            lens_depth = gr.Slider(0, 12, value=12, step=1, elem_id="lens-depth",
                                   label="readout depth (0 = the embedding stage), or click a row of the table")
            depth_top5 = gr.Plot(label="Top-5 of the readout at that depth", elem_id="lens-top5")
            # The readout at every depth, swapped in by the page as the slider moves (page/web/flipbook.js).
            lens_book = flip.component("lens")
    lens_text = gr.Markdown(elem_id="lens-text")
    lens_plot = gr.Plot(label="Logit lens: the final top-5 classes at each depth", elem_id="lens-plot")
    gr.Markdown(inside.ABLATE_TEXT)
    with gr.Row():
        grid = gr.Image(label="Layers × heads: click to switch heads off", interactive=False, format="png",
                        elem_id="ablate-grid")
        with gr.Column():
            with gr.Row():
                mode = gr.Radio(list(vocab.ABLATE_MODES), value="zero", label="a switched-off head's output is set to",
                                elem_id="ablate-mode")
                clear = gr.Button("all heads on", size="sm", elem_id="ablate-clear")
            heads = gr.Textbox(label="heads off, layer.head from 1 (Enter to apply)", placeholder="3.5, 7.1",
                               elem_id="ablate-heads")
            top5 = gr.Plot(label="Top-5 of the ablated model, Δ from the intact one", elem_id="ablate-top5")
            ablate_text = gr.Markdown(elem_id="ablate-text")
    gr.Markdown(inside.IMPORTANCE_TEXT)
    with gr.Row():
        run_btn = gr.Button("Which heads matter? (one forward per head)", variant="primary", elem_id="importance-run")
        stop_btn = gr.Button("Stop", elem_id="importance-stop")
    importance_text = gr.Markdown(elem_id="importance-text")
    ctx.links.update(ablate=heads, ablate_mode=mode)

    shown = dict(lens_table=lens_table, lens_plot=lens_plot, lens_text=lens_text, depth_top5=depth_top5, grid=grid,
                 top5=top5, ablate_text=ablate_text, heads=heads, mode=mode)
    # The three charts follow the heads grid on open (Plotly's first render held it back ~100 ms).
    charts = {k: shown.pop(k) for k in ("lens_plot", "depth_top5", "top5")}
    named = dict(depth=lens_depth)  # the heads off are in the key
    read = kit.reader(named)

    @safe
    def show(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty(outs, keep=(heads, mode))
        page = inside.show(wb.handle(key), inside.InsideParams.from_controls(read(v)))
        return {**kit.values(page, shown), lens_depth: gr.Slider(maximum=page.num_layers, value=page.depth),
                lens_book: flip.for_page("lens", page.lens_book, {**shown, **charts}, named)}

    @safe
    def show_charts(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.empty(list(charts.values()))
        return kit.values(inside.show(wb.handle(key), inside.InsideParams.from_controls(read(v))), charts)

    def ablated(a: inside.Ablated | None) -> dict:
        return kit.skip([ctx.key, ctx.status]) if a is None else {ctx.key: a.key, ctx.status: a.status}

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData) -> dict:
        if key is None:
            return kit.skip([ctx.key, ctx.status])
        return ablated(inside.click(wb.handle(key), evt.index[0], evt.index[1]))

    @safe
    def typed(key: PhotoKey | None, text: str, m: str) -> dict:
        if key is None:
            raise UserError("Upload a photo first.")
        return ablated(inside.typed(wb.handle(key), text, m))

    @safe
    def depth(key: PhotoKey | None, d: float) -> dict:
        if key is None:
            return {depth_top5: None}
        return {depth_top5: inside.depth_top5(wb.handle(key), int(d))}

    @safe
    def clicked_depth(evt: gr.SelectData) -> dict:
        return {lens_depth: int(evt.index[0])}  # its .change draws the readout

    def fill_lens(key: PhotoKey | None) -> dict:
        return kit.skip([lens_book]) if key is None else {
            lens_book: flip.for_page("lens", inside.lens_book(wb.handle(key)), {**shown, **charts}, named)}

    @safe
    def importance(key: PhotoKey | None, request: gr.Request = None):
        if key is None:
            raise UserError("Upload a photo first.")
        ph = wb.handle(key)
        with kit.JOBS.hold(request, "head importance") as cancel:
            for imp, done, total in inside.importance_steps(ph, cancel=cancel):
                yield {grid: inside.ablation_grid(ph.vm.geometry, key.ablation, imp),
                       importance_text: inside.importance_text(ph.vm, done, total, imp)}

    outs = [*shown.values(), lens_depth, lens_book]
    ctx.on_show(tab, show, [ctx.key, *named.values()], outs,
                then=(show_charts, [ctx.key, *named.values()], list(charts.values()), "#ablate-grid img"), first=grid)
    flip.filled_later(lens_book, fill_lens, [ctx.key], [lens_book], after="#ablate-grid img")
    # Each change makes a new session key (the ablation is part of it); key.change redraws
    # whichever tab is open, so every tab shows the ablated model.
    grid.select(click, [ctx.key], [ctx.key, ctx.status], show_progress="hidden")
    heads.submit(typed, [ctx.key, heads, mode], [ctx.key, ctx.status])
    mode.input(typed, [ctx.key, heads, mode], [ctx.key, ctx.status])
    clear.click(typed, [ctx.key, gr.State(""), mode], [ctx.key, ctx.status])
    lens_table.select(clicked_depth, None, lens_depth, show_progress="hidden")
    # A drag, a key, the number box or a clicked row (always_last: while dragging, the last depth is drawn).
    lens_depth.change(depth, [ctx.key, lens_depth], depth_top5, show_progress="hidden", trigger_mode="always_last")
    running = run_btn.click(importance, [ctx.key], [grid, importance_text], **kit.COSTLY)
    stop_btn.click(None, None, None, cancels=[running])
    ctx.long_work.append(running)
