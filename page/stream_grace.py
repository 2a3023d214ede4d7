"""A session's answer stream held open a moment after its last answer, so no answer is lost.

Gradio 6.31 ends a session's answer stream (/gradio_api/queue/data) as soon as the last event it
knows of completes, with a close_stream message. Its clients (the page's, gradio_client) open a
stream only when they join an event with none open, and on close_stream they close it whatever
they still wait for. So when the page joins its next event while that close is on its way, the
client can read the join's answer first (a stream is open: it opens none), then the close: the new
event's answer comes to a stream nobody reads, and its picture never comes (seen in CI: the
browser logs the stream as net::ERR_ABORTED, and nothing is left pending on the page).

StreamGrace, an ASGI middleware, holds such a stream GRACE_S after each completed answer that
leaves the session with nothing else pending, until the session joins another event: then Gradio
sees that event pending and keeps the stream open, and the event's answer comes on it. The events a
page starts because of an answer (its follow-ups, a tab's pictures) join within milliseconds; a
join that arrives just as the grace runs out is still exposed, as before, but that window is narrow.
Other routes (REST's /call/ streams included) pass through untouched, and so do the streams of
vizvit's own page, which says so (REOPENS_HEADER): it asks for its stream again itself when a close
comes while it still waits for an answer (web/answer_stream.js), so a close held for it would only
keep it waiting (the browser tests wait for the page's streams to close).

A join can still cross a close: Gradio decides to close (nothing pending), then the session joins, and its
client reads the join's answer (an event id) before the close, so it files the event under the stream that
is closing and opens none (gradio_client: the close hands that event None, a CancelledError with no message;
seen once in CI, a test's next call 2 s after its last, the upload slow under load). So a closed stream waits,
before it ends, for its client to hang up (gradio_client does once it has read the close), at most SETTLE_S;
and a join of its session meanwhile is answered only after that: the client has then marked its stream closed
and opens a new one, where the event's answer waits (Gradio keeps the session's messages).

Every answer stream, held or not, ends its Gradio heartbeat task as it ends (page/heartbeats.py: a
stream its client hung up on left the task running for the life of the process).

A held stream sleeps until its session joins an event (Queue.push, wrapped here to wake it), not
polling: a hall of students holds dozens of streams at once, and a 20 ms poll of each cost the
server's event loop ~700 wake-ups a second (issue 52: server CPU a student).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import Any
from urllib.parse import parse_qs

from gradio.queueing import Queue

from . import heartbeats
from .queue_wake import sleep_until

PATH = "/gradio_api/queue/data"
GRACE_S = 2.0  # how long a stream waits, after a session's last answer, for its next event
CHECK_S = 0.25  # the safety net: how often a held stream looks without being woken (a stopped queue too)
WAITERS = "_vizvit_join_waiters"  # the queue's {session: {asyncio.Event of each held stream}}
COMPLETED = b'"msg":"process_completed"'  # Gradio's message, as orjson writes it (no spaces)
SETTLE_S = 2.0  # how long a closed stream waits for its client to hang up, and a join of its session with it
CLOSINGS = "_vizvit_closing_streams"  # the queue's {session: asyncio.Event set once its closed stream ended}
CLOSE = b'"msg":"close_stream"'
REOPENS_HEADER = "x-vizvit-reopens"  # sent by the page's streams (web/answer_stream.js): no grace needed
log = logging.getLogger("vizvit.app")


async def next_event(queue: Any, session: str, grace_s: float) -> bool:
    """Until `session` has an event pending beside the one just answered (that one stays in
    Gradio's pending set until the stream's next turn), at most grace_s or until the queue stops.
    Whether one came."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    joined = asyncio.Event()
    waiters = queue.__dict__.setdefault(WAITERS, {})
    waiters.setdefault(session, set()).add(joined)
    try:
        while len(queue.pending_event_ids_session.get(session, ())) < 2:
            left = deadline - loop.time()
            if queue.stopped or left <= 0:
                return False
            joined.clear()  # before the wait, after the look: a join from here on wakes it
            await sleep_until(joined, min(left, CHECK_S))
        return True
    finally:
        mine = waiters.get(session, set())
        mine.discard(joined)
        if not mine:
            waiters.pop(session, None)


async def hung_up(receive: Any, limit_s: float) -> bool:
    """Until the client hangs up (its request's body long read, the next message is the disconnect), at
    most limit_s; whether it did."""
    async def disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(disconnect(), limit_s)
        return True
    except TimeoutError:
        return False


async def after_close(queue: Any, session: str | None) -> None:
    """A join's answer waits while its session's stream has closed but not yet ended (at most SETTLE_S)."""
    ended = queue.__dict__.get(CLOSINGS, {}).get(session)
    if ended is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended.wait(), SETTLE_S)


def install() -> None:
    """Queue.push wrapped to wake the streams held for the session it queued an event of, and to answer
    only once a stream of that session that is closing has ended (idempotent; queue_wake's wrapper may sit
    above or below it: functools.wraps carries each one's mark)."""
    if getattr(Queue.push, "vizvit_joins", False):
        return
    original = Queue.push

    @functools.wraps(original)
    async def push(self: Queue, body: Any, *args: Any, **kwargs: Any) -> Any:
        session = getattr(body, "session_hash", None)
        try:
            return await original(self, body, *args, **kwargs)
        finally:
            for joined in list(self.__dict__.get(WAITERS, {}).get(session, ())):
                with contextlib.suppress(RuntimeError):  # a waiter of a closed loop: never the join's failure
                    joined.set()
            await after_close(self, session)

    push.vizvit_joins = True  # type: ignore[attr-defined]
    Queue.push = push  # type: ignore[method-assign]


class StreamGrace:
    """ASGI middleware: a queue/data stream's completed answer is sent, then the stream waits
    (next_event) before Gradio decides whether to close it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        install()
        heartbeats.quiet()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith(PATH):
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        session = (query.get("session_hash") or [""])[0]
        before = asyncio.all_tasks()
        sent = {"start": False, "end": False}

        async def noted(message: dict) -> None:
            sent["start"] = sent["start"] or message["type"] == "http.response.start"
            sent["end"] = message["type"] == "http.response.body" and not message.get("more_body")
            await send(message)

        try:
            await self._stream(scope, receive, noted, session)
        except Exception as e:  # not CancelledError (a BaseException): a hang-up still ends the stream
            if not sent["start"]:
                raise
            # Gradio's stream failed once its answer had begun: it raises HTTP 404 when the session's messages
            # are gone (another of the session's streams, closed by its client, deletes them; seen under load
            # in a fuzzing run), after it sent its error message. Uvicorn printed ~75 lines for each, at any
            # caller's will, and cut the stream mid-chunk: one line, and the stream ends as a stream does.
            log.info("answer stream of a session ended on %s", type(e).__name__)
            if not sent["end"]:
                with contextlib.suppress(Exception):  # the client may be gone too
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:  # however the stream ended (its client hung up): its heartbeat ends too
            heartbeats.ended(session, before)

    async def _stream(self, scope: dict, receive: Any, send: Any, session: str) -> None:
        if any(k == REOPENS_HEADER.encode() for k, _ in scope.get("headers", ())):
            await self.app(scope, receive, send)
            return
        queue = scope["app"].get_blocks()._queue  # Starlette puts the Gradio App in the scope
        closings, ended = queue.__dict__.setdefault(CLOSINGS, {}), asyncio.Event()

        async def graced(message: dict) -> None:
            body = message.get("body", b"") if message["type"] == "http.response.body" else b""
            if CLOSE in body:  # Gradio checked nothing was pending just before, with no await between
                closings[session] = ended
            elif message["type"] == "http.response.body" and not message.get("more_body") \
                    and closings.get(session) is ended:
                await hung_up(receive, SETTLE_S)
            await send(message)  # Gradio's stream resumes (and may close) only after this returns
            if message.get("more_body") and COMPLETED in body:
                await next_event(queue, session, GRACE_S)

        try:
            await self.app(scope, receive, graced)
        finally:
            ended.set()
            if closings.get(session) is ended:
                del closings[session]
