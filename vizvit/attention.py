"""Attention maps from a cached Analysis: head fusion, [CLS] rows, rollout.

Pure functions over tensors. Shapes: A is (L, H, N, N) with rows = queries (each row
sums to 1 over the keys); N = num_prefix_tokens + gh·gw.
"""

from __future__ import annotations

from typing import Literal

import torch

from .models import Geometry

Fusion = Literal["mean", "max", "min"]


def fuse_heads(att: torch.Tensor, fusion: Fusion = "mean") -> torch.Tensor:
    """(..., H, N, N) -> (..., N, N): mean, max or min over the head axis."""
    att = att.float()
    if fusion == "mean":
        return att.mean(-3)
    if fusion == "max":
        return att.amax(-3)
    if fusion == "min":
        return att.amin(-3)
    raise ValueError(f"Unknown head fusion {fusion!r}: use mean, max or min.")


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
        raise ValueError("The discard ratio must be in [0, 1).")
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
