"""A live room (issue 45): one lecturer paces the lesson, every student in the hall predicts.

A room lives in this server process only: no account, no name, nothing written anywhere; it is
forgotten when the lecturer closes it or after `idle_s` without a host action. Everything is bounded:
rooms at once, students per room, an answer's size. Pure Python (no gradio, no model): the page and
the public API call it, and the truth of a step comes from the lesson as the Lesson tab computes it.

State of a room: the step the lecturer shows (1..n_steps), which steps are revealed, and per step a
dict student -> answer (one answer per student per step; a changed answer replaces the old one).
`version` grows by one at each host change, so a student's page waits for "anything newer than v"
instead of re-reading the whole state.
"""

from __future__ import annotations

import math
import re
import secrets
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .errors import UserError

MAX_ROOMS = 20  # rooms open at once in this process
MAX_STUDENTS = 300  # distinct students who may answer in one room
MAX_ANSWER_CHARS = 24  # an answer: an option key or a number, never prose
MAX_NUMBER = 1e12  # a number answer's magnitude (beyond: a typo, not a prediction)
IDLE_S = 2 * 3600.0  # a room with no host action for this long closes (a lecture and a break)
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: read aloud and typed on a phone
CODE_LEN = 8  # 32**8 = 1.1e12 codes: with wrong codes rate-limited per address, a stranger cannot find a room
CODE_RE = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LEN}}}")
STUDENT_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")  # a random token the student's page keeps

UNKNOWN_ROOM = "There is no open room with that code: check the code, or ask the lecturer for the link."
WRONG_KEY = "That host key does not open this room: only the lecturer's page may do that."
BAD_CODE = "A room code is 8 letters and digits, like ABCD2345."  # CODE_LEN of CODE_ALPHABET (no 0, O, 1, I)
NO_CODE = "Type the room code the lecturer shows: 8 letters and digits, like ABCD2345."


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
            x = float(str(answer).replace(",", "").strip()) if isinstance(answer, str) else float(answer)
        except (ValueError, OverflowError):
            raise UserError("The answer to this question must be a number.") from None
        if not math.isfinite(x) or abs(x) > MAX_NUMBER:
            raise UserError(f"The answer must be a number of at most {MAX_NUMBER:g} in size.")
        return f"{x:g}"


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
    photo: Any  # the photo itself (a decoded image): for this process, never sent

    def as_json(self) -> dict:
        return {"code": self.code, "step": self.step, "n_steps": self.n_steps, "revealed": list(self.revealed),
                "version": self.version, "closed": self.closed, "model": self.model}  # never the photo's server path


@dataclass(frozen=True)
class Tally:
    """One step's answers: answer -> count (descending count), and how many answered."""

    step: int
    answers: dict[str, int]
    total: int

    def as_json(self) -> dict:
        return {"step": self.step, "answers": dict(self.answers), "total": self.total}


@dataclass
class Room:
    """One room. Mutated only under Rooms' lock."""

    code: str
    host_key: str
    model: str
    photo: Any  # the decoded photo, kept by the room: an upload's file may be cleaned away, the
    # Workbench's photo store evicts, and the truth must still be measured at the reveal
    questions: tuple[Question, ...]
    touched: float  # last host action (monotonic seconds)
    step: int = 1
    revealed: set[int] = field(default_factory=set)
    version: int = 0
    closed: bool = False
    students: set[str] = field(default_factory=set)
    answers: dict[int, dict[str, str]] = field(default_factory=dict)  # step -> student -> answer
    notes: dict[int, dict] = field(default_factory=dict)  # step -> its truth, measured ahead (shown once revealed)
    pictures: dict[int, bytes] = field(default_factory=dict)  # step -> its figure (JPEG), shown once revealed
    # 0 -> the photo as the model sees it, the picture of every step still open. Bounded: one per step + 1.

    def state(self) -> State:
        return State(self.code, self.step, len(self.questions), tuple(sorted(self.revealed)), self.version,
                     self.closed, self.model, self.photo)


class Rooms:
    """The process's rooms: a bounded dict behind one lock, idle rooms closed on each access."""

    def __init__(self, max_rooms: int = MAX_ROOMS, max_students: int = MAX_STUDENTS, idle_s: float = IDLE_S,
                 clock: Callable[[], float] = time.monotonic, on_change: Callable[[str], None] | None = None):
        """on_change(code): called (from any thread) after a room's version grows: the waiting pages wake."""
        self.max_rooms, self.max_students, self.idle_s, self.clock = max_rooms, max_students, idle_s, clock
        self.on_change = on_change
        self._rooms: dict[str, Room] = {}
        self._lock = threading.Lock()

    # -------------------------------------------------------------- under the lock
    def _expire(self) -> None:
        now = self.clock()
        for code in [c for c, r in self._rooms.items() if now - r.touched > self.idle_s]:
            self._rooms.pop(code).closed = True

    def _room(self, code: object) -> Room:
        self._expire()
        parsed = parse_code(code)
        room = self._rooms.get(parsed) if parsed is not None else None
        if room is None:
            raise UserError(UNKNOWN_ROOM)
        return room

    def _host(self, code: object, host_key: object) -> Room:
        room = self._room(code)
        if not isinstance(host_key, str) or not secrets.compare_digest(host_key.encode(), room.host_key.encode()):
            raise UserError(WRONG_KEY)
        room.touched = self.clock()
        return room

    def _changed(self, code: str) -> None:
        if self.on_change is not None:
            self.on_change(code)

    @staticmethod
    def _step(room: Room, step: object) -> int:
        if isinstance(step, bool) or not isinstance(step, (int, float, str)):
            raise UserError(f"step must be a whole number from 1 to {len(room.questions)}.")
        try:
            f = float(step)
        except ValueError:
            f = math.nan
        if not math.isfinite(f) or f != int(f) or not 1 <= f <= len(room.questions):
            raise UserError(f"step must be a whole number from 1 to {len(room.questions)}.")
        return int(f)

    # -------------------------------------------------------------- the lecturer
    def open(self, model: str, photo: Any, questions: Sequence[Question]) -> tuple[str, str]:
        """A new room -> (code, host_key). Refused politely when MAX_ROOMS are open."""
        if not questions:
            raise UserError("A room needs a lesson with at least one step.")
        with self._lock:
            self._expire()
            if len(self._rooms) >= self.max_rooms:
                raise UserError(f"This server already holds {self.max_rooms} open rooms, its limit: "
                                "close one, or try again later.")
            while True:
                code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LEN))
                if code not in self._rooms:
                    break
            key = secrets.token_urlsafe(16)
            self._rooms[code] = Room(code, key, model, photo, tuple(questions), touched=self.clock())
            return code, key

    def move(self, code: str, host_key: str, step: object, reveal: bool = False) -> State:
        """The lecturer shows `step` (and, with reveal, its answer): every student's page follows."""
        with self._lock:
            room = self._host(code, host_key)
            n = self._step(room, step)
            changed = n != room.step or (reveal and n not in room.revealed)
            room.step = n
            if reveal:
                room.revealed.add(n)
            if changed:
                room.version += 1
                self._changed(room.code)
            return room.state()

    def prepare(self, code: str, step: int, note: dict, picture: bytes | None) -> None:
        """Keep a step's truth and figure, measured ahead (at the room's opening, or at its reveal):
        hidden until the reveal, so the reveal itself does no model work. Only a step already revealed
        wakes the pages (its truth arrives late)."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return  # closed meanwhile: nothing to keep
            n = self._step(room, step)
            room.notes[n] = dict(note)
            if picture is not None:
                room.pictures[n] = picture
            if n in room.revealed:
                room.version += 1
                self._changed(room.code)

    def prepared(self, code: str, step: object) -> bool:
        """Whether a step's truth is measured already (a reveal then needs no model work)."""
        with self._lock:
            room = self._room(code)
            return self._step(room, step) in room.notes

    def keep_photo_view(self, code: str, picture: bytes) -> None:
        """The photo as the model sees it (JPEG): every open step's picture."""
        with self._lock:
            room = self._rooms.get(code)
            if room is not None:
                room.pictures[0] = picture

    def picture(self, code: str, step: object) -> bytes | None:
        """A step's picture for anyone in the room: its figure once revealed, else (and for step 0) the
        photo the model sees (the figure may show the answer: predict first, as in the Lesson tab);
        None: not ready yet."""
        with self._lock:
            room = self._room(code)
            if step in (0, "0"):
                return room.pictures.get(0)
            n = self._step(room, step)
            if n in room.revealed and n in room.pictures:
                return room.pictures[n]
            return room.pictures.get(0)

    def view(self, code: str) -> dict:
        """A student's page's whole view: the state, and per revealed step its tally and truth."""
        with self._lock:
            room = self._room(code)
            out = room.state().as_json()
            out["shown"] = {str(n): {"tally": self._tally(room, n).as_json(), **room.notes.get(n, {}),
                                     "picture": n in room.pictures} for n in sorted(room.revealed)}
            out["picture"] = 0 in room.pictures  # the open step's picture (the photo) is ready
            return out

    def close(self, code: str, host_key: str) -> None:
        """The lecturer closes the room: its answers are forgotten at once."""
        with self._lock:
            room = self._host(code, host_key)
            room.closed = True
            room.version += 1
            del self._rooms[room.code]
            self._changed(room.code)

    def tally(self, code: str, host_key: str, step: object) -> Tally:
        with self._lock:
            room = self._host(code, host_key)
            return self._tally(room, self._step(room, step))

    @staticmethod
    def _tally(room: Room, n: int) -> Tally:
        got = room.answers.get(n, {})
        return Tally(n, dict(Counter(got.values()).most_common()), len(got))

    # -------------------------------------------------------------- a student
    def state(self, code: str) -> State:
        """The room as a student's page follows it (no key needed: the code is the invitation)."""
        with self._lock:
            return self._room(code).state()

    def version(self, code: str) -> int:
        """The room's version, -1 once closed or unknown: the cheap check a waiting page repeats."""
        with self._lock:  # no expiry sweep here: it runs on every other call
            parsed = parse_code(code)
            room = self._rooms.get(parsed) if parsed is not None else None
            return -1 if room is None else room.version

    def answer(self, code: object, student: object, step: object, answer: object) -> tuple[bool, str]:
        """One student's answer to one step -> (accepted, reason). Only the lecturer's current step,
        before its reveal; the same student again replaces the old answer."""
        try:
            with self._lock:
                room = self._room(code)
                if not isinstance(student, str) or not STUDENT_ID.fullmatch(student):
                    raise UserError("student must be the page's random id: 8 to 64 letters, digits, - or _.")
                n = self._step(room, step)
                if n > room.step:
                    raise UserError(f"The lecturer is on step {room.step}: step {n} is not open yet.")
                if n < room.step or n in room.revealed:
                    raise UserError(f"Step {n} is closed: its answer has been shown.")
                text = room.questions[n - 1].normalise(answer)
                if student not in room.students:
                    if len(room.students) >= self.max_students:
                        raise UserError(f"This room is full ({self.max_students} students).")
                    room.students.add(student)
                room.answers.setdefault(n, {})[student] = text
                return True, ""
        except UserError as e:
            return False, str(e)

    def own(self, code: str, student: str, step: int) -> str | None:
        """A student's own answer to a step (None: none given)."""
        with self._lock:
            room = self._room(code)
            return room.answers.get(self._step(room, step), {}).get(student)

    def revealed_tally(self, code: str, step: object) -> Tally:
        """A step's tally for a student: only once the lecturer revealed it (no peeking at the room)."""
        with self._lock:
            room = self._room(code)
            n = self._step(room, step)
            if n not in room.revealed:
                raise UserError(f"Step {n} has not been revealed yet.")
            return self._tally(room, n)

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._rooms)


def questions_of(steps: Sequence[object]) -> tuple[Question, ...]:
    """The lesson's steps (vizvit.lesson.Step) -> their questions as a room checks answers."""
    return tuple(Question(tuple(k for k, _ in s.options)) for s in steps)  # type: ignore[attr-defined]
