"""Launch settings as plain functions: the address to listen on, the QR code's address, and the start
model (a --model that fails to load starts its twin and says why). The catalog and the hub check
have their own files (tests/model/test_catalog.py, tests/model/test_hub.py)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import httpx
import pytest
from appserver import free_port
from tiny import trained_dir

import app
from vizvit import launch
from vizvit.errors import UserError
from vizvit.launch import server_address, start
from vizvit.model.catalog import OFFLINE_FALLBACK, Catalog
from vizvit.session import Workbench
from vizvit.views.common import banner


@pytest.mark.parametrize("flags, env, expected", [
    ((None, None), {}, ("127.0.0.1", 7860)),
    ((None, None), {"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "8080"}, ("0.0.0.0", 8080)),
    (("127.0.0.2", 9000), {"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "8080"}, ("127.0.0.2", 9000)),
    (("127.0.0.1", 9000), {"SPACE_ID": "a/b", "GRADIO_SERVER_NAME": "0.0.0.0"}, ("0.0.0.0", 7860)),
    ((None, None), {"SPACE_ID": "a/b", "GRADIO_SERVER_PORT": "1234"}, ("0.0.0.0", 7860)),
    # a container host (Cloud Run, Render, Heroku) sets PORT and routes from outside: every interface
    ((None, None), {"PORT": "8080"}, ("0.0.0.0", 8080)),
    ((None, None), {"PORT": "8080", "GRADIO_SERVER_NAME": "127.0.0.1"}, ("127.0.0.1", 8080)),
    ((None, None), {"PORT": "8080", "GRADIO_SERVER_PORT": "9000"}, ("127.0.0.1", 9000)),
    (("127.0.0.1", 9000), {"PORT": "8080"}, ("127.0.0.1", 9000)),
    ((None, 9000), {"PORT": "8080"}, ("127.0.0.1", 9000)),
    ((None, None), {"SPACE_ID": "a/b", "PORT": "8080"}, ("0.0.0.0", 7860)),
])
def test_flags_then_environment_then_defaults_and_a_space_binds_everything(flags, env, expected):
    assert server_address(*flags, env) == expected


def test_a_bad_port_is_a_clear_error():
    with pytest.raises(UserError, match="not a port"):
        server_address(None, None, {"GRADIO_SERVER_PORT": "http"})
    with pytest.raises(UserError, match="PORT='x' is not"):
        server_address(None, None, {"PORT": "x"})
    with pytest.raises(UserError, match="out of range"):
        server_address(None, 70000, {})


def test_each_port_files_its_uploads_in_a_folder_of_its_own(tmp_path):
    import tempfile

    env: dict[str, str] = {}
    assert launch.own_upload_folder(7860, env) == str(Path(tempfile.gettempdir()) / "gradio" / "vizvit-7860")
    assert env["GRADIO_TEMP_DIR"] == str(Path(tempfile.gettempdir()) / "gradio" / "vizvit-7860")
    assert launch.own_upload_folder(7860, env) == env["GRADIO_TEMP_DIR"]  # a second call: the same folder
    shared = {"GRADIO_TEMP_DIR": str(tmp_path)}
    other = dict(shared)
    assert launch.own_upload_folder(7861, shared) == str(tmp_path / "vizvit-7861")
    assert launch.own_upload_folder(7862, other) == str(tmp_path / "vizvit-7862")


def test_the_small_models_random_twins_have_the_published_parameter_counts():
    from vizvit.model.engine import load_model

    # ViT-Ti/16: 5,717,416 as the trained checkpoint (shared/models/README.md); ViT-S/16: timm's count
    assert load_model("random:vit-tiny-patch16-224", "cpu").num_parameters == 5_717_416
    assert load_model("random:vit-small-patch16-224", "cpu").num_parameters == 22_050_664


# ------------------------------------------------------------------ the QR code's address (issue 43, item 2)
def test_a_loopback_page_address_says_no_phone_can_open_it():
    for page in ("http://127.0.0.1:7860/", "http://localhost:7860/", "http://[::1]:7860/", "http://127.0.1.1:7860/"):
        a = launch.phone_address(page + "?lesson=1", "127.0.0.1", lan="192.168.1.5")
        assert not a.reachable and a.base == page and "no phone can open" in a.note, (page, a)
        assert "--host 0.0.0.0" in a.note and "--share" in a.note


def test_listening_on_every_interface_offers_the_lan_address():
    a = launch.phone_address("http://127.0.0.1:7860/", "0.0.0.0", lan="192.168.1.5")
    assert a.reachable and a.base == "http://192.168.1.5:7860/" and "192.168.1.5" in a.note
    none = launch.phone_address("http://localhost:7860/", "0.0.0.0", lan=None)  # no network: say so
    assert not none.reachable and none.base == "http://localhost:7860/" and "--share" in none.note


def test_a_share_link_a_space_and_a_listen_address_win_over_loopback():
    share = launch.phone_address("http://127.0.0.1:7860/", "127.0.0.1", share_url="https://abc123.gradio.live")
    assert share.reachable and share.base == "https://abc123.gradio.live/" and "--share" in share.note
    space = launch.phone_address("http://127.0.0.1:7860/", "0.0.0.0", share_url=None,
                                 space_host="someone-vizvit.hf.space", lan="10.0.0.3")
    assert space == launch.PhoneAddress("https://someone-vizvit.hf.space/", "", True)
    bound = launch.phone_address("http://127.0.0.1:8000/", "192.168.7.20")
    assert bound.reachable and bound.base == "http://192.168.7.20:8000/"


def test_a_network_page_address_is_kept_as_it_is():
    for page in ("http://192.168.1.5:7860/", "https://vizvit.example.org/app/", "http://lecture-pc:7860/"):
        assert launch.phone_address(page, "0.0.0.0", lan="10.0.0.3") == launch.PhoneAddress(page, "", True)
    assert launch.phone_address("http://192.168.1.5:7860", "0.0.0.0").base == "http://192.168.1.5:7860/"


def test_loopback_names():
    assert all(map(launch.is_loopback, ["127.0.0.1", "localhost", "::1", "[::1]", "127.8.0.1", "app.localhost"]))
    assert not any(map(launch.is_loopback, ["0.0.0.0", "192.168.1.5", "lecture-pc", "example.org", "::"]))


# ---- formerly tests/test_start_model.py
# A --model that fails to load is visible: the page starts on the random-weights twin of the same
# architecture when its config can be read (a broken ViT-Ti: a random ViT-Ti, not the ~5x slower
# random ViT-B/16), else on the default random model, and its banner says in one plain sentence
# which model failed and why. Three broken copies of the trained ViT-Ti: its weights cut short, its
# config.json broken, its weights missing.

TRAINED = trained_dir()
needs_trained = pytest.mark.skipif(TRAINED is None, reason="no trained ViT-Ti (VIZVIT_TRAINED or ../shared/models)")
TWIN = "random:vit-tiny-patch16-224"


def broken_copy(base: Path, how: str) -> Path:
    folder = base / f"vit-ti-{how}"
    folder.mkdir()
    for f in TRAINED.iterdir():
        if how == "no-weights" and f.name == "model.safetensors":
            continue
        shutil.copy(f, folder / f.name)
        (folder / f.name).chmod(0o644)
    if how == "truncated":  # the first megabyte of 22: a copy cut short
        data = (TRAINED / "model.safetensors").read_bytes()
        (folder / "model.safetensors").write_bytes(data[:1 << 20])
    if how == "broken-config":
        (folder / "config.json").write_text('{"model_type": "vit", "hidden_size": ', encoding="utf-8")
    return folder


# how -> (the stand-in, words of the reason): written by hand from what each copy is
CASES = {"truncated": (TWIN, "weights file model.safetensors is damaged or incomplete"),
         "broken-config": (OFFLINE_FALLBACK, "config.json is not valid JSON"),
         "no-weights": (TWIN, "holds no weights file")}


@needs_trained
@pytest.mark.parametrize("how", list(CASES))
def test_a_broken_model_starts_its_twin_and_the_banner_says_which_and_why(tmp_path, how):
    folder = broken_copy(tmp_path, how)
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    catalog = Catalog(str(folder))
    wb.catalog = catalog
    name = catalog.public(str(folder))
    s = start(wb, name)
    stand_in, words = CASES[how]
    assert (s.model, s.failed) == (stand_in, name) and words in s.reason, s
    assert name not in catalog.ids and stand_in in catalog.ids + catalog.twins()
    text = banner(wb.model(s.model), False, s.failed, s.reason)
    first = text.split("<")[0]  # the sentence; what follows is detail() (hidden in projector mode)
    assert f"**{name}** could not be loaded ({s.reason})" in first and "untrained random weights" in first
    assert str(tmp_path) not in text and not re.search(r"(?<![\w.])/[\w.-]+/", text)
    assert "Error" not in text  # no exception class names


@needs_trained
def test_the_served_page_shows_that_banner(tmp_path):
    folder = broken_copy(tmp_path, "truncated")
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    catalog = Catalog(str(folder))
    wb.catalog = catalog
    s = start(wb, catalog.public(str(folder)))
    demo = app.configure_queue(app.build_demo(wb, s.model, catalog, start=s))
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                **app.launch_kwargs(demo))
    try:
        config = httpx.get(f"http://127.0.0.1:{port}/config", timeout=60).json()
    finally:
        demo.close()
    shown = [c["props"] for c in config["components"] if c.get("props", {}).get("elem_id") == "banner"]
    assert shown and shown[0]["visible"] and "vit-ti-truncated" in shown[0]["value"], shown
    assert "damaged or incomplete" in shown[0]["value"]


def test_a_callers_x_forwarded_for_is_not_its_address_without_a_trusted_proxy(monkeypatch):
    """uvicorn trusts X-Forwarded-For from 127.0.0.1 by default: a caller on the server's own host (a
    tunnel, a local proxy without VIZVIT_PROXY_HOPS) wrote any address it liked into request.client,
    and so past every per-address limit (rooms opened past 3 an address, the hostile caller showed)."""
    import gradio as gr
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    with gr.Blocks() as demo:
        gr.Markdown("who")
    demo.vizvit_routes = [Route("/vizvit_who", lambda r: PlainTextResponse(r.client.host))]
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                **app.launch_kwargs(demo))
    try:
        who = httpx.get(f"http://127.0.0.1:{port}/vizvit_who", headers={"X-Forwarded-For": "10.9.8.7"}, timeout=60)
    finally:
        demo.close()
    assert who.text == "127.0.0.1"
