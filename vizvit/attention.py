"""Attention maps from a cached Analysis: head fusion, [CLS] rows, rollout.

Pure functions over tensors. Shapes: A is (L, H, N, N) with rows = queries (each row
sums to 1 over the keys); N = num_prefix_tokens + gh·gw.
"""

from __future__ import annotations

import torch

from .errors import UserError
from .models import Geometry
from .vocab import Direction, Fusion


def fuse_heads(att: torch.Tensor, fusion: Fusion = "mean") -> torch.Tensor:
    """(..., H, N, N) -> (..., N, N): mean, max or min over the head axis."""
    att = att.float()
    if fusion == "mean":
        return att.mean(-3)
    if fusion == "max":
        return att.amax(-3)
    if fusion == "min":
        return att.amin(-3)
    raise UserError(f"Unknown head fusion {fusion!r}: use mean, max or min.")


def cls_to_patches(att: torch.Tensor, g: Geometry) -> torch.Tensor:
    """(..., N, N) -> (..., gh, gw): the [CLS] query's row over the patch keys, row-major."""
    return att[..., 0, g.num_prefix_tokens:].reshape(*att.shape[:-2], *g.grid)


def discard_lowest(fused: torch.Tensor, ratio: float, num_prefix_tokens: int) -> torch.Tensor:
    """Zero the lowest `ratio` of each row's weights over the patch keys.

    (L, N, N) -> (L, N, N). Prefix-token columns ([CLS]) are never discarded.
    """
    if ratio <= 0:
        return fused
    if not 0 <= ratio < 1:
        raise UserError("The discard ratio must be in [0, 1).")
    patches = fused[..., num_prefix_tokens:]  # (L, N, P)
    k = int(patches.shape[-1] * ratio)
    if k == 0:
        return fused
    idx = patches.topk(k, dim=-1, largest=False).indices
    out = fused.clone()
    out[..., num_prefix_tokens:] = patches.scatter(-1, idx, 0.0)
    return out


def rollout_stack(att: torch.Tensor, fusion: Fusion = "mean", discard: float = 0.0,
                  num_prefix_tokens: int = 1) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020) after every layer.

    att: (L, H, N, N) -> (L, N, N) where [l] = Â_{l+1} ··· Â_1 (0-based: rollout through
    block l+1), with Â = 0.5·F + 0.5·I, rows renormalised to sum to 1, F the fused heads
    with the lowest `discard` fraction of patch keys zeroed per row.
    """
    fused = discard_lowest(fuse_heads(att, fusion), discard, num_prefix_tokens)  # (L, N, N)
    n = fused.shape[-1]
    eye = torch.eye(n, dtype=fused.dtype)
    a_hat = 0.5 * fused + 0.5 * eye
    a_hat = a_hat / a_hat.sum(-1, keepdim=True)  # keepdim: vit-explain's issue #16
    out = torch.empty_like(a_hat)
    r = eye
    for layer in range(a_hat.shape[0]):  # layer order: R_l = Â_l · R_{l-1}
        r = a_hat[layer] @ r
        out[layer] = r
    return out


def rollout_maps(att: torch.Tensor, g: Geometry, fusion: Fusion = "mean", discard: float = 0.0) -> torch.Tensor:
    """(L, H, N, N) -> (L, gh, gw): the [CLS] row of the rollout after each layer."""
    return cls_to_patches(rollout_stack(att, fusion, discard, g.num_prefix_tokens), g)




def select_matrix(att: torch.Tensor, layer: int, head: int | Fusion) -> torch.Tensor:
    """(L, H, N, N) -> (N, N) float32: one head of `layer` (0-based both), or the
    layer's heads fused by "mean", "max" or "min"."""
    if isinstance(head, str):
        return fuse_heads(att[layer], head)
    return att[layer, head].float()


def query_map(m: torch.Tensor, token: int, direction: Direction, g: Geometry) -> torch.Tensor:
    """(..., N, N) -> (..., gh, gw) over the patches.

    row: what query `token` attends to, m[token, patch keys];
    column: how much each patch query attends to key `token`, m[patch queries, token].
    token 0 with "row" is the [CLS] map.
    """
    p = g.num_prefix_tokens
    if direction == "row":
        v = m[..., token, p:]
    elif direction == "column":
        v = m[..., p:, token]
    else:
        raise UserError(f"Unknown direction {direction!r}: use row or column.")
    return v.reshape(*v.shape[:-1], *g.grid)


def rollout_heads(att: torch.Tensor, num_prefix_tokens: int = 1) -> torch.Tensor:
    """Per-head rollout: (L, H, N, N) -> (L, H, N, N), [l, h] = Â_{l,h} · R_{l-1}.

    R_{l-1} is the mean-fusion, no-discard rollout through the layers below (R_0 = I)
    and Â_{l,h} = 0.5·A_{l,h} + 0.5·I with rows renormalised. Mean fusion is linear, so
    the mean over h of [l, h] equals rollout_stack(att)[l]. One batched (H, N, N) @ (N, N)
    product per layer.
    """
    n = att.shape[-1]
    eye = torch.eye(n)
    below = rollout_stack(att, "mean", 0.0, num_prefix_tokens)  # (L, N, N)
    # Layer by layer in float32, stored in the attentions' dtype: forward.py keeps very
    # large stacks (ViT-L/16 at 384 px: 511 MB) in float16, and so does this one.
    out = torch.empty(att.shape, dtype=att.dtype if att.dtype == torch.float16 else torch.float32)
    for layer in range(att.shape[0]):
        a_hat = 0.5 * att[layer].float() + 0.5 * eye  # (H, N, N)
        a_hat = a_hat / a_hat.sum(-1, keepdim=True)
        r_prev = eye if layer == 0 else below[layer - 1]
        out[layer] = a_hat @ r_prev  # (H, N, N) @ (N, N), broadcast over heads
    return out


def chefer_relevance(att: list[torch.Tensor] | torch.Tensor, grads: list[torch.Tensor] | torch.Tensor) -> torch.Tensor:
    """Chefer et al. 2021 ("generic attention-model explainability") relevance, (N, N).

    att, grads: per layer (H, N, N), in layer order (vit-explain's issue #6 had them
    reversed). R = I; for each layer R <- R + mean_h[(∇A ⊙ A)⁺] · R.
    """
    n = att[0].shape[-1]
    r = torch.eye(n, dtype=torch.float32)
    for a_l, g_l in zip(att, grads):
        cam = (g_l.float() * a_l.float()).clamp(min=0).mean(0)  # (N, N)
        r = r + cam @ r
    return r


def patch_distances(g: Geometry) -> torch.Tensor:
    """(P, P) Euclidean distances between patch centres, in model-input pixels."""
    gh, gw = g.grid
    rows, cols = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    centres = torch.stack([rows.flatten(), cols.flatten()], -1).float() * g.patch_size  # (P, 2)
    return torch.cdist(centres, centres)


def attention_distance(att: torch.Tensor, g: Geometry) -> torch.Tensor:
    """Mean attention distance (ViT paper Fig. 7), (L, H, N, N) -> (L, H) pixels.

    d = mean over patch queries i of Σ_j A[i,j]·dist(i,j) / Σ_j A[i,j], j over patches
    only ([CLS] excluded, hence the renormalisation).
    """
    p = g.num_prefix_tokens
    a = att[..., p:, p:].float()  # (L, H, P, P)
    per_query = (a * patch_distances(g)).sum(-1) / a.sum(-1).clamp_min(1e-12)  # (L, H, P)
    return per_query.mean(-1)


def mass_threshold(values: torch.Tensor, tau: float) -> torch.Tensor:
    """(gh, gw) non-negative map -> bool mask of the smallest set of patches that holds
    at least a fraction `tau` of the total mass (DINO's attention threshold)."""
    if not 0 < tau <= 1:
        raise UserError("The mass threshold τ must be in (0, 1].")
    flat = values.flatten().float().clamp_min(0)
    order = flat.argsort(descending=True)
    cum = flat[order].cumsum(0)
    k = int((cum < tau * cum[-1]).sum()) + 1  # first prefix whose mass reaches tau
    keep = torch.zeros_like(flat, dtype=torch.bool)
    keep[order[:min(k, flat.numel())]] = True
    return keep.reshape(values.shape)
