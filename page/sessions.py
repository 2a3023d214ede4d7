"""Gradio's sessions as this page keeps them: bounded in memory, and told to reload where this
process never served their page.

Memory per visitor, bounded in count and in time (issue 42). Gradio 6.31 keeps a SessionState for
every session that ever sent an event (its StateHolder), an API client's as much as a page's. Each
holds a copy of the config of every one of the page's ~300 components (SessionState.config_values,
for deep links): 0.5-0.6 MB a session here, measured with benchmarks/memory.py --new-sessions
(docs/memory.md). Gradio drops a session only past `state_session_capacity` (10,000 by default:
~5.5 GB), and its expiry (gr.State's time_to_live, an hour after a page closes) empties the State
values but keeps the SessionState itself. So:
- at most MAX_SESSIONS sessions are kept (Gradio's own LRU: launch's state_session_capacity), a
  session that is no page pushed out before any page (pages_first), and
- a session nobody has used for IDLE_S seconds is dropped whole (forget_idle, on a thread).
A visitor whose session was dropped finds the page as a new visitor does: the photo is asked for again.

A session this process never served (Pages, refuse_lost_sessions): behind a load balancer, a
replica that died sends its visitors to another one, where their photo key is not; their events
answer RESTARTED ("reload the page") instead of empty panels.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

import gradio as gr

log = logging.getLogger("vizvit.sessions")

MAX_SESSIONS = 300  # sessions kept at most (a lecture hall): 0.55 MB each, 165 MB in all
IDLE_S = 3600  # a session unused this long is dropped (shell.SESSION_TTL_S: its photo key is gone by then)
EVERY_S = 60.0  # how often idle sessions are looked for


def forget_idle(holder: Any, idle_s: float, now: datetime.datetime | None = None) -> int:
    """Drop from Gradio's StateHolder every session last used more than idle_s seconds before now.
    Returns how many were dropped. A session whose last use is not recorded yet (being created
    right now) is kept."""
    now = now or datetime.datetime.now()
    cutoff = now - datetime.timedelta(seconds=idle_s)
    dropped = 0
    with holder.lock:  # the lock Gradio's own LRU eviction (StateHolder.update) takes
        for sid in [s for s, t in list(holder.time_last_used.items()) if t < cutoff]:
            if holder.session_data.pop(sid, None) is not None:
                dropped += 1
            holder.time_last_used.pop(sid, None)
    return dropped


def callers_within(demo: Any, seconds: float, now: datetime.datetime | None = None) -> int:
    """How many sessions (a page, an API client) sent an event within `seconds` of now: Gradio's
    StateHolder notes each session's last use as its event starts (0 before the app exists)."""
    holder = getattr(demo, "state_holder", None)
    if holder is None:
        return 0
    cutoff = (now or datetime.datetime.now()) - datetime.timedelta(seconds=seconds)
    return sum(t >= cutoff for t in list(holder.time_last_used.values()))  # list(): a copy in one step


def start_forgetting(demo: Any, idle_s: float = IDLE_S, every_s: float = EVERY_S) -> threading.Thread:
    """A daemon thread: every `every_s` seconds, forget_idle on the demo's StateHolder (there once the
    app is created: until then it waits)."""

    def loop() -> None:
        import time

        while True:
            time.sleep(every_s)
            holder = getattr(demo, "state_holder", None)
            if holder is None:
                continue
            try:
                n = forget_idle(holder, idle_s)
            except Exception:
                log.warning("forgetting idle sessions failed", exc_info=True)
                continue
            if n:
                log.info("forgot %d idle sessions", n)

    t = threading.Thread(target=loop, name="vizvit-forget-sessions", daemon=True)
    t.start()
    return t


# -- a page this process never served (issue 42: replicas behind nginx, deploy/) ---------------------
RESTARTED = "This server was restarted: reload the page to reconnect."


UNHEARD_S = 2.0  # how long an event of a session never heard of waits before "reload the page"


class Pages:
    """The sessions whose page this process served (a load event of theirs ran here), the `limit`
    most recent. Behind a load balancer, a student whose replica died reaches another replica
    with a session it never had: the photo key is gone, and the tabs answered empty panels with
    no word of why (seen in Chromium through nginx, a replica killed)."""

    def __init__(self, limit: int = 100_000):
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._opening: OrderedDict[str, None] = OrderedDict()  # a load event of theirs is in the queue
        self._address: OrderedDict[str, str] = OrderedDict()  # session -> the network its events came from
        self._lock = threading.Condition()
        self.limit = limit

    def _add(self, sessions: OrderedDict[str, None], session: str) -> None:
        sessions[session] = None
        sessions.move_to_end(session)
        while len(sessions) > self.limit:
            sessions.popitem(last=False)
        self._lock.notify_all()

    def note_address(self, session: str | None, address: str | None) -> None:
        """The network a session's event came from (page/queue_share.py, as it joins the queue)."""
        if session and address:
            with self._lock:
                self._address[session] = address
                self._address.move_to_end(session)
                while len(self._address) > self.limit:
                    self._address.popitem(last=False)

    def address_of(self, session: str) -> str | None:
        with self._lock:
            return self._address.get(session)

    def saw(self, session: str | None) -> None:
        if session:
            with self._lock:
                self._add(self._seen, session)

    def opening(self, session: str | None) -> None:
        """A load event of this session joined the queue (it runs soon, and then saw() is called)."""
        if session:
            with self._lock:
                self._add(self._opening, session)

    def knows(self, session: str | None) -> bool:
        """False only for a session this process never served a page to; True without one (a direct call)."""
        if not session:
            return True
        with self._lock:
            return session in self._seen

    def heard(self, session: str) -> bool:
        """Whether this session's page loaded here or is opening (its load event joined the queue)."""
        with self._lock:
            return session in self._seen or session in self._opening

    def knows_within(self, session: str | None, timeout: float, unheard: float = UNHEARD_S) -> bool:
        """knows(), waiting up to `timeout` s for the session's load event: a tab clicked as the page
        opens sends its event with the load's, and the queue may run it first (a fresh visitor was told
        the server had restarted). Only a session whose load event has joined the queue (opening())
        waits that long; one never heard of waits `unheard` s (two requests sent together can reach
        the queue in either order) and is refused: a made-up session held a worker thread and a queue
        place for the whole wait, and ten of them a second kept the queue full for everyone."""
        if not session:
            return True
        end = time.monotonic() + timeout
        with self._lock:
            if self._lock.wait_for(lambda: self.heard(session), min(unheard, timeout)):
                return self._lock.wait_for(lambda: session in self._seen, max(0.0, end - time.monotonic()))
            return False


PAGES = Pages()


def current_session() -> str | None:
    """The session_hash of the Gradio event running in this thread (None outside one)."""
    from gradio.context import LocalContext

    return getattr(LocalContext.request.get(None), "session_hash", None)


def refuse_lost_sessions(demo: gr.Blocks, key: gr.State, fresh: tuple = (), pages: Pages = PAGES) -> int:
    """Every load event of `demo`, and every event of a component in `fresh` (the photo upload: a
    new photo starts afresh), records its session in `pages`; every other event that reads the
    photo `key` answers RESTARTED (a message in the page) for a session `pages` does not know,
    instead of computing on a key that is not there. The public API (gr.api) reads no key:
    untouched. Returns how many events now check."""
    checked = 0
    fresh_ids = {c._id for c in fresh}
    for block_fn in demo.fns.values():
        f = block_fn.fn
        if f is None or inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f):
            continue
        if any(event == "load" or target in fresh_ids for target, event in block_fn.targets):
            block_fn.fn = _before(f, lambda: pages.saw(current_session()))
            block_fn.vizvit_opens = pages  # type: ignore[attr-defined] - its join says a page is opening (install)
        elif any(c is key for c in block_fn.inputs):
            block_fn.fn = _before(f, lambda: _refuse_unknown(pages))
            checked += 1
    return checked


LOAD_WAIT_S = 10.0  # how long an event waits for its page's load event before "reload the page"


def _opening_on_join(push: Callable) -> Callable:
    """Gradio's Queue.push, telling the event's Pages (refuse_lost_sessions) when a page's load event
    (or a new photo's) joins, before it runs."""
    @functools.wraps(push)
    async def wrapper(self: Any, body: Any, *args: Any, **kwargs: Any) -> Any:
        fn_index = getattr(body, "fn_index", None)
        fn = self.blocks.fns.get(fn_index) if isinstance(fn_index, int) else None
        pages = getattr(fn, "vizvit_opens", None)
        if pages is not None:
            pages.opening(getattr(body, "session_hash", None))
        return await push(self, body, *args, **kwargs)

    wrapper.vizvit_opening = True  # type: ignore[attr-defined]
    return wrapper


def pages_first(holder: Any, session_id: str, pages: Pages = PAGES) -> None:
    """Gradio's StateHolder.update, pages first and fair by network: over capacity, the least recently
    used session that is no page (a REST call or gradio_client: every call a new session, which reads no
    state) goes first; then the least recently used page of the network holding the most sessions.
    Before this, 300 cheap REST calls from anyone pushed out every student's session (an audit: a
    student's next sweep said "Upload a photo first"), and a page is only a session some load event
    named (anyone can send one): so a network making hundreds loses its own first. The session being
    used is never the one pushed out; where every other session is a page, a new non-page session
    stays over capacity, by one, until the next session arrives."""
    with holder.lock:
        data = holder.session_data
        if session_id in data:
            data.move_to_end(session_id)
        while len(data) > holder.capacity:
            # One step in C (Gradio adds a session outside this lock): the walk below is over a copy
            others = [s for s in list(data) if s != session_id]  # oldest first
            victim = next((s for s in others if not pages.heard(s)), None)
            if victim is None:  # every other one is a page
                if not (pages.heard(session_id) and others):
                    break  # the new non-page session waits over capacity (by one) for the next to push it out
                net = {s: pages.address_of(s) for s in [*others, session_id]}
                counts = Counter(net.values())
                victim = max(others, key=lambda s: counts[net[s]])  # max: the first, the oldest, of the biggest
            data.pop(victim, None)
            holder.time_last_used.pop(victim, None)


def _pages_first_update(self: Any, session_id: str) -> None:
    pages_first(self, session_id, PAGES)  # PAGES read now, not bound at import (a test gives its own)


def install() -> None:
    """Queue.push tells Pages of a page opening; StateHolder keeps pages first (pages_first). Idempotent."""
    from gradio.queueing import Queue
    from gradio.state_holder import StateHolder

    if not getattr(Queue.push, "vizvit_opening", False):
        Queue.push = _opening_on_join(Queue.push)  # type: ignore[method-assign]
    StateHolder.update = _pages_first_update  # type: ignore[method-assign]


def _refuse_unknown(pages: Pages) -> None:
    if not pages.knows_within(current_session(), LOAD_WAIT_S):
        raise gr.Error(RESTARTED, print_exception=False)


def _before(fn: Callable, first: Callable[[], None]) -> Callable:
    """fn with first() run before it; the same signature (Gradio reads it to pass gr.Request)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args: Any, **kwargs: Any) -> Any:
            first()
            yield from fn(*args, **kwargs)

        return stream

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        first()
        return fn(*args, **kwargs)

    return call

