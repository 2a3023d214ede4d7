"""Peer equivalence: vizvit against plain ports of the code people already use.

Each port below is written here from the peer's published code (repository, path and the
commit read are in its docstring) and kept as close to that code as a test allows. Where
vizvit follows the same convention, it must equal the port to float rounding; where it
does not, the test checks that it differs by exactly the rule docs/methods.md states.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from synthetic import GEOMS, StandInModel, random_attention, stand_in_analysis
from vit_explain import vit_explain_rollout

from vizvit.methods import maths as A
from vizvit.model import engine, positional, tokens
from vizvit.readings import attention as ra
from vizvit.readings.perturb import Curves


# ------------------------------------------------------------------ vit-explain
def _layers(att: torch.Tensor) -> list[torch.Tensor]:
    return [att[l:l + 1].clone() for l in range(att.shape[0])]


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("discard", [0.0, 0.5, 0.9])
def test_fixed_vit_explain_equals_vizvit_rollout_with_global_discard(geom, fusion, discard):
    att = random_attention(geom, seed=1)
    want = vit_explain_rollout(_layers(att), discard, fusion, keepdim=True)
    got = A.rollout_maps(att, geom, fusion, discard, "global (vit-explain)")[-1].numpy()
    np.testing.assert_allclose(got / got.max(), want, rtol=1e-4, atol=1e-6)


def test_per_row_discard_differs_from_vit_explain_only_when_discarding(geom):
    att = random_attention(geom, seed=2)
    same = A.rollout_maps(att, geom, "max", 0.0, "per row")[-1].numpy()
    np.testing.assert_allclose(same / same.max(), vit_explain_rollout(_layers(att), 0.0, "max", True),
                               rtol=1e-4, atol=1e-6)
    per_row = A.rollout_maps(att, geom, "max", 0.9, "per row")[-1].numpy()
    assert np.abs(per_row / per_row.max() - vit_explain_rollout(_layers(att), 0.9, "max", True)).max() > 1e-2


def test_global_discard_zeroes_the_cls_column_per_row_never_does(geom):
    """The stated rule: global may zero any entry but [CLS]→[CLS]; per row never touches column 0."""
    n = geom.seq_len
    fused = A.fuse_heads(random_attention(geom, seed=3))
    fused[..., 0] = 1e-6  # every query barely attends to [CLS]: globally among the lowest
    fused[..., 0, 0] = 1e-7  # the lowest of all, yet kept
    glob = A.discard_lowest(fused, 0.5, 1, "global (vit-explain)")
    assert torch.equal(glob[..., 0, 0], fused[..., 0, 0])
    assert (glob[..., 1:, 0] == 0).all()
    assert int((glob == 0).sum()) == geom.num_layers * (int(n * n * 0.5) - 1)  # [CLS]→[CLS] was put back
    rows = A.discard_lowest(fused, 0.5, 1, "per row")
    assert torch.equal(rows[..., 0], fused[..., 0])
    assert int((rows == 0).sum()) == geom.num_layers * n * int((n - 1) * 0.5)


def test_vit_explain_as_published_divides_columns_by_row_sums(geom):
    """Without keepdim, Â[i, j] = (F + I)[i, j] / Σ_k (F + I)[j, k]: the stated rule, built here
    from vizvit's global discard, equals the published code; the fixed code differs from it."""
    att = random_attention(geom, seed=4)
    r = torch.eye(geom.seq_len)
    for layer in A.discard_lowest(A.fuse_heads(att, "max"), 0.9, 1, "global (vit-explain)"):
        a = (layer + torch.eye(geom.seq_len)) / 2
        r = (a / a.sum(-1)[None, :]) @ r
    rule = r[0, 1:].reshape(geom.grid).numpy()
    published = vit_explain_rollout(_layers(att), 0.9, "max", keepdim=False)
    np.testing.assert_allclose(rule / rule.max(), published, rtol=1e-4, atol=1e-6)
    assert np.abs(published - vit_explain_rollout(_layers(att), 0.9, "max", keepdim=True)).max() > 1e-2


# ------------------------------------------------------------------ Chefer et al.
def chefer_compute_rollout_attention(all_layer_matrices: list[torch.Tensor],
                                     start_layer: int = 0) -> torch.Tensor:
    """Port of compute_rollout_attention in hila-chefer/Transformer-MM-Explainability
    lxmert/lxmert/src/ExplanationGenerator.py (commit 14e55eeff66d7081fddff0f8f8f59f3020ec5718).
    all_layer_matrices: per layer (B, N, N), heads already averaged."""
    num_tokens = all_layer_matrices[0].shape[1]
    eye = torch.eye(num_tokens)
    all_layer_matrices = [all_layer_matrices[i] + eye for i in range(len(all_layer_matrices))]
    matrices_aug = [m / m.sum(dim=-1, keepdim=True) for m in all_layer_matrices]
    joint_attention = matrices_aug[start_layer]
    for i in range(start_layer + 1, len(matrices_aug)):
        joint_attention = matrices_aug[i].matmul(joint_attention)
    return joint_attention


def chefer_avg_heads(cam: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """Rule 5, `avg_heads` in Transformer_MM_explainability_ViT.ipynb of
    hila-chefer/Transformer-MM-Explainability (commit feb29b5829c7bc12a7d24188908ff99241315fb1)."""
    cam = cam.reshape(-1, cam.shape[-2], cam.shape[-1])
    grad = grad.reshape(-1, grad.shape[-2], grad.shape[-1])
    cam = grad * cam
    return cam.clamp(min=0).mean(dim=0)


def chefer_relevance_port(cams: list[torch.Tensor], grads: list[torch.Tensor]) -> torch.Tensor:
    """Rule 6 and the loop of `generate_relevance` in the same notebook: R = I; R += cam @ R."""
    r = torch.eye(cams[0].shape[-1])
    for cam, grad in zip(cams, grads):
        r = r + torch.matmul(chefer_avg_heads(cam, grad), r)  # apply_self_attention_rules
    return r


def test_vizvit_mean_rollout_equals_chefers_rollout(geom):
    att = random_attention(geom, seed=5)
    want = chefer_compute_rollout_attention([att[l].mean(0, keepdim=True) for l in range(att.shape[0])])[0]
    torch.testing.assert_close(A.rollout_stack(att, "mean", 0.0, 1)[-1], want, rtol=1e-5, atol=1e-7)


def test_relevance_equals_chefer_2021b_on_random_tensors(geom):
    gen = torch.Generator().manual_seed(6)
    att = random_attention(geom, seed=6)
    grads = torch.randn(att.shape, generator=gen)
    want = chefer_relevance_port(list(att), list(grads))
    torch.testing.assert_close(A.chefer_relevance(list(att), list(grads)), want, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(want[0, 1:], A.rollout_stack(att, "mean", 0.0, 1)[-1, 0, 1:], atol=1e-3)


def test_relevance_on_a_tiny_model_equals_chefers_generate_relevance(tiny, cat):
    """The whole backward pass, as the notebook does it: a one-hot · logits backward and the
    gradients kept on the attention maps (retain_grad here, hooks there)."""
    import vizvit
    from vizvit.methods.relevance import relevance_matrix

    a = vizvit.analyze(tiny, cat)
    index = a.top5[1].index
    with torch.inference_mode(False), torch.enable_grad():
        pixels = a.pixel_values.detach().clone().requires_grad_(True)
        out = tiny.model(pixels, output_attentions=True)
        for t in out.attentions:
            t.retain_grad()
        one_hot = torch.zeros(1, out.logits.size(-1))
        one_hot[0, index] = 1
        torch.sum(one_hot * out.logits).backward()
        want = chefer_relevance_port([t[0].detach() for t in out.attentions],
                                     [t.grad[0] for t in out.attentions])
    torch.testing.assert_close(relevance_matrix(tiny, a, index), want, rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------ probing-vits: attention distance
def probing_vits_mean_attention_dist(patch_size: int, attention_weights: np.ndarray,
                                     num_cls_tokens: int = 1) -> np.ndarray:
    """Port of compute_distance_matrix and compute_mean_attention_dist in sayakpaul/probing-vits
    notebooks/mean-attention-distance-1k.ipynb (commit 98569345f3c243bbd3e8a41c4406cbbf704b8014).
    attention_weights: (batch, heads, N, N) -> (batch, heads)."""
    attention_weights = attention_weights[..., num_cls_tokens:, num_cls_tokens:]  # Removing the CLS token
    num_patches = attention_weights.shape[-1]
    length = int(np.sqrt(num_patches))
    distance_matrix = np.zeros((num_patches, num_patches))
    for i in range(num_patches):
        for j in range(num_patches):
            if i == j:
                continue
            xi, yi = (int(i / length)), (i % length)
            xj, yj = (int(j / length)), (j % length)
            distance_matrix[i, j] = patch_size * np.linalg.norm([xi - xj, yi - yj])
    mean_distances = attention_weights * distance_matrix.reshape((1, 1, num_patches, num_patches))
    mean_distances = np.sum(mean_distances, axis=-1)
    return np.mean(mean_distances, axis=-1)


def test_raw_distance_equals_probing_vits(geom):
    att = random_attention(geom, seed=7)
    want = probing_vits_mean_attention_dist(geom.patch_size, att.double().numpy())
    np.testing.assert_allclose(A.attention_distance(att, geom, "raw (probing-vits)").numpy(), want, rtol=1e-5)


def test_renormalised_distance_is_probing_vits_divided_by_one_minus_the_cls_weight(geom):
    """Per query: vizvit's term = probing-vits' term / (1 − the query's weight on [CLS])."""
    att = random_attention(geom, seed=8, sharp=1.0).double()
    rescaled = att.clone()
    rescaled[..., 1:, 1:] = att[..., 1:, 1:] / (1 - att[..., 1:, :1])  # patch query i's row / (1 − A[i, CLS])
    want = probing_vits_mean_attention_dist(geom.patch_size, rescaled.numpy())
    got = A.attention_distance(att.float(), geom).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)
    raw = probing_vits_mean_attention_dist(geom.patch_size, att.numpy())
    assert (got > raw).all(), "renormalising can only lengthen: the [CLS] weight counted as distance 0"
    # A constant [CLS] weight c makes the whole number exactly raw / (1 − c).
    c = 0.3
    const = att.clone()
    const[..., 1:, 1:] = att[..., 1:, 1:] / att[..., 1:, 1:].sum(-1, keepdim=True) * (1 - c)
    const[..., 1:, 0] = c
    want_const = probing_vits_mean_attention_dist(geom.patch_size, const.numpy()) / (1 - c)
    np.testing.assert_allclose(A.attention_distance(const.float(), geom).numpy(), want_const, rtol=1e-5)


# ------------------------------------------------------------------ DINO: mass threshold
def dino_threshold(attentions: torch.Tensor, threshold: float) -> torch.Tensor:
    """Port of the --threshold block of facebookresearch/dino visualize_attention.py (stored
    version read at commit 04c0ad957c9fd04cced6d703668bc049586d1d21; the upstream file lists
    commit cc72fe982d650ff28e974d0f5a7c974fecb56209). attentions: (nh, P) -> (nh, P) bool."""
    val, idx = torch.sort(attentions)
    val /= torch.sum(val, dim=1, keepdim=True)
    cumval = torch.cumsum(val, dim=1)
    th_attn = cumval > (1 - threshold)
    idx2 = torch.argsort(idx)
    for head in range(attentions.shape[0]):
        th_attn[head] = th_attn[head][idx2[head]]
    return th_attn


@pytest.mark.parametrize("tau", [0.1, 0.25, 0.6, 0.9])
def test_mass_threshold_equals_dinos(geom, tau):
    maps = A.cls_to_patches(random_attention(geom, seed=9)[-1].double(), geom)  # (H, gh, gw)
    want = dino_threshold(maps.reshape(geom.num_heads, -1).clone(), tau)
    for h in range(geom.num_heads):
        got = A.mass_threshold(maps[h], tau).flatten()
        assert torch.equal(got, want[h]), (tau, h)
        assert maps[h].flatten()[got].sum() >= tau * maps[h].sum() - 1e-6


# ------------------------------------------------------------------ sin-cos baselines
def mae_2d_sincos_pos_embed(embed_dim: int, grid_size: int) -> np.ndarray:
    """Port of get_2d_sincos_pos_embed (and its two helpers) in facebookresearch/mae
    util/pos_embed.py (commit a9f5c70165c6ec81ce4036d9c2296ab70b7042f9)."""
    def get_1d(d: int, pos: np.ndarray) -> np.ndarray:
        omega = np.arange(d // 2, dtype=np.float32)
        omega /= d / 2.
        omega = 1. / 10000 ** omega
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    grid_h = np.arange(grid_size, dtype=np.float32)
    grid_w = np.arange(grid_size, dtype=np.float32)
    grid = np.stack(np.meshgrid(grid_w, grid_h), axis=0).reshape([2, 1, grid_size, grid_size])
    return np.concatenate([get_1d(embed_dim // 2, grid[0]), get_1d(embed_dim // 2, grid[1])], axis=1)


def timm_build_sincos2d_pos_embed(feat_shape: tuple[int, int], dim: int,
                                  temperature: float = 10000.) -> torch.Tensor:
    """Port of build_sincos2d_pos_embed (defaults: reverse_coord=False, interleave_sin_cos=False)
    in huggingface/pytorch-image-models timm/layers/pos_embed_sincos.py (commit
    a383d77e3476911263bf23c3e8be3db8b8fcadb2)."""
    pos_dim = dim // 4
    bands = 1. / (temperature ** (torch.arange(0, pos_dim, 1, dtype=torch.int64).to(torch.float32) / pos_dim))
    axes = [torch.arange(s, dtype=torch.int64).to(torch.float32) for s in feat_shape]
    grid = torch.stack(torch.meshgrid(axes, indexing="ij")).flatten(1).transpose(0, 1)
    pos2 = grid.unsqueeze(-1) * bands.unsqueeze(0)  # (P, 2 = (h, w), pos_dim)
    return torch.stack([torch.sin(pos2), torch.cos(pos2)], dim=1).flatten(1)  # [sin h, sin w, cos h, cos w]


@pytest.mark.parametrize("grid,d", [(14, 32), (7, 768), (24, 64)])
def test_sincos_2d_equals_mae(grid, d):
    np.testing.assert_allclose(positional.sincos_2d((grid, grid), d).numpy(),
                               mae_2d_sincos_pos_embed(d, grid), atol=2e-5)


@pytest.mark.parametrize("grid,d", [((14, 14), 32), ((7, 9), 768)])
def test_sincos_2d_is_timms_up_to_a_channel_order_so_the_similarity_is_the_same(grid, d):
    ours, theirs = positional.sincos_2d(grid, d), timm_build_sincos2d_pos_embed(grid, d)
    q = d // 4  # timm: [sin h | sin w | cos h | cos w]; MAE and vizvit: [sin w | cos w | sin h | cos h]
    reordered = torch.cat([theirs[:, q:2 * q], theirs[:, 3 * q:], theirs[:, :q], theirs[:, 2 * q:3 * q]], 1)
    torch.testing.assert_close(ours, reordered, atol=2e-5, rtol=0)
    assert not torch.allclose(ours, theirs, atol=1e-2), "the channel orders do differ"
    torch.testing.assert_close(positional.cosine_similarity_matrix(ours),
                               positional.cosine_similarity_matrix(theirs), atol=1e-5, rtol=0)


# ------------------------------------------------------------------ interpolation
def timm_resample_abs_pos_embed(posemb: torch.Tensor, new_size: list[int], num_prefix_tokens: int = 1,
                                antialias: bool = True) -> torch.Tensor:
    """Port of resample_abs_pos_embed in huggingface/pytorch-image-models timm/layers/pos_embed.py
    (commit 170a5b6e277c55ca5553bea60d0b34b4f219f966), with its defaults."""
    hw = int(math.sqrt(posemb.shape[1] - num_prefix_tokens))
    prefix, posemb = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    posemb = posemb.float().reshape(1, hw, hw, -1).permute(0, 3, 1, 2)
    posemb = F.interpolate(posemb, size=new_size, mode="bicubic", antialias=antialias)
    return torch.cat([prefix, posemb.permute(0, 2, 3, 1).reshape(1, -1, posemb.shape[1])], dim=1)


def dino_interpolate_pos_encoding(pos_embed: torch.Tensor, patch_size: int, w: int, h: int) -> torch.Tensor:
    """Port of VisionTransformer.interpolate_pos_encoding in facebookresearch/dino
    vision_transformer.py (commit 58aabc09e056689228e5cfff27c2c20e6d19c945; HF cites
    de9ee3df6cf39fac952ab558447af1fa1365362a): scale_factor with +0.1, no size."""
    n = pos_embed.shape[1] - 1
    class_pos_embed, patch_pos_embed = pos_embed[:, 0], pos_embed[:, 1:]
    dim = pos_embed.shape[-1]
    w0, h0 = w // patch_size + 0.1, h // patch_size + 0.1
    patch_pos_embed = F.interpolate(
        patch_pos_embed.reshape(1, int(math.sqrt(n)), int(math.sqrt(n)), dim).permute(0, 3, 1, 2),
        scale_factor=(w0 / math.sqrt(n), h0 / math.sqrt(n)), mode="bicubic")
    assert int(w0) == patch_pos_embed.shape[-2] and int(h0) == patch_pos_embed.shape[-1]
    patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).reshape(1, -1, dim)
    return torch.cat((class_pos_embed.unsqueeze(0), patch_pos_embed), dim=1)


@pytest.mark.parametrize("size", [96, 160, 384])
def test_interpolation_equals_hf_and_differs_from_timm_antialias_and_dino(tiny, size):
    """HF's own `interpolate_pos_encoding` (transformers, the model's embeddings module) is the peer."""
    g = tiny.geometry
    _, patches = positional.position_embeddings(engine.position_tables(tiny))
    new = positional.grid_at(g, size)
    ours = positional.interpolate_patch_positions(patches, g.grid, new)  # (P', D)
    emb = tiny.vit.embeddings
    with torch.no_grad():
        tokens_at_size = torch.zeros(1, 1 + new[0] * new[1], g.hidden_size)
        hf = emb.interpolate_pos_encoding(tokens_at_size, size, size)[0, 1:]
    torch.testing.assert_close(ours, hf.float(), atol=1e-6, rtol=1e-5)
    table = emb.position_embeddings.detach().float()
    timm_plain = timm_resample_abs_pos_embed(table, list(new), antialias=False)[0, 1:]
    torch.testing.assert_close(ours, timm_plain, atol=1e-6, rtol=1e-5)  # timm, antialias=False: the same
    timm_default = timm_resample_abs_pos_embed(table, list(new))[0, 1:]
    dino = dino_interpolate_pos_encoding(table, g.patch_size, size, size)[0, 1:]
    assert (ours - timm_default).abs().max() > 1e-3, "timm's default antialias changes the table"
    assert (ours - dino).abs().max() > 1e-3, "DINO's +0.1 scale factor moves the sample points"


# ------------------------------------------------------------------ PCA
def sklearn_pca(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Port of PCA's full-SVD path in scikit-learn sklearn/decomposition/_pca.py (commit
    14eaf8c383e7ce3ce2c6126ca03402b4cdae8891): centre, SVD, svd_flip(U, Vt,
    u_based_decision=False) from sklearn/utils/extmath.py (sign: each component's largest-|entry|
    positive), explained_variance_ = S² / (n − 1). Returns components, scores, variance, ratio."""
    xc = x - x.mean(0)
    u, s, vt = np.linalg.svd(xc, full_matrices=False)
    max_abs_v_rows = np.argmax(np.abs(vt), axis=1)
    signs = np.sign(vt[range(vt.shape[0]), max_abs_v_rows])
    u, vt = u * signs[np.newaxis, :], vt * signs[:, np.newaxis]
    var = s ** 2 / (x.shape[0] - 1)
    return vt[:k], (xc @ vt[:k].T), var[:k], (var / var.sum())[:k]


@pytest.mark.parametrize("n,d", [(49, 32), (40, 200)])
def test_pca_equals_scikit_learn(rng, n, d):
    x = rng.normal(size=(n, d)) * np.linspace(3, 0.5, d)  # distinct variances: a unique decomposition
    comps, scores, var, ratio = sklearn_pca(x, 3)
    fit = tokens.pca(x, 3)
    np.testing.assert_allclose(fit.components, comps, atol=1e-8)
    np.testing.assert_allclose(fit.scores, scores, atol=1e-8)
    np.testing.assert_allclose(fit.explained_variance, var, rtol=1e-9)
    np.testing.assert_allclose(fit.explained_ratio, ratio, rtol=1e-9)


# ------------------------------------------------------------------ MAE: token masking
def mae_random_masking(x: torch.Tensor, mask_ratio: float, noise: torch.Tensor) -> torch.Tensor:
    """Port of MaskedAutoencoderViT.random_masking in facebookresearch/mae models_mae.py
    (commit 6a2ba402291005b003a70e99f7c87d1a2c376b0d), noise passed in. Kept tokens come out
    in the random order of `ids_shuffle`, not sorted."""
    n, length, d = x.shape
    len_keep = int(length * (1 - mask_ratio))
    ids_shuffle = torch.argsort(noise, dim=1)
    ids_keep = ids_shuffle[:, :len_keep]
    return torch.gather(x, dim=1, index=ids_keep.unsqueeze(-1).repeat(1, 1, d))


def test_token_drop_equals_maes_masking(tiny16, cat):
    """MAE's encoder: patches + positions, random_masking, then [CLS] + its position prepended.
    vizvit keeps the same tokens in sorted order; attention does not care about order."""
    import vizvit
    from vizvit.model.images import View

    g = tiny16.geometry
    noise = torch.rand(1, g.num_patches, generator=torch.Generator().manual_seed(10))
    len_keep = int(g.num_patches * (1 - 0.75))
    masked = tuple(sorted(int(i) for i in torch.argsort(noise, dim=1)[0, len_keep:]))
    a = vizvit.analyze(tiny16, cat, View(mask=masked, mask_mode="drop"))
    emb, vit = tiny16.vit.embeddings, tiny16.vit
    with torch.no_grad():
        x = emb.patch_embeddings(a.pixel_values) + emb.position_embeddings[:, 1:]
        x = mae_random_masking(x, 0.75, noise)
        cls = emb.cls_token + emb.position_embeddings[:, :1]
        x = torch.cat([cls.expand(x.shape[0], -1, -1), x], dim=1)
        for block in vit.layers:  # transformers 5: the blocks sit on the model, no encoder wrapper
            x = block(x, None)
            x = x[0] if isinstance(x, tuple) else x
        h = vit.layernorm(x)
        logits = tiny16.model.classifier(h[:, 0])[0]
    torch.testing.assert_close(a.logits.float(), logits.float(), atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------ deletion / insertion
def rise_auc(arr: np.ndarray) -> float:
    """Port of `auc` in eclique/RISE evaluation.py (commit fac5d54225977091dc18cc71ef8e07f726c3bc20)."""
    return (arr.sum() - arr[0] / 2 - arr[-1] / 2) / (arr.shape[0] - 1)


def test_curve_areas_equal_rises_auc(rng):
    dele, ins = rng.random((3, 11)), rng.random((3, 11))
    c = Curves(("a", "b", "c"), np.linspace(0, 1, 11), dele, ins, 0, "x", "black", 1)
    np.testing.assert_allclose(c.deletion_auc, [rise_auc(r) for r in dele], rtol=1e-12)
    np.testing.assert_allclose(c.insertion_auc, [rise_auc(r) for r in ins], rtol=1e-12)


# ------------------------------------------------------------------ labels
def test_labels_name_the_exact_methods(tiny16):
    from vizvit.export import methods_used
    from vizvit.views import attention as ap

    assert "2021b" in ap.RELEVANCE_TEXT and "generic attention" in A.RELEVANCE_METHOD
    assert A.rollout_label("max", 0.9, "per row") == \
        "rollout (Abnar & Zuidema 2020), max fusion, per-row discard 0.90"
    assert "vit-explain" in A.rollout_label("max", 0.9, "global (vit-explain)")
    m = methods_used(tiny16)
    assert "Chefer et al. 2021b" in m["relevance"] and m["discard_mode"] in A.DISCARD_MODES
    assert "renormalised" in m["attention_distance"]
    with pytest.raises(ValueError):
        A.discard_lowest(torch.rand(3, 3), 0.5, 1, "sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        A.attention_distance(random_attention(GEOMS["g7"]), GEOMS["g7"], "halfway")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ra.AttnParams(discard_mode="sideways").checked(GEOMS["g7"])  # type: ignore[arg-type]


def test_the_attention_tab_threads_the_discard_mode_and_distance_normalisation(geom):
    from vizvit.views import attention as ap

    att = random_attention(geom, seed=11)
    a, vm = stand_in_analysis(geom, att), StandInModel(geom)
    vm.display_name = "constructed"
    p = ra.AttnParams(layer=geom.num_layers, show="max", mode="rolled out", discard=0.9,
                      discard_mode="global (vit-explain)")
    want = A.rollout_maps(att, geom, "max", 0.9, "global (vit-explain)")
    np.testing.assert_allclose(ra.strip_maps(a, p).numpy(), want.numpy(), rtol=1e-6)
    main = ap.main_panel(vm, a, p)
    np.testing.assert_allclose(main.values, want[-1].numpy(), rtol=1e-6)
    assert "global (vit-explain) discard 0.90" in main.readout
    per_row = ra.strip_maps(a, ra.AttnParams(show="max", discard=0.9)).numpy()
    assert np.abs(per_row - want.numpy()).max() > 1e-4
    fig, choices = ap.distance_view(vm, a, "raw (probing-vits)")
    assert "probing-vits" in fig.layout.title.text and len(choices) == geom.num_layers * geom.num_heads
    np.testing.assert_allclose(np.array(fig.data[0].y), A.attention_distance(att, geom, "raw (probing-vits)")
                               .numpy().ravel(), rtol=1e-6)
