"""The For-lecturers tab's wiring (page/tabs/lecture.py), without a browser: in the built page, moving
the calculator's sliders calls the tab's handler, whose table and sentence are the counts worked out by
hand (224 px, 16 px patches: 50,177 pixel tokens with [CLS], 197 patch tokens with [CLS]). This file does not use
the page's server; the tab in Chromium is tests/page/test_lecture.py."""

from __future__ import annotations

import re

import gradio as gr
import pytest
from built_page import by_id

from page import shell
from vizvit.session import Workbench


@pytest.fixture(scope="module")
def demo(tiny16):
    return shell.build_demo(Workbench(cache_bytes=64 << 20, device="cpu"), tiny16.id)


def _wired(demo, trigger: str) -> list:
    size = by_id(demo, "cost-size")
    return [fn for fn in demo.fns.values() if (size._id, trigger) in [tuple(t) for t in fn.targets]]


def test_the_sliders_call_the_calculator_with_the_counts_by_hand(demo):
    size, patch = by_id(demo, "cost-size"), by_id(demo, "cost-patch")
    table, text = by_id(demo, "cost-table"), by_id(demo, "cost-text")
    wired = _wired(demo, "input")
    assert len(wired) == 1 and [b._id for b in wired[0].inputs] == [size._id, patch._id]
    assert {b._id for b in wired[0].outputs} == {table._id, text._id, size._id, patch._id}
    out = wired[0].fn(224, 16)
    sentence = out[text]
    assert "**50,177** tokens (with [CLS])" in sentence and "197 tokens (with [CLS])" in sentence  # 224² + 1, 14² + 1
    assert re.search(r"\*\*\d[\d,]*× smaller\*\*", sentence)
    assert "no saving" in wired[0].fn(224, 1)[text]  # P = 1: every pixel a token, as with pixels
    assert "last 4 px" in wired[0].fn(100, 16)[text]  # 100 = 6·16 + 4


def test_a_number_typed_out_of_range_is_clamped_in_the_box_and_said(demo):
    """Typing 200 for P (1..64) and pressing Enter: Gradio's Slider refused the event ("Value 200 is greater than
    maximum value 64"), the box kept 200 over the table of the P before. The numbers now come as typed
    (preprocess off: Gradio's check would refuse them first), the box is set to 64, the table is for 64
    (224 // 64 = 3: 3² + 1 = 10 tokens) and a line says why."""
    size, patch = by_id(demo, "cost-size"), by_id(demo, "cost-patch")
    table, text = by_id(demo, "cost-table"), by_id(demo, "cost-text")
    typed, left = _wired(demo, "input")[0], _wired(demo, "release")[0]
    assert typed.preprocess is False and left.preprocess is False
    assert {b._id for b in left.outputs} == {table._id, text._id, size._id, patch._id}
    out = typed.fn(224, 200)
    assert out[patch] == 64 and "P is at most 64" in out[text] and "10 tokens (with [CLS])" in out[text]
    assert ["tokens n", "50,177", "10"] in out[table]
    assert out[size] == gr.skip()  # the side as typed
    out = typed.fn(3, 16)  # 3 on the way to 384: said, no table, the box as typed
    assert out[table] == [] and "at least 16 px" in out[text] and out[size] == gr.skip()
    # Leaving one box for the other sends this event with the numbers in range before: answered, it landed after the
    # other box's newer answer and wrote a table over its line. Numbers in range are their input's to answer.
    assert all(v == gr.skip() for v in left.fn(224, 64).values())
    out = left.fn(3, 16)  # the box left: Gradio sets it to 16, and the table is for 16 (1 + 1 token)
    assert out[size] == 16 and "the table is for 16 px" in out[text] and ["tokens n", "257", "2"] in out[table]
