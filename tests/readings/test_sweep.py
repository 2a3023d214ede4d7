"""The shift sweep (vizvit/readings/sweep.py): streamed and whole, one cached entry, each row against a
plain forward of the shifted view; the CNN's column only when the app has a CNN."""

from __future__ import annotations

import numpy as np
import pytest

import vizvit
from vizvit.errors import UserError
from vizvit.model.images import View
from vizvit.readings import sweep
from vizvit.session import PhotoKey, Workbench


def test_the_streamed_sweep_grows_to_the_whole_one_and_is_cached_once(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(cat)))
    steps = list(sweep.sweep_steps(ph, chunk=8))
    p = tiny16.geometry.patch_size
    assert len(steps) > 1 and [len(s.rows) for s in steps] == sorted(len(s.rows) for s in steps)
    last = steps[-1]
    assert last.done and [r.k for r in last.rows] == list(range(2 * p + 1))
    base = vizvit.analyze(tiny16, cat)
    top1 = base.top5[0].index
    for k in (0, 5, p):  # reference: each shifted view alone, a plain forward
        a = vizvit.analyze(tiny16, base.input_view, View(dx=k, dy=0, fill="edge"))
        assert abs(last.rows[k].base_class_prob - float(a.probs[top1])) < 1e-5
        assert last.rows[k].top1_label == a.top5[0].label
    assert last.rows[p].min_cos > 0.9999  # a whole patch: every compared patch is the same
    misses = wb.cache.misses
    assert sweep.full_sweep(ph) is last and wb.cache.misses == misses  # the same entry: nothing run
    assert list(sweep.sweep_steps(ph)) == [last]  # the cached one alone
    assert sweep.cnn_probs(ph, [0, 1]) is None  # no CNN in this app


def test_the_whole_sweep_tells_its_progress_and_equals_the_streamed_one(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(cat)))
    told: list[tuple[int, int]] = []
    whole = sweep.full_sweep(ph, progress=lambda done, total: told.append((done, total)))
    assert told[-1] == (whole.total, whole.total) and all(a[0] < b[0] for a, b in zip(told, told[1:]))
    other = Workbench(device="cpu")
    other.add_model(tiny16)
    streamed = list(sweep.sweep_steps(other.handle(PhotoKey(tiny16.id, other.add_photo(cat)))))[-1]
    assert np.allclose(whole.array(), streamed.array(), atol=1e-6)


def test_the_sweep_runs_under_the_fill_it_is_given_each_cached_apart(tiny16, cat):
    """The tab's fill control said wrap and the sweep ran under edge whatever it said (a walk-through): the sweep
    now takes the fill, each row a plain forward of the view shifted under that fill, cached apart from edge's."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(cat)))
    wrapped = sweep.full_sweep(ph, fill="wrap")
    base = vizvit.analyze(tiny16, cat)
    top1 = base.top5[0].index
    for k in (3, 9):  # reference: the view rolled k px right (wrap), a plain forward
        a = vizvit.analyze(tiny16, base.input_view, View(dx=k, dy=0, fill="wrap"))
        assert abs(wrapped.rows[k].base_class_prob - float(a.probs[top1])) < 1e-5
        assert np.array_equal(a.input_view, np.roll(base.input_view, k, axis=1)), "wrap: the pixels rolled"
    assert ph.peek(sweep.sweep_name("wrap")) is wrapped and ph.peek(sweep.SHIFT_SWEEP) is None, "edge's not run"
    edge = sweep.full_sweep(ph)
    assert not np.allclose(edge.array(), wrapped.array()), "the two fills give other views, other numbers"
    with pytest.raises(UserError, match="one of edge, wrap, constant"):
        sweep.full_sweep(ph, fill="mirror")
