"""Embeddings tab backend: the embedding stage, parameter table, PCA, token views, filters.

References are written here by hand (loops, numpy SVD), never with the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import ViTConfig, ViTForImageClassification

import vizvit
from vizvit.errors import UserError
from vizvit.model import engine
from vizvit.model.positional import cosine_similarity_matrix
from vizvit.model.tokens import (
    cls_patch_similarity,
    conv_as_unfold_linear,
    cosine_to,
    embedding_filters_pca,
    parameter_table,
    pca,
    token_norms,
    token_pca_rgb,
)


# ------------------------------------------------------------------ conv == unfold + linear
def test_conv_equals_unfold_then_one_linear_layer(tiny):
    g = tiny.geometry
    conv = tiny.vit.embeddings.patch_embeddings.projection
    x = torch.randn(1, 3, *g.image_size, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = conv_as_unfold_linear(x, conv.weight, conv.bias)  # (1, P, D)
        ref_conv = conv(x).flatten(2).transpose(1, 2)
    p, (gh, gw), d = g.patch_size, g.grid, g.hidden_size
    assert ours.shape == (1, gh * gw, d)
    torch.testing.assert_close(ours, ref_conv, atol=1e-4, rtol=1e-4)
    # Plain loop: cut out each patch, flatten channel-first, one matrix-vector product.
    w = conv.weight.reshape(d, -1)
    for r, c in [(0, 0), (0, gw - 1), (gh - 1, 0), (gh // 2, gw // 3), (gh - 1, gw - 1)]:
        patch = x[0, :, r * p:(r + 1) * p, c * p:(c + 1) * p].reshape(-1)
        torch.testing.assert_close(ours[0, r * gw + c], w @ patch + conv.bias, atol=1e-4, rtol=1e-4,
                                   msg=f"patch ({r}, {c}) is token {r * gw + c} in row-major order")


def test_embedding_stage_shapes_and_checks_against_the_forward(tiny, cat):
    g = tiny.geometry
    a = vizvit.analyze(tiny, cat)
    st = engine.embedding_stage(tiny, a)
    h, w = g.image_size
    d = g.hidden_size
    assert [s for _, s in st.shapes] == [(1, 3, h, w), (1, d, *g.grid), (1, g.num_patches, d),
                                         (1, g.seq_len, d), (1, g.seq_len, d)]
    assert st.conv_vs_linear < 1e-4
    assert st.conv_vs_forward < 1e-5 and st.embed_vs_forward < 1e-5
    assert st.patch_dim == 3 * g.patch_size**2


# ------------------------------------------------------------------ parameter table
def test_parameter_table_rows_sum_to_all_parameters(tiny):
    rows = parameter_table(tiny.model)
    assert sum(r.count for r in rows) == sum(p.numel() for p in tiny.model.parameters())
    stages = [r.stage for r in rows]
    assert len(stages) == len(set(stages))
    for b in range(1, tiny.geometry.num_layers + 1):
        assert f"block {b} · attention (q, k, v, o)" in stages and f"block {b} · MLP (fc1, fc2)" in stages
    assert "other" not in stages and "classifier" in stages and "final norm" in stages


def test_parameter_table_of_vit_b16_is_the_published_86_567_656():
    with torch.device("meta"):  # the architecture without allocating 350 MB
        model = ViTForImageClassification(ViTConfig(num_labels=1000))
    rows = dict((r.stage, r.count) for r in parameter_table(model))
    d, mlp = 768, 3072
    assert rows["embedding conv (patch projection)"] == d * 3 * 16 * 16 + d
    assert rows["[CLS] token"] == d and rows["position embeddings"] == 197 * d
    assert rows["block 7 · attention (q, k, v, o)"] == 4 * (d * d + d)
    assert rows["block 7 · MLP (fc1, fc2)"] == d * mlp + mlp + mlp * d + d
    assert rows["block 7 · norms (before, after)"] == 4 * d
    assert rows["final norm"] == 2 * d and rows["classifier"] == d * 1000 + 1000
    assert len(rows) == 3 + 3 * 12 + 2
    assert sum(rows.values()) == 86_567_656


# ------------------------------------------------------------------ PCA
@pytest.mark.parametrize("n,d", [(60, 12), (15, 40)])  # both Gram branches: n > d and n <= d
def test_pca_matches_numpy_svd(n, d, rng):
    x = rng.normal(size=(n, d)) * np.linspace(3, 0.2, d)  # distinct variances
    k = 5
    fit = pca(x, k)
    xc = x - x.mean(0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    for i in range(k):
        v = vt[i] * np.sign(vt[i][np.abs(vt[i]).argmax()])  # the documented sign rule
        np.testing.assert_allclose(fit.components[i], v, atol=1e-8, err_msg=f"component {i}")
    np.testing.assert_allclose(fit.explained_variance, s[:k] ** 2 / (n - 1), rtol=1e-8)
    np.testing.assert_allclose(fit.explained_ratio, s[:k] ** 2 / (s**2).sum(), rtol=1e-8)
    np.testing.assert_allclose(fit.scores, xc @ fit.components.T, atol=1e-8)
    np.testing.assert_allclose(fit.mean, x.mean(0))


def test_pca_sign_is_deterministic_and_finds_a_known_direction(rng):
    direction = np.zeros(8)
    direction[[2, 5]] = [-0.6, 0.8]  # largest |loading| is +0.8
    x = rng.normal(size=(100, 1)) * 5 * direction + rng.normal(size=(100, 8)) * 0.01
    for data in (x, -x):  # negating the data flips SVD signs; ours must not
        fit = pca(data, 2)
        np.testing.assert_allclose(fit.components[0], direction, atol=1e-3)
        assert fit.explained_ratio[0] > 0.99
        assert np.abs(fit.components).argmax(1).tolist() == [int(np.abs(c).argmax()) for c in fit.components]
        assert all(c[np.abs(c).argmax()] > 0 for c in fit.components)


def test_pca_refuses_too_many_components():
    with pytest.raises(ValueError, match="principal components"):
        pca(np.zeros((4, 3)), 5)


# ------------------------------------------------------------------ similarity, norms, PCA maps
def test_similarity_matrix_is_symmetric_with_unit_diagonal():
    x = torch.randn(50, 16, generator=torch.Generator().manual_seed(3)) * torch.rand(50, 1) * 10
    m = cosine_similarity_matrix(x)
    torch.testing.assert_close(m, m.T)
    torch.testing.assert_close(m.diagonal(), torch.ones(50))
    for i, j in [(0, 1), (7, 30), (49, 2)]:
        ref = float(x[i] @ x[j]) / (float(x[i].norm()) * float(x[j].norm()))
        assert abs(float(m[i, j]) - ref) < 1e-5
    torch.testing.assert_close(cosine_to(x, 7), m[7], atol=1e-5, rtol=0)


def test_token_norms_and_cls_similarity_against_loops(tiny, cat):
    g = tiny.geometry
    a = vizvit.analyze(tiny, cat)
    hs = a.hidden_states
    norms, sims = token_norms(hs, g), cls_patch_similarity(hs, g)
    gh, gw = g.grid
    assert norms.shape == sims.shape == (g.num_layers + 1, gh, gw)
    pre = g.num_prefix_tokens
    for depth, r, c in [(0, 0, 0), (1, gh - 1, 1), (g.num_layers, 2, gw - 1)]:
        tok = hs[depth, pre + r * gw + c]
        assert abs(float(norms[depth, r, c]) - float(torch.sqrt((tok**2).sum()))) < 1e-4
        cls = hs[depth, 0]
        assert abs(float(sims[depth, r, c]) - float(tok @ cls / (tok.norm() * cls.norm()))) < 1e-5


def test_token_pca_rgb_puts_a_row_pattern_on_rows(tiny16):
    g = tiny16.geometry
    gh, gw = g.grid
    rows = np.repeat(np.arange(gh), gw).astype(float)  # token i belongs to row i // gw
    rng = np.random.default_rng(0)
    noise = rng.normal(size=(g.num_patches, g.hidden_size)) * 1e-3
    tokens = np.outer(rows, rng.normal(size=g.hidden_size)) + noise
    rgb, fit = token_pca_rgb(tokens, g)
    assert rgb.shape == (gh, gw, 3) and rgb.min() >= 0 and rgb.max() <= 1
    assert fit.explained_ratio[0] > 0.999
    # The first component is constant along each row and runs from one end to the other.
    assert np.ptp(rgb[..., 0], axis=1).max() < 1e-2
    assert {round(rgb[0, 0, 0], 3), round(rgb[-1, 0, 0], 3)} == {0.0, 1.0}


# ------------------------------------------------------------------ filters
def test_embedding_filters_pca_matches_svd_and_layout(tiny):
    w = tiny.vit.embeddings.patch_embeddings.projection.weight  # (D, 3, p, p)
    d, _, p, _ = w.shape
    f = embedding_filters_pca(w)
    k = min(28, d)
    assert f.tiles.shape == (k, p, p, 3) and f.explained_ratio.shape == (k,)
    flat = w.detach().numpy().reshape(d, -1).astype(np.float64)
    _, s, vt = np.linalg.svd(flat - flat.mean(0), full_matrices=False)
    np.testing.assert_allclose(f.explained_ratio, (s[:k] ** 2 / (s**2).sum()), rtol=1e-4)
    for i in (0, 1, k - 1):
        back = f.tiles[i].transpose(2, 0, 1).reshape(-1)  # (p, p, 3) -> channel-first, like the weight
        assert abs(abs(float(back @ vt[i])) - 1) < 1e-4, f"tile {i} is not component {i} in RGB layout"


def test_filter_pca_of_a_rank_one_bank_recovers_the_pattern():
    p = 8
    pattern = torch.zeros(3, p, p)
    pattern[0, :, : p // 2] = 1.0  # red on the left half
    pattern[2, :, p // 2:] = -1.0
    pattern /= pattern.norm()
    amp = torch.linspace(-2, 3, 40)[:, None, None, None]
    w = amp * pattern + torch.randn(40, 3, p, p, generator=torch.Generator().manual_seed(0)) * 1e-4
    f = embedding_filters_pca(w, k=5)
    tile0 = torch.from_numpy(f.tiles[0]).permute(2, 0, 1)
    assert f.explained_ratio[0] > 0.999
    assert float((tile0 * pattern).sum()).__abs__() > 0.999


# ------------------------------------------------------------------ artifact tokens left out
def test_pca_without_rows_equals_a_plain_svd_of_the_remaining_rows(rng):
    from vizvit.model.tokens import pca_without

    x = rng.normal(size=(40, 12))
    x[[0, 7, 33]] += 60.0 * np.eye(12)[4]  # three far-out rows along one direction, as artifact tokens are
    exclude = np.zeros(40, bool)
    exclude[[0, 7, 33]] = True
    fit = pca_without(x, exclude, 3)
    rest = x[~exclude]
    mean = rest.mean(0)
    _, s, vt = np.linalg.svd(rest - mean, full_matrices=False)  # plain numpy reference
    for k in range(3):
        assert abs(abs(fit.components[k] @ vt[k]) - 1) < 1e-9, f"component {k} differs from the SVD's"
    np.testing.assert_allclose(fit.explained_ratio, s[:3] ** 2 / (s ** 2).sum(), rtol=1e-9)
    # Every row, the left-out ones too, is scored on the remaining rows' mean and components.
    ref_scores = (x - mean) @ vt[:3].T
    np.testing.assert_allclose(np.abs(fit.scores), np.abs(ref_scores), rtol=1e-8, atol=1e-8)
    assert fit.scores.shape == (40, 3)
    with_all = pca(x, 3)
    assert with_all.explained_ratio[0] > 0.9 > fit.explained_ratio[0], "the far rows took component 1"


def test_token_pca_rgb_scales_on_the_kept_patches_and_clips_the_rest(tiny16, rng):
    g = tiny16.geometry
    tokens = rng.normal(size=(g.num_patches, 16))
    tokens[0] *= 80.0
    exclude = np.zeros(g.grid, bool)
    exclude[0, 0] = True
    rgb, fit = token_pca_rgb(tokens, g, exclude)
    kept = rgb.reshape(-1, 3)[1:]
    # min-max over the kept patches: each channel spans exactly 0..1 there
    np.testing.assert_allclose(kept.min(0), 0.0, atol=1e-6)
    np.testing.assert_allclose(kept.max(0), 1.0, atol=1e-6)
    assert ((rgb >= 0) & (rgb <= 1)).all()
    s = fit.scores[1:]
    want = np.clip((fit.scores[0] - s.min(0)) / (s.max(0) - s.min(0)), 0, 1)
    np.testing.assert_allclose(rgb[0, 0], want, atol=1e-6)


def test_artifacts_at_depth_by_hand():
    from types import SimpleNamespace

    from vizvit.readings.artifacts_rule import high_norm_at_depth

    gh = gw = 4
    # A constructed (L+1, N, D) stack: [CLS] then 16 patches whose norms are known.
    hidden = torch.ones(2, 17, 3)
    hidden[1, 1 + 5] *= 40.0  # depth 1: patch 5 at 40× the others (far out, > 4× the median)
    hidden[0, 1 + 2] *= 2.0  # depth 0: patch 2 at 2× (not 4× the median: no artifact)
    g = SimpleNamespace(num_prefix_tokens=1, grid=(gh, gw), num_patches=16)  # only what the rule reads
    mask = high_norm_at_depth(hidden, g)
    assert mask.shape == (2, gh, gw)
    assert not mask[0].any()
    assert mask[1].reshape(-1).nonzero()[0].tolist() == [5]




# ------------------------------------------------------------------ dropout, train against eval
@pytest.mark.parametrize("p", [0.0, 0.1, 0.5])
def test_dropout_check_against_a_plain_draw(p):
    """Train mode: exactly the entries F.dropout zeroes with the same seed, about p of them, the
    others × 1/(1−p); eval mode: the identity, bit for bit."""
    from vizvit.model.tokens import dropout_check

    x = torch.randn(197, 64, generator=torch.Generator().manual_seed(1))
    c = dropout_check(x, p, seed=3)
    torch.manual_seed(3)
    ref = F.dropout(x, p, training=True)  # the plain functional draw, outside any module
    assert torch.equal(c.train, ref)
    zeroed = ref == 0
    share = float(zeroed.float().mean())
    assert c.zeros_train == pytest.approx(share) and c.zeros_before == 0.0
    sigma = (p * (1 - p) / x.numel()) ** 0.5
    assert abs(share - p) <= 5 * sigma + 1e-12, (share, p)
    survivors = ~zeroed
    assert torch.allclose(ref[survivors], x[survivors] / (1 - p), rtol=1e-6)  # each survivor scaled
    assert c.scale == pytest.approx(1 / (1 - p), rel=1e-6) and c.scale_error < 1e-5
    assert c.eval_changed == 0 and torch.equal(torch.nn.Dropout(p).eval()(x), x)


def test_dropout_check_refuses_p_of_one():
    from vizvit.model.tokens import dropout_check

    with pytest.raises(UserError, match="dropout"):
        dropout_check(torch.ones(3, 4), 1.0)


def test_embedding_stage_of_a_non_square_vit_equals_its_forward(tiny_rect, cat):
    """A 160×224 ViT's table is 5×7 (35 rows), not round(√35) = 6 square: the stage rebuilt by hand
    equals transformers' own hidden_states[0], which a plain sum written here also gives."""
    vm = tiny_rect
    g = vm.geometry
    assert g.grid == (5, 7) and vm.position_grid == (5, 7)
    a = vizvit.analyze(vm, cat)
    st = engine.embedding_stage(vm, a)
    d = g.hidden_size
    assert [s for _, s in st.shapes] == [(1, 3, 160, 224), (1, d, 5, 7), (1, 35, d), (1, 36, d), (1, 36, d)]
    with torch.no_grad():
        hf = vm.model(pixel_values=a.pixel_values, output_hidden_states=True).hidden_states[0][0]  # (36, D)
        emb = vm.vit.embeddings
        conv = emb.patch_embeddings.projection
        x = a.pixel_values[0]
        ref = torch.empty(36, d)
        ref[0] = emb.cls_token[0, 0] + emb.position_embeddings[0, 0]
        for r in range(5):  # patch (r, c) is token 1 + 7r + c and takes table row 1 + 7r + c
            for c in range(7):
                patch = x[:, r * 32:(r + 1) * 32, c * 32:(c + 1) * 32].reshape(-1)
                ref[1 + 7 * r + c] = (conv.weight.reshape(d, -1) @ patch + conv.bias
                                      + emb.position_embeddings[0, 1 + 7 * r + c])
    torch.testing.assert_close(hf, ref, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(a.hidden_states[0].float(), hf, atol=1e-5, rtol=0)
    assert st.embed_vs_forward < 1e-5 and st.conv_vs_forward < 1e-5
