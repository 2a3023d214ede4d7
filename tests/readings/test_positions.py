"""The Positions tab's readings (vizvit/readings/positions.py): the report and the interpolated table
against plain loops over the model's own table, cached once per model; the bias contrast of a
constructed table; the prediction at another size cached per photo."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import torch

from vizvit.model import engine, positional
from vizvit.readings import positions as rp
from vizvit.session import PhotoKey, Workbench


def cos(u: np.ndarray, v: np.ndarray) -> float:
    return float(np.dot(u, v) / (math.sqrt(np.dot(u, u)) * math.sqrt(np.dot(v, v))))


def test_the_report_is_the_pair_loops_and_is_computed_once_per_model(tiny, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    per_model = partial(wb.per_model, tiny.id)
    r = rp.report(tiny, per_model)
    t = tiny.model.vit.embeddings.position_embeddings.detach()[0].numpy().astype(np.float64)  # [CLS] is row 0
    P = tiny.geometry.num_patches
    ref = np.array([[cos(t[1 + i], t[1 + j]) for j in range(P)] for i in range(P)])
    np.testing.assert_allclose(r.sim, ref, atol=1e-5)
    misses = wb.cache.misses
    ph = wb.handle(PhotoKey(tiny.id, wb.add_photo(cat)))
    assert rp.report(tiny, ph.per_model) is r and wb.cache.misses == misses  # the photo's handle: the same entry


def test_the_table_at_another_size_is_the_models_own_interpolation(tiny):
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    g = tiny.geometry
    at = rp.at_size(tiny, 384, partial(wb.per_model, tiny.id))
    new = positional.grid_at(g, 384)
    with torch.no_grad():  # reference: HF's own interpolate_pos_encoding
        ref = tiny.vit.embeddings.interpolate_pos_encoding(torch.zeros(1, 1 + new[0] * new[1], g.hidden_size),
                                                           384, 384)[0, g.num_prefix_tokens:].double().numpy()
    assert at.grid == new and at.sim.shape == (new[0] * new[1],) * 2
    for i, j in ((0, 1), (3, 7), (20, new[0] * new[1] - 1)):
        assert abs(at.sim[i, j] - cos(ref[i], ref[j])) < 1e-5
    gh, gw = new
    pairs = [(r * gw + c, (r + dr) * gw + c + dc) for r in range(gh) for c in range(gw)
             for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)) if 0 <= r + dr < gh and 0 <= c + dc < gw]
    near = np.mean([cos(ref[i], ref[j]) for i, j in pairs])  # every ordered 4-neighbour pair
    assert abs(near - at.contrast.neighbour) < 1e-5
    assert rp.stored_grid(tiny) == g.grid


def test_the_bias_contrast_of_a_constructed_table():
    """A 3×3 grid: offsets −2..2 in each direction; a table of value 10·|Δrow| + |Δcol| makes the offset
    (0, 0) mean 0, the 4 neighbours' mean (1 + 1 + 10 + 10) / 4, and no offset ≥ FAR apart."""
    d = np.arange(-2, 3)
    table = (10 * np.abs(d)[:, None] + np.abs(d)[None, :]).astype(np.float32)  # (5, 5)
    tables = np.stack([np.stack([table, 3 * table])])  # (1 layer, 2 heads, 5, 5): mean of heads 2·table
    rb = positional.RelativeBias(tables, np.zeros((1, 2, 3), np.float32), shared=True)
    got = rp.bias_contrast(rb, (3, 3))
    assert got.shape == (1, 3) and got[0, 0] == 0 and got[0, 1] == 2 * 5.5
    assert (np.isnan(got[0, 2]) if positional.FAR > 2 else got[0, 2] > got[0, 1])


def test_the_prediction_at_another_size_is_one_forward_cached_per_photo(tiny, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    ph = wb.handle(PhotoKey(tiny.id, wb.add_photo(cat)))
    p = rp.predict_at(ph, 384)
    np.testing.assert_allclose(p.probs, engine.predict_at_size(tiny, cat, 384).probs, atol=1e-5)
    assert rp.predict_at(ph, 384) is p
