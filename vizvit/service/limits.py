"""Rate limits per caller (issue 50): token buckets keyed by a caller's address.

A bucket holds up to `burst` tokens and gains `per_s` tokens a second; each counted act spends one.
So a real user who slips now and then never notices, while a stranger repeating an act (guessing
room codes, registering made-up students) is slowed to `per_s`. Pure Python, no server: the page
(page/guard.py) decides which acts count and who the caller is.

Memory is bounded whatever a stranger does: a bucket that has refilled to `burst` is the same as no
bucket and is dropped, and beyond `max_keys` the least recently used bucket is dropped too (a stranger
with that many addresses gains a fresh burst on each, which the addresses gave them anyway).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

MAX_KEYS = 10_000  # buckets held at once (a few hundred bytes each): ~ a few MB at worst


@dataclass(frozen=True)
class Rate:
    """A bucket's shape: `burst` acts at once, then `per_s` acts a second."""

    burst: float
    per_s: float

    def __post_init__(self) -> None:
        if not (self.burst >= 1 and self.per_s > 0):
            raise ValueError("A rate needs burst >= 1 and per_s > 0.")


@dataclass(frozen=True)
class Verdict:
    """Whether an act may go ahead now; if not, how long until it may (seconds, > 0)."""

    ok: bool
    wait_s: float = 0.0

    @property
    def wait_whole_s(self) -> int:
        """The wait as a sentence says it: whole seconds, never 0 for a refusal."""
        return max(1, math.ceil(self.wait_s)) if not self.ok else 0


class Limiter(Generic[K]):
    """Token buckets keyed by K (an address), thread-safe (one lock: each call is a few dict updates)."""

    def __init__(self, rate: Rate, max_keys: int = MAX_KEYS, clock: Callable[[], float] = time.monotonic):
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1.")
        self.rate, self.max_keys, self.clock = rate, max_keys, clock
        # key -> (tokens, at); oldest first
        self._buckets: OrderedDict[K, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def _tokens(self, key: K, now: float) -> float:
        tokens, at = self._buckets.get(key, (self.rate.burst, now))
        return min(self.rate.burst, tokens + max(0.0, now - at) * self.rate.per_s)

    def _sweep(self, now: float) -> None:
        """Drop full buckets from the least recently touched end, then the oldest beyond max_keys.
        The front is the longest idle, so the sweep stops at the first bucket still in debt."""
        while self._buckets:
            key = next(iter(self._buckets))
            if self._tokens(key, now) < self.rate.burst and len(self._buckets) <= self.max_keys:
                break
            self._buckets.popitem(last=False)

    def spend(self, key: K, cost: float = 1.0) -> Verdict:
        """Spend `cost` tokens of key's bucket if it holds them (ok), else spend nothing (wait_s)."""
        with self._lock:
            now = self.clock()
            tokens = self._tokens(key, now)
            if tokens >= cost:
                self._buckets[key] = (tokens - cost, now)
                self._buckets.move_to_end(key)
                verdict = Verdict(True)
            else:
                verdict = Verdict(False, (cost - tokens) / self.rate.per_s)
            self._sweep(now)
            return verdict

    def check(self, key: K, cost: float = 1.0) -> Verdict:
        """As spend, spending nothing: would `cost` tokens be there now?"""
        with self._lock:
            tokens = self._tokens(key, self.clock())
            return Verdict(True) if tokens >= cost else Verdict(False, (cost - tokens) / self.rate.per_s)

    def __len__(self) -> int:
        with self._lock:
            return len(self._buckets)


class Recent(Generic[K]):
    """A bounded set that remembers its last `size` keys (least recently added or seen drops first):
    what a guard has seen lately (room codes found open, students who joined), thread-safe."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError("size must be at least 1.")
        self.size = size
        self._keys: OrderedDict[K, None] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, key: K) -> bool:
        """Remember key; True when it was new."""
        with self._lock:
            new = key not in self._keys
            self._keys[key] = None
            self._keys.move_to_end(key)
            while len(self._keys) > self.size:
                self._keys.popitem(last=False)
            return new

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._keys

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)
