"""The faithfulness contest (vizvit/readings/contest.py): its runs against plain forwards, its steps
against the one batched run, its ranking and its reading of constructed AUCs."""

from __future__ import annotations

import numpy as np
import pytest
from tiny import EXAMPLES

import vizvit
from vizvit.model.images import View
from vizvit.readings import contest, perturb
from vizvit.session import PhotoKey, Workbench


def test_the_contest_as_export_runs_it_equals_one_plain_forward_per_masked_view(tiny16, cat):
    """compute_contest (both fills, every map and random order batched through engine.predict_batch, shared
    views run once) against a reference: each curve point as its own analyze() of the view with those
    patches filled (no batching, no sharing), for every contestant and two random orders at three steps;
    the progress callbacks see each fill's distinct views, in batches, up to all of them."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(EXAMPLES / "chelsea.jpg")))
    told: dict[str, list[tuple[int, int]]] = {}

    def progress(fill: str):
        return lambda done, total: told.setdefault(fill, []).append((done, total))

    c = contest.compute_contest(ph, progress=progress)
    base = ph.analysis()
    g = tiny16.geometry
    maps = {**contest.curve_maps(ph), **perturb.random_orders(g.grid, perturb.RANDOM_ORDERS, 0)}
    for part in (c.first, c.second):
        curves, band = part.curves, part.band
        fill, target = curves.mode, curves.target
        rows = {n: (curves.deletion[k], curves.insertion[k]) for k, n in enumerate(curves.names)}
        rows.update({n: (band.deletion[k], band.insertion[k]) for k, n in enumerate(band.names)})
        for name in [*curves.names, "random order 2", "random order 7"]:
            order = np.argsort(-np.asarray(maps[name], np.float64).ravel(), kind="stable")
            # A random order (the "random" map is order 1) inserts least-ranked first: n patches back = its
            # last n kept.
            inserted = order[::-1] if name.startswith("random") else order
            for s in (1, 4, 9):
                n = int(round(s / 10 * g.num_patches))
                for k, removed in ((0, order[:n]), (1, inserted[n:])):  # deletion, insertion
                    v = vizvit.analyze(tiny16, base.input_view, View(mask=tuple(int(i) for i in removed),
                                                                     mask_mode=fill))
                    assert abs(rows[name][k][s] - float(v.probs[target])) < 1e-5, (fill, name, s, k)
        # Read back, each random order's insertion curve is its deletion curve backwards (one set of views;
        # 196 patches: the counts are symmetric): equal AUCs, and the distinct views of a fill are 2 (intact,
        # empty) + 9 inner steps × (2 per map + 1 per order), the "random" map being order 1 (no ties).
        assert np.allclose(band.insertion, band.deletion[:, ::-1], atol=1e-6)
        assert np.allclose(band.insertion_auc, band.deletion_auc, atol=1e-6)
        assert part.forwards == 2 + 9 * (2 * (len(curves.names) - 1) + len(band.names)), part.forwards
        steps = told[fill]
        assert len(steps) > 1 and steps[-1] == (part.forwards, part.forwards), (fill, steps[-3:])
        assert all(a[0] < b[0] for a, b in zip(steps, steps[1:]))


def test_the_steps_end_in_the_contest_compute_contest_returns_and_cache_it(tiny16, cat):
    """contest_steps: nothing done first, then one step per map, the random orders, and the whole contest;
    its curves those of one batched run of every map (reference: perturb.faithfulness_curves); cached:
    compute_contest then runs nothing, and a second run is that one step."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(cat)))
    assert contest.peek_contest(ph, 3) is None
    first, *middle, last = list(contest.contest_steps(ph, 3, "black"))
    maps = contest.curve_maps(ph)
    assert first.curves is None and first.done == 0 and first.total == len(maps) + 2
    assert [s.done for s in middle] == list(range(1, len(maps) + 2)) and middle[-1].band is not None
    assert last.contest is not None and last.done == last.total
    whole = perturb.faithfulness_curves(tiny16, ph.analysis().input_view, maps, 3, "black",
                                        read_back=contest.read_back({}))
    assert last.contest.first.curves.names == whole.names
    assert np.allclose(last.contest.first.curves.deletion, whole.deletion, atol=1e-6)
    assert last.contest.second.curves.mode == "blur" and last.contest.second.curves.target == whole.target
    misses = wb.cache.misses
    assert contest.compute_contest(ph, 3) is last.contest is contest.peek_contest(ph, 3)
    assert wb.cache.misses == misses
    again = list(contest.contest_steps(ph, 3, "black"))
    assert len(again) == 1 and again[0].contest is last.contest


def test_contestants_rank_by_insertion_minus_deletion_and_the_band_replaces_random():
    f = np.linspace(0, 1, 3)
    dele = np.array([[1.0, 0.5, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])  # AUC 0.5, 0.25, 0.75
    ins = np.array([[0.0, 0.5, 1.0], [0.0, 0.5, 1.0], [0.0, 1.0, 1.0]])  # AUC 0.5, 0.5, 0.75
    c = perturb.Curves(("a", "random", "b"), f, dele, ins, 0, "cat", "black", 3)
    assert [n for n, _, _ in contest.contestants(c, None)] == ["random", "a", "b"]  # 0.25, 0, 0 (ties: order)
    band = perturb.Curves(("random order 1", "random order 2"), f, dele[:2], ins[:2], 0, "cat", "black", 2)
    ranked = contest.contestants(c, band)
    assert [n for n, _, _ in ranked] == [contest.RANDOM_ROW, "a", "b"]  # the one random map gone
    assert ranked[0][1:] == (0.375, 0.5)  # the orders' mean AUCs
    assert contest.second_fill("black") == "blur" and contest.second_fill("blur") == "black"


def test_beats_random_only_outside_the_band():
    band = perturb.spread([0.4, 0.5, 0.6])  # mean 0.5, sd 0.1
    s = contest.FillScore("black", ("in", "low", "high"), np.array([0.45, 0.3, 0.7]), np.array([0.55, 0.7, 0.3]),
                          band, band)
    assert contest.beats_random(s) == {"in": ("within", "within"), "low": ("better", "better"),
                                       "high": ("worse", "worse")}


def test_the_noise_is_the_random_orders_own_spread_and_scales_with_the_photo():
    # two orders' insertion − deletion differ by sqrt(2 (sd_del² + sd_ins²)): sd 0.1 on both curves -> 0.2
    band = perturb.spread([0.4, 0.5, 0.6])
    assert contest.score_noise(band, band) == pytest.approx(0.2)
    tiny = perturb.spread([0.004, 0.005, 0.006])  # the same photo's structure at a 1 % top-1
    assert contest.score_noise(tiny, tiny) == pytest.approx(0.002)


def test_tiers_part_neighbours_only_more_than_the_noise_apart():
    rows = [("a", 0.10, 0.50), ("b", 0.15, 0.50), ("c", 0.30, 0.40), ("r", 0.30, 0.30), ("d", 0.40, 0.20)]
    # insertion − deletion: 0.40, 0.35, 0.10, 0.00, -0.20; neighbours 0.05, 0.25, 0.10, 0.20 apart
    assert contest.tiers(rows, 0.12) == [["a", "b"], ["c", "r"], ["d"]]  # r is 0.10 below c, d 0.20 below r
    # Each within 0.26 of the next: one group. Counted from a group's first row (a, then c), c (0.30 below a)
    # and d (0.30 below c) began groups of their own, and the ranking wrote ">" between neighbours 0.25 and
    # 0.20 apart, less than the noise.
    assert contest.tiers(rows, 0.26) == [["a", "b", "c", "r", "d"]]
    assert contest.tiers(rows, 0.7) == [["a", "b", "c", "r", "d"]]  # one group: nothing told apart
    assert contest.tiers(rows, 0.0) == [["a"], ["b"], ["c"], ["r"], ["d"]]
