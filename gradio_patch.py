"""Workarounds for Gradio 6.31, used by app.py.

install(): Gradio writes a cached output image in place, at a path named by its content hash:
two sessions producing the same picture at once could serve a half-written file. Write under
a temporary name and rename, as Gradio already does for files.

unlaid(): components that only carry an API's schema (gr.api's) need no place on the page.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from gradio import processing_utils


def _atomic_save_pil_to_cache(img: Any, cache_dir: str, name: str = "image", format: str = "webp") -> str:
    """processing_utils.save_pil_to_cache, writing atomically."""
    data = processing_utils.encode_pil_to_bytes(img, format)
    folder = Path(cache_dir) / processing_utils.hash_bytes(data)
    folder.mkdir(exist_ok=True, parents=True)
    target = (folder / f"{name}.{format}").resolve()
    if not target.exists():
        fd, staging = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(staging, target)
    return str(target)


def install() -> None:
    """Replace Gradio's save_pil_to_cache with the atomic one (idempotent)."""
    processing_utils.save_pil_to_cache = _atomic_save_pil_to_cache


def unlaid(blocks: Any, children: Sequence[Any]) -> None:
    """Take `children` (direct children of `blocks`) out of the page's layout; they stay
    registered, so events and the API schema still find them. The page builds every laid-out
    component at load, and waits for every component it does not know to be invisible to mount:
    each is marked invisible in its config (gr.api's Api has no `visible` argument to set)."""
    for child in children:
        def config(get=child.get_config) -> dict:
            return {**get(), "visible": False}

        child.get_config = config
    blocks.children = [c for c in blocks.children if all(c is not x for x in children)]
