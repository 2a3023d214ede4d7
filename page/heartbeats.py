"""A session's answer stream takes its heartbeat with it when it ends.

Gradio 6.31's answer stream (/gradio_api/queue/data, routes.py `sse_stream`) starts a task that puts a
heartbeat in the session's messages every 15 s while the server runs, and cancels it only where the
stream ends as Gradio expects. A stream its client hangs up on mid-way ends otherwise: the generator is
left at a `yield` (or, closed later, catches GeneratorExit in `except BaseException` and yields again:
"async generator ignored GeneratorExit", an ERROR in the log) and never reaches the cancel. Each such
stream left a task waking every 15 s for the life of the process: 27 of 30 hung-up streams here, and a
REST caller, a closed tab or a stranger can hang up as often as they like.

`ended(session, before)` cancels the heartbeat tasks started for `session` since `before` (asyncio's
tasks when the stream began) that are still running; StreamGrace calls it as each stream ends.
A heartbeat is recognised by its coroutine's name and the session its closure holds.

`quiet()` keeps the left generator's own last word out of the log: closed when it is collected, it
yields in its `except BaseException` and asyncio logs "Task exception was never retrieved ... async
generator ignored GeneratorExit" at ERROR, one line for every hung-up stream, for any caller at will.
Its heartbeat is ended above, so nothing is left running; only that exact record is dropped."""

from __future__ import annotations

import asyncio
import logging

HEARTBEAT = "heartbeat"  # Gradio's coroutine's name (routes.py, queue_data_helper)


def _session_of(task: asyncio.Task) -> str | None:
    coro = task.get_coro()
    frame = getattr(coro, "cr_frame", None)
    if getattr(coro, "__name__", "") != HEARTBEAT or frame is None:
        return None
    session = frame.f_locals.get("session_hash")
    return session if isinstance(session, str) else None


def ended(session: str, before: set[asyncio.Task]) -> int:
    """Cancel `session`'s heartbeat tasks started since `before` and still running; how many."""
    n = 0
    for task in asyncio.all_tasks() - before:
        if not task.done() and _session_of(task) == session:
            task.cancel()
            n += 1
    return n


IGNORED_EXIT = "async generator ignored GeneratorExit"


class _IgnoredExit(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (isinstance(exc, RuntimeError) and str(exc) == IGNORED_EXIT)


def quiet() -> None:
    """Drop asyncio's record of an async generator that ignored GeneratorExit (idempotent)."""
    log = logging.getLogger("asyncio")
    if not any(isinstance(f, _IgnoredExit) for f in log.filters):
        log.addFilter(_IgnoredExit())
