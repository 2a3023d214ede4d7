"""Idle sessions forgotten (page/sessions.py), on a constructed holder shaped like Gradio's
StateHolder (its lock, session_data, time_last_used): who is dropped at which cutoff is written by
hand. No browser: this file does not use the page's server. The server's bound over hundreds of
photos is tests/system/test_memory.py."""

from __future__ import annotations

import datetime
import threading
import types

from page import sessions

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)


def holder(last_used_s_ago: dict[str, float], data: tuple[str, ...]) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        lock=threading.Lock(), session_data={s: object() for s in data},
        time_last_used={s: NOW - datetime.timedelta(seconds=ago) for s, ago in last_used_s_ago.items()})


def test_only_sessions_idle_longer_than_the_bound_are_dropped():
    h = holder({"old": 3601, "edge": 3600, "fresh": 5}, ("old", "edge", "fresh", "being-made"))
    assert sessions.forget_idle(h, 3600, NOW) == 1
    assert set(h.session_data) == {"edge", "fresh", "being-made"}  # no last use yet: being created, kept
    assert set(h.time_last_used) == {"edge", "fresh"}


def test_a_last_use_without_data_is_cleared_but_not_counted():
    h = holder({"gone": 7200, "old": 7200}, ("old",))
    assert sessions.forget_idle(h, 60, NOW) == 1 and h.time_last_used == {} and h.session_data == {}


def test_the_sweep_waits_for_the_apps_holder_then_forgets(monkeypatch):
    demo = types.SimpleNamespace()  # no state_holder until the app is created
    h = holder({"old": 10_000}, ("old",))
    t = sessions.start_forgetting(demo, idle_s=60, every_s=0.05)
    assert t.daemon and t.name == "vizvit-forget-sessions"
    demo.state_holder = h
    deadline = threading.Event()
    for _ in range(3000):  # liveness bound: 30 s
        if not h.session_data:
            break
        deadline.wait(0.01)
    assert h.session_data == {}
