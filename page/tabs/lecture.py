"""The For-lecturers tab: deep links, projector mode, the attention-cost calculator (no photo)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit.session import PhotoKey
from vizvit.views import lecture

from .. import kit
from ..kit import Ctx, safe


def build(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown(lecture.LECTURE_TEXT)
    with gr.Row():
        size = gr.Slider(16, 1024, value=224, step=1, label="image side (pixels)", elem_id="cost-size")
        patch = gr.Slider(1, 64, value=16, step=1, label="patch size P", elem_id="cost-patch")
    first = lecture.show(None, lecture.LectureParams())  # no photo needed: filled at once
    cost = gr.Dataframe(first.cost, headers=["", "pixels as tokens", "patches as tokens"], interactive=False,
                        elem_id="cost-table")
    cost_text = gr.Markdown(first.cost_text, elem_id="cost-text")
    named = dict(side=size, patch=patch)
    shown = dict(cost=cost, cost_text=cost_text)
    read = kit.reader(named)

    @safe
    def show(key: PhotoKey | None, *v: Any) -> dict:
        return kit.values(lecture.show(None, lecture.LectureParams.from_controls(read(v))), shown)

    @safe
    def calculate(*v: Any) -> dict:
        return kit.values(lecture.show(None, lecture.LectureParams.from_controls(read(v))), shown)

    ctx.on_show(tab, show, [ctx.key, *named.values()], list(shown.values()))
    for c in named.values():
        c.change(calculate, list(named.values()), list(shown.values()), show_progress="hidden")
