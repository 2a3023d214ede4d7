"""The patches tab's components and events."""

from __future__ import annotations

import gradio as gr

from vizvit.session import PhotoKey
from vizvit.views import common as panels
from vizvit.views import patches

from ..kit import Ctx, safe

def build(ctx: Ctx, tab: gr.Tab) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            grid_img = gr.Image(label="What the model sees: the patch grid (click a patch)",
                                interactive=False, format="jpeg", elem_id="patch-grid")
            with gr.Row():
                lines = gr.Checkbox(value=True, label="grid lines")
                indices = gr.Checkbox(value=False, label="patch numbers (from 0)")
            patch_info = gr.Markdown(elem_id="patch-info")
        with gr.Column(scale=2):
            top5 = gr.Plot(label="Top-5 predictions", elem_id="top5")
            numbers = gr.Dataframe(headers=["what", "value"], label="Numbers", interactive=False,
                                   elem_id="numbers", wrap=True, column_widths=["45%", "55%"])
    with gr.Accordion("Which patches match this label (CLIP / SigLIP)", open=True, elem_id="label-map-box",
                      visible=ctx.wb.model(ctx.default_model).is_zero_shot) as label_box:
        ctx.zero_shot_only.append(label_box)
        with gr.Row():
            label_pick = gr.Dropdown([], label="label", elem_id="label-pick", scale=1)
            label_text = gr.Markdown(elem_id="label-map-text")
        label_img = gr.Image(label="cosine of each patch token with the label's text embedding", interactive=False,
                             format="jpeg", elem_id="label-map")
    strip = gr.Image(label="The sequence it becomes: token 0 is [CLS], then patch k is token k + 1, one grid "
                           "row per line (numbers: first token of the line)",
                     interactive=False, format="jpeg", elem_id="sequence-strip")
    gr.Markdown(patches.PATCHES_TEXT)
    explanation = gr.Markdown(elem_id="patches-numbers")
    clicked = gr.State(None)  # (row, col)

    @safe
    def show(key: PhotoKey | None, lines_on: bool, idx_on: bool, rc: tuple[int, int] | None):
        if key is None:
            return None, None, None, None, "", "", gr.Dropdown(choices=[], value=None), None, ""
        ph = ctx.wb.handle(key)
        p = patches.show(ph, lines_on, idx_on, rc)
        if ph.vm.zero_shot is None:
            lab = (gr.Dropdown(choices=[], value=None), None, patches.label_rule_text(ph.vm))
        else:
            img, text = patches.label_map(ph)
            lab = (gr.Dropdown(choices=patches.label_choices(ph.vm), value=ph.analysis().top5[0].label), img, text)
        return p.grid, p.strip, p.top5, p.numbers, p.patch_text, p.explanation, *lab

    @safe
    def show_label(key: PhotoKey | None, label: str | None):
        if key is None or not label:
            return gr.skip(), gr.skip()
        return patches.label_map(ctx.wb.handle(key), label)

    @safe
    def redraw(key: PhotoKey | None, lines_on: bool, idx_on: bool, rc: tuple[int, int] | None):
        if key is None:
            return gr.skip(), gr.skip(), gr.skip()
        return patches.change(ctx.wb.handle(key), lines_on, idx_on, rc)

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        return panels.clicked_patch(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])

    ins = [ctx.key, lines, indices, clicked]
    ctx.on_show(tab, show, ins, [grid_img, strip, top5, numbers, patch_info, explanation, label_pick, label_img,
                                 label_text])
    # The grid alone: one picture to encode, fetch and decode while the forward takes the CPU.
    ctx.on_preview(tab, lambda key, *v: patches.preview(ctx.wb.handle(key), *v), [lines, indices, clicked],
                   [grid_img])
    label_pick.input(show_label, [ctx.key, label_pick], [label_img, label_text], show_progress="hidden")
    # Controls redraw only the grid: no forward, no re-encoding of the other panels.
    redrawn = [grid_img, patch_info, strip]
    lines.change(redraw, ins, redrawn, show_progress="hidden", api_name="patches_view")
    indices.change(redraw, ins, redrawn, show_progress="hidden")
    grid_img.select(click, [ctx.key], clicked).then(redraw, ins, redrawn, show_progress="hidden")

