"""The Lesson tab: one step at a time (vizvit/classroom/lesson.toml), its question before its reveal, the step's
link and, in projector mode, its QR code (the presenter view)."""

from __future__ import annotations

import functools
import os
from typing import Any

import gradio as gr
from gradio.context import Context

from vizvit import deeplink, launch
from vizvit.api import PublicApi
from vizvit.classroom.room import LECTURER_KEY_MAX, ROOMY_PER_OWNER, Rooms
from vizvit.classroom.roomstore import StoreDown
from vizvit.errors import UserError
from vizvit.session import PhotoKey
from vizvit.views import lesson
from vizvit.vocab import TABS

from .. import ids, jobs, kit, web
from ..kit import Ctx

PRESENTER_CSS_ID = "lesson-presenter"  # shown in projector mode only (style.css)


@functools.cache
def _lan() -> str | None:
    """This machine's LAN address, looked up once (it does not change during a lecture)."""
    return launch.lan_address()


CONTROLS = ["step", "choice", "number"]  # the LessonParams fields the reveal reads, in the order its events list them
# What a step's page sets: its text, the answer boxes cleared, its link and QR code, the step, the page's address,
# which step on which photo it drew (drawn), and whether previous and next lead anywhere (prev, nxt).
OUTS = ["header", "choice", "number", "answer", "picture", "open_btn", "qr", "link", "qr_note", "step", "base", "drawn",
        "address", "prev", "nxt"]
REVEALED = ["answer", "picture", "open_btn"]
ROOM = ["room_md", "room_qr", "room_kept", "room_saved"]
Ui = dict[str, gr.components.Component]


def address(request: gr.Request | None, known: str) -> str:
    """The page's address without its query: the request's (its referer, else its URL), else `known`."""
    if request is None:
        return known
    return (request.headers.get("referer") or str(request.url)).split("?")[0]


def step_query(ctx: Ctx, key: PhotoKey | None, n: int) -> str:
    """The query of step n's link on this photo (an example by name) and model (unless the default)."""
    example = ctx.example_of(key.sha1) if key is not None else None
    model = key.model_id if key is not None and key.model_id != ctx.default_model else None
    return deeplink.to_query(deeplink.lesson_link(n, example, key.sha1 if key is not None else None, model))


def phone(demo: Any, page_url: str) -> launch.PhoneAddress:
    """The page's address as a phone in the room can open it (launch.phone_address); demo: the
    launched page (its server name and --share link), or None."""
    return launch.phone_address(page_url, getattr(demo, "server_name", None), getattr(demo, "share_url", None),
                                os.environ.get("SPACE_HOST"), _lan())


def at_step(ctx: Ctx, demo: Any, key: PhotoKey | None, n: int | None, page_url: str,
            drawn: tuple | None = None) -> dict[str, Any]:
    """Step n (from 1; clipped to the lesson) on this photo: its question, answers cleared, its link and QR code.
    drawn: (key, step) the page shows; that same step again changes nothing (the student's answer and reveal stay)."""
    ph = ctx.wb.handle(key) if key is not None else None
    page = lesson.show(ph, lesson.LessonParams(step=n or 1))
    if drawn == (key, page.step):
        # The step shown, drawn again (the tab opened again, Back at step 1): nothing moves. Sent as
        # the tab opened again, this answer may land after a Next the student pressed meanwhile: its
        # step, link and QR code would have put the page's step back under the newer step's header,
        # and the next reveal answered the old step (a README run: step 8's answer, no picture, under
        # step 9's question).
        return kit.skip(OUTS)
    where = phone(demo, page_url) if page_url else None
    query = step_query(ctx, key, page.step)
    url = (where.base if where else page_url) + query
    return {"header": page.header,
            "choice": gr.Radio(choices=page.options, value=None, visible=not page.is_number),
            "number": gr.Number(value=None, visible=page.is_number),
            "answer": "", "picture": gr.Image(value=None, visible=False), "open_btn": gr.Button(visible=False),
            "qr": lesson.qr_picture(url) if page_url else None,
            "link": f"[{url}]({url})" if page_url else "", "qr_note": where.note if where else "",
            "step": page.step, "base": page_url, "drawn": (key, page.step), "address": query,
            "prev": gr.Button(interactive=page.has_previous), "nxt": gr.Button(interactive=page.has_next)}


# -- handlers: explicit values in, {name: value} out (page names: OUTS, REVEALED, ROOM) -----------------
def show(ctx: Ctx, demo: Any, key: PhotoKey | None, n: int | None, page_url: str, drawn: tuple | None = None,
         request: gr.Request = None) -> dict:
    """On open (request: the page's, when the tab is clicked) and on a new photo (no request)."""
    query = dict(request.query_params) if request is not None else {}
    if n is None and request is not None:  # first open: the link's step (?lesson=1&step=N)
        n = deeplink.parse(query, (), (), ())[0].step
    if n is None and request is None:
        # A new photo's answer before the tab's own first open has answered (that open reads the link's
        # step, and a photo's answer now draws the tab open in the page, kit's open_tab.js): drawn here,
        # step 1 could land over the link's step 13. The open draws it, with the photo it then holds.
        return kit.skip(OUTS)
    if key is None and ("example" in query or "photo" in query):
        # The link's tab opened while its photo loads: the photo's answer draws the step, with the
        # photo in its link and QR code, and this one, landing after it, would drop them (kit.skip).
        # Only the step and the page's address are kept: that answer reads them.
        return {**kit.skip(OUTS), "step": lesson.show(None, lesson.LessonParams(step=n or 1)).step,
                "base": address(request, page_url)}
    return at_step(ctx, demo, key, n, address(request, page_url), drawn)


def drawn_late(ctx: Ctx, demo: Any, key: PhotoKey | None, n: int | None, page_url: str,
               drawn: tuple | None = None) -> dict:
    """The step changed (the tab's first open set the link's step): drawn, unless it is drawn already. The
    open that found the link's photo still loading sets only the step, for the photo's answer to draw; but
    where that answer landed first (a busy server), it found no step yet and drew nothing, and neither
    would have drawn the step."""
    if key is None or n is None:
        return kit.skip(OUTS)
    return at_step(ctx, demo, key, n, page_url, drawn)


def go(ctx: Ctx, demo: Any, delta: int, key: PhotoKey | None, n: int | None, page_url: str,
       drawn: tuple | None = None) -> dict:
    """The step `delta` away (previous: -1, next: +1). Its name is the events' api_name (go, go_1)."""
    return at_step(ctx, demo, key, (n or 1) + delta, page_url, drawn)


def do_reveal(ctx: Ctx, dont_know: bool, key: PhotoKey | None, *v: Any) -> dict:
    """The step's answer, measured on this photo (dont_know: "I don't know", no answer given).
    Its name is the events' api_name (do_reveal, do_reveal_1)."""
    if key is None:
        return {"answer": "**Pick an example or upload a photo first**: the reveal measures it."}
    r = lesson.reveal(ctx.wb.handle(key), lesson.LessonParams.from_controls({**dict(zip(CONTROLS, v)),
                                                                             "dont_know": dont_know}))
    return {"answer": r.answer, "picture": gr.Image(value=r.picture, visible=r.picture is not None),
            "open_btn": gr.Button(f"Open the {TABS.get(r.view, r.view)} tab with these settings", visible=r.revealed)}


def do_open(ctx: Ctx, key: PhotoKey | None, n: int | None, opened: str) -> dict:
    """The step's tab, its controls set first (the tab's own on_show then reads them)."""
    if key is None:
        return kit.skip(["goto"])
    view, controls = lesson.opens(ctx.wb.handle(key), lesson.LessonParams(step=n or 1))
    comps = ctx.controls.get(view, {})
    # A new value each time, so opening the same tab twice still changes goto (and runs its JS).
    count = int(opened.split("#")[1]) + 1 if "#" in (opened or "") else 1
    # Its first picture, drawn ahead for the controls as they were, is cleared: the tab opens
    # empty until its own answer for the step's controls, never with the picture of others.
    first = {ctx.firsts[view][0]: None} if view in ctx.firsts else {}
    return {"goto": f"{view}#{count}", **first, **{comps[k]: v for k, v in controls.items() if k in comps}}


def _open(ctx: Ctx, code: str) -> bool:
    """Whether a room is open: read as a student's page reads it (a room whose lecturer has been away
    30 minutes is closed by that read; its version alone still said open)."""
    try:
        return ctx.rooms is not None and not ctx.rooms.state(code).closed
    except StoreDown:
        raise  # not a closed room: a blink of the store opened a second room beside the kept one
    except UserError:
        return False


def open_room(ctx: Ctx, demo: Any, key: PhotoKey | None, page_url: str, kept: tuple | None,
              lecturer_key: str | None = None, request: gr.Request = None) -> dict:
    """A live room on this tab's photo and model: its code, the students' link and QR code, the host view.
    kept: (photo key, code, host key) of the room this page opened last: while it is open on the same
    photo, the button shows it again instead of opening another (each click opened one, the earlier ones
    stayed open, and the fourth was refused: 3 open rooms per address, the earlier host links gone).
    lecturer_key: the server's, where it has one (the box shown then), else None."""
    if key is None:
        return {"room_md": gr.Markdown(lesson.ROOM_NO_PHOTO, visible=True), "room_qr": gr.Image(visible=False)}
    page_url = address(request, page_url)
    if kept is not None and kept[0] == key and _open(ctx, kept[1]):
        code, host_key = kept[1], kept[2]
    else:
        if ctx.room_opening is not None:
            ctx.room_opening(request)  # rooms opened per address (issue 50): the API's limit, here too
        # owner: the lecturer's address, so one stranger cannot hold every room (room.MAX_ROOMS_PER_OWNER)
        opened = PublicApi(ctx.wb, None, ctx.rooms).room_open_photo(ctx.wb.handle(key), jobs.caller_of(request) or "",
                                                                    lecturer_key)
        code, host_key = opened["code"], opened["host_key"]
    invite = lesson.room_invite(code, host_key, page_url, phone(demo, page_url))
    # The key's box emptied once it has opened a room: on a lecture hall's shared computer the next person at
    # the page would open rooms with the department's key (a review).
    return {"room_md": gr.Markdown(invite.text, visible=True), "room_qr": gr.Image(invite.qr, visible=True),
            "room_kept": (key, code, host_key), "room_saved": lesson.saved_room(code, host_key), "lecturer_key": ""}


def restore_room(ctx: Ctx, demo: Any, saved: str, page_url: str, shown: tuple | None = None,
                 request: gr.Request = None) -> dict:
    """The page reloaded: the room it had opened (its code and host key, kept by the browser: web/lesson_room_load.js)
    shown again while it is open, its key the room's. Anything else (not a code and a key, a wrong key, a closed
    room) shows nothing and is forgotten (room_saved: ""): the browser's copy is anyone's to write.
    shown: room_kept, the room this page shows (the box's change after open_room wrote it: nothing to do)."""
    if not saved:  # the box emptied by a refusal below: nothing kept
        return kit.skip(ROOM)
    kept = lesson.kept_room(saved)
    if kept is not None and shown is not None and tuple(shown[1:]) == kept:
        return kit.skip(ROOM)
    if kept is not None and ctx.rooms is not None:
        try:
            ctx.rooms.check_host(*kept)
        except StoreDown:
            raise  # not a wrong key: the browser keeps the room, a reload or the button asks again
        except UserError:
            kept = None
    if kept is None or not _open(ctx, kept[0]):
        return {**kit.skip(["room_md", "room_qr", "room_kept"]), "room_saved": ""}
    code, host_key = kept
    page_url = address(request, page_url)
    invite = lesson.room_invite(code, host_key, page_url, phone(demo, page_url), kept=True)
    # No photo: the room's is its own (and after a reload the page may show another); a click opens one on the shown
    return {"room_md": gr.Markdown(invite.text, visible=True), "room_qr": gr.Image(invite.qr, visible=True),
            "room_kept": (None, code, host_key), "room_saved": lesson.saved_room(code, host_key)}


# -- the page: components, then wiring ---------------------------------------------------------------
def _room(needs_key: bool) -> Ui:
    """The live room's invitation (issue 45); needs_key: the server opens rooms for its lecturers only (a
    box for the key, before the button)."""
    gr.Markdown(lesson.LESSON_TEXT)
    # The live room (issue 45) is a page of its own: light enough for 100 phones (page/room.py).
    gr.Markdown("**Teaching a hall?** [Open a live room](room?host=1): students follow your steps on their "
                "phones and answer each question; you see the room's answers.", elem_id="lesson-room")
    lecturer_key = gr.Textbox(label="Lecturer key (this server opens rooms for its lecturers only)", type="password",
                              max_length=LECTURER_KEY_MAX, visible=needs_key, elem_id="lesson-lecturer-key")
    room_btn = gr.Button("Open a room for this class", size="sm", elem_id="lesson-room-open")
    with gr.Row(elem_id=ids.LESSON_ROOM_BOX):
        room_md = gr.Markdown(visible=False, elem_id="lesson-room-info")
        room_qr = gr.Image(label="Scan: join the room", interactive=False, format="png", visible=False, buttons=[],
                           height=260, elem_id="lesson-room-qr")
    room_kept = gr.State(None)  # (photo key, code, host key): the room this page opened last
    # The same room as the browser keeps it across a reload (web/lesson_room_load.js, lesson_room_keep.js).
    room_saved = gr.Textbox("", visible="hidden", elem_id=ids.LESSON_ROOM_SAVED)
    return dict(room_btn=room_btn, room_md=room_md, room_qr=room_qr, room_kept=room_kept, room_saved=room_saved,
                lecturer_key=lecturer_key)


def _step() -> Ui:
    """The step: its question, the answer boxes and buttons, the presenter view's QR code, the reveal."""
    with gr.Row(elem_id="lesson-main"):
        with gr.Column(scale=3):
            header = gr.Markdown(elem_id="lesson-step")
            choice = gr.Radio([], label="Your answer", elem_id="lesson-choice")
            number = gr.Number(None, label="Your answer (a number)", visible=False, elem_id="lesson-number")
            with gr.Row(elem_id="lesson-buttons"):
                # Off until a step after the first is drawn (at_step sets both at every step).
                prev = gr.Button("← previous", size="sm", elem_id="lesson-prev", interactive=False)
                reveal_btn = gr.Button("Reveal", variant="primary", elem_id="lesson-reveal")
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
    drawn = gr.State(None)  # (key, step) of the question shown: redrawing it keeps the answer (at_step)
    goto = gr.Textbox("", visible=False, elem_id="lesson-goto")  # "tab#n": page JS clicks that tab's button
    address = gr.Textbox("", visible=False, elem_id="lesson-address")  # the step's link query: the address bar's
    return dict(header=header, choice=choice, number=number, prev=prev, reveal=reveal_btn, unknown=unknown, nxt=nxt,
                qr=qr, link=link, qr_note=qr_note, answer=answer, picture=picture, open_btn=open_btn, step=step,
                base=base, drawn=drawn, goto=goto, address=address)


def keep_js(rooms: Rooms | None) -> str:
    """lesson_room_keep.js with the length of the browser's list of its rooms written in: the rooms one address
    may hold on this server (Rooms.owners.roomy), as the room page's hosted_max (page/room.py page_html). It
    held 12 (ROOMY_PER_OWNER) whatever the server's rooms: a server allowing more had the Lesson tab cut the
    list the room page offers back."""
    most = rooms.owners.roomy if rooms is not None else ROOMY_PER_OWNER
    return web.asset("lesson_room_keep.js").replace("HOSTED_MAX", str(int(most)))


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = {**_room(ctx.rooms is not None and ctx.rooms.needs_key), **_step()}
    demo = Context.root_block  # the page being built: where it listens and its --share link, once launched
    outs, revealed, key = [ui[n] for n in OUTS], [ui[n] for n in REVEALED], ctx.key
    keep = keep_js(ctx.rooms)
    ui["room_btn"].click(kit.answer(open_room, ui, ctx, demo), [key, ui["base"], ui["room_kept"], ui["lecturer_key"]],
                         [ui[n] for n in [*ROOM, "lecturer_key"]], show_progress="minimal"
                         ).then(None, ui["room_saved"], None, js=keep)
    # A reload: the page's script puts the kept room in the box (only where there is one: no call otherwise).
    # .change: a script's input event on a hidden box is not Gradio's .input; open_room's own value changes it too.
    ui["room_saved"].change(kit.answer(restore_room, ui, ctx, demo), [ui["room_saved"], ui["base"], ui["room_kept"]],
                           [ui[n] for n in ROOM], show_progress="hidden").then(None, ui["room_saved"], None, js=keep)
    demo.load(None, None, None, js=web.asset("lesson_room_load.js"))
    ctx.on_show(tab, kit.answer(show, ui, ctx, demo), [key, ui["step"], ui["base"], ui["drawn"]], outs)
    ui["step"].change(kit.answer(drawn_late, ui, ctx, demo), [key, ui["step"], ui["base"], ui["drawn"]], outs,
                      show_progress="hidden")
    for btn, delta in (("prev", -1), ("nxt", +1)):
        ui[btn].click(kit.answer(go, ui, ctx, demo, delta), [key, ui["step"], ui["base"], ui["drawn"]], outs,
                      show_progress="hidden")
    for btn, dont_know in (("reveal", False), ("unknown", True)):
        ui[btn].click(kit.answer(do_reveal, ui, ctx, dont_know), [key, *(ui[n] for n in CONTROLS)], revealed,
                      show_progress="minimal")
    # Every tab's controls (once each) and first picture: a step sets them before it opens that tab.
    open_outs = [ui["goto"], *{id(c): c for d in ctx.controls.values() for c in d.values()}.values(),
                 *(f for f, _ in ctx.firsts.values())]
    ui["open_btn"].click(kit.answer(do_open, ui, ctx), [key, ui["step"], ui["goto"]], open_outs, show_progress="hidden")
    ui["goto"].change(None, ui["goto"], None, js=web.asset("select_tab.js"))
    ui["address"].change(None, ui["address"], None, js=web.asset("lesson_address.js"))  # a reload keeps the step
    ui["header"].change(None, None, None, js=web.asset("lesson_land.js"))  # a step's link lands on the step
