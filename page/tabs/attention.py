"""The Attention tab: the main map (drawn in the page from its book), the strip, the layers × heads
grid, the distance chart and class relevance."""

from __future__ import annotations

import gradio as gr

from typing import Any

from vizvit import vocab
from vizvit.readings import methods

from .. import web
from vizvit.session import PhotoKey
from vizvit.views import attention as ap

from .. import kit
from ..kit import Ctx, safe
from ..ordered import AnswerOrder


def build(ctx: Ctx, tab: gr.Tab) -> None:
    with gr.Row():
        with gr.Column(scale=3, elem_id="attn-left"):  # wider in projector mode (style.css)
            # No download/fullscreen buttons: they would show the server's last picture, and the page
            # draws layer, head and fusion changes itself (right-click saves what is on screen).
            main_img = gr.Image(label="Attention map (click a patch to make it the query)", interactive=False,
                                format="jpeg", elem_id="attn-main", buttons=[])
            # Every layer × head (and fusion) of the main map, sent with each query or look change;
            # page/web/attention_map.js draws layer, head and fusion changes from it with no round trip.
            book = gr.HTML(None, html_template="<span></span>", js_on_load=web.with_hand_on(ap.MAP_DRAW_SCRIPT, ap.PAGE_SCRIPT),
                           visible="hidden", elem_id="attn-book", apply_default_css=False)
            # Each patch's map as the query (the matrix behind the shown map, as the server paints it),
            # with every picture: a click on the map is drawn at once.
            matrix = gr.HTML(None, html_template="<span></span>", js_on_load=web.asset("attn_matrix.js"),
                             visible="hidden", elem_id="attn-matrix", apply_default_css=False)
            with gr.Row():
                direction = gr.Radio(list(vocab.DIRECTIONS), value="row", elem_id="attn-direction",
                                     label="clicked patch: its row (what it attends to) or its column (what attends to it)")
                to_cls = gr.Button("Query: back to the summary token", size="sm", elem_id="attn-to-cls")
            # Families with more than one summary token (DeiT: [CLS] or [DIST]; BEiT: patch mean or [CLS]).
            summary = gr.Radio(["[CLS]"], value="[CLS]", label="read maps, rollout and relevance from",
                               visible=False, elem_id="attn-summary")
        with gr.Column(scale=2):
            # No reset button: it fires no .input (the page would draw a layer the server never hears of).
            layer = gr.Slider(1, 12, value=12, step=1, label=ap.layer_label("raw"), elem_id="attn-layer", buttons=[])
            show = gr.Radio(list(vocab.SHOW_CHOICES), value="mean", label="heads: one head, or fuse them",
                            elem_id="attn-show")
            head = gr.Slider(1, 12, value=1, step=1, label="head (for 'one head')", elem_id="attn-head", buttons=[])
            mode = gr.Radio(list(vocab.MODES), value="raw", label="attention", elem_id="attn-mode")
            scale = gr.Radio(list(vocab.ATTN_SCALES), value=vocab.ATTN_SCALES[0], elem_id="attn-scale",
                             label="colour scale of the map (blue line on the bar: uniform 1/N)")
            with gr.Row():
                discard = gr.Slider(0, 0.95, value=0, step=0.05, label="rollout: discard the lowest fraction (fused heads)",
                                    elem_id="attn-discard")
                discard_mode = gr.Radio(list(vocab.DISCARD_MODES), value=vocab.DISCARD_MODES[0],
                                        label="discard per row, or over the whole matrix as vit-explain does",
                                        elem_id="attn-discard-mode")
            with gr.Row():
                alpha = gr.Slider(0, 1, value=0.6, step=0.05, label="overlay opacity", elem_id="attn-alpha")
                cmap = gr.Dropdown(list(vocab.COLORMAPS), value="inferno", label="colour map")
            with gr.Row():
                tau = gr.Slider(0, 1, value=0, step=0.05, label="keep patches holding τ of the mass (0 = off)",
                                elem_id="attn-tau")
                shared = gr.Checkbox(value=False, label="one shared colour scale (grid and strip)",
                                     elem_id="attn-shared")
            artifacts_in = gr.Checkbox(value=False, label="artifact tokens in the colour range (cyan: see the note)",
                                       elem_id="attn-artifacts")
            readout = gr.Markdown(elem_id="attn-readout")
    gr.Markdown(ap.MAIN_TEXT)
    gr.Markdown("### Rollout after each layer (tile ≤l: through layer l)")
    strip = gr.Image(show_label=False, interactive=False, format="jpeg", elem_id="attn-strip")
    gr.Markdown(ap.ROLLOUT_TEXT)
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("### All layers × heads (click a cell to open it)")
            grid = gr.Image(show_label=False, interactive=False, format="jpeg", elem_id="attn-grid")
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
                                  elem_id="attn-class")
                method = gr.Dropdown(list(ap.EXPLAIN_METHODS), value=ap.EXPLAIN_METHODS[0], label="method",
                                     elem_id="attn-method")
            with gr.Row():
                rel_btn = gr.Button("Compute the map", elem_id="attn-relevance-btn")
                # Attention flow runs for minutes on a 12-layer model: a job this button ends.
                flow_stop = gr.Button("Stop", size="sm", elem_id="attn-flow-stop")
            rel_img = gr.Image(label="Class-specific map", interactive=False, format="jpeg",
                               elem_id="attn-relevance")
            rel_text = gr.Markdown(elem_id="attn-relevance-text")
            gr.Markdown(ap.RELEVANCE_TEXT)
    query = gr.State(None)  # (row, col) or None for [CLS]
    # The tab's view events run in one line, and an answer older than one already given is dropped
    # (page/ordered.py): a held-back slider event never lands over a newer click's answer.
    order = AnswerOrder("attention")
    # Every control by the AttnParams field it sets: handlers read them by name (no positional splices).
    named = dict(layer=layer, head=head, show=show, mode=mode, query=query, direction=direction, discard=discard,
                 alpha=alpha, cmap=cmap, tau=tau, shared_scale=shared, summary=summary, discard_mode=discard_mode,
                 distance_norm=distance_norm, scale=scale, artifacts_in_range=artifacts_in)
    controls = list(named.values())
    ctx.controls[tab.id] = named  # a lesson step sets them (page/tabs/lesson.py)
    ctx.links.update(layer=layer, head=head, show=show, query=query, direction=direction, mode=mode)

    read = kit.reader(named)
    # Every component by the Page / AttentionChange field it shows.
    shown_change = dict(main=main_img, readout=readout, grid=grid, strip=strip, matrix=matrix)
    shown = dict(**shown_change, book=book)  # the distance chart follows the first picture (opened_chart)

    def params(v: tuple | dict, **changed: Any) -> ap.AttnParams:
        """The controls' values (in `controls` order, or by name) as AttnParams, with `changed` fields replaced."""
        return ap.AttnParams.from_controls({**(v if isinstance(v, dict) else read(v)), **changed})

    @safe
    def opened(key: PhotoKey | None, *v: Any) -> dict:
        if key is None:
            return kit.skip(opened_outs)
        ph = ctx.wb.handle(key)
        g = ph.vm.geometry
        page = ap.show(ph, params(v))
        p = page.params
        return {**kit.values(page, shown),
                layer: gr.Slider(maximum=g.num_layers, value=p.layer), head: gr.Slider(maximum=g.num_heads, value=p.head),
                query: p.query,
                cls: gr.Dropdown(choices=page.classes, value=page.classes[0][1] if page.classes else None),
                rel_img: None, rel_text: "",
                summary: gr.Radio(list(g.summaries), value=p.who(g), visible=len(g.summaries) > 1)}

    @safe
    def opened_chart(key: PhotoKey | None, *v: Any) -> dict:
        """The distance chart and its list, after the map is painted (Plotly's first render of it
        held the tab's first picture back ~95 ms)."""
        if key is None:
            return kit.skip([dist, pick])
        ph = ctx.wb.handle(key)
        p = ap.clip_params(params(v), ph.vm.geometry)
        fig, choices = ap.distance_view(ph.vm, ph.analysis(), p.distance_norm, ph.derived)
        return {dist: fig, pick: gr.Dropdown(choices=choices, value=ap.choice_value(p))}

    def views(key: PhotoKey, p: ap.AttnParams, drawn_in_page: bool = False, with_book: bool = False) -> dict:
        """drawn_in_page: a layer, head or fusion change, which the page draws itself from its book."""
        ch = ap.change(ctx.wb.handle(key), p, drawn_in_page=drawn_in_page, with_book=with_book)
        out = kit.values(ch, shown_change)
        if ch.main is None:
            out[main_img] = gr.skip()
        if with_book:
            out[book] = ch.book
        return out

    # The line's handlers: `stamp` first (AnswerOrder); an older event than one answered changes nothing.
    @safe
    def redraw(stamp: str, key: PhotoKey | None, *v: Any) -> dict:
        """A layer, fusion or shared-scale change: the page draws the main map."""
        c = None if key is None else order.take(stamp, read(v))
        if c is None:
            return kit.skip(view_outs)
        return {**views(key, params(c), drawn_in_page=True), **order.answered(stamp)}

    @safe
    def relook(stamp: str, key: PhotoKey | None, *v: Any) -> dict:
        """Any other control: a new picture and a new book."""
        c = None if key is None else order.take(stamp, read(v))
        if c is None:
            return kit.skip([*view_outs, book])
        return {**views(key, params(c), with_book=True), **order.answered(stamp)}

    @safe
    def redraw_one_head(stamp: str, key: PhotoKey | None, *v: Any) -> dict:
        c = None if key is None else order.take(stamp, read(v))
        if c is None:
            return kit.skip([show, *view_outs])
        order.sets(stamp, show=vocab.ONE_HEAD)
        return {show: vocab.ONE_HEAD, **views(key, params(c, show=vocab.ONE_HEAD), drawn_in_page=True),
                **order.answered(stamp)}

    # A click answers in ONE event (the new state and the pictures), not a state event and a
    # .then() redraw: each event is a queue round trip of ~100 ms in the browser.
    @safe
    def click_main(evt: gr.SelectData, stamp: str, key: PhotoKey | None, *v: Any) -> dict:
        c = None if key is None else order.take(stamp, read(v))
        if c is None:
            return kit.skip([query, *view_outs, book])
        q = ap.clicked_query(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return {query: q, **views(key, params(c, query=q), with_book=True), **order.answered(stamp)}

    @safe
    def to_cls_view(stamp: str, key: PhotoKey | None, *v: Any) -> dict:
        c = None if key is None else order.take(stamp, read(v))
        if c is None:
            return kit.skip([query, *view_outs, book])
        return {query: None, **views(key, params(c, query=None), with_book=True), **order.answered(stamp)}

    @safe
    def click_grid(evt: gr.SelectData, stamp: str, key: PhotoKey | None, *v: Any) -> dict:
        c = None if key is None else order.take(stamp, read(v))
        if c is None:
            return kit.skip([layer, head, show, *view_outs])
        lay, hd = ap.grid_cell_at(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        order.sets(stamp, layer=lay, head=hd, show=vocab.ONE_HEAD)
        return {layer: lay, head: hd, show: vocab.ONE_HEAD, **order.answered(stamp),
                **views(key, params(c, layer=lay, head=hd, show=vocab.ONE_HEAD), drawn_in_page=True)}

    @safe
    def pick_head(choice: str | None) -> dict:
        if not choice:
            return kit.skip([layer, head, show])
        lay, hd = ap.parse_choice(choice)
        return {layer: lay, head: hd, show: vocab.ONE_HEAD}

    @safe
    def redistance(key: PhotoKey | None, norm: str) -> dict:
        if key is None:
            return kit.skip([dist, pick])
        ph = ctx.wb.handle(key)
        fig, choices = ap.distance_view(ph.vm, ph.analysis(), norm, ph.derived)
        return {dist: fig, pick: gr.Dropdown(choices=choices, value=None)}

    @safe
    def class_map(key: PhotoKey | None, class_index: int | None, name: str, *v: Any) -> dict:
        """Every method but a costly one (that is flow_job's): one backward pass, then cached."""
        if methods.is_costly(name):
            return kit.skip([rel_img, rel_text])
        if key is None or class_index is None:
            raise gr.Error("Upload a photo first (class maps need a model with a classifier).")
        img, text = ap.explain(ctx.wb.handle(key), name, int(class_index), params(v))
        return {rel_img: img, rel_text: text}

    @safe
    def flow_job(key: PhotoKey | None, name: str, *v: Any, request: gr.Request = None):
        """Attention flow, streamed: progress lines, then the map (cached per photo)."""
        if not methods.is_costly(name):  # class_map's: leave its answer alone (a bare return would blank it)
            yield kit.skip([rel_img, rel_text])
            return
        if key is None:
            raise gr.Error("Upload a photo first.")
        with kit.JOBS.hold(request, name) as cancel:
            for img, text in ap.flow_progress(ctx.wb.handle(key), params(v), cancel):
                yield {rel_text: text} if img is None else {rel_img: img, rel_text: text}

    shown_outs = [main_img, readout, grid, strip, matrix]
    view_outs = [*shown_outs, order.stamp]  # a line event's: the stamp box says which answer landed last
    ins = [ctx.key, *controls]
    opened_outs = [layer, head, query, *shown_outs, cls, rel_img, rel_text, summary, book]
    ctx.on_show(tab, opened, ins, opened_outs, then=(opened_chart, ins, [dist, pick], "#attn-main img"),
                # The map book of the photo before would draw its maps over the new one's (attention_map.js).
                first=main_img, first_clears=(book,))
    mode.change(lambda m: gr.Slider(label=ap.layer_label(m)), mode, layer, queue=False, show_progress="hidden")
    # always_last: while a slider is dragged, the last value is always drawn.
    # One line for every event that shows a view: they run one at a time, stamped in the order the
    # page sent them, and an older one answered after a newer one changes nothing (AnswerOrder).
    # Each carries the controls as they were when it was sent, so two at once (a head change, then
    # a click right after it) could otherwise land in either order, the older view last.
    one_line = order.line(show_progress="hidden")
    line_ins = [order.stamp, *ins]
    for c in (layer, show, shared):  # the page draws the main map (attention_map.js); here: readout, grid, strip
        c.input(redraw, line_ins, view_outs, trigger_mode="always_last", **one_line)
    for c in (mode, direction, discard, discard_mode, alpha, cmap, tau, summary, scale, artifacts_in):
        c.input(relook, line_ins, [*view_outs, book], trigger_mode="always_last", **one_line)
    # Moving the head slider means "show me that head": leave a fusion (mean/max/min), or the
    # slider would seem to do nothing. One event, so dragging coalesces like the other sliders.
    head.input(redraw_one_head, line_ins, [show, *view_outs], trigger_mode="always_last", **one_line)
    main_img.select(click_main, line_ins, [query, *view_outs, book], **one_line)
    to_cls.click(to_cls_view, line_ins, [query, *view_outs, book], **one_line)
    grid.select(click_grid, line_ins, [layer, head, show, *view_outs], **one_line)
    # The chart and the list sit below the main map: bring the opened head's map into view.
    for chooser, ev in ((pick, pick.input), (dist_click, dist_click.change)):
        ev(pick_head, [chooser], [layer, head, show]).then(redraw, line_ins, view_outs, **one_line).then(
            None, None, None, js=web.asset("scroll_to_main.js"))
    distance_norm.input(redistance, [ctx.key, distance_norm], [dist, pick], show_progress="hidden")
    flows = []
    for trigger in (rel_btn.click, cls.input, method.input):  # a new class or method is computed at once
        trigger(class_map, [ctx.key, cls, method, *controls], [rel_img, rel_text])
        if trigger != cls.input:  # flow has no class: a class change leaves a running flow alone
            # No queue status on the text: this listener answers nothing for the other methods, and
            # flow streams its own progress lines.
            flows.append(trigger(flow_job, [ctx.key, method, *controls], [rel_img, rel_text], show_progress="hidden",
                                 **kit.COSTLY))
    flow_stop.click(None, None, None, cancels=flows)
    ctx.long_work.extend(flows)

