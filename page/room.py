"""The live room's plain HTTP route (issue 45): a student's page waits here for the lecturer's next
move. One long poll per page: the answer comes as soon as the room's version differs from the one the
page has (woken by the room's change, Rooms.on_change; re-checked at least every POLL_S), or after
WAIT_S with no change. A Gradio event per student per half second would cost far more on a 2-core
server (see docs/lecture.md)."""

from __future__ import annotations

import asyncio
import base64
import functools
import io
import json
import os
import time
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
from fastapi.routing import APIRoute
from PIL import Image
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response

from vizvit import launch
from vizvit.api import PublicApi
from vizvit.classroom import lesson as lesson_mod, room as room_mod
from vizvit.classroom.room import Rooms, parse_code
from vizvit.classroom.roomstore import Busy, SQLiteStore, StoreDown, no_waiting
from vizvit.errors import UserError
from vizvit.readings import lesson as lesson_readings
from vizvit.session import Workbench
from vizvit.views import lesson as lesson_view

from . import web
from .jobs import network_of

PAGE_PATH = "room"  # the room's own page: ?host=1 the lecturer's, ?code=XXXXX a student's
EXAMPLE = Path(__file__).resolve().parent.parent / "assets" / "examples" / "chelsea.jpg"

PATH = "vizvit_room/{code}"
POLL_S = 1.0  # a waiting request re-reads the room's version at least this often (a safety net: it is woken)
WAIT_S = 20.0  # a long poll's longest wait; the page asks again at once
# The room store may be another process (Redis), and one that hangs (paused, or behind a network dropping its
# packets) holds each call for its socket timeout (5 s): called in the event loop, three heartbeats stalled
# every request of the server for 15 s. So every room route calls such a store in threads (off_loop), at most
# STORE_THREADS at once: a hung store's calls wait there, never in the loop, nor in Gradio's threads.
STORE_THREADS = 16
T = TypeVar("T")
_store_threads: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary())


async def off_loop(rooms: Rooms, fn: Callable[..., T], *args: object, in_loop: bool = True) -> T:
    """fn(*args), which calls rooms' store: in one of the store's threads (STORE_THREADS for each event loop)
    where the store is another process. Where it is this process's own SQLite, in the loop first: it answers
    in microseconds (in threads, a 300-student hall's push p95 went 0.26 -> 0.68 s on Redis, and
    docs/lecture.md measured threads worse on SQLite too). But there it never waits (no_waiting): a file
    another process writes (a second server, the CLI, a backup, a restarting Space's old process) held the
    loop, and every request of the server, for SQLite's busy timeout (10 s). fn then meets Busy before it
    writes anything, and runs again whole in a thread, where it waits for the file. A fn that wrote before
    its Busy writes again there: each route's writes set what they set (a step, a flag, a student, an
    answer). in_loop False: a thread at once (turn_away, whose count of students gone a second run loses)."""
    if in_loop and isinstance(rooms.store, SQLiteStore):
        try:
            with no_waiting():
                return fn(*args)
        except Busy:
            pass
    loop = asyncio.get_running_loop()
    limiter = _store_threads.get(loop)
    if limiter is None:
        limiter = _store_threads[loop] = anyio.CapacityLimiter(STORE_THREADS)
    return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=limiter)


class Wakeups:
    """One asyncio event per room a page waits on, set from any thread when the room changes (Rooms'
    on_change): a waiting poll wakes at once instead of re-reading the version every POLL_S. An event is
    kept only while a poll holds it (enter .. leave): a poll on any code, a room's or a stranger's made-up
    one, leaves nothing behind (every made-up code's event was kept for good: the server's memory grew
    with each request)."""

    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}
        self._held: dict[str, int] = {}  # polls holding an event of that code (any generation)
        self._loop: asyncio.AbstractEventLoop | None = None

    def enter(self, code: str) -> tuple[str, asyncio.Event]:
        """(the canonical code, the room's event), registered before its version is read: a change during the
        read sets it. Every enter has its leave."""
        self._loop = asyncio.get_running_loop()
        # the canonical code: Rooms announces changes under it ("abcd-efgh" typed waits on ABCDEFGH)
        key = parse_code(code) or code
        self._held[key] = self._held.get(key, 0) + 1
        return key, self._events.setdefault(key, asyncio.Event())

    def leave(self, key: str) -> None:
        """A poll is done with its event: the code's entry goes with its last poll."""
        n = self._held.get(key, 0) - 1
        if n > 0:
            self._held[key] = n
        else:
            self._held.pop(key, None)
            self._events.pop(key, None)

    def __len__(self) -> int:
        """Codes with an event held (the polls waiting)."""
        return len(self._events)

    @staticmethod
    async def wait(ev: asyncio.Event, timeout: float) -> None:
        try:
            await asyncio.wait_for(ev.wait(), timeout)
        except TimeoutError:
            pass

    def changed(self, code: str) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def fire() -> None:
            ev = self._events.pop(code, None)
            if ev is not None:
                ev.set()

        loop.call_soon_threadsafe(fire)


async def version_of(rooms: Rooms, code: str) -> int:
    """_version, from this process's cache where it can (a poll's every second: no thread), else in a thread."""
    v = rooms.cached_version(code)
    return v if v is not None else await off_loop(rooms, _version, rooms, code)


async def view_of(rooms: Rooms, code: str) -> dict:
    """rooms.view, from this process's cache where it can (a push's hundred polls), else in a thread."""
    body = rooms.cached_view(code)
    return body if body is not None else await off_loop(rooms, rooms.view, code)


def _version(rooms: Rooms, code: str) -> int:
    """The room's version; -1 when its store does not answer (Redis away): the poll then answers at once
    with the view's own sentence instead of failing."""
    try:
        return rooms.version(code)
    except UserError:
        return -1


def wait_route(rooms: Rooms) -> APIRoute:
    """rooms.on_change is set here (the waiting pages' wake-up).
    GET /vizvit_room/{code}?v=N -> the room's state (JSON) once its version is not N, or after
    WAIT_S; {"closed": true, "error": why} once the room is gone: the sentence says whether the
    lecturer closed it, or it closed because the lecturer's page was away (room.CLOSED_BY_HOST,
    room.CLOSED_AWAY), or no room has that code (room.UNKNOWN_ROOM). Woken by a change here or, with
    the Redis store, on any replica (Rooms.on_change: the store's subscription)."""

    wakeups = Wakeups()
    rooms.on_change = wakeups.changed

    async def wait(request: Request) -> JSONResponse:
        code = request.path_params.get("code", "")
        try:
            seen = int(request.query_params.get("v", "-2"))
        except ValueError:
            seen = -2
        end = time.monotonic() + WAIT_S
        # the event is registered before the version is read (in a thread), and the change's wake-up sets it
        # in the loop: a change can never fall between the read and the wait unseen
        while seen >= 0 and time.monotonic() < end:
            key, ev = wakeups.enter(code)
            try:
                if await version_of(rooms, code) != seen:
                    break
                await wakeups.wait(ev, min(POLL_S, end - time.monotonic()))
            finally:
                wakeups.leave(key)
        try:
            body = await view_of(rooms, code)
        except StoreDown as e:
            return unavailable(e)
        except UserError as e:
            body = {"closed": True, "version": -1, "error": str(e)}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return APIRoute("/" + PATH, wait, methods=["GET"])


def step_route(rooms: Rooms, wb: Workbench) -> APIRoute:
    """POST /vizvit_room/{code}/step {"host_key", "step", "reveal"} -> the room's view (as the long poll
    answers it), or {"error": the sentence}. The lecturer's move as a plain route: it skips Gradio's
    queue (where a hundred students' answers wait) and, its truth measured at the opening, is a store
    update (off_loop) that wakes the waiting pages. The public API's /room_step calls the same PublicApi.room_step."""
    api = PublicApi(wb, None, rooms)

    async def step(request: Request) -> JSONResponse:
        code = request.path_params.get("code", "")
        try:
            body = await json_object(request)
        except UserError:
            return JSONResponse({"error": 'Send JSON: {"host_key": ..., "step": n, "reveal": false}.'}, status_code=400)
        key, n, reveal = body.get("host_key"), body.get("step"), body.get("reveal", False)
        try:
            if reveal is True and not await off_loop(rooms, rooms.prepared, code, n):
                await run_in_threadpool(api.room_step, code, key, n, True)  # measured now: never in the loop
            else:
                await off_loop(rooms, api.room_step, code, key, n, reveal)  # a store update
            return JSONResponse(await off_loop(rooms, rooms.view, code), headers={"Cache-Control": "no-store"})
        except StoreDown as e:
            return unavailable(e)
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=400)

    return APIRoute("/vizvit_room/{code}/step", step, methods=["POST"])


async def json_object(request: Request) -> dict:
    """The request's JSON object, or UserError("Send a JSON object."): for a body that is no JSON, JSON
    that is no object, or JSON nested deeper than Python's recursion limit (json.loads raises
    RecursionError there, not ValueError: "[" * 100000 + "]" * 100000 was an HTTP 500 and a traceback)."""
    try:
        body = await request.json()
    except (ValueError, RecursionError):
        body = None
    if not isinstance(body, dict):
        raise UserError("Send a JSON object.")
    return body


def answer_routes(rooms: Rooms) -> list[APIRoute]:
    """The students' answers and the host's live tally as plain routes (store updates in the room store's
    threads, off_loop): a hundred phones answering at once never wait in, nor fill, Gradio's queue
    (a full queue refuses with 503). The public API's /room_answer and /room_tally do the same.
    POST /vizvit_room/{code}/answer {"student", "step", "answer"} -> {"accepted", "reason"}, and "answer":
    the text it is tallied as when accepted ("12,5" -> "12.5");
    POST /vizvit_room/{code}/tally {"host_key", "step"} -> Tally.as_json() or {"error"}."""

    async def answer(request: Request) -> JSONResponse:
        try:
            b = await json_object(request)
        except UserError as e:
            return JSONResponse({"accepted": False, "reason": str(e)}, status_code=400)
        code, step, given = request.path_params.get("code", ""), b.get("step"), b.get("answer")
        addr = network_of(request)

        def answered() -> tuple[bool, str, dict]:
            ok, why = rooms.answer(code, b.get("student"), step, given, addr)
            return ok, why, ({"answer": rooms.kept(code, step, given)} if ok else {})

        try:
            ok, why, kept = await off_loop(rooms, answered)
        except StoreDown as e:
            return unavailable(e)
        return JSONResponse({"accepted": ok, "reason": why, **kept}, headers={"Cache-Control": "no-store"})

    def tally(request: Request, code: str, b: dict) -> dict:
        return rooms.tally(code, b.get("host_key"), b.get("step")).as_json()

    return [APIRoute("/vizvit_room/{code}/answer", answer, methods=["POST"]),
            APIRoute("/vizvit_room/{code}/tally", _host_route(rooms, tally), methods=["POST"])]


def presence_routes(rooms: Rooms, wb: Workbench | None = None) -> list[APIRoute]:
    """The host page's heartbeat and lock, and a student page's hello (issue 50), as plain routes:
    POST /vizvit_room/{code}/host {"host_key"} -> the room's view and its "crowd" (Rooms.host: the room stays
    open, it closes after room.HOST_AWAY_S without a host call; the host page calls every 5 s);
    POST /vizvit_room/{code}/turn_away {"host_key", "network"} -> the same, and "turned_away": how many
    students of that network (the crowd's) went, with their answers; POST /vizvit_room/{code}/let_in
    {"host_key", "network", "trust": true|false} -> the same: that network may join again, and with trust
    (the default) without a share;
    POST /vizvit_room/{code}/lock {"host_key", "locked": true|false} -> the room's view ("locked" in it);
    POST /vizvit_room/{code}/hello {"student"} -> {"accepted", "reason"}, and when accepted "answers": the
    student's answers the room holds ({"1": "224"}, a page opened again shows them); the page registers on load
    (counts toward the room's students and its network's share; refused when the room is locked or full,
    its network turned away or holding its share).
    A refusal: {"error": the sentence} (host, lock) with status 400.
    wb: the server's Workbench: a host call measures ahead the steps a restart left unmeasured."""

    def host(request: Request, code: str, b: dict) -> dict:
        seen = rooms.host(code, b.get("host_key"), network_of(request))
        if wb is not None:  # the key is the host's: the room's steps measured ahead, where a restart stopped it
            PublicApi(wb, None, rooms).room_measure_ahead(code)
        return seen

    def lock(request: Request, code: str, b: dict) -> dict:
        rooms.lock(code, b.get("host_key"), b.get("locked"))
        return rooms.view(code)

    def turn_away(request: Request, code: str, b: dict) -> dict:
        gone = rooms.turn_away(code, b.get("host_key"), b.get("network"))
        return {**host(request, code, b), "turned_away": gone}

    def let_in(request: Request, code: str, b: dict) -> dict:
        rooms.let_in(code, b.get("host_key"), b.get("network"), b.get("trust", True))
        return host(request, code, b)

    async def hello(request: Request) -> JSONResponse:
        try:
            b = await json_object(request)
        except UserError as e:
            return JSONResponse({"accepted": False, "reason": str(e)}, status_code=400)
        code, student = request.path_params.get("code", ""), b.get("student")
        try:
            ok, why = await off_loop(rooms, rooms.join, code, student, network_of(request))
        except StoreDown as e:
            return unavailable(e)
        held = await off_loop(rooms, _mine, rooms, code, student) if ok else None
        mine = {"answers": held} if held is not None else {}  # not read: the page keeps its own copy
        return JSONResponse({"accepted": ok, "reason": why, **mine}, headers={"Cache-Control": "no-store"})

    return [*(APIRoute(f"/vizvit_room/{{code}}/{act.__name__}", _host_route(rooms, act, act is not turn_away),
                       methods=["POST"]) for act in (host, lock, turn_away, let_in)),
            APIRoute("/vizvit_room/{code}/hello", hello, methods=["POST"])]


def _mine(rooms: Rooms, code: str, student: object) -> dict[str, str] | None:
    """A student's answers as its page keeps them ({"1": "224"}); None when they cannot be read now (the
    room closed meanwhile, the store is down): an empty answer made a reopened page forget its own."""
    try:
        return {str(n): text for n, text in rooms.mine(code, student).items()}
    except UserError:
        return None


def unavailable(e: StoreDown) -> JSONResponse:
    """The store is down: 503, which the pages ask again (never a closed room: a host page took that for
    its room gone and forgot its key)."""
    return JSONResponse({"error": str(e)}, status_code=503, headers={"Cache-Control": "no-store", "Retry-After": "2"})


def _host_route(rooms: Rooms, act: Callable[[Request, str, dict], dict], in_loop: bool = True
                ) -> Callable[[Request], Awaitable[JSONResponse]]:
    """A host-keyed plain route: act(request, code, its JSON body) -> the answer; a refusal (a bad body,
    a wrong key, a closed room) -> {"error": its sentence}, status 400. in_loop: off_loop's."""

    async def route(request: Request) -> JSONResponse:
        code = request.path_params.get("code", "")
        try:
            body = await off_loop(rooms, act, request, code, await json_object(request), in_loop=in_loop)
        except StoreDown as e:
            return unavailable(e)
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    route.__name__ = act.__name__
    return route


@functools.cache
def _lan() -> str | None:
    return launch.lan_address()


# How long after its host view last ran a room is offered back on /room?host=1 (room.js keepHosted): long
# enough to reopen a tab closed by mistake, short enough that a shared lecture-hall computer does not hand
# the last lecturer's room to the next person at it.
HOSTED_FRESH_S = 10 * 60


def page_html(needs_key: bool = False, hosted_max: int = room_mod.ROOMY_PER_OWNER) -> str:
    """The room's page: one HTML file with its script (page/web/room.html, room.js), and what the script
    checks a room code with, from vizvit.classroom.room (never written twice): alphabet, length, sentences.
    needs_key: the server opens rooms for its lecturers only (the start page asks for the key); hosted_max:
    the rooms one address may hold on this server (Rooms.owners.roomy), as many as the page offers back."""
    config = json.dumps({"alphabet": room_mod.CODE_ALPHABET, "length": room_mod.CODE_LEN,
                         "bad_code": room_mod.BAD_CODE, "no_code": room_mod.NO_CODE, "barred": room_mod.BARRED,
                         "hosted_max": hosted_max, "hosted_fresh_s": HOSTED_FRESH_S,
                         "needs_key": needs_key, "key_max": room_mod.LECTURER_KEY_MAX})
    config = config.replace("<", "\\u003c")  # JSON inside <script>: no "</script>" can close it
    return web.asset("room.html").replace("/*ROOM_CONFIG*/", config).replace("/*ROOM_JS*/", web.asset("room.js"))


def room_routes(rooms: Rooms, wb: Workbench, served: Callable[[], tuple[str | None, str | None]]) -> list[APIRoute]:
    """Every route of the live room: the room's page, the students' long poll, the step, answers and
    tally, the presence calls, the lesson's questions for the room's model, and the students' link
    with its QR code. served: () -> (the address the server listens on, its --share link), known once
    launched."""
    return [wait_route(rooms), step_route(rooms, wb), *answer_routes(rooms), *presence_routes(rooms, wb),
            *page_routes(rooms), *lesson_routes(rooms, wb), join_route(rooms, served)]


def page_routes(rooms: Rooms) -> list[APIRoute]:
    """GET /room: the room's page; GET /room/example.jpg: the example photo; GET
    /vizvit_room/{code}/picture/{step}: a step's figure (404 with {"error"} until it is ready)."""

    async def page(request: Request) -> HTMLResponse:
        return HTMLResponse(page_html(rooms.needs_key, rooms.owners.roomy), headers={"Cache-Control": "no-store"})

    async def example(request: Request) -> FileResponse:
        return FileResponse(EXAMPLE, media_type="image/jpeg")

    async def picture(request: Request) -> Response:
        try:
            params = request.path_params
            data = await off_loop(rooms, rooms.picture, params.get("code", ""), params.get("step", ""))
        except StoreDown as e:
            return unavailable(e)
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=404)
        if data is None:
            return JSONResponse({"error": "The picture is not ready yet: ask again in a second."}, status_code=404)
        # The page asks with the room's version in the query: a revealed step's figure is a new address
        return Response(data, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=600"})

    return [APIRoute("/" + PAGE_PATH, page, methods=["GET"]),
            APIRoute(f"/{PAGE_PATH}/example.jpg", example, methods=["GET"]),
            APIRoute("/vizvit_room/{code}/picture/{step}", picture, methods=["GET"])]


def lesson_routes(rooms: Rooms, wb: Workbench) -> list[APIRoute]:
    """GET /vizvit_room/{code}/lesson: the lesson's steps filled for the room's model; POST
    /vizvit_room/{code}/answers.csv {"host_key"}: the room's answers as a CSV file, for its lecturer
    (issue 51)."""

    async def lesson(request: Request) -> JSONResponse:
        try:
            st = await off_loop(rooms, rooms.state, request.path_params.get("code", ""))
            # In a thread: after a restart the room's model may load here, seconds the event loop never waits
            vm = await run_in_threadpool(wb.model, st.model)
            g = vm.geometry
        except StoreDown as e:
            return unavailable(e)
        except UserError as e:
            return JSONResponse({"error": str(e)})
        steps = [{"title": lesson_mod.fill(s.title, g), "question": lesson_mod.fill(s.question, g),
                  "options": [[k, lesson_mod.fill(t, g)] for k, t in s.options], "is_number": s.is_number,
                  "within": s.within, "meaning": lesson_view.meaning(s, vm),
                  "truth_label": lesson_readings.truth_label(s, g)}
                 for s in lesson_readings.steps()]
        return JSONResponse({"steps": steps})

    def csv_text(code: str, host_key: object) -> str:
        rooms.check_host(code, host_key)  # the key first: a stranger makes no model load (a review)
        g = wb.model(rooms.state(code).model).geometry
        titles = [lesson_mod.fill(s.title, g) for s in lesson_readings.steps()]
        within = [s.within if s.is_number else 0.0 for s in lesson_readings.steps()]  # options: the key itself
        return rooms.answers_csv(code, host_key, titles, within)

    async def answers_csv(request: Request) -> Response:
        code = request.path_params.get("code", "")
        try:
            body = await json_object(request)
            st = await off_loop(rooms, rooms.state, code)
            text = await run_in_threadpool(csv_text, code, body.get("host_key"))  # a model may load: not in the loop
        except StoreDown as e:
            return unavailable(e)
        except UserError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        name = f"room-{st.code}-answers.csv"  # the canonical code: letters and digits only
        return Response(text, media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"})

    return [APIRoute("/vizvit_room/{code}/lesson", lesson, methods=["GET"]),
            APIRoute("/vizvit_room/{code}/answers.csv", answers_csv, methods=["POST"])]


def join_route(rooms: Rooms, served: Callable[[], tuple[str | None, str | None]]) -> APIRoute:
    """GET /vizvit_room/{code}/join -> {"url", "note", "reachable", "qr"}: the students' link and its
    QR code, honest about loopback addresses (launch.phone_address)."""

    async def join(request: Request) -> JSONResponse:
        code = request.path_params.get("code", "")
        try:
            st = await off_loop(rooms, rooms.state, code)
        except StoreDown as e:
            return unavailable(e)
        except UserError as e:
            return JSONResponse({"error": str(e)}, headers={"Cache-Control": "no-store"})
        listen, share = served()
        where = launch.phone_address(str(request.base_url), listen, share, os.environ.get("SPACE_HOST"), _lan())
        # the canonical code, never the path's: "ABCD\u2028EFGH" (any Unicode space) or "abcd-efgh-" reaches the
        # room too, and went into the link and its QR code as it was sent
        url = f"{where.base}{PAGE_PATH}?code={st.code}"
        buf = io.BytesIO()
        Image.fromarray(lesson_view.qr_picture(url, module=6)).save(buf, "PNG")
        qr = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
        # built from the request's Host: a shared cache must never hand one caller's link to the next
        return JSONResponse({"url": url, "note": where.note, "reachable": where.reachable, "qr": qr},
                            headers={"Cache-Control": "no-store"})

    return APIRoute("/vizvit_room/{code}/join", join, methods=["GET"])
