"""The Inside tab: the logit lens, head ablation, which heads matter."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit import vocab
from vizvit.errors import UserError
from vizvit.readings import heads
from vizvit.session import PhotoKey, Workbench
from vizvit.views import inside

from .. import flip, jobs, kit, web
from ..kit import Ctx

# The InsideParams fields the tab's controls set, in the order its events list them (the heads off are in the key).
CONTROLS = ["depth"]
# The Page fields the tab shows on open; the three charts follow the heads grid (Plotly's first
# render held it back ~100 ms).
SHOWN = ["lens_table", "lens_text", "grid", "ablate_text", "heads", "mode"]
CHARTS = ["lens_plot", "depth_top5", "top5"]
# importance_text: the photo's finished "which heads matter" run, else empty (the last photo's stayed)
OPENED = [*SHOWN, "depth", "lens_book", "importance_text"]
ABLATED = ["key", "status"]  # an ablation answers a new session key (and its line): every tab redraws


def lens_book(ui: dict[str, gr.components.Component], book: Any) -> str:
    """The lens book as the page reads it: every readout depth's pictures, by the tab's components."""
    return flip.for_page("lens", book, {n: ui[n] for n in [*SHOWN, *CHARTS]}, {n: ui[n] for n in CONTROLS})


# -- handlers: explicit values in, {name: value} out (page names: the keys of _layout's dict) ---------
def show(wb: Workbench, ui: dict, key: PhotoKey | None, *v: Any) -> dict[str, Any]:
    """The tab opened (or a new photo, model or ablation while open): the lens, the grid, the depth slider's range."""
    if key is None:
        return kit.skip(OPENED)
    ph = wb.handle(key)
    page = inside.show(ph, inside.InsideParams.from_controls(dict(zip(CONTROLS, v))))
    g = ph.vm.geometry  # a head switched by the arrow keys and Enter too (web/a11y.js)
    # Its label says what the cells show: each head's importance after a run, or only the switch-off state.
    grid = kit.with_cells(page.grid, g.num_layers, g.num_heads, (inside.CELL, inside.CELL), (inside.LEFT, inside.TOP),
                          label=page.grid_label)
    return {**{n: getattr(page, n) for n in SHOWN}, "grid": grid, "importance_text": page.importance_text,
            "depth": gr.Slider(maximum=page.num_layers, value=page.depth), "lens_book": lens_book(ui, page.lens_book)}


def show_charts(wb: Workbench, key: PhotoKey | None, *v: Any) -> dict[str, Any]:
    """The three charts, after the heads grid is painted (the page is cached: no second forward)."""
    if key is None:
        return kit.skip(CHARTS)
    page = inside.show(wb.handle(key), inside.InsideParams.from_controls(dict(zip(CONTROLS, v))))
    return {n: getattr(page, n) for n in CHARTS}


def ablated(a: inside.Ablated | None) -> dict[str, Any]:
    """The new key and status line, or nothing when the ablation did not change."""
    return {n: gr.skip() for n in ABLATED} if a is None else {"key": a.key, "status": a.status}


def click(wb: Workbench, key: PhotoKey | None, evt: gr.SelectData) -> dict[str, Any]:
    """A click on the layers × heads grid switches the head under it off (or on again)."""
    if key is None:
        return {n: gr.skip() for n in ABLATED}
    return ablated(inside.click(wb.handle(key), *kit.click_at(evt)))


def typed(wb: Workbench, key: PhotoKey | None, text: str, m: str) -> dict[str, Any]:
    """The heads typed as layer.head (or none: all heads on) and the ablation mode."""
    if key is None:
        raise UserError("Upload a photo first.")
    return ablated(inside.typed(wb.handle(key), text, m))


def depth(wb: Workbench, key: PhotoKey | None, d: float) -> dict[str, Any]:
    """The top-5 of the readout at depth d."""
    if key is None:
        return kit.skip(["depth_top5"])
    return {"depth_top5": inside.depth_top5(wb.handle(key), int(d))}


def clicked_depth(evt: gr.SelectData) -> dict[str, Any]:
    """A clicked row of the lens table sets the depth (its .change draws the readout)."""
    return {"depth": kit.click_at(evt)[0]}


def fill_lens(wb: Workbench, ui: dict, key: PhotoKey | None) -> dict[str, Any]:
    """The lens book's pages, once the grid is painted (the tab's first answer stays fast)."""
    return {"lens_book": gr.skip()} if key is None else {"lens_book": lens_book(ui, inside.lens_book(wb.handle(key)))}


def importance(wb: Workbench, key: PhotoKey | None, request: gr.Request = None):
    """Which heads matter: one forward per head, the grid and the text streamed as it goes (a stoppable job)."""
    if key is None:
        raise UserError("Upload a photo first.")
    ph = wb.handle(key)
    with jobs.JOBS.line(request, "head importance", replace=True) as ticket:
        for ahead in ticket.waiting():  # its place in the fair line (vizvit.service.jobs), until its turn
            yield {"importance_text": jobs.waiting_text("head importance", ahead)}
        ab = key.ablation  # its mode is the radio's: each head is switched off the way the student chose
        for imp, done, total in heads.importance_steps(ph, cancel=ticket.cancel, mode=ab.mode):
            grid = inside.ablation_grid(ph.vm.geometry, ab, imp)
            yield {"grid": gr.update(value=grid, label=inside.grid_label(True)),
                   "importance_text": inside.importance_text(ph.vm, done, total, imp, len(ab.heads), ab.mode,
                                                                     inside.intact_top1(ph))}


# -- the page: components by name, then the wiring ---------
def _layout() -> dict[str, gr.components.Component]:
    """The lens, the ablation grid and its controls, the importance run."""
    gr.Markdown(inside.LENS_TEXT)
    with gr.Row():
        lens_table = gr.Dataframe(headers=inside.LENS_HEADERS, interactive=False, elem_id="lens-table", scale=3,
                                  wrap=True, max_height=inside.LENS_TABLE_PX,  # every depth, no scroll box
                                  # shares, not content widths: a phone's 382 px held 3 of 5 columns (489 px)
                                  column_widths=["20%", "26%", "16%", "19%", "19%"])
        with gr.Column(scale=2):
            lens_depth = kit.ClampedSlider(0, 12, value=12, step=1, elem_id="lens-depth",
                                           label="readout depth (0 = the embedding stage), or click a row of the table")
            depth_top5 = gr.Plot(label="Top-5 of the readout at that depth", elem_id="lens-top5")
            # The readout at every depth, swapped in by the page as the slider moves (page/web/flipbook.js).
            book = flip.component("lens")
    lens_text = gr.Markdown(elem_id="lens-text")
    lens_plot = gr.Plot(label="Logit lens: the final top-5 classes at each depth", elem_id="lens-plot")
    gr.Markdown(inside.ABLATE_TEXT)
    with gr.Row():
        grid = gr.Image(label=inside.GRID_LABEL, interactive=False, format="png",
                        elem_id="ablate-grid")
        with gr.Column():
            with gr.Row():
                mode = gr.Radio(list(vocab.ABLATE_MODES), value="zero", label="a switched-off head's output is set to",
                                elem_id="ablate-mode", elem_classes=[web.NEEDS_PHOTO])
                clear = gr.Button("all heads on", size="sm", elem_id="ablate-clear", elem_classes=[web.NEEDS_PHOTO])
            heads = gr.Textbox(label="heads off, layer.head from 1 (Enter to apply)",
                               placeholder=inside.HEADS_TYPED,
                               elem_id="ablate-heads", elem_classes=[web.NEEDS_PHOTO])
            top5 = gr.Plot(label="Top-5 of the ablated model, Δ from the intact one", elem_id="ablate-top5")
            ablate_text = gr.Markdown(elem_id="ablate-text")
    gr.Markdown(inside.IMPORTANCE_TEXT)
    with gr.Row():
        run_btn = gr.Button("Which heads matter? (one forward per head)", variant="primary", elem_id="importance-run",
                            elem_classes=[web.NEEDS_PHOTO])
        stop_btn = gr.Button("Stop", elem_id="importance-stop")
    importance_text = gr.Markdown(elem_id="importance-text")
    return dict(lens_table=lens_table, depth=lens_depth, depth_top5=depth_top5, lens_book=book, lens_text=lens_text,
                lens_plot=lens_plot, grid=grid, mode=mode, clear=clear, heads=heads, top5=top5,
                ablate_text=ablate_text, run_btn=run_btn, stop_btn=stop_btn, importance_text=importance_text)


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = {**_layout(), "key": ctx.key, "status": ctx.status}
    ctx.links.update(ablate=ui["heads"], ablate_mode=ui["mode"])
    wb, key, ablate = ctx.wb, ctx.key, [ctx.key, ctx.status]
    ins = [key, *(ui[n] for n in CONTROLS)]
    ctx.on_show(tab, kit.answer(show, ui, wb, ui), ins, [ui[n] for n in OPENED],
                then=(kit.answer(show_charts, ui, wb), ins, [ui[n] for n in CHARTS], "#ablate-grid img"),
                first=ui["grid"])
    flip.filled_later(ui["lens_book"], kit.answer(fill_lens, ui, wb, ui), [key], [ui["lens_book"]],
                      after="#ablate-grid img")
    # Each change makes a new session key (the ablation is part of it); key.change redraws
    # whichever tab is open, so every tab shows the ablated model.
    ui["grid"].select(kit.answer(click, ui, wb), [key], ablate, show_progress="hidden")
    typed_ = kit.answer(typed, ui, wb)
    ui["heads"].submit(typed_, [key, ui["heads"], ui["mode"]], ablate)
    ui["mode"].input(typed_, [key, ui["heads"], ui["mode"]], ablate)
    ui["clear"].click(typed_, [key, gr.State(""), ui["mode"]], ablate)
    ui["lens_table"].select(kit.answer(clicked_depth, ui), None, ui["depth"], show_progress="hidden")
    # A drag, a key, the number box or a clicked row (always_last: while dragging, the last depth is drawn).
    ui["depth"].change(kit.answer(depth, ui, wb), [key, ui["depth"]], ui["depth_top5"], show_progress="hidden",
                       trigger_mode="always_last")
    running = ui["run_btn"].click(kit.answer(importance, ui, wb), [key], [ui["grid"], ui["importance_text"]],
                                  **jobs.COSTLY)
    ui["stop_btn"].click(None, None, None, cancels=[running])
    ctx.long_work.append(running)
