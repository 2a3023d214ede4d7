"""The Attention tab: the main map (drawn in the page from its book), the strip, the layers × heads
grid, the distance chart and class relevance."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit import vocab
from vizvit.methods import flow
from vizvit.readings import attention as ra, methods
from vizvit.session import PhotoKey, Workbench
from vizvit.views import attention as ap, layout

from .. import ids, jobs, kit, web
from ..kit import Ctx
from ..ordered import AnswerOrder

# The AttnParams fields the tab's controls set, in the order its events list them (kit.in_line reads them by name).
CONTROLS = ["layer", "head", "show", "mode", "query", "direction", "discard", "alpha", "cmap", "tau", "shared_scale",
            "summary", "discard_mode", "distance_norm", "scale", "artifacts_in_range"]
SHOWN_CHANGE = ["main", "readout", "grid", "strip", "matrix"]  # the AttentionChange fields a view event shows
SHOWN = [*SHOWN_CHANGE, "book"]  # the Page fields the tab shows (the distance chart follows: opened_chart)
OPENED = ["layer", "head", "query", *SHOWN_CHANGE, "cls", "rel_img", "rel_text", "summary", "book"]
CHART = ["dist", "pick"]
RELEVANCE = ["rel_img", "rel_text"]
def params(c: dict[str, Any], **changed: Any) -> ra.AttnParams:
    """The controls' values by name as AttnParams, with `changed` fields replaced."""
    return ra.AttnParams.from_controls({**c, **changed})


# -- handlers: explicit values in, {name: value} out (page names: CONTROLS, SHOWN, OPENED, CHART) ---------
def opened(wb: Workbench, key: PhotoKey | None, *v: Any) -> dict[str, Any]:
    """The tab opened (or a new photo or model while open): every picture, the sliders' ranges, the classes."""
    if key is None:
        return kit.skip(OPENED)
    ph = wb.handle(key)
    g = ph.vm.geometry
    c = dict(zip(CONTROLS, v))
    page = ap.show(ph, params(c))
    p = page.params
    # The map's patches and the grid's layers × heads, chosen by the arrow keys and Enter too (web/a11y.js).
    step = layout.grid_tile(g) + layout.GRID_SEP
    cells = {"main": kit.patch_cells(page.main, g),
             "grid": kit.with_cells(page.grid, g.num_layers, g.num_heads, (step, step),
                                    (layout.GRID_LEFT, layout.GRID_TOP))}
    return {**{n: getattr(page, n) for n in SHOWN}, **cells,
            "layer": _slider(g.num_layers, p.layer, c["layer"]), "head": _slider(g.num_heads, p.head, c["head"]),
            "query": p.query,
            "cls": gr.Dropdown(choices=page.classes, value=page.classes[0][1] if page.classes else None),
            "rel_img": None, "rel_text": "",
            "summary": gr.Radio(list(g.summaries), value=p.who(g), visible=len(g.summaries) > 1)}


def _slider(maximum: int, value: int, sent: Any) -> gr.Slider:
    """A slider's range for the model, and its value only where the model's range clipped the one the
    page sent: a move made while this answer was on its way (a layer 0.3 s after the first open,
    issue 52) stays, where setting the old value again undid it."""
    return gr.Slider(maximum=maximum) if sent is not None and value == sent else gr.Slider(maximum=maximum, value=value)


def opened_chart(wb: Workbench, key: PhotoKey | None, *v: Any) -> dict[str, Any]:
    """The distance chart and its list, after the map is painted (Plotly's first render of it
    held the tab's first picture back ~95 ms). The list is a chooser with no value: one naming
    the shown head went stale at the next layer or head move ("layer 1 · head 3" beside layer
    12's map, a student's walk found), and named head 1 beside a mean of the heads."""
    if key is None:
        return kit.skip(CHART)
    ph = wb.handle(key)
    p = ap.clip_params(params(dict(zip(CONTROLS, v))), ph.vm.geometry)
    fig, choices = ap.distance_view(ph.vm, ph.analysis(), p.distance_norm, ph.derived)
    return {"dist": fig, "pick": gr.Dropdown(choices=choices, value=None)}


def views(wb: Workbench, key: PhotoKey, p: ra.AttnParams, drawn_in_page: bool = False,
          with_book: bool = False) -> dict[str, Any]:
    """drawn_in_page: a layer, head or fusion change, which the page draws itself from its book."""
    ch = ap.change(wb.handle(key), p, drawn_in_page=drawn_in_page, with_book=with_book)
    out = {n: getattr(ch, n) for n in SHOWN_CHANGE}
    if ch.main is None:
        out["main"] = gr.skip()
    if with_book:
        out["book"] = ch.book
    return out


# The line's handlers (kit.in_line applies the answer order): the controls `c` as the event's page shows them.
def redraw(wb: Workbench, key: PhotoKey, c: dict[str, Any]) -> dict[str, Any]:
    """A layer, fusion or shared-scale change: the page draws the main map."""
    return views(wb, key, params(c), drawn_in_page=True)


def relook(wb: Workbench, key: PhotoKey, c: dict[str, Any]) -> dict[str, Any]:
    """Any other control: a new picture and a new book."""
    return views(wb, key, params(c), with_book=True)


def redraw_one_head(wb: Workbench, key: PhotoKey, c: dict[str, Any]) -> dict[str, Any]:
    """The head slider moved: "show me that head" leaves a fusion (mean/max/min)."""
    return {"show": vocab.ONE_HEAD, **views(wb, key, params(c, show=vocab.ONE_HEAD), drawn_in_page=True)}


# A click answers in ONE event (the new state and the pictures), not a state event and a
# .then() redraw: each event is a queue round trip of ~100 ms in the browser.
def click_main(wb: Workbench, key: PhotoKey, c: dict[str, Any], xy: tuple[int, int]) -> dict[str, Any]:
    """A click at pixel xy of the main map: that patch becomes the query."""
    q = ap.clicked_query(wb.model(key.model_id).geometry, xy[0], xy[1])
    return {"query": q, **views(wb, key, params(c, query=q), with_book=True)}


def to_cls_view(wb: Workbench, key: PhotoKey, c: dict[str, Any]) -> dict[str, Any]:
    """The query back to the summary token, and the direction back to its row (what it attends to, the tab's
    default): kept on column, the map showed each patch's attention to [CLS] instead."""
    return {"query": None, "direction": "row",
            **views(wb, key, params(c, query=None, direction="row"), with_book=True)}


def click_grid(wb: Workbench, key: PhotoKey, c: dict[str, Any], xy: tuple[int, int]) -> dict[str, Any]:
    """A click at pixel xy of the layers × heads grid opens that cell's head."""
    lay, hd = layout.grid_cell_at(wb.model(key.model_id).geometry, xy[0], xy[1])
    return {"layer": lay, "head": hd, "show": vocab.ONE_HEAD,
            **views(wb, key, params(c, layer=lay, head=hd, show=vocab.ONE_HEAD), drawn_in_page=True)}


def pick_head(choice: str | None) -> dict[str, Any]:
    """A head picked in the list or clicked on the distance chart ("layer,head[,clicks]"): that head
    opens, and the list is a chooser again (see opened_chart)."""
    if not choice:
        return kit.skip(["layer", "head", "show", "pick"])
    lay, hd = ap.parse_choice(choice)
    return {"layer": lay, "head": hd, "show": vocab.ONE_HEAD, "pick": None}


def redistance(wb: Workbench, key: PhotoKey | None, norm: str) -> dict[str, Any]:
    if key is None:
        return kit.skip(CHART)
    ph = wb.handle(key)
    fig, choices = ap.distance_view(ph.vm, ph.analysis(), norm, ph.derived)
    return {"dist": fig, "pick": gr.Dropdown(choices=choices, value=None)}


def class_map(wb: Workbench, key: PhotoKey | None, class_index: int | None, name: str, *v: Any) -> dict[str, Any]:
    """Every method but a costly one (that is flow_job's): one backward pass, then cached."""
    if methods.is_costly(name):
        return kit.skip(RELEVANCE)
    # print_exception=False: the caller's value, not the server's fault (each call printed a traceback:
    # 41 in one fuzzing run); and a class box left empty is no missing photo (a caller's None, with a photo)
    if key is None:
        raise gr.Error("Upload a photo first (class maps need a model with a classifier).", print_exception=False)
    if class_index is None:
        raise gr.Error("Pick a class from the list first.", print_exception=False)
    img, text = ap.explain(wb.handle(key), name, int(class_index), params(dict(zip(CONTROLS, v))))
    return {"rel_img": img, "rel_text": text}


def flow_job(wb: Workbench, key: PhotoKey | None, name: str, request: gr.Request | None, *v: Any):
    """A costly method (attention flow), streamed: its progress lines, then the map (cached per photo).
    The request comes before the controls: Gradio passes a gr.Request only to a positional parameter
    (after *v it passed none, and the page's flows ran outside the fair line; kit._shaped checks it)."""
    if not methods.is_costly(name):  # class_map's: leave its answer alone (a bare return would blank it)
        yield kit.skip(RELEVANCE)
        return
    if key is None:
        raise gr.Error("Upload a photo first.", print_exception=False)
    with jobs.JOBS.line(request, name, replace=True) as ticket:
        for ahead in ticket.waiting():  # its place in the fair line (vizvit.service.jobs), until its turn
            yield {"rel_text": jobs.waiting_text(name, ahead)}
        for img, text in ap.job_progress(wb.handle(key), name, params(dict(zip(CONTROLS, v))), ticket.cancel):
            yield {"rel_text": text} if img is None else {"rel_img": img, "rel_text": text}


def stop_job(name: str, shown: str | None) -> dict[str, Any]:
    """Stop pressed: a costly job's line (its progress, or its place in the fair line) becomes a note that
    it stopped; the text of a finished map, or another method's, stays. Without it the last progress
    line ("50 of 197 max-flows, about 9 s left") stayed up after Stop (a student's walk)."""
    # the text box's value is the caller's to send: anything but text is no job's line
    running = isinstance(shown, str) and (flow.is_progress(shown) or shown.startswith(jobs.WAITING))
    return {"rel_text": ap.STOPPED_TEXT} if methods.is_costly(name) and running else kit.skip(["rel_text"])


# -- the page: components, then wiring ---------------------------------------------------------------
def _top() -> dict[str, gr.components.Component]:
    """The main map and its controls."""
    with gr.Row():
        with gr.Column(scale=3, elem_id="attn-left"):  # wider in projector mode (style.css)
            # No download/fullscreen buttons: they would show the server's last picture, and the page
            # draws layer, head and fusion changes itself (right-click saves what is on screen).
            main = gr.Image(label="Attention map (click a patch to make it the query)", interactive=False,
                                format="jpeg", elem_id="attn-main", buttons=[])
            # Every layer × head (and fusion) of the main map, sent with each query or look change;
            # page/web/attention_map.js draws layer, head and fusion changes from it with no round trip.
            book = gr.HTML(None, html_template="<span></span>",
                           js_on_load=web.on_load(web.HAND_ON, web.MAP_DRAW, web.ATTENTION_MAP),
                           visible="hidden", elem_id="attn-book", apply_default_css=False)
            # Each patch's map as the query (the matrix behind the shown map, as the server paints it),
            # with every picture: a click on the map is drawn at once.
            matrix = gr.HTML(None, html_template="<span></span>", js_on_load=web.asset("attn_matrix.js"),
                             visible="hidden", elem_id="attn-matrix", apply_default_css=False)
            with gr.Row():
                direction = gr.Radio(list(vocab.DIRECTIONS), value="row", elem_id="attn-direction",
                                     label="clicked patch: its row (what it attends to) or its column "
                                           "(what attends to it)")
                to_cls = gr.Button("Query: back to the summary token", size="sm", elem_id="attn-to-cls")
            # Families with more than one summary token (DeiT: [CLS] or [DIST]; BEiT: patch mean or [CLS]).
            summary = gr.Radio(["[CLS]"], value="[CLS]", label="read maps, rollout and relevance from",
                               visible=False, elem_id="attn-summary")
            # Under the map, the map's width: in the controls' column its table and the artifact note
            # wrapped into a ~300 px strip beside empty space (projector mode, issue 51).
            readout = gr.Markdown(elem_id="attn-readout")
        with gr.Column(scale=2):
            # No reset button: it fires no .input (the page would draw a layer the server never hears of).
            layer = kit.ClampedSlider(1, 12, value=12, step=1, label=ap.layer_label("raw"), elem_id="attn-layer",
                                      buttons=[])
            show = gr.Radio(list(vocab.SHOW_CHOICES), value="mean", label="heads: one head, or fuse them",
                            elem_id="attn-show")
            head = kit.ClampedSlider(1, 12, value=1, step=1, label="head (for 'one head')", elem_id="attn-head",
                                     buttons=[])
            mode = gr.Radio(list(vocab.MODES), value="raw", label="attention", elem_id="attn-mode")
            scale = gr.Radio(list(vocab.ATTN_SCALES), value=vocab.ATTN_SCALES[0], elem_id="attn-scale",
                             label="colour scale of the map (blue line on the bar: uniform 1/N)")
            with gr.Row():
                discard = gr.Slider(0, 0.95, value=0, step=0.05, elem_id="attn-discard",
                                    label="rollout: discard the lowest fraction (fused heads)")
                discard_mode = gr.Radio(list(vocab.DISCARD_MODES), value=vocab.DISCARD_MODES[0],
                                        label="discard per row, or over the whole matrix as vit-explain does",
                                        elem_id="attn-discard-mode")
            with gr.Row():
                alpha = gr.Slider(0, 1, value=0.6, step=0.05, label="overlay opacity", elem_id="attn-alpha")
                cmap = gr.Dropdown(list(vocab.COLORMAPS), value="inferno", label="colour map")
            with gr.Row():
                tau = gr.Slider(0, 1, value=0, step=0.05, label="keep patches holding τ of the mass (0 = off)",
                                elem_id="attn-tau")
                shared_scale = gr.Checkbox(value=False, label="one shared colour scale (grid and strip)",
                                     elem_id="attn-shared")
            artifacts_in_range = gr.Checkbox(value=False, elem_id="attn-artifacts",
                                             label="artifact tokens in the colour range (cyan: see the note)")
    return dict(main=main, book=book, matrix=matrix, direction=direction, to_cls=to_cls, summary=summary,
                layer=layer, show=show, head=head, mode=mode, scale=scale, discard=discard, discard_mode=discard_mode,
                alpha=alpha, cmap=cmap, tau=tau, shared_scale=shared_scale, artifacts_in_range=artifacts_in_range,
                readout=readout)


def _bottom() -> dict[str, gr.components.Component]:
    """The strip, the grid, the distance chart and class relevance."""
    gr.Markdown(ap.MAIN_TEXT)
    gr.Markdown("## Rollout after each layer (tile ≤l: through layer l)")
    strip = gr.Image(label="Rollout after each layer", show_label=False, interactive=False, format="jpeg",
                     elem_id="attn-strip")
    gr.Markdown(ap.ROLLOUT_TEXT)
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("## All layers × heads (click a cell to open it)")
            grid = gr.Image(label="All layers × heads (click a cell to open it)", show_label=False,
                            interactive=False, format="jpeg", elem_id="attn-grid")
        with gr.Column(scale=2):
            gr.Markdown(ap.GRID_TEXT)
    with gr.Row():
        with gr.Column():
            dist = gr.Plot(label="Mean attention distance", elem_id="attn-distance")
            pick = gr.Dropdown([], label="open a head (nearest first)", elem_id="attn-pick")
            distance_norm = gr.Radio(list(vocab.DISTANCE_NORMS), value=vocab.DISTANCE_NORMS[0],
                                     label="distance: patch weights renormalised without [CLS], or raw as probing-vits",
                                     elem_id="attn-distance-norm")
            # Filled by the page script (page/web/page.js) when a dot of the chart is clicked (a value set from
            # a script fires .change, not .input).
            dist_click = gr.Textbox(visible="hidden", elem_id="attn-distance-click")
            gr.Markdown(ap.DISTANCE_TEXT)
        with gr.Column():
            with gr.Row():
                # Every class, the top-5 first: type to search the labels (the list filters as you type).
                cls = gr.Dropdown([], label="class (top-5 first; type to search every label)", filterable=True,
                                  elem_id=ids.ATTN_CLASS)
                method = gr.Dropdown(list(ap.EXPLAIN_METHODS), value=ap.EXPLAIN_METHODS[0], label="method",
                                     elem_id="attn-method")
            with gr.Row():
                rel_btn = gr.Button("Compute the map", elem_id="attn-relevance-btn", elem_classes=[web.NEEDS_PHOTO])
                # Attention flow is a job (5-10 s on a 12-layer model, seconds to minutes on a busy server):
                # this button ends it.
                flow_stop = gr.Button("Stop", size="sm", elem_id="attn-flow-stop")
            rel_img = gr.Image(label="Class-specific map", interactive=False, format="jpeg",
                               elem_id="attn-relevance")
            rel_text = gr.Markdown(elem_id="attn-relevance-text")
            gr.Markdown(ap.RELEVANCE_TEXT)
    return dict(strip=strip, grid=grid, dist=dist, pick=pick, distance_norm=distance_norm, dist_click=dist_click,
                cls=cls, method=method, rel_btn=rel_btn, flow_stop=flow_stop, rel_img=rel_img, rel_text=rel_text)


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = {**_top(), **_bottom()}
    ui["query"] = gr.State(None)  # (row, col) or None for [CLS]
    # The tab's view events run in one line, and an answer older than one already given is dropped
    # (page/ordered.py): a held-back slider event never lands over a newer click's answer.
    order = AnswerOrder("attention")
    named = {n: ui[n] for n in CONTROLS}  # every control by the AttnParams field it sets
    controls = list(named.values())
    ctx.controls[tab.id] = named  # a lesson step sets them (page/tabs/lesson.py)
    ctx.links.update({n: ui[n] for n in ("layer", "head", "show", "query", "direction", "mode")})
    wb = ctx.wb
    ins = [ctx.key, *controls]
    ctx.on_show(tab, kit.answer(opened, ui, wb), ins, [ui[n] for n in OPENED],
                then=(kit.answer(opened_chart, ui, wb), ins, [ui[n] for n in CHART], "#attn-main img"),
                # Its map book with it: the photo before's would draw its maps over the new one's
                # (attention_map.js), and with the new one a layer moved as the tab opens is drawn at once.
                first=ui["main"], first_with=(ui["book"],))
    ui["mode"].change(lambda m: gr.Slider(label=ap.layer_label(m)), ui["mode"], ui["layer"], queue=False,
                      show_progress="hidden")
    _wire_line(ui, order, ins, wb)
    ui["distance_norm"].input(kit.answer(redistance, ui, wb), [ctx.key, ui["distance_norm"]], [ui[n] for n in CHART],
                              show_progress="hidden")
    _wire_relevance(ctx, ui, controls)


def _wire_line(ui: dict, order: AnswerOrder, ins: list, wb: Workbench) -> None:
    """The view events: one line, in the order the page sent them (AnswerOrder, through kit.in_line)."""
    line_ins = [order.stamp, *ins]

    def line(fn: Any, lead: list[str], book: bool = False, sets: tuple[str, ...] = (), select: bool = False) -> dict:
        """The fn, inputs and outputs of one line event: it sets `lead`, shows the views (and the book)."""
        outs = [*lead, *SHOWN_CHANGE, *(["book"] if book else [])]
        return dict(fn=kit.in_line(order, CONTROLS, fn, ui, outs, wb, sets=sets, select=select), inputs=line_ins,
                    outputs=[ui[n] for n in outs] + [order.stamp])  # the stamp box says which answer landed last

    # always_last: while a slider is dragged, the last value is always drawn.
    # One line for every event that shows a view: they run one at a time, stamped in the order the
    # page sent them, and an older one answered after a newer one changes nothing (AnswerOrder).
    # Each carries the controls as they were when it was sent, so two at once (a head change, then
    # a click right after it) could otherwise land in either order, the older view last.
    one_line = order.line(show_progress="hidden")
    # The page draws the main map (attention_map.js); here: the readout, the grid, the strip.
    for c in ("layer", "show", "shared_scale"):
        ui[c].input(**line(redraw, []), trigger_mode="always_last", **one_line)
    for c in ("mode", "direction", "discard", "discard_mode", "alpha", "cmap", "tau", "summary", "scale",
              "artifacts_in_range"):
        ui[c].input(**line(relook, [], book=True), trigger_mode="always_last", **one_line)
    # Moving the head slider means "show me that head": leave a fusion (mean/max/min), or the
    # slider would seem to do nothing. One event, so dragging coalesces like the other sliders.
    ui["head"].input(**line(redraw_one_head, ["show"], sets=("show",)), trigger_mode="always_last", **one_line)
    ui["main"].select(**line(click_main, ["query"], book=True, select=True), **one_line)
    ui["to_cls"].click(**line(to_cls_view, ["query", "direction"], book=True, sets=("direction",)), **one_line)
    ui["grid"].select(**line(click_grid, ["layer", "head", "show"], sets=("layer", "head", "show"), select=True),
                      **one_line)
    # The chart and the list sit below the main map: bring the opened head's map into view.
    picked = kit.answer(pick_head, ui)
    for chooser, ev in ((ui["pick"], ui["pick"].input), (ui["dist_click"], ui["dist_click"].change)):
        chosen = ev(picked, [chooser], [ui["layer"], ui["head"], ui["show"], ui["pick"]])
        chosen.then(**line(redraw, []), **one_line).then(None, None, None, js=web.asset("scroll_to_main.js"))


def _wire_relevance(ctx: Ctx, ui: dict, controls: list) -> None:
    """Class relevance: one backward pass per class and method, attention flow as a costly stoppable job."""
    rel = [ui[n] for n in RELEVANCE]
    class_mapped, flowed = kit.answer(class_map, ui, ctx.wb), kit.answer(flow_job, ui, ctx.wb)
    flows = []
    # A new class or method is computed at once.
    for trigger in (ui["rel_btn"].click, ui["cls"].input, ui["method"].input):
        trigger(class_mapped, [ctx.key, ui["cls"], ui["method"], *controls], rel)
        if trigger != ui["cls"].input:  # flow has no class: a class change leaves a running flow alone
            # No queue status on the text: this listener answers nothing for the other methods, and
            # flow streams its own progress lines.
            flows.append(trigger(flowed, [ctx.key, ui["method"], *controls], rel, show_progress="hidden",
                                 **jobs.COSTLY))
    # The note that it stopped comes through the queue after the cancel: a progress line already on its
    # way then lands before it, not over it (answered at once, the note was overwritten under load).
    ui["flow_stop"].click(None, None, None, cancels=flows, queue=False, show_progress="hidden").then(
        kit.answer(stop_job, ui), [ui["method"], ui["rel_text"]], ui["rel_text"], show_progress="hidden")
    ctx.long_work.extend(flows)
    ctx.maps_added.extend(flows)
