"""The public API's wiring (page/endpoints.py), without a browser or a server: a photo argument is
accepted only as a file inside Gradio's upload folder (GRADIO_TEMP_DIR), whatever its meta; the
documented endpoints are the public ones of a built page and every other event is private. Every
endpoint's answer to bad values over a live server is tests/system/test_edge.py."""

from __future__ import annotations

import gradio as gr
import pytest

from page import endpoints, jobs
from vizvit.api import Held, PublicApi
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


def test_the_endpoints_are_registered_in_the_documented_order_with_their_threads(tiny16):
    """The split builders (reading_endpoints, room_endpoints) register, in PUBLIC_ENDPOINTS' order, one
    event per endpoint named by its function; only the shift sweep and the class map run on the costly
    threads (jobs.COSTLY), every other endpoint on Gradio's default ones."""
    wb = Workbench(cache_bytes=32 << 20, device="cpu")
    with gr.Blocks() as demo:
        endpoints.public_api(wb, tiny16.id)
    fns = list(demo.fns.values())
    assert [fn.api_name for fn in fns] == list(endpoints.PUBLIC_ENDPOINTS)
    costly = {fn.api_name for fn in fns if fn.concurrency_id == jobs.COSTLY["concurrency_id"]}
    assert costly == {"sweep", "relevance"}
    assert all(fn.concurrency_limit == jobs.COSTLY_THREADS for fn in fns if fn.api_name in costly)
    assert all(fn.concurrency_limit == "default" for fn in fns if fn.api_name not in costly)
    assert [fn.api_name for fn in fns][-len(endpoints.ROOM_ENDPOINTS):] == list(endpoints.ROOM_ENDPOINTS)


def test_each_endpoint_answers_as_the_backend_does(tiny16, cat, upload_dir):
    """Each built endpoint is one PublicApi call with the photo checked and the model defaulted: its
    answer equals the backend's own for the same arguments (a constructed photo in the upload folder)."""
    wb = Workbench(cache_bytes=32 << 20, device="cpu")
    wb.add_model(tiny16)
    api = PublicApi(wb, jobs.JOBS.jobs, None)
    by_name = {fn.__name__: fn for fn in (*endpoints.reading_endpoints(api, tiny16.id),
                                          *endpoints.room_endpoints(api, tiny16.id))}
    assert tuple(by_name) == endpoints.PUBLIC_ENDPOINTS
    path = upload_dir / "cat.png"
    cat.save(path)
    photo = {"path": str(path)}
    assert by_name["positions"]() == api.positions(tiny16.id, 0, 0)
    assert by_name["positions"](tiny16.id, 1, 2) == api.positions(tiny16.id, 1, 2)
    assert by_name["attention"](photo, layer=2, head=1) == api.attention(str(path), tiny16.id, 2, 1, "raw", -1, -1)
    got = by_name["attention"](photo, tiny16.id, 1, "mean", "raw", 1, 3)
    assert got == api.attention(str(path), tiny16.id, 1, "mean", "raw", 1, 3)
    assert got != api.attention(str(path), tiny16.id, 1, "mean", "raw", 3, 1), "a query patch off the diagonal"
    assert by_name["predict"](photo, mask=None) == api.predict(str(path), tiny16.id, 0, 0, "edge", [], "drop")
    with pytest.raises(UserError, match="photo must be an uploaded file"):
        by_name["analyze"]({"path": "/etc/passwd"})


def test_a_photo_is_a_file_or_a_key_never_both_nor_neither(upload_dir):
    """photo_of: an uploaded file's path; or, with photo_sha1, the key in lower case (a key's format is
    checked there too); an empty key (or None, as a REST caller may send it) is none."""
    inside = upload_dir / "cat.jpg"
    inside.write_bytes(b"x")
    key = "0123456789abcdef" * 2 + "01234567"
    assert endpoints.photo_of({"path": str(inside)}, "") == endpoints.photo_of({"path": str(inside)}, None)
    assert endpoints.photo_of({"path": str(inside)}, "") == str(inside)
    assert endpoints.photo_of(None, key) == Held(key) == endpoints.photo_of(None, key.upper())
    for photo, sha1, message in ((None, "", "photo must be an uploaded file .* or photo_sha1"),
                                 (None, None, "or photo_sha1"),
                                 ({"path": str(inside)}, key, "not both"),
                                 ({"path": "/etc/passwd"}, key, "not both"),
                                 (None, key[:-1], "40 hex digits"), (None, key + "0", "40 hex digits"),
                                 (None, " " + key[1:], "40 hex digits"), (None, ["x"], "40 hex digits"),
                                 (None, {"path": "/etc/passwd"}, "40 hex digits")):
        with pytest.raises(UserError, match=message):
            endpoints.photo_of(photo, sha1)


def test_a_key_reads_the_kept_photo_until_newer_ones_push_it_out(tiny16, cat, upload_dir):
    """The attention endpoint by key answers as by file while the photo is kept; once a second photo
    pushed it out of a Workbench that keeps one photo, the key is refused with "send the photo again"."""
    wb = Workbench(cache_bytes=32 << 20, photo_bytes=1, device="cpu")  # keeps the last photo only
    wb.add_model(tiny16)
    attention = endpoints.reading_endpoints(PublicApi(wb), tiny16.id)[1]
    path, other = upload_dir / "cat.png", upload_dir / "turned.png"
    cat.save(path)
    cat.rotate(90, expand=True).save(other)
    key = endpoints.reading_endpoints(PublicApi(wb), tiny16.id)[0]({"path": str(path)})["photo_sha1"]
    assert attention(photo_sha1=key, layer=2) == attention({"path": str(path)}, layer=2)
    attention({"path": str(other)})
    with pytest.raises(UserError, match="holds no photo with that photo_sha1.*send the photo itself again"):
        attention(photo_sha1=key)
