"""The Camera tab and the live camera page (/camera).

The webcam streams on a page of its own: a stream event costs the page's main thread Gradio's
handling of every component it has (issue 27), and on this ~300-component page that capped the
live pictures at ~6 a second with a 4 ms model; the camera page has 9 components. The tab shows
the session's photo drawn as a live picture would be, and opens the camera page with the tab's
model and heads switched off (a link: ?model=...&ablate=...). Freeze there keeps the frame shown
as a photo (the same store as an upload) and opens this page on it (?photo=<its key>), so every
tab reads it under the same key, cache and deep links as an upload."""

from __future__ import annotations

from typing import Any

import gradio as gr

from vizvit import camera as live
from vizvit import deeplink, web
from vizvit.ablation import format_heads
from vizvit.session import PhotoKey, Workbench
from vizvit.views import camera, header
from vizvit.vocab import MODES
from vizvit.zeroshot import DEFAULT_LABELS, DEFAULT_TEMPLATE

from .. import kit
from ..kit import Ctx, safe

PATH = "camera"  # the live page's URL path, beside the main page


def build(ctx: Ctx, tab: gr.Tab) -> None:
    """The tab: the session's photo as the live picture shows one, and the button to the camera."""
    model = ctx.header["model"]
    g = ctx.wb.model(ctx.default_model).geometry
    note = gr.Markdown(camera.TAB_LEAD + camera.intro(), elem_id="cam-note")
    go = gr.Button("Open the live camera", variant="primary", elem_id="cam-open")
    with gr.Row():
        layer = gr.Slider(1, g.num_layers, value=g.num_layers, step=1, label="layer", elem_id="cam-layer")
        heads = gr.Dropdown(camera.head_choices(g.num_heads), value=camera.HEAD_CHOICES[0], label="heads",
                            elem_id="cam-heads")
        mode = gr.Radio(list(MODES), value="rolled out", label="map", elem_id="cam-mode")
    picture = gr.HTML(elem_id="cam-picture")
    named = dict(layer=layer, heads=heads, mode=mode)
    shown = dict(picture=picture, note=note)
    read = kit.reader(named)

    @safe
    def show(key: PhotoKey | None, model_id: str, *v: Any) -> dict:
        ph = None if key is None else ctx.wb.handle(key)
        page = camera.show(ph, camera.CameraParams.from_controls(read(v)))
        gm = ctx.wb.model(key.model_id if key else model_id).geometry
        p = camera.CameraParams.from_controls(read(v))
        choices = camera.head_choices(gm.num_heads)
        return {**kit.values(page, shown),
                layer: gr.Slider(maximum=gm.num_layers, value=min(p.layer or gm.num_layers, gm.num_layers)),
                heads: gr.Dropdown(choices=choices, value=p.heads if p.heads in choices else choices[0])}

    def link(key: PhotoKey | None, model_id: str, *v: Any) -> str:
        """The camera page's link: this tab's model, heads off and map controls."""
        q = {"model": ctx.wb.catalog.public(model_id) if ctx.wb.catalog else model_id, **read(v)}
        if key is not None and key.model_id == model_id and key.ablation.heads:
            q |= {"ablate": format_heads(key.ablation.heads), "ablate_mode": key.ablation.mode}
        return camera.page_query(q)

    @safe
    def redraw(key: PhotoKey | None, *v: Any) -> dict:
        """A control moved: the session's photo drawn with the new layer, heads or map."""
        if key is None:
            return kit.skip([picture])
        return {picture: camera.show(ctx.wb.handle(key), camera.CameraParams.from_controls(read(v))).picture}

    target = gr.Textbox("", visible=False, elem_id="cam-target")
    ctx.on_show(tab, show, [ctx.key, model, *named.values()], [*shown.values(), layer, heads])
    for c in named.values():  # .input: the user's moves only (show sets the controls too)
        c.input(redraw, [ctx.key, *named.values()], picture, trigger_mode="always_last", show_progress="hidden")
    go.click(link, [ctx.key, model, *named.values()], target, queue=False).then(
        None, target, None, js=web.asset("camera_go.js"))


def live_page(demo: gr.Blocks, wb: Workbench, default_model: str) -> None:
    """The camera page's components and events: call it under `with demo.route(..., PATH)`."""
    feeds = live.Feeds()  # every camera session, by browser session
    key = gr.State(None)  # the model, heads off and labels of the live map (set from the link)
    gr.Markdown("## vizvit · live camera")
    title = gr.Markdown(elem_id="cam-model")
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            # type numpy: a streamed frame arrives as a data: URL and is decoded in memory (Gradio
            # writes a streamed frame to its cache only for type="filepath").
            cam = gr.Image(sources=["webcam"], streaming=True, type="numpy", label="Your camera",
                           elem_id="cam", height=260,
                           webcam_options=gr.WebcamOptions(mirror=True, constraints=camera.CONSTRAINTS))
            freeze_btn = gr.Button("❄️ Freeze: open this frame in every tab", elem_id="cam-freeze", size="sm")
            layer = gr.Slider(1, 12, value=12, step=1, label="layer", elem_id="cam-layer")
            heads = gr.Dropdown(camera.head_choices(12), value=camera.HEAD_CHOICES[0], label="heads",
                                elem_id="cam-heads")
            mode = gr.Radio(list(MODES), value="rolled out", label="map", elem_id="cam-mode")
        with gr.Column(scale=3):
            # gr.HTML, not gr.Image: an Image output is saved as a file in Gradio's cache; this
            # picture travels inside the message (a data: URL) and is never written to disk.
            picture = gr.HTML(elem_id="cam-picture")
            note = gr.Markdown(camera.intro(), elem_id="cam-note")
    frozen = gr.Textbox("", visible=False, elem_id="cam-frozen")
    named = dict(layer=layer, heads=heads, mode=mode)
    read = kit.reader(named)

    @safe
    def opened(request: gr.Request) -> dict:
        """The link's model (the page's list only, else the default), heads off and controls."""
        params = dict(request.query_params)
        catalog = wb.catalog
        p = deeplink.plan({k: v for k, v in params.items() if k in ("model", "ablate", "ablate_mode")},
                          [], catalog.ids if catalog else [default_model], [], default_model,
                          lambda m: wb.model(m).geometry)
        k = header.photo_key(wb, p.model, "", format_heads(p.link.ablate), p.link.ablate_mode or "zero",
                             ", ".join(DEFAULT_LABELS), DEFAULT_TEMPLATE)
        g = wb.model(p.model).geometry
        c = camera.CameraParams.from_link(params, g)
        choices = camera.head_choices(g.num_heads)
        notes = "\n".join(f"- {n}" for n in p.notices)
        return {key: k, title: camera.title(wb.model(p.model), k, notes),
                layer: gr.Slider(maximum=g.num_layers, value=c.layer), heads: gr.Dropdown(choices=choices, value=c.heads),
                mode: c.mode}

    @safe
    def frame(request: gr.Request, rgb: Any, k: PhotoKey | None, *v: Any):
        if rgb is None or k is None:
            return kit.skip([picture, note])
        feed = feeds.feed(request.session_hash or "")
        step = camera.live_step(wb, feed, k, rgb, camera.CameraParams.from_controls(read(v)))
        if step is None:  # a newer frame took this one's place
            return kit.skip([picture, note])
        return {picture: step.picture, note: gr.skip() if step.note is None else camera.intro() + "\n\n" + step.note}

    @safe
    def freeze(request: gr.Request, k: PhotoKey | None) -> str:
        sha1 = camera.freeze(wb, feeds.get(request.session_hash or ""))
        return camera.frozen_query(wb, k, sha1)

    def forget(request: gr.Request) -> None:
        feeds.close(request.session_hash or "")

    demo.load(opened, None, [key, title, layer, heads, mode], show_progress="hidden")
    cam.stream(frame, [cam, key, *named.values()], [picture, note],
               stream_every=camera.STREAM_EVERY_S, time_limit=camera.TIME_LIMIT_S,
               concurrency_limit=camera.CONCURRENT_STREAMS, concurrency_id="camera", show_progress="hidden")
    freeze_btn.click(freeze, key, frozen).then(None, frozen, None, js=web.asset("camera_go.js"))
    demo.unload(forget)
