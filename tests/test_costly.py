"""Who a caller is (page/kit.py, issue 42): its network address, X-Forwarded-For only behind trusted
proxies, the session only where there is no address; one costly job per caller across sessions."""

from __future__ import annotations

import threading
import time

import gradio as gr
import pytest

from page import kit
from vizvit.errors import UserError
from vizvit.jobs import Jobs


def request(host: str | None, session: str, forwarded: str | None = None) -> gr.Request:
    headers = {"x-forwarded-for": forwarded} if forwarded else {}
    return gr.Request(session_hash=session, client={"host": host, "port": 1234}, headers=headers)


def test_a_caller_is_its_address_whatever_its_session():
    assert kit.caller_of(request("192.0.2.7", "s1"), hops=0) == kit.caller_of(request("192.0.2.7", "s2"), hops=0) \
        == "address 192.0.2.7"
    assert kit.caller_of(request("192.0.2.8", "s1"), hops=0) == "address 192.0.2.8"
    assert kit.caller_of(request(None, "s9"), hops=0) == "session s9"  # no address: the session
    assert kit.caller_of(None) is None


def test_x_forwarded_for_counts_only_behind_a_trusted_proxy_and_only_the_entry_it_wrote():
    # No trusted proxy: a header anyone can send changes nothing.
    assert kit.caller_of(request("192.0.2.7", "s1", "203.0.113.5"), hops=0) == "address 192.0.2.7"
    # One proxy (a Space, deploy/'s nginx): the entry it appended, not what the client wrote before it.
    assert kit.caller_of(request("10.0.0.2", "s1", "198.51.100.9, 203.0.113.5"), hops=1) == "address 203.0.113.5"
    assert kit.caller_of(request("10.0.0.2", "s1", "198.51.100.9, 203.0.113.5"), hops=2) == "address 198.51.100.9"
    # Behind the proxy without the header (no client address known): the session, never the proxy's.
    assert kit.caller_of(request("10.0.0.2", "s1"), hops=1) == "session s1"


def test_proxy_hops_trusts_a_space_or_the_flag(monkeypatch):
    monkeypatch.delenv(kit.PROXY_HOPS_ENV, raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert kit.proxy_hops() == 0
    monkeypatch.setenv("SPACE_ID", "someone/vizvit")
    assert kit.proxy_hops() == 1
    monkeypatch.setenv(kit.PROXY_HOPS_ENV, "2")
    assert kit.proxy_hops() == 2
    monkeypatch.setenv(kit.PROXY_HOPS_ENV, "yes")
    assert kit.proxy_hops() == 0  # not a number: trust no proxy (logged)


def test_same_address_two_sessions_one_costly_job(monkeypatch):
    monkeypatch.delenv(kit.PROXY_HOPS_ENV, raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    jobs = kit.CostlyJobs(Jobs(slots=2, same_caller_wait_s=0.2))
    started, release = threading.Event(), threading.Event()

    def first() -> None:
        with jobs.hold(request("192.0.2.7", "page-session"), "attention flow") as c:
            started.set()
            while not release.is_set():
                c.check()
                time.sleep(0.01)

    t = threading.Thread(target=first)
    t.start()
    assert started.wait(10)
    with pytest.raises(UserError, match="Your attention flow is still running"):
        with jobs.hold(request("192.0.2.7", "new-rest-session"), "shift sweep"):
            pytest.fail("a new session from the same address must not take the second slot")
    with jobs.hold(request("192.0.2.8", "other"), "shift sweep") as c:  # another address: runs
        assert c.limit_s == jobs.jobs.limit_of("shift sweep")
    release.set()
    t.join(10)
    with jobs.hold(None, "shift sweep") as c:  # a direct call (no request): not counted, still limited
        assert c.limit_s == jobs.jobs.limit_of("shift sweep") and jobs.jobs.stats().running == []
