"""The fixtures the methods' tests share."""

from __future__ import annotations

import pytest

import vizvit


@pytest.fixture(scope="module")
def tiny32(tiny_dirs) -> vizvit.VitModel:
    """The tiny ViT with a 7×7 grid (N = 50): small enough for the authors' slow max-flow loop."""
    return vizvit.load_model(str(tiny_dirs["p32"]), device="cpu")
