"""The public API's wiring (page/endpoints.py), without a browser or a server: a photo argument is
accepted only as a file inside Gradio's upload folder (GRADIO_TEMP_DIR), whatever its meta; the
documented endpoints are the public ones of a built page and every other event is private. Every
endpoint's answer to bad values over a live server is tests/system/test_edge.py."""

from __future__ import annotations

import gradio as gr
import pytest

from page import endpoints
from vizvit.errors import UserError
from vizvit.session import Workbench


@pytest.fixture
def upload_dir(tmp_path, monkeypatch):
    folder = tmp_path / "gradio"
    folder.mkdir()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    return folder


def test_a_photo_is_a_file_in_the_upload_folder_and_nothing_else(upload_dir, tmp_path):
    inside = upload_dir / "abc" / "cat.jpg"
    inside.parent.mkdir()
    inside.write_bytes(b"x")
    assert endpoints.uploaded({"path": str(inside)}) == str(inside)
    assert endpoints.uploaded({"path": str(inside), "meta": {"_type": "gradio.FileData"}}) == str(inside)
    outside = tmp_path / "secret.txt"
    for bad in ({"path": str(outside)}, {"path": str(upload_dir / ".." / "secret.txt")}, {"path": "/etc/passwd"},
                {"path": ""}, {"path": 3}, {"url": "http://x/cat.jpg"}, str(inside), None, 7, [str(inside)]):
        with pytest.raises(UserError, match="photo must be an uploaded file"):
            endpoints.uploaded(bad)


def test_only_the_documented_endpoints_are_public(tiny16):
    wb = Workbench(cache_bytes=32 << 20, device="cpu")
    with gr.Blocks() as demo:
        box = gr.Textbox()
        box.change(lambda s: s, box, box, api_name="page_event")  # a page's own event
        endpoints.public_api(wb, tiny16.id)
    endpoints.private_except(demo, endpoints.PUBLIC_ENDPOINTS)
    shown = {fn.api_name for fn in demo.fns.values() if fn.api_visibility != "private"}
    assert shown == set(endpoints.PUBLIC_ENDPOINTS)
    assert {"analyze", "attention", "rollout", "relevance", "room_open", "stats"} <= shown
    assert set(endpoints.ROOM_ENDPOINTS) <= shown and "page_event" not in shown
