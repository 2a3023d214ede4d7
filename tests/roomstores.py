"""The room stores the room tests run on (tests/classroom/test_room.py, tests/classroom/test_roomstore.py): SQLite in a
temp file and Redis on a throwaway redis-server, each as a function that makes another client of the
same data (another process's connection: a restarted server, a second replica)."""

from __future__ import annotations

import pytest
from redisserver import need_redis, redis_server

from vizvit.classroom.room import Question, Rooms
from vizvit.classroom.roomstore import SQLiteStore

QS = (Question(), Question(("a", "b", "c")), Question())  # a number, a choice, a number
S1, S2, S3 = "student-one", "student-two", "student-three"


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def redis_url():
    with redis_server(need_redis()) as url:
        yield url


@pytest.fixture(params=["sqlite", "redis"])
def store(request, tmp_path):
    """A fresh, empty store -> a function that makes another client of the same data (another
    process's connection: a restarted server, a second replica)."""
    if request.param == "sqlite":
        path = tmp_path / "rooms.sqlite3"
        return lambda: SQLiteStore(path)
    from vizvit.classroom.roomstore_redis import RedisStore

    url = request.getfixturevalue("redis_url")
    RedisStore(url).r.flushdb()
    return lambda: RedisStore(url)


@pytest.fixture
def opened(store):
    def make(**kw):
        rooms = Rooms(store(), **kw)
        code, key = rooms.open("vit-tiny", b"view", QS)
        return rooms, code, key

    return make
