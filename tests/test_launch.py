"""Launch settings, the model catalog (the gate) and the hub check, as plain functions."""

from __future__ import annotations

import time

import pytest

from vizvit import hub
from vizvit.catalog import Catalog, random_twin
from vizvit.errors import UserError
from vizvit.launch import server_address


@pytest.mark.parametrize("flags, env, expected", [
    ((None, None), {}, ("127.0.0.1", 7860)),
    ((None, None), {"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "8080"}, ("0.0.0.0", 8080)),
    (("127.0.0.2", 9000), {"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "8080"}, ("127.0.0.2", 9000)),
    (("127.0.0.1", 9000), {"SPACE_ID": "a/b", "GRADIO_SERVER_NAME": "0.0.0.0"}, ("0.0.0.0", 7860)),
    ((None, None), {"SPACE_ID": "a/b", "GRADIO_SERVER_PORT": "1234"}, ("0.0.0.0", 7860)),
])
def test_flags_then_environment_then_defaults_and_a_space_binds_everything(flags, env, expected):
    assert server_address(*flags, env) == expected


def test_a_bad_port_is_a_clear_error():
    with pytest.raises(UserError, match="not a port"):
        server_address(None, None, {"GRADIO_SERVER_PORT": "http"})
    with pytest.raises(UserError, match="out of range"):
        server_address(None, 70000, {})


def test_the_gate_accepts_only_the_list():
    c = Catalog("local/model-dir", extra=("./ckpt",))
    assert c.check("google/vit-base-patch16-224") == "google/vit-base-patch16-224"
    assert c.check("./ckpt") == "./ckpt"  # added on the command line
    for bad in ("/etc", "openai/clip-vit-large-patch14", "random:vit-large-patch16-384", None, 3, ["x"]):
        with pytest.raises(UserError, match="page's list"):
            c.check(bad)


def test_a_failed_model_leaves_the_list_and_its_twin_joins_it():
    c = Catalog("random:vit-base-patch16-224")
    assert random_twin("google/vit-large-patch16-224") == "random:vit-large-patch16-224"
    c.drop("google/vit-large-patch16-224")
    assert "google/vit-large-patch16-224" not in c.ids
    assert c.twin("google/vit-large-patch16-224") == "random:vit-large-patch16-224"
    with pytest.raises(UserError):
        c.check("google/vit-large-patch16-224")
    c.drop("not/on-the-list")  # nothing to drop, nothing added
    assert "not/on-the-list" not in c.ids


def test_offline_only_cached_hub_models_stay(monkeypatch):
    monkeypatch.setattr("vizvit.catalog.is_cached", lambda m: m == "google/vit-base-patch16-224")
    c = Catalog("random:vit-base-patch16-224")
    dropped = c.keep_cached_only(keep="random:vit-base-patch16-224")
    assert "google/vit-base-patch16-224" in c.ids and "facebook/dino-vitb16" in dropped
    assert "random:vit-base-patch32-384" in c.ids  # the twin of a dropped hub model


def test_loading_text_names_the_download():
    c = Catalog("random:vit-base-patch16-224")
    assert "346 MB" in c.loading_text("google/vit-base-patch16-224")  # not cached in tests
    assert "no download" in c.loading_text("random:vit-base-patch16-224")


def test_the_hub_check_is_one_short_request(monkeypatch):
    """An unreachable hub costs one timeout, not the client's retry ladder; then the process is offline."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # a closed local port: refused at once
    calls = []
    real_head = hub.httpx.head

    def counted(url, **kw):
        calls.append(kw.get("timeout"))
        return real_head(url, **kw)

    monkeypatch.setattr(hub.httpx, "head", counted)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    t0 = time.perf_counter()
    assert hub.ensure_hub_or_offline(timeout=2.0) is False
    assert time.perf_counter() - t0 < 3.0 and calls == [2.0]
    assert constants.is_offline_mode()
