"""Launch settings, the model catalog (the gate) and the hub check, as plain functions."""

from __future__ import annotations

import re
import time

import pytest

from vizvit import hub
from vizvit.catalog import Catalog, random_twin
from vizvit.errors import UserError
from vizvit import launch
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
    assert c.check("ckpt") == "ckpt"  # added on the command line, listed by its folder's name
    for bad in ("/etc", "./ckpt", "openai/clip-vit-large-patch14", "random:vit-large-patch16-384", None, 3, ["x"]):
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


def test_a_local_directory_is_listed_by_its_folder_name_never_its_path(tmp_path, monkeypatch):
    a, b = tmp_path / "one" / "my-vit", tmp_path / "two" / "my-vit"
    a.mkdir(parents=True), b.mkdir(parents=True)
    monkeypatch.setattr("vizvit.catalog.is_cached", lambda m: False)  # offline, nothing cached
    c = Catalog(str(b), extra=(str(a),))  # named in the list's order: extra first
    assert c.public(str(a)) == "my-vit" and c.public(str(b)) == "my-vit-2"  # same folder name: told apart
    assert c.source("my-vit") == str(a) and c.source("my-vit-2") == str(b)
    assert c.check("my-vit") == "my-vit"
    for shown in [*c.ids, *(label for label, _ in c.choices())]:
        assert str(tmp_path) not in shown, shown
    assert ("local: my-vit", "my-vit") in c.choices()
    # Offline, hub ids without a local copy leave the list, a local model never does.
    dropped = c.keep_cached_only(keep="my-vit")
    assert "my-vit-2" in c.ids and "google/vit-base-patch16-224" in dropped
    assert "Loading **local: my-vit**" in c.loading_text("my-vit")


def test_the_small_augreg_models_are_listed_with_their_size_and_forward_time():
    c = Catalog("random:vit-base-patch16-224")
    labels = dict((m, label) for label, m in c.choices())
    # 5,717,416 and 22,050,664 parameters: ViT-Ti/16 and ViT-S/16 with a 1000-class head
    assert re.fullmatch(r"WinKawaks/vit-tiny-patch16-224 \(5\.7M, ~\d+ ms\)", labels["WinKawaks/vit-tiny-patch16-224"])
    assert re.fullmatch(r"WinKawaks/vit-small-patch16-224 \(22\.1M, ~\d+ ms\)", labels["WinKawaks/vit-small-patch16-224"])
    assert re.fullmatch(r"google/vit-base-patch16-224 \(86\.6M, ~\d+ ms\)", labels["google/vit-base-patch16-224"])
    assert "Downloading **WinKawaks/vit-tiny-patch16-224** (about 23 MB)" in c.loading_text("WinKawaks/vit-tiny-patch16-224")
    assert random_twin("WinKawaks/vit-small-patch16-224") == "random:vit-small-patch16-224"
    assert c.ids[0] == "random:vit-base-patch16-224"  # the default first (ViT-B/16 stays the default model)


def test_the_small_models_random_twins_have_the_published_parameter_counts():
    from vizvit.engine import load_model

    # ViT-Ti/16: 5,717,416 as the trained checkpoint (shared/models/README.md); ViT-S/16: timm's count
    assert load_model("random:vit-tiny-patch16-224", "cpu").num_parameters == 5_717_416
    assert load_model("random:vit-small-patch16-224", "cpu").num_parameters == 22_050_664


def test_a_local_copy_of_a_measured_network_shows_its_size_too(tmp_path):
    import json

    ti = tmp_path / "vit-tiny-augreg"
    ti.mkdir()
    # ViT-Ti/16's shape, as in shared/models/vit-tiny-augreg/config.json
    ti.joinpath("config.json").write_text(json.dumps(dict(
        model_type="vit", hidden_size=192, num_hidden_layers=12, num_attention_heads=3, intermediate_size=768,
        image_size=224, patch_size=16)))
    other = tmp_path / "mine"
    other.mkdir()
    other.joinpath("config.json").write_text(json.dumps(dict(model_type="vit", hidden_size=32)))
    c = Catalog(str(ti), extra=(str(other),))
    labels = dict((m, label) for label, m in c.choices())
    assert re.fullmatch(r"local: vit-tiny-augreg \(5\.7M, ~\d+ ms\)", labels["vit-tiny-augreg"])
    assert labels["mine"] == "local: mine"
    assert "Loading **local: vit-tiny-augreg**…" in c.loading_text("vit-tiny-augreg")


def test_the_gate_takes_a_listed_models_random_twin_without_listing_it(tmp_path):
    c = Catalog("random:vit-base-patch16-224")
    assert "random:vit-tiny-patch16-224" not in c.ids  # the list stays as it was
    assert c.check("random:vit-tiny-patch16-224") == "random:vit-tiny-patch16-224"  # WinKawaks/vit-tiny is listed
    assert "random:vit-tiny-patch16-224" in c.twins() and "random:vit-base-patch16-224" not in c.twins()
    with pytest.raises(UserError, match="page's list"):
        c.check("random:vit-large-patch16-384")  # no listed model has that architecture
    # a local copy of a known architecture: its twin by its config's shape (a model off the curated list)
    d = tmp_path / "my-small"
    d.mkdir()
    (d / "config.json").write_text('{"model_type": "vit", "hidden_size": 384, "num_hidden_layers": 12, '
                                   '"num_attention_heads": 6, "intermediate_size": 1536, "image_size": 224, '
                                   '"patch_size": 16}')
    only = Catalog(str(d), curated=())
    assert only.twin_of("my-small") == "random:vit-small-patch16-224"
    assert only.check("random:vit-small-patch16-224") == "random:vit-small-patch16-224"
    with pytest.raises(UserError, match="page's list"):
        only.check("random:vit-tiny-patch16-224")


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
