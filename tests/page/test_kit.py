"""page/kit.py without a browser: kit.in_line (the one place a tab's view events are put in the
order the page sent them) and kit.answer (a named handler's {name: value} as Gradio's answer)."""

from __future__ import annotations

import inspect

import gradio as gr
import pytest

from page import kit
from page.ordered import AnswerOrder
from vizvit.session import PhotoKey

KEY = PhotoKey("m", "sha1")


def _ui() -> tuple[AnswerOrder, dict]:
    with gr.Blocks():
        return AnswerOrder("t"), {n: gr.Textbox(elem_id=n) for n in ("layer", "show", "pic")}


def test_a_line_event_older_than_one_answered_changes_nothing_and_a_set_control_is_read_as_set():
    order, ui = _ui()
    seen = []

    def fn(wb, key, c):
        seen.append((wb, key, c))
        return {"layer": c["layer"] + 1, "pic": f"layer {c['layer']}"}

    handler = kit.in_line(order, ["layer", "show"], fn, ui, ["layer", "pic"], "WB", sets=("layer",))
    assert handler("p:1:0", KEY, 3, "mean") == {ui["layer"]: 4, ui["pic"]: "layer 3", order.stamp: "p:1:0"}
    assert seen == [("WB", KEY, {"layer": 3, "show": "mean"})], "the controls by name, the Workbench bound"
    # Sent before that answer landed: its layer is read as that answer set it (4), not as sent (9).
    assert handler("p:2:0", KEY, 9, "max")[ui["pic"]] == "layer 4"
    stale = handler("p:1:0", KEY, 5, "mean")  # older than p:2, answered after it
    assert stale == {ui["layer"]: gr.skip(), ui["pic"]: gr.skip(), order.stamp: gr.skip()}
    assert handler("p:3:2", None, 5, "mean")[ui["pic"]] == gr.skip(), "no photo: nothing to draw"
    assert len(seen) == 2
    # No stamp (an API call): answered as sent, the stamp box left alone.
    assert handler("", KEY, 7, "mean") == {ui["layer"]: 8, ui["pic"]: "layer 7", order.stamp: gr.skip()}


def test_a_select_line_event_passes_the_clicked_pixel_and_gradio_sees_select_data():
    order, ui = _ui()
    handler = kit.in_line(order, ["layer"], lambda wb, key, c, xy: {"pic": xy}, ui, ["pic"], None, select=True)
    params = list(inspect.signature(handler).parameters)
    assert params[:3] == ["evt", "stamp", "key"]
    evt = gr.SelectData(None, {"index": [12, 30], "value": None})
    assert handler(evt, "q:1:0", KEY, 2)[ui["pic"]] == (12, 30)


def test_a_line_handler_error_is_a_message_in_the_page():
    order, ui = _ui()

    def broken(wb, key, c):
        raise kit.UserError("Choose a head")

    with pytest.raises(gr.Error, match="Choose a head"):
        kit.in_line(order, ["layer"], broken, ui, ["pic"], None)("", KEY, 1)


def test_answer_names_components_binds_the_lead_and_keeps_request_and_generators():
    _, ui = _ui()

    def plain(wb, key, n: int, request: gr.Request = None) -> dict:
        """doc"""
        return {"pic": (wb, key, n), "layer": 1}

    def stream(wb, n: int):
        for i in range(n):
            yield {"pic": (wb, i)}

    h = kit.answer(plain, ui, "WB")
    assert h("k", 2) == {ui["pic"]: ("WB", "k", 2), ui["layer"]: 1}
    assert list(inspect.signature(h).parameters) == ["key", "n", "request"], "Gradio counts the inputs from this"
    assert gr.utils.get_type_hints(h)["request"] is gr.Request, "so Gradio passes the request"
    assert h.__name__ == "plain" and h.__doc__ == "doc"
    s = kit.answer(stream, ui, "WB")
    assert inspect.isgeneratorfunction(s)
    assert list(s(2)) == [{ui["pic"]: ("WB", 0)}, {ui["pic"]: ("WB", 1)}]
    assert kit.answer(lambda: kit.skip(["pic"]), ui)() == {ui["pic"]: gr.skip()}
    other = gr.Textbox()  # a component another part answers for (a tab's preview), merged in as it is
    assert kit.answer(lambda: {"pic": 1, other: 2}, ui)() == {ui["pic"]: 1, other: 2}
