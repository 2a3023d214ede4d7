"""The random baseline (vizvit/methods/random_order.py): numpy's seeded uniform values, one per patch."""

from __future__ import annotations

import numpy as np
from synthetic import GEOMS, random_attention, stand_in_analysis

from vizvit.methods.random_order import RANDOM


def test_the_random_map_is_numpys_seeded_uniform_draw_over_the_grid():
    g = next(iter(GEOMS.values()))
    a = stand_in_analysis(g, random_attention(g))
    np.testing.assert_array_equal(RANDOM(None, a, seed=7), np.random.default_rng(7).random(g.grid))  # type: ignore[arg-type]
    assert not np.array_equal(RANDOM(None, a, seed=7), RANDOM(None, a, seed=8))  # type: ignore[arg-type]
    assert RANDOM.baseline and not RANDOM.needs_class
