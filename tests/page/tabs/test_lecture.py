"""The For-lecturers tab's wiring (page/tabs/lecture.py), without a browser: in the built page, moving
the calculator's sliders calls the tab's handler, whose table and sentence are the counts worked out by
hand (224 px, 16 px patches: 50,177 pixel tokens with [CLS], 197 patch tokens with [CLS]). This file does not use
the page's server; the tab in Chromium is tests/page/test_lecture.py."""

from __future__ import annotations

import re

import pytest
from built_page import by_id

from page import shell
from vizvit.session import Workbench


@pytest.fixture(scope="module")
def demo(tiny16):
    return shell.build_demo(Workbench(cache_bytes=64 << 20, device="cpu"), tiny16.id)


def test_the_sliders_call_the_calculator_with_the_counts_by_hand(demo):
    size, patch = by_id(demo, "cost-size"), by_id(demo, "cost-patch")
    table, text = by_id(demo, "cost-table"), by_id(demo, "cost-text")
    wired = [fn for fn in demo.fns.values() if any(t[0] == size._id for t in fn.targets)]
    assert len(wired) == 1 and [b._id for b in wired[0].inputs] == [size._id, patch._id]
    assert {b._id for b in wired[0].outputs} == {table._id, text._id}
    out = wired[0].fn(224, 16)
    sentence = out[text]
    assert "**50,177** tokens (with [CLS])" in sentence and "197 tokens (with [CLS])" in sentence  # 224² + 1, 14² + 1
    assert re.search(r"\*\*\d[\d,]*× smaller\*\*", sentence)
    assert "no saving" in wired[0].fn(224, 1)[text]  # P = 1: every pixel a token, as with pixels
    assert "last 4 px" in wired[0].fn(100, 16)[text]  # 100 = 6·16 + 4
