"""Costly jobs, fairly shared: a few slots for every caller, one job per caller, a wall-time limit each.

A costly job (attention flow, the shift sweep, the deletion curves, head importance) runs dozens of
forwards or minutes of max-flows. Jobs share `slots` slots across all callers; a caller (its network
address: every REST call and every new client is a new session, so the session alone would let one
machine hold every slot) runs at most one at a time. Each job gets a Cancel token carrying its wall-time
limit; whoever runs the job passes the token to the loops (vizvit.cancel), and sets it when the caller
leaves. Plain threading, no server: page/kit.py decides who a caller is and when one has left.

    jobs = Jobs(slots=2)
    with jobs.hold("203.0.113.7", "shift sweep") as cancel:
        experiments.full_sweep(ph, cancel)
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator, Mapping

from .cancel import Cancel, Cancelled
from .errors import UserError

COSTLY_SLOTS = 2  # jobs running at once, over all callers: a 2-core server keeps a core for everyone else
# Seconds a job may run (not counting its wait for a slot), by job name: none by default. The page's
# jobs take the costly methods' own (vizvit.readings.methods.JOB_LIMITS, page.kit); the batched jobs
# take seconds to a minute, within DEFAULT_LIMIT_S.
LIMITS: Mapping[str, float] = {}
DEFAULT_LIMIT_S = 300.0
# A caller's second job waits this long for its first to end (a page's Stop, an abandoned call being
# stopped), then is refused: one caller never holds two slots.
SAME_CALLER_WAIT_S = 5.0
RECENT = 20  # ended jobs kept for stats()


@dataclass
class _Job:
    id: int
    caller: str
    what: str
    cancel: Cancel
    queued: float  # monotonic
    started: float | None = None
    ended: float | None = None
    outcome: str = ""


@dataclass(frozen=True)
class JobsStats:
    """What the jobs are doing now, for /stats (no caller's address: the stats are public)."""

    slots: int
    limits: dict[str, float]
    default_limit_s: float
    running: list[dict] = field(default_factory=list)  # {job, seconds, limit_s, stopping}
    waiting: list[dict] = field(default_factory=list)  # {job, seconds}, first in line first
    recent: list[dict] = field(default_factory=list)  # ended: {job, seconds, outcome, stop_s}

    def as_json(self) -> dict:
        return {"slots": self.slots, "limits_s": {**self.limits, "other": self.default_limit_s},
                "running": self.running, "waiting": self.waiting, "recent": self.recent}


class Jobs:
    """The slots, the per-caller rule and the limits of costly jobs (thread-safe)."""

    def __init__(self, slots: int = COSTLY_SLOTS, limits: Mapping[str, float] = LIMITS,
                 default_limit_s: float = DEFAULT_LIMIT_S, same_caller_wait_s: float = SAME_CALLER_WAIT_S) -> None:
        if slots < 1:
            raise ValueError("Costly jobs need at least one slot.")
        self.slots = slots
        self.limits = dict(limits)
        self.default_limit_s = default_limit_s
        self.same_caller_wait_s = same_caller_wait_s
        self._cond = threading.Condition()
        self._running: list[_Job] = []
        self._waiting: list[_Job] = []  # first come, first served among those that may start
        self._recent: deque[_Job] = deque(maxlen=RECENT)
        self._ids = itertools.count(1)

    def limit_of(self, what: str) -> float:
        return self.limits.get(what, self.default_limit_s)

    @contextlib.contextmanager
    def hold(self, caller: str, what: str, cancel: Cancel | None = None) -> Iterator[Cancel]:
        """Run one job of `caller` (its address, see page/kit.py): wait for a slot, then yield its token,
        whose limit is the job's (limit_of(what)), counted from the start. Cancelled while waiting once
        `cancel` is set (the caller left); a UserError when the caller's other job has not ended within
        same_caller_wait_s. The slot is free again when the block ends, however it ends."""
        token = cancel if cancel is not None else Cancel(what=what)
        token.what = what
        job = _Job(next(self._ids), caller, what, token, time.monotonic())
        with self._cond:
            self._waiting.append(job)
            try:
                self._wait_for_slot(job)
            except BaseException as e:
                self._waiting.remove(job)
                job.ended, job.outcome = time.monotonic(), f"not started: {e}"
                self._recent.append(job)
                self._cond.notify_all()
                raise
            self._waiting.remove(job)
            self._running.append(job)
            job.started = time.monotonic()
            token.started, token.limit_s = job.started, self.limit_of(what)  # the limit counts from here
        try:
            yield token
            job.outcome = "done"
        except Cancelled as e:
            job.outcome = f"stopped: {token.reason or e}"
            raise
        except BaseException as e:  # GeneratorExit (a page's Stop) included
            job.outcome = ("stopped: " + token.reason) if token.is_set() else f"ended: {type(e).__name__}"
            raise
        finally:
            with self._cond:
                self._running.remove(job)
                job.ended = time.monotonic()
                self._recent.append(job)
                self._cond.notify_all()

    def _wait_for_slot(self, job: _Job) -> None:
        """Block (holding self._cond) until `job` may start."""
        while True:
            job.cancel.check()
            mine = next((j for j in self._running if j.caller == job.caller), None)
            if mine is None:
                ahead = [j for j in self._waiting if j.id < job.id and not self._caller_busy(j.caller)]
                if len(self._running) < self.slots and not ahead:
                    return
            elif time.monotonic() - job.queued > self.same_caller_wait_s:
                raise UserError(f"Your {mine.what} is still running: wait for it to finish (or press Stop) "
                                f"before starting the {job.what}.")
            self._cond.wait(0.1)  # also wakes to see the token (set from another thread) and the clock

    def _caller_busy(self, caller: str) -> bool:
        return any(j.caller == caller for j in self._running)

    def stop_caller(self, caller: str, reason: str = "the caller left") -> int:
        """Set the token of every job (running or waiting) of `caller`; returns how many."""
        with self._cond:
            jobs = [j for j in (*self._running, *self._waiting) if j.caller == caller]
            for j in jobs:
                j.cancel.set(reason)
            self._cond.notify_all()
        return len(jobs)

    def stats(self) -> JobsStats:
        now = time.monotonic()
        with self._cond:
            running = [{"job": j.what, "seconds": round(now - (j.started or now), 2), "limit_s": j.cancel.limit_s,
                        "stopping": j.cancel.reason if j.cancel.is_set() else None} for j in self._running]
            waiting = [{"job": j.what, "seconds": round(now - j.queued, 2)} for j in self._waiting]
            recent = [{"job": j.what, "seconds": round((j.ended or now) - (j.started or j.queued), 2),
                       "outcome": j.outcome,
                       # from the token's set() (the caller gone, Stop, the limit) to the slot freed
                       "stop_s": None if j.cancel.stopped_at is None or j.ended is None
                       else round(max(0.0, j.ended - j.cancel.stopped_at), 3)}
                      for j in reversed(self._recent)]
        return JobsStats(self.slots, dict(self.limits), self.default_limit_s, running, waiting, recent)
