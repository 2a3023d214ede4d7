"""Cooperative cancellation of costly jobs: a plain token, no server in sight.

A costly job (attention flow, the shift sweep, the deletion curves, head importance) runs for
seconds to minutes. Python cannot stop a thread from outside, so each loop asks its token between
steps (a layer of the flow graph, one max-flow, a batch of forwards) and stops there. Whoever
started the job sets the token when its caller is gone (page code: a closed page, a dropped HTTP
stream, the Stop button); the token also carries the job's wall-time limit, so a job nobody
stops still ends.

    cancel = Cancel(limit_s=60)
    for step in attention_flow_steps(att, cancel=cancel): ...   # raises Cancelled once set
    cancel.set("the caller left")                               # from any thread
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Iterator

from vizvit.errors import UserError


class Cancelled(UserError):
    """A costly job stopped between two steps: its caller left, pressed Stop, or it ran past its
    wall-time limit. A UserError: where someone still reads the answer, the message says why."""


class Cancel:
    """A cancellation token: set() from any thread; check() between steps raises Cancelled once it is
    set or once `limit_s` seconds have passed since it was made (None: no limit). Thread-safe."""

    def __init__(self, limit_s: float | None = None, what: str = "job") -> None:
        self.what = what
        self.limit_s = limit_s
        self.started = time.monotonic()
        self._set = threading.Event()
        self.reason = ""
        self.stopped_at: float | None = None  # monotonic time of set() (for the stop latency in /stats)
        self._lock = threading.RLock()
        self._region: int | None = None  # the thread inside interruptible(), if any
        self._fired = False

    def set(self, reason: str = "stopped") -> None:
        """Ask the job to stop at its next check (idempotent: the first reason stays); a thread inside
        interruptible() is interrupted at once."""
        with self._lock:
            if self._set.is_set():
                return
            self.reason = reason
            self.stopped_at = time.monotonic()
            self._set.set()
            if self._region is not None:
                self._fired = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._region),
                                                           ctypes.py_object(Cancelled))

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """A step too long to wait for (one exact max-flow of ViT-Ti/16's graph: 2-4 s on a busy core,
        networkx code with no place to check): set() raises Cancelled inside it, in this thread, at the
        next Python bytecode (CPython's PyThreadState_SetAsyncExc). Only for pure computation on data
        the job alone holds and then drops: no lock, no file, no cache is touched inside."""
        tid = threading.get_ident()
        with self._lock:
            self.check()
            self._region = tid
        try:
            yield
        except Cancelled:
            raise Cancelled(f"The {self.what} stopped: {self.reason}.") from None
        finally:
            with self._lock:
                self._region = None
                if self._fired:  # set() while the step was ending: take back what was not yet raised
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid), None)
                    self._fired = False

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def is_set(self) -> bool:
        """True once set() was called or the limit has passed (which sets it)."""
        if not self._set.is_set() and self.limit_s is not None and self.elapsed() > self.limit_s:
            self.set(f"it ran past its limit of {self.limit_s:.0f} s")
        return self._set.is_set()

    def check(self) -> None:
        """Raise Cancelled if the job must stop; call it between steps."""
        if self.is_set():
            raise Cancelled(f"The {self.what} stopped: {self.reason}.")

    def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds or until set; True if set (for loops that poll)."""
        return self._set.wait(timeout) or self.is_set()


class _Never(Cancel):
    """The default of every loop that takes a token: shared, so nobody may set it."""

    def set(self, reason: str = "stopped") -> None:
        return None


NEVER: Cancel = _Never()
