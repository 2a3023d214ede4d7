"""The last layer's raw attention (vizvit/methods/last_layer.py) on a constructed attention with a known answer."""

from __future__ import annotations

import numpy as np
from synthetic import GEOMS, pointing_attention, random_attention, stand_in_analysis

from vizvit.methods.last_layer import LAST_LAYER


def test_the_last_layer_map_is_the_summary_row_of_the_last_attention_mean_over_heads():
    g = next(iter(GEOMS.values()))
    patch = 5
    att = random_attention(g, seed=2)
    att[-1] = pointing_attention(g, g.num_prefix_tokens + patch)[-1]  # the last layer: 0.9 on that patch
    a = stand_in_analysis(g, att)
    m = LAST_LAYER(None, a)  # type: ignore[arg-type]
    assert m.shape == g.grid
    assert np.unravel_index(np.argmax(m), g.grid) == np.unravel_index(patch, g.grid)
    want = a.attentions[-1].mean(0)[0, g.num_prefix_tokens:].reshape(g.grid).numpy()
    np.testing.assert_allclose(m, want, rtol=1e-6)
