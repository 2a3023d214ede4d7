"""The rollout record (vizvit/methods/rollout.py) against a plain rollout of the summary's row."""

from __future__ import annotations

import numpy as np
import torch
from synthetic import GEOMS, random_attention, stand_in_analysis

from vizvit.methods.rollout import ROLLOUT


def test_the_rollout_map_is_the_summary_row_of_the_plain_mean_rollout():
    g = GEOMS["g7"]
    att = random_attention(g, seed=5)
    a = stand_in_analysis(g, att)
    n = g.seq_len
    r = torch.eye(n, dtype=torch.float64)
    for layer in att.double():  # Abnar & Zuidema: Â = (mean_h A + I) / rowsum, R ← Â·R
        m = layer.mean(0) + torch.eye(n, dtype=torch.float64)
        r = (m / m.sum(-1, keepdim=True)) @ r
    want = r[0, g.num_prefix_tokens:].reshape(g.grid).numpy()
    np.testing.assert_allclose(ROLLOUT(None, a), want, rtol=1e-5, atol=1e-7)  # type: ignore[arg-type]
