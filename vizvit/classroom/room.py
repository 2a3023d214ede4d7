"""A live room (issues 45, 50): one lecturer paces the lesson, every student in the hall predicts.

A room's state lives in a store (vizvit.classroom.roomstore: SQLite in the server's data folder by default, so a
restart loses nothing; Redis when a URL is given, so every replica sees every room). No account, no
name: the code is the invitation, the host key the lecturer's. A room closes when the lecturer closes
it, or when no host call came for HOST_AWAY_S; a closed room leaves its reason for a day. Everything is
bounded: rooms at once, rooms per owner (an address), students per room and per address in a room, an
answer's size. Pure Python
(no gradio, no model): the page and the public API call it.

State of a room: the step the lecturer shows (1..n_steps), which steps are revealed, per step student
-> answer (one answer per student per step; a changed answer replaces the old one), the students
registered, each step's measured truth and picture, and the model's input view (the exact pixels the
model saw, PNG) from which the truths are measured. `version` grows by one at each change the pages
must see, so a student's page waits for "anything newer than v" instead of re-reading the whole state.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import logging
import math
import re
import secrets
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from vizvit.classroom.roomstore import (
    REDIS_URL_ENV,
    OwnerLimit,
    RoomStore,
    SQLiteStore,
    StoreDown,
    default_path,
    host_addresses,
    listed,
    lost_on_restart,
    now as wall_clock,
)
from vizvit.errors import UserError

MAX_ROOMS = 60  # rooms open at once on this server (all its replicas: they share one store)
# Open rooms per owner (the opener's address): one stranger cannot take them all. While fewer than half the
# server's rooms are open, an address may hold ROOMY_PER_OWNER: a campus behind one NAT is several lecturers
# (the fourth was refused at 3). From half on, MAX_ROOMS_PER_OWNER: a stranger then needs 13 addresses to
# hold every room (with 20 rooms and 3 each, 7 did).
MAX_ROOMS_PER_OWNER = 3
ROOMY_PER_OWNER = 12
MAX_STUDENTS = 300  # distinct students who may answer in one room
# Students one address other than the lecturer's may bring into a room: a seminar's worth. One caller
# minting ids can then neither fill a room (take it from the class) nor outvote a class unseen. The
# lecturer's own addresses (where the room was opened and its page calls from: in a lecture, the hall's
# network) have no share; a hall on another network (staff and student Wi-Fi apart) fills its share, and
# the lecturer, who sees what each network brought (Rooms.host's "crowd"), lets it in (Rooms.let_in) or
# turns it away (Rooms.turn_away). Only the lecturer can tell a hall from a stranger.
ADDRESS_SHARE = 30
HOSTS_KEPT = 16  # addresses a room counts as the lecturer's (a laptop's wired, Wi-Fi, IPv4 and IPv6)
BARRED_KEPT = MAX_STUDENTS  # networks a room remembers as turned away: no more than could have come
CROWD_SHOWN = 5  # the host page names one address's students from this many (a household is not news)
NETWORK_ID_HEX = 16  # a network as the host page knows it: a keyed hash, never the address itself
# Not counted per IPv6 /48 or /56: a caller with many addresses (a tunnel broker's /48, a VPN's exits) gets a
# share on each; the host page then sees them in "others" (Rooms._crowd), and Lock is the remedy.
MAX_ANSWER_CHARS = 24  # an answer: an option key or a number, never prose
MAX_NUMBER = 1e12  # a number answer's magnitude (beyond: a typo, not a prediction)
HOST_AWAY_S = 30 * 60.0  # a room with no host call for this long closes (the host page calls every 5 s)
VIEW_TTL_S = 1.0  # a room's view is computed once per version for this long: a push answers 300 polls
META_TTL_S = 0.5  # a room's meta read again from the store after this long (a change announced: at once)
GEN_SLOTS = 1024  # slots of the changes announced (Rooms._gens): a fixed size whatever the rooms ever opened
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: read aloud and typed on a phone
CODE_LEN = 8  # 32**8 = 1.1e12 codes: with wrong codes rate-limited per address, a stranger cannot find a room
CODE_RE = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LEN}}}")
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{7,63}")  # a random token the student's page keeps (never
# "-" first: a spreadsheet opening the answers' CSV would read "-A1-B1" as a formula)

# Opt-in: a server given a lecturer key (a Space's secret) opens rooms only for a caller who gives it, so no
# stranger holding the page's link can take the rooms a department's lectures need. Without one, rooms are
# open to all, within the shares above (a public demo's default).
LECTURER_KEY_ENV = "VIZVIT_LECTURER_KEY"
LECTURER_KEY_MAX = 256  # characters: a passphrase, never a payload
KEY_NEEDED = "This server opens rooms for its lecturers only: type the lecturer key you were given."
WRONG_LECTURER_KEY = "That lecturer key does not open rooms on this server: check it with whoever runs the server."
UNKNOWN_ROOM = "There is no open room with that code: check the code, or ask the lecturer for the link."
WRONG_KEY = "That host key does not open this room: only the lecturer's page may do that."
LOCKED = "The lecturer has locked this room to new students."
BARRED = "The lecturer has turned away the students of your network from this room."
NO_NETWORK = "That network has no students in this room any more."
OWN_NETWORK = "That is a network your page called from or you let in: its students stay."
CLOSED_BY_HOST = "The lecturer has closed this room."
OPEN_FAILED = "This room could not be opened: ask the lecturer for a new room."
CLOSED_AWAY = ("This room closed because the lecturer's page was away for 30 minutes: ask the lecturer "
               "for a new room.")


def owner_full(owners: OwnerLimit) -> str:
    """The refusal of an owner's room beyond its share, with this server's shares (Rooms.owners)."""
    return (f"Your address already holds the most open rooms one address may hold now ({owners.busy} "
            f"while the server is busy, {owners.roomy} while it is not): close one, or reopen the "
            "lecturer's page of one you left, before opening another.")


OWNER_FULL = owner_full(OwnerLimit(MAX_ROOMS_PER_OWNER, ROOMY_PER_OWNER))  # the default shares' sentence
BAD_CODE = "A room code is 8 letters and digits (never O, 0, I or 1), like ABCD2345."  # CODE_LEN of CODE_ALPHABET
NO_CODE = "Type the room code the lecturer shows: 8 letters and digits, like ABCD2345."


def share_full(share: int) -> str:
    return (f"This room already has {share} students from your network, the most from one network other "
            "than the lecturer's: ask the lecturer to let this network in.")


def network_id(salt: str, addr: str) -> str:
    """An address as the host page may know it: keyed by the room's own secret salt (kept in its meta,
    never sent), so it names one network in one room and reveals nothing of the address: with the host
    key as the key, the lecturer could have tried all 2**32 IPv4 addresses."""
    return hmac.new(salt.encode(), addr.encode(), hashlib.sha256).hexdigest()[:NETWORK_ID_HEX]


def _network_id(meta: dict, addr: str) -> str:
    return network_id(str(meta.get("salt") or meta["host_key"]), addr)  # a room from before the salt


def parse_code(code: object) -> str | None:
    """A room code as typed or linked -> its canonical form (spaces and dashes dropped, upper-cased),
    or None when it is not CODE_LEN letters of CODE_ALPHABET: anything else never reaches a room,
    a page's markup or an address."""
    if not isinstance(code, str) or len(code) > 4 * CODE_LEN:
        return None
    text = re.sub(r"[\s-]", "", code).upper()
    return text if CODE_RE.fullmatch(text) else None


@dataclass(frozen=True)
class Question:
    """One step's question as the room checks it: its option keys, or () for a number."""

    options: tuple[str, ...] = ()

    @property
    def is_number(self) -> bool:
        return not self.options

    def normalise(self, answer: object) -> str:
        """An answer -> its canonical text (the tally's key), or a UserError saying what is wanted.
        A number is written "%g" so that 196, "196" and 196.0 are one bar."""
        if isinstance(answer, str) and len(answer) > MAX_ANSWER_CHARS:
            raise UserError(f"The answer must be at most {MAX_ANSWER_CHARS} characters.")
        if self.options:
            if not isinstance(answer, str) or answer not in self.options:
                raise UserError(f"The answer must be one of: {', '.join(self.options)}.")
            return answer
        if isinstance(answer, bool) or not isinstance(answer, (int, float, str)):
            raise UserError("The answer to this question must be a number.")
        try:
            x = parse_number(answer) if isinstance(answer, str) else float(answer)
        except (ValueError, OverflowError):
            raise UserError("The answer to this question must be a number.") from None
        if math.isnan(x):  # "nan" is float's word, not a student's number: "at most 1e+12 in size" read as nonsense
            raise UserError("The answer to this question must be a number.")
        if not math.isfinite(x) or abs(x) > MAX_NUMBER:
            # written out: a phone's student reads "1e+12" as a typo of the page's, not as a trillion
            raise UserError(f"The answer must be a number between -{MAX_NUMBER:,.0f} and {MAX_NUMBER:,.0f}.")
        return number_text(x)


_THOUSANDS = re.compile(r"[+-]?[1-9]\d{0,2}([,.]\d{3})+")  # 1,234 or 1.234.567: groups of three


def parse_number(text: str) -> float:
    """A number as a student types it on any phone -> its value, or ValueError.
    "12.5" and "12,5" (a decimal comma: a European keypad's) are 12.5; "1,234", "1 234" and "1,234.5"
    group thousands; "10%" is 10 (the percentage a question asks for), "224 px" 224 (a unit after the
    number is dropped, whatever it is: the question says what it counts). One separator followed by three
    digits after a non-zero lead ("1,234", "1.234") is read the English way: thousands for a comma,
    a decimal point for a dot, as `float` reads it."""
    t = text.strip().replace("\u2212", "-").removesuffix("%").strip()
    # "224px", "224 pixels", "64875×": the unit dropped; not a lone letter after a digit ("1e": an exponent
    # half typed, "2x"), which is no unit
    if unit := re.fullmatch(r"(.*\d)\s*([A-Za-z]{2,12}\.?|×)", t):
        t = unit.group(1)
    t = re.sub(r"[\s\u00a0\u202f_']", "", t)  # spaces and apostrophes group digits, never mean anything else
    if "," in t and "." in t:  # the last one is the decimal mark, the other groups thousands
        t = t.replace(",", "") if t.rfind(".") > t.rfind(",") else t.replace(".", "").replace(",", ".")
    elif t.count(",") == 1 and not _THOUSANDS.fullmatch(t):
        t = t.replace(",", ".")
    elif _THOUSANDS.fullmatch(t) and (t.count(",") or t.count(".") > 1):
        t = t.replace(",", "").replace(".", "")
    return float(t)


def number_text(x: float) -> str:
    """A number as the tally keys it: 196, "196" and 196.0 are one bar. 12 significant digits: "%g"'s
    six made 1234567 and 1234568 one answer, "1.23457e+06". -0.0 is 0: "-0" typed was a bar of its own
    beside "0", and no answer at tolerance 0 (x + 0.0 is +0.0 for either zero, x for any other x)."""
    return f"{x + 0.0:.12g}"


@dataclass(frozen=True)
class State:
    """What a student's page needs to follow the lecturer (plain JSON via as_json)."""

    code: str
    step: int  # the lecturer's step, 1..n_steps
    n_steps: int
    revealed: tuple[int, ...]  # steps whose answer the lecturer has shown
    version: int
    closed: bool
    model: str
    joined: int = 0  # students registered (a page's hello, or a first answer)
    locked: bool = False  # no new student may join
    turned: int = 0  # networks turned away so far: a student's page that sees it grow asks whether it is still in

    def as_json(self) -> dict:
        return {"code": self.code, "step": self.step, "n_steps": self.n_steps,
                "revealed": list(self.revealed), "version": self.version, "closed": self.closed,
                "model": self.model, "joined": self.joined, "locked": self.locked, "turned": self.turned}


@dataclass(frozen=True)
class Tally:
    """One step's answers: answer -> count (descending count), and how many answered. A number step's
    bars too (number_bars): its most given numbers, and how many students gave any other."""

    step: int
    answers: dict[str, int]
    total: int
    bars: tuple[tuple[str, int], ...] | None = None  # a number step's bars, most first; None: an option step
    others: int = 0  # students whose number has no bar of its own

    def as_json(self) -> dict:
        out = {"step": self.step, "answers": dict(self.answers), "total": self.total}
        if self.bars is not None:
            out.update(bars=[list(b) for b in self.bars], others=self.others)
        return out


NUMBER_BARS = 5  # a number step's own bars at most; 25 different numbers, a bar each, once pushed the
                 # lecturer's buttons off the projector


def number_bars(answers: dict[str, int], truth: str | None,
                keep: int = NUMBER_BARS) -> tuple[tuple[tuple[str, int], ...], int]:
    """A number step's answers (number text -> count) -> (its bars, most given first and ties in the
    numbers' order; a tie for the last bars goes to the numbers nearest the truth once it is known; the truth
    always among them, drawn at 0 if nobody gave it; how many students gave a number without a bar).
    Numbers are predictions of one exact value (224, 197, 10): the room wants to see the few most given and
    the truth, not a histogram of typos.
    Ties by closeness: a walk-through's five numbers given once each drew 1.97, 100 and 150 and put 198, one
    off the truth 197, among "other numbers"."""
    aim = _number(truth)

    def kept_first(kv: tuple[str, int]) -> tuple[int, float, float]:
        x = _number(kv[0])
        return -kv[1], abs(x - aim) if math.isfinite(aim) else 0.0, x

    def most_first(kv: tuple[str, int]) -> tuple[int, float]:  # drawn: ties in the numbers' order, as read
        return -kv[1], _number(kv[0])

    ranked = sorted(answers.items(), key=kept_first)
    bars = ranked[:keep]
    if truth is not None and truth not in dict(bars):
        bars = [*ranked[:keep - 1], (truth, answers.get(truth, 0))]
    shown = sum(n for _, n in bars)
    return tuple(sorted(bars, key=most_first)), sum(answers.values()) - shown


def _number(text: str | None) -> float:
    """A tallied number's text -> its value; nan for none (no truth yet) or a text that is no number."""
    try:
        return float(text) if text is not None else math.nan
    except ValueError:
        return math.nan


def _tally(n: int, got: dict[str, str], meta: dict) -> Tally:
    """Step n's tally; a number step's with its bars (the truth among them once it is revealed)."""
    answers = dict(Counter(got.values()).most_common())
    if meta["questions"][n - 1]:  # an option step: one bar per option, drawn by the page
        return Tally(n, answers, len(got))
    truth = meta["notes"].get(str(n), {}).get("truth") if n in meta["revealed"] else None
    bars, others = number_bars(answers, truth if isinstance(truth, str) else None)
    return Tally(n, answers, len(got), bars, others)


def _step(meta: dict, step: object) -> int:
    """A step number as sent (int, float or text) -> 1..n_steps of this room, or a UserError."""
    n_steps = len(meta["questions"])
    if isinstance(step, bool) or not isinstance(step, (int, float, str)):
        raise UserError(f"step must be a whole number from 1 to {n_steps}.")
    try:
        f = float(step)
    except (ValueError, OverflowError):  # float(10**400) overflows: a JSON body may carry a 400-digit int
        f = math.nan
    if not math.isfinite(f) or f != int(f) or not 1 <= f <= n_steps:
        raise UserError(f"step must be a whole number from 1 to {n_steps}.")
    return int(f)


def _add(meta: dict, name: str, addr: str, keep: int) -> None:
    """addr last in meta[name] (the newest), the list at most `keep` long."""
    meta[name] = [*[a for a in listed(meta, name) if a != addr], addr][-keep:]


def _drop(meta: dict, name: str, addr: str) -> None:
    if addr in (got := listed(meta, name)):
        meta[name] = [a for a in got if a != addr]


def _right(answer: str, truth: str, within: Sequence[float], n: int) -> bool:
    """An answer against its step's truth: the same text (an option key, or a number as tallied), or a
    number within step n's tolerance (within[n - 1])."""
    if answer == truth:
        return True
    tol = within[n - 1] if n - 1 < len(within) else 0.0
    try:
        return tol > 0 and abs(float(answer) - float(truth)) <= tol
    except ValueError:
        return False


def _same(given: str, secret: str) -> bool:
    """A secret compared in constant time, whatever text was sent: compare_digest refuses a str with non-ASCII
    characters (TypeError) and str.encode a lone surrogate, which JSON may carry ("\\ud800"): both were a 500."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), secret.encode("utf-8", "surrogatepass"))


def _key_text(key: str) -> str:
    """A lecturer key as compared: stripped and in Unicode NFC, so "é" typed as one character (a Mac's
    keyboard) or as "e" and its accent (another's, or a pasted key) is one key; cut before the
    normalisation (a megabyte sent costs nothing), at a length no NFD form of a LECTURER_KEY_MAX key
    reaches, and after it just past LECTURER_KEY_MAX (longer is wrong anyway)."""
    return unicodedata.normalize("NFC", key.strip()[:4 * LECTURER_KEY_MAX])[:LECTURER_KEY_MAX + 1]


def _check_student(student: object) -> str:
    if not isinstance(student, str) or not STUDENT_ID.fullmatch(student):
        raise UserError("student must be the page's random id: 8 to 64 letters, digits, - or _, a letter or digit "
                        "first.")
    return student


class Rooms:
    """The server's rooms over a RoomStore (its rules here, its data there). store None: SQLite in
    memory (tests, notebooks); a server passes open_store(...)."""

    def __init__(self, store: RoomStore | None = None, max_rooms: int = MAX_ROOMS,
                 max_students: int = MAX_STUDENTS, host_away_s: float = HOST_AWAY_S,
                 max_per_owner: int = MAX_ROOMS_PER_OWNER, roomy_per_owner: int = ROOMY_PER_OWNER,
                 address_share: int = ADDRESS_SHARE,
                 clock: Callable[[], float] = wall_clock, on_change: Callable[[str], None] | None = None,
                 lecturer_key: str | None = None):
        """on_change(code): called (from any thread) after a room's version grows, here or on another
        replica (the store's subscription): the waiting pages wake. clock: wall-clock seconds (persisted).
        lecturer_key: set (LECTURER_KEY_ENV), only a caller who gives it opens a room; "" or None: anyone."""
        if lecturer_key is not None and len(lecturer_key) > LECTURER_KEY_MAX:
            raise UserError(f"{LECTURER_KEY_ENV} is longer than {LECTURER_KEY_MAX} characters.")
        self.lecturer_key = _key_text(lecturer_key or "") or None
        self.store: RoomStore = store if store is not None else SQLiteStore(None)
        self.max_rooms, self.max_students, self.host_away_s = max_rooms, max_students, host_away_s
        self.max_per_owner, self.clock, self.on_change = max_per_owner, clock, on_change
        self.owners = OwnerLimit(max_per_owner, max(roomy_per_owner, max_per_owner))
        self.address_share = address_share
        self._views: dict[str, tuple[int, float, dict]] = {}  # code -> (version, when, view)
        # Each read of the store costs: Redis is another process, and under load each read waits for it
        # to be scheduled (100 polls x 2 reads after a push: p95 2 s at load average 10 on 2 cores);
        # SQLite parses the meta's JSON under the store's lock. So metas are kept here for META_TTL_S,
        # dropped at once when a change is made here or announced by another replica: a push's hundred
        # polls cost one read. A stale meta is harmless: each write checks the store's own (an answer,
        # a host change), and a room is closed as away only on a fresh read.
        self._metas: dict[str, tuple[dict, float]] = {}
        # Changes announced, counted per slot of hashed codes: a read begun before one is not kept. Slots,
        # not a count per code, so that days of rooms opened and closed leave nothing behind; two codes
        # in one slot only keep a read a little less often.
        self._gens = [0] * GEN_SLOTS
        self._views_lock = threading.Lock()
        self.store.subscribe(self._changed)

    # -------------------------------------------------------------- helpers
    def _changed(self, code: str) -> None:
        self._forget_view(code)
        if self.on_change is not None:
            self.on_change(code)

    def _forget_view(self, code: str) -> None:
        with self._views_lock:
            self._views.pop(code, None)
            self._metas.pop(code, None)
            self._gens[hash(code) % GEN_SLOTS] += 1

    def _meta(self, code: str, fresh: bool = False) -> dict | None:
        """An open room's meta (never to be edited: it may be shared), None when not open."""
        with self._views_lock:
            hit, gen = self._metas.get(code), self._gens[hash(code) % GEN_SLOTS]
        if hit is not None and not fresh and time.monotonic() - hit[1] < META_TTL_S:
            return hit[0]
        meta = self.store.meta(code)
        with self._views_lock:
            if meta is not None and self._gens[hash(code) % GEN_SLOTS] == gen:
                self._metas[code] = (meta, time.monotonic())
        return meta

    def _away(self, meta: dict) -> bool:
        return self.clock() - float(meta["host_seen"]) > self.host_away_s

    def _sweep(self) -> None:
        """Close every room whose lecturer's page has been away HOST_AWAY_S."""
        for code, meta in self.store.metas().items():
            if self._away(meta) and self.store.close(code, CLOSED_AWAY, self.clock()):
                self._changed(code)

    def _live(self, code: object) -> tuple[str, dict]:
        """An open room's (code, meta), or a UserError: a closed room's own reason, else UNKNOWN_ROOM."""
        parsed = parse_code(code)
        if parsed is None:
            raise UserError(UNKNOWN_ROOM)
        meta = self._meta(parsed)
        if meta is not None and self._away(meta):
            meta = self._meta(parsed, fresh=True)
        if meta is not None and self._away(meta):
            if self.store.close(parsed, CLOSED_AWAY, self.clock()):
                self._changed(parsed)
            meta = None
        if meta is None:
            raise UserError(self.store.gone(parsed, self.clock()) or UNKNOWN_ROOM)
        return parsed, meta

    def _keyed(self, code: object, host_key: object) -> tuple[str, dict]:
        """The live room's (code, meta) where host_key is its host's, else UserError (WRONG_KEY)."""
        parsed, meta = self._live(code)
        if not isinstance(host_key, str) or not _same(host_key, meta["host_key"]):
            raise UserError(WRONG_KEY)
        return parsed, meta

    @property
    def needs_key(self) -> bool:
        """Whether opening a room takes the lecturer key (the pages then ask for it)."""
        return self.lecturer_key is not None

    def check_lecturer(self, lecturer_key: object) -> None:
        """UserError unless this caller may open a room: anyone, where the server has no lecturer key; else
        only one who gives it. Before any costly work (the photo's analysis); compared in constant time."""
        if self.lecturer_key is None:
            return
        if not isinstance(lecturer_key, str) or not lecturer_key.strip():
            raise UserError(KEY_NEEDED)
        if not _same(_key_text(lecturer_key), self.lecturer_key):
            raise UserError(WRONG_LECTURER_KEY)

    def check_host(self, code: object, host_key: object) -> None:
        """UserError (WRONG_KEY) unless host_key is the live room's host's: before costly work for a host."""
        self._keyed(code, host_key)

    def _flag(self, code: object, host_key: object, name: str, value: object) -> None:
        """A host's true/false, else UserError: after the key (a stranger hears only that the key is wrong)."""
        if not isinstance(value, bool):
            self._keyed(code, host_key)
            raise UserError(f"{name} must be true or false.")

    def _host_change(self, code: object, host_key: object,
                     fn: Callable[[dict], bool] | None = None) -> tuple[str, dict]:
        """A host-keyed call: the key checked, the host marked seen and fn(meta) applied, in one write."""
        parsed, meta = self._keyed(code, host_key)
        bumped = []

        def change(m: dict) -> bool:
            m["host_seen"] = self.clock()
            bump = fn(m) if fn is not None else False
            bumped.append(bump)
            return bump

        new = self.store.change(parsed, change)
        self._forget_view(parsed)
        if new is None:
            raise UserError(self.store.gone(parsed, self.clock()) or UNKNOWN_ROOM)
        if bumped and bumped[-1]:
            self._changed(parsed)
        return parsed, new

    def _state(self, code: str, meta: dict) -> State:
        return State(code, meta["step"], len(meta["questions"]), tuple(sorted(meta["revealed"])),
                     meta["version"], False, meta["model"], self.store.joined(code), bool(meta.get("locked")),
                     int(meta.get("turned") or 0))

    # -------------------------------------------------------------- the lecturer
    def open(self, model: str, photo: bytes | None, questions: Sequence[Question],
             owner: str = "", lecturer_key: object = None, shown: bytes | None = None) -> tuple[str, str]:
        """A new room -> (code, host_key). photo: the model's input view as PNG (the exact pixels the model
        saw: the truths are measured from it), or None; shown: the photo as the phones see it (JPEG:
        keep_photo_view), or None. owner: the opener's address; refused politely when
        it holds its share (OwnerLimit: ROOMY_PER_OWNER while the server is less than half full, then
        MAX_ROOMS_PER_OWNER), or the server MAX_ROOMS ("" counts toward no owner). lecturer_key: the
        server's, where it has one (check_lecturer)."""
        self.check_lecturer(lecturer_key)
        if not questions:
            raise UserError("A room needs a lesson with at least one step.")
        self._sweep()
        t = self.clock()
        key = secrets.token_urlsafe(16)
        meta = {"model": model, "host_key": key, "salt": secrets.token_hex(16), "owner": str(owner or ""),
                "step": 1, "revealed": [],
                "version": 0, "locked": False, "host_seen": t, "opened": t, "notes": {},
                "questions": [list(q.options) for q in questions]}
        while True:
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LEN))
            got = self.store.create(code, meta, self.max_rooms, self.owners, t)
            if got == "ok":
                break
            if got == "full":
                raise UserError(f"This server already holds {self.max_rooms} open rooms, its limit: "
                                "close one, or try again later.")
            if got == "owner":
                raise UserError(owner_full(self.owners))
        try:
            if photo is not None:
                self.store.put_blob(code, "view", bytes(photo))
            if shown is not None:
                self.keep_photo_view(code, shown)
        except BaseException:
            # The caller never hears this room's key: left open, it held one of the server's rooms and of
            # its owner's share until HOST_AWAY_S, with nobody able to close it
            self._abandon(code)
            raise
        return code, key

    def _abandon(self, code: str) -> None:
        """Close a room whose opening failed half way; where the store is down too, it closes as away."""
        try:
            if self.store.close(code, OPEN_FAILED, self.clock()):
                self._changed(code)
        except Exception:  # noqa: BLE001 (the first failure is the one the caller hears)
            pass

    def move(self, code: str, host_key: str, step: object, reveal: object = False) -> State:
        """The lecturer shows `step` (and, with reveal, its answer): every student's page follows."""
        self._flag(code, host_key, "reveal", reveal)
        shown = reveal is True

        def fn(m: dict) -> bool:
            n = _step(m, step)
            changed = bool(n != m["step"] or (shown and n not in m["revealed"]))
            m["step"] = n
            if shown and n not in m["revealed"]:
                m["revealed"] = sorted([*m["revealed"], n])
            return changed

        parsed, meta = self._host_change(code, host_key, fn)
        return self._state(parsed, meta)

    def host(self, code: str, host_key: str, addr: str = "") -> dict:
        """The lecturer's page is still there (it calls every 5 s): the room stays open, and addr (where
        the page calls from, when known) counts as the lecturer's own from now on (no share; never
        turned away). -> the room's view, and "crowd" (Rooms._crowd)."""

        def at(m: dict) -> bool:
            if addr:
                _add(m, "hosts", str(addr), HOSTS_KEPT)
                _drop(m, "barred", str(addr))
                _drop(m, "trusted", str(addr))
            return False  # the students' pages need not hear of it

        parsed, meta = self._host_change(code, host_key, at)
        return {**self.view(parsed), "crowd": self._crowd(parsed, meta)}

    def _crowd(self, code: str, meta: dict) -> dict:
        """What the host page says of the other networks: {"others": students from networks other than the
        lecturer's own (many small ones add up there; 0 below CROWD_SHOWN), "network": the id of the one
        with the most, "students": its count, "trusted": whether the lecturer let it in, "full": whether it
        holds its share (its next students are refused)}; the network's fields only from CROWD_SHOWN
        students (no household named)."""
        own, trusted = host_addresses(meta), set(listed(meta, "trusted"))
        counts = [(n, a) for a, n in self.store.networks(code).items() if a and a not in own]
        n, addr = min(counts, key=lambda na: (-na[0], na[1]), default=(0, ""))  # the most; ties: one order
        others = sum(c for c, _ in counts)
        out: dict = {"others": others if others >= CROWD_SHOWN else 0}
        if n >= CROWD_SHOWN:
            out |= {"network": _network_id(meta, addr), "students": n, "trusted": addr in trusted,
                    "full": addr not in trusted and n >= self.address_share}  # more of them may be waiting
        return out

    def _network(self, code: str, meta: dict, network: object) -> str:
        """The address behind a network id the host page was shown: among the room's students or the
        networks it turned away; else UserError (NO_NETWORK)."""
        if isinstance(network, str):
            for addr in {*self.store.networks(code), *listed(meta, "barred")} - {""}:
                if _same(network, _network_id(meta, addr)):
                    return addr
        raise UserError(NO_NETWORK)

    def turn_away(self, code: str, host_key: str, network: object) -> int:
        """The lecturer turns away the network it was shown (Rooms.host's crowd: a stranger's minted ids,
        or another network's hall, let in before or not; never one of the lecturer's own addresses): its
        students and every answer they gave are forgotten, and it may not join this room again (until let
        back in). -> how many went."""
        parsed, meta = self._keyed(code, host_key)
        addr = self._network(parsed, meta, network)

        def bar(m: dict) -> bool:  # barred first: none of its students joins between the two writes
            if addr in host_addresses(m):
                raise UserError(OWN_NETWORK)
            _drop(m, "trusted", addr)
            _add(m, "barred", addr, BARRED_KEPT)
            return False

        def told(m: dict) -> bool:  # every page re-reads: revealed tallies changed, and a page turned away asks
            m["turned"] = int(m.get("turned") or 0) + 1
            return True

        self._host_change(parsed, host_key, bar)
        gone = self.store.remove_address(parsed, addr)
        self._host_change(parsed, host_key, told)
        return gone

    def let_in(self, code: str, host_key: str, network: object, trust: object = True) -> None:
        """The lecturer lets a network in. trust True ("They are my students"): its students have no
        share from now on (until turned away). trust False (undoing a turn-away): it may join again, with
        its share as before (its answers, forgotten then, stay forgotten)."""
        self._flag(code, host_key, "trust", trust)
        parsed, meta = self._keyed(code, host_key)
        addr = self._network(parsed, meta, network)

        def admit(m: dict) -> bool:
            if trust is True:
                _add(m, "trusted", addr, MAX_STUDENTS)
            _drop(m, "barred", addr)
            return False

        self._host_change(parsed, host_key, admit)

    def lock(self, code: str, host_key: str, locked: bool) -> State:
        """Lock (or unlock) the room to new students; those already in still answer."""
        self._flag(code, host_key, "locked", locked)

        def fn(m: dict) -> bool:
            changed = bool(m.get("locked")) != locked
            m["locked"] = locked
            return changed

        parsed, meta = self._host_change(code, host_key, fn)
        return self._state(parsed, meta)

    def prepare(self, code: str, step: int, note: dict, picture: bytes | None) -> None:
        """Keep a step's truth and figure, measured ahead (at the room's opening, or at its reveal):
        hidden until the reveal, so the reveal itself does no model work. Only a step already revealed
        wakes the pages (its truth arrives late)."""
        parsed = parse_code(code)
        meta = self._meta(parsed) if parsed is not None else None
        if parsed is None or meta is None:
            return  # closed meanwhile: nothing to keep
        n = _step(meta, step)
        if picture is not None:  # first: a page woken by the note finds its picture
            self.store.put_blob(parsed, f"p{n}", picture)

        def fn(m: dict) -> bool:
            m["notes"][str(n)] = dict(note)
            return n in m["revealed"]

        new = self.store.change(parsed, fn)
        self._forget_view(parsed)
        if new is not None and n in new["revealed"]:
            self._changed(parsed)

    def prepared(self, code: str, step: object) -> bool:
        """Whether a step's truth is measured already (a reveal then needs no model work)."""
        _, meta = self._live(code)
        return str(_step(meta, step)) in meta["notes"]

    def measured(self, code: str) -> bool:
        """Whether every step's truth is measured already (nothing left for the background to measure)."""
        _, meta = self._live(code)
        return len(meta["notes"]) >= len(meta["questions"])

    def step_number(self, code: str, step: object) -> int:
        """A step number as sent -> 1..n_steps of this open room, or a UserError."""
        _, meta = self._live(code)
        return _step(meta, step)

    def keep_photo_view(self, code: str, picture: bytes) -> None:
        """The photo as the model sees it (JPEG): every open step's picture (and the room's thumbnail)."""
        parsed = parse_code(code)
        if parsed is not None:
            self.store.put_blob(parsed, "p0", picture)
            self._forget_view(parsed)

    def model_view(self, code: str) -> bytes | None:
        """The model's input view the room was opened on (PNG), from which its truths are measured."""
        parsed, _ = self._live(code)
        return self.store.blob(parsed, "view")

    def picture(self, code: str, step: object) -> bytes | None:
        """A step's picture for anyone in the room: its figure once revealed, else (and for step 0) the
        photo the model sees (the figure may show the answer: predict first, as in the Lesson tab);
        None: not ready yet."""
        parsed, meta = self._live(code)
        if step in (0, "0"):
            return self.store.blob(parsed, "p0")
        n = _step(meta, step)
        if n in meta["revealed"]:
            fig = self.store.blob(parsed, f"p{n}")
            if fig is not None:
                return fig
        return self.store.blob(parsed, "p0")

    def view(self, code: str) -> dict:
        """A student's page's whole view: the state, and per revealed step its tally and truth. Computed
        once per version and VIEW_TTL_S (a revealed step's tally no longer changes): a push's hundreds
        of answered polls cost one reading of the store."""
        parsed, meta = self._live(code)
        with self._views_lock:
            hit = self._views.get(parsed)
        if hit is not None and hit[0] == meta["version"] and time.monotonic() - hit[1] < VIEW_TTL_S:
            return {**hit[2]}
        names = self.store.blob_names(parsed)
        out = self._state(parsed, meta).as_json()
        out["shown"] = {str(n): {"tally": _tally(n, self.store.answers(parsed, n), meta).as_json(),
                                 **meta["notes"].get(str(n), {}), "picture": f"p{n}" in names}
                        for n in sorted(meta["revealed"])}
        out["picture"] = "p0" in names  # the open step's picture (the photo) is ready
        with self._views_lock:
            self._views[parsed] = (meta["version"], time.monotonic(), out)
        return {**out}

    def close(self, code: str, host_key: str) -> None:
        """The lecturer closes the room: its answers are forgotten at once; its code says why for a day."""
        parsed, _ = self._host_change(code, host_key)
        if self.store.close(parsed, CLOSED_BY_HOST, self.clock()):
            self._changed(parsed)

    def tally(self, code: str, host_key: str, step: object) -> Tally:
        parsed, meta = self._host_change(code, host_key)
        n = _step(meta, step)
        return _tally(n, self.store.answers(parsed, n), meta)

    def answers_csv(self, code: str, host_key: str, titles: Sequence[str] = (),
                    within: Sequence[float] = ()) -> str:
        """Every answer of the room for its lecturer, as CSV: one row per step and student
        (step, its title where given, the student's random id, the answer as tallied, whether that
        step is revealed, and once it is, the truth measured on the room's photo and whether the answer
        is right: the truth's option, or a number within the step's `within`). Students are the ids
        their pages made up: nothing else is known of them."""
        parsed, meta = self._host_change(code, host_key)
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["step", "title", "student", "answer", "revealed", "truth", "right"])
        for n in range(1, len(meta["questions"]) + 1):
            title = titles[n - 1] if n - 1 < len(titles) else ""
            shown = n in meta["revealed"]
            truth = meta["notes"].get(str(n), {}).get("truth") if shown else None
            for student, text in sorted(self.store.answers(parsed, n).items()):
                right = "" if truth is None else "yes" if _right(text, str(truth), within, n) else "no"
                w.writerow([n, title, student, text, "yes" if shown else "no", "" if truth is None else truth, right])
        return out.getvalue()

    # -------------------------------------------------------------- a student
    def state(self, code: str) -> State:
        """The room as a student's page follows it (no key needed: the code is the invitation)."""
        return self._state(*self._live(code))

    def _cached_meta(self, parsed: str) -> dict | None:
        """The open room's meta as this process keeps it, fresh and its host not away; None otherwise."""
        with self._views_lock:
            hit = self._metas.get(parsed)
        fresh = hit is not None and time.monotonic() - hit[1] < META_TTL_S and not self._away(hit[0])
        return hit[0] if hit is not None and fresh else None

    def cached_version(self, code: object) -> int | None:
        """version(code) where this process knows it without a store call, else None (then ask version): a
        long poll reads it in the event loop, and calls the store (which may hang) in a thread."""
        parsed = parse_code(code)
        if parsed is None:
            return -1
        meta = self._cached_meta(parsed)
        return None if meta is None else int(meta["version"])

    def cached_view(self, code: object) -> dict | None:
        """view(code) where this process has it, fresh, without a store call; else None (then ask view)."""
        parsed = parse_code(code)
        meta = None if parsed is None else self._cached_meta(parsed)
        if parsed is None or meta is None:
            return None
        with self._views_lock:
            hit = self._views.get(parsed)
        if hit is not None and hit[0] == meta["version"] and time.monotonic() - hit[1] < VIEW_TTL_S:
            return {**hit[2]}
        return None

    def version(self, code: str) -> int:
        """The room's version, -1 once closed or unknown: the cheap check a waiting page repeats."""
        parsed = parse_code(code)
        if parsed is None:
            return -1
        meta = self._meta(parsed)
        return -1 if meta is None else int(meta["version"])

    def _refusal(self, got: str, code: str, meta: dict, n: int = 0) -> str:
        return {"gone": self.store.gone(code, self.clock()) or UNKNOWN_ROOM,
                "ahead": f"The lecturer is on step {meta['step']}: step {n} is not open yet.",
                "closed": f"Step {n} is closed: its answer has been shown.",
                "locked": LOCKED, "full": f"This room is full ({self.max_students} students).",
                "share": share_full(self.address_share), "barred": BARRED}[got]

    def join(self, code: object, student: object, addr: str = "") -> tuple[bool, str]:
        """A student's page says hello on load from address addr ("": unknown) -> (joined, reason): it
        counts toward MAX_STUDENTS and its address's share; refused when the room is locked (to a new
        student) or full, its address turned away or holding its share. Saying hello again is harmless."""
        try:
            parsed, meta = self._live(code)
            got = self.store.join(parsed, _check_student(student), str(addr), self.max_students,
                                  self.address_share)
            if got != "ok":
                raise UserError(self._refusal(got, parsed, meta))
            self._forget_view(parsed)
            return True, ""
        except StoreDown:
            raise  # not a refusal: the store is down, and the page asks again (page/room.py: 503)
        except UserError as e:
            return False, str(e)

    def answer(self, code: object, student: object, step: object, answer: object,
               addr: str = "") -> tuple[bool, str]:
        """One student's answer to one step -> (accepted, reason). Only the lecturer's current step,
        before its reveal; the same student again replaces the old answer; a new student is checked as
        join checks it. The store checks the step again in the same atomic write that keeps the answer
        (a reveal cannot fall in between)."""
        try:
            parsed, meta = self._live(code)
            sid = _check_student(student)
            n = _step(meta, step)
            if n > meta["step"]:
                raise UserError(self._refusal("ahead", parsed, meta, n))
            if n < meta["step"] or n in meta["revealed"]:
                raise UserError(self._refusal("closed", parsed, meta, n))
            text = Question(tuple(meta["questions"][n - 1])).normalise(answer)
            got = self.store.answer(parsed, sid, n, text, str(addr), self.max_students, self.address_share)
            if got != "ok":
                raise UserError(self._refusal(got, parsed, meta, n))
            return True, ""
        except StoreDown:
            raise  # not a refusal: the answer is not kept, and the page says it cannot reach the server
        except UserError as e:
            return False, str(e)

    def kept(self, code: object, step: object, answer: object) -> str | None:
        """The text an answer is tallied as ("12,5" -> "12.5"), None if the room would refuse it: a page
        marks its own bar "(you)" by it (the room's meta only, no answers read)."""
        try:
            _, meta = self._live(code)
            return Question(tuple(meta["questions"][_step(meta, step) - 1])).normalise(answer)
        except UserError:
            return None

    def own(self, code: str, student: str, step: int) -> str | None:
        """A student's own answer to a step (None: none given)."""
        parsed, meta = self._live(code)
        return self.store.answers(parsed, _step(meta, step)).get(student)

    def mine(self, code: object, student: object) -> dict[int, str]:
        """A student's own answers, step -> the text tallied. A page opened again (a phone's tab closed,
        the browser restarted) shows them: its own copy lived in the closed tab, so it asked a question
        it had answered and, after the reveal, said "You did not answer this step." under a tally that
        counted its answer."""
        parsed, meta = self._live(code)
        return self.store.student_answers(parsed, _check_student(student), len(meta["questions"]))

    def revealed_tally(self, code: str, step: object) -> Tally:
        """A step's tally for a student: only once the lecturer revealed it (no peeking at the room)."""
        parsed, meta = self._live(code)
        n = _step(meta, step)
        if n not in meta["revealed"]:
            raise UserError(f"Step {n} has not been revealed yet.")
        return _tally(n, self.store.answers(parsed, n), meta)

    def __len__(self) -> int:
        self._sweep()
        return len(self.store.metas())


def open_store(db: str | Path | None = None, redis_url: str | None = None) -> RoomStore:
    """The server's store: Redis when a URL is given (every replica sees every room), else SQLite at
    `db` (roomstore.default_path() when None)."""
    if redis_url:
        from vizvit.classroom.roomstore_redis import (
            RedisStore,  # only a server given a URL needs the redis package
        )

        return RedisStore(redis_url)
    path = Path(db) if db is not None else default_path()
    if lost_on_restart(path):
        logging.getLogger("vizvit.rooms").warning(
            "Live rooms are kept in %s, on this Space's disk, which is lost when the Space restarts (and a class's "
            "rooms and answers with it): enable the Space's persistent storage (rooms then go to /data), or give "
            "it a Redis (the secret %s).", path, REDIS_URL_ENV)
    return SQLiteStore(path)


class Asks(Protocol):
    """A lesson step as a room reads it (vizvit.classroom.lesson.Step): its options as (key, text)."""

    @property
    def options(self) -> tuple[tuple[str, str], ...]: ...


def questions_of(steps: Sequence[Asks]) -> tuple[Question, ...]:
    """The lesson's steps (vizvit.classroom.lesson.Step) -> their questions as a room checks answers."""
    return tuple(Question(tuple(k for k, _ in s.options)) for s in steps)
