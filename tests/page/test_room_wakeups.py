"""The long poll's wake-ups (page/room.py Wakeups) keep an event only while a poll waits on it (a review):
every poll registered its code's event before reading the version, and only a change to that room removed
it, so a poll on a made-up code (any text in the URL, up to the server's line limit) left its event for
good: a stranger's loop of requests grew the server's memory without end."""

from __future__ import annotations

import threading
import time

from fastapi import FastAPI
from roomstores import QS
from starlette.testclient import TestClient

import page.room as pr
from vizvit.classroom.room import Rooms


def _served(tmp_path):
    from vizvit.classroom.roomstore import SQLiteStore

    rooms = Rooms(SQLiteStore(tmp_path / "rooms.sqlite3"))
    app = FastAPI()
    app.router.routes.append(pr.wait_route(rooms))
    return rooms, TestClient(app), rooms.on_change.__self__


def test_polls_on_made_up_codes_leave_no_event_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(pr, "WAIT_S", 0.3)
    monkeypatch.setattr(pr, "POLL_S", 0.1)
    rooms, client, wakeups = _served(tmp_path)
    code, _ = rooms.open("m", None, QS)
    for i in range(200):  # made-up codes, long and unicode: each answered at once as no room
        r = client.get(f"/vizvit_room/{'x' * 500}{i}\u00e9?v=0")
        assert r.status_code == 200 and r.json()["closed"] is True, r.text
    v = rooms.version(code)
    r = client.get(f"/vizvit_room/{code}?v={v}")  # a real room's poll that times out unchanged
    assert r.status_code == 200 and r.json()["version"] == v
    assert wakeups._events == {}, f"{len(wakeups._events)} events left with no poll waiting"


def test_a_waiting_poll_is_still_woken_by_a_change(tmp_path, monkeypatch):
    monkeypatch.setattr(pr, "WAIT_S", 10.0)
    monkeypatch.setattr(pr, "POLL_S", 10.0)  # no safety-net re-read: only the wake-up can end the wait early
    rooms, client, wakeups = _served(tmp_path)
    code, key = rooms.open("m", None, QS)
    v = rooms.version(code)
    got = {}

    def poll(name):
        t0 = time.monotonic()
        got[name] = (client.get(f"/vizvit_room/{code}?v={v}").json(), time.monotonic() - t0)

    with client:  # one event loop for both polls, as a server has
        threads = [threading.Thread(target=poll, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        time.sleep(0.5)
        rooms.move(code, key, 2)
        for t in threads:
            t.join(15)
    for name in ("a", "b"):
        body, took = got[name]
        assert body["version"] > v and body["step"] == 2 and took < 5, (name, body, took)
    assert wakeups._events == {}
