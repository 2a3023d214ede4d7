"""Attention maps, rollout (per layer and per head), distance, relevance, the grid and export.

References are plain loops written here; constructed attentions have known answers.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from synthetic import GEOMS, random_attention

from vizvit.methods import maths as A


# ------------------------------------------------------------------ plain references
def ref_rollout(att: np.ndarray, fusion: str, discard: float, prefix: int) -> np.ndarray:
    n_l, n_h, n, _ = att.shape
    r = np.eye(n)
    out = []
    for l in range(n_l):
        f = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                vals = [att[l, h, i, j] for h in range(n_h)]
                f[i, j] = {"mean": np.mean, "max": np.max, "min": np.min}[fusion](vals)
        k = int((n - prefix) * discard)
        for i in range(n):
            order = sorted(range(prefix, n), key=lambda j: f[i, j])
            for j in order[:k]:
                f[i, j] = 0.0
        a_hat = 0.5 * f + 0.5 * np.eye(n)
        for i in range(n):
            a_hat[i] = a_hat[i] / a_hat[i].sum()
        r = a_hat @ r
        out.append(r.copy())
    return np.stack(out)


def ref_rollout_heads(att: np.ndarray, prefix: int) -> np.ndarray:
    n_l, n_h, n, _ = att.shape
    below = ref_rollout(att, "mean", 0.0, prefix)
    out = np.zeros_like(att, dtype=np.float64)
    for l in range(n_l):
        r_prev = np.eye(n) if l == 0 else below[l - 1]
        for h in range(n_h):
            a_hat = 0.5 * att[l, h] + 0.5 * np.eye(n)
            a_hat = a_hat / a_hat.sum(1)[:, None]
            out[l, h] = a_hat @ r_prev
    return out


# ------------------------------------------------------------------ rollout
@pytest.mark.parametrize("fusion,discard", [("mean", 0.0), ("max", 0.3), ("min", 0.9)])
def test_one_row_of_the_rollout_is_that_row_of_the_plain_loop(fusion, discard):
    """rollout_row (vector times matrices, top layer down): q · R_l of the plain loop's R_l, for a
    token's row, the patch queries' mean and arbitrary weights (SigLIP's MAP head), every layer;
    with a head, q · R_{l,h} of the plain per-head loop."""
    g = GEOMS["g7"]
    att = random_attention(g, seed=5)
    n, pre = g.seq_len, g.num_prefix_tokens
    ref = ref_rollout(att.double().numpy(), fusion, discard, pre)
    heads = ref_rollout_heads(att.double().numpy(), pre)
    mean = np.r_[np.zeros(pre), np.full(n - pre, 1 / (n - pre))]
    for q in (np.eye(n)[0], np.eye(n)[n // 2], mean, np.random.default_rng(0).dirichlet(np.ones(n))):
        qt = torch.from_numpy(q).float()
        for layer in range(1, g.num_layers + 1):
            got = A.rollout_row(att, qt, layer, fusion, discard, pre)
            np.testing.assert_allclose(got.numpy(), q @ ref[layer - 1], rtol=1e-4, atol=1e-6)
            for h in range(g.num_heads):
                got = A.rollout_row(att, qt, layer, head=h, num_prefix_tokens=pre)
                np.testing.assert_allclose(got.numpy(), q @ heads[layer - 1, h], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("discard", [0.0, 0.3, 0.9])
def test_rollout_matches_a_plain_loop(fusion, discard):
    g = GEOMS["g7"]  # the loop reference is O(N²·H) in Python: the 7×7 grid keeps it quick
    att = random_attention(g, seed=1)
    got = A.rollout_stack(att, fusion, discard, g.num_prefix_tokens).numpy()
    want = ref_rollout(att.double().numpy(), fusion, discard, g.num_prefix_tokens)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=f"{fusion}, discard {discard}")
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-5)  # rows stay distributions
    maps = A.rollout_maps(att, g, fusion, discard).numpy()
    np.testing.assert_allclose(maps, want[:, 0, 1:].reshape(g.num_layers, *g.grid), rtol=1e-4, atol=1e-7)


def test_rollout_never_discards_the_cls_column(geom):
    att = random_attention(geom)
    fused = A.fuse_heads(att)
    kept = A.discard_lowest(fused, 0.99, geom.num_prefix_tokens)
    assert torch.equal(kept[..., 0], fused[..., 0])


def test_identity_attention_gives_identity_rollout(geom):
    n = geom.seq_len
    att = torch.eye(n).expand(geom.num_layers, geom.num_heads, n, n).clone()
    for fusion in ("mean", "max", "min"):
        for discard in (0.0, 0.5):
            r = A.rollout_stack(att, fusion, discard, geom.num_prefix_tokens)
            assert torch.allclose(r, torch.eye(n).expand_as(r)), (fusion, discard)
    assert torch.allclose(A.rollout_heads(att), torch.eye(n).expand_as(att))


def test_head_rollout_matches_a_plain_loop_and_its_mean_is_the_layer_rollout(geom):
    att = random_attention(geom, seed=2)
    got = A.rollout_heads(att, geom.num_prefix_tokens)
    if geom.grid == (7, 7):
        np.testing.assert_allclose(got.numpy(), ref_rollout_heads(att.double().numpy(), 1), rtol=1e-4, atol=1e-6)
    layer = A.rollout_stack(att, "mean", 0.0, geom.num_prefix_tokens)
    torch.testing.assert_close(got.mean(1), layer, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ distance, threshold
def test_attention_distance_self_is_zero_and_uniform_is_the_mean_pairwise_distance(geom):
    g = geom
    n = g.seq_len
    eye = torch.eye(n).expand(g.num_layers, g.num_heads, n, n)
    assert torch.allclose(A.attention_distance(eye, g), torch.zeros(g.num_layers, g.num_heads))
    uniform = torch.full((g.num_layers, g.num_heads, n, n), 1.0 / n)  # [CLS] included, then left out
    gh, gw = g.grid
    cells = [(i, j) for i in range(gh) for j in range(gw)]
    total = sum(np.hypot((a[0] - b[0]) * g.patch_size, (a[1] - b[1]) * g.patch_size) for a in cells for b in cells)
    want = total / len(cells) ** 2
    np.testing.assert_allclose(A.attention_distance(uniform, g).numpy(), want, rtol=1e-5)


def test_mass_threshold_keeps_the_smallest_set():
    v = torch.tensor([[0.05, 0.5], [0.3, 0.15]])
    assert A.mass_threshold(v, 0.5).tolist() == [[False, True], [False, False]]
    assert A.mass_threshold(v, 0.6).tolist() == [[False, True], [True, False]]
    assert A.mass_threshold(v, 0.9).tolist() == [[False, True], [True, True]]
    assert A.mass_threshold(v, 1.0).all()
    with pytest.raises(ValueError):
        A.mass_threshold(v, 0.0)


def test_mass_thresholds_of_a_stack_are_each_maps_own_and_equal_weights_go_by_patch_number():
    # Equal weights: the lower patch number first, so a map's mask does not depend on its neighbours.
    flat = torch.tensor([[0.25, 0.25, 0.25, 0.25], [0.1, 0.4, 0.1, 0.4], [0.0, 0.0, 0.0, 1.0]])
    assert A.mass_thresholds(flat, 0.5).tolist() == [[True, True, False, False], [False, True, False, True],
                                                     [False, False, False, True]]
    rng = torch.Generator().manual_seed(0)
    maps = torch.rand(50, 7, 7, generator=rng).round(decimals=1)  # many ties
    for tau in (0.2, 0.5, 0.9, 1.0):
        stack = A.mass_thresholds(maps.reshape(50, -1), tau)
        assert all(torch.equal(stack[i].reshape(7, 7), A.mass_threshold(maps[i], tau)) for i in range(50)), tau


# ------------------------------------------------------------------ relevance
def ref_chefer(atts: list[np.ndarray], grads: list[np.ndarray]) -> np.ndarray:
    n = atts[0].shape[-1]
    r = np.eye(n)
    for a, gr in zip(atts, grads):
        cam = np.maximum(a * gr, 0).mean(0)
        r = r + cam @ r
    return r


def test_chefer_rule_matches_a_plain_loop_in_layer_order():
    gen = torch.Generator().manual_seed(3)
    atts = [torch.rand(2, 10, 10, generator=gen) for _ in range(3)]
    grads = [torch.randn(2, 10, 10, generator=gen) for _ in range(3)]
    got = A.chefer_relevance(atts, grads).numpy()
    np.testing.assert_allclose(got, ref_chefer([x.numpy() for x in atts], [x.numpy() for x in grads]), rtol=1e-5)
    rev = ref_chefer([x.numpy() for x in atts[::-1]], [x.numpy() for x in grads[::-1]])
    assert not np.allclose(got, rev), "layer order must matter for this check to mean anything"


def test_half_precision_attentions_roll_out_in_half_precision(geom):
    att = random_attention(geom, seed=4)
    half = A.rollout_heads(att.half(), geom.num_prefix_tokens)
    assert half.dtype == torch.float16  # big models keep fp16 attentions; the stack stays that size
    torch.testing.assert_close(half.float(), A.rollout_heads(att, geom.num_prefix_tokens), atol=2e-3, rtol=1e-2)


