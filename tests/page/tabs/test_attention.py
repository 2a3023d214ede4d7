"""page/tabs/attention.py's handlers, called alone (no browser, no server) on a tiny ViT: each
answers what the Attention views answer for the controls it was sent, under the page's names, and
a click answers for the patch or the grid cell under the pixel clicked."""

from __future__ import annotations

import gradio as gr
import numpy as np
import pytest
from built_page import same

from page import jobs, kit
from page.ordered import AnswerOrder
from page.tabs import attention as tab
from vizvit import vocab
from vizvit.methods import flow
from vizvit.pictures import render
from vizvit.readings import attention as ra, methods
from vizvit.views import attention as ap, layout

FLOW = next(m.name for m in methods.METHODS if m.costly)  # attention flow: a costly job, flow_job's


def controls(**changed) -> dict:
    """The tab's controls as the page sends them (its defaults), by name."""
    c = dict(layer=2, head=1, show="mean", mode="raw", query=None, direction="row", discard=0.0, alpha=0.6,
             cmap="inferno", tau=0.0, shared_scale=False, summary="[CLS]", discard_mode=vocab.DISCARD_MODES[0],
             distance_norm=vocab.DISTANCE_NORMS[0], scale=vocab.ATTN_SCALES[0], artifacts_in_range=False)
    assert list(c) == tab.CONTROLS, "the order the tab's events list the controls in"
    return {**c, **changed}




def assert_shows(answer: dict, want, names: list[str]) -> None:
    for n in names:
        if n == "main" and want.main is None:  # the page draws it from its book: nothing sent
            assert answer[n] == gr.skip()
            continue
        assert same(answer[n], getattr(want, n)), f"{n} differs from the view's own answer"


def test_opening_the_tab_shows_the_views_page_and_sets_the_sliders_to_the_model(photo, tiny16):
    wb, key = photo
    got = tab.opened(wb, key, *controls(layer=99, head=99).values())
    assert set(got) == set(tab.OPENED)
    want = ap.show(wb.handle(key), ra.AttnParams.from_controls(controls(layer=99, head=99)))
    assert_shows(got, want, tab.SHOWN)
    g = tiny16.geometry
    assert (got["layer"].maximum, got["layer"].value) == (g.num_layers, g.num_layers), "clipped to the model"
    assert (got["head"].maximum, got["head"].value) == (g.num_heads, g.num_heads)
    # Within the model's range, the sliders' values are left as the page has them: a layer moved
    # while this answer was on its way stays (issue 52); only the range is sent.
    within = tab.opened(wb, key, *controls(layer=2, head=1).values())
    for name, top in (("layer", g.num_layers), ("head", g.num_heads)):
        assert within[name].constructor_args == {"maximum": top}, name
    assert got["cls"].value == want.classes[0][1] and got["rel_img"] is None and got["rel_text"] == ""
    assert got["summary"].visible is False, "a plain ViT reads only [CLS]"
    assert tab.opened(wb, None, *controls().values()) == {n: gr.skip() for n in tab.OPENED}
    chart = tab.opened_chart(wb, key, *controls().values())
    assert [c[1] for c in chart["pick"].choices] == [c[1] for c in want.distance_choices]
    assert chart["pick"].value is None  # a chooser: a head named there went stale at the next move


def test_a_click_on_the_main_map_makes_the_patch_under_it_the_query(photo, tiny16):
    wb, key = photo
    g = tiny16.geometry
    s, pw = render.display_scale(g), g.patch_size  # square patches
    r, c = 3, 5
    got = tab.click_main(wb, key, controls(), ((c + 0.5) * pw * s, (r + 0.5) * pw * s))
    assert got["query"] == (r, c)
    want = ap.change(wb.handle(key), ra.AttnParams.from_controls(controls(query=(r, c))), with_book=True)
    assert_shows(got, want, [*tab.SHOWN_CHANGE, "book"])
    back = tab.to_cls_view(wb, key, controls(query=(r, c)))
    assert back["query"] is None
    assert same(back["readout"], ap.change(wb.handle(key), ra.AttnParams.from_controls(controls())).readout)
    # From a column (what every patch gives the query): back to the summary token is its row, the default.
    # Kept on column, the map showed each patch's attention to [CLS] (its column) instead.
    col = tab.to_cls_view(wb, key, controls(query=(r, c), direction="column"))
    assert (col["query"], col["direction"]) == (None, "row")
    row = ap.change(wb.handle(key), ra.AttnParams.from_controls(controls()), with_book=True)
    column = ap.change(wb.handle(key), ra.AttnParams.from_controls(controls(direction="column")))
    assert same(col["readout"], row.readout) and not same(col["readout"], column.readout)
    assert same(col["book"], row.book)


def test_a_click_on_the_grid_opens_the_head_of_the_cell_under_it(photo, tiny16):
    wb, key = photo
    g = tiny16.geometry
    tile = layout.grid_tile(g)
    lay, hd = g.num_layers, g.num_heads  # the last cell: bottom right
    step = tile + layout.GRID_SEP
    xy = (layout.GRID_LEFT + (hd - 1) * step + tile // 2, layout.GRID_TOP + (lay - 1) * step + 1)
    got = tab.click_grid(wb, key, controls(layer=1, head=1), xy)
    assert (got["layer"], got["head"], got["show"]) == (lay, hd, vocab.ONE_HEAD)
    one = ra.AttnParams.from_controls(controls(layer=lay, head=hd, show=vocab.ONE_HEAD))
    assert_shows(got, ap.change(wb.handle(key), one, drawn_in_page=True), tab.SHOWN_CHANGE)
    moved = tab.redraw_one_head(wb, key, controls(layer=lay, head=hd, show="max"))
    assert moved["show"] == vocab.ONE_HEAD and moved["readout"] == got["readout"], "the head slider leaves a fusion"
    assert "book" not in got and "book" in tab.relook(wb, key, controls()), "the page draws a layer from its book"


def test_a_grid_clicks_answer_sets_the_controls_an_event_sent_before_it_landed_reads(photo, tiny16):
    """The line as the page wires it (kit.in_line): a slider event sent before the click's answer
    landed is answered for the head the click opened, not the fusion it carried."""
    wb, key = photo
    with gr.Blocks():
        order = AnswerOrder("attention-test")
        ui = {n: gr.Textbox(elem_id=n) for n in [*tab.CONTROLS, *tab.SHOWN, "cls", "rel_img", "rel_text"]}
    g = tiny16.geometry
    tile = layout.grid_tile(g)
    click = kit.in_line(order, tab.CONTROLS, tab.click_grid, ui, ["layer", "head", "show", *tab.SHOWN_CHANGE], wb,
                        sets=("layer", "head", "show"), select=True)
    redraw = kit.in_line(order, tab.CONTROLS, tab.redraw, ui, tab.SHOWN_CHANGE, wb)
    at = [layout.GRID_LEFT + tile + layout.GRID_SEP + 1, layout.GRID_TOP + 1]
    evt = gr.SelectData(None, {"index": at, "value": None})
    clicked = click(evt, "p:1:0", key, *controls(layer=1, head=1).values())
    assert clicked[ui["head"]] == 2 and clicked[order.stamp] == "p:1:0"
    late = redraw("p:2:0", key, *controls(layer=1, head=1, show="mean").values())  # sent before p:1's answer
    assert late[ui["readout"]] == clicked[ui["readout"]]
    assert redraw("p:1:0", key, *controls().values())[ui["readout"]] == gr.skip(), "older than one answered"


def test_a_head_picked_from_the_list_or_the_chart_opens_that_head():
    # The head opens and the list is a chooser again (a value there went stale at the next move).
    assert tab.pick_head("2,1") == {"layer": 2, "head": 1, "show": vocab.ONE_HEAD, "pick": None}
    assert tab.pick_head("2,1,7") == {"layer": 2, "head": 1, "show": vocab.ONE_HEAD, "pick": None}  # a click's count
    assert tab.pick_head(None) == tab.pick_head("") == {n: gr.skip() for n in ("layer", "head", "show", "pick")}


def test_class_maps_answer_as_the_views_and_leave_attention_flow_to_its_job(photo):
    wb, key = photo
    v = controls().values()
    img, text = ap.explain(wb.handle(key), ap.EXPLAIN_METHODS[0], 1, ra.AttnParams.from_controls(controls()))
    got = tab.class_map(wb, key, 1, ap.EXPLAIN_METHODS[0], *v)
    assert np.array_equal(got["rel_img"], img) and got["rel_text"] == text
    assert tab.class_map(wb, key, 1, FLOW, *v) == {n: gr.skip() for n in tab.RELEVANCE}
    with pytest.raises(gr.Error, match="Upload a photo first") as e:
        tab.class_map(wb, None, 1, ap.EXPLAIN_METHODS[0], *v)
    assert not e.value.print_exception, "a caller's doing: no traceback in the log"
    # A class box a caller sent empty, with a photo: said as such, and no traceback (each call printed one)
    with pytest.raises(gr.Error, match="Pick a class from the list") as e:
        tab.class_map(wb, key, None, ap.EXPLAIN_METHODS[0], *v)
    assert not e.value.print_exception
    with pytest.raises(gr.Error, match="Upload a photo first") as e:
        list(tab.flow_job(wb, None, FLOW, None, *v))
    assert not e.value.print_exception
    assert list(tab.flow_job(wb, key, ap.EXPLAIN_METHODS[0], None, *v)) == [{n: gr.skip() for n in tab.RELEVANCE}]
    fig_norm = vocab.DISTANCE_NORMS[-1]
    d = tab.redistance(wb, key, fig_norm)
    assert d["pick"].value is None and d["dist"] is not None


def test_stop_says_a_running_job_stopped_and_leaves_a_finished_maps_text_alone():
    """Stop ends a costly map's job (Gradio's cancels=); its last progress line ("50 of 197 max-flows,
    about 9 s left") stayed up as if it still ran. The job's own lines become a note; a finished map's
    text, or another method's, is left as it is."""
    costly = next(m.name for m in methods.COSTLY)
    running = ["Attention flow: 50 of 197 max-flows in 3 s, about 9 s left. Stop ends it (nothing is kept "
               "until it is done).", jobs.waiting_text("attention flow", 2), jobs.waiting_text("attention flow", 0)]
    for line in running:
        assert flow.is_progress(line) or line.startswith(jobs.WAITING)
        assert tab.stop_job(costly, line) == {"rel_text": ap.STOPPED_TEXT}, line
    skipped = {"rel_text": gr.skip()}
    assert tab.stop_job(costly, "**attention flow** from the summary token, any class: sum 0.99") == skipped
    assert tab.stop_job(costly, None) == tab.stop_job(costly, "") == skipped
    # the text box's value is the caller's to send: a dict or a list was "Something went wrong"
    assert tab.stop_job(costly, {"a": 1}) == tab.stop_job(costly, ["x"]) == tab.stop_job(costly, 7) == skipped
    other = next(m.name for m in methods.METHODS if not m.costly)
    assert tab.stop_job(other, running[0]) == skipped
