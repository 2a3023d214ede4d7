"""ZeroGPU (vizvit/gpu.py): without the `spaces` package a model function is returned unchanged;
with it (a stand-in module here, as Hugging Face Spaces installs it) the function is wrapped by
spaces.GPU."""

from __future__ import annotations

import importlib
import sys
import types

import vizvit.gpu


def forward(x: int) -> int:
    return x + 1


def test_without_spaces_a_function_is_returned_as_it_is():
    assert "spaces" not in sys.modules  # the test machine is no Space
    assert vizvit.gpu.on_gpu(forward) is forward


def test_with_spaces_every_function_goes_through_spaces_gpu(monkeypatch):
    wrapped = []

    def gpu(fn):
        wrapped.append(fn)
        return lambda *a, **k: ("on a lent GPU", fn(*a, **k))

    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(GPU=gpu))
    try:
        on_gpu = importlib.reload(vizvit.gpu).on_gpu
        assert on_gpu(forward)(1) == ("on a lent GPU", 2) and wrapped == [forward]
    finally:
        monkeypatch.delitem(sys.modules, "spaces")
        importlib.reload(vizvit.gpu)
    assert vizvit.gpu.on_gpu(forward) is forward  # back to the plain machine
