"""page/tabs/camera.py's handlers, without a browser, a server or a camera: the built page's Camera
tab events, called as Gradio calls them. A control moved redraws the session's photo as
views/camera.py draws it (nothing before a photo); the button's link carries the tab's model, map
controls and the heads switched off on that model only. The live page in Chromium is
tests/page/test_camera.py."""

from __future__ import annotations

from urllib.parse import parse_qs

import gradio as gr
import pytest

from vizvit.model.ablation import Ablation
from vizvit.session import PhotoKey
from vizvit.views import camera


def wired(demo, elem_id: str, trigger: str):
    """The one handler (not a page script) a trigger of a component with this elem_id runs (the
    live page reuses the tab's control ids: its controls have no such event)."""
    ids = {b._id for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id}
    fns = [fn for fn in demo.fns.values()
           if fn.fn is not None and any(t[0] in ids and t[1] == trigger for t in fn.targets)]
    assert len(fns) == 1, (elem_id, trigger)
    return fns[0]


@pytest.mark.parametrize("elem_id", ["cam-layer", "cam-heads", "cam-mode"])
def test_a_control_moved_redraws_the_photo_as_the_view_draws_it(built, elem_id):
    wb, demo, key = built
    fn = wired(demo, elem_id, "input")
    assert [o.elem_id for o in fn.outputs] == ["cam-picture"]
    picture = fn.outputs[0]
    assert fn.fn(None, 1, camera.HEAD_CHOICES[0], "raw") == {picture: gr.skip()}, "no photo: nothing"
    for layer, heads, mode in ((1, camera.HEAD_CHOICES[0], "raw"), (2, "head 2", "rolled out")):
        got = fn.fn(key, layer, heads, mode)
        want = camera.show(wb.handle(key), camera.CameraParams(layer=layer, heads=heads, mode=mode)).picture
        assert got == {picture: want}
    assert fn.fn(key, 1, "head 1", "raw") != fn.fn(key, 2, "head 1", "raw"), "each layer its own picture"


def test_the_buttons_link_names_the_model_controls_and_heads_off_on_that_model(built):
    wb, demo, key = built
    fn = wired(demo, "cam-open", "click")
    assert [o.elem_id for o in fn.outputs] == ["cam-target"]

    def link(*values) -> str:  # the link the button's answer puts in the hidden box
        return fn.fn(*values)[fn.outputs[0]]

    model = wb.catalog.public(key.model_id)
    first = link(key, key.model_id, 2, "head 1", "raw")
    assert first.startswith("camera?")
    assert parse_qs(first.split("?", 1)[1]) == {"model": [model], "layer": ["2"], "heads": ["head 1"], "mode": ["raw"]}
    off = PhotoKey(key.model_id, key.sha1, Ablation(heads=((1, 2),), mode="zero"))
    q = parse_qs(link(off, key.model_id, 2, "head 1", "raw").split("?", 1)[1])
    assert q["ablate"] and q["ablate_mode"] == ["zero"] and q["model"] == [model]
    other = parse_qs(link(off, "some/other-model", 2, "head 1", "raw").split("?", 1)[1])
    assert "ablate" not in other, "heads switched off on another model do not follow"
    assert link(None, key.model_id, 2, "head 1", "raw") == first, "no photo: the same link"


def test_the_buttons_link_refuses_a_model_that_is_no_text_with_a_sentence(built):
    """The model box's value is the caller's to send: None or -1.5 reached Path(model_id) in the
    catalog, "Something went wrong" and a traceback in the log."""
    wb, demo, key = built
    fn = wired(demo, "cam-open", "click")
    for bad in (None, -1.5, ["m"], {"m": 1}):
        with pytest.raises(gr.Error, match="Choose a model from the page's list"):
            fn.fn(key, bad, 2, "head 1", "raw")
