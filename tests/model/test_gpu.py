"""ZeroGPU (vizvit/model/gpu.py): without the `spaces` package a model function is returned unchanged; with
it (a stand-in module here, as Hugging Face Spaces installs it) the function goes through spaces.GPU."""

from __future__ import annotations


def test_zero_gpu_wraps_model_calls_only_when_spaces_is_installed(monkeypatch):
    import importlib
    import sys
    import types

    import vizvit.model.gpu as gpu

    assert gpu.on_gpu(len) is len  # no `spaces` here: functions stay as they are
    wrapped = []
    fake = types.ModuleType("spaces")
    fake.GPU = lambda fn: wrapped.append(fn) or (lambda *a, **k: ("on gpu", fn(*a, **k)))
    monkeypatch.setitem(sys.modules, "spaces", fake)
    try:
        importlib.reload(gpu)
        assert gpu.on_gpu(len)([1, 2]) == ("on gpu", 2) and wrapped == [len]
    finally:
        monkeypatch.delitem(sys.modules, "spaces")
        importlib.reload(gpu)
