"""page/tabs/compare.py's handlers, without a browser or a server: the built page's Compare events,
called as Gradio calls them, answer what the Compare view answers (views/compare.py) for the controls
sent, and nothing (or empty panels) before a photo or a model B; the depth cursor clamps a position
past the top instead of refusing it. The tab in Chromium is tests/page/test_compare.py."""

from __future__ import annotations

import re

import gradio as gr
from built_page import by_id, same, wired
from PIL import Image

from page.tabs import compare as tab
from vizvit.session import PhotoKey
from vizvit.views import compare

DEPTH_IDS = {"attention_a": "cmp-attn-a", "attention_b": "cmp-attn-b", "rollout_a": "cmp-roll-a",
             "rollout_b": "cmp-roll-b", "verdict": "cmp-verdict"}


def test_moving_the_cursor_answers_the_views_depth_change(built):
    wb, demo, key = built
    fn = wired(demo, "cmp-depth", "change")
    assert {b.elem_id for b in fn.outputs} == set(DEPTH_IDS.values())
    b = wb.catalog.ids[0]
    assert fn.fn(None, b, 2, "mean", True) == {o: gr.skip() for o in fn.outputs}, "no photo: nothing"
    assert fn.fn(key, None, 2, "mean", True) == {o: gr.skip() for o in fn.outputs}, "no model B: nothing"
    for depth, head in ((1, "mean"), (2, "max")):
        got = fn.fn(key, b, depth, head, True)
        want = compare.change_depth(wb.handle(key), compare.CompareParams(model_b=b, depth=depth, head=head))
        for field, elem_id in DEPTH_IDS.items():
            assert same(got[by_id(demo, elem_id)], getattr(want, field)), field
    one, two = (fn.fn(key, b, d, "mean", True)[by_id(demo, "cmp-attn-a")] for d in (1, 2))
    assert not same(one, two), "each depth its own layer's map"


def test_picking_model_b_shows_both_sides_as_the_view_does(built):
    wb, demo, key = built
    fn = wired(demo, "cmp-model", "input")
    # the same handler, inputs and outputs; the heads on a pick (.select: their .input also came on a blur)
    # model B's with the B shown last (its .input comes on a blur too)
    for other, event in (("cmp-head", "select"), ("cmp-shared", "input")):
        o = wired(demo, other, event)
        assert (o.fn.__name__, o.inputs, o.outputs) == ("show", fn.inputs[:-1], fn.outputs)
    assert isinstance(fn.inputs[-1], gr.State) and fn.outputs[-1] is fn.inputs[-1]
    b = wb.catalog.ids[0]
    got = fn.fn(key, b, 2, "mean", True, None)
    assert got[fn.outputs[-1]] == (key, b), "the photo and the B shown, for the next .input"
    assert tab._example_stems().get(key.sha1) == "chelsea", "the photo is an example: its links name it"
    want = compare.show(wb.handle(key), compare.CompareParams(model_b=b, depth=2, head="mean", example="chelsea"))
    for field, elem_id in {**DEPTH_IDS, "title_a": "cmp-title-a", "title_b": "cmp-title-b",
                           "pairs": "cmp-pairs"}.items():
        assert same(got[by_id(demo, elem_id)], getattr(want, field)), field
    depth, head = by_id(demo, "cmp-depth"), by_id(demo, "cmp-head")
    assert (got[depth].maximum, got[depth].value) == (want.positions, want.depth)
    assert got[head].choices == [(h, h) for h in want.heads] or [c[1] for c in got[head].choices] == list(want.heads)
    before = fn.fn(None, b, 2, "mean", True, None)
    assert all(v == gr.skip() for v in before.values()), "no photo yet: nothing cleared (kit.skip says why)"


def test_model_bs_input_with_the_b_already_shown_answers_nothing(built):
    """Gradio's dropdown sends .input on a blur too, picked or not, with the cursor's place as it was then:
    answered, it put a cursor just moved back. The B shown is sent with it; the same B again: nothing."""
    wb, demo, key = built
    fn = wired(demo, "cmp-model", "input")
    b = wb.catalog.ids[0]
    assert all(v == gr.skip() for v in fn.fn(key, b, 2, "mean", True, (key, b)).values())
    assert fn.fn(key, None, 2, "mean", True, (key, b))[fn.outputs[-1]] == (key, None), "B cleared: answered"
    other = wb.catalog.twins()[0]  # the random twin: another B
    assert fn.fn(key, other, 2, "mean", True, (key, b))[fn.outputs[-1]] == (key, other)


def test_model_bs_input_with_that_b_on_a_photo_the_tab_does_not_show_is_answered(built, cat):
    """The tab can show model B on another photo than the session's: a new photo's answer that did not come
    (compare.show failed for it, e.g. the photo pushed out meanwhile) left the photo before in place. Model
    B's .input with that B then draws the new photo, as it did before the B shown was kept (with only B
    kept, it answered nothing, and the tab stayed on the old photo's maps under the new photo)."""
    wb, demo, key = built
    fn = wired(demo, "cmp-model", "input")
    b = wb.catalog.ids[0]
    shown = fn.fn(key, b, 2, "mean", True, None)[fn.outputs[-1]]  # the cat drawn with B
    mirrored = PhotoKey(key.model_id, wb.add_photo(cat.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))
    got = fn.fn(mirrored, b, 2, "mean", True, shown)  # the mirrored cat's own answer never came
    want = compare.show(wb.handle(mirrored), compare.CompareParams(model_b=b, depth=2, head="mean"))
    for field, elem_id in DEPTH_IDS.items():
        assert same(got[by_id(demo, elem_id)], getattr(want, field)), field
    assert all(v == gr.skip() for v in fn.fn(mirrored, b, 2, "mean", True, got[fn.outputs[-1]]).values()), \
        "drawn: its next .input with that B answers nothing"


def test_the_teaching_pairs_links_keep_an_uploaded_photo_by_its_key(built, cat):
    """A walk-through: on an uploaded photo the "Teaching pairs" links kept only example= (none) and opened the
    tab with no photo. An upload's links carry photo=<its key> (?photo= reopens a held upload); the example
    cat's keep its name. Known answer: the key wb.add_photo gave for the mirrored cat."""
    wb, demo, key = built
    fn = wired(demo, "cmp-model", "input")
    b = wb.catalog.ids[0]
    upload = PhotoKey(key.model_id, wb.add_photo(cat.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))
    assert tab._example_stems().get(upload.sha1) is None, "the mirrored cat is no example"
    for k, want, not_there in ((upload, f"&photo={upload.sha1})", "example="), (key, "(?example=chelsea&", "photo=")):
        pairs = fn.fn(k, b, 2, "mean", True, None)[by_id(demo, "cmp-pairs")]
        links = re.findall(r"\]\((\?[^)]*)\)", pairs)
        assert links and all(f"({q})".count(want) == 1 and not_there not in q for q in links), (want, pairs)


def test_each_sides_position_picture_is_labelled_with_its_side_and_model(built):
    """A walk-through on a phone: both pictures were labelled "position-embedding similarity (Positions tab)"."""
    wb, demo, key = built
    fn = wired(demo, "cmp-model", "input")
    b = wb.catalog.twins()[0]
    got = fn.fn(key, b, 2, "mean", True, None)
    for s, name in (("a", key.model_id), ("b", b)):
        shown = got[by_id(demo, f"cmp-pos-{s}")]
        assert shown["label"] == f"{s.upper()}: {name} · position-embedding similarity (Positions tab)", shown["label"]
        assert shown["value"] is not None
    assert by_id(demo, "cmp-pos-b").label.startswith("B: "), "named by its side before a model is shown"
