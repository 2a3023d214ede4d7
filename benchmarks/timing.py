"""Timing helpers shared by the benchmark scripts. Machines here are noisy: report medians."""

from __future__ import annotations

import statistics
import time
from typing import Callable


def times_s(fn: Callable[[], object], repeat: int, warmup: int = 0) -> list[float]:
    """Wall seconds of `repeat` calls of fn, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def median_s(fn: Callable[[], object], repeat: int, warmup: int = 0) -> float:
    return statistics.median(times_s(fn, repeat, warmup))


def once_s(fn: Callable[[], object]) -> float:
    return times_s(fn, 1)[0]
