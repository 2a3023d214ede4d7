"""The Lesson tab: the steps of vizvit/classroom/lesson.toml one at a time, a question before each reveal.

A step is data (vizvit.classroom.lesson.Step); what it measures is one of MEASURES below, each computing its
number on this photo with the functions the step's own tab uses, formatted as that tab writes it (the
tests find each number in the tab's own text). The reveal shows the tab's own picture for the step's
controls (the tab's `show`), and the page can open that tab with those controls set.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import segno

from vizvit.classroom import claims, lesson as lesson_mod
from vizvit.classroom.lesson import MEASURED, Step
from vizvit.classroom.numbers import attention_cost
from vizvit.errors import UserError
from vizvit.model.cnn import cnn_shift_probs
from vizvit.model.engine import embedding_stage, mask_token
from vizvit.model.images import View
from vizvit.model.models import Geometry
from vizvit.model.tokens import dropout_check
from vizvit.readings import artifacts_rule as art_mod, attention as ra, methods, perturb
from vizvit.readings.artifacts import artifact_masks
from vizvit.session import Photo
from vizvit.views import attention, embeddings, experiments, inside, lecture, patches, positions
from vizvit.vocab import TABS

LESSON_TEXT = """**A guided lesson on your photo.** Each step asks a question first: answer it, then press
**Reveal** to see the number measured on this photo, what it means, and the view it comes from (**Open**
takes you to that tab with its controls set). Every step has its own link; in projector mode the step's
QR code shows, so phones open the same step on the same photo."""

# The tab modules the steps' views name, by tab id (the lesson's own tab never is one).
TAB_VIEWS = {"patches": patches, "embeddings": embeddings, "attention": attention, "positions": positions,
             "experiments": experiments, "inside": inside, "lecture": lecture}
SAME = 0.9999  # a patch vector "stays the same" when its cosine with its partner reaches this


@dataclass(frozen=True)
class Measured:
    """A step's number on this photo."""

    value: str  # the number as the step's tab writes it (found in the tab's text: tests check)
    line: str  # one sentence saying what was measured, with the number in bold
    right: str | float  # the right option's key, or the right number (a number question)


# ------------------------------------------------------------------ the step's tab
def params_class(view_id: str) -> type:
    """The tab's one *Params dataclass (every tab has exactly one: tests/page/test_structure.py)."""
    mod = TAB_VIEWS[view_id]
    return next(c for n, c in vars(mod).items() if n.endswith("Params") and dataclasses.is_dataclass(c))


def centre_mask(g: Geometry) -> tuple[int, ...]:
    """The patches of the middle half of the rows and of the columns (a 7×7 block of a 14×14 grid)."""
    (gh, gw) = g.grid
    rows = range(gh // 4, gh // 4 + max(1, gh // 2))
    cols = range(gw // 4, gw // 4 + max(1, gw // 2))
    return tuple(r * gw + c for r in rows for c in cols)


def step_controls(step: Step, g: Geometry) -> dict[str, Any]:
    """The step's controls for this model: its numbers put in, mask = "centre" made the patch list."""
    c = lesson_mod.controls_for(step, g)
    if c.get("mask") == "centre":
        c["mask"] = centre_mask(g)
    return c


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


def text_of(value: Any) -> str:
    """A Page field as text: markdown as it is, a table's or a list's cells joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return " | ".join(text_of(v) for v in value)
    return str(value)


# ------------------------------------------------------------------ what the steps measure
def _input_side(ph: Photo, step: Step) -> Measured:
    h, w = ph.vm.geometry.image_size
    return Measured(f"(1, 3, {h}, {w})", f"The model-input view is **{h}×{w} pixels**: input shape (1, 3, {h}, {w}).",
                    float(h))


def _patches(ph: Photo, step: Step) -> Measured:
    g = ph.vm.geometry
    p = g.patch_size
    return Measured(f"{g.num_patches:,}", f"**{g.num_patches:,} patches** ({g.grid[0]}×{g.grid[1]}) of {p}×{p}×3 = "
                    f"**{p * p * 3:,} numbers** each.", step.answer)


def _conv(ph: Photo, step: Step) -> Measured:
    d = embedding_stage(ph.vm, ph.analysis()).conv_vs_linear
    return Measured(f"{d:.2e}", f"On your photo, **max |conv − unfold·W| = {d:.2e}**: float32 rounding.", step.answer)


def _tokens(ph: Photo, step: Step) -> Measured:
    g = ph.vm.geometry
    names = " ".join(g.prefix_names) or "no prefix token"
    return Measured(f"{g.seq_len:,}", f"**{g.seq_len:,} tokens**: {names} + {g.num_patches:,} patches.", float(g.seq_len))


def _positions(ph: Photo, step: Step) -> Measured:
    if ph.vm.family.has_bias_table:
        raise UserError(f"{ph.vm.family.title} has no position table (a relative bias in every attention instead): "
                        "see its bias tables on the Positions tab.")
    c = positions.cached_model_positions(ph).report.contrasts
    learned, base = c["learned"], [(k, c[k].contrast) for k in c if k != "learned"]
    rand = c["random init"].contrast
    right = "yes" if learned.contrast > rand + 0.1 else "no"
    others = ", ".join(f"{k} {v:+.2f}" for k, v in base)
    return Measured(f"{learned.contrast:+.2f}", f"Neighbour contrast of the learned positions: **{learned.contrast:+.2f}** "
                    f"(neighbours {learned.neighbour:+.2f}, far {learned.far:+.2f}); for comparison {others}.", right)


def _classifier(ph: Photo) -> None:
    if not ph.vm.has_classifier:
        raise UserError("This model has no classifier (no top-1 class): pick a model with a head for this step.")


def _mask(ph: Photo, step: Step) -> Measured:
    _classifier(ph)
    c = step_controls(step, ph.vm.geometry)
    mask, mode = tuple(c.get("mask", ())), c.get("mode", "mask")
    base = ph.analysis()
    a = ph.analysis(View(mask=mask, mask_mode=mode))  # type: ignore[arg-type]
    b0 = base.top5[0]
    now = float(a.probs[b0.index])
    tok = mask_token(ph.vm) if mode == "mask" else None
    trained, how = (tok.trained, tok.source) if tok is not None else (True, f"masked by {mode}")
    return Measured(f"{now:.1%}", claims.mask_line(trained, how, b0.label, b0.prob, now, len(mask), a.top5[0].label),
                    "stays" if a.top5[0].index == b0.index else "changes")


def _dropout(ph: Photo, step: Step) -> Measured:
    p = float(step_controls(step, ph.vm.geometry).get("dropout", embeddings.DEFAULT_DROPOUT))
    c = dropout_check(ph.analysis().hidden_states[0], p)
    return Measured(f"{c.zeros_train:.1%}", f"Train mode, p = {p:g}: **{c.zeros_train:.1%}** of the tokens' numbers are zero "
                    f"(before: {c.zeros_before:.1%}); survivors × {c.scale:.4f} = 1/(1−p). Eval mode changed "
                    f"**{c.eval_changed}** numbers.", round(100 * c.zeros_train, 1))


def _cost(ph: Photo, step: Step) -> Measured:
    c = step_controls(step, ph.vm.geometry)
    cost = attention_cost(int(c["side"]), int(c["side"]), int(c["patch"]))
    return Measured(f"{cost.ratio:,.0f}×", f"{cost.pixel_weights:,} weights for pixel tokens against {cost.patch_weights:,} "
                    f"for patch tokens: **{cost.ratio:,.0f}× more**.", step.answer)


def _shift_cosines(ph: Photo, step: Step) -> tuple[np.ndarray, int, int]:
    c = step_controls(step, ph.vm.geometry)
    dx, dy = int(c.get("dx", 0)), int(c.get("dy", 0))
    g = ph.vm.geometry
    base, a = ph.analysis(), ph.analysis(View(dx=dx, dy=dy, fill=c.get("fill", "edge")))
    return perturb.shift_cosine(base.patch_embeddings, a.patch_embeddings, dx, dy, g), dx, dy


def _shift_line(cos: np.ndarray, dx: int, dy: int) -> tuple[str, float]:
    mean, low = perturb.cos_summary(cos)
    finite = cos[np.isfinite(cos)]
    same = float((finite >= SAME).mean()) if finite.size else 0.0
    return (f"Shift ({dx}, {dy}) px: **mean cos {mean:.3f}**, min {low:.3f}; {int((finite >= SAME).sum())} of "
            f"{finite.size} patch vectors the same (cos ≥ {SAME})."), same


def _shift_stay(ph: Photo, step: Step) -> Measured:
    """How many patch vectors stay the same: none / few / all."""
    cos, dx, dy = _shift_cosines(ph, step)
    line, same = _shift_line(cos, dx, dy)
    mean, _ = perturb.cos_summary(cos)
    return Measured(f"mean cos {mean:.3f}", f"{line} {_cnn_sentence(ph)}",
                    "none" if same <= 0.01 else "all" if same >= 0.9 else "few")


def _cnn_sentence(ph: Photo) -> str:
    """The CNN's own sweep when the app has one (--cnn; the Experiments tab's cached sweep), else less."""
    cnn = ph.wb.cnn
    if cnn is None:
        return claims.cnn_shift_sentence(None)
    ks = list(range(2 * ph.vm.geometry.patch_size + 1))
    probs = ph.derived(experiments.cnn_sweep_name(cnn.id), lambda: cnn_shift_probs(cnn, ph.analysis().input_view, ks, "edge"))
    return claims.cnn_shift_sentence(cnn.id, ks, probs, float(probs[0]))  # k = 0 is the unshifted photo


def _shift_change(ph: Photo, step: Step) -> Measured:
    """How many patch vectors change: none / half / all."""
    cos, dx, dy = _shift_cosines(ph, step)
    line, same = _shift_line(cos, dx, dy)
    mean, _ = perturb.cos_summary(cos)
    changed = 1.0 - same
    return Measured(f"mean cos {mean:.3f}", line, "none" if changed <= 0.01 else "all" if changed >= 0.9 else "half")


def _survives(ph: Photo, step: Step) -> Measured:
    _classifier(ph)
    c = step_controls(step, ph.vm.geometry)
    base = ph.analysis()
    a = ph.analysis(View(dx=int(c.get("dx", 0)), dy=int(c.get("dy", 0)), fill=c.get("fill", "edge")))
    t, b = a.top5[0], base.top5[0]
    sweep = [(r.k, r.base_class_prob) for r in experiments.full_sweep(ph).rows]  # cached: the tab's own sweep
    return Measured(f"{t.prob:.1%}", f"Shifted: top-1 **{t.label.split(',')[0]} {t.prob:.1%}**; unshifted: "
                    f"{b.label.split(',')[0]} {b.prob:.1%}. "
                    + claims.survives_sentence(b.label, b.prob, t.label, t.prob, int(c.get("dx", 0)), sweep),
                    "same" if t.index == b.index else "other")


def _distance(ph: Photo, step: Step) -> Measured:
    d = ra.distances(ph.analysis(), ph.derived).numpy()  # (L, H) px
    L = d.shape[0]
    h = int(d[-1].argmax())
    first, last = float(d[0].mean()), float(d[-1].mean())
    right = "nearer" if last > 1.1 * first else "farther" if first > 1.1 * last else "same"
    each = lambda row: ", ".join(f"{v:.1f}" for v in row)  # noqa: E731
    g = ph.vm.geometry
    early = claims.early_heads_sentence(d[0], g.image_size[0], claims.uniform_distance(g.grid, g.patch_size))
    return Measured(f"layer {L} · head {h + 1} · {d[-1, h]:.1f} px",
                    f"Mean attention distance, layer 1: {each(d[0])} px (mean **{first:.1f}**); layer {L}: "
                    f"{each(d[-1])} px (mean **{last:.1f}**). {early}", right)


def _rollout(ph: Photo, step: Step) -> Measured:
    a = ph.analysis()
    g = ph.vm.geometry
    r = ra.rollout_maps(a, cache=ph.derived)[-1]  # (gh, gw), mean, no discard: the cached maps.mean_rollout
    s = float(r.sum())
    return Measured(f"{s:.4f}", f"After layer {g.num_layers}, **{s:.4f}** of [CLS]'s rolled-out attention is on the "
                    f"{g.num_patches} patches; the rest on the prefix tokens. {_rollout_claim(ph, r)}",
                    "most" if s > 0.5 else "some")


ROLLOUT_TOP = 5  # the brightest patches the rollout step checks for artifact tokens


def _rollout_claim(ph: Photo, r: Any) -> str:
    """What the contest says of rollout on this photo, if it has been run (never run here: minutes),
    and how many of the map's brightest patches are artifact tokens."""
    a = ph.analysis()
    art = art_mod.through_layers(artifact_masks(a, ph.derived))[-1].reshape(-1)  # (P,)
    top = np.argsort(-np.asarray(r, np.float64).ravel(), kind="stable")[:ROLLOUT_TOP]
    n_art = int(art[top].sum())
    contest = experiments.peek_contest(ph)
    rollout = methods.ROLLOUT.name
    if contest is None or rollout not in contest.first.curves.names:
        return claims.rollout_claim(artifacts_top=n_art, top_n=ROLLOUT_TOP)
    ranked = [n for n, _, _ in experiments.contestants(contest.first.curves, contest.first.band)]
    wins = "better" in experiments.beats_random(experiments.fill_score(contest.first))[rollout]
    return claims.rollout_claim(ranked.index(rollout) + 1, len(ranked), wins, contest.first.curves.mode, n_art,
                                ROLLOUT_TOP)


MEASURES: dict[str, Callable[[Photo, Step], Measured]] = {
    "input_side": _input_side, "patches": _patches, "conv": _conv, "tokens": _tokens, "positions": _positions,
    "mask": _mask, "dropout": _dropout, "cost": _cost, "shift_stay": _shift_stay, "shift_change": _shift_change,
    "survives": _survives, "distance": _distance, "rollout": _rollout}


def check_steps(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """Every step names a measurement that exists and a view that is a tab with a Params."""
    for s in steps:
        if s.measure not in MEASURES:
            raise UserError(f"Lesson step {s.id!r}: unknown measure {s.measure!r} ({', '.join(MEASURES)}).")
        if s.view not in TAB_VIEWS:
            raise UserError(f"Lesson step {s.id!r}: the lesson cannot open the {TABS.get(s.view, s.view)} tab.")
    return steps


_STEPS: tuple[Step, ...] | None = None


def steps() -> tuple[Step, ...]:
    """The lesson's steps (read and checked once)."""
    global _STEPS
    if _STEPS is None:
        _STEPS = check_steps(lesson_mod.load_steps())
    return _STEPS


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


def room_invite(code: str, host_key: str, page_url: str, where: Any) -> RoomInvite:
    """A room just opened -> its invitation. page_url: the lecturer's page address (the host view is
    opened from it); where: launch.PhoneAddress, the address a phone reaches (base, note)."""
    root = page_url.split("?")[0].split("#")[0]
    root = root if root.endswith("/") else root + "/"
    students = f"{where.base}room?code={code}"
    host = f"{root}room?host=1&code={code}#key={host_key}"  # the fragment: not in any server's log
    text = (f"**Room {code}** is open on this photo and model. Students scan the code or open "
            f"[{students}]({students}) (or `/room` and type **{code}**).\n\n"
            f"**[Open the host view]({host})**: you move the steps there and see the room's answers "
            f"(its link holds your host key: keep it off the projector until it has opened).")
    if where.note:
        text += "\n\n" + where.note
    return RoomInvite(text, qr_picture(students), students, host)


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
        return cls(step=int(v.get("step") or 1), choice=v.get("choice") or None,
                   number=None if n is None or n == "" else float(n), dont_know=bool(v.get("dont_know")))

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
    header = (f"### Step {n} of {len(steps())} · {lesson_mod.fill(s.title, g)}\n\n**{lesson_mod.fill(s.question, g)}**")
    if ph is None:
        header += "\n\n*Pick an example or upload a photo: the reveal measures it.*"
    return LessonPage(step=n, header=header, options=[(lesson_mod.fill(t, g), k) for k, t in s.options],
                      is_number=s.is_number, view=s.view)


def _verdict(s: Step, p: LessonParams, right: str | float, g: Geometry) -> str:
    if s.is_number:
        r = float(right)
        shown = f"{r:g}"
        if p.number is None:
            return f"The answer: **{shown}**."
        ok = abs(p.number - r) <= s.within
        return (f"✓ **Right**: {shown}." if ok else f"✗ **Not quite**: you said {p.number:g}, it is **{shown}**"
                + (f" (±{s.within:g} counts)." if s.within else "."))
    text = lesson_mod.fill(dict(s.options)[str(right)], g)
    if p.choice is None:
        return f"The answer: **{text}**."
    return "✓ **Right**: " + text + "." if p.choice == right else f"✗ **Not quite**: on this photo, **{text}**."


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
    parts = [_verdict(s, p, right, g), m.line, lesson_mod.fill(s.meaning, g)]
    if s.trained and not vm.is_pretrained:
        parts.append(f"**These weights are untrained** (random): {lesson_mod.fill(s.trained, g)} needs a trained "
                     f"model, so this photo's answer is not the lesson's claim. What still holds: "
                     f"{lesson_mod.fill(s.holds, g)}.")
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
