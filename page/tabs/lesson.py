"""The Lesson tab: one step at a time (vizvit/lesson.toml), its question before its reveal, the step's
link and, in projector mode, its QR code (the presenter view)."""

from __future__ import annotations

import functools
import os
from typing import Any

import gradio as gr
from gradio.context import Context

from vizvit import deeplink, launch
from vizvit.api import PublicApi

from .. import web
from vizvit.vocab import TABS
from vizvit.session import PhotoKey
from vizvit.views import lesson

from .. import kit
from ..kit import Ctx, safe

PRESENTER_CSS_ID = "lesson-presenter"  # shown in projector mode only (style.css)


@functools.cache
def _lan() -> str | None:
    """This machine's LAN address, looked up once (it does not change during a lecture)."""
    return launch.lan_address()


def build(ctx: Ctx, tab: gr.Tab) -> None:
    wb = ctx.wb
    gr.Markdown(lesson.LESSON_TEXT)
    # The live room (issue 45) is a page of its own: light enough for 100 phones (page/room.py).
    gr.Markdown("**Teaching a hall?** [Open a live room](room?host=1): students follow your steps on their "
                "phones and answer each question; you see the room's answers.", elem_id="lesson-room")
    room_btn = gr.Button("Open a room for this class", size="sm", elem_id="lesson-room-open")
    with gr.Row(elem_id="lesson-room-box"):
        room_md = gr.Markdown(visible=False, elem_id="lesson-room-info")
        room_qr = gr.Image(label="Scan: join the room", interactive=False, format="png", visible=False, buttons=[],
                           height=260, elem_id="lesson-room-qr")
    with gr.Row(elem_id="lesson-main"):
        with gr.Column(scale=3):
            header = gr.Markdown(elem_id="lesson-step")
            choice = gr.Radio([], label="Your answer", elem_id="lesson-choice")
            number = gr.Number(None, label="Your answer (a number)", visible=False, elem_id="lesson-number")
            with gr.Row(elem_id="lesson-buttons"):
                prev = gr.Button("← previous", size="sm", elem_id="lesson-prev")
                reveal = gr.Button("Reveal", variant="primary", elem_id="lesson-reveal")
                unknown = gr.Button("I don't know", size="sm", elem_id="lesson-dont-know")
                nxt = gr.Button("next →", size="sm", elem_id="lesson-next")
        with gr.Column(scale=1, min_width=200, elem_id=PRESENTER_CSS_ID):  # the presenter view's QR code
            qr = gr.Image(label="Scan: this step", interactive=False, format="png", elem_id="lesson-qr",
                          buttons=[], height=260)
            link = gr.Markdown(elem_id="lesson-link")
            qr_note = gr.Markdown(elem_id="lesson-qr-note")  # a loopback address: which one phones get, or none
    answer = gr.Markdown(elem_id="lesson-answer")
    picture = gr.Image(label="The view this number comes from", interactive=False, format="jpeg", visible=False,
                       elem_id="lesson-picture")
    open_btn = gr.Button("Open that tab with these settings", visible=False, elem_id="lesson-open")
    step = gr.State(None)  # the step shown (from 1); None until the tab first opens (then the link's)
    base = gr.State("")  # the page's address, for the step's link (known from the first event's request)
    goto = gr.Textbox("", visible=False, elem_id="lesson-goto")  # "tab#n": page JS clicks that tab's button

    named = dict(step=step, choice=choice, number=number)
    read = kit.reader(named)
    shown = dict(header=header)  # LessonPage fields shown as they are
    outs = [header, choice, number, answer, picture, open_btn, qr, link, qr_note, step, base]
    demo = Context.root_block  # the page being built: where it listens and its --share link, once launched

    def address(request: gr.Request | None, known: str) -> str:
        if request is None:
            return known
        return (request.headers.get("referer") or str(request.url)).split("?")[0]

    def step_link(key: PhotoKey | None, n: int, page_url: str) -> str:
        example = ctx.example_of(key.sha1) if key is not None else None
        model = key.model_id if key is not None and key.model_id != ctx.default_model else None
        q = deeplink.to_query(deeplink.lesson_link(n, example, key.sha1 if key is not None else None, model))
        return page_url + q

    def phone(page_url: str) -> launch.PhoneAddress:
        """The page's address as a phone in the room can open it (launch.phone_address)."""
        return launch.phone_address(page_url, getattr(demo, "server_name", None), getattr(demo, "share_url", None),
                                    os.environ.get("SPACE_HOST"), _lan())

    def at_step(key: PhotoKey | None, n: int | None, page_url: str) -> dict:
        ph = wb.handle(key) if key is not None else None
        page = lesson.show(ph, lesson.LessonParams(step=n or 1))
        where = phone(page_url) if page_url else None
        url = step_link(key, page.step, where.base if where else page_url)
        return {**kit.values(page, shown),
                choice: gr.Radio(choices=page.options, value=None, visible=not page.is_number),
                number: gr.Number(value=None, visible=page.is_number),
                answer: "", picture: gr.Image(value=None, visible=False), open_btn: gr.Button(visible=False),
                qr: lesson.qr_picture(url) if page_url else None,
                link: f"[{url}]({url})" if page_url else "", qr_note: where.note if where else "",
                step: page.step, base: page_url}

    @safe
    def show(key: PhotoKey | None, n: int | None, page_url: str, request: gr.Request = None) -> dict:
        """On open (request: the page's, when the tab is clicked) and on a new photo (no request)."""
        if n is None and request is not None:  # first open: the link's step (?lesson=1&step=N)
            n = deeplink.parse(dict(request.query_params), (), (), ())[0].step
        return at_step(key, n, address(request, page_url))

    def move(delta: int):
        @safe
        def go(key: PhotoKey | None, n: int | None, page_url: str) -> dict:
            return at_step(key, (n or 1) + delta, page_url)

        return go

    def revealing(dont_know: bool):
        @safe
        def do_reveal(key: PhotoKey | None, *v: Any) -> dict:
            if key is None:
                return {answer: "**Pick an example or upload a photo first**: the reveal measures it."}
            r = lesson.reveal(wb.handle(key), lesson.LessonParams.from_controls({**read(v), "dont_know": dont_know}))
            return {answer: r.answer, picture: gr.Image(value=r.picture, visible=r.picture is not None),
                    open_btn: gr.Button(f"Open the {TABS.get(r.view, r.view)} tab with these settings",
                                        visible=r.revealed)}

        return do_reveal

    @safe
    def do_open(key: PhotoKey | None, n: int | None, opened: str) -> dict:
        """The step's tab, its controls set first (the tab's own on_show then reads them)."""
        if key is None:
            return kit.skip([goto])
        view, controls = lesson.opens(wb.handle(key), lesson.LessonParams(step=n or 1))
        comps = ctx.controls.get(view, {})
        # A new value each time, so opening the same tab twice still changes goto (and runs its JS).
        count = int(opened.split("#")[1]) + 1 if "#" in (opened or "") else 1
        # Its first picture, drawn ahead for the controls as they were, is cleared: the tab opens
        # empty until its own answer for the step's controls, never with the picture of others.
        first = {ctx.firsts[view][0]: None} if view in ctx.firsts else {}
        return {goto: f"{view}#{count}", **first, **{comps[k]: v for k, v in controls.items() if k in comps}}

    @safe
    def open_room(key: PhotoKey | None, page_url: str, request: gr.Request = None) -> dict:
        """A live room on this tab's photo and model: its code, the students' link and QR code, the host view."""
        if key is None:
            return {room_md: gr.Markdown(lesson.ROOM_NO_PHOTO, visible=True), room_qr: gr.Image(visible=False)}
        opened = PublicApi(wb, None, ctx.rooms).room_open_photo(wb.handle(key))
        page_url = address(request, page_url)
        invite = lesson.room_invite(opened["code"], opened["host_key"], page_url, phone(page_url))
        return {room_md: gr.Markdown(invite.text, visible=True), room_qr: gr.Image(invite.qr, visible=True)}

    room_btn.click(open_room, [ctx.key, base], [room_md, room_qr], show_progress="minimal")
    ctx.on_show(tab, show, [ctx.key, step, base], outs)
    prev.click(move(-1), [ctx.key, step, base], outs, show_progress="hidden")
    nxt.click(move(+1), [ctx.key, step, base], outs, show_progress="hidden")
    reveal.click(revealing(False), [ctx.key, *named.values()], [answer, picture, open_btn], show_progress="minimal")
    unknown.click(revealing(True), [ctx.key, *named.values()], [answer, picture, open_btn], show_progress="minimal")
    open_outs = [goto, *{id(c): c for d in ctx.controls.values() for c in d.values()}.values(), *(f for f, _ in ctx.firsts.values())]
    open_btn.click(do_open, [ctx.key, step, goto], open_outs, show_progress="hidden")
    goto.change(None, goto, None, js=web.asset("select_tab.js"))
    header.change(None, None, None, js=web.asset("lesson_land.js"))  # a step's link lands on the step

