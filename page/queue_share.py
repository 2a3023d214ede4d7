"""Gradio's queue shared between networks: no one address fills it for everyone.

Gradio 6.31 keeps one first-come queue of at most QUEUE_SIZE waiting events (app.configure_queue) and
answers 503 "Queue is full" to whoever comes next. An audit: one address POSTing Compare calls it
never read held all 64 places, and every other visitor's page, /analyze and even /stats got 503.
The fairness further in (the forwards' turns, the costly jobs' line) only starts after admission.

So before an event joins (Queue.push), the events already waiting from its address (page.jobs.caller_of:
the network, not the session, which a REST caller makes anew for every call) are counted:
- a caller with no page (REST, gradio_client: a session no load event of ours ever opened) may have
  API_SHARE of its address's non-page events waiting: a script gets its answers, not the queue;
- any address, pages included (a lecture hall behind one NAT is forty pages of one address), may
  have all but RESERVE places, and once only those are free, a network with RESERVE_EACH waiting is
  refused: the reserve goes to the networks with few (two networks cannot fill it between them).
A "page" is only a session some load event named, and anyone can send one: API_SHARE stops a naive
script, not a determined one; the reserve is what keeps the queue open to others.
A refused event is answered as Gradio answers a full queue (503, with this module's sentence), so the
page and gradio_client show it as they show that. install() wraps Queue.push; idempotent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from gradio.queueing import Queue

from . import sessions
from .jobs import caller_of

API_SHARE = 8  # non-page events of one address waiting at once (a script's calls in flight)
RESERVE = 16  # of the queue's places, never all taken by one address (a quarter of a smaller queue)
RESERVE_EACH = 4  # once only the reserve is left, a network with this many waiting is refused


def _is_page(event_fn: Any, session: str | None) -> bool:
    """An event of a page: its session opened a page here (or is opening), or it is a page's own opening
    (a load event, before its session is heard of)."""
    return getattr(event_fn, "vizvit_opens", None) is not None or (bool(session) and sessions.PAGES.heard(session))


def refusal(waiting: Sequence[tuple[str | None, bool]], caller: str | None, page: bool, max_size: int | None,
            api_share: int = API_SHARE, reserve: int = RESERVE) -> str | None:
    """Why an event of `caller` (page: whether it is a page's) may not join now, or None.
    waiting: (caller, page) of each event already waiting."""
    if caller is None:
        return None  # an in-process call: nobody to count
    mine = [p for c, p in waiting if c == caller]
    if not page and sum(not p for p in mine) >= api_share:
        return (f"Too many requests from your network are waiting ({api_share}): wait for their answers "
                "before sending more.")
    if max_size is None:
        return None
    kept = min(reserve, max_size // 4)  # a small queue keeps a quarter
    if len(mine) >= max_size - kept:
        return (f"The server's queue is full of requests from your network ({len(mine)} waiting): "
                "try again in a moment.")
    # The reserve itself goes to networks with few waiting: two networks cannot fill it between them
    if max_size - len(waiting) <= kept and len(mine) >= min(RESERVE_EACH, kept):
        return (f"The server's queue is nearly full and your network has {len(mine)} requests waiting: "
                "try again in a moment.")
    return None


def _waiting(queue: Queue) -> list[tuple[str | None, bool]]:
    """(caller, page) of every event waiting in Gradio's queue (not those running)."""
    return [(caller_of(e.request), _is_page(e.fn, e.session_hash))
            for q in queue.event_queue_per_concurrency_id.values() for e in q.queue]


def _shared(push: Callable) -> Callable:
    @functools.wraps(push)
    async def wrapper(self: Queue, body: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        fn_index = getattr(body, "fn_index", None)
        fn = self.blocks.fns.get(fn_index) if isinstance(fn_index, int) else None
        session = getattr(body, "session_hash", None)
        caller = caller_of(request)
        why = refusal(_waiting(self), caller, _is_page(fn, session), self.max_size)
        if why is not None:
            return False, why, "queue_full"
        sessions.PAGES.note_address(session, caller)  # the network whose sessions go first (pages_first)
        return await push(self, body, request, *args, **kwargs)

    wrapper.vizvit_shared = True  # type: ignore[attr-defined]
    return wrapper


def install() -> None:
    if not getattr(Queue.push, "vizvit_shared", False):
        Queue.push = _shared(Queue.push)  # type: ignore[method-assign]
