"""page/follow_up.py: a tab's follow-up leaves alone an output that an event started after it has
already answered (the review's race: the Experiments top-5 for dx = 0 beside the picture for dx = 1),
and writes the rest; on the built page, every event that writes a follow-up's output is watched.
The handlers Gradio holds are called as Gradio calls them: in a thread, with its request context."""

from __future__ import annotations

import contextvars
import threading
import time
from types import SimpleNamespace

import gradio as gr
from gradio.context import LocalContext

from page import follow_up, shell
from vizvit.session import Workbench


def _call(fn, session: str, *args):
    """fn(*args) in a thread of its own with Gradio's request context for `session`, as Gradio runs it."""
    out: dict = {}

    def run():
        LocalContext.request.set(SimpleNamespace(session_hash=session))
        out["res"] = fn(*args)

    t = threading.Thread(target=run)
    t.start()
    return t, out


def _demo(exempt: bool = False):
    """A follow-up writing (chart, note) and a control's event writing chart, as a tab wires them
    (exempt: the chart is an output the guard leaves alone)."""
    go, entered = threading.Event(), threading.Event()
    with gr.Blocks() as demo:
        x, chart, note, other = gr.Number(), gr.Textbox(), gr.Textbox(), gr.Textbox()

        def slow_follow_up(v):  # the chart for the value it was sent with, after a wait the test ends
            entered.set()
            go.wait(5)
            return {chart: f"chart for {v}", note: f"note for {v}"}

        first = gr.Button().click(lambda: None, None, None)
        follow = first.then(slow_follow_up, x, [chart, note])
        x.input(lambda v: (f"chart for {v}", "untouched"), x, [chart, other])  # the control's own event
        x.submit(lambda v: (gr.skip(), f"skipped {v}"), x, [chart, other])  # writes no chart
    follow_up.guard(demo, [follow["id"]], [chart] if exempt else [])
    fns = list(demo.fns.values())
    return go, entered, fns[1].fn, fns[2].fn, fns[3].fn


def _started(follow, entered, session: str, v):
    """The follow-up called (outside Gradio's queue it is sent when it starts) and inside its work."""
    t, out = _call(follow, session, v)
    assert entered.wait(5)
    return t, out


def test_a_follow_up_leaves_a_newer_answer_alone_and_writes_the_rest():
    go, entered, follow, control, _ = _demo()
    t, late = _started(follow, entered, "s1", 0)  # sent with x = 0, still working
    c, moved = _call(control, "s1", 1)  # x moved to 1 after it was sent: answered first
    c.join()
    assert moved["res"] == ("chart for 1", "untouched")
    go.set()
    t.join()
    assert late["res"][list(late["res"])[0]]["__type__"] == "update"  # the chart for x = 0: skipped
    assert list(late["res"].values())[1] == "note for 0"  # what no newer event wrote still lands


def test_a_newer_event_that_wrote_nothing_there_or_another_session_changes_nothing():
    go, entered, follow, control, skipping = _demo()
    t, late = _started(follow, entered, "s1", 0)
    c, _ = _call(skipping, "s1", 1)  # answered first, but with gr.skip() for the chart
    o, _ = _call(control, "s2", 1)  # another session's control (another page) answered first
    c.join(), o.join()
    go.set()
    t.join()
    assert list(late["res"].values()) == ["chart for 0", "note for 0"]


def test_an_event_started_before_the_follow_up_does_not_hide_it():
    go, entered, follow, control, _ = _demo()
    c, _ = _call(control, "s1", 1)
    c.join()
    t, late = _started(follow, entered, "s1", 2)  # sent later, with the newer value: it must land
    go.set()
    t.join()
    assert list(late["res"].values()) == ["chart for 2", "note for 2"]


def test_an_exempt_output_lands_whatever_came_since():
    go, entered, follow, control, _ = _demo(exempt=True)
    t, late = _started(follow, entered, "s1", 0)
    c, _ = _call(control, "s1", 1)
    c.join()
    go.set()
    t.join()
    assert list(late["res"].values()) == ["chart for 0", "note for 0"]


def test_the_order_is_when_each_event_joined_gradios_queue_not_when_it_started():
    """Under load an event waits in its concurrency group: one sent later may start first."""
    joined = {"e1": SimpleNamespace(enqueue_time=5.0)}
    blocks = SimpleNamespace(_queue=SimpleNamespace(event_ids_to_events=joined))

    def read(event_id):
        LocalContext.blocks.set(blocks)
        LocalContext.event_id.set(event_id)
        return follow_up.sent_at()

    ctx = contextvars.copy_context()
    assert ctx.run(read, "e1") == 5.0
    t0 = time.monotonic()
    assert t0 <= contextvars.copy_context().run(read, "gone") <= time.monotonic()  # not queued: now


def test_the_book_forgets_the_least_recent_session_past_its_bound():
    book = follow_up.Writes(keep=2)
    for s in ("a", "b", "c"):
        book.wrote(s, 10.0, [1])
    assert book.newer("a", 0.0, [1]) == set() and book.newer("c", 0.0, [1]) == {1}


def test_on_the_built_page_every_writer_of_a_follow_ups_output_is_watched(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    fns = demo.fns
    follows = [fn for fn in fns.values() if getattr(fn.fn, "vizvit_role", None) == "follow-up"]
    watched = {o._id for fn in follows for o in fn.outputs}
    # The Attention distance chart and both Experiments top-5 charts are a follow-up's.
    elems = {o.elem_id for fn in follows for o in fn.outputs}
    assert {"attn-distance", "shift-top5", "mask-top5", "lens-plot"} <= elems, elems
    writers = [fn for fn in fns.values() if fn.fn is not None and any(o._id in watched for o in fn.outputs)]
    unwatched = [fn.name for fn in writers if getattr(fn.fn, "vizvit_role", None) is None
                 and any(o.elem_id != "emb-tokens" for o in fn.outputs if o._id in watched)]
    assert len(writers) > len(follows) and not unwatched, unwatched
    # The Embeddings token book is left alone: a depth move (its only other writer) is not watched for it.
    depth = [fn for fn in writers if fn.name == "show_depth"]
    assert depth and all(getattr(fn.fn, "vizvit_role", None) is None for fn in depth)
