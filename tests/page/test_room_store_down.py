"""The room store (Redis) down for a moment is not a closed room (a review): the long poll answered
{"closed": true} with status 200, so a host page forgot its room's key (its way back) and a student page
read its room as gone; a reopened student's page was told it had no answers and forgot its own. Now every
room route answers 503 while the store is down (the pages ask again), and hello leaves the answers out."""

from __future__ import annotations

import time

import pytest
from fastapi import FastAPI
from redisserver import need_redis, redis_server
from roomstores import QS
from starlette.testclient import TestClient

import page.room as pr
from vizvit.classroom.room import META_TTL_S, VIEW_TTL_S, Rooms
from vizvit.classroom.roomstore_redis import STORE_DOWN, RedisStore
from vizvit.session import Workbench

STUDENT = "student-0123456789"


@pytest.fixture
def redis_then_down():
    """(client, code, key) over a real Redis store, and a function that stops the Redis server."""
    binary = need_redis()
    server = redis_server(binary)
    url = server.__enter__()
    rooms = Rooms(RedisStore(url))
    code, key = rooms.open("m", None, QS)
    app = FastAPI()
    app.router.routes.extend([pr.wait_route(rooms), *pr.presence_routes(rooms), *pr.lesson_routes(rooms, Workbench())])
    stopped = []

    def stop():
        server.__exit__(None, None, None)
        stopped.append(True)

    try:
        yield TestClient(app), code, key, stop
    finally:
        if not stopped:
            server.__exit__(None, None, None)


def test_a_store_down_is_503_to_ask_again_never_a_closed_room(redis_then_down):
    client, code, key, stop = redis_then_down
    assert client.post(f"/vizvit_room/{code}/hello", json={"student": STUDENT}).json()["accepted"] is True
    up = client.get(f"/vizvit_room/{code}")
    assert up.status_code == 200 and not up.json().get("closed")
    stop()
    time.sleep(max(VIEW_TTL_S, META_TTL_S) + 0.1)  # the room's view and meta, kept that long, are read again
    view = client.get(f"/vizvit_room/{code}?v=-2")
    assert view.status_code == 503 and view.json() == {"error": STORE_DOWN}, view.text
    for path, body in (("host", {"host_key": key}), ("lock", {"host_key": key, "locked": True})):
        r = client.post(f"/vizvit_room/{code}/{path}", json=body)
        assert r.status_code == 503 and r.json() == {"error": STORE_DOWN}, (path, r.text)
    lesson = client.get(f"/vizvit_room/{code}/lesson")
    assert lesson.status_code == 503, lesson.text
    hello = client.post(f"/vizvit_room/{code}/hello", json={"student": STUDENT}).json()
    assert "answers" not in hello, "an empty answer list made a reopened page forget the answers it kept"
