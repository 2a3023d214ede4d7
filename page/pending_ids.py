"""Gradio's set of pending event ids per session, bounded.

Gradio 6.31 files each event's id under its session in Queue.pending_event_ids_session, a plain dict, and
takes it out only when the session's answer stream reads the event's completion, or when the stream hangs
up while the event still waits in the line. An event whose answer nobody reads (a REST client that POSTs
/gradio_api/call/<name> and never GETs the answer, or hangs up while the event runs) leaves its session's
entry there for the life of the process, and every REST call is a new session: 40 such calls left 40
entries (tests/page/test_pending_ids.py), a stranger's soak some thousands, with no end. The session's
message queue, where the answer waits, is in Gradio's LRU (pending_messages_per_session, 2,000 sessions),
so the answer itself is bounded; its id was not.

After each push, once the dict holds SLACK more sessions than that LRU may, the entries of sessions the LRU
has dropped are forgotten, unless an event of theirs still waits or runs: no stream can read them any more
(Gradio answers 404 to a stream of a session without a message queue), and a new event of such a session
files them again (Queue.push makes both). Runs on the server's event loop, where Gradio changes them.
"""

from __future__ import annotations

import functools
from typing import Any

from gradio.queueing import Queue

SLACK = 200  # sessions over the LRU's size before a look: one look (O(sessions)) every SLACK new ones


def forget_unreadable(queue: Any) -> int:
    """Forget the pending ids of sessions with no message queue and no event waiting or running; returns
    how many sessions were forgotten."""
    ids, messages = queue.pending_event_ids_session, queue.pending_messages_per_session
    live = {e.session_hash for e in list(queue.event_ids_to_events.values())}
    gone = [s for s in ids if s not in messages and s not in live]
    for s in gone:
        ids.pop(s, None)
    return len(gone)


def _pruning(original: Any) -> Any:
    @functools.wraps(original)
    async def push(self: Queue, *args: Any, **kwargs: Any) -> Any:
        try:
            return await original(self, *args, **kwargs)
        finally:
            limit = getattr(self.pending_messages_per_session, "max_size", None)
            if limit is not None and len(self.pending_event_ids_session) > limit + SLACK:
                forget_unreadable(self)

    push.vizvit_prunes = True  # type: ignore[attr-defined]
    return push


def install() -> None:
    """Queue.push wrapped (idempotent)."""
    if not getattr(Queue.push, "vizvit_prunes", False):
        Queue.push = _pruning(Queue.push)  # type: ignore[method-assign]
