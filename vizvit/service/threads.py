"""Thread policy, applied before torch is imported.

On a shared 2-vCPU machine, OpenMP's default busy-wait made a forward pass ~10×
slower whenever another process was busy; PASSIVE waiting avoids that. Both knobs
stay overridable through the environment.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import threading
from collections.abc import Callable
from typing import Any


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


# A crowd (issue 52: server CPU a student): callers seen within CROWD_S seconds. Two intra-op
# threads make one forward faster but dearer: on this 2-core machine the trained ViT-Ti took 40 ms
# for 78-81 ms of CPU on two threads against 56 ms for 56 ms on one, a random ViT-B/16 325 ms for
# 650 ms against 555 for 555. One visitor waits less on every core; for a hall the cores are better
# spent one on the forward and one on everybody else's requests.
CROWD_S = 10.0


def forward_threads(callers: int, cores: int) -> int:
    """The intra-op threads of the next forward: every core while at most one caller is about (its
    answer as soon as can be); for a crowd one core fewer, left to everybody else's requests (on two
    cores: one thread, the least CPU a forward; see CROWD_S)."""
    return max(1, cores) if callers <= 1 else max(1, cores - 1)


def follow_crowd(callers: Callable[[], int]) -> Callable[[], int] | None:
    """A ForwardQueue's `threads`: forward_threads of callers() (those seen lately), up to the count
    configure_threads chose; None (torch's setting kept) when VIZVIT_THREADS fixes the count."""
    if os.environ.get("VIZVIT_THREADS"):
        return None
    import torch

    cores = torch.get_num_threads()
    return lambda: forward_threads(callers(), cores)


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


class _Mallinfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h), every field a size_t."""

    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


@functools.cache
def _libc() -> Any:
    """glibc, loaded once: ctypes.util.find_library runs ldconfig in a child process, a fork of the
    whole server each time (its pages counted twice by a watcher that sums the process tree)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        libc.malloc_trim  # noqa: B018 - glibc only: AttributeError elsewhere
        return libc
    except (OSError, AttributeError):
        return None


def malloc_free_bytes() -> int | None:
    """Bytes glibc holds free inside its heaps (mallinfo2's fordblks): freed, not given back to the
    OS, still counted in RSS where the pages were touched. None where this is not glibc >= 2.33."""
    libc = _libc()
    return None if libc is None else int(libc.mallinfo2().fordblks)


def trim_malloc() -> bool:
    """Give the free pages inside glibc's heaps back to the OS (malloc_trim(0)): each whole free page,
    also in the middle of a heap, not only at its top. False where this is not glibc."""
    libc = _libc()
    return bool(libc is not None and libc.malloc_trim(0))


TRIM_EVERY_S = 5.0  # how often the trimmer looks (mallinfo2: microseconds at a few hundred MB of heap)
TRIM_ABOVE = 32 << 20  # bytes free inside the heaps before a trim is worth its time (tens of ms)


def start_trimming(every_s: float = TRIM_EVERY_S, above: int = TRIM_ABOVE) -> threading.Thread | None:
    """A daemon thread that trims glibc's heaps (trim_malloc) whenever they hold more than `above`
    free bytes, checked every `every_s` seconds. Why: the 2 MB blocks of an evicted analysis
    (below MMAP_THRESHOLD: hidden states, a ViT-Ti's attentions) are freed into heaps that the next
    forward's differently sized blocks fragment, and glibc only gives back a heap's top: on the
    trained ViT-Ti with the default budgets 250 MB stayed free inside the heaps, counted in RSS
    (docs/memory.md). Returns None where this is not glibc."""
    if _libc() is None:
        return None

    def loop() -> None:
        import time

        # Not lower_priority(): malloc_trim holds each heap's lock while it works, and a starved
        # holder would stall every thread that allocates.
        while True:
            time.sleep(every_s)
            free = malloc_free_bytes()
            if free is not None and free > above:
                trim_malloc()

    t = threading.Thread(target=loop, name="vizvit-malloc-trim", daemon=True)
    t.start()
    return t
