"""The Experiments tab: shift, masks, the shift sweep, deletion and insertion curves."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit import vocab
from vizvit.errors import UserError
from vizvit.readings import masks
from vizvit.session import PhotoKey, Workbench
from vizvit.views import experiments

from .. import flip, ids, jobs, kit, web
from ..kit import Ctx

# The ExperimentsParams fields the tab's controls set, in the order its events list them.
CONTROLS = ["dx", "dy", "fill", "mask", "mode"]
# A ShiftPanel's and a MaskPanel's field -> its page name.
SHIFT = {"view": "shift_view", "cosine": "shift_cos", "cosine_text": "shift_info", "top5": "shift_top5"}
MASK = {"grid": "mask_grid", "masked": "masked_view", "text": "mask_info", "top5": "mask_top5"}
SHOWN = ["shift_view", "shift_cos", "shift_info", "mask_grid", "masked_view", "mask_info"]  # Page fields shown on open
CHARTS = ["shift_top5", "mask_top5"]  # they follow the pictures on open (Plotly's first render held them back)
SWEEP = ["sweep_plot", "sweep_table", "sweep_text"]
SWEEP_OUT = [*SWEEP, "sweep_stale", "sweep_ran"]  # a sweep run's: its panels, the line over it, its fill
CURVES = ["del_plot", "auc_table", "curves_text"]
# Opened for a photo, the sweep and contest panels show that photo's (cached) runs or say none was run:
# the previous photo's stayed. The contest's steps and fill name the cached run (ExperimentsParams).
# Shares of the width, so a phone's 380 px holds every column, each as wide as its longest word or number in
# the phone's type (style.css; Chromium's sans here): the header "p(unshifted" needs ~70 px, "insertion" ~57,
# the cell "Egyptian" ~55. A CNN adds the sweep's eighth column, "CNN p(top-1)": eight do not all fit a phone.
SWEEP_WIDTHS = ["10%", "14%", "12.5%", "13.5%", "15.5%", "12.5%", "22%"]
SWEEP_WIDTHS_CNN = ["9%", "12%", "11%", "12%", "14%", "11%", "17%", "14%"]
CURVES_WIDTHS = ["8%", "17.5%", "14%", "15.5%", "15.5%", "14%", "15.5%"]
OPENED = [*SHOWN, "dx", "dy", "book", "mask_book", "mask_shown", *SWEEP_OUT, *CURVES, "curves_cost"]
SHOW_CONTROLS = [*CONTROLS, "steps", "curve_mode"]  # what the tab's show reads (the contest's two settings too)
SHIFT_OUT = [*SHIFT.values(), "book"]
MASK_OUT = [*MASK.values(), "mask_book", "mask_shown"]  # mask_shown: the mode the readout is for
MASK_BUTTONS = ("clear", "invert", "random", "top", "bottom")  # masks.mask_action's names, in the row's order
CONTEST = ["steps", "curve_mode", "contest_ran"]  # what contest_stale reads, after the key
STALE = ["curves_stale"]


def params(v: tuple, **changed: Any) -> experiments.ExperimentsParams:
    """The controls' values (in CONTROLS order) as ExperimentsParams, with `changed` fields replaced."""
    return experiments.ExperimentsParams.from_controls({**dict(zip(CONTROLS, v)), **changed})


# -- handlers: explicit values in, {name: value} out (page names: the keys of the _layout dicts) ---------
# `fetch`: the tab's two flip.Fetchers by book ("shift", "mask"); a book's value names the photo by their token.
def show(wb: Workbench, fetch: dict[str, flip.Fetcher], key: PhotoKey | None, *v: Any) -> dict[str, Any]:
    """The tab opened (or a new photo or model while open): the pictures, both books, the shift range, and
    this photo's own sweep and contest (cached runs, else a line that none was run): the contest then on show
    is the one for these settings, or none, so no line says it is old. v: the SHOW_CONTROLS' values."""
    if key is None:
        return kit.skip([*OPENED, *STALE, "contest_ran"])
    ph = wb.handle(key)
    p = experiments.ExperimentsParams.from_controls(dict(zip(SHOW_CONTROLS, v)))
    page = experiments.show(ph, p)
    lo, hi = page.shift_limits
    sw, cu = page.sweep, page.curves
    ran = page.contest_ran  # a contest run before attention flow was computed: shown, with its line
    return {**{n: getattr(page, n) for n in SHOWN},
            "sweep_plot": sw.figure, "sweep_table": sw.table, "sweep_text": sw.text,
            "sweep_stale": "", "sweep_ran": page.sweep_ran,  # the sweep on show is the tab's fill's, or none
            "del_plot": cu.chart, "auc_table": cu.table, "curves_text": cu.text,
            "mask_grid": kit.patch_cells(page.mask_grid, ph.vm.geometry),  # keys toggle a patch too (web/a11y.js)
            "dx": gr.update(minimum=lo, maximum=hi),
            "dy": gr.update(minimum=lo, maximum=hi), "book": fetch["shift"].value(page.shift_book, key),
            "mask_book": fetch["mask"].value(page.mask_book, key), "mask_shown": p.mode,
            "curves_stale": experiments.contest_stale(ran, experiments.contest_run(ph, p.steps, p.curve_mode)),
            "contest_ran": ran, "curves_cost": experiments.contest_cost_of(ph, p.steps)}


def contest_cost(wb: Workbench, key: PhotoKey | None, steps: float) -> dict[str, Any]:
    """The line under the contest's button at these steps: its views and their time at this server's last forward.
    A stats read: no model work."""
    if key is None:
        return {"curves_cost": experiments.contest_cost(int(steps), wb.forwards.stats().image_s)}
    return {"curves_cost": experiments.contest_cost_of(wb.handle(key), int(steps))}


def contest_stale(wb: Workbench, key: PhotoKey | None, steps: float, mode: str,
                  ran: experiments.ContestRun | None) -> dict[str, Any]:
    """The line that says the contest on show is for other settings (its steps, fill or photo) or ranks fewer
    maps than there are now (attention flow computed since), or none. A cache lookup: no model work."""
    now = (experiments.ContestRun(None, int(steps), mode) if key is None
           else experiments.contest_run(wb.handle(key), steps, mode))
    return {"curves_stale": experiments.contest_stale(ran, now)}


def sweep_stale(fill: str, ran: str | None) -> dict[str, Any]:
    """The line that says the sweep on show ran with another fill than the control's now, or none (as contest_stale
    says it of the contest). A comparison: no model work."""
    return {"sweep_stale": experiments.sweep_stale(ran, fill)}


def show_charts(wb: Workbench, key: PhotoKey | None, *v: Any) -> dict[str, Any]:
    """The two top-5 charts, after the mask grid is painted (the page is cached: ~10 ms again)."""
    if key is None:
        return kit.skip(CHARTS)
    page = experiments.show(wb.handle(key), params(v))
    return {n: getattr(page, n) for n in CHARTS}


def show_shift(wb: Workbench, fetch: dict[str, flip.Fetcher], key: PhotoKey | None, *v: Any) -> dict[str, Any]:
    """A shift or fill change: the shifted view, the patch cosine, the top-5 and the shift book."""
    if key is None:
        return kit.skip(SHIFT_OUT)
    p = params(v)
    panel = experiments.shift_panel(wb.handle(key), p.dx, p.dy, p.fill)
    return {**{n: getattr(panel, f) for f, n in SHIFT.items()}, "book": fetch["shift"].value(panel.book, key)}


def mask_views(wb: Workbench, fetch: dict[str, flip.Fetcher], key: PhotoKey, m: tuple[int, ...], md: str,
               clicked: bool = False) -> dict[str, Any]:
    """The mask m's grid, masked view, text, top-5 and book (clicked: the book a click answers)."""
    ph = wb.handle(key)
    panel = experiments.mask_panel(ph, m, md)
    book = experiments.mask_book(ph, m, md, panel, clicked)
    return {**{n: getattr(panel, f) for f, n in MASK.items()}, "mask_book": fetch["mask"].value(book, key),
            "mask_shown": md}


def show_mask(wb: Workbench, fetch: dict[str, flip.Fetcher], key: PhotoKey | None, *v: Any) -> dict[str, Any]:
    """A mask mode change: the mask's views again."""
    if key is None:
        return kit.skip(MASK_OUT)
    p = params(v)
    return mask_views(wb, fetch, key, p.mask, p.mode)


def pick_mode(wb: Workbench, fetch: dict[str, flip.Fetcher], key: PhotoKey | None, shown: str,
              *v: Any) -> dict[str, Any]:
    """The mask mode radio moved. A mode refused for this mask (drop with every patch masked; [MASK] in a
    family without one) says why and puts the radio back on `shown`, the mode the readout is for: a refusal
    that only raised left the radio on the refused mode beside the other mode's readout."""
    try:
        return show_mask(wb, fetch, key, *v)
    except UserError as e:
        picked = params(v).mode
        if picked == shown:  # nothing to go back to (a link or a lesson step set it): the refusal alone
            raise
        gr.Warning(str(e))
        # The radio's change then answers for `shown` again: the same pictures, from the cache.
        return {**kit.skip(MASK_OUT), "mode": shown}


# A toggle or a mask button answers in ONE event (the new mask and its views), not a state
# event and a .then(): each event costs the page a queue round trip and Gradio's own work.
def click(wb: Workbench, fetch: dict[str, flip.Fetcher], key: PhotoKey | None, m: tuple[int, ...], md: str,
          written: str, evt: gr.SelectData) -> dict[str, Any]:
    """A click on the mask grid: the page's own mask after it if it wrote one, else the patch under it toggled."""
    if key is None:
        return {n: gr.skip() for n in ["mask", *MASK_OUT]}
    ph = wb.handle(key)
    # The page's own mask after this click, if it wrote one (it has seen every click before it).
    new = experiments.page_mask(written, ph.vm.geometry)
    m = experiments.toggle_at(ph, m, *kit.click_at(evt)) if new is None else new
    return {"mask": m, **mask_views(wb, fetch, key, m, md, clicked=True)}


# Named run: the page's API names (run, run_1, ...) stay as they were.
def run(wb: Workbench, fetch: dict[str, flip.Fetcher], name: str, key: PhotoKey | None, m: tuple[int, ...],
        pct: float, s: int, md: str, by: str) -> dict[str, Any]:
    """The mask button `name` (MASK_BUTTONS): the new mask, the random draws' seed (one more per random), the views."""
    if key is None:
        return {n: gr.skip() for n in ["mask", "seed", *MASK_OUT]}
    m = masks.mask_action(wb.handle(key), m, name, pct, s, by)
    return {"mask": m, "seed": s + (name == "random"), **mask_views(wb, fetch, key, m, md)}


def sweep(wb: Workbench, key: PhotoKey | None, fill: str = "edge", request: gr.Request = None):
    """The shift sweep under the fill the shift controls show, streamed as it goes (a stoppable job). From its first
    panel on, the sweep on show is this one: its fill is kept (sweep_ran) and the line that said the one before was
    for another fill goes, once (a fill moved while it runs is said again at its end: build)."""
    if key is None:
        raise UserError("Upload a photo first.")
    with jobs.JOBS.line(request, "shift sweep", replace=True) as ticket:
        for ahead in ticket.waiting():  # its place in the fair line (vizvit.service.jobs), until its turn
            yield {"sweep_text": jobs.waiting_text("shift sweep", ahead)}
        for i, p in enumerate(experiments.sweep_progress(wb.handle(key), cancel=ticket.cancel, fill=fill)):
            cleared = {} if i else {"sweep_stale": ""}
            yield {"sweep_plot": p.figure, "sweep_table": p.table, "sweep_text": p.text, "sweep_ran": fill, **cleared}


def curves(wb: Workbench, key: PhotoKey | None, n: int, md: str, request: gr.Request = None):
    """Deletion and insertion curves for every map, streamed as they go (a stoppable job). From its first chart
    on, the contest on show is this one: what it ran with is kept (contest_ran), and the line that said the one
    before was old goes. Only then: a setting moved while it runs writes the line again (contest_stale), and
    each later chart cleared it, so the run's end showed it current for settings it did not run with."""
    if key is None:
        raise UserError("Upload a photo first.")
    with jobs.JOBS.line(request, "deletion curves", replace=True) as ticket:
        for ahead in ticket.waiting():
            yield {"curves_text": jobs.waiting_text("deletion curves", ahead)}
        ph = wb.handle(key)
        ran = experiments.contest_run(ph, n, md)  # the maps computed as it starts are the maps it ranks
        first = True
        for p in experiments.curves_progress(ph, int(n), md, cancel=ticket.cancel):
            if p.chart is None:  # only the news that work has started
                yield {"curves_text": p.text}
            else:
                cleared = {"curves_stale": ""} if first else {}
                yield {"del_plot": p.chart, "auc_table": p.table, "curves_text": p.text,
                       "contest_ran": ran, **cleared}
                first = False


# -- the page: components by name, then the wiring ---------
def _shift_layout(cnn: bool) -> dict[str, gr.components.Component]:
    """The shift controls, its pictures and book, the shift sweep."""
    gr.Markdown(experiments.EXPERIMENTS_TEXT)
    with gr.Row(elem_id="shift-controls"):
        dx = gr.Slider(-32, 32, value=0, step=1, label="dx: shift right (pixels)", elem_id="shift-dx")
        dy = gr.Slider(-32, 32, value=0, step=1, label="dy: shift down (pixels)", elem_id="shift-dy")
        fill = gr.Radio(list(vocab.FILLS), value="edge", label="what enters at the border",
                        elem_id="shift-fill")
    with gr.Row(elem_id="shift-pictures"):  # first on the screen in projector mode (style.css)
        shift_view = gr.Image(label="Shifted view, as the model sees it", interactive=False, format="jpeg",
                              elem_id="shift-view")
        shift_cos = gr.Image(label="Patch cosine, original vs shifted",
                             interactive=False, format="jpeg", elem_id="shift-cos")
        shift_top5 = gr.Plot(label="Top-5, Δ from the unshifted photo", elem_id="shift-top5")
    shift_info = gr.Markdown(elem_id="shift-info")
    # The shifts seen so far, swapped in by the page when a slider comes back to one (page/web/flipbook.js).
    book = flip.component("shift")

    gr.Markdown("## Shift sweep: k = 0..2P pixels right, batched, with the fill chosen above")
    with gr.Row():
        sweep_btn = gr.Button(experiments.SWEEP_BUTTON, variant="primary", elem_id="sweep-run",
                              elem_classes=[web.NEEDS_PHOTO])
        stop_btn = gr.Button("Stop", elem_id="sweep-stop")
    # Over the sweep on show while the fill differs from the one it ran with (sweep_stale), as over the contest.
    sweep_stale = gr.Markdown(elem_id=ids.SWEEP_STALE)  # said when it appears (web/a11y.js)
    sweep_ran = gr.State(None)  # the fill the sweep on show ran with
    sweep_text = gr.Markdown(elem_id=ids.SWEEP_TEXT)  # its last line said (web/a11y.js)
    sweep_plot = gr.Plot(label="Cosine and probability against the shift", elem_id="sweep-plot")
    # wrap and shares, not one-line widths: a phone's 386 px showed 2 of the 7 columns (911 px of table)
    sweep_table = gr.Dataframe(headers=experiments.SWEEP_HEADERS, interactive=False, elem_id="sweep-table",
                               wrap=True, column_widths=SWEEP_WIDTHS_CNN if cnn else SWEEP_WIDTHS)
    return dict(dx=dx, dy=dy, fill=fill, shift_view=shift_view, shift_cos=shift_cos, shift_top5=shift_top5,
                shift_info=shift_info, book=book, sweep_btn=sweep_btn, stop_btn=stop_btn, sweep_text=sweep_text,
                sweep_plot=sweep_plot, sweep_table=sweep_table, sweep_stale=sweep_stale, sweep_ran=sweep_ran)


def _mask_layout() -> dict[str, gr.components.Component]:
    """The mask controls and buttons (by MASK_BUTTONS name), its pictures, book and state."""
    gr.Markdown("## Masks")
    gr.Markdown(experiments.MASKS_TEXT)
    with gr.Row():
        mode = gr.Radio([(vocab.MASK_MODE_LABELS.get(m, m), m) for m in vocab.MASK_MODES], value="drop",
                        label="mask mode", elem_id="mask-mode")
        percent = gr.Slider(0, 100, value=25, step=1, label="p % / k % for the buttons", elem_id="mask-percent")
    with gr.Row():
        buttons = {n: gr.Button(label, size="sm", elem_id=f"mask-{n}", elem_classes=[web.NEEDS_PHOTO])
                   for n, label in zip(MASK_BUTTONS, ("clear", "invert", "random p %", "top k % by the map",
                                                      "bottom k % by the map"))}
        rank_by = gr.Dropdown(list(masks.MASK_MAPS), value=masks.MASK_MAPS[0], label="map (top-1 class)",
                              elem_id="mask-rank-by")
    # min_width 300: on a phone each goes under the other at the full width (side by side, a patch to tap
    # was 13 px and the labels broke a word a line: a walk-through at 390 px)
    with gr.Row():
        mask_grid = gr.Image(label=experiments.MASK_GRID_TITLE, interactive=False, format="jpeg",
                             elem_id="mask-grid", min_width=300)
        masked_view = gr.Image(label="What the model gets (hatched = token dropped or [MASK])", interactive=False,
                               format="jpeg", elem_id="masked-view", min_width=300)
        mask_top5 = gr.Plot(label="Top-5, Δ from the unmasked photo", elem_id="mask-top5", min_width=300)
    mask_info = gr.Markdown(elem_id="mask-info")
    mask = gr.State(())  # row-major patch ids
    # The masks seen so far, swapped in by the page when a click comes back to one; the page writes
    # the mask after each click in mask_box (the click's answer may come after the next click).
    mask_book = flip.component("mask")
    mask_box = gr.Textbox(visible="hidden", elem_id="mask-box")
    seed = gr.State(0)  # random-mask draws, one more per click
    mask_shown = gr.State("drop")  # the mode the readout is for (a refused mode puts the radio back on it)
    return dict(mode=mode, mask_shown=mask_shown, percent=percent, buttons=buttons, rank_by=rank_by,
                mask_grid=mask_grid, masked_view=masked_view, mask_top5=mask_top5, mask_info=mask_info, mask=mask,
                mask_book=mask_book, mask_box=mask_box, seed=seed)


def _curves_layout() -> dict[str, gr.components.Component]:
    """The faithfulness contest: its controls, chart and table."""
    gr.Markdown("## Faithfulness contest: deletion and insertion for every map")
    gr.Markdown(experiments.CURVES_TEXT)
    with gr.Row():
        steps = gr.Slider(2, 20, value=10, step=1, label="steps", elem_id="curves-steps")
        curve_mode = gr.Radio(list(vocab.CURVE_MODES), value="black", label="remove patches by",
                              elem_id="curves-mode")
        curves_btn = gr.Button(experiments.CONTEST_BUTTON, variant="primary", elem_id="curves-run",
                               elem_classes=[web.NEEDS_PHOTO])
    # What the button runs and how long it may take here (contest_cost): the button held it all once, 8 lines on a
    # phone, with a time measured on another machine.
    curves_cost = gr.Markdown(experiments.CONTEST_COST_MD, elem_id="curves-cost")
    # Over the contest on show while its settings differ from the ones it ran with (contest_stale).
    curves_stale = gr.Markdown(elem_id=ids.CURVES_STALE)  # said when it appears (web/a11y.js)
    contest_ran = gr.State(None)  # experiments.ContestRun: what the contest on show ran with
    curves_text = gr.Markdown(elem_id=ids.CURVES_TEXT)  # its last line said (web/a11y.js)
    del_plot = gr.Plot(label="Deletion (solid) and insertion (dashed), every map", elem_id="deletion-plot")
    # wrap and shares: a phone showed rank, map and half the deletion AUC of 1,637 px of table
    auc_table = gr.Dataframe(headers=experiments.CURVES_HEADERS, interactive=False, elem_id="auc-table",
                             wrap=True, column_widths=CURVES_WIDTHS)
    return dict(steps=steps, curve_mode=curve_mode, curves_btn=curves_btn, curves_cost=curves_cost,
                curves_stale=curves_stale, contest_ran=contest_ran, curves_text=curves_text, del_plot=del_plot,
                auc_table=auc_table)


def fetchers(wb: Workbench, ui: dict[str, Any]) -> dict[str, flip.Fetcher]:
    """The shift and mask books' Fetchers, on the tab's components (their routes go to the app)."""
    named = {n: ui[n] for n in CONTROLS}
    return {"shift": flip.Fetcher("shift", wb, experiments.shift_book_at, {f: ui[n] for f, n in SHIFT.items()}, named),
            "mask": flip.Fetcher("mask", wb, experiments.mask_book_at,
                                 {**{f: ui[n] for f, n in MASK.items()}, "box": ui["mask_box"]}, named)}


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = {**_shift_layout(ctx.wb.cnn is not None), **_mask_layout(), **_curves_layout()}
    ctx.links.update(dx=ui["dx"], dy=ui["dy"], fill=ui["fill"], mask=ui["mask"], mask_mode=ui["mode"])
    named = {n: ui[n] for n in CONTROLS}  # every control by the ExperimentsParams field it sets
    ctx.controls[tab.id] = named  # a lesson step sets them (page/tabs/lesson.py)
    wb, ins = ctx.wb, [ctx.key, *named.values()]
    # A shift or mask the page holds no pages for is asked for over plain HTTP (flip.Fetcher) and
    # drawn about one forward after the move; the event then goes to Gradio for the rest.
    fetch = fetchers(wb, ui)
    ctx.routes.extend([fetch["shift"].route(), fetch["mask"].route()])
    shown = [*ins, ui["steps"], ui["curve_mode"]]  # SHOW_CONTROLS' order
    contest_ins = [ui[n] for n in CONTEST]
    ctx.on_show(tab, kit.answer(show, ui, wb, fetch), shown, [ui[n] for n in [*OPENED, *STALE, "contest_ran"]],
                then=(kit.answer(show_charts, ui, wb), ins, [ui[n] for n in CHARTS], "#mask-grid img"),
                first=ui["mask_grid"])
    _wire_shift_and_mask(ctx, ui, ins, fetch)
    running = ui["sweep_btn"].click(kit.answer(sweep, ui, wb), [ctx.key, ui["fill"]],
                                    [ui[n] for n in SWEEP_OUT], **jobs.COSTLY)
    # The fill moved: the sweep on show says it is for the old one, as the contest does (no queue: a comparison);
    # and once a run ends, against the fill then (one moved before its first panel was cleared by that panel).
    swept = dict(fn=kit.answer(sweep_stale, ui), inputs=[ui["fill"], ui["sweep_ran"]], outputs=[ui["sweep_stale"]],
                 queue=False, show_progress="hidden")
    ui["fill"].input(**swept)
    running.then(**swept)
    curving = ui["curves_btn"].click(kit.answer(curves, ui, wb), [ctx.key, ui["steps"], ui["curve_mode"]],
                                     [ui[n] for n in [*CURVES, *STALE, "contest_ran"]], **jobs.COSTLY)
    # A setting moved: the contest on show says it is for the old ones (no queue: a comparison, no model).
    stale = dict(fn=kit.answer(contest_stale, ui, wb), inputs=[ctx.key, *contest_ins], outputs=[ui["curves_stale"]],
                 queue=False, show_progress="hidden")
    # Once the run ends, against the settings then: one moved before its first chart was cleared by that chart.
    curving.then(**stale)
    for c in ("steps", "curve_mode"):
        ui[c].input(**stale)
    # The steps moved or a costly map joined: the views and their time again (a stats read, no queue).
    cost = dict(fn=kit.answer(contest_cost, ui, wb), inputs=[ctx.key, ui["steps"]], outputs=[ui["curves_cost"]],
                queue=False, show_progress="hidden")
    ui["steps"].input(**cost)
    # A costly map computed on another tab (attention flow): the contest on show may no longer rank every map.
    for computed in ctx.maps_added:
        computed.then(**stale)
        computed.then(**cost)
    ui["stop_btn"].click(None, None, None, cancels=[running, curving])
    ctx.long_work.extend([running, curving])


def _wire_shift_and_mask(ctx: Ctx, ui: dict, ins: list, fetch: dict[str, flip.Fetcher]) -> None:
    """The shift sliders, the mask mode, a click on the mask grid and the mask buttons."""
    wb, shift_out, mask_out = ctx.wb, [ui[n] for n in SHIFT_OUT], [ui[n] for n in MASK_OUT]
    # input (user moves or types), not change: on_show's range update must not re-run it.
    # always_last: while dragging, one forward in flight, then the latest value.
    shifted = kit.answer(show_shift, ui, wb, fetch)
    for c in ("dx", "dy", "fill"):
        ui[c].input(shifted, ins, shift_out, show_progress="hidden", trigger_mode="always_last")
    ui["mode"].change(kit.answer(pick_mode, ui, wb, fetch), [ins[0], ui["mask_shown"], *ins[1:]],
                      [*mask_out, ui["mode"]], show_progress="hidden")
    # always_last: a click while one is answered is sent after it (Gradio's default drops it);
    # clicks in between are carried by the mask the page writes in mask_box.
    ui["mask_grid"].select(kit.answer(click, ui, wb, fetch), [ctx.key, ui["mask"], ui["mode"], ui["mask_box"]],
                           [ui["mask"], *mask_out], show_progress="hidden", trigger_mode="always_last")
    for name, btn in ui["buttons"].items():
        btn.click(kit.answer(run, ui, wb, fetch, name),
                  [ctx.key, ui["mask"], ui["percent"], ui["seed"], ui["mode"], ui["rank_by"]],
                  [ui["mask"], ui["seed"], *mask_out], show_progress="minimal")  # "top"/"bottom" may run the model
