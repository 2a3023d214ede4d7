"""page/kit.py without a browser: kit.in_line (the one place a tab's view events are put in the
order the page sent them), kit.answer (a named handler's {name: value} as Gradio's answer), every
tab's open before a photo, and a picture's cells. Who a caller is and who stops a costly job:
tests/page/test_jobs.py."""

from __future__ import annotations

import inspect
import typing

import gradio as gr
import numpy as np
import pytest

from page import kit
from page.ordered import AnswerOrder
from vizvit.errors import UserError
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
        raise UserError("Choose a head")

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


def test_a_request_after_star_args_is_refused_at_wiring_gradio_would_never_pass_it():
    """Gradio's special_args reads the positional parameters only: a gr.Request after *v stayed None, so
    the page's attention flows ran outside the fair line (seen in /stats: no job listed)."""
    _, ui = _ui()

    def late(wb, key, *v, request: gr.Request = None):
        return {}

    def late_event(wb, *v, evt: gr.SelectData | None = None):
        return {}

    for fn in (late, late_event):
        with pytest.raises(TypeError, match="only before"):
            kit.answer(fn, ui, "WB")


@pytest.mark.slow
def test_every_handler_of_the_page_that_names_a_request_gets_one_from_gradio(tiny16):
    """Gradio's own special_args, over the built page: each handler with a gr.Request parameter receives it."""
    from gradio.helpers import special_args

    from page import shell
    from vizvit.session import Workbench

    wb = Workbench(cache_bytes=16 << 20, device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    sentinel, names = object(), []
    for fn in demo.fns.values():
        if fn.fn is None or gr.Request not in {a for h in gr.utils.get_type_hints(fn.fn).values()
                                               for a in (h, *typing.get_args(h))}:
            continue
        inputs, *_ = special_args(fn.fn, inputs=[None] * len(fn.inputs), request=sentinel)
        assert any(x is sentinel for x in inputs), fn.name
        names.append(fn.name)
    assert {"flow_job", "sweep", "curves", "importance"} <= set(names), names


def _blank(v) -> bool:
    return v is None or (isinstance(v, str) and not v)


@pytest.mark.slow
def test_every_tabs_open_with_no_photo_yet_clears_nothing(tiny16):
    """A deep link clicks its tab open while the photo still loads: that show (no key yet) must not
    clear what the photo's own answer, which may land first, drew (CI: the Compare tab stayed blank).
    Setting a control to the model's range, or a text that is the same with a photo, is no clearing."""
    from starlette.requests import Request

    from page import shell
    from vizvit.session import Workbench

    wb = Workbench(cache_bytes=16 << 20, device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    link = gr.Request(Request({"type": "http", "method": "GET", "path": "/", "headers": [],
                               "query_string": b"example=chelsea&tab=lesson&lesson=1&step=2"}))
    tabs = {b._id: b for b in demo.blocks.values() if isinstance(b, gr.Tab)}
    opens = [fn for fn in demo.fns.values() if fn.fn is not None
             and any(t[0] in tabs and t[1] == "select" for t in fn.targets)]
    assert len(opens) >= 8, [tabs[t[0]].id for fn in opens for t in fn.targets]
    for fn in opens:
        if fn.inputs[:1] == [] or getattr(fn.inputs[0], "value", "x") is not None:
            continue  # not a show of the session's key (e.g. a tab with no photo view)
        args = [None if i == 0 else getattr(c, "value", None) for i, c in enumerate(fn.inputs)]
        takes_request = "request" in inspect.signature(fn.fn).parameters
        out = fn.fn(*args, **({"request": link} if takes_request else {}))
        vals = list(out.values()) if isinstance(out, dict) else list(out if isinstance(out, (list, tuple)) else [out])
        cleared = [v for v in vals if _blank(v) or (isinstance(v, dict) and "value" in v and _blank(v["value"]))]
        assert not cleared, (fn.name, [tabs[t[0]].id for t in fn.targets], cleared[:3])


def test_a_picture_of_cells_carries_its_layout_for_the_keys_and_nothing_else_changes():
    """kit.patch_cells / with_cells (issue 51: web/a11y.js reads the class): a 14×14 grid of 16-px
    patches shown 3× (render.display_scale for 224 px) steps 48 px from the corner; the heads grid
    starts past its labels; no picture (a skip, None) passes through untouched."""
    from vizvit.model.models import Geometry
    from vizvit.pictures import render

    g = Geometry(image_size=(224, 224), patch_size=16, grid=(14, 14), num_prefix_tokens=1, num_layers=12,
                 num_heads=3, hidden_size=8)
    assert render.display_scale(g) == 3
    pic = np.zeros((672, 760, 3), np.uint8)  # the map with its colour bar to the right
    assert kit.patch_cells(pic, g)["elem_classes"] == ["vv-cells-14x14-0-0-48-48"]
    assert kit.patch_cells(pic, g)["value"] is pic
    assert kit.with_cells(pic, 12, 3, (86, 86), (66, 30))["elem_classes"] == ["vv-cells-12x3-66-30-86-86"]
    skip = gr.skip()
    assert kit.with_cells(skip, 2, 2) is skip and kit.with_cells(None, 2, 2) is None


def test_a_clamped_slider_takes_a_position_past_its_top_as_its_top():
    s = kit.ClampedSlider(1, 2, value=2, step=1)
    assert s.preprocess(12) == 2 and s.preprocess(-3) == 1 and s.preprocess(None) is None
    with pytest.raises(gr.Error):
        gr.Slider(1, 2, value=2, step=1).preprocess(12)  # what Gradio's own slider does: the event fails


def test_every_slider_built_for_twelve_layers_or_heads_clamps(tiny16):
    """The page is built with ViT-B/16's 12 layers and heads, then each slider's top is set for the
    model: an event sent before the page heard of the new top (a photo uploaded as the page opens)
    carries 12, and a plain Slider would fail it (seen: "Value 12 is greater than maximum value 2",
    the upload's pictures never came)."""
    from page import shell
    from vizvit.session import Workbench

    demo = shell.build_demo(Workbench(cache_bytes=64 << 20, device="cpu"), tiny16.id)
    built_for_12 = {b.elem_id: type(b) for b in demo.blocks.values() if isinstance(b, gr.Slider) and b.maximum == 12}
    assert {"attn-layer", "attn-head", "cam-layer", "lens-depth", "emb-depth", "cmp-depth"} <= set(built_for_12)
    assert all(t is kit.ClampedSlider for t in built_for_12.values()), built_for_12


def test_a_clicks_place_from_event_data_a_caller_wrote_is_two_numbers_or_a_sentence():
    """A select event's data is the caller's to write: each handler read evt.index[0] and [1] as they
    came, and {"index": {}} or ["a", 3] was "Something went wrong" and a traceback in the log."""
    def at(index):
        return kit.click_at(gr.SelectData(None, {"index": index, "value": None}))

    assert at([12, 30]) == (12, 30) and at((0, 0)) == (0, 0) and at([3.0, 4.7]) == (3, 4)
    assert at([-5, 7]) == (-5, 7), "off the picture: the view's own business (it clamps or ignores)"
    for bad in ({}, {"a": 1}, [1], [1, 2, 3], "ab", 7, 1e308, None, ["a", 3], [None, 3], [[1], 2],
                [True, 2], [float("nan"), 1], [float("inf"), 1], [10**40, 1], [1, -1e300]):
        with pytest.raises(UserError, match="two numbers"):
            at(bad)


def test_every_select_handler_of_the_page_answers_a_hostile_place_with_a_sentence(tiny16, cat):
    """The page's select handlers (patches, embeddings, positions, experiments, inside, the lens table)
    each refuse event data that is no place with the click sentence, not 'Something went wrong'."""
    from page.tabs import embeddings, experiments, inside, patches, positions
    from vizvit.session import Workbench

    wb = Workbench(cache_bytes=32 << 20, device="cpu")
    wb.add_model(tiny16)
    key = PhotoKey(tiny16.id, wb.add_photo(cat))
    evt = gr.SelectData(None, {"index": {"x": 1}, "value": None})
    calls = [lambda: patches.click(wb, key, evt), lambda: positions.click(wb, key, evt),
             lambda: inside.click(wb, key, evt), lambda: inside.clicked_depth(evt),
             lambda: embeddings.click(wb, {}, key, 1, None, "row", 0.1, evt),
             lambda: experiments.click(wb, {}, key, (), "drop", "", evt)]
    for call in calls:
        with pytest.raises(gr.Error, match="two numbers"):
            kit.safe(call)()
