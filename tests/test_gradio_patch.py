"""gradio_patch: Gradio's image cache written atomically when sessions produce identical
pictures at once."""

from __future__ import annotations

import threading

import numpy as np
from gradio import processing_utils
from PIL import Image

import app  # noqa: F401 - app.py installs the patch, as the server does


def test_identical_outputs_written_concurrently_are_never_partial(tmp_path):
    img = Image.fromarray(np.random.default_rng(0).integers(0, 256, (400, 400, 3), dtype=np.uint8))
    expect = processing_utils.encode_pil_to_bytes(img, "png")
    paths, bad = [], []

    def write_and_read():
        p = processing_utils.save_pil_to_cache(img, str(tmp_path), format="png")
        paths.append(p)
        if open(p, "rb").read() != expect:
            bad.append(p)

    threads = [threading.Thread(target=write_and_read) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad and len(set(paths)) == 1
