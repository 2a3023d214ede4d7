"""The Camera tab: the webcam streamed through the model, one composed picture per frame, and
Freeze (the frame shown becomes the session's photo for every other tab)."""

from __future__ import annotations

import dataclasses
from typing import Any

import gradio as gr

from vizvit import camera as live
from vizvit import web
from vizvit.session import PhotoKey
from vizvit.views import camera, header
from vizvit.vocab import MODES

from .. import kit
from ..kit import Ctx, safe


def build(ctx: Ctx, tab: gr.Tab) -> None:
    feeds = live.Feeds()  # every camera session of this page, by browser session
    model, labels, template, upload = (ctx.header.get(n) for n in ("model", "labels", "template", "upload"))
    g = ctx.wb.model(ctx.default_model).geometry
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            # type numpy: a streamed frame arrives as a data: URL and is decoded in memory (Gradio
            # writes a streamed frame to its cache only for type="filepath").
            cam = gr.Image(sources=["webcam"], streaming=True, type="numpy", label="Your camera",
                           elem_id="cam", height=260, webcam_options=gr.WebcamOptions(mirror=True, constraints=camera.CONSTRAINTS))
            freeze_btn = gr.Button("❄️ Freeze: use this frame as the photo of every tab", elem_id="cam-freeze",
                                   size="sm")
            layer = gr.Slider(1, g.num_layers, value=g.num_layers, step=1, label="layer", elem_id="cam-layer")
            heads = gr.Dropdown(camera.head_choices(g.num_heads), value=camera.HEAD_CHOICES[0], label="heads",
                                elem_id="cam-heads")
            mode = gr.Radio(list(MODES), value="rolled out", label="map", elem_id="cam-mode")
        with gr.Column(scale=3):
            # gr.HTML, not gr.Image: an Image output is saved as a file in Gradio's cache; this
            # picture travels inside the message (a data: URL) and is never written to disk.
            picture = gr.HTML(elem_id="cam-picture")
            note = gr.Markdown(camera.intro(), elem_id="cam-note")

    named = dict(layer=layer, heads=heads, mode=mode)
    shown = dict(picture=picture, note=note)
    read = kit.reader(named)

    def controls(model_id: str, v: tuple) -> dict:
        """The layer and head controls fitted to the model (its layers and heads)."""
        gm = ctx.wb.model(model_id).geometry
        p = camera.CameraParams.from_controls(read(v))
        choices = camera.head_choices(gm.num_heads)
        return {layer: gr.Slider(maximum=gm.num_layers, value=min(p.layer or gm.num_layers, gm.num_layers)),
                heads: gr.Dropdown(choices=choices, value=p.heads if p.heads in choices else choices[0])}

    @safe
    def show(key: PhotoKey | None, model_id: str, *v: Any) -> dict:
        ph = None if key is None else ctx.wb.handle(key)
        page = camera.show(ph, camera.CameraParams.from_controls(read(v)))
        return {**kit.values(page, shown), **controls(key.model_id if key else model_id, v)}

    @safe
    def frame(request: gr.Request, rgb: Any, k: PhotoKey | None, model_id: str, labels_text: str,
              template_text: str, *v: Any):
        if rgb is None:
            return kit.skip(list(shown.values()))
        if ctx.wb.catalog is not None:  # the page's list only, as every other event
            ctx.wb.catalog.check(model_id)
        # The session's heads switched off (Inside tab) hold for the live map too, under the same model.
        off = k.ablation if k is not None and k.model_id == model_id else PhotoKey(model_id, "").ablation
        key = header.labelled(ctx.wb, PhotoKey(model_id, "", off), labels_text, template_text)
        feed = feeds.feed(request.session_hash or "")
        step = camera.live_step(ctx.wb, feed, key, rgb, camera.CameraParams.from_controls(read(v)))
        if step is None:  # a newer frame took this one's place
            return kit.skip(list(shown.values()))
        return {picture: step.picture,
                note: gr.skip() if step.note is None else camera.intro() + "\n\n" + step.note}

    @safe
    def freeze(request: gr.Request, k: PhotoKey | None, model_id: str, labels_text: str, template_text: str):
        sha1 = camera.freeze(ctx.wb, feeds.get(request.session_hash or ""))
        if k is not None and k.model_id == model_id:  # the session's heads off and labels stay
            new = header.labelled(ctx.wb, dataclasses.replace(k, sha1=sha1), labels_text, template_text)
        else:
            new = header.labelled(ctx.wb, PhotoKey(model_id, sha1), labels_text, template_text)
        return {ctx.key: new, ctx.status: header.status_of(ctx.wb, new), upload: None}

    def forget(request: gr.Request) -> None:
        feeds.close(request.session_hash or "")

    ctx.unloads.append(forget)
    tab.select(None, None, None, js=web.asset("camera_open.js"), queue=False)
    ctx.on_show(tab, show, [ctx.key, model, *named.values()], [*shown.values(), layer, heads])
    cam.stream(frame, [cam, ctx.key, model, labels, template, *named.values()], list(shown.values()),
               stream_every=camera.STREAM_EVERY_S, time_limit=camera.TIME_LIMIT_S,
               concurrency_limit=camera.CONCURRENT_STREAMS, concurrency_id="camera", show_progress="hidden")
    freeze_btn.click(freeze, [ctx.key, model, labels, template], [ctx.key, ctx.status, upload])
