"""The cancellation token (vizvit/cancel.py): it fires once set (the first reason stays) or past its
wall-time limit, never for the shared default; a step with nowhere to check is interrupted inside and
only inside. The loops that ask it are tested with their jobs (tests/service/test_jobs.py)."""

from __future__ import annotations

import threading
import time

import pytest

from vizvit.cancel import NEVER, Cancel, Cancelled
from vizvit.errors import UserError


def test_a_token_fires_once_set_or_past_its_limit_and_never_for_the_shared_default():
    c = Cancel()
    c.check()  # not set: nothing happens
    c.set("the caller left")
    c.set("a later reason")
    with pytest.raises(Cancelled, match="the caller left"):
        c.check()
    late = Cancel(limit_s=0.05, what="shift sweep")
    time.sleep(0.1)
    with pytest.raises(Cancelled, match="shift sweep stopped: it ran past its limit of 0 s"):
        late.check()
    NEVER.set("anyone")  # shared by every loop's default: nobody can set it
    NEVER.check()
    assert issubclass(Cancelled, UserError), "a stopped job's message reaches whoever still reads it"


def test_a_step_with_nowhere_to_check_is_interrupted_inside_and_only_inside():
    c = Cancel(what="attention flow")
    threading.Timer(0.2, c.set, args=("the caller left",)).start()
    t0 = time.perf_counter()
    with pytest.raises(Cancelled, match="attention flow stopped: the caller left"):
        with c.interruptible():
            n = 0
            while time.perf_counter() - t0 < 30:  # pure Python, as networkx's preflow-push
                n += 1
    assert time.perf_counter() - t0 < 2.0
    # Set after the step: nothing is raised later, anywhere; the next check says it.
    quiet = Cancel()
    with quiet.interruptible():
        pass
    quiet.set("the caller left")
    total = sum(range(100_000))  # bytecodes after set(): no stray exception lands here
    assert total == 4_999_950_000
    with pytest.raises(Cancelled):
        quiet.check()


def test_wait_returns_when_set_from_another_thread_and_false_when_it_times_out():
    c = Cancel()
    assert c.wait(0.01) is False and not c.is_set()
    threading.Timer(0.05, c.set, args=("stop",)).start()
    assert c.wait(30.0) is True  # woken by set(), long before the liveness bound
    assert c.reason == "stop" and c.stopped_at is not None and c.stopped_at >= c.started
    expired = Cancel(limit_s=0.0)
    time.sleep(0.01)
    assert expired.wait(0.0) is True and "limit" in expired.reason  # the limit counts as set
