"""vizvit.classroom.roomstore_redis (issue 50): what only the Redis store does, on a throwaway redis-server:
a change made through one replica's client wakes the pages of another (pub/sub), and a gone room's
reason expires by itself. The store's common promises run on both stores in tests/classroom/test_roomstore.py."""

from __future__ import annotations

import time

from roomstores import QS, redis_url  # noqa: F401 (fixture)

from vizvit.classroom.room import CLOSED_BY_HOST, Rooms
from vizvit.classroom.roomstore import TOMBSTONE_S
from vizvit.classroom.roomstore_redis import CHANNEL, RedisStore


def test_a_move_on_one_replica_wakes_the_pages_of_another(redis_url):
    RedisStore(redis_url).r.flushdb()
    seen: list[str] = []
    probe = RedisStore(redis_url).r
    subscribers = lambda: dict(probe.pubsub_numsub(CHANNEL)).get(CHANNEL.encode(), 0)  # noqa: E731

    def subscribed_after(rooms: Rooms, before: int) -> Rooms:
        """rooms once its listener has subscribed (a thread of its own): Redis drops what is published
        before that (a waiting page then re-reads the version every POLL_S)."""
        end = time.monotonic() + 10
        while subscribers() <= before and time.monotonic() < end:
            time.sleep(0.02)
        assert subscribers() > before, "a replica never subscribed"
        return rooms

    # Each replica listens, this one too: counting the other's subscription from a count read before this
    # one's had landed took this one's for the other's, and the move was once published unheard.
    count = subscribers()  # read before the replica starts listening
    here = subscribed_after(Rooms(RedisStore(redis_url)), count)
    count = subscribers()
    there = subscribed_after(Rooms(RedisStore(redis_url), on_change=seen.append), count)  # its pages wait
    code, key = here.open("m", None, QS)
    here.move(code, key, 2)
    end = time.monotonic() + 10
    while code not in seen and time.monotonic() < end:  # a liveness wait for the published message
        time.sleep(0.05)
    assert code in seen, "the other replica never heard the move"
    assert there.state(code).step == 2


def test_a_gone_rooms_reason_expires_by_itself(redis_url):
    RedisStore(redis_url).r.flushdb()
    rooms = Rooms(RedisStore(redis_url))
    code, key = rooms.open("m", None, QS)
    rooms.close(code, key)
    assert rooms.join(code, "student-one") == (False, CLOSED_BY_HOST)
    ttl = rooms.store.r.ttl(f"vizvit:gone:{code}")
    assert 0 < ttl <= TOMBSTONE_S
