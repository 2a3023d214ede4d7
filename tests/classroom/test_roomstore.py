"""vizvit.classroom.roomstore (issue 50): what the stores themselves promise, on both (SQLite in a temp file,
Redis on a throwaway redis-server): the answer's rule inside the store's write, two clients of one
store at once, a restart that finds its rooms, tombstones. Cases built by hand with known answers."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from roomstores import QS, S1, S2, S3, Clock, opened, redis_url, store  # noqa: F401 (fixtures)

from vizvit.classroom.room import CLOSED_BY_HOST, UNKNOWN_ROOM, Rooms
from vizvit.classroom.roomstore import TOMBSTONE_S, SQLiteStore


def test_two_clients_of_one_store_answering_at_once_count_each_answer_once(opened, store):
    """Two servers (replicas, or a server and its restart) on the same store, each with its own
    connection, take answers at once, and the lecturer reveals in the middle: every accepted answer is
    counted once, no refused one at all, and no answer lands after the reveal."""
    rooms, code, key = opened()
    other = Rooms(store())
    students = [f"student-{i:04d}" for i in range(120)]
    accepted: dict[str, str] = {}
    lock = threading.Lock()

    def answer_all(r: Rooms, group: list[str]) -> None:
        for s in group:
            for v in (1, 2):
                ok, _ = r.answer(code, s, 1, v)
                if ok:
                    with lock:
                        accepted[s] = str(v)

    threads = [threading.Thread(target=answer_all, args=(r, students[i::4])) for i, r in
               enumerate((rooms, other, rooms, other))]
    for t in threads:
        t.start()
    rooms.move(code, key, 1, reveal=True)  # closes step 1 while they answer
    for t in threads:
        t.join()
    got = rooms.revealed_tally(code, 1)
    assert got.total == len(accepted)
    from collections import Counter
    assert got.answers == dict(Counter(accepted.values()))
    assert Rooms(store()).revealed_tally(code, 1) == got  # another server reads the same room


def test_a_restarted_server_finds_its_rooms_and_answers(opened, store):
    rooms, code, key = opened()
    for s, v in ((S1, 224), (S2, 196), (S3, 224)):
        assert rooms.answer(code, s, 1, v)[0]
    rooms.prepare(code, 1, {"truth": "224"}, b"grid")
    del rooms
    again = Rooms(store())  # a new process on the same data
    shown = again.move(code, key, 1, reveal=True)  # the lecturer's page reconnects with its host key
    assert shown.revealed == (1,)
    assert again.view(code)["shown"]["1"] == {"tally": {"step": 1, "answers": {"224": 2, "196": 1}, "total": 3,
                                                        "bars": [["224", 2], ["196", 1]], "others": 0},
                                              "truth": "224", "picture": True}
    assert again.model_view(code) == b"view"


def test_a_tombstone_says_why_for_a_day_then_the_code_is_unknown(store):
    clock = Clock()
    rooms = Rooms(store(), clock=clock)
    code, key = rooms.open("m", None, QS)
    rooms.close(code, key)
    clock.t += TOMBSTONE_S - 60
    assert rooms.join(code, S1) == (False, CLOSED_BY_HOST)
    clock.t += 120
    s = rooms.store
    if isinstance(s, SQLiteStore):
        assert rooms.join(code, S1) == (False, UNKNOWN_ROOM)  # a day later: forgotten
    else:  # Redis forgets it by itself (EXPIRE): its time to live is a day
        assert 0 < s.r.ttl(f"vizvit:gone:{code}") <= TOMBSTONE_S


def test_the_store_itself_checks_each_answer_in_its_write(opened):
    """The rule that makes answers atomic lives in the store's write (a SQLite transaction, a Redis Lua
    script), not only in Rooms' check before it: called directly, the store refuses what Rooms would."""
    rooms, code, key = opened(max_students=2)
    s = rooms.store
    assert s.answer(code, S1, 2, "a", "", 2, 9) == "ahead"
    assert s.answer(code, S1, 1, "5", "", 2, 9) == "ok" and s.answer(code, S1, 1, "6", "", 2, 9) == "ok"
    assert s.answers(code, 1) == {S1: "6"}  # replaced, not added
    rooms.move(code, key, 1, reveal=True)
    assert s.answer(code, S2, 1, "5", "", 2, 9) == "closed"
    rooms.move(code, key, 2)
    assert s.answer(code, S1, 1, "5", "", 2, 9) == "closed"
    rooms.lock(code, key, True)
    assert s.answer(code, S2, 2, "a", "", 2, 9) == "locked" and s.join(code, S2, "", 2, 9) == "locked"
    assert s.answer(code, S1, 2, "a", "", 2, 9) == "ok"
    rooms.lock(code, key, False)
    assert s.join(code, S2, "", 2, 9) == "ok" and s.join(code, S3, "", 2, 9) == "full"
    assert s.answer(code, S3, 2, "b", "", 2, 9) == "full"
    assert s.joined(code) == 2 and s.answers(code, 2) == {S1: "a"}
    assert s.answer("ZZZZZZZZ", S1, 1, "5", "", 2, 9) == "gone"


HALL, STRANGER, OTHER = "address 10.0.0.1", "address 203.0.113.9", "address 198.51.100.7"


def test_the_store_counts_each_addresss_students_in_its_write(store):
    """One address other than the lecturer's holds at most `share` new students, checked in the same
    write as the room's size; the lecturer's own addresses (the owner, its hosts) and "" (unknown) have no
    share, a barred address no new student at all. The students per address, and removing one: its
    students and all their answers forgotten, on every client of the store."""
    rooms = Rooms(store())
    code, _ = rooms.open("vit-tiny", b"view", QS, owner=HALL)
    s, other_client = rooms.store, store()
    assert [s.join(code, f"stranger-{i}", STRANGER, 12, 3) for i in range(4)] == ["ok", "ok", "ok", "share"]
    assert s.answer(code, "stranger-9", 1, "5", STRANGER, 12, 3) == "share"
    assert s.answer(code, "stranger-0", 1, "5", STRANGER, 12, 3) == "ok"  # one already in answers
    assert [s.join(code, f"hall-{i}", HALL, 12, 3) for i in range(5)] == ["ok"] * 5
    assert s.join(code, "unknown-1", "", 12, 3) == "ok"
    s.change(code, lambda m: m.update(hosts=[OTHER]) is not None)  # a host address: no share either
    assert [s.join(code, f"other-{i:03d}", OTHER, 12, 3) for i in range(4)] == ["ok"] * 3 + ["full"]
    assert s.networks(code) == {STRANGER: 3, HALL: 5, "": 1, OTHER: 3} == other_client.networks(code)
    assert s.answer(code, "hall-0", 1, "7", HALL, 12, 3) == "ok"
    assert other_client.remove_address(code, STRANGER) == 3
    assert s.answers(code, 1) == {"hall-0": "7"} and s.joined(code) == 9
    assert s.networks(code) == {HALL: 5, "": 1, OTHER: 3} and s.remove_address(code, STRANGER) == 0
    s.change(code, lambda m: m.update(hosts=[], barred=[OTHER]) is not None)
    assert s.join(code, "other-009", OTHER, 12, 3) == "barred"
    assert s.join(code, "other-000", OTHER, 12, 3) == "ok"  # barring stops new students only
    assert s.networks("ZZZZZZZZ") == {} and s.remove_address("ZZZZZZZZ", HALL) == 0


def test_both_stores_read_an_odd_meta_alike(store):
    """The rule is written twice (Python for SQLite, Lua for Redis): metas with an empty owner, a null
    or missing hosts list, a null barred list get the same answers from both."""
    rooms = Rooms(store())
    code, _ = rooms.open("vit-tiny", b"view", QS, owner="")
    s = rooms.store
    cases = [({"hosts": None, "barred": None, "trusted": None}, ["ok", "ok", "share"]),
             ({"owner": None}, ["ok", "ok", "share"]),
             ({"hosts": [STRANGER]}, ["ok"] * 3),
             ({"hosts": None, "trusted": [STRANGER]}, ["ok"] * 3),  # Lua: a nil list before another one
             ({"trusted": {"a": STRANGER}}, ["ok", "ok", "share"]),  # not a list: nobody trusted
             ({"hosts": ["", None, 5], "barred": [None, STRANGER]}, ["barred"] * 3)]
    for i, (edit, want) in enumerate(cases):
        s.change(code, lambda m, e=edit: m.update(e) is not None)
        got = [s.join(code, f"s{i}-{j:05d}", STRANGER, 100, 2) for j in range(3)]
        assert got == want, (edit, got)
        s.remove_address(code, STRANGER)
        s.change(code, lambda m: m.update(hosts=[], barred=[], trusted=[]) is not None)


def test_a_rooms_file_from_before_addresses_keeps_its_students(tmp_path):
    """A server upgraded over its rooms file: the students table without addresses stays as it was (a
    server of the old code may still write to it), its students stay (no address: no share), new ones
    are counted, and the old code's two-column insert still works."""
    path = tmp_path / "rooms.sqlite3"
    rooms = Rooms(SQLiteStore(path))
    code, _ = rooms.open("vit-tiny", b"view", QS, owner=HALL)
    db = sqlite3.connect(path)
    db.executescript("DROP TABLE student_addrs;")  # the file as the code before addresses left it
    db.execute("INSERT INTO students VALUES (?, ?)", (code, S1))
    db.commit()
    s = SQLiteStore(path)
    assert s.joined(code) == 1 and s.networks(code) == {"": 1}
    assert [s.join(code, f"stranger-{i}", STRANGER, 10, 1) for i in range(2)] == ["ok", "share"]
    db.execute("INSERT INTO students VALUES (?, ?)", (code, S2))  # an old server beside the new one
    db.commit()
    assert s.joined(code) == 3 and s.networks(code) == {"": 2, STRANGER: 1}


def test_a_students_own_answers_come_back_to_a_page_opened_again(opened, store):
    """A walk-through: a student answered, closed the phone's tab and opened the link again. The page's own
    copy of its answers died with the tab: it asked the question again and, after the reveal, said "You did
    not answer this step." under a tally counting its answer. The room now gives a student its answers, as
    tallied ("12,5" is 12.5), and nobody else's; a restarted server too."""
    rooms, code, key = opened()
    assert rooms.answer(code, S1, 1, "224")[0] and rooms.answer(code, S2, 1, "196")[0]
    rooms.move(code, key, 2)
    assert rooms.answer(code, S1, 2, "c")[0] and rooms.answer(code, S1, 2, "b")[0]  # changed: the last one holds
    rooms.move(code, key, 3)
    assert rooms.answer(code, S1, 3, "12,5")[0] and rooms.answer(code, S3, 3, "7")[0]
    again = Rooms(store())  # the server restarted on the same data
    assert again.mine(code, S1) == {1: "224", 2: "b", 3: "12.5"}
    assert again.mine(code, S2) == {1: "196"}
    assert again.mine(code, "student-who-never-answered") == {}


def test_a_sqlite_file_held_by_another_process_is_a_store_down_not_a_crash(tmp_path):
    """A review: SQLite's own failures ('database is locked' past the busy timeout, a full disk) escaped as
    sqlite3.OperationalError, a route's 500, where Redis's are StoreDown (a 503 the pages ask again). Another
    connection holding the file's write lock stands for another process; the store works again once it lets go,
    with no transaction of its own left open."""
    from vizvit.classroom.roomstore import SQLITE_DOWN, StoreDown

    path = tmp_path / "rooms.sqlite3"
    rooms = Rooms(SQLiteStore(path))
    code, key = rooms.open("m", None, QS)
    rooms.store.busy_s = 0.05  # not the server's 10 s: the test need not wait
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # its write lock (WAL: readers go on reading)
    try:
        for call in (lambda: rooms.open("m", None, QS), lambda: rooms.answer(code, "student-0123456789", 1, 3),
                     lambda: rooms.move(code, key, 2)):
            try:
                call()
            except StoreDown as e:
                assert str(e) == SQLITE_DOWN
            else:
                raise AssertionError("no StoreDown while the file is held")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert not rooms.store._db.in_transaction
    assert rooms.answer(code, "student-0123456789", 1, 3) == (True, "")
    assert rooms.move(code, key, 2).step == 2


def test_a_call_that_must_not_wait_is_busy_at_once_and_one_that_may_waits_for_the_file(tmp_path):
    """The server calls the SQLite store in its event loop (no_waiting): a file another process held made
    that call wait SQLite's busy timeout (10 s), and the whole server with it. There a held file, or this
    store's lock held by another thread, is Busy at once, with nothing written; a call that may wait (a
    thread's) still waits for the file and is made once it is let go."""
    from vizvit.classroom.roomstore import Busy, no_waiting

    path = tmp_path / "rooms.sqlite3"
    rooms = Rooms(SQLiteStore(path))
    code, key = rooms.open("m", None, QS)
    rooms.store.busy_s = 30.0  # a call in no_waiting that waited would end StoreDown, not Busy
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with no_waiting():
            for call in (lambda: rooms.answer(code, S1, 1, 3), lambda: rooms.move(code, key, 2)):
                with pytest.raises(Busy):
                    call()
            assert rooms.store.version(code) == 0  # unmoved; WAL: reads go on while another process writes
        assert not rooms.store._db.in_transaction
        answered = threading.Thread(target=lambda: rooms.answer(code, S1, 1, 3))  # may wait: waits
        answered.start()
        assert answered.is_alive()
        assert rooms.store.answers(code, 1) == {}
    finally:
        other.execute("ROLLBACK")
        other.close()
    answered.join(60)
    assert rooms.store.answers(code, 1) == {S1: "3"}
    with rooms.store._lock, no_waiting(), pytest.raises(Busy):  # another thread's call in progress
        rooms.store.meta(code)


def test_on_a_space_rooms_go_to_its_persistent_storage_else_the_log_says_they_are_lost(tmp_path, monkeypatch, caplog):
    """A Space's own disk is lost when it restarts; its persistent storage (/data) is kept: rooms go there when
    it is there, and a server whose rooms sit on the lost disk says so in its log."""
    import logging
    import os

    from vizvit.classroom import room as room_module
    from vizvit.classroom.roomstore import default_path, lost_on_restart

    data = tmp_path / "data"
    data.mkdir()
    home = {"XDG_DATA_HOME": str(tmp_path / "home")}
    space = {**home, "SPACE_ID": "teacher/vizvit"}
    assert default_path(space, data) == data / "vizvit" / "rooms.sqlite3"
    assert default_path(home, data) == tmp_path / "home" / "vizvit" / "rooms.sqlite3"  # not a Space
    assert default_path(space, tmp_path / "none") == tmp_path / "home" / "vizvit" / "rooms.sqlite3"  # no storage
    assert default_path({**space, "VIZVIT_ROOMS_DB": "/x/r.db"}, data) == Path("/x/r.db")  # told where
    if os.geteuid() != 0:  # root writes anywhere
        data.chmod(0o500)
        assert default_path(space, data) == tmp_path / "home" / "vizvit" / "rooms.sqlite3"  # not writable
        data.chmod(0o700)
    assert lost_on_restart(tmp_path / "home" / "r.db", space, data)
    assert not lost_on_restart(data / "vizvit" / "r.db", space, data)
    assert not lost_on_restart(tmp_path / "home" / "r.db", home, data)  # off a Space the disk is kept

    monkeypatch.setenv("SPACE_ID", "teacher/vizvit")
    monkeypatch.setattr(room_module, "lost_on_restart", lambda p: lost_on_restart(p, space_data=data))
    with caplog.at_level(logging.WARNING, logger="vizvit.rooms"):
        room_module.open_store(tmp_path / "ephemeral.db")
    assert "lost when the Space restarts" in caplog.text and "VIZVIT_REDIS_URL" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="vizvit.rooms"):
        room_module.open_store(data / "kept.db")
    assert caplog.text == ""
