"""Memory that keeps its promise (issue 42): the cache counts what eviction frees, glibc's free heap
pages go back to the OS, Gradio's sessions are bounded, and the real server on the trained ViT-Ti
stays within start + --cache-mb + --photo-mb + a fixed overhead over 250 new photos."""

from __future__ import annotations

import collections
import ctypes
import datetime
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from vizvit.model.engine import nbytes
from vizvit.service.threads import malloc_free_bytes, trim_malloc

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ what the cache counts
def test_a_view_counts_the_whole_buffer_it_keeps_alive_once():
    batch = torch.zeros(8, 1000)  # (B, C) float32: 32,000 bytes
    row = batch[3]  # a view: keeps the whole (B, C) buffer alive
    assert nbytes(row) == 32_000
    assert nbytes((row, batch[5], batch)) == 32_000  # one buffer, however many views
    assert nbytes(row.clone()) == 4_000
    arr = np.zeros((100, 100), np.float32)
    assert nbytes(arr[:10]) == 40_000 and nbytes([arr, arr[5:], arr.T]) == 40_000


def test_pictures_bytes_and_text_are_counted():
    im = Image.new("RGB", (64, 32))
    assert nbytes(im) == 64 * 32 * 3
    assert nbytes({"jpeg": b"\0" * 1000, "json": "x" * 500, "n": 3}) == 1500


# ------------------------------------------------------------------ glibc's heaps
def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(malloc_free_bytes() is None, reason="not glibc")
def test_trim_gives_back_free_pages_inside_the_heap():
    """300 touched 1 MB heap blocks, two of every three freed: 200 MB of holes between blocks still
    in use, which glibc cannot give back from the heap's top; malloc_trim gives their pages back."""
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallopt(-3, 4 << 20)  # threads.MMAP_THRESHOLD: 1 MB blocks come from the heap, as in the server
    blocks = []
    for _ in range(300):
        b = libc.malloc(1 << 20)
        ctypes.memset(b, 1, 1 << 20)  # touched: in RSS
        blocks.append(b)
    kept = blocks[2::3]
    for b in blocks[0::3] + blocks[1::3]:
        libc.free(b)
    try:
        assert malloc_free_bytes() >= 150 << 20
        before = _rss()
        assert trim_malloc()
        assert before - _rss() >= 150 << 20, "the free pages stayed in RSS"
    finally:
        for b in kept:
            libc.free(b)


# ------------------------------------------------------------------ Gradio's sessions
def test_idle_sessions_are_forgotten_whole():
    from gradio.state_holder import StateHolder

    from page.sessions import forget_idle

    holder = StateHolder()
    now = datetime.datetime(2026, 1, 1, 12, 0, 0)
    holder.session_data = collections.OrderedDict((s, object()) for s in ("old", "recent", "new"))
    holder.time_last_used = {"old": now - datetime.timedelta(seconds=3601),
                             "recent": now - datetime.timedelta(seconds=60)}
    assert forget_idle(holder, 3600, now) == 1
    # "new" has no recorded use yet (Gradio records it right after creating it): kept
    assert list(holder.session_data) == ["recent", "new"] and list(holder.time_last_used) == ["recent"]


def test_the_server_keeps_a_bounded_number_of_sessions():
    import app
    from page import sessions

    assert app.launch_kwargs()["state_session_capacity"] == sessions.MAX_SESSIONS <= 1000


# ------------------------------------------------------------------ the real server
def _trained() -> str | None:
    path = os.environ.get("VIZVIT_TRAINED") or str(ROOT.parent / "shared" / "models" / "vit-tiny-augreg")
    return path if Path(path, "config.json").exists() else None


@pytest.mark.skipif(_trained() is None, reason="no trained ViT-Ti (VIZVIT_TRAINED or ../shared/models/vit-tiny-augreg)")
def test_new_photos_keep_rss_within_start_plus_budgets_plus_overhead():
    """app.py on the trained ViT-Ti with --cache-mb 256 --photo-mb 64; 250 distinct generated photos
    through /analyze from 4 sessions. Every RSS reading (every 50 photos, the peak sampled between,
    and after 10 s idle) within start + 256 + 64 + 300 MB.

    Why 250 photos (400 before issue 52; each ~0.2 s of the suite): both budgets are full after ~70
    (64 MB holds ~70 decoded 640×480 photos, 256 MB ~32 ViT-Ti analyses of 8 MB), and RSS plateaus by
    100 (a 400-photo run: +304 MB at 50, +359 at 100, +329..+390 from there on). The last 180 run with
    both evicting: a leak of the issue's 2 MB a photo adds 360 MB to the plateau, past the line's +620."""
    sys.path[:0] = [str(ROOT / "benchmarks")]
    import memory

    lines: list[str] = []
    report = memory.run(_trained(), photos=250, threads=4, every=50, cache_mb=256, photo_mb=64, overhead_mb=300,
                        idle_s=10, log=lines.append, stop_over=True)
    text = memory.table(report)
    print(text)
    assert report["ok"], f"RSS over the line:\n{text}"
    # A few client timeouts on a loaded machine are load, not memory; most photos must be answered.
    assert len(report["errors"]) <= 25 and report["rows"][-1]["photos"] == 250, report["errors"][:3]
