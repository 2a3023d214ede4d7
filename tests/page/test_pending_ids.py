"""page/pending_ids.py: the pending event ids of sessions whose answers nobody can read any more are
forgotten, so Gradio's dict of them stays bounded. On the served page (the production build and launch
settings) over plain REST, as a stranger calls it: POST /gradio_api/call/<name>, the answer never read."""

from __future__ import annotations

import gc
import time
from types import SimpleNamespace

import httpx
from appserver import serving
from gradio.blocks import Blocks

from page import pending_ids
from page.pending_ids import forget_unreadable


def test_only_sessions_without_a_message_queue_and_without_a_live_event_are_forgotten():
    q = SimpleNamespace(pending_event_ids_session={"read": {"e1"}, "dropped": {"e2"}, "running": {"e3"}},
                        pending_messages_per_session={"read": object()},
                        event_ids_to_events={"e3": SimpleNamespace(session_hash="running")})
    assert forget_unreadable(q) == 1
    assert set(q.pending_event_ids_session) == {"read", "running"}


def served_queue(url: str):
    """The queue of the app served at `url`: not the first running one found (a run's other tests leave the
    shared page's server running in this process, its sessions already past the bound set below)."""
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    return next(o._queue for o in gc.get_objects() if isinstance(o, Blocks) and o.is_running
                and getattr(o, "_queue", None) is not None and getattr(o, "server_port", None) == port)


def test_rest_calls_never_read_leave_no_ids_past_the_message_queues_bound(tiny16, monkeypatch):
    """Before: each of 40 calls never read left its session's entry, past a message-queue LRU of 10."""
    monkeypatch.setattr(pending_ids, "SLACK", 0)
    with serving(tiny16) as (url, _), httpx.Client() as http:
        q = served_queue(url)
        q.pending_messages_per_session.max_size = 10  # Gradio's LRU of sessions' message queues (2,000)
        for _ in range(40):
            r = http.post(url + "gradio_api/call/stats", json={"data": []}, timeout=60)
            assert r.status_code == 200, r.text
        end = time.monotonic() + 60
        while q.event_ids_to_events and time.monotonic() < end:  # the queue's own state: all 40 answered
            time.sleep(0.05)
        assert not q.event_ids_to_events
        assert len(q.pending_messages_per_session) <= 10
        assert len(q.pending_event_ids_session) <= 10 + 1, len(q.pending_event_ids_session)
        # a call read to its end still gets its answer
        eid = http.post(url + "gradio_api/call/stats", json={"data": []}, timeout=60).json()["event_id"]
        answer = http.get(url + f"gradio_api/call/stats/{eid}", timeout=60).text
        assert "event: complete" in answer, answer
