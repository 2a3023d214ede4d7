"""The Lesson tab: the steps of vizvit/classroom/lesson.toml one at a time, a question before each reveal.

A step is data (vizvit.classroom.lesson.Step); what it measures is one of vizvit.readings.lesson.MEASURES,
each computing its number on this photo with the readings the step's own tab uses. The reveal shows the
tab's own picture for the step's controls (the tab's `show`), and the page can open that tab with those
controls set.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import segno

from vizvit.classroom import lesson as lesson_mod, room as room_mod
from vizvit.classroom.lesson import MEASURED, Step
from vizvit.errors import UserError
from vizvit.model.models import Geometry, VitModel
from vizvit.readings.lesson import MEASURES, MODEL_FACTS, step_controls, steps
from vizvit.session import Photo, PhotoGone
from vizvit.views import attention, embeddings, experiments, inside, lecture, patches, positions

LESSON_TEXT = """**A guided lesson on your photo.** Each step asks a question first: answer it, then press
**Reveal** to see the number measured on this photo, what it means, and the view it comes from (**Open**
takes you to that tab with its controls set). Every step has its own link; in projector mode the step's
QR code shows, so phones open the same step on the same photo."""

# The tab modules the steps' views name, by tab id (readings.lesson.STEP_TABS; the lesson's own tab never is one).
TAB_VIEWS: dict[str, Any] = {"patches": patches, "embeddings": embeddings, "attention": attention,
                             "positions": positions, "experiments": experiments, "inside": inside, "lecture": lecture}


# ------------------------------------------------------------------ the step's tab
def params_class(view_id: str) -> type:
    """The tab's one *Params dataclass (every tab has exactly one: tests/page/test_structure.py)."""
    mod = TAB_VIEWS[view_id]
    return next(c for n, c in vars(mod).items()
                if n.endswith("Params") and isinstance(c, type) and dataclasses.is_dataclass(c))


def tab_params(step: Step, g: Geometry) -> Any:
    """The step's tab's Params: the tab's defaults, with the step's controls."""
    cls = params_class(step.view)
    c = step_controls(step, g)
    names = {f.name for f in dataclasses.fields(cls)}
    bad = sorted(set(c) - names)
    if bad:
        raise UserError(f"Lesson step {step.id!r}: the {step.view} tab has no control(s) {', '.join(bad)}.")
    return dataclasses.replace(cls(), **c)


def tab_page(ph: Photo, step: Step) -> Any:
    """What the step's tab itself shows for the step's controls (its own `show`)."""
    return TAB_VIEWS[step.view].show(ph, tab_params(step, ph.vm.geometry))


def step_picture(ph: Photo, step: Step) -> np.ndarray | None:
    """The step's picture on this photo (its tab's own, for the step's controls), or None: a step without
    one, or one its tab cannot draw on this model (its measurement says why)."""
    if not step.picture:
        return None
    try:
        return getattr(tab_page(ph, step), step.picture)
    except PhotoGone:
        raise
    except UserError:
        return None


def text_of(value: Any) -> str:
    """A Page field as text: markdown as it is, a table's or a list's cells joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return " | ".join(text_of(v) for v in value)
    return str(value)


# ------------------------------------------------------------------ the QR code of a step's link
def qr_picture(url: str, module: int = 8) -> np.ndarray:
    """url -> (s, s, 3) uint8: its QR code (segno, error level M), black on white, 4 modules of quiet zone."""
    m = np.array(segno.make(url, error="m", micro=False).matrix, dtype=bool)  # (n, n) True = dark
    m = np.pad(m, 4)
    img = np.where(m, 0, 255).astype(np.uint8)
    img = np.kron(img, np.ones((module, module), np.uint8))
    return np.repeat(img[:, :, None], 3, axis=2)


# ------------------------------------------------------------------ a live room for this class (issue 45)
ROOM_NO_PHOTO = "**Pick an example or upload a photo first**: the room's answers are measured on it."


@dataclass(frozen=True)
class RoomInvite:
    """What the lecturer shows the hall when a room opens from the Lesson tab."""

    text: str  # markdown: the code, the students' link, the host view's link, a loopback note
    qr: np.ndarray  # (s, s, 3) uint8: the students' link
    students: str  # the students' link (a phone's address for this server)
    host: str  # the host view's link: carries the host key in its fragment (never sent to the server)


def room_invite(code: str, host_key: str, page_url: str, where: Any, kept: bool = False) -> RoomInvite:
    """A room just opened -> its invitation. page_url: the lecturer's page address (the host view is
    opened from it); where: launch.PhoneAddress, the address a phone reaches (base, note). kept: the room
    this page opened before it was reloaded (the photo shown now may be another)."""
    root = page_url.split("?")[0].split("#")[0]
    root = root if root.endswith("/") else root + "/"
    students = f"{where.base}room?code={code}"
    host = f"{root}room?host=1&code={code}#key={host_key}"  # the fragment: not in any server's log
    opened = ("is still open (opened from this page before it was reloaded)" if kept
              else "is open on this photo and model")
    text = (f"**Room {code}** {opened}. Students scan the code or open "
            f"[{students}]({students}) (or `/room` and type **{code}**).\n\n"
            f"**[Open the host view]({host})**: you move the steps there and see the room's answers "
            f"(its link holds your host key: keep it off the projector until it has opened).")
    if where.note:
        text += "\n\n" + where.note
    return RoomInvite(text, qr_picture(students), students, host)


# The room a Lesson tab opened, as the page keeps it across a reload (page/web/lesson_room_load.js): JSON of its
# code and host key. What comes back from the browser is anyone's to write: checked here, then against the room.
SAVED_MAX_CHARS = 200
HOST_KEY = re.compile(r"[A-Za-z0-9_-]{16,64}")  # room.Rooms.open: secrets.token_urlsafe(16), 22 characters


def saved_room(code: str, host_key: str) -> str:
    """The text the page keeps for the room it opened."""
    return json.dumps({"code": code, "host_key": host_key}, separators=(",", ":"))


def kept_room(saved: object) -> tuple[str, str] | None:
    """The page's kept text -> (code, host key), or None for anything but saved_room's shape (a code
    room.parse_code takes, a key of a host key's characters). Never raises."""
    if not isinstance(saved, str) or not saved or len(saved) > SAVED_MAX_CHARS:
        return None
    try:
        got = json.loads(saved)
    except ValueError:
        return None
    if not isinstance(got, dict) or set(got) != {"code", "host_key"}:
        return None
    code, key = room_mod.parse_code(got["code"]), got["host_key"]
    if code is None or not isinstance(key, str) or not HOST_KEY.fullmatch(key):
        return None
    return code, key


# ------------------------------------------------------------------ entry points
@dataclass(frozen=True)
class LessonParams:
    """Everything a control on the tab sets."""

    step: int = 1  # counted from 1, as the link writes it
    choice: str | None = None  # the chosen option's key
    number: float | None = None  # the typed number
    dont_know: bool = False  # "I don't know" pressed: the reveal without an answer

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> LessonParams:
        n = v.get("number")
        try:  # a caller may type anything into the number box's value: float() of it was "Something went wrong"
            if isinstance(n, bool):  # float(True) is 1.0: no number box sends one
                raise ValueError(n)
            number = None if n is None or n == "" else float(n)
            if number is not None and not math.isfinite(number):  # "nan", "inf": float's words, no answer
                raise ValueError(n)
        except (TypeError, ValueError, OverflowError):  # OverflowError: float() of a JSON int past its range
            raise UserError("Your answer is a number: type it in the box.") from None
        return cls(step=int(v.get("step") or 1), choice=v.get("choice") or None, number=number,
                   dont_know=bool(v.get("dont_know")))

    @property
    def answered(self) -> bool:
        """A prediction was made (or declined on purpose): only then may the reveal show the answer."""
        return self.choice is not None or self.number is not None or self.dont_know


@dataclass(frozen=True)
class LessonPage:
    """A step before its reveal, each field named like its component."""

    step: int  # the step shown, 1..len(steps())
    header: str  # markdown: "Step n of N · title" and the question
    options: list[tuple[str, str]]  # (text, key) of each option, [] for a number question
    is_number: bool
    view: str  # the tab the reveal opens
    # Whether "← previous" and "next →" lead anywhere: at an end the button is off (on step 1 it was on, and a
    # click drew step 1 again, as if nothing happened).
    has_previous: bool = True
    has_next: bool = True


@dataclass(frozen=True)
class Reveal:
    """A step's answer on this photo."""

    answer: str  # markdown: right or not, the measured number, what it means, untrained caveats
    picture: np.ndarray | None  # the step's tab's own picture for its controls
    view: str  # the tab to open
    controls: dict[str, Any]  # the tab's controls the step sets
    revealed: bool = True  # False: no answer yet, `answer` asks for one (nothing measured, nothing to open)


ASK_FIRST = ("**Your prediction first.** {how}, then press **Reveal**; or press **I don't know** to see the "
             "answer without one.")


def clamp_step(n: int | None) -> int:
    return min(max(1, int(n or 1)), len(steps()))


def show(ph: Photo | None, p: LessonParams) -> LessonPage:
    """A step's question (no photo needed: a student who opens a link sees the question first)."""
    n = clamp_step(p.step)
    s = steps()[n - 1]
    g = ph.vm.geometry if ph is not None else None
    header = (f"## Step {n} of {len(steps())} · {lesson_mod.fill(s.title, g)}\n\n**{lesson_mod.fill(s.question, g)}**")
    if ph is None:
        header += "\n\n*Pick an example or upload a photo: the reveal measures it.*"
    return LessonPage(step=n, header=header, options=[(lesson_mod.fill(t, g), k) for k, t in s.options],
                      is_number=s.is_number, view=s.view, has_previous=n > 1, has_next=n < len(steps()))


def _verdict(s: Step, p: LessonParams, right: str | float, g: Geometry) -> str:
    if s.is_number:
        r = float(right)
        shown = f"{r:g}"
        if p.number is None:
            return f"The answer: **{shown}**."
        ok = abs(p.number - r) <= s.within
        return (f"✓ **Right**: {shown}." if ok else f"✗ **Not quite**: you said {p.number:g}, it is **{shown}**"
                + (f" (±{s.within:g} counts as right)." if s.within else "."))
    text = lesson_mod.fill(dict(s.options)[str(right)], g)
    if p.choice is None:
        return f"The answer: **{text}**."
    where = "For this model" if s.measure in MODEL_FACTS else "On this photo"
    return "✓ **Right**: " + text + "." if p.choice == right else f"✗ **Not quite**. {where}: **{text}**."


def meaning(s: Step, vm: VitModel) -> str:
    """A step's meaning for this model (Markdown): on untrained weights, what needs trained ones and
    what still holds (the Lesson tab's reveal and a live room's revealed step say the same)."""
    text = lesson_mod.fill(s.meaning, vm.geometry)
    if s.trained and not vm.is_pretrained:
        text += (f"\n\n**These weights are untrained** (random): {lesson_mod.fill(s.trained, vm.geometry)} needs a "
                 f"trained model, so this photo's answer is not the lesson's claim. What still holds: "
                 f"{lesson_mod.fill(s.holds, vm.geometry)}.")
    return text


def reveal(ph: Photo, p: LessonParams) -> Reveal:
    """A step's answer: the measurement on this photo, the verdict on the student's answer, the
    meaning, and the step's tab's own picture. A step that cannot be measured on this model says why."""
    n = clamp_step(p.step)
    s = steps()[n - 1]
    vm = ph.vm
    g = vm.geometry
    controls = step_controls(s, g)
    if not p.answered:  # predict before the reveal: an empty answer reveals nothing
        how = "Type a number" if s.is_number else "Pick an answer"
        return Reveal(ASK_FIRST.format(how=how), None, s.view, controls, revealed=False)
    try:
        m = MEASURES[s.measure](ph, s)
    except UserError as e:
        return Reveal(f"**This step cannot be measured on {vm.display_name}:** {e}", None, s.view, controls)
    right = m.right if s.answer == MEASURED else s.answer
    parts = [_verdict(s, p, right, g), f"{m.line} {m.tab_hint}".strip(), meaning(s, vm)]
    picture = getattr(tab_page(ph, s), s.picture) if s.picture else None
    return Reveal("\n\n".join(parts), picture, s.view, controls)


def opens(ph: Photo, p: LessonParams) -> tuple[str, dict[str, Any]]:
    """The tab a step's reveal opens and its controls for this model (no measurement)."""
    s = steps()[clamp_step(p.step) - 1]
    return s.view, step_controls(s, ph.vm.geometry)


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    return {}  # every step's number comes from another tab's arrays


def export_figures(ph: Photo) -> dict[str, np.ndarray]:
    return {}
