"""The For-lecturers tab: deep links, projector mode, the attention-cost calculator (no photo)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit.session import PhotoKey
from vizvit.views import lecture

from .. import kit
from ..kit import Ctx

CONTROLS = ["side", "patch"]  # the LectureParams fields the calculator's sliders set, in the order its events list them
SHOWN = ["cost", "cost_text"]  # the Page fields shown (the page names are the fields' names)
TYPED = [*SHOWN, *CONTROLS]  # what a number typed sets: the boxes too, where the table is for another number


# -- handlers: explicit values in, {name: value} out (page names: SHOWN) -------------------------------------
def calculate(*v: Any) -> dict:
    """The calculator for the sliders' values (in CONTROLS order): the cost table and its sentence."""
    return kit.values(lecture.show(None, lecture.LectureParams.from_controls(dict(zip(CONTROLS, v)))),
                      {n: n for n in SHOWN})


def typed(*v: Any) -> dict:
    """A slider moved or a number typed (raw, in CONTROLS order: out of range, fractional or empty): the table for
    the numbers the boxes show, a box set where it is for another number (gr.skip() leaves one as typed)."""
    return _typed(v, committed=False)


def left(*v: Any) -> dict:
    """A box left or a slider let go (Gradio then clamps the box itself): a number below the range is the bottom.
    Numbers in range are their input's to answer: leaving one box for the other sends this event with the numbers
    as they stood, and its answer, landing after the other box's newer one, could write a table over its line."""
    raw = dict(zip(CONTROLS, v))
    page = lecture.show_typed(raw, committed=True)
    return _shown(None if page == lecture.show_typed(raw) else page)


def _typed(v: tuple, committed: bool) -> dict:
    return _shown(lecture.show_typed(dict(zip(CONTROLS, v)), committed))


def _shown(page: lecture.LecturePage | None) -> dict:
    """{page name: value} of TYPED, gr.skip() for each part the page leaves as it is (None: all of them)."""
    if page is None:
        return {n: gr.skip() for n in TYPED}
    return {n: gr.skip() if val is None else val for n, val in kit.values(page, {n: n for n in TYPED}).items()}


def show(key: PhotoKey | None, *v: Any) -> dict:
    """The tab opened: the calculator as the sliders stand (no photo needed)."""
    return calculate(*v)


# -- the page: components by name, then the wiring ---------------------------------------------------
def _layout() -> dict[str, gr.components.Component]:
    """The text, the two sliders, and the table and sentence, filled at once (no photo needed)."""
    gr.Markdown(lecture.LECTURE_TEXT)
    with gr.Row():
        size = gr.Slider(*lecture.SIDE, value=224, step=1, label="image side (pixels)", elem_id="cost-size")
        patch = gr.Slider(*lecture.PATCH, value=16, step=1, label="patch size P", elem_id="cost-patch")
    first = lecture.show(None, lecture.LectureParams())
    # wrap: on a 390-px phone the three columns fit without a sideways scroll (a walk-through: it cut the last)
    cost = gr.Dataframe(first.cost, headers=["", "pixels as tokens", "patches as tokens"], interactive=False, wrap=True,
                        column_widths=["30%", "40%", "30%"], elem_id="cost-table")
    cost_text = gr.Markdown(first.cost_text, elem_id="cost-text")
    return dict(side=size, patch=patch, cost=cost, cost_text=cost_text)


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = _layout()
    controls, shown = [ui[n] for n in CONTROLS], [ui[n] for n in SHOWN]
    ctx.on_show(tab, kit.answer(show, ui), [ctx.key, *controls], shown)
    # The numbers as typed (preprocess=False: Gradio's Slider refuses one outside its range, and the box kept
    # 200 over the table of the number before). On input and release, not change: a box the answer sets would
    # change it again, and that answer, for a number in range, would drop the line saying why it was set.
    # always_last: a number typed while the one before is answered is answered after it, not dropped; one
    # concurrency group, so a box left is answered after the typing before it.
    typed_to = [ui[n] for n in TYPED]
    gr.on([c.input for c in controls], kit.answer(typed, ui), controls, typed_to, show_progress="hidden",
          preprocess=False, trigger_mode="always_last", concurrency_id="cost-typed")
    gr.on([c.release for c in controls], kit.answer(left, ui), controls, typed_to, show_progress="hidden",
          preprocess=False, trigger_mode="always_last", concurrency_id="cost-typed")
