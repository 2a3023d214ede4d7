"""Timing helpers shared by the benchmark scripts. Machines here are noisy: report medians."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def times_s(fn: Callable[[], object], repeat: int, warmup: int = 0,
            clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Seconds of `repeat` calls of fn, after `warmup` untimed calls: wall seconds, or with
    clock=time.process_time the CPU seconds of this process (all its threads), which swing much
    less with other processes' load on a shared machine."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def median_s(fn: Callable[[], object], repeat: int, warmup: int = 0,
             clock: Callable[[], float] = time.perf_counter) -> float:
    return statistics.median(times_s(fn, repeat, warmup, clock))


def once_s(fn: Callable[[], object]) -> float:
    return times_s(fn, 1)[0]
