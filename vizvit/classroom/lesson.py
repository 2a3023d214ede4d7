"""The guided lesson's steps, as DATA: read from a TOML file (vizvit/classroom/lesson.toml, or the file named by
VIZVIT_LESSON), one [[step]] table each, in the order they are taught. A lecturer reorders, drops or
rewords steps by editing that file; no step is code. What a step measures is named (`measure`), and
vizvit/views/lesson.py holds those measurements: each one computes its number with the functions the
tab itself uses.

A step:

    [[step]]
    id = "shift1"                 # short, unique: its deep link is ?lesson=1&step=N (N counts from 1)
    title = "A one-pixel shift"
    question = "Shift the photo 1 pixel right. How many patch vectors stay the same?"
    options = { none = "None: every one changes", few = "A few", all = "Nearly all" }   # or: number = true
    answer = "measured"           # an option's key, a number, or "measured" (the photo decides)
    within = 0                    # number questions: how far off still counts as right
    view = "experiments"          # the tab the reveal opens (vizvit.vocab.TABS)
    controls = { dx = 1 }         # that tab's controls (its Params fields); "{patch}" = this model's P
    measure = "shift"             # vizvit.readings.lesson.MEASURES
    field = "shift_info"          # the tab's Page field whose text shows the number (tests check it)
    picture = "shift_cos"         # the tab's Page field the reveal shows ("" = none)
    meaning = "Two or three sentences: what the number means."
    trained = "what needs trained weights"   # optional: said when the model is untrained, with
    holds = "what still holds"                #   what still holds on random weights
    truth = "Measured at the paper's p = 0.1" # optional: how a reveal names its truth, where neither "for this
                                              #   model" nor "on this photo" says what the number is

Text may name this model's numbers: {side} {patch} {grid} {patches} {patch_numbers} {tokens} {hidden}
{layers} {heads} {cost_ratio} {cost_about} (it rounded to two figures: an option) {pixels_per_patch}
{pixel_sum} ("224² + 1 = 50,177": a token per pixel, and [CLS]) {patch_sum} ("196 + 1 = 197") {prefix_note}.
No gradio, no model: pure data and checks.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vizvit.classroom.numbers import attention_cost
from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.vocab import TABS

LESSON_FILE = Path(__file__).with_name("lesson.toml")
MEASURED = "measured"  # an answer the photo decides: the step's measurement names the right option or number


@dataclass(frozen=True)
class Step:
    """One step of the lesson, as written in the TOML file (text not yet filled with a model's numbers)."""

    id: str
    title: str
    question: str
    view: str  # tab id
    measure: str  # a name in vizvit.readings.lesson.MEASURES
    field: str  # the tab's Page field whose text shows the measured number
    meaning: str
    options: tuple[tuple[str, str], ...] = ()  # (key, text), in the order shown; () = a number question
    answer: str | float = MEASURED  # an option key, a number, or MEASURED
    within: float = 0.0  # a number question: |guess − answer| ≤ within is right
    # dataclasses.field by its module: the field named `field` above shadows the bare name for mypy
    controls: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    picture: str = ""
    trained: str = ""  # what needs trained weights ("" = nothing)
    holds: str = ""  # what still holds on untrained weights
    truth: str = ""  # how a reveal names its truth ("" = "for this model" or "on this photo", by its measure)

    @property
    def is_number(self) -> bool:
        return not self.options


def numbers_of(g: Geometry) -> dict[str, Any]:
    """The model's numbers a step's text and controls may name, e.g. {patch}."""
    p = g.patch_size
    # This model's prefix tokens on both sides, as {tokens} (its sequence) counts them: 1 on a ViT,
    # none on SigLIP, [CLS] and 4 registers on DINOv2 with registers.
    h, w = g.image_size
    cost = attention_cost(h, w, p, g.num_prefix_tokens)
    return dict(side=g.image_size[0], patch=p, cost_ratio=f"{cost.ratio:,.0f}", cost_about=about(cost.ratio),
                pixel_sum=token_sum(f"{h}²" if h == w else f"{h}×{w}", cost.pixel_tokens, g),
                patch_sum=token_sum(f"{g.num_patches:,}", cost.patch_tokens, g), prefix_note=prefix_note(g),
                pixels_per_patch=f"{p * p:,}", grid=g.grid[0], patches=f"{g.num_patches:,}",
                patch_numbers=f"{p * p * 3:,}", tokens=f"{g.seq_len:,}", hidden=f"{g.hidden_size:,}",
                layers=g.num_layers, heads=g.num_heads, summary=summary_name(g))


def token_sum(body: str, total: int, g: Geometry) -> str:
    """A count of tokens written as its sum, prefix included ("224² + 1 = 50,177"; "196" with none, SigLIP):
    the cost step said "224² pixel tokens against 197 patch tokens", one side with [CLS], one without."""
    return f"{body} + {g.num_prefix_tokens} = {total:,}" if g.num_prefix_tokens else (
        body if body == f"{total:,}" else f"{body} = {total:,}")


def prefix_note(g: Geometry) -> str:
    """What token_sum adds, named (" (the + 1: [CLS], on both sides)"); "" for none."""
    if not g.num_prefix_tokens:
        return ""
    return f" (the + {g.num_prefix_tokens}: {', '.join(g.prefix_names)}, on both sides)"


def summary_name(g: Geometry) -> str:
    """The token or probe the model's maps are read from, as a sentence names it: '[CLS]', 'the patch
    mean' (BEiT), 'the MAP head' (SigLIP)."""
    s = g.summaries[0]
    return s if s.startswith("[") else f"the {s}"


def about(x: float) -> str:
    """x to two significant figures ("65,000" for 64,875): an option to choose, written as roundly as
    the options beside it, so that its exactness does not give the answer away."""
    return f"{float(f'{x:.2g}'):,.0f}"


def fill(text: str, g: Geometry | None) -> str:
    """A step's text with this model's numbers; as written (placeholders and all) without a model."""
    if g is None:
        return text
    try:
        return text.format(**numbers_of(g))
    except (KeyError, IndexError, ValueError) as e:
        raise UserError(f"The lesson text {text[:40]!r}… names an unknown number ({e}).") from None


def controls_for(step: Step, g: Geometry) -> dict[str, Any]:
    """The step's controls with this model's numbers put in ("{patch}" -> 16: an int where it reads
    as one)."""
    out = {}
    for k, v in step.controls.items():
        if isinstance(v, str) and "{" in v:
            v = fill(v, g)
            try:
                v = int(v.replace(",", ""))
            except ValueError:
                pass
        elif isinstance(v, list):
            v = tuple(v)
        out[k] = v
    return out


def _step(d: Mapping[str, Any], i: int) -> Step:
    where = f"step {i + 1} ({d.get('id', '?')})"
    need = ("id", "title", "question", "view", "measure", "field", "meaning")
    missing = [k for k in need if k not in d]
    if missing:
        raise UserError(f"Lesson {where}: missing {', '.join(missing)}.")
    known = set(need) | {"options", "number", "answer", "within", "controls", "picture", "trained", "holds",
                           "truth"}
    extra = sorted(set(d) - known)
    if extra:
        raise UserError(f"Lesson {where}: unknown field(s) {', '.join(extra)}.")
    if d["view"] not in TABS:
        raise UserError(f"Lesson {where}: view {d['view']!r} is not a tab ({', '.join(TABS)}).")
    options = tuple((str(k), str(v)) for k, v in dict(d.get("options", {})).items())
    if bool(options) == bool(d.get("number", False)):
        raise UserError(f"Lesson {where}: give either options (2–4) or number = true.")
    if options and not 2 <= len(options) <= 4:
        raise UserError(f"Lesson {where}: {len(options)} options; a question has 2 to 4.")
    answer = d.get("answer", MEASURED)
    if options and answer != MEASURED and answer not in dict(options):
        raise UserError(f"Lesson {where}: answer {answer!r} is not one of its options "
                        f"({', '.join(dict(options))}).")
    if not options and answer != MEASURED and not isinstance(answer, (int, float)):
        raise UserError(f"Lesson {where}: a number question's answer is a number or {MEASURED!r}.")
    return Step(id=str(d["id"]), title=str(d["title"]), question=str(d["question"]), view=str(d["view"]),
                measure=str(d["measure"]), field=str(d["field"]), meaning=" ".join(str(d["meaning"]).split()),
                options=options, answer=answer, within=float(d.get("within", 0.0)),
                controls=dict(d.get("controls", {})), picture=str(d.get("picture", "")),
                trained=" ".join(str(d.get("trained", "")).split()),
                holds=" ".join(str(d.get("holds", "")).split()), truth=" ".join(str(d.get("truth", "")).split()))


def parse_steps(text: str) -> tuple[Step, ...]:
    """TOML text -> the steps, checked (a clear message for any mistake, naming the step)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"The lesson file is not valid TOML: {e}.") from None
    steps = tuple(_step(d, i) for i, d in enumerate(data.get("step", [])))
    if not steps:
        raise UserError("The lesson file has no [[step]].")
    ids = [s.id for s in steps]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise UserError(f"Lesson step ids must be unique: {', '.join(dup)}.")
    return steps


def load_steps(path: str | Path | None = None) -> tuple[Step, ...]:
    """The lesson: `path`, else VIZVIT_LESSON, else vizvit/classroom/lesson.toml."""
    p = Path(path or os.environ.get("VIZVIT_LESSON") or LESSON_FILE)
    try:
        return parse_steps(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"Cannot read the lesson file {p.name}: {e.strerror}.") from None
