"""page/events.py without a browser: the built page has no layout container among any event's
outputs (Gradio would re-read every component inside it on every status message) and keeps at most
one progress status per event; on small constructed Blocks, the check refuses a container output and
the progress target is an event's first picture or chart, else its first output (issue 27; moved
from tests/page/test_first_open.py with the code)."""

from __future__ import annotations

import gradio as gr
import pytest

from page import events, shell
from vizvit.session import Workbench


def test_the_built_page_has_no_container_among_any_events_outputs(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)  # build_demo runs the check itself; and again here
    events.check_no_container_outputs(demo)
    outs = [o for fn in demo.fns.values() for o in fn.outputs]
    assert outs and not any(isinstance(o, events.NO_CONTAINER_OUTPUTS) for o in outs)


def test_every_event_of_the_built_page_keeps_at_most_one_progress_status(tiny16):
    """Gradio writes every kept loading status back on every status message of every event: the
    page's events keep none where they show no progress, else one (events.few_progress_targets)."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    deps = demo.get_config_file()["dependencies"]
    wide = [d for d in deps if d["show_progress_on"] is None or len(d["show_progress_on"]) > 1]
    assert len(deps) > 100 and not wide, wide[:3]
    for d in deps:
        if d["show_progress"] == "hidden" or not d["outputs"]:
            assert d["show_progress_on"] == [], d
    kept = {i for d in deps for i in d["show_progress_on"]}
    assert len(kept) < 0.2 * len({i for d in deps for i in d["outputs"]}), len(kept)


def test_progress_shows_on_an_events_first_picture_else_its_first_output():
    with gr.Blocks() as demo:
        md, img, plot, box = gr.Markdown(), gr.Image(), gr.Plot(), gr.Textbox()
        b = gr.Button()
        b.click(lambda: None, None, [md, img], show_progress="hidden")
        b.click(lambda: None, None, [md, plot, img], show_progress="minimal")
        b.click(lambda: None, None, [box, md])
        b.click(lambda: None, None, [md, img], show_progress_on=md)
        b.click(lambda: None, None, None)
    assert events.few_progress_targets(demo) == 4
    assert [fn.show_progress_on for fn in demo.fns.values()] == [[], [plot], [box], [md], []]


@pytest.mark.parametrize("container", [gr.Tabs, gr.Group, gr.Accordion])
def test_the_check_refuses_a_container_output(container):
    with gr.Blocks() as demo:
        with container() as box:
            with (gr.Tab("x") if container is gr.Tabs else gr.Column()):
                md = gr.Markdown()
        gr.Button().click(lambda: None, None, [md, box])
    with pytest.raises(ValueError, match="containers"):
        events.check_no_container_outputs(demo)


def test_a_tabs_follow_up_shows_its_progress_on_its_own_chart(tiny16):
    """A tab's slow part (on_show's `then`: the Attention tab's distance chart, the Experiments and
    Inside charts) arrives a beat after its pictures, seconds under load: a student sees a timer on
    the chart it fills, not a blank box (a review found them blank, with nothing said)."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    by_id = {b._id: b for b in demo.blocks.values()}
    for elem in ("attn-distance", "shift-top5", "lens-plot"):
        ids = [i for i, b in by_id.items() if b.elem_id == elem]
        assert ids, elem
        shown = [fn for fn in demo.fns.values() if fn.show_progress_on and fn.show_progress_on[0]._id in ids]
        follow = [fn for fn in shown if fn.trigger_mode == "always_last" and fn.show_progress == "minimal"]
        assert follow, (elem, [(fn.name, fn.show_progress) for fn in shown])
