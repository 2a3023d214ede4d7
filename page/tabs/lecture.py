"""The lecture tab's components and events."""

from __future__ import annotations

import gradio as gr

from vizvit.views import lecture

from ..kit import Ctx, safe

def build(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown(lecture.LECTURE_TEXT)
    with gr.Row():
        size = gr.Slider(16, 1024, value=224, step=1, label="image side (pixels)", elem_id="cost-size")
        patch = gr.Slider(1, 64, value=16, step=1, label="patch size P", elem_id="cost-patch")
    table, text = lecture.show(224, 16)
    cost = gr.Dataframe(table, headers=["", "pixels as tokens", "patches as tokens"], interactive=False,
                        elem_id="cost-table")
    cost_text = gr.Markdown(text, elem_id="cost-text")

    @safe
    def calculate(side: int, p: int):
        return lecture.show(side, p)

    for c in (size, patch):
        c.change(calculate, [size, patch], [cost, cost_text], show_progress="hidden")

