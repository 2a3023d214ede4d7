"""vizvit.views.books: the page's map and query books hold, for constructed attentions, the maps a
plain numpy reading gives (every head, then the heads fused), as the colour-table rows
render.color_index paints them, and each query's colour range leaves that query out."""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json

import numpy as np
import pytest
import torch
from synthetic import GEOMS, StandInModel, random_attention, stand_in_analysis

from vizvit.pictures import render
from vizvit.readings.attention import AttnParams
from vizvit.views import books


@pytest.fixture(params=list(GEOMS))
def case(request):
    g = GEOMS[request.param]
    att = random_attention(g, seed=5)
    return g, att.numpy(), stand_in_analysis(g, att)


def test_the_map_book_holds_every_head_then_each_fusion(case):
    g, att, a = case
    pre = g.num_prefix_tokens
    book = books.map_book(StandInModel(g), a, AttnParams())
    cls = att[:, :, 0, pre:].reshape(g.num_layers, g.num_heads, *g.grid)  # [CLS]'s row of every head
    want = np.concatenate([cls, cls.mean(1, keepdims=True), cls.max(1, keepdims=True), cls.min(1, keepdims=True)], 1)
    np.testing.assert_allclose(book.maps, want, atol=1e-6)
    # "0 to max": each map's range is 0 .. its own max (no artifacts in a stand-in: equal norms).
    np.testing.assert_allclose(book.lo_hi[..., 1], want.reshape(*want.shape[:2], -1).max(-1), rtol=1e-6)
    assert (book.lo_hi[..., 0] == 0).all()
    page = json.loads(books.book_for_page(book, a.input_view, g))
    index = np.frombuffer(base64.b64decode(page["index"]), np.uint8).reshape(want.shape)
    l, k = g.num_layers - 1, g.num_heads  # the last layer's mean
    np.testing.assert_array_equal(index[l, k], render.color_index(want[l, k], 0.0, float(want[l, k].max())))
    assert (page["layers"], page["heads"], page["fusions"]) == (g.num_layers, g.num_heads, ["mean", "max", "min"])


def test_each_query_range_leaves_that_query_out(case):
    g, att, _ = case
    pre = g.num_prefix_tokens
    n = np.arange(pre, g.seq_len)
    att = att.copy()
    att[1, 0, n, n] += 1.0  # each patch attends most to itself (as rollout does): that must not set its range
    a = stand_in_analysis(g, torch.from_numpy(att))
    p = AttnParams(layer=2, show="one head", head=1)
    qb = books.query_book(a, p)
    patches = att[1, 0, pre:, pre:]  # (P, P): patch i's row is its map
    for i in (0, 7, patches.shape[0] - 1):
        others = np.delete(patches[i], i)
        assert qb.lo_hi[i, 0] == 0.0 and qb.lo_hi[i, 1] == pytest.approx(others.max(), rel=1e-6)
        np.testing.assert_array_equal(qb.index[i], render.color_index(patches[i].reshape(g.grid), 0.0, qb.lo_hi[i, 1]))
    # The fixed scale: 0 .. the largest weight of that query's row in any layer and head, itself left out.
    fixed = books.query_book(a, dataclasses.replace(p, scale="fixed across layers and heads"))
    rows = att[:, :, pre:, pre:].astype(np.float32)  # (L, H, P, P)
    for i in (0, 7, patches.shape[0] - 1):
        others = np.delete(rows[:, :, i], i, axis=-1)
        assert fixed.lo_hi[i, 0] == 0.0 and fixed.lo_hi[i, 1] == others.max()


def test_a_fixed_scale_click_leaves_the_artifact_tokens_out_of_its_range(case):
    """On the fixed scale a clicked query's top is its map's (row or column) largest weight in any layer and head,
    itself left out, and each layer's artifact tokens too unless asked to keep them: patch k, a
    high-norm token entering layer 2, draws every query's largest weight there."""
    g, att, _ = case
    pre, k = g.num_prefix_tokens, 3
    att = att.copy()
    att[1, 0, pre:, pre + k] += 2.0  # every query's largest weight: on k (rows) ...
    att[1, 0, pre + k, pre:] += 2.0  # ... and k's on every key (columns: what attends to each patch)
    hidden = torch.ones(g.num_layers + 1, g.seq_len, 4)
    hidden[1, pre + k] = 100.0  # depth 1: what layer 2's attention is computed from
    a = dataclasses.replace(stand_in_analysis(g, torch.from_numpy(att)), hidden_states=hidden)
    for direction, keep_artifacts in itertools.product(("row", "column"), (False, True)):
        rows = att[:, :, pre:, pre:].astype(np.float32)  # (L, H, P, P): query patch × key patch
        if direction == "column":
            rows = rows.swapaxes(-1, -2)  # patch i's map: what attends to it
        p = AttnParams(layer=1, scale="fixed across layers and heads", artifacts_in_range=keep_artifacts,
                       direction=direction)
        qb = books.query_book(a, p)
        for i in (0, 7, rows.shape[2] - 1):
            m = rows[:, :, i].copy()  # (L, H, P)
            m[..., i] = 0.0
            if not keep_artifacts:
                m[1, :, k] = 0.0
            assert qb.lo_hi[i, 0] == 0.0 and qb.lo_hi[i, 1] == m.max(), (direction, keep_artifacts, i)
        assert ((np.delete(qb.lo_hi[:, 1], k) >= 2.0) == keep_artifacts).all()  # k's own weight is left out


def test_the_page_draws_only_books_small_enough():
    g = GEOMS["g14"]
    size = g.num_layers * (g.num_heads + 3) * g.grid[0] * g.grid[1] * 4
    assert books.draws_in_page(g) == (size <= books.BOOK_MAX_BYTES)
    big = GEOMS["g14"].__class__((518, 518), 14, (37, 37), 1, 24, 16, 1024)  # ViT-L/14 at 518: 24 layers, 37x37
    assert not books.draws_in_page(big)
