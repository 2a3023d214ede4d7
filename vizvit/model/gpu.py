"""Optional ZeroGPU on Hugging Face Spaces.

When the `spaces` package is installed, every function that runs the model is wrapped
in ``spaces.GPU``, which lends a GPU for the duration of the call (and does nothing on
ordinary hardware). Without it, ``on_gpu`` returns the function unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

try:  # pragma: no cover - only on Hugging Face Spaces
    import spaces

    def on_gpu(fn: F) -> F:
        return spaces.GPU(fn)

except ImportError:

    def on_gpu(fn: F) -> F:
        return fn
