"""The Camera tab and the live camera page (/camera).

The webcam streams on a page of its own: a stream event costs the page's main thread Gradio's
handling of every component it has (issue 27), and on this ~300-component page that capped the
live pictures at ~6 a second with a 4 ms model; the camera page has a dozen components, and its
frames bypass Gradio's events altogether (live_page's frames' route). The tab shows
the session's photo drawn as a live picture would be, and opens the camera page with the tab's
model and heads switched off (a link: ?model=...&ablate=...). Freeze there keeps the frame shown
as a photo (the same store as an upload) and opens this page on it (?photo=<its key>), so every
tab reads it under the same key, cache and deep links as an upload."""

from __future__ import annotations

import logging
from typing import Any

import gradio as gr
from fastapi import Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from vizvit import deeplink
from vizvit.errors import UserError
from vizvit.model.ablation import format_heads
from vizvit.model.zeroshot import DEFAULT_LABELS, DEFAULT_TEMPLATE
from vizvit.service import camera as live
from vizvit.session import PhotoKey, Workbench
from vizvit.views import camera, header
from vizvit.vocab import MODES

from .. import kit, web
from ..kit import Ctx

PATH = "camera"  # the live page's URL path, beside the main page
log = logging.getLogger("vizvit.service.camera")
# The CameraParams fields the controls set, in the order the events list them (the tab's and the live page's).
CONTROLS = ["layer", "heads", "mode"]
SHOWN = ["picture", "note"]  # the tab's Page fields shown (the page names are the fields' names)
OPENED = [*SHOWN, "layer", "heads"]
LIVE_OPENED = ["sid", "side", "title", "layer", "heads", "mode", "projector"]  # what the live page's load sets
Ui = dict[str, gr.components.Component]


def params(v: tuple) -> camera.CameraParams:
    """The controls' values (in CONTROLS order) as CameraParams."""
    return camera.CameraParams.from_controls(dict(zip(CONTROLS, v)))


# -- the tab's handlers: explicit values in, {name: value} out (page names: OPENED, "picture", "target") --------
def show(wb: Workbench, key: PhotoKey | None, model_id: str, *v: Any) -> dict:
    """The tab opened (or a new photo or model while open): the photo as the live picture draws it, the
    controls' ranges for the model (the header's model where there is no photo yet)."""
    p = params(v)
    page = camera.show(None if key is None else wb.handle(key), p)
    gm = wb.model(key.model_id if key else model_id).geometry
    choices = camera.head_choices(gm.num_heads)
    return {**kit.values(page, {n: n for n in SHOWN}), **(kit.skip(["picture"]) if key is None else {}),  # see kit.skip
            "layer": gr.Slider(maximum=gm.num_layers, value=min(p.layer or gm.num_layers, gm.num_layers)),
            "heads": gr.Dropdown(choices=choices, value=p.heads if p.heads in choices else choices[0])}


def link(wb: Workbench, key: PhotoKey | None, model_id: str, *v: Any) -> dict:
    """The camera page's link: this tab's model, heads off and map controls."""
    if not isinstance(model_id, str):  # the model box's value is the caller's to send: None, a number
        raise UserError("Choose a model from the page's list.")
    q = {"model": wb.catalog.public(model_id) if wb.catalog else model_id, **dict(zip(CONTROLS, v))}
    if key is not None and key.model_id == model_id and key.ablation.heads:
        q |= {"ablate": format_heads(key.ablation.heads), "ablate_mode": key.ablation.mode}
    return {"target": camera.page_query(q)}


def redraw(wb: Workbench, key: PhotoKey | None, *v: Any) -> dict:
    """A control moved: the session's photo drawn with the new layer, heads or map."""
    if key is None:
        return kit.skip(["picture"])
    return {"picture": camera.show(wb.handle(key), params(v)).picture}


def _layout(ctx: Ctx) -> Ui:
    """The tab's components by page name: the note, the button, the controls, the picture."""
    g = ctx.wb.model(ctx.default_model).geometry
    note = gr.Markdown(camera.TAB_LEAD + camera.intro(), elem_id="cam-note")
    go = gr.Button("Open the live camera", variant="primary", elem_id="cam-open")
    with gr.Row():
        layer = gr.Slider(1, g.num_layers, value=g.num_layers, step=1, label="layer", elem_id="cam-layer")
        heads = gr.Dropdown(camera.head_choices(g.num_heads), value=camera.HEAD_CHOICES[0], label="heads",
                            elem_id="cam-heads")
        mode = gr.Radio(list(MODES), value="rolled out", label="map", elem_id="cam-mode")
    picture = gr.HTML(elem_id="cam-picture")
    target = gr.Textbox("", visible=False, elem_id="cam-target")
    return dict(note=note, go=go, layer=layer, heads=heads, mode=mode, picture=picture, target=target)


def build(ctx: Ctx, tab: gr.Tab) -> None:
    """The tab: the session's photo as the live picture shows one, and the button to the camera."""
    ui = _layout(ctx)
    model, controls = ctx.header["model"], [ui[n] for n in CONTROLS]
    ctx.on_show(tab, kit.answer(show, ui, ctx.wb), [ctx.key, model, *controls], [ui[n] for n in OPENED])
    redraw_ = kit.answer(redraw, ui, ctx.wb)  # one handler object: the controls share its concurrency group
    for c in controls:  # .input: the user's moves only (show sets the controls too)
        c.input(redraw_, [ctx.key, *controls], ui["picture"], trigger_mode="always_last", show_progress="hidden")
    ui["go"].click(kit.answer(link, ui, ctx.wb), [ctx.key, model, *controls], ui["target"], queue=False).then(
        None, ui["target"], None, js=web.asset("camera_go.js"))


# -- the live page's handlers (its components by page name: LIVE_OPENED, "note", "frozen") -----------------
def opened(wb: Workbench, feeds: live.Feeds, default_model: str, request: gr.Request) -> dict:
    """The link's model (the page's list only, else the default), heads off and controls."""
    query = dict(request.query_params)
    catalog = wb.catalog
    p = deeplink.plan({k: v for k, v in query.items() if k in ("model", "ablate", "ablate_mode", "projector")},
                      [], catalog.ids if catalog else [default_model], [], default_model,
                      lambda m: wb.model(m).geometry)
    k = header.photo_key(wb, p.model, "", format_heads(p.link.ablate), p.link.ablate_mode or "zero",
                         ", ".join(DEFAULT_LABELS), DEFAULT_TEMPLATE)
    g = wb.model(p.model).geometry
    c = camera.CameraParams.from_link(query, g)
    choices = camera.head_choices(g.num_heads)
    notes = "\n".join(f"- {n}" for n in p.notices)
    vm = wb.model(p.model)
    # A lecturer's projector mode comes along (camera_go.js adds it to the link) and goes back with Freeze
    # (camera_go.js again): without it the live page was in desk type on the projector, and the frozen frame's too.
    return {"sid": feeds.open(request.session_hash or "", k), "side": camera.frame_side(vm),
            "title": camera.title(vm, k, notes), "layer": gr.Slider(maximum=g.num_layers, value=c.layer),
            "heads": gr.Dropdown(choices=choices, value=c.heads), "mode": c.mode, "projector": p.link.projector}


def speed(feeds: live.Feeds, token: str) -> dict:
    """The speed note, once the loop says it changed."""
    feed = feeds.get(token)
    return {"note": camera.intro() + ("\n\n" + feed.note if feed is not None and feed.note else "")}


def freeze(wb: Workbench, feeds: live.Feeds, token: str, picture: str, *v: Any) -> dict:
    """The frame shown kept as a photo: the main page's link to it, with the live map's controls."""
    feed = feeds.get(token)
    n = str(picture)
    sha1 = camera.freeze(wb, feed, int(n) if n.isascii() and n.isdigit() and len(n) < 10 else None)
    key = feed.key if feed is not None else None
    return {"frozen": camera.frozen_query(wb, key, sha1, params(v))}  # type: ignore[arg-type]  # the live map's kept


def forget(feeds: live.Feeds, request: gr.Request) -> None:
    """The live page closed: its camera sessions end."""
    feeds.close_owner(request.session_hash or "")


def _live_layout() -> Ui:
    """The live page's components by page name (the controls share the tab's elem ids)."""
    gr.Markdown("## vizvit · live camera")
    title = gr.Markdown(elem_id="cam-model")
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            # The camera and its loop are the page's own (web/camera_live.js): frames go to the
            # frames' route and come back as pictures' books, one at a time, drawn in the page.
            gr.HTML(camera.live_markup(), elem_id="cam", js_on_load=web.on_load(web.MAP_DRAW, web.CAMERA_DRAW))
            freeze_btn = gr.Button("❄️ Freeze: open this frame in every tab", elem_id="cam-freeze", size="sm")
            layer = kit.ClampedSlider(1, 12, value=12, step=1, label="layer", elem_id="cam-layer")
            heads = gr.Dropdown(camera.head_choices(12), value=camera.HEAD_CHOICES[0], label="heads",
                                elem_id="cam-heads")
            mode = gr.Radio(list(MODES), value="rolled out", label="map", elem_id="cam-mode")
        with gr.Column(scale=3):
            # The picture is drawn from the route's answer (a canvas), never a file.
            gr.HTML(elem_id="cam-picture")
            note = gr.Markdown(camera.intro(), elem_id="cam-note")
    sid = gr.Textbox("", visible=False, elem_id="cam-sid")  # this page's camera token (Feeds.open)
    side = gr.Number(0, visible=False, precision=0, elem_id="cam-side")  # a frame's short side (frame_side)
    frozen = gr.Textbox("", visible=False, elem_id="cam-frozen")
    projector = gr.Checkbox(False, visible=False, elem_id="cam-projector")  # the link's ?projector=1
    # Clicked by the loop when the speed note changed (rarely: the first pictures, a slow model).
    note_refresh = gr.Button("note", elem_id="cam-note-refresh", elem_classes=["vv-offstage"])
    shown_no = gr.Textbox("", visible=False)  # the number of the picture the page shows, read by camera_shown.js
    return dict(title=title, freeze_btn=freeze_btn, layer=layer, heads=heads, mode=mode, note=note, sid=sid,
                side=side, frozen=frozen, note_refresh=note_refresh, shown_no=shown_no, projector=projector)


def live_page(demo: gr.Blocks, wb: Workbench, default_model: str) -> list[APIRoute]:
    """The camera page's components and events: call it under `with demo.route(..., PATH)`.
    Returns the frames' route (POST FRAME_PATH), for the app's launch (app.launch_kwargs)."""
    feeds = live.Feeds()  # every camera session, by its token
    ui = _live_layout()
    demo.load(kit.answer(opened, ui, wb, feeds, default_model), None, [ui[n] for n in LIVE_OPENED],
              show_progress="hidden").then(None, [ui["sid"], ui["side"]], None, js=web.asset("camera_live.js")).then(
        None, ui["projector"], None, js=web.projector_js())
    ui["note_refresh"].click(kit.answer(speed, ui, feeds), ui["sid"], ui["note"], queue=False, show_progress="hidden")
    ui["freeze_btn"].click(kit.answer(freeze, ui, wb, feeds), [ui["sid"], ui["shown_no"], *(ui[n] for n in CONTROLS)],
                           ui["frozen"], js=web.asset("camera_shown.js")).then(
        None, ui["frozen"], None, js=web.asset("camera_go.js"))
    demo.unload(kit.answer(forget, ui, feeds))
    return [frame_route(wb, feeds)]


def frame_route(wb: Workbench, feeds: live.Feeds) -> APIRoute:
    """POST FRAME_PATH?sid=...&layer=...&heads=...&mode=...&restart=0|1&run=R&n=N (the page's run and
    frame number: views/camera.frame_order), a frame's JPEG in the body
    -> the live picture as the page draws it (views/camera.py: live_book's JSON; X-Frame: its number,
    X-Side: the model-input view's side, X-Note: 1 when the speed note changed, Server-Timing: where
    the server's time went, LiveStep.timing), 204 when a newer frame took its place, or a JSON
    {"error": ...} the page shows (409: refused, with what to do; 413: too big; 500)."""

    async def frame(request: Request) -> Response:
        if feeds.get(request.query_params.get("sid", "")) is None:  # before reading a body
            return JSONResponse({"error": live.EXPIRED}, status_code=409)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > camera.MAX_FRAME_BYTES:
                return JSONResponse({"error": f"A camera frame must be under {camera.MAX_FRAME_BYTES >> 20} MB."},
                                    status_code=413)
        q = dict(request.query_params)
        try:
            step = await run_in_threadpool(camera.live_frame, wb, feeds, q.get("sid", ""), bytes(body), q,
                                           q.get("restart") == "1")
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=409)
        except Exception:
            log.exception("camera frame failed")
            return JSONResponse({"error": "Something went wrong with this frame: press Start again."}, status_code=500)
        if step is None:
            return Response(status_code=204)
        return Response(step.book, media_type="application/json",
                        headers={"X-Frame": str(step.frame), "X-Side": str(step.side),
                                 "X-Note": "1" if step.note is not None else "0", "Cache-Control": "no-store",
                                 "Server-Timing": step.server_timing()})

    return APIRoute("/" + camera.FRAME_PATH, frame, methods=["POST"])
