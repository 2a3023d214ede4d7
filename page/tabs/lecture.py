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


# -- handlers: explicit values in, {name: value} out (page names: SHOWN) -------------------------------------
def calculate(*v: Any) -> dict:
    """The calculator for the sliders' values (in CONTROLS order): the cost table and its sentence."""
    return kit.values(lecture.show(None, lecture.LectureParams.from_controls(dict(zip(CONTROLS, v)))),
                      {n: n for n in SHOWN})


def show(key: PhotoKey | None, *v: Any) -> dict:
    """The tab opened: the calculator as the sliders stand (no photo needed)."""
    return calculate(*v)


# -- the page: components by name, then the wiring ---------------------------------------------------
def _layout() -> dict[str, gr.components.Component]:
    """The text, the two sliders, and the table and sentence, filled at once (no photo needed)."""
    gr.Markdown(lecture.LECTURE_TEXT)
    with gr.Row():
        size = gr.Slider(16, 1024, value=224, step=1, label="image side (pixels)", elem_id="cost-size")
        patch = gr.Slider(1, 64, value=16, step=1, label="patch size P", elem_id="cost-patch")
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
    calculate_ = kit.answer(calculate, ui)  # one handler object: both sliders share its concurrency group
    for c in controls:
        c.change(calculate_, controls, shown, show_progress="hidden")
