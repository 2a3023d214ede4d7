"""page/jobs.py without a browser: who a caller is (its address, X-Forwarded-For only behind trusted
proxies, the session only where there is no address), the fair line's wait shown, and who stops a
job, waiting or running: a closed page, an answer nobody reads, the page's Stop, a generator closed
(merged from tests/test_costly.py, issue 44; moved from tests/page/test_kit.py with the code)."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import gradio as gr
import pytest

from page import jobs
from vizvit.cancel import Cancel, Cancelled
from vizvit.errors import UserError
from vizvit.service.jobs import Jobs


def request(host: str | None, session: str, forwarded: str | None = None) -> gr.Request:
    headers = {"x-forwarded-for": forwarded} if forwarded else {}
    return gr.Request(session_hash=session, client={"host": host, "port": 1234}, headers=headers)


def test_a_caller_is_its_address_whatever_its_session():
    assert jobs.caller_of(request("192.0.2.7", "s1"), hops=0) == jobs.caller_of(request("192.0.2.7", "s2"), hops=0) \
        == "address 192.0.2.7"
    assert jobs.caller_of(request("192.0.2.8", "s1"), hops=0) == "address 192.0.2.8"
    assert jobs.caller_of(request(None, "s9"), hops=0) == "session s9"  # no address: the session
    assert jobs.caller_of(None) is None


def test_x_forwarded_for_counts_only_behind_a_trusted_proxy_and_only_the_entry_it_wrote():
    # No trusted proxy: a header anyone can send changes nothing.
    assert jobs.caller_of(request("192.0.2.7", "s1", "203.0.113.5"), hops=0) == "address 192.0.2.7"
    # One proxy (a Space, deploy/'s nginx): the entry it appended, not what the client wrote before it.
    assert jobs.caller_of(request("10.0.0.2", "s1", "198.51.100.9, 203.0.113.5"), hops=1) == "address 203.0.113.5"
    assert jobs.caller_of(request("10.0.0.2", "s1", "198.51.100.9, 203.0.113.5"), hops=2) == "address 198.51.100.9"
    # Behind the proxy without the header (no client address known): the session, never the proxy's.
    assert jobs.caller_of(request("10.0.0.2", "s1"), hops=1) == "session s1"
    assert jobs.caller_of(request("::1", "s1"), hops=1) == "session s1"
    # ... but a peer on the internet without the header came past the proxy, straight to the server: its
    # address, whatever session it makes up (each a share of its own before), and whatever it writes.
    assert jobs.caller_of(request("8.8.4.4", "s1"), hops=1) == jobs.caller_of(request("8.8.4.4", "s2"), hops=1) \
        == "address 8.8.4.4"
    assert jobs.caller_of(request("2606:4700::1111", "s1"), hops=2) == "address 2606:4700::/64"


def test_proxy_hops_trusts_a_space_or_the_flag(monkeypatch):
    monkeypatch.delenv(jobs.PROXY_HOPS_ENV, raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert jobs.proxy_hops() == 0
    monkeypatch.setenv("SPACE_ID", "someone/vizvit")
    assert jobs.proxy_hops() == 1
    monkeypatch.setenv(jobs.PROXY_HOPS_ENV, "2")
    assert jobs.proxy_hops() == 2
    monkeypatch.setenv(jobs.PROXY_HOPS_ENV, "yes")
    assert jobs.proxy_hops() == 0  # not a number: trust no proxy (logged)


def test_same_address_two_sessions_both_get_their_costly_job_in_turn(monkeypatch):
    """Issue 50: a caller is (address, session); a new session from one address waits its turn (its
    place in line shown), never refused because the address's other session runs a job."""
    monkeypatch.delenv(jobs.PROXY_HOPS_ENV, raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    costly = jobs.CostlyJobs(Jobs(slots=1))
    started, release = threading.Event(), threading.Event()

    def first() -> None:
        with costly.hold(request("192.0.2.7", "page-session"), "attention flow") as c:
            started.set()
            while not release.is_set():
                c.check()
                time.sleep(0.01)

    t = threading.Thread(target=first, daemon=True)
    t.start()
    assert started.wait(10)
    threading.Timer(0.3, release.set).start()
    with costly.line(request("192.0.2.7", "new-rest-session"), "shift sweep") as ticket:
        shown = [jobs.waiting_text("shift sweep", ahead) for ahead in ticket.waiting()]
        assert ticket.started and ticket.cancel.limit_s == costly.jobs.limit_of("shift sweep")
    assert shown[0] == "Waiting for a free slot: your shift sweep is next in line.", shown
    t.join(10)
    with costly.hold(None, "shift sweep") as c:  # a direct call (no request): not counted, still limited
        assert c.limit_s == costly.jobs.limit_of("shift sweep") and costly.jobs.stats().running == []


def test_a_closed_page_stops_its_job_waiting_in_line_and_running():
    costly = jobs.CostlyJobs(Jobs(slots=1))
    running, out = threading.Event(), {}

    def job(session: str) -> None:
        try:
            with costly.hold(request("192.0.2.7", session), "shift sweep") as c:
                running.set()
                while True:
                    c.check()
                    time.sleep(0.01)
        except UserError as e:
            out[session] = str(e)

    first = threading.Thread(target=job, args=("open-page",), daemon=True)
    first.start()
    assert running.wait(10)
    second = threading.Thread(target=job, args=("closed-page",), daemon=True)
    second.start()
    t0 = time.monotonic()
    while not costly.jobs.stats().waiting:
        assert time.monotonic() - t0 < 10
        time.sleep(0.01)
    costly.left(request("192.0.2.7", "closed-page"))  # the page's unload event
    second.join(10)
    assert "the page was closed" in out["closed-page"] and "open-page" not in out
    assert costly.jobs.stats().recent[0]["outcome"] == "not started: the page was closed"
    costly.left(request("192.0.2.7", "open-page"))
    first.join(10)
    assert costly.jobs.stats().recent[0]["outcome"] == "stopped: the page was closed"


def test_a_job_whose_answer_nobody_reads_is_stopped_waiting_or_running_and_a_read_one_is_not(monkeypatch):
    """Gradio runs a REST call POSTed to /gradio_api/call/<name> whose stream is never opened to its
    end, and its event stays alive; the sign is its session's messages left unread. Here a real event
    loop holds two sessions' message queues (asyncio.Queue, as Gradio's): one read, one not."""
    import asyncio

    monkeypatch.setattr(jobs, "UNREAD_S", 0.3)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    pending = {"read": asyncio.Queue(), "unread": asyncio.Queue()}
    gradio_queue = SimpleNamespace(pending_messages_per_session=pending)

    async def reader() -> None:  # an open stream: takes each message as it comes
        while True:
            await pending["read"].get()

    reading = asyncio.run_coroutine_threadsafe(reader(), loop)
    costly = jobs.CostlyJobs(Jobs(slots=1))
    watched = {}
    for session in ("read", "unread"):
        event = SimpleNamespace(alive=True, session_hash=session)
        watched[session] = jobs._Watched(Cancel(what="shift sweep"), event, loop, f"id-{session}", gradio_queue)
        loop.call_soon_threadsafe(pending[session].put_nowait, f"process_starts {session}")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.0 and not watched["unread"].cancel.is_set():
        costly.look(list(watched.values()))
        time.sleep(0.05)
    assert watched["unread"].cancel.is_set() and watched["unread"].cancel.reason == "nobody reads its answer"
    assert not watched["read"].cancel.is_set(), watched["read"].cancel.reason
    watched["read"].event.alive = False  # its stream closed: the caller left
    costly.look([watched["read"]])
    assert watched["read"].cancel.reason == "the caller left"

    # The page's Stop: Gradio cancels the event's task, which waits for the handler's thread to end
    # its step (it stays "cancelling"); the task is named '<session>_<fn><gradio-sep><event id>'.
    async def event_task() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(60)

    async def start_and_stop() -> None:
        task = asyncio.get_running_loop().create_task(event_task(), name="read_7<gradio-sep>id-stopped")
        await asyncio.sleep(0)  # it runs to its first await, as an event's task does
        task.cancel()

    asyncio.run_coroutine_threadsafe(start_and_stop(), loop).result(5)
    stopped = jobs._Watched(Cancel(what="shift sweep"), SimpleNamespace(alive=True, session_hash="read"), loop,
                           "id-stopped", gradio_queue)
    costly.look([stopped, watched["unread"]])
    assert stopped.cancel.reason == "it was stopped"
    reading.cancel()
    time.sleep(0.05)
    loop.call_soon_threadsafe(loop.stop)


def test_a_visitors_second_costly_job_waits_behind_its_first_and_a_stopped_one_frees_its_slot():
    """Issue 50: a second costly job of the same visitor waits its turn (never refused for the first);
    another visitor's runs beside it; a job stopped mid-run (the generator closed) frees its slot."""
    costly = jobs.CostlyJobs(Jobs(slots=2))
    me, other = SimpleNamespace(session_hash="a"), SimpleNamespace(session_hash="b")
    with costly.hold(me, "shift sweep"):
        with costly.hold(other, "deletion curves"):  # the second slot
            with costly.line(me, "deletion curves") as ticket:
                assert not ticket.started and ticket.ahead() == 0  # waits for a slot, not refused
                ticket.cancel.set("the page was closed")
                with pytest.raises(Exception, match="the page was closed"):
                    ticket.wait()

    def run():
        with costly.hold(me, "head importance"):
            yield 1
            yield 2

    g = run()
    next(g)
    g.close()  # Stop pressed: the generator is closed mid-run
    with costly.hold(me, "shift sweep"), costly.hold(me, "deletion curves"):  # alone: both slots
        assert len(costly.jobs.stats().running) == 2


def test_a_pages_newer_job_of_the_same_kind_ends_its_older_one_quietly_and_an_api_call_replaces_nothing():
    """Attention flow chosen, then Compute (two events): the older job's generator ends with no error (the
    newer one shows its own lines) and frees its slot; a call without replace (the API's) keeps both."""
    costly = jobs.CostlyJobs(Jobs(slots=1))
    me = request("203.0.113.7", "s1")
    steps: list[str] = []

    def job(name: str, replace: bool = True):
        with costly.line(me, "attention flow", replace=replace) as ticket:
            for _ in ticket.waiting():
                yield f"{name} waits"
            for i in range(100):
                ticket.cancel.check()
                steps.append(name)
                yield f"{name} step {i}"

    older, newer = job("older"), job("newer")
    assert next(older) == "older step 0"
    assert next(newer) == "newer waits"  # joined: the older one's token is set
    assert list(older) == []  # its next step ends it, quietly: no Cancelled reaches the page
    assert next(newer) == "newer step 0" and costly.jobs.stats().running[0]["stopping"] is None
    newer.close()
    api_first, api_second = job("first", replace=False), job("second", replace=False)
    assert next(api_first) == "first step 0" and next(api_second) == "second waits"
    assert next(api_first) == "first step 1"  # not replaced
    api_first.close()
    assert next(api_second) == "second step 0"
    api_second.close()
    stopped = job("stopped")  # a Stop (any other reason) still reaches the page as Cancelled
    assert next(stopped) == "stopped step 0"
    costly.jobs.stop_caller(jobs.who(me), "it was stopped")
    with pytest.raises(Cancelled, match="it was stopped"):
        next(stopped)


def test_an_ipv6_caller_is_its_64_and_ipv4_its_address():
    """A host chooses any of its /64's 2^64 addresses: counted one by one, seven of them took every
    room on the server (the hostile caller's catch). One /64 is one site, as one IPv4 behind a NAT is."""
    a = jobs.caller_of(request("2001:db8:1:2::10", "s1"), hops=0)
    b = jobs.caller_of(request("2001:db8:1:2:ffff:1:2:3", "s2"), hops=0)
    assert a == b == "address 2001:db8:1:2::/64"
    assert jobs.caller_of(request("2001:db8:1:3::10", "s1"), hops=0) == "address 2001:db8:1:3::/64"
    assert jobs.caller_of(request("::ffff:192.0.2.7", "s1"), hops=0) == "address 192.0.2.7"  # v4-mapped: its v4
    assert jobs.caller_of(request("192.0.2.7", "s1"), hops=0) == "address 192.0.2.7"
    assert jobs.caller_of(request("10.0.0.2", "s1", "2001:db8::5"), hops=1) == "address 2001:db8::/64"  # via a proxy
    assert jobs.caller_of(request("testclient", "s1"), hops=0) == "address testclient"  # not an IP: as it is
