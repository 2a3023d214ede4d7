"""The Positions tab's wiring (page/tabs/positions.py), without a browser: in the built page the
size menu offers vocab.RESOLUTIONS and calls the other-resolution handler, which answers nothing
but empty panels before a photo, and the photo's panel at the chosen size after one. This file
does not use the page's server; the tab in Chromium is tests/page/test_positions.py."""

from __future__ import annotations

import gradio as gr
import pytest
from built_page import by_id

from page import shell
from vizvit import vocab
from vizvit.session import PhotoKey, Workbench


@pytest.fixture(scope="module")
def built(tiny16):
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    return wb, shell.build_demo(wb, tiny16.id)


def test_the_size_menu_calls_the_other_resolution_with_the_chosen_size(built, cat):
    wb, demo = built
    size = by_id(demo, "pos-size")
    assert [c[1] for c in size.choices] == list(vocab.RESOLUTIONS) and size.value == 384
    outs = {by_id(demo, e)._id for e in ("pos-res-grid", "pos-res-top5", "pos-res-text")}
    wired = [fn for fn in demo.fns.values() if any(t[0] == size._id and t[1] == "change" for t in fn.targets)]
    assert len(wired) == 1 and {b._id for b in wired[0].outputs} == outs
    assert [b._id for b in wired[0].inputs][1:] == [size._id]  # the session's key first, then the size
    text = by_id(demo, "pos-res-text")
    before = wired[0].fn(None, 288)
    assert {c._id for c in before} == outs and all(v == gr.skip() for v in before.values())  # kit.skip
    key = PhotoKey(wb.catalog.ids[0], wb.add_photo(cat))
    after = wired[0].fn(key, 288)
    assert "288" in str(after[text]) and after[by_id(demo, "pos-res-grid")] is not None
