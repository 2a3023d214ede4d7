"""The hub check (vizvit/model/hub.py): an unreachable hub costs one short request, then the process is
offline; only a model whose config is in the local cache counts as cached."""

from __future__ import annotations

import time

from vizvit.model import hub


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


def test_only_a_config_in_the_local_cache_counts_as_cached(tmp_path, monkeypatch):
    """The hub cache's layout built by hand (models--<org>--<name>/refs/main names a snapshot that
    holds the files): a model with its config.json is cached, one without it or unknown is not."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    for repo, files in {"someone/with-config": ["config.json"], "someone/weights-only": ["model.safetensors"]}.items():
        folder = tmp_path / f"models--{repo.replace('/', '--')}"
        (folder / "refs").mkdir(parents=True)
        (folder / "refs" / "main").write_text("abc123")
        (folder / "snapshots" / "abc123").mkdir(parents=True)
        for f in files:
            (folder / "snapshots" / "abc123" / f).write_text("{}")
    assert hub.is_cached("someone/with-config") is True
    assert hub.is_cached("someone/weights-only") is False
    assert hub.is_cached("someone/never-downloaded") is False
    # the hub client's note that the file is known NOT to exist (.no_exist/<rev>/config.json) is no config
    missing = tmp_path / "models--someone--known-missing"
    (missing / "refs").mkdir(parents=True)
    (missing / "refs" / "main").write_text("abc123")
    (missing / ".no_exist" / "abc123").mkdir(parents=True)
    (missing / ".no_exist" / "abc123" / "config.json").write_text("")
    assert hub.is_cached("someone/known-missing") is False
    assert hub.is_cached("not a repo id//at all") is False  # an invalid id is an answer, not an error


def test_an_offline_process_asks_nothing(monkeypatch):
    """Offline (HF_HUB_OFFLINE, as the tests run), the check sends no request and stays offline."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub.httpx, "head", lambda *a, **k: (_ for _ in ()).throw(AssertionError("a request")))
    assert hub.hub_reachable() is False and hub.ensure_hub_or_offline() is False
