"""Thread policy, applied before torch is imported.

On a shared 2-vCPU machine, OpenMP's default busy-wait made a forward pass ~10×
slower whenever another process was busy; PASSIVE waiting avoids that. Both knobs
stay overridable through the environment.
"""

from __future__ import annotations

import os
import threading


def configure_threads(num_threads: int | None = None) -> int:
    """Set OMP_WAIT_POLICY=PASSIVE and a thread count (env VIZVIT_THREADS wins).

    Returns the thread count chosen. Call before `import torch`; if torch is already
    imported only its intra-op thread count is changed.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    n = int(os.environ.get("VIZVIT_THREADS") or num_threads or len(os.sched_getaffinity(0)) or 1)
    os.environ.setdefault("OMP_NUM_THREADS", str(n))
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    return n


MMAP_THRESHOLD = 4 << 20  # bytes: blocks at least this big are mapped alone (configure_malloc says why)


def configure_malloc() -> bool:
    """Make glibc give freed large blocks back to the OS (a long-running server).

    glibc raises its mmap threshold after large frees, so the 20-300 MB result tensors of
    evicted analyses end up in heap arenas that never shrink: RSS grew by ~0.8 GB over 120
    ViT-B/16 uploads with a 256 MB cache. A fixed threshold (MMAP_THRESHOLD) and two arenas keep
    RSS at the budget: every block above the threshold is mapped on its own and unmapped when
    freed. The threshold is 4 MB, not 128 kB (MALLOC_MMAP_THRESHOLD_=131072): at 128 kB every
    activation of a forward (a ViT-B layer's attention is 1.9 MB, its MLP 2.4 MB) was a fresh
    mapping, zero-filled page by page, and forwards and drawing ran 1.5x slower (a ViT-Ti camera
    step 78 -> 118-130 ms, its forward 51 -> 76-84 ms); at 4 MB they run as fast as glibc's
    default. Same as MALLOC_MMAP_THRESHOLD_=4194304 MALLOC_ARENA_MAX=2, but settable after
    start. Returns False where this is not glibc.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_mmap_threshold, m_arena_max = -3, -8  # from glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD)) and bool(mallopt(m_arena_max, 2))


def lower_priority(nice: int = 10) -> None:
    """Lower the calling thread's CPU priority (Linux: a thread id is a process id for
    setpriority), for work nobody waits for yet: the requests people wait for come first. A
    no-op where the OS has no such call."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError):
        pass
