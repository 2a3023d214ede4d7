"""The inside tab's components and events."""

from __future__ import annotations

import gradio as gr

from vizvit import vocab
from vizvit.ablation import Ablation
from vizvit.errors import UserError
from vizvit.session import PhotoKey
from vizvit.views import common as panels
from vizvit.views import inside

from ..kit import Ctx, safe

def build(ctx: Ctx, tab: gr.Tab) -> None:
    wb = ctx.wb
    gr.Markdown(inside.LENS_TEXT)
    with gr.Row():
        lens_table = gr.Dataframe(headers=inside.LENS_HEADERS, interactive=False, elem_id="lens-table", scale=3,
                                  wrap=True, max_height=inside.LENS_TABLE_PX)  # every depth, no scroll box
        depth_top5 = gr.Plot(label="Top-5 of the readout at the clicked depth", elem_id="lens-top5", scale=2)
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

    @safe
    def show(key: PhotoKey | None):
        if key is None:
            return [], None, "", None, None, None, "", gr.skip(), gr.skip()
        ph = wb.handle(key)
        lp, ap_ = inside.show(ph)
        lens_out = (lp.rows, lp.figure, lp.text) if lp else ([], None, inside.NO_LENS_TEXT)
        return (*lens_out, None, ap_.grid, ap_.top5, ap_.text, inside.format_heads(key.ablation.heads),
                key.ablation.mode)

    def ablated(key: PhotoKey, ab: Ablation):
        k = inside.with_ablation(key, ab)
        return k, panels.status_line(wb.model(k.model_id), wb.analysis(k), wb.photo(k.sha1).size)

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return gr.skip(), gr.skip()
        cells, _ = inside.cell_at(wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return ablated(key, inside.toggle(key.ablation, cells)) if cells else (gr.skip(), gr.skip())

    @safe
    def typed(key: PhotoKey | None, text: str, m: str):
        if key is None:
            raise UserError("Upload a photo first.")
        return ablated(key, inside.parse_ablation(text, m, wb.model(key.model_id).geometry))

    @safe
    def depth(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        return inside.depth_top5(wb.handle(key), int(evt.index[0]))

    @safe
    def importance(key: PhotoKey | None):
        if key is None:
            raise UserError("Upload a photo first.")
        ph = wb.handle(key)
        for imp, done, total in inside.importance_steps(ph):
            yield inside.ablation_grid(ph.vm.geometry, key.ablation, imp), inside.importance_text(ph.vm, done, total, imp)

    outs = [lens_table, lens_plot, lens_text, depth_top5, grid, top5, ablate_text, heads, mode]
    ctx.on_show(tab, show, [ctx.key], outs)
    # Each change makes a new session key (the ablation is part of it); key.change redraws
    # whichever tab is open, so every tab shows the ablated model.
    grid.select(click, [ctx.key], [ctx.key, ctx.status], show_progress="hidden")
    heads.submit(typed, [ctx.key, heads, mode], [ctx.key, ctx.status])
    mode.input(typed, [ctx.key, heads, mode], [ctx.key, ctx.status])
    clear.click(typed, [ctx.key, gr.State(""), mode], [ctx.key, ctx.status])
    lens_table.select(depth, [ctx.key], depth_top5, show_progress="hidden")
    running = run_btn.click(importance, [ctx.key], [grid, importance_text])
    stop_btn.click(None, None, None, cancels=[running])
    ctx.long_work.append(running)

