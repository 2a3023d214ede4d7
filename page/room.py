"""The live room's plain HTTP route (issue 45): a student's page waits here for the lecturer's next
move. One long poll per page: the answer comes as soon as the room's version differs from the one the
page has (checked every POLL_S in the event loop, no thread held), or after WAIT_S with no change.
A Gradio event per student per half second would cost far more on a 2-core server (see docs/lecture.md)."""

from __future__ import annotations

import asyncio
import time

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse

from vizvit.errors import UserError
from vizvit.room import Rooms

PATH = "vizvit_room/{code}"
POLL_S = 0.05  # how often a waiting request re-reads the room's version (a lock and a dict lookup)
WAIT_S = 20.0  # a long poll's longest wait; the page asks again at once


def wait_route(rooms: Rooms) -> APIRoute:
    """GET /vizvit_room/{code}?v=N -> the room's state (JSON) once its version is not N, or after
    WAIT_S; {"closed": true} once the room is gone (closed, idle, or never opened)."""

    async def wait(request: Request) -> JSONResponse:
        code = request.path_params.get("code", "")
        try:
            seen = int(request.query_params.get("v", "-2"))
        except ValueError:
            seen = -2
        end = time.monotonic() + WAIT_S
        while rooms.version(code) == seen and seen >= 0 and time.monotonic() < end:
            await asyncio.sleep(POLL_S)
        try:
            body = rooms.view(code)
        except UserError as e:
            body = {"closed": True, "version": -1, "error": str(e)}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    return APIRoute("/" + PATH, wait, methods=["GET"])
