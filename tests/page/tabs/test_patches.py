"""page/tabs/patches.py's handlers, without a browser or a server: the built page's events of the
Patches tab, called as Gradio calls them, answer what the Patches view answers (views/patches.py)
for the controls sent, skip everything before a photo, and a click on the grid picks the patch
under the pixel clicked. The tab in Chromium is tests/page/test_patches.py."""

from __future__ import annotations

import gradio as gr
import pytest
from built_page import by_id, same, wired

from vizvit.pictures import render
from vizvit.views import common as panels, patches


@pytest.mark.parametrize("lines, indices, clicked", [(True, False, None), (False, True, (1, 2))])
def test_a_box_ticked_redraws_what_the_view_changes(built, lines, indices, clicked):
    wb, demo, key = built
    fn = wired(demo, "patch-lines", "change")
    assert fn.api_name == "patches_view" and fn is not wired(demo, "patch-indices", "change")
    ids = ["patch-grid", "patch-info", "sequence-strip"]
    assert [b.elem_id for b in fn.outputs][:3] == ids
    assert fn.fn(None, lines, indices, clicked) == {b: gr.skip() for b in fn.outputs}, "before a photo: nothing"
    got = fn.fn(key, lines, indices, clicked)
    want = patches.change(wb.handle(key), patches.PatchesParams(lines=lines, indices=indices, clicked=clicked))
    for elem_id, field in zip(ids, ("grid", "patch_info", "strip")):
        assert same(got[by_id(demo, elem_id)], getattr(want, field)), field
    assert "patch-grid" in got[fn.outputs[3]]  # the grid's flipbook, named by its picture


def test_ticking_the_boxes_changes_the_grid(built):
    wb, demo, key = built
    fn = wired(demo, "patch-lines", "change")
    grid = by_id(demo, "patch-grid")
    assert not same(fn.fn(key, True, False, None)[grid], fn.fn(key, False, False, None)[grid])


def test_a_click_picks_the_patch_under_the_pixel(built):
    wb, demo, key = built
    fn = wired(demo, "patch-grid", "select")
    g = wb.model(key.model_id).geometry
    clicked = fn.outputs[0]
    for x, y in ((0, 0), (200, 37), (223, 223)):
        evt = gr.SelectData(by_id(demo, "patch-grid"), {"index": [x, y], "value": None})
        got = fn.fn(key, evt)[clicked]
        assert got == panels.clicked_patch(g, x, y)
    evt = gr.SelectData(by_id(demo, "patch-grid"), {"index": [200, 37], "value": None})
    assert fn.fn(None, evt) == {clicked: gr.skip()}
    side = g.patch_size * render.display_scale(g)  # a patch's side on the enlarged grid the page shows
    assert fn.fn(key, evt)[clicked] == (int(37 // side), int(200 // side)), "(row, column), from the top left"
