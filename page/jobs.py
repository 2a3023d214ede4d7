"""The page's costly jobs (the shift sweep, the deletion curves, head importance, attention flow):
who a caller is (its address, behind trusted proxies), the fair line's wait shown in the page, and
who stops a job, waiting or running, once its caller has left (vizvit.service.jobs runs the line)."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from vizvit.cancel import Cancel, Cancelled
from vizvit.readings import methods
from vizvit.service import jobs as jobs_mod
from vizvit.service.jobs import Caller, Jobs, Ticket

log = logging.getLogger("vizvit.app")


# The costly jobs (the shift sweep, the deletion curves, head importance, attention flow) share
# vizvit.service.jobs' slots (COSTLY_SLOTS) across every caller, taken in turn by address, then by session.
# Their events run in Gradio's concurrency group "costly" with a thread for each slot and each place
# in vizvit.service.jobs' line (LINE_TOTAL): a job waits for its turn in vizvit.service.jobs (fair, its place shown,
# listed in /stats, stopped when the caller leaves), never unseen in Gradio's own first-come queue;
# and a listener that answers at once (attention flow's, for any other method) never waits behind
# the running jobs. They can never take the threads that answer cached photos and controls (issue 28).
COSTLY_THREADS = jobs_mod.COSTLY_SLOTS + jobs_mod.LINE_TOTAL
COSTLY = dict(concurrency_id="costly", concurrency_limit=COSTLY_THREADS)
WATCH_S = 0.2  # how often the watcher looks for callers that have left
# A job whose answer nobody reads (a REST call POSTed whose stream was never opened) is stopped once
# a message for it has waited unread this long: Gradio runs such an event to its end and keeps it
# alive (event.alive turns False only when an open stream closes). An open stream (the page's
# /queue/data, a REST call's GET, gradio_client's) takes each message within milliseconds.
UNREAD_S = 5.0
UNREAD_LOOKS = 5  # and seen unread this many times: a stalled event loop (no reader ran) is not "unread"
PROXY_HOPS_ENV = "VIZVIT_PROXY_HOPS"  # trusted proxies in front that append to X-Forwarded-For


def proxy_hops() -> int:
    """How many trusted proxies stand in front of the server: VIZVIT_PROXY_HOPS, else 1 on a Space
    (SPACE_ID set: HF's proxy, and request.client is the proxy's internal address), else 0."""
    raw = os.environ.get(PROXY_HOPS_ENV, "")
    if raw.strip():
        try:
            return max(0, int(raw))
        except ValueError:
            log.warning("%s=%r is not a whole number: trusting no proxy", PROXY_HOPS_ENV, raw)
            return 0
    return 1 if os.environ.get("SPACE_ID") else 0


def current_caller() -> str | None:
    """caller_of the Gradio event running in this thread (None outside one): whose turn a forward
    takes (vizvit.model.forwards.ForwardQueue.caller)."""
    from gradio.context import LocalContext

    return caller_of(LocalContext.request.get(None))


def _site(host: str) -> str:
    """An IPv6 address as its /64: one home or site gets a whole /64 (RFC 6177), and a host picks any of
    its 2^64 addresses at will, so counted one by one they were as many callers as it liked (seven
    addresses took every room on the server). IPv4 (and v4-mapped IPv6) and names stay as they are."""
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _peer(request: Any) -> str | None:
    client = getattr(request, "client", None)
    return getattr(client, "host", None) if client is not None else None


def _is_public(host: str | None) -> bool:
    """An address on the public internet (not private, loopback, link-local or reserved)."""
    try:
        return host is not None and ipaddress.ip_address(host.split("%")[0]).is_global
    except ValueError:
        return False


def caller_of(request: gr.Request | None, hops: int | None = None) -> str | None:
    """Who a request comes from: its network address (every REST call and every new gradio_client
    is a new session, so the session alone would let one machine hold every slot); the session
    only where there is no address. Behind `hops` trusted proxies (proxy_hops()) the address is
    X-Forwarded-For's entry that the outermost trusted proxy wrote (the hops-th from the right):
    entries left of it are whatever the client sent, and anyone can write those."""
    if request is None:
        return None
    hops = proxy_hops() if hops is None else hops
    host = None
    if hops:
        headers = getattr(request, "headers", None) or {}
        entries = [e.strip() for e in str(headers.get("x-forwarded-for", "")).split(",") if e.strip()]
        if len(entries) >= hops:
            host = entries[-hops]
        elif _is_public(peer := _peer(request)):
            # No header: not through the proxy, which always writes one. A peer on the internet came
            # straight here (the server is reachable past its proxy): it is its address, never the
            # session, which it picks anew each call to escape every per-address share. A private or
            # loopback peer is the proxy itself, left without its header: its address would make
            # every visitor one caller, so there the session still stands for the visitor.
            host = peer
    else:  # no proxy: the socket's peer
        host = _peer(request)
    if host:
        return f"address {_site(host)}"
    session = getattr(request, "session_hash", None)
    return f"session {session}" if session else None


UNKNOWN_NETWORK = "address unknown"


def network_of(request: gr.Request | None) -> str:
    """The network a room counts a student or a lecturer by (vizvit.classroom.room.ADDRESS_SHARE):
    caller_of's address, else one shared UNKNOWN_NETWORK. Never a session: a session id is the client's
    to choose, so each would bring a share of its own; and never "" (no share), which is kept for
    in-process callers."""
    who = caller_of(request)
    return who if who is not None and who.startswith("address ") else UNKNOWN_NETWORK


WAITING = "Waiting for a free slot: "  # how every waiting line begins


def waiting_text(what: str, ahead: int) -> str:
    """What a waiting job shows in its status line."""
    if ahead == 0:
        return f"{WAITING}your {what} is next in line."
    return f"{WAITING}{ahead} ahead of you in line for the {what}."


@dataclass
class _Watched:
    cancel: Cancel
    event: Any  # Gradio's queue Event (its `alive` turns False when its client's stream is gone), or None
    loop: Any  # the server's event loop, to see whether the event's task was cancelled (Stop)
    event_id: str | None
    queue: Any = None  # Gradio's Queue: the event's session's messages show whether anyone reads them
    session: str = ""  # the caller's session (vizvit.service.jobs.Caller): a closed page stops its jobs
    head: Any = None  # the oldest unread message last seen, since when and how many times
    head_since: float = 0.0
    head_looks: int = 0

    def unread(self, head: Any, now: float) -> bool:
        """Whether `head` (the oldest message waiting for this event's session, None: none) has waited
        unread long enough to say nobody reads the answer (UNREAD_S, UNREAD_LOOKS)."""
        if head is None or head is not self.head:
            self.head, self.head_since, self.head_looks = head, now, 1
            return False
        self.head_looks += 1
        return self.head_looks >= UNREAD_LOOKS and now - self.head_since >= UNREAD_S


class _Free:
    """A direct call's ticket (a test, a script): no caller to count, no line, the limit still holds."""

    started = True

    def __init__(self, cancel: Cancel) -> None:
        self.cancel = cancel

    def ahead(self) -> None:
        return None

    def waiting(self) -> Iterator[int]:
        return iter(())


class CostlyJobs:
    """Costly jobs of the page and the API (vizvit.service.jobs.Jobs), and who stops them, waiting or running:
    a job whose caller disconnected, whose page closed, whose answer nobody reads (UNREAD_S) or whose
    event was cancelled (Stop, a new upload) gets its token set within WATCH_S of seeing it; a waiting
    one leaves the line, a running one stops at its next step (vizvit.cancel)."""

    def __init__(self, jobs: Jobs | None = None) -> None:
        self.jobs = jobs if jobs is not None else Jobs(limits=methods.JOB_LIMITS)
        self._watched: dict[int, _Watched] = {}
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    @contextlib.contextmanager
    def hold(self, request: gr.Request | None, what: str) -> Iterator[Cancel]:
        """Wait for the job's turn (vizvit.service.jobs), then yield its token: pass it to the job's loops.
        Set when the caller leaves or the job passes its limit."""
        with self.line(request, what) as ticket:
            for _ in ticket.waiting():
                pass
            yield ticket.cancel

    @contextlib.contextmanager
    def line(self, request: gr.Request | None, what: str, replace: bool = False) -> Iterator[Ticket | _Free]:
        """Join the fair line and yield the Ticket: `for ahead in ticket.waiting(): show(waiting_text(...))`,
        then run the job with ticket.cancel. Watched from now on, while it waits as while it runs.
        replace (a tab's job): this page's older job of the same kind stops, and ends quietly (no
        error: the newer one is already showing its own lines); the API's calls never replace."""
        event, loop, event_id, queue = _gradio_event()
        caller = who(request, event)
        if caller is None:  # a direct call (a test, a script): no caller to count, the limit still holds
            yield _Free(Cancel(self.jobs.limit_of(what), what))
            return
        token = Cancel(what=what)
        key = id(token)
        with self._lock:
            self._watched[key] = _Watched(token, event, loop, event_id, queue, session=caller.session)
            self._start_watcher()
        try:
            with self.jobs.line(caller, what, token, replace=replace) as ticket:
                yield ticket
        except Cancelled:
            if token.reason != jobs_mod.REPLACED:
                raise
            log.info("a %s was replaced by a newer one from the same page", what)
        finally:  # also when the job is stopped or the visitor leaves (the generator is closed)
            with self._lock:
                self._watched.pop(key, None)

    def left(self, request: gr.Request = None) -> None:
        """A page closed (Ctx.unloads): stop its session's jobs, waiting or running."""
        session = getattr(request, "session_hash", None)
        with self._lock:
            watched = list(self._watched.values())
        for w in watched:
            if session and session in (w.session, getattr(w.event, "session_hash", None)):
                w.cancel.set("the page was closed")

    def _start_watcher(self) -> None:
        if self._watcher is None or not self._watcher.is_alive():
            self._watcher = threading.Thread(target=self._watch, name="vizvit-costly-watch", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        """Every WATCH_S: set the token of each job whose client is gone (Gradio marks its queue event
        not alive once the event's stream, a page's or a REST call's, is closed), whose answer nobody
        reads (a stream never opened: see UNREAD_S), or whose event task is being cancelled (the
        page's Stop button, a new upload's cancels=)."""
        while True:
            time.sleep(WATCH_S)
            with self._lock:
                watched = list(self._watched.values())
            if watched:
                self.look(watched)

    def look(self, watched: list[_Watched]) -> None:
        """One look of the watcher at `watched`."""
        for w in watched:
            if w.event is not None and not getattr(w.event, "alive", True):
                w.cancel.set("the caller left")
        loops = {id(w.loop): w.loop for w in watched if w.loop is not None and not w.cancel.is_set()}
        for loop in loops.values():
            mine = [w for w in watched if w.loop is loop and not w.cancel.is_set()]
            seen = _on_loop(loop, mine)
            if seen is None:  # the loop closed or is busy: look again next time
                continue
            now = time.monotonic()
            for w, (cancelling, head) in zip(mine, seen):
                if cancelling:
                    w.cancel.set("it was stopped")
                elif w.unread(head, now):
                    w.cancel.set("nobody reads its answer")


def who(request: gr.Request | None, event: Any = None) -> Caller | None:
    """The Caller of a costly job: its address (caller_of) and its session, the Gradio event's (a REST
    call with no session of its own is its own event, so each call takes its turn)."""
    address = caller_of(request)
    if address is None:
        return None
    session = getattr(event, "session_hash", None) or getattr(request, "session_hash", None) or ""
    return Caller(address, str(session))


def _gradio_event() -> tuple[Any, Any, str | None, Any]:
    """(the queue Event, the server's loop, the event id, Gradio's Queue) of the event this thread
    runs, where Gradio says so (its LocalContext, as gr.Info reads it); Nones outside an event."""
    from gradio.context import LocalContext

    blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    queue = getattr(blocks, "_queue", None)
    event = queue.event_ids_to_events.get(event_id) if queue is not None and event_id else None
    try:
        import anyio.from_thread

        loop = anyio.from_thread.run_sync(asyncio.get_running_loop)  # a worker thread of the server's loop
    except Exception:  # noqa: BLE001 - not in a worker thread (a test's direct call): no Stop to see
        loop = None
    return event, loop, event_id, queue


def _on_loop(loop: asyncio.AbstractEventLoop, watched: list[_Watched]) -> list[tuple[bool, Any]] | None:
    """For each of `watched`, read on the server's loop (where Gradio changes them): whether the task
    running its event is being cancelled (Gradio names the task '<session>_<fn><gradio-sep><event
    id>'; a sync handler's thread finishes its step first), and the oldest message waiting unread
    for its event's session (None: none waits). None when the loop does not answer."""
    async def look() -> list[tuple[bool, Any]]:
        tasks = [t for t in asyncio.all_tasks() if t.cancelling()]
        out = []
        for w in watched:
            suffix = f"<gradio-sep>{w.event_id}"
            cancelling = bool(w.event_id) and any(t.get_name().endswith(suffix) for t in tasks)
            pending = getattr(w.queue, "pending_messages_per_session", None)
            messages = pending.get(getattr(w.event, "session_hash", None)) if pending is not None else None
            inner = getattr(messages, "_queue", None)  # asyncio.Queue's deque
            out.append((cancelling, inner[0] if inner else None))
        return out

    try:
        return asyncio.run_coroutine_threadsafe(look(), loop).result(timeout=1.0)
    except Exception:  # noqa: BLE001 - the loop closed or is busy: look again next time
        return None


JOBS = CostlyJobs()
