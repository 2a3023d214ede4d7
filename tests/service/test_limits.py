"""vizvit.service.limits with a fake clock: bursts, refill, the wait a refusal names, bounded memory.
Expected numbers written by hand from the rate (burst, per_s)."""

from __future__ import annotations

import threading

import pytest

from vizvit.service.limits import Limiter, Rate, Recent, Verdict


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_burst_then_refusals_that_name_the_wait():
    clock = Clock()
    lim = Limiter(Rate(burst=20, per_s=1.0), clock=clock)
    assert all(lim.spend("a").ok for _ in range(20))
    refused = lim.spend("a")
    assert refused == Verdict(False, 1.0) and refused.wait_whole_s == 1
    clock.t += 0.25
    refused = lim.spend("a")  # a refusal spends nothing: the wait shrinks with time alone
    assert not refused.ok and refused.wait_s == pytest.approx(0.75) and refused.wait_whole_s == 1


def test_the_bucket_refills_at_its_rate_and_never_past_its_burst():
    clock = Clock()
    lim = Limiter(Rate(burst=3, per_s=0.5), clock=clock)
    for _ in range(3):
        assert lim.spend("a").ok
    clock.t += 2.0  # one token back (0.5 a second)
    assert lim.spend("a").ok and not lim.spend("a").ok
    assert lim.check("a").wait_s == pytest.approx(2.0)
    clock.t += 3600  # an hour idle: full again, but only to 3
    assert [lim.spend("a").ok for _ in range(4)] == [True, True, True, False]


def test_addresses_have_their_own_buckets():
    lim = Limiter(Rate(burst=2, per_s=1.0), clock=Clock())
    assert lim.spend("a").ok and lim.spend("a").ok and not lim.spend("a").ok
    assert lim.spend("b").ok  # another address is unaffected


def test_check_spends_nothing_and_a_cost_above_one():
    lim = Limiter(Rate(burst=5, per_s=1.0), clock=Clock())
    assert all(lim.check("a").ok for _ in range(10))
    assert lim.spend("a", cost=4).ok
    got = lim.spend("a", cost=4)
    assert not got.ok and got.wait_s == pytest.approx(3.0)


def test_memory_is_bounded_by_max_keys_and_by_refill():
    clock = Clock()
    lim = Limiter(Rate(burst=2, per_s=1.0), max_keys=100, clock=clock)
    for i in range(10_000):  # a stranger with ten thousand addresses
        lim.spend(f"10.0.{i // 256}.{i % 256}")
    assert len(lim) == 100
    clock.t += 1.0  # every bucket refilled (one token a second): as good as none
    lim.spend("x")
    assert len(lim) == 1


def test_the_least_recently_used_bucket_goes_first():
    clock = Clock()
    lim = Limiter(Rate(burst=1, per_s=0.001), max_keys=2, clock=clock)
    lim.spend("a")
    lim.spend("b")
    lim.spend("c")  # "a" is dropped: its debt is forgotten
    assert lim.spend("a").ok
    assert not lim.spend("c").ok


def test_threads_never_spend_more_than_the_burst():
    lim = Limiter(Rate(burst=50, per_s=1e-9), clock=Clock())
    got: list[bool] = []

    def spend() -> None:
        for _ in range(100):
            got.append(lim.spend("a").ok)

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(got) == 50 and len(got) == 800


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError):
        Rate(burst=0, per_s=1)
    with pytest.raises(ValueError):
        Rate(burst=1, per_s=0)
    with pytest.raises(ValueError):
        Limiter(Rate(1, 1), max_keys=0)


def test_recent_remembers_its_last_keys_only():
    seen: Recent[str] = Recent(3)
    assert seen.add("a") and not seen.add("a")
    for k in "bcd":
        seen.add(k)
    assert "a" not in seen and all(k in seen for k in "bcd") and len(seen) == 3
    seen.add("b")  # seen again: now the newest
    seen.add("e")
    assert "b" in seen and "c" not in seen
