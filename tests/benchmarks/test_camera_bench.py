"""benchmarks/camera.py's growing-lag check (lag_steady) on constructed runs: a queue that builds is a
growing lag, a step from one frame on its way to two is not."""

from __future__ import annotations

import sys

import pytest
from tiny import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
camera = pytest.importorskip("camera")


@pytest.mark.parametrize("first, last, rate, in_flight, grows", [
    (60, 70, 17.0, 2, False),    # steady
    (60, 100, 17.0, 2, False),   # one frame on its way, then two: 1.7x, within 3 intervals (176 ms)
    (60, 400, 17.0, 2, True),    # a queue that builds: 6.7x, past 3 intervals
    (60, 190, 17.0, 2, True),    # just past the bound
    (200, 320, 4.0, 2, False),   # a slow model: 1.6x, within 3 intervals of 250 ms
    (200, 280, 4.0, 2, False),   # within 1.5x
    (60, 400, 0.0, 2, True),     # nothing painted: no rate to bound by
    (float("nan"), float("nan"), 0.0, 2, True),  # nothing measured: a miss, never a pass
])
def test_a_growing_lag_is_a_queue_not_a_step_to_two_frames(first, last, rate, in_flight, grows):
    assert camera.lag_steady(first, last, rate, in_flight) is not grows
