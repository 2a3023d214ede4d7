"""The For-lecturers tab: deep links, projector mode, and the attention-cost calculator.
Needs no photo."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from vizvit.classroom.numbers import attention_cost, attention_cost_table, human_bytes
from vizvit.errors import UserError
from vizvit.session import Photo
from vizvit.vocab import HEADS_EXAMPLE, TAB_IDS

LECTURE_TEXT = """## For lecturers
**Link straight to a view.** Add query parameters to the page address, e.g.
`?example=chelsea&tab=attention&layer=6&head=3` opens the cat on the Attention tab at layer 6, head 3. Parameters:
`example` (astronaut, chelsea, coffee), `model`, `tab` ({tabs}), `layer` and `head` (1-based; `head` may also be mean,
max or min), `query` (the attention query patch as row,col counted from 0, e.g. `4,7`), `direction` (row or column),
`mode` (raw or rollout), `dx` and `dy` (shift in pixels), `fill` (what enters at the shift's border: edge, wrap or
constant), `mask` (patch numbers counted from 0, e.g. `3,17,40`), `mask_mode` (drop, mask, black, mean or blur),
`ablate` (heads switched off as layer.head from 1, e.g. `{heads}`), `ablate_mode` (zero or mean), `compare` (the
Compare tab's model B) and `projector=1`; a lesson step is `?lesson=1&step=5&example=chelsea` (the **Lesson** tab
gives each step's link, and its QR code in projector mode). A wrong value is replaced, by the default or by the
nearest that exists (past the last layer or step: the last one), with a note at the top. Or set the view up and press
**Copy link to this view** at the bottom of the page.

**Projector mode** (bottom of the page, or `projector=1`) enlarges all text and uses black on white.
Every picture has a download button; each tab's charts download as one HTML file that works offline.
`python -m vizvit export photo.jpg --out slides/` writes every figure as PNG, ready for slides.

**A 15-minute walk through:** Patches (196 patches of 16×16×3 = 768 numbers; the sequence has
197 tokens with [CLS]) → Embeddings (one linear map per patch; the conv is the same thing) →
Attention (the distance plot: how far each head looks grows with depth on the whole, though layer 1 already has
far heads beside near ones) → Positions (nobody
told the model about 2-D, yet the similarity grid shows rows and columns) → Experiments (shift by
8 px and by 16 px: only whole-patch shifts leave the tokens unchanged, flat patches aside).

**Which claims need trained weights.** With the untrained architecture (the banner at the top says
when) these still hold, because they are arithmetic: the patch grid and token counts, the embedding
shapes, whole-patch shifts leaving tokens unchanged, rollout's and attention's sums, the cost
calculator. These need a trained model and are *not* visible on random weights: near-then-far
attention distance by depth, the rows-and-columns pattern of the position similarities, attention
and relevance maps with structure (on a trained ViT not necessarily on the object: they often peak on
high-norm artifact tokens, which the Attention tab outlines, and only the Experiments tab's faithfulness
contest tests whether a map is what the decision rests on), and the predictions themselves.

### Why patches? The attention-cost calculator
Attention compares every token with every other: n tokens make an n×n table per head and layer.""".format(
    tabs=", ".join(TAB_IDS), heads=HEADS_EXAMPLE)  # the tab ids, from THE list


def attention_cost_panel(side: int, patch: int) -> tuple[list[list[str]], str]:
    """The calculator: a square image of `side` pixels, as pixel tokens vs P×P patches."""
    try:
        c = attention_cost(side, side, patch)
    except UserError as e:  # said where the numbers were, so no stale table stays up
        return [], f"⚠️ {e}"
    saving = (f"**{c.ratio:,.0f}× smaller**" if c.ratio >= 2 else
              "the same table: **no saving**, P = 1 makes every pixel a token" if c.ratio <= 1
              else f"only **{c.ratio:.2f}×** smaller")
    text = (f"At {side}×{side} px, one token per pixel gives **{c.pixel_tokens:,}** tokens (with [CLS]) and a table of "
            f"**{c.pixel_weights:,}** weights (**{human_bytes(c.pixel_bytes)}** in float32) for ONE head of ONE "
            f"layer. Cutting it into {patch}×{patch} patches gives {c.patch_tokens:,} tokens (with [CLS]), "
            f"{c.patch_weights:,} weights, {human_bytes(c.patch_bytes)}: {saving}.")
    if c.uncovered[0]:
        text += (f" {side} is not a multiple of {patch}: the {side // patch}×{side // patch} patches leave the last "
                 f"{c.uncovered[0]} px of each row and column unread (a ViT needs a multiple of P).")
    return attention_cost_table(c)[1:], text  # the header row is the Dataframe's headers


# ------------------------------------------------------------------ entry points
SIDE = (16, 1024)  # the image side's range in pixels: the slider's, and what the calculator takes
PATCH = (1, 64)  # the patch size P's range in pixels


@dataclass(frozen=True)
class Typed:
    """One slider's number as the box held it, read against its range: the number the table is for (None: no
    table), what the box should show instead (None: leave the box as it is) and the line that says why."""

    value: int | None
    box: int | None = None
    note: str = ""


def read_typed(raw: Any, span: tuple[int, int], name: str, unit: str, as_text: str, committed: bool) -> Typed:
    """A number typed into a slider's box, read against the slider's range `span` (Gradio's own check refuses
    one outside it: the box kept 200 over the table of the number before). Above the range: the top, put in the
    box at once (no typing on the way to a number in range passes above it). Below: said with no table while
    typing, since 3 may be the start of 384; the bottom once the box is left (`committed`: Gradio's Slider then
    clamps the box itself). A fraction: rounded (the step is 1 px). Empty: said, no table.
    name: what the number is ("the image side", "P"), unit (" px", ""), as_text: a value as a sentence says it."""
    lo, hi = span
    number = _number(raw)
    if number is None:  # empty, or not a number at all (a caller's event, not the page's box)
        return Typed(None, note=f"Type {name} in pixels, a whole number from {lo} to {hi}.")
    v, said = math.floor(min(number, hi + 1) + 0.5), name[:1].upper() + name[1:]
    if v > hi:
        return Typed(hi, hi, f"{said} is at most {hi}{unit}: the table is for {as_text.format(hi)}.")
    if v < lo and not committed:
        return Typed(None, note=f"{said} is at least {lo}{unit}: type {lo} or more.")
    if v < lo:
        return Typed(lo, lo, f"{said} is at least {lo}{unit}: the table is for {as_text.format(lo)}.")
    return Typed(v, None if v == number else v)


def _number(raw: Any) -> float | None:
    """A box's value as a finite number, or None (empty, text that is no number, nan, ±inf, a list...)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        return None
    try:
        number = float(raw)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


@dataclass(frozen=True)
class LectureParams:
    """Everything a control on the tab sets."""

    side: int = 224  # image side (pixels)
    patch: int = 16  # patch size P

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> LectureParams:
        return cls(side=int(v["side"]), patch=int(v["patch"]))


@dataclass(frozen=True)
class LecturePage:
    """What the tab shows, each field named like its component."""

    cost: list[list[str]]  # the calculator's table (its header row is the Dataframe's headers)
    cost_text: str
    side: int | None = None  # what the sliders' boxes should show instead of what was typed (None: as typed)
    patch: int | None = None


def show(ph: Photo | None, p: LectureParams) -> LecturePage:
    """On open and on a control change: the calculator's table and text. It reads no photo (ph may
    be None): the same shape as every tab's show."""
    return LecturePage(*attention_cost_panel(p.side, p.patch))


def show_typed(raw: dict[str, Any], committed: bool = False) -> LecturePage:
    """The calculator for the numbers as typed into the boxes ({"side": .., "patch": ..}, raw: out of range,
    fractional or empty), each read by read_typed: the table for the numbers the boxes will show, with a line for
    each number that is not what was typed. committed: the box was left (Enter does not leave it)."""
    side = read_typed(raw["side"], SIDE, "the image side", " px", "{} px", committed)
    patch = read_typed(raw["patch"], PATCH, "P", "", "P = {}", committed)
    notes = " ".join(t.note for t in (side, patch) if t.note)
    if side.value is None or patch.value is None:
        return LecturePage([], f"⚠️ {notes}", side.box, patch.box)
    table, text = attention_cost_panel(side.value, patch.value)
    return LecturePage(table, f"⚠️ {notes}\n\n{text}" if notes else text, side.box, patch.box)


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    return {}  # nothing photo-dependent


def export_figures(ph: Photo) -> dict[str, np.ndarray]:
    return {}
