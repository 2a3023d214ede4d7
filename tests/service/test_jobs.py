"""Costly jobs (issue 42): the slots and the one-job-per-caller rule (vizvit.service.jobs),
the loops that stop between steps once their token is set, and attention flow refused up front."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import torch

import vizvit
from vizvit.cancel import Cancel, Cancelled
from vizvit.errors import UserError
from vizvit.methods import flow as explain
from vizvit.model import engine
from vizvit.readings import perturb
from vizvit.service.jobs import REPLACED, Caller, Jobs


def two_layer_attentions(n: int = 5) -> torch.Tensor:
    """(2, 1, n, n) row-stochastic attentions: a flow graph with n max-flows."""
    g = torch.Generator().manual_seed(0)
    return torch.softmax(torch.randn(2, 1, n, n, generator=g), -1)


# ------------------------------------------------------------------ slots and callers
def run_in_thread(jobs: Jobs, caller: str, what: str, release: threading.Event, out: dict) -> threading.Thread:
    def body() -> None:
        try:
            with jobs.hold(caller, what) as c:
                out[what] = "running"
                while not release.is_set():
                    c.check()
                    time.sleep(0.01)
            out[what] = "done"
        except UserError as e:
            out[what] = e

    t = threading.Thread(target=body, daemon=True)  # a broken rule must fail the test, not hang it
    t.start()
    return t


def wait_until(cond, timeout: float = 10.0) -> None:
    t0 = time.monotonic()
    while not cond():
        assert time.monotonic() - t0 < timeout, "timed out"
        time.sleep(0.01)


class Line:
    """Fake jobs in threads: each joins `jobs`' line, records when it starts, then runs until released."""

    def __init__(self, jobs: Jobs):
        self.jobs = jobs
        self.started: list[str] = []  # job names, in the order they got a slot
        self.release: dict[str, threading.Event] = {}
        self.tickets: dict[str, object] = {}
        self.errors: dict[str, BaseException] = {}
        self.threads: dict[str, threading.Thread] = {}

    def add(self, name: str, address: str, session: str = "") -> None:
        """Start job `name` of (address, session) and wait until it is running or in line."""
        self.release[name] = threading.Event()
        before = len(self.jobs.stats().waiting) + len(self.jobs.stats().running)

        def body() -> None:
            try:
                with self.jobs.line(Caller(address, session), name) as t:
                    self.tickets[name] = t
                    for _ in t.waiting():
                        pass
                    self.started.append(name)
                    while not self.release[name].wait(0.01):
                        t.cancel.check()
            except Exception as e:  # noqa: BLE001 - the test reads it
                self.errors[name] = e

        self.threads[name] = threading.Thread(target=body, daemon=True)  # a broken rule fails, never hangs
        self.threads[name].start()
        wait_until(lambda: name in self.errors or
                   len(self.jobs.stats().waiting) + len(self.jobs.stats().running) == before + 1)

    def end(self, name: str) -> None:
        self.release[name].set()
        self.threads[name].join(10)
        assert not self.threads[name].is_alive()

    def end_in_turn(self, first: str, n: int) -> None:
        """End `first`, then each job as it starts, until n more have started."""
        base = len(self.started)
        self.end(first)
        for i in range(n):
            wait_until(lambda i=i: len(self.started) > base + i)
            self.end(self.started[-1])


def test_the_line_takes_addresses_in_turn_not_first_come():
    jobs = Jobs(slots=1)
    line = Line(jobs)
    line.add("A0", "address A", "a0")  # runs: the hall behind address A was served last
    for name, addr, sess in [("A1", "A", "a1"), ("A2", "A", "a2"), ("A3", "A", "a3"), ("B1", "B", "b"),
                             ("C1", "C", "c")]:
        line.add(name, f"address {addr}", sess)
    assert line.started == ["A0"]
    assert [line.tickets[n].ahead() for n in ["B1", "C1", "A1", "A2", "A3"]] == [0, 1, 2, 3, 4]
    assert [w["ahead"] for w in jobs.stats().waiting] == [0, 1, 2, 3, 4]
    public = json.dumps(jobs.stats().as_json())
    assert not any(f"address {a}" in public for a in "ABC") and "\"a1\"" not in public, "/stats names no caller"
    line.end_in_turn("A0", 5)
    # First come would be A1, A2, A3, B1, C1: B and C waited behind the whole hall.
    assert line.started == ["A0", "B1", "C1", "A1", "A2", "A3"], line.started
    assert not line.errors


def test_one_addresses_sessions_take_turns_and_a_sessions_second_job_waits_behind_its_first():
    jobs = Jobs(slots=1)
    line = Line(jobs)
    line.add("s0", "address A", "s0")
    line.add("s1 first", "address A", "s1")
    line.add("s1 second", "address A", "s1")  # waits behind its own first, and behind the others' turns
    line.add("s2", "address A", "s2")
    line.add("s3", "address A", "s3")
    assert line.tickets["s1 second"].ahead() == 3 and line.tickets["s1 first"].ahead() == 0
    line.end_in_turn("s0", 4)
    assert line.started == ["s0", "s1 first", "s2", "s3", "s1 second"], line.started
    assert not line.errors


def test_a_sessions_newer_job_of_the_same_kind_replaces_its_older_ones_only_when_asked():
    """Attention flow chosen, then Compute: the page's newer request stops its older one of that kind,
    running or waiting; another kind, another session, a request without replace and a caller with no
    session stop nothing."""
    jobs = Jobs(slots=1)
    me = Caller("address A", "s1")
    with jobs.line(me, "attention flow") as running:
        assert running.started
        with jobs.line(Caller("address A", "s2"), "attention flow") as other_session, \
                jobs.line(me, "shift sweep") as other_kind, jobs.line(me, "attention flow") as waiting:
            assert not running.cancel.is_set() and not waiting.started  # no replace: both kept
            with jobs.line(me, "attention flow", replace=True) as newer:
                assert running.cancel.reason == waiting.cancel.reason == REPLACED
                assert not any(t.cancel.is_set() for t in (other_session, other_kind, newer))
                assert [w["job"] for w in jobs.stats().waiting if w["ahead"] is not None] == \
                    ["attention flow", "shift sweep", "attention flow"]  # the replaced one left the line
                with jobs.line(Caller("address A"), "attention flow", replace=True):
                    assert not newer.cancel.is_set()  # no session: nothing to replace
    # A refused newer job replaces nothing; the one it replaces leaves room for it in a full line.
    full = Jobs(slots=1, line_total=1)
    with full.line(me, "attention flow") as mine, full.line(Caller("address C", "c"), "shift sweep"):
        with pytest.raises(UserError, match="full"):
            with full.line(me, "attention flow", replace=True):
                pass
        assert not mine.cancel.is_set()
    full = Jobs(slots=1, line_per_address=1)
    with full.line(Caller("address B", "t0"), "shift sweep"), full.line(me, "attention flow") as mine:
        with full.line(me, "attention flow", replace=True) as newer:  # in address A's one place, mine's
            assert mine.cancel.reason == REPLACED and not newer.cancel.is_set()


def test_six_callers_behind_one_address_all_get_their_job():
    """Issue 50: four to six students behind one NAT start the sweep at once; none is refused."""
    jobs = Jobs(slots=2)
    line = Line(jobs)
    for i in range(6):
        line.add(f"student {i}", "address 10.0.0.1", f"s{i}")
    wait_until(lambda: len(line.started) == 2)
    assert not line.errors
    for i in range(6):
        wait_until(lambda i=i: len(line.started) > i)
        line.end(line.started[i])
    assert sorted(line.started) == [f"student {i}" for i in range(6)] and not line.errors


def test_an_address_keeps_its_fair_share_of_the_slots_while_another_waits_and_every_slot_when_alone():
    jobs = Jobs(slots=3)
    line = Line(jobs)
    line.add("A1", "address A", "a1")
    line.add("A2", "address A", "a2")  # nobody else waits: A takes a second slot
    line.add("B1", "address B", "b1")
    assert line.started == ["A1", "A2", "B1"]
    line.add("A3", "address A", "a3")
    line.add("B2", "address B", "b2")
    assert line.tickets["A3"].ahead() == 0  # A was served before B: first in line
    line.end("B1")
    wait_until(lambda: len(line.started) == 4)
    # ...but A holds 2 of 3 slots, over its share (3 // 2 addresses = 1) while B waits: B2 goes first.
    assert line.started[3] == "B2", line.started
    line.end("A1")
    wait_until(lambda: len(line.started) == 5)
    assert line.started[4] == "A3"
    for n in ["A2", "B2"]:
        line.end(n)
    line.add("A4", "address A", "a4")
    line.add("A5", "address A", "a5")  # alone again: every free slot
    assert [r["job"] for r in jobs.stats().running] == ["A3", "A4", "A5"]
    for n in ["A3", "A4", "A5"]:
        line.end(n)
    assert not line.errors


def test_the_line_is_bounded_per_address_and_overall_with_a_plain_sentence():
    jobs = Jobs(slots=1, line_per_address=2, line_total=3)
    line = Line(jobs)
    line.add("run", "address A", "a0")
    line.add("A1", "address A", "a1")
    line.add("A2", "address A", "a2")
    with pytest.raises(UserError, match=r"Too many costly jobs from your network are waiting \(2\)"):
        with jobs.hold(Caller("address A", "a3"), "shift sweep"):
            pytest.fail("past its address's bound a job must not wait")
    line.add("B1", "address B", "b1")
    t0 = time.monotonic()
    with pytest.raises(UserError, match=r"line for costly jobs is full \(3 waiting\): try the shift sweep again"):
        with jobs.hold(Caller("address C", "c"), "shift sweep"):
            pytest.fail("past the overall bound a job must not wait")
    assert time.monotonic() - t0 < 5.0, "refused at once, not after a wait"
    assert jobs.stats().recent[0]["outcome"].startswith("refused: The server's line")
    for n in ["run", "B1", "A1", "A2"]:  # B was never served: before the rest of A
        wait_until(lambda n=n: n in line.started)
        line.end(n)
    assert not line.errors


def test_a_job_cancelled_while_it_waits_leaves_the_line_and_those_behind_move_up():
    jobs = Jobs(slots=1)
    line = Line(jobs)
    line.add("run", "address A", "a")
    line.add("B", "address B", "b")
    line.add("C", "address C", "c")
    assert line.tickets["C"].ahead() == 1
    line.tickets["B"].cancel.set("nobody reads its answer")
    line.threads["B"].join(5)
    assert isinstance(line.errors["B"], Cancelled) and "nobody reads its answer" in str(line.errors["B"])
    assert line.tickets["C"].ahead() == 0
    assert jobs.stats().recent[0]["outcome"] == "not started: nobody reads its answer"
    line.end("run")
    wait_until(lambda: line.started == ["run", "C"])
    line.end("C")


def test_jobs_past_the_slots_wait_in_line_shown_in_stats_and_a_waiting_caller_can_leave():
    jobs = Jobs(slots=1, limits={"attention flow": 600.0}, default_limit_s=120.0)
    release, out = threading.Event(), {}
    first = run_in_thread(jobs, "address 10.0.0.1", "attention flow", release, out)
    wait_until(lambda: out.get("attention flow") == "running")
    second = run_in_thread(jobs, "address 10.0.0.2", "shift sweep", release, out)
    wait_until(lambda: len(jobs.stats().waiting) == 1)
    st = jobs.stats().as_json()
    assert st["slots"] == 1 and st["limits_s"] == {"attention flow": 600.0, "other": 120.0}
    assert [r["job"] for r in st["running"]] == ["attention flow"] and st["running"][0]["limit_s"] == 600.0
    assert [w["job"] for w in st["waiting"]] == ["shift sweep"] and "shift sweep" not in out
    assert jobs.stop_caller("address 10.0.0.2") == 1  # it leaves while waiting
    second.join(5)
    assert isinstance(out["shift sweep"], Cancelled) and jobs.stats().waiting == []
    assert jobs.stop_caller("address 10.0.0.1") == 1  # the running one: stops at its next check
    first.join(5)
    recent = jobs.stats().recent
    assert recent[0]["job"] == "attention flow" and recent[0]["outcome"] == "stopped: the caller left"
    assert recent[0]["stop_s"] is not None and recent[0]["stop_s"] < 1.0


def test_a_job_gets_its_kinds_limit_counted_from_its_start():
    jobs = Jobs(slots=1, limits={"attention flow": 0.05}, default_limit_s=60.0)
    with jobs.hold("address 10.0.0.1", "shift sweep") as c:
        assert c.limit_s == 60.0
    with pytest.raises(Cancelled, match="limit"):
        with jobs.hold("address 10.0.0.1", "attention flow") as c:
            time.sleep(0.1)
            c.check()
    assert jobs.stats().recent[0]["outcome"].startswith("stopped: it ran past its limit")


# ------------------------------------------------------------------ the loops stop between steps
def test_a_set_token_stops_attention_flow_between_max_flows():
    att = two_layer_attentions(6)
    cancel = Cancel()
    steps = explain.attention_flow_steps(att, cancel=cancel, speed=explain.FlowSpeed())
    assert next(steps).done == 1 and next(steps).done == 2
    cancel.set("the caller left")
    with pytest.raises(Cancelled, match="the caller left"):
        next(steps)
    with pytest.raises(Cancelled):  # between the graph's layers, before any max-flow
        list(explain.attention_flow_steps(att, cancel=cancel, speed=explain.FlowSpeed()))


def test_a_set_token_stops_the_sweep_and_the_head_runs_between_batches(tiny16, cat):
    view = vizvit.analyze(tiny16, cat).input_view
    cancel = Cancel()
    steps = perturb.shift_sweep_steps(tiny16, view, "edge", chunk=4, cancel=cancel)
    first = next(steps)
    assert len(first.rows) == 4 and not first.done
    cancel.set("the caller left")
    with pytest.raises(Cancelled):
        next(steps)
    heads = engine.zeroed_head_chunks(tiny16, view, [(0, 0), (0, 1), (1, 0), (1, 1)], chunk=1, cancel=cancel)
    with pytest.raises(Cancelled):
        next(heads)
    with pytest.raises(Cancelled):
        perturb.faithfulness_curves(tiny16, view, {"a": np.ones(tiny16.geometry.grid)}, 2, cancel=cancel)


# ------------------------------------------------------------------ attention flow refused up front
def test_attention_flow_is_refused_up_front_when_the_measured_speed_cannot_finish_it_in_its_limit():
    vit_ti = (12, 3, 197, 197)
    speed = explain.FlowSpeed(build_s_per_edge=2e-5, flow_s_per_edge=7.5e-6, measured=True)
    est = speed.estimate(vit_ti)
    # (11·197² + 197) edges, built once, then one max-flow per token: about 10 min at this speed.
    assert est == pytest.approx((11 * 197 ** 2 + 197) * (2e-5 + 197 * 7.5e-6))
    with pytest.raises(UserError, match=rf"about {est / 60:.0f} min as measured on this server, over its limit "
                                        rf"of 5 min\. Use a smaller model, such as openai/clip-vit-base-patch32"):
        explain.check_flow_time(vit_ti, 300.0, speed)
    assert explain.check_flow_time(vit_ti, 900.0, speed) == est
    assert explain.check_flow_time(vit_ti, None, speed) == est  # no limit: never refused for time
    slow = explain.FlowSpeed(build_s_per_edge=1.0, flow_s_per_edge=1.0)
    t0 = time.perf_counter()
    with pytest.raises(UserError, match="smaller model"):  # before the graph is built
        next(explain.attention_flow_steps(two_layer_attentions(5), cancel=Cancel(limit_s=10.0), speed=slow))
    assert time.perf_counter() - t0 < 5.0


def test_a_hall_of_fifty_behind_one_address_all_get_in_line_and_strangers_still_do():
    """An audit: 40 students behind one NAT each ran the sweep on their own photo; 6 were refused (32
    waiting per address). Every student is a session of one address."""
    jobs = Jobs()
    line = Line(jobs)
    for k in range(50):
        line.add(f"s{k}", "address campus", f"student{k}")
    for k in range(16):
        line.add(f"x{k}", f"address stranger{k}", "x")
    with pytest.raises(UserError, match=r"line for costly jobs is full"):
        with jobs.hold(Caller("address late", "y"), "shift sweep"):
            pytest.fail("past the overall bound a job must not wait")
    assert not line.errors
    for k in range(50):
        line.tickets[f"s{k}"].cancel.set("done")
    for k in range(16):
        line.tickets[f"x{k}"].cancel.set("done")
