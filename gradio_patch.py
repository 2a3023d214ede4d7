"""A workaround for Gradio 6.31, installed by app.py before the page is built.

Gradio writes a cached output image in place, at a path named by its content hash: two
sessions producing the same picture at once could serve a half-written file. Write under
a temporary name and rename, as Gradio already does for files.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

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
