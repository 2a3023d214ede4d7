"""Rooms no stranger can break (issue 50): the live room's routes and API endpoints, guarded per caller.

Every surface that takes a room code checks it first: a malformed code is refused with a sentence
before anything else, and a wrong code (malformed, or well-formed with no room) spends one of the
caller's tokens (WRONG_CODES): a student who mistypes twice never notices, a stranger guessing codes
gets "Too many tries" (HTTP 429) after a burst, then about one answer a second: 32**8 codes at that
pace are never found. A code that is open, or was lately, costs nothing (a class's pages hearing
their room closed are not guessing). New students (a page's hello, a first answer) are limited per
address to what a whole class behind one NAT needs (JOINS), and rooms opened per address (OPENS).

The caller is page.jobs.caller_of: the socket's peer, or X-Forwarded-For's entry the outermost trusted
proxy wrote (VIZVIT_PROXY_HOPS). The buckets live in this process (vizvit.service.limits).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from vizvit.classroom.room import BAD_CODE, NO_CODE, Rooms, parse_code
from vizvit.classroom.roomstore import StoreDown
from vizvit.errors import UserError
from vizvit.service.limits import Limiter, Rate, Recent, Verdict

from .jobs import caller_of
from .room import json_object, off_loop, unavailable

WRONG_CODES = Rate(burst=20, per_s=1.0)  # per address: ~20 typos at once, then one guess a second
JOINS = Rate(burst=300, per_s=5.0)  # per address: a whole class (a room's 300) behind one NAT answering its
# first question at once, then 5 a second; one address fills at most its share of a room
# (vizvit.classroom.room.ADDRESS_SHARE), and the lecturer may turn it away or lock the room
OPENS = Rate(burst=20, per_s=1 / 30)  # per address: a department's rooms at once (each costs an analysis
# and every step measured ahead), then one each 30 s: no stream of open-and-close
OPEN_CODES_KEPT = 1_000  # room codes seen open lately (MAX_ROOMS is 60: plenty of closed ones remembered)
JOINED_KEPT = 20_000  # (code, student) pairs seen joining lately: MAX_ROOMS × MAX_STUDENTS is 18,000
CLOCK: Callable[[], float] = time.monotonic  # the buckets' clock (a test freezes it: page/guard.CLOCK)
JOIN_PATHS = ("/hello", "/answer")  # a student's page's first request that makes it one of the room's


def too_many_tries(v: Verdict) -> str:
    return f"Too many tries: wait {v.wait_whole_s} s."


def too_many_joins(v: Verdict) -> str:
    return f"Too many new students from this network at once: wait {v.wait_whole_s} s, then reload the page."


def too_many_opens(v: Verdict) -> str:
    return f"Too many rooms opened from this address: wait {v.wait_whole_s} s."


class Refused(UserError):
    """A guard's refusal: its sentence, the HTTP status a plain route answers, the wait (429)."""

    def __init__(self, message: str, status: int, wait_s: int = 0):
        super().__init__(message)
        self.status, self.wait_s = status, wait_s


class Guard:
    """One per server: the room routes (routes()) and the room API endpoints (code/join/open) share its buckets."""

    def __init__(self, rooms: Rooms, clock: Callable[[], float] | None = None):
        self.rooms = rooms
        clock = clock or CLOCK
        self.codes: Limiter[str] = Limiter(WRONG_CODES, clock=clock)
        self.joins: Limiter[str] = Limiter(JOINS, clock=clock)
        self.opens: Limiter[str] = Limiter(OPENS, clock=clock)
        self.open_codes: Recent[str] = Recent(OPEN_CODES_KEPT)
        self.joined: Recent[tuple[str, str]] = Recent(JOINED_KEPT)

    # ---------------------------------------------------------------- the checks (any surface)
    @staticmethod
    def who(request: Any) -> str:
        return caller_of(request) or "nobody"  # no address and no session: all such callers share one bucket

    def code(self, request: Any, code: object, version: int | None = None) -> str:
        """The room code in its canonical form, or a Refused: malformed (400) or, past the caller's
        burst of wrong codes, too many tries (429). A well-formed code of no room spends a token and
        goes on: the room's own answer says "no open room". version: the room's, where the caller knows it
        (Rooms.cached_version), else read here."""
        parsed = parse_code(code)
        if parsed is not None:
            if (version if version is not None else self.rooms.version(parsed)) >= 0:
                self.open_codes.add(parsed)
                return parsed
            if parsed in self.open_codes:
                return parsed  # its room closed lately: the class's pages hear it at no cost
        v = self.codes.spend(self.who(request))
        if not v.ok:
            raise Refused(too_many_tries(v), 429, v.wait_whole_s)
        if parsed is None:
            empty = not isinstance(code, str) or not code.strip()
            raise Refused(NO_CODE if empty else BAD_CODE, 400)
        return parsed

    def join(self, request: Any, code: str, student: object) -> None:
        """A student new to this room (first hello or answer) spends one of its address's join tokens."""
        if not isinstance(student, str) or (code, student) in self.joined:
            return  # not a student id: the room refuses it; known: it joined already
        v = self.joins.spend(self.who(request))
        if not v.ok:
            raise Refused(too_many_joins(v), 429, v.wait_whole_s)
        self.joined.add((code, student))

    def may_open(self, request: Any) -> None:
        """Whether this caller may open a room now (spends nothing: see opened)."""
        v = self.opens.check(self.who(request))
        if not v.ok:
            raise Refused(too_many_opens(v), 429, v.wait_whole_s)

    def opened(self, request: Any) -> None:
        """A room this caller opened: one of its tries spent (two at once may both pass may_open:
        a room or two over, never a stream)."""
        self.opens.spend(self.who(request))

    def open(self, request: Any) -> None:
        """A room about to be opened by this caller, where its opening cannot fail cheaply (the Lesson
        tab's, on a photo the page analysed already): checked and counted at once."""
        v = self.opens.spend(self.who(request))
        if not v.ok:
            raise Refused(too_many_opens(v), 429, v.wait_whole_s)

    # ---------------------------------------------------------------- the plain routes
    def routes(self, routes: list[APIRoute]) -> list[APIRoute]:
        """The room's routes, each one with a {code} in its path checked first (and a join counted)."""
        return [APIRoute(r.path, self._guarded(r.endpoint, r.path), methods=sorted(r.methods or ()))
                if "{code}" in r.path else r for r in routes]

    def _guarded(self, endpoint: Callable[[Request], Awaitable[Response]], path: str
                 ) -> Callable[[Request], Awaitable[Response]]:
        joins = path.endswith(JOIN_PATHS)
        poll = path.endswith("{code}")  # the long poll: its answers say closed, and the page stops

        async def guarded(request: Request) -> Response:
            try:
                given = request.path_params.get("code", "")
                # the room's version known here at no store call: checked in the loop; else in a thread
                v = self.rooms.cached_version(given)
                if v is not None:
                    code = self.code(request, given, v)
                else:
                    code = await off_loop(self.rooms, self.code, request, given)
                if joins:
                    try:
                        body = await json_object(request)  # starlette keeps the body: the route reads it again
                    except UserError:
                        body = {}  # the route answers it with its own sentence
                    self.join(request, code, body.get("student"))
            except StoreDown as e:  # the code's check reads the store: down, it is the route's 503, not a 500
                return unavailable(e)
            except Refused as e:
                out: dict[str, Any] = {"error": str(e)}
                if poll:
                    out |= {"closed": True, "version": -1}
                headers = {"Cache-Control": "no-store", **({"Retry-After": str(e.wait_s)} if e.wait_s else {})}
                return JSONResponse(out, status_code=e.status, headers=headers)
            return await endpoint(request)

        guarded.__name__ = getattr(endpoint, "__name__", "room_route")
        return guarded
