"""vizvit.readings.attention against plain references: a direct numpy computation on constructed
attentions (loops, the ViT paper's definitions), never the readings' own helpers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from synthetic import GEOMS, random_attention, stand_in_analysis

from vizvit.errors import UserError
from vizvit.readings import attention as ra


def plain_rollout(att: np.ndarray) -> np.ndarray:
    """(L, H, N, N) -> (L, N, N): mean of heads, ½A + ½I with rows renormalised, multiplied in layer
    order (Abnar & Zuidema 2020), in float64 loops."""
    n_l, _, n, _ = att.shape
    r, out = np.eye(n), []
    for l in range(n_l):
        a = 0.5 * att[l].mean(0) + 0.5 * np.eye(n)
        a = a / a.sum(-1, keepdims=True)
        r = a @ r
        out.append(r)
    return np.stack(out)


def plain_distance(att: np.ndarray, g) -> np.ndarray:
    """(L, H, N, N) -> (L, H): for each patch query, the weighted distance in pixels between patch
    centres, [CLS] left out and the rest renormalised, averaged over queries (ViT paper, Fig. 7)."""
    gh, gw = g.grid
    pre, s = g.num_prefix_tokens, g.patch_size
    out = np.zeros(att.shape[:2])
    for l in range(att.shape[0]):
        for h in range(att.shape[1]):
            total = 0.0
            for i in range(gh * gw):
                w = att[l, h, pre + i, pre:]
                d = sum(w[j] * s * np.hypot(i // gw - j // gw, i % gw - j % gw) for j in range(gh * gw))
                total += d / w.sum()
            out[l, h] = total / (gh * gw)
    return out


@pytest.fixture(params=list(GEOMS))
def case(request):
    g = GEOMS[request.param]
    att = random_attention(g, seed=3)
    return g, att, stand_in_analysis(g, att)


def test_the_raw_main_matrix_is_the_chosen_head_or_the_heads_fused(case):
    g, att, a = case
    for layer in range(1, g.num_layers + 1):
        for head in range(1, g.num_heads + 1):
            p = ra.AttnParams(layer=layer, head=head, show="one head").checked(g)
            np.testing.assert_allclose(ra.main_matrix(a, p).numpy(), att[layer - 1, head - 1].numpy(), atol=1e-7)
        for fusion, fn in (("mean", np.mean), ("max", np.max), ("min", np.min)):
            p = ra.AttnParams(layer=layer, show=fusion)
            np.testing.assert_allclose(ra.main_matrix(a, p).numpy(), fn(att[layer - 1].numpy(), axis=0), atol=1e-6)


def test_the_rolled_out_mean_is_the_plain_rollout(case):
    g, att, a = case
    want = plain_rollout(att.double().numpy())
    for layer in range(1, g.num_layers + 1):
        p = ra.AttnParams(layer=layer, show="mean", mode="rolled out")
        np.testing.assert_allclose(ra.main_matrix(a, p).numpy(), want[layer - 1], atol=1e-5)
    # The [CLS] row of every layer, on the grid: what the strip, /rollout and the lesson read.
    maps = ra.rollout_maps(a).numpy()  # (L, gh, gw)
    np.testing.assert_allclose(maps, want[:, 0, g.num_prefix_tokens:].reshape(-1, *g.grid), atol=1e-5)
    np.testing.assert_allclose(ra.strip_maps(a, ra.AttnParams(show="one head")).numpy(), maps, atol=1e-7)


def test_the_main_map_is_the_summary_row_or_a_clicked_patch(case):
    g, att, a = case
    pre = g.num_prefix_tokens
    p = ra.AttnParams(layer=2, head=3, show="one head").checked(g)
    want = att[1, 2, 0, pre:].numpy().reshape(g.grid)  # [CLS]'s row over the patches
    np.testing.assert_allclose(ra.main_map(a, p).values, want, atol=1e-7)
    r, c = 1, 2
    t = pre + r * g.grid[1] + c
    assert ra.query_token(dataclasses.replace(p, query=(r, c)), g) == t
    row = ra.main_map(a, dataclasses.replace(p, query=(r, c))).values
    col = ra.main_map(a, dataclasses.replace(p, query=(r, c), direction="column")).values
    np.testing.assert_allclose(row, att[1, 2, t, pre:].numpy().reshape(g.grid), atol=1e-7)
    np.testing.assert_allclose(col, att[1, 2, pre:, t].numpy().reshape(g.grid), atol=1e-7)


def test_one_rollout_row_equals_the_whole_rollouts_row(case):
    g, att, a = case
    p = ra.AttnParams(layer=g.num_layers, show="mean", mode="rolled out")
    whole = ra.main_map(a, p).values
    np.testing.assert_allclose(ra.main_map(a, p, one_row=True).values, whole, atol=1e-6)
    want = plain_rollout(att.double().numpy())[-1, 0, g.num_prefix_tokens:].reshape(g.grid)
    np.testing.assert_allclose(whole, want, atol=1e-5)


def test_distances_are_the_plain_mean_attention_distance_and_cached_under_their_name(case):
    g, att, a = case
    if g.grid[0] > 7:
        pytest.skip("the plain loop is slow on 196 patches; 7x7 checks the same rule")
    store = {}

    def cache(name, compute):
        store.setdefault(name, compute())
        return store[name]

    got = ra.distances(a, cache).numpy()
    np.testing.assert_allclose(got, plain_distance(att.double().numpy(), g), rtol=1e-4)
    assert list(store) == [ra.distance_name("renormalised")]
    ra.distances(a, cache, "raw (probing-vits)")
    assert ra.distance_name("raw (probing-vits)") in store and len(store) == 2


def test_map_range_on_constructed_maps():
    m = np.array([[0.1, 0.2], [0.3, 0.9]], np.float32)
    assert ra.map_range(m, "0 to max") == (0.0, pytest.approx(0.9))
    # The query (1, 1) is left out of the range: its self-attention would set it alone.
    assert ra.map_range(m, "0 to max", highlight=(1, 1)) == (0.0, pytest.approx(0.3))
    assert ra.map_range(m, "this map's range", highlight=(1, 1)) == (pytest.approx(0.1), pytest.approx(0.3))
    exclude = np.array([[False, False], [True, False]])  # an artifact token out of the range
    assert ra.map_range(m, "this map's range", exclude=exclude) == (pytest.approx(0.1), pytest.approx(0.9))
    assert ra.map_range(m, "fixed across layers and heads", fixed_max=2.0) == (0.0, 2.0)
    # All near zero: the range never narrows below the floor (no pattern made up from noise).
    assert ra.map_range(np.zeros((2, 2), np.float32), "0 to max", floor=0.5) == (0.0, 0.5)
    g = GEOMS["g7"]
    assert ra.uniform_level(g) == pytest.approx(1 / 50) and ra.range_floor(g) == pytest.approx(ra.NEAR_ZERO / 50)


def test_grid_maps_hold_every_layer_and_head_of_the_query(case):
    g, att, a = case
    pre = g.num_prefix_tokens
    got = ra.grid_maps(a, ra.AttnParams()).numpy()  # (L, H, gh, gw): [CLS]'s row, raw
    np.testing.assert_allclose(got, att[:, :, 0, pre:].numpy().reshape(g.num_layers, g.num_heads, *g.grid),
                               atol=1e-7)
    fused = ra.fused_maps(a, ra.AttnParams(), "max").numpy()  # (L, gh, gw)
    np.testing.assert_allclose(fused, att[:, :, 0, pre:].max(1).values.numpy().reshape(g.num_layers, *g.grid),
                               atol=1e-7)


def test_bad_params_are_refused_with_a_message():
    g = GEOMS["g7"]
    with pytest.raises(UserError, match="Layer must be"):
        ra.AttnParams(layer=g.num_layers + 1).checked(g)
    with pytest.raises(UserError, match="Head must be"):
        ra.AttnParams(head=0).checked(g)
    with pytest.raises(UserError, match="colour map"):
        ra.AttnParams(cmap="nope").checked(g)


def test_a_token_drop_has_no_full_attention():
    g = GEOMS["g7"]
    a = dataclasses.replace(stand_in_analysis(g, random_attention(g)), kept_tokens=torch.arange(g.seq_len - 3))
    assert a.dropped
    with pytest.raises(UserError, match="token drop"):
        ra.main_matrix(a, ra.AttnParams())
    with pytest.raises(UserError, match="token drop"):
        ra.rollout_maps(a)
