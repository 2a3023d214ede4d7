"""The model catalog (vizvit/model/catalog.py), the page's gate: only listed models (and the random twins
of listed architectures) are accepted; a failed model leaves the list and its twin joins it; offline,
only cached hub models stay; a local folder is shown by its name, never its path; the measured
networks carry their size and forward time. Expected values written by hand (parameter counts as
published)."""

from __future__ import annotations

import re

import pytest

from vizvit.errors import UserError
from vizvit.model.catalog import Catalog, random_twin


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
    monkeypatch.setattr("vizvit.model.catalog.is_cached", lambda m: m == "google/vit-base-patch16-224")
    c = Catalog("random:vit-base-patch16-224")
    dropped = c.keep_cached_only(keep="random:vit-base-patch16-224")
    assert "google/vit-base-patch16-224" in c.ids and "facebook/dino-vitb16" in dropped
    assert "random:vit-base-patch32-384" in c.ids  # the twin of a dropped hub model


def test_loading_text_names_the_download():
    c = Catalog("random:vit-base-patch16-224")
    assert "346 MB" in c.loading_text("google/vit-base-patch16-224")  # not cached in tests
    assert "no download" in c.loading_text("random:vit-base-patch16-224")


def test_a_local_directory_is_listed_by_its_folder_name_never_its_path(tmp_path, monkeypatch):
    a, b = tmp_path / "one" / "my-vit", tmp_path / "two" / "my-vit"
    a.mkdir(parents=True), b.mkdir(parents=True)
    monkeypatch.setattr("vizvit.model.catalog.is_cached", lambda m: False)  # offline, nothing cached
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
    assert re.fullmatch(r"WinKawaks/vit-small-patch16-224 \(22\.1M, ~\d+ ms\)",
                        labels["WinKawaks/vit-small-patch16-224"])
    assert re.fullmatch(r"google/vit-base-patch16-224 \(86\.6M, ~\d+ ms\)", labels["google/vit-base-patch16-224"])
    assert ("Downloading **WinKawaks/vit-tiny-patch16-224** (about 23 MB)"
            in c.loading_text("WinKawaks/vit-tiny-patch16-224"))
    assert random_twin("WinKawaks/vit-small-patch16-224") == "random:vit-small-patch16-224"
    assert c.ids[0] == "random:vit-base-patch16-224"  # the default first (ViT-B/16 stays the default model)


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


def test_the_size_hint_quotes_no_models_numbers():
    """Issue 51: the model box's hint said "(5.7M, ~52 ms)" under ViT-B/16 too: it may explain the
    numbers, never quote one model's."""
    from vizvit.model.catalog import MEASURED, SIZES_INFO

    for params, ms in MEASURED.values():
        assert f"{params / 1e6:.1f}M" not in SIZES_INFO and f"{ms} ms" not in SIZES_INFO
    assert "parameters" in SIZES_INFO and "forward" in SIZES_INFO
