"""Where live rooms keep their state (issue 50): one small interface, SQLite by default, Redis across
replicas (vizvit.classroom.roomstore_redis). vizvit.classroom.room.Rooms holds the rules; a store holds the data
and makes the few writes that must be atomic atomic: a room's creation under the limits, an answer checked
against the lecturer's step, a student's registration under the room's size, a room's meta changed.

A room is:
- meta: one small JSON object (model, host key, owner, questions, step, revealed steps, version,
  locked, host_seen and opened as wall-clock seconds, notes = each step's measured truth, hosts = the
  addresses the lecturer's page called from, trusted = the networks the lecturer let in, barred = the
  networks it turned away, salt = the key of the networks' names on the host page);
- students: the page's random ids (counts toward MAX_STUDENTS), each with the address it joined from
  (counts toward that address's share: one network other than the lecturer's brings at most ADDRESS_SHARE);
- answers: per step, student -> answer text (one per student per step; a new one replaces);
- blobs: named bytes (the model's input view as PNG, the pictures the phones show as JPEG).
A closed room leaves a tombstone (its closing sentence) for a day, so a student's page hears why.

Why not pickle a Room object: two replicas, or two threads, answering at once would each write back
their own copy and lose the other's answer; each write here touches only what it changes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from vizvit.errors import UserError

Outcome = Literal["ok", "gone", "ahead", "closed", "locked", "full", "share", "barred"]
Created = Literal["ok", "taken", "full", "owner"]
TOMBSTONE_S = 24 * 3600.0  # how long a closed room's reason is kept (a student's page open overnight)
ROOMS_DB_ENV = "VIZVIT_ROOMS_DB"
REDIS_URL_ENV = "VIZVIT_REDIS_URL"
T = TypeVar("T")


class StoreDown(UserError):
    """The room store cannot be reached now (Redis down): nothing is lost, and the pages ask again. Not a
    refusal: a room route answers it with 503 (page/room.py), so no page takes it for a closed room."""


SQLITE_DOWN = "The server's room store (its SQLite file) is busy or its disk is full: try again in a moment."
BUSY_S = 10.0  # how long a call that may wait (a thread's) waits for another process to let go of the file


class Busy(Exception):
    """The SQLite file (another process writes: a second server, the CLI, a backup) or this store's lock
    (another thread) is held, met by a call that must not wait (no_waiting: the server's event loop, where
    a wait stalled every request of the server for the busy timeout, 10 s). Nothing was changed by the
    call that raised it; the caller runs it again where it may wait (page.room.off_loop: a store thread).
    Neither a UserError nor a StoreDown: no route's except clause takes it for an answer."""


_no_wait: ContextVar[bool] = ContextVar("vizvit_roomstore_no_wait", default=False)


@contextmanager
def no_waiting() -> Iterator[None]:
    """SQLiteStore calls made inside never wait for the file or the store's lock: they raise Busy instead."""
    token = _no_wait.set(True)
    try:
        yield
    finally:
        _no_wait.reset(token)


def _busy(e: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED, extended codes included: another connection holds what this call needs."""
    return getattr(e, "sqlite_errorcode", 0) & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


@dataclass(frozen=True)
class OwnerLimit:
    """How many open rooms one owner may hold: `roomy` while fewer than half the server's rooms are open,
    `busy` from then on (vizvit.classroom.room.MAX_ROOMS_PER_OWNER; roomstore_redis's _CREATE says the same)."""

    busy: int
    roomy: int

    def at(self, open_rooms: int, max_rooms: int) -> int:
        return self.roomy if 2 * open_rooms < max_rooms else self.busy


class RoomStore(Protocol):
    """What vizvit.classroom.room.Rooms needs of a store. Every method is safe from any thread."""

    def create(self, code: str, meta: dict, max_rooms: int, owners: OwnerLimit, now: float) -> Created:
        """A new room, unless the code is taken (open or a tombstone), `max_rooms` are open, or its
        owner (meta["owner"], when not empty) holds its share (owners.at): checked and written at once."""

    def meta(self, code: str) -> dict | None:
        """An open room's meta (a copy), None when it is not open."""

    def metas(self) -> dict[str, dict]:
        """Every open room's meta: the sweep for rooms whose host is away, the owners' counts."""

    def version(self, code: str) -> int:
        """An open room's version, -1 otherwise: the cheap read a waiting page repeats."""

    def change(self, code: str, fn: Callable[[dict], bool]) -> dict | None:
        """Atomically: read the meta, fn(meta) edits it in place and returns whether the students' pages
        must hear of it (then the version grows by one and the change is announced), write it back.
        -> the new meta, None when the room is not open. fn may raise: nothing is written."""

    def join(self, code: str, student: str, addr: str, max_students: int, share: int) -> Outcome:
        """Register a student from address `addr`: "ok" (also when already in), "gone", or for a new
        student check_answer's "locked", "full", "barred", "share"."""

    def answer(self, code: str, student: str, step: int, text: str, addr: str, max_students: int,
               share: int) -> Outcome:
        """One answer, checked against the meta in the same atomic write: "ok"; "gone"; "ahead" (step is
        after the lecturer's); "closed" (before it, or revealed); a new student's refusals as join's."""

    def networks(self, code: str) -> dict[str, int]:
        """The room's students per address they joined from ("" for none known)."""

    def remove_address(self, code: str, addr: str) -> int:
        """Forget every student of `addr` in the room and all their answers, at once -> how many."""

    def answers(self, code: str, step: int) -> dict[str, str]:
        """One step's answers, student -> text."""

    def student_answers(self, code: str, student: str, steps: int) -> dict[int, str]:
        """One student's answers to steps 1..steps, step -> text: a page opened again (a phone's tab
        closed, a reload) learns what the room holds for it."""

    def joined(self, code: str) -> int:
        """Students registered in the room."""

    def put_blob(self, code: str, name: str, data: bytes) -> None:
        """Keep named bytes with an open room (nothing when it is closed)."""

    def blob(self, code: str, name: str) -> bytes | None: ...

    def blob_names(self, code: str) -> set[str]: ...

    def close(self, code: str, reason: str, now: float) -> bool:
        """Forget an open room at once and leave its tombstone; False when it was not open."""

    def gone(self, code: str, now: float) -> str | None:
        """A closed room's reason (its tombstone, under a day old), else None."""

    def subscribe(self, callback: Callable[[str], None]) -> None:
        """callback(code) whenever a room's version grows in another process (a replica): its waiting
        pages wake. A store only this process uses calls nothing."""


# A Hugging Face Space's disk is lost whenever the Space restarts (a crash, a sleep, a new build); its
# persistent storage upgrade mounts a disk that is kept at /data. Rooms kept on the lost disk would be
# lost with it, a class's answers included.
SPACE_DATA = Path("/data")


def default_path(env: Mapping[str, str] | None = None, space_data: Path = SPACE_DATA) -> Path:
    """Where a server keeps its rooms when told nothing: $VIZVIT_ROOMS_DB; else, on a Space (SPACE_ID set)
    with persistent storage (`space_data` a writable folder), space_data/vizvit/rooms.sqlite3; else the
    user's data folder ($XDG_DATA_HOME, else ~/.local/share)/vizvit/rooms.sqlite3."""
    env = os.environ if env is None else env
    if env.get(ROOMS_DB_ENV):
        return Path(env[ROOMS_DB_ENV])
    if env.get("SPACE_ID") and space_data.is_dir() and os.access(space_data, os.W_OK | os.X_OK):
        return space_data / "vizvit" / "rooms.sqlite3"
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "vizvit" / "rooms.sqlite3"


def lost_on_restart(path: Path, env: Mapping[str, str] | None = None, space_data: Path = SPACE_DATA) -> bool:
    """True when rooms kept at `path` are lost when the Space restarts: on a Space, outside its persistent
    storage (the server's log says so, and where to keep them instead)."""
    env = os.environ if env is None else env
    return bool(env.get("SPACE_ID")) and not path.resolve().is_relative_to(space_data.resolve())


_SCHEMA = """
CREATE TABLE IF NOT EXISTS rooms (code TEXT PRIMARY KEY, meta TEXT NOT NULL, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS students (code TEXT NOT NULL, student TEXT NOT NULL, PRIMARY KEY (code, student));
-- Each student's address in a table of its own: a file written before addresses keeps working, even
-- with a server of the old code still writing to it (its two-column inserts into students stay valid).
CREATE TABLE IF NOT EXISTS student_addrs (code TEXT NOT NULL, student TEXT NOT NULL, addr TEXT NOT NULL,
                                          PRIMARY KEY (code, student));
CREATE TABLE IF NOT EXISTS answers (code TEXT NOT NULL, step INTEGER NOT NULL, student TEXT NOT NULL,
                                    answer TEXT NOT NULL, PRIMARY KEY (code, step, student));
CREATE TABLE IF NOT EXISTS blobs (code TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL,
                                  PRIMARY KEY (code, name));
CREATE TABLE IF NOT EXISTS gone (code TEXT PRIMARY KEY, reason TEXT NOT NULL, at REAL NOT NULL);
"""


def listed(meta: dict, name: str) -> list[str]:
    """meta[name] as a list of addresses (a missing or odd field: none)."""
    got = meta.get(name)
    return [a for a in got if isinstance(a, str) and a] if isinstance(got, list) else []


def host_addresses(meta: dict) -> set[str]:
    """The lecturer's own addresses: where the room was opened and every address its page called from (a
    laptop has several: wired, Wi-Fi, IPv4, IPv6). Never turned away."""
    owner = meta.get("owner")
    return {*listed(meta, "hosts"), *([owner] if isinstance(owner, str) and owner else [])}


def unlimited(meta: dict) -> set[str]:
    """The addresses without a share: the lecturer's own and the networks it let in."""
    return host_addresses(meta) | set(listed(meta, "trusted"))


def check_answer(meta: dict, step: int, known: bool, count: int, max_students: int,
                 addr: str = "", addr_count: int = 0, share: int = 0) -> Outcome:
    """The answer rule both stores apply inside their atomic write (Redis: the same rule in Lua).
    A new student (not `known`) is refused in a locked room, a full one (`count` students already), from
    an address the lecturer turned away, or from an address other than the lecturer's that holds its
    `share` (`addr_count` students already): one caller can never fill a room. "" (no address known:
    an in-process caller), the lecturer's own addresses (the hall's network) and the networks it let in
    have no share."""
    if step > meta["step"]:
        return "ahead"
    if step < meta["step"] or step in meta["revealed"]:
        return "closed"
    if not known:
        if meta.get("locked"):
            return "locked"
        if count >= max_students:
            return "full"
        if addr and addr in listed(meta, "barred"):
            return "barred"
        if addr and addr not in unlimited(meta) and addr_count >= share:
            return "share"
    return "ok"


class SQLiteStore:
    """Rooms in one SQLite file (WAL: the long polls read while an answer is written). One connection
    behind a lock serialises this process's writes; BEGIN IMMEDIATE another process's on the same file.
    A call that finds the file or the lock held waits up to busy_s (BUSY_S), the lock let go between
    tries, or under no_waiting raises Busy at once. path None or ":memory:": in memory, for this process
    only (tests, notebooks)."""

    def __init__(self, path: str | Path | None = None):
        self.path = ":memory:" if path in (None, ":memory:") else str(path)
        self.busy_s = BUSY_S
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        # isolation_level None: no implicit transactions; each write says BEGIN IMMEDIATE itself. timeout 0:
        # SQLite's own busy wait would hold the caller (the event loop too) and this store's lock; _locked waits
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=0)
        self._lock = threading.Lock()

        def setup() -> None:
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable across a process crash (kill -9)
            self._db.executescript(_SCHEMA)

        self._locked(setup)

    def _locked(self, attempt: Callable[[], T]) -> T:
        """attempt() under this process's lock, again while it finds the file busy. Under no_waiting, one
        try: Busy when the lock or the file is held. Else tried until busy_s has passed, then StoreDown.
        Between tries the lock is let go: a thread waiting on another process never holds this process's
        other callers. SQLite's other failures (a full disk) are StoreDown, as Redis's are: a route's 503
        that the pages ask again, not a 500 (a review)."""
        no_wait = _no_wait.get()
        end = time.monotonic() + self.busy_s
        pause = 0.001
        while True:
            if self._lock.acquire(blocking=not no_wait):
                try:
                    return attempt()
                except sqlite3.OperationalError as e:
                    if not _busy(e):
                        raise StoreDown(SQLITE_DOWN) from e
                finally:
                    self._lock.release()
            if no_wait:
                raise Busy(self.path)
            left = end - time.monotonic()
            if left <= 0:
                raise StoreDown(SQLITE_DOWN)
            time.sleep(min(pause, left))
            pause = min(2 * pause, 0.05)  # SQLite's own busy handler backs off alike, to 50 ms

    # a transaction: the lock for this process's threads, IMMEDIATE for other processes (where a busy file
    # meets a call: before anything is written). A failed one is rolled back, never left open, and a busy
    # one tried again whole (fn reads what it writes from db: a second try sees the other process's writes).
    def _tx(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def attempt() -> T:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                out = fn(self._db)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            return out

        return self._locked(attempt)

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        return self._locked(lambda: self._db.execute(sql, args).fetchall())

    def create(self, code: str, meta: dict, max_rooms: int, owners: OwnerLimit, now: float) -> Created:
        def tx(db: sqlite3.Connection) -> Created:
            db.execute("DELETE FROM gone WHERE at < ?", (now - TOMBSTONE_S,))
            if db.execute("SELECT 1 FROM rooms WHERE code=? UNION SELECT 1 FROM gone WHERE code=?",
                          (code, code)).fetchone():
                return "taken"
            metas = [json.loads(m) for (m,) in db.execute("SELECT meta FROM rooms")]
            if len(metas) >= max_rooms:
                return "full"
            owner = meta.get("owner", "")
            if owner and sum(m.get("owner") == owner for m in metas) >= owners.at(len(metas), max_rooms):
                return "owner"
            db.execute("DELETE FROM student_addrs WHERE code=?", (code,))  # an old server's close leaves them
            db.execute("INSERT INTO rooms VALUES (?, ?, ?)", (code, json.dumps(meta), meta["version"]))
            return "ok"

        return self._tx(tx)

    def meta(self, code: str) -> dict | None:
        row = self._read("SELECT meta FROM rooms WHERE code=?", (code,))
        return json.loads(row[0][0]) if row else None

    def metas(self) -> dict[str, dict]:
        return {c: json.loads(m) for c, m in self._read("SELECT code, meta FROM rooms")}

    def version(self, code: str) -> int:
        row = self._read("SELECT version FROM rooms WHERE code=?", (code,))
        return int(row[0][0]) if row else -1

    def change(self, code: str, fn: Callable[[dict], bool]) -> dict | None:
        def tx(db: sqlite3.Connection) -> dict | None:
            row = db.execute("SELECT meta FROM rooms WHERE code=?", (code,)).fetchone()
            if row is None:
                return None
            meta = json.loads(row[0])
            if fn(meta):
                meta["version"] += 1
            db.execute("UPDATE rooms SET meta=?, version=? WHERE code=?",
                       (json.dumps(meta), meta["version"], code))
            return meta

        return self._tx(tx)

    def _enter(self, db: sqlite3.Connection, code: str, student: str, step: int | None, addr: str,
               max_students: int, share: int) -> Outcome:
        row = db.execute("SELECT meta FROM rooms WHERE code=?", (code,)).fetchone()
        if row is None:
            return "gone"
        meta = json.loads(row[0])
        known = db.execute("SELECT 1 FROM students WHERE code=? AND student=?",
                           (code, student)).fetchone() is not None
        count = addr_count = 0
        if not known:
            count = db.execute("SELECT COUNT(*) FROM students WHERE code=?", (code,)).fetchone()[0]
            addr_count = db.execute("SELECT COUNT(*) FROM student_addrs WHERE code=? AND addr=?",
                                    (code, addr)).fetchone()[0]
        probe = meta if step is not None else {**meta, "step": 0, "revealed": []}
        got = check_answer(probe, step if step is not None else 0, known, count, max_students, addr,
                           addr_count, share)
        if got == "ok" and not known:
            db.execute("INSERT INTO students (code, student) VALUES (?, ?)", (code, student))
            db.execute("INSERT OR REPLACE INTO student_addrs (code, student, addr) VALUES (?, ?, ?)",
                       (code, student, addr))
        return got

    def join(self, code: str, student: str, addr: str, max_students: int, share: int) -> Outcome:
        return self._tx(lambda db: self._enter(db, code, student, None, addr, max_students, share))

    def answer(self, code: str, student: str, step: int, text: str, addr: str, max_students: int,
               share: int) -> Outcome:
        def tx(db: sqlite3.Connection) -> Outcome:
            got = self._enter(db, code, student, step, addr, max_students, share)
            if got == "ok":
                db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?)", (code, step, student, text))
            return got

        return self._tx(tx)

    def networks(self, code: str) -> dict[str, int]:
        rows = self._read("SELECT COALESCE(a.addr, ''), COUNT(*) FROM students s LEFT JOIN student_addrs a "
                          "ON a.code = s.code AND a.student = s.student WHERE s.code=? GROUP BY 1", (code,))
        return {str(a): int(n) for a, n in rows}

    def remove_address(self, code: str, addr: str) -> int:
        def tx(db: sqlite3.Connection) -> int:
            gone = "(SELECT student FROM student_addrs WHERE code=? AND addr=?)"
            db.execute(f"DELETE FROM answers WHERE code=? AND student IN {gone}", (code, code, addr))
            n = db.execute(f"DELETE FROM students WHERE code=? AND student IN {gone}", (code, code, addr)).rowcount
            db.execute("DELETE FROM student_addrs WHERE code=? AND addr=?", (code, addr))
            return int(n)

        return self._tx(tx)

    def answers(self, code: str, step: int) -> dict[str, str]:
        return dict(self._read("SELECT student, answer FROM answers WHERE code=? AND step=?", (code, step)))

    def student_answers(self, code: str, student: str, steps: int) -> dict[int, str]:
        return {int(n): a for n, a in self._read("SELECT step, answer FROM answers WHERE code=? AND student=?"
                                                 " AND step BETWEEN 1 AND ?", (code, student, int(steps)))}

    def joined(self, code: str) -> int:
        return int(self._read("SELECT COUNT(*) FROM students WHERE code=?", (code,))[0][0])

    def put_blob(self, code: str, name: str, data: bytes) -> None:
        self._tx(lambda db: db.execute(
            "INSERT OR REPLACE INTO blobs SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM rooms WHERE code=?)",
            (code, name, sqlite3.Binary(data), code)))

    def blob(self, code: str, name: str) -> bytes | None:
        row = self._read("SELECT data FROM blobs WHERE code=? AND name=?", (code, name))
        return bytes(row[0][0]) if row else None

    def blob_names(self, code: str) -> set[str]:
        return {n for (n,) in self._read("SELECT name FROM blobs WHERE code=?", (code,))}

    def close(self, code: str, reason: str, now: float) -> bool:
        def tx(db: sqlite3.Connection) -> bool:
            if db.execute("DELETE FROM rooms WHERE code=?", (code,)).rowcount == 0:
                return False
            for table in ("students", "student_addrs", "answers", "blobs"):
                db.execute(f"DELETE FROM {table} WHERE code=?", (code,))
            db.execute("INSERT OR REPLACE INTO gone VALUES (?, ?, ?)", (code, reason, now))
            return True

        return bool(self._tx(tx))

    def gone(self, code: str, now: float) -> str | None:
        row = self._read("SELECT reason FROM gone WHERE code=? AND at >= ?", (code, now - TOMBSTONE_S))
        return row[0][0] if row else None

    def subscribe(self, callback: Callable[[str], None]) -> None:
        pass  # one process: Rooms calls its own on_change


def now() -> float:
    """Wall-clock seconds: what is persisted outlives the process (a monotonic clock does not)."""
    return time.time()
