"""vizvit.readings.compare: the layers a relative-depth cursor names, and the numbers the verdict compares,
against plain loops and constructed maps whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vizvit.readings import compare as cmp


@pytest.mark.parametrize("L1, L2", [(12, 12), (12, 24), (2, 12), (6, 40), (24, 12), (1, 7)])
def test_the_cursor_names_each_models_layer_by_relative_depth(L1, L2):
    D = max(L1, L2)
    for t in range(1, D + 1):
        for L in (L1, L2):
            # the smallest layer l with l/L >= t/D: a plain search, no ceil
            expected = next(l for l in range(1, L + 1) if l * D >= t * L)
            assert cmp.matched_layer(t, D, L) == expected
            assert cmp.layer_at_depth(t / D, L) == expected, (t, D, L)  # the API's float depth: the same layer
    assert cmp.matched_layer(D, D, L1) == L1 and cmp.matched_layer(D, D, L2) == L2  # last meets last
    with pytest.raises(ValueError):
        cmp.matched_layer(0, D, L1)


def test_equal_depths_meet_layer_for_layer_and_heads_map_alike():
    assert [cmp.matched_layer(t, 12, 12) for t in range(1, 13)] == list(range(1, 13))
    assert [cmp.matched_head(k, 12, 3) for k in range(1, 13)] == [1] * 4 + [2] * 4 + [3] * 4


def test_map_cosine_of_constructed_maps():
    rng = np.random.default_rng(0)
    a = rng.random((14, 14))
    assert cmp.map_cosine(a, 3 * a) == pytest.approx(1.0)
    one_hot = np.zeros((14, 14))
    one_hot[2, 3] = 1
    other = np.zeros((14, 14))
    other[9, 9] = 1
    assert cmp.map_cosine(one_hot, other) == pytest.approx(0.0)
    # a 7×7 map blown up 2×2 is the same map on the 14×14 grid: the coarse one is resampled to it
    coarse = rng.random((7, 7))
    fine = np.kron(coarse, np.ones((2, 2)))
    assert cmp.common_grid((7, 7), (14, 14)) == (14, 14)
    x, y = cmp.on_grid(coarse, (14, 14)).ravel(), fine.ravel()
    assert cmp.map_cosine(coarse, fine) == pytest.approx(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)))
    assert math.isnan(cmp.map_cosine(np.zeros((4, 4)), a[:4, :4]))


def test_the_centred_cosine_is_pearsons_r():
    rng = np.random.default_rng(1)
    a, b = rng.random((8, 8)), rng.random((8, 8))
    assert cmp.centred_cosine(a, b) == pytest.approx(np.corrcoef(a.ravel(), b.ravel())[0, 1], abs=1e-6)  # float32 maps
    assert cmp.centred_cosine(a, 2 * a + 5) == pytest.approx(1.0)
    assert cmp.centred_cosine(a, -a) == pytest.approx(-1.0)
    # two near-uniform maps: a large plain cosine, whatever their pattern
    u, v = 1 + 0.01 * a, 1 + 0.01 * b
    assert cmp.map_cosine(u, v) > 0.99 and abs(cmp.centred_cosine(u, v)) < 0.5


def test_share_to_sums_the_rows_weight_on_those_patches():
    row = np.array([0.4, 0.1, 0.2, 0.05, 0.05, 0.2])  # 2 prefix tokens, then a 2×2 grid
    cells = np.array([[True, False], [False, True]])
    assert cmp.share_to(row, 2, cells) == pytest.approx(0.2 + 0.2)
