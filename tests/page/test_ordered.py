"""page/ordered.py: an answer to an event older than one already answered for its page is dropped,
and a control set by an answer the page had not taken in is read as that answer set it."""

from __future__ import annotations

import gradio as gr

from page import web
from page.ordered import AnswerOrder


def _order(**kw) -> AnswerOrder:
    with gr.Blocks():
        return AnswerOrder("t", **kw)


def test_an_event_older_than_one_answered_is_stale_and_each_page_counts_alone():
    o = _order()
    assert o.fresh("a:2:0") and o.fresh("a:5:2")
    assert not o.fresh("a:3:2"), "sent before a:5, answered after it"
    assert o.fresh("a:5:2"), "the same event again (a retry) is not older"
    assert o.fresh("b:1:0"), "another page's count is its own"
    assert o.fresh("a:6:5") and not o.fresh("a:4:2")
    for no_stamp in (None, "", "a:1", "a:x:0", ":1:0"):
        assert o.fresh(no_stamp), f"{no_stamp!r}: no stamp (an API call) is always answered"


def test_a_control_set_by_an_answer_not_yet_taken_in_is_read_as_it_set_it():
    o = _order()
    v = {"layer": 2, "head": 1, "show": "mean"}
    assert o.take("a:1:0", v) == v
    o.sets("a:1:0", layer=1, head=2, show="one head")  # a grid click's answer
    # Sent before that answer landed (it had taken in none): the answer's controls, the rest as sent.
    assert o.take("a:2:0", {**v, "layer": 5}) == {"layer": 1, "head": 2, "show": "one head"}
    # Sent after it landed: the page shows that answer's controls, and what the user moved since.
    assert o.take("a:3:1", {**v, "layer": 5}) == {**v, "layer": 5}
    assert o.take("a:4:3", {"head": 1}) == {"head": 1}, "only the controls the event reads"
    assert o.take("b:1:0", v) == v, "another page's answers set nothing here"
    assert o.take("a:2:0", v) is None, "older than one already answered"


def test_pages_are_remembered_up_to_a_bound():
    o = _order(keep=3)
    for p in "abcd":
        assert o.fresh(f"{p}:9:0")
    assert o.fresh("a:1:0"), "the least recently answered page was forgotten"
    assert not o.fresh("d:1:0")


def test_the_line_stamps_its_first_input_runs_one_at_a_time_and_answers_name_their_stamp():
    o = _order()
    line = o.line(show_progress="hidden")
    assert line["concurrency_limit"] == 1 and line["js"] == web.asset("answer_order.js")
    assert "inputs.slice(1)" in line["js"]  # the stamp is the first input; the others go on unchanged
    assert o.answered("a:3:1") == {o.stamp: "a:3:1"}
