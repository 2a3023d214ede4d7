"""Costly jobs (issue 42): the slots and the one-job-per-caller rule (vizvit.jobs),
the loops that stop between steps once their token is set, and attention flow refused up front."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

import vizvit
from vizvit import engine, explain, perturb
from vizvit.cancel import Cancel, Cancelled
from vizvit.errors import UserError
from vizvit.jobs import Jobs


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


def test_one_caller_runs_one_job_a_second_waits_then_is_refused_with_a_plain_message():
    jobs = Jobs(slots=2, same_caller_wait_s=0.3)
    release, out = threading.Event(), {}
    first = run_in_thread(jobs, "address 10.0.0.1", "attention flow", release, out)
    wait_until(lambda: out.get("attention flow") == "running")
    t0 = time.monotonic()
    with pytest.raises(UserError, match="Your attention flow is still running: wait for it to finish"):
        with jobs.hold("address 10.0.0.1", "shift sweep"):
            pytest.fail("a second job of the same caller must not start")
    assert time.monotonic() - t0 >= 0.3, "it waits for the first to end before refusing"
    with jobs.hold("address 10.0.0.2", "shift sweep"):  # another caller: the second slot
        assert [r["job"] for r in jobs.stats().running] == ["attention flow", "shift sweep"]
    release.set()
    first.join()
    assert out["attention flow"] == "done" and jobs.stats().running == []


def test_a_callers_second_job_starts_when_the_first_ends_within_the_wait():
    jobs = Jobs(slots=2, same_caller_wait_s=5.0)
    release, out = threading.Event(), {}
    first = run_in_thread(jobs, "address 10.0.0.1", "attention flow", release, out)
    wait_until(lambda: out.get("attention flow") == "running")
    threading.Timer(0.2, release.set).start()
    with jobs.hold("address 10.0.0.1", "shift sweep"):
        assert out["attention flow"] == "done"
    first.join()


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
