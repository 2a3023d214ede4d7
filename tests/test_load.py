"""Robustness under load: the load-test script against the real app, and Gradio's
image cache written atomically when sessions produce identical pictures at once."""

from __future__ import annotations

import threading

import numpy as np
from PIL import Image

import app  # noqa: F401 - installs the atomic image cache
from gradio import processing_utils


def test_load_script_zero_errors_queue_full_and_bounded_memory(capsys):
    import load_test

    rc = load_test.main(["--clients", "3", "--seconds", "6", "--burst", "30", "--queue-size", "4",
                         "--concurrency", "1", "--uploads", "40"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out
    assert '"queue_full"' in out, "a burst past the queue must be answered 'queue full'"


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
