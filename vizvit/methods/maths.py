"""Attention maps from a cached Analysis: head fusion, [CLS] rows, rollout.

Pure functions over tensors. Shapes: A is (L, H, N, N) with rows = queries (each row
sums to 1 over the keys); N = num_prefix_tokens + gh·gw.
"""

from __future__ import annotations

import torch

from vizvit.errors import UserError
from vizvit.model.models import MAP_HEAD, Geometry
from vizvit.vocab import DISCARD_MODES, DISTANCE_NORMS, Direction, DiscardMode, DistanceNorm, Fusion

# Exact method names for titles, texts and export (docs/methods.md has the formulas).
ROLLOUT_METHOD = "rollout (Abnar & Zuidema 2020)"
PER_HEAD_ROLLOUT_METHOD = "per-head rollout (vizvit: Â_{l,h}·R_{l−1}, mean rollout below)"
RELEVANCE_METHOD = "Chefer et al. 2021b (generic attention)"
DISTANCE_METHOD = "mean attention distance (Dosovitskiy et al. 2021, Fig. 7)"
MASS_THRESHOLD_METHOD = "mass threshold (DINO, Caron et al. 2021)"


def rollout_label(fusion: str = "mean", discard: float = 0.0, mode: str = "per row") -> str:
    """E.g. "rollout (Abnar & Zuidema 2020), max fusion, per-row discard 0.90"."""
    tail = f", {mode.replace('per row', 'per-row')} discard {discard:.2f}" if discard > 0 else ", no discard"
    return f"{ROLLOUT_METHOD}, {fusion} fusion{tail}"


def distance_label(norm: str = "renormalised") -> str:
    return DISTANCE_METHOD + (", [CLS] dropped, patches renormalised" if norm == "renormalised"
                              else ", [CLS] dropped, not renormalised (probing-vits)")


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


def summary_row(att: torch.Tensor, g: Geometry, summary: str | torch.Tensor | None = None) -> torch.Tensor:
    """(..., N, N) -> (..., N): the row of the summary token (g.summaries: [CLS], [DIST]...;
    None = the family's default). PATCH_MEAN (a mean-pooling head, BEiT) is the mean of the
    patch queries' rows: what the pooled vector is a mean of.

    A MAP summary (SigLIP: no [CLS]; a pooling head's probe attends once, after the last block) is
    not in the sequence: pass its weights over the tokens as `summary` (N,) (the MAP head's
    attention, heads fused: Analysis.summary_weights); its row through a matrix M is summary·M. For
    a rollout R_l that is the rollout ending with the MAP head; for one layer's attention A_l, the
    MAP weights read back through that layer (summary·A_l)."""
    if isinstance(summary, torch.Tensor):
        return summary.float() @ att.float()  # (N,) @ (..., N, N) -> (..., N)
    if (summary or g.summaries[0]) == MAP_HEAD:
        raise UserError("This model's summary is its attention-pooling head: pass its attention "
                        "(Analysis.summary_weights).")
    i = g.summary_index(summary)
    if i < 0:
        return att[..., g.num_prefix_tokens:, :].mean(-2)
    return att[..., i, :]


def cls_to_patches(att: torch.Tensor, g: Geometry, summary: str | torch.Tensor | None = None) -> torch.Tensor:
    """(..., N, N) -> (..., gh, gw): the summary's row over the patch keys, row-major (the [CLS]
    row for a plain ViT and CLIP; SigLIP: summary·M with the MAP head's weights; see summary_row)."""
    return summary_row(att, g, summary)[..., g.num_prefix_tokens:].reshape(*att.shape[:-2], *g.grid)


def discard_lowest(fused: torch.Tensor, ratio: float, num_prefix_tokens: int,
                   mode: DiscardMode = "per row") -> torch.Tensor:
    """Zero the lowest `ratio` of the fused weights. (..., N, N) -> (..., N, N).

    per row: in each row, the lowest ⌊ratio·P⌋ of the P patch keys; prefix-token
    columns ([CLS]) are never discarded.
    global (vit-explain): the lowest ⌊ratio·N²⌋ entries of the whole N×N matrix, any
    row or column, except that [CLS]→[CLS] is put back if it was among them (so one
    fewer is zeroed), exactly as jacobgil/vit-explain's rollout does.
    """
    if ratio <= 0:
        return fused
    if not 0 <= ratio < 1:
        raise UserError("The discard ratio must be in [0, 1).")
    if mode == "global (vit-explain)":
        n = fused.shape[-1]
        flat = fused.reshape(*fused.shape[:-2], n * n)  # (..., N²)
        k = int(n * n * ratio)  # vit-explain: int(flat.size(-1) * discard_ratio)
        if k == 0:
            return fused
        idx = flat.topk(k, dim=-1, largest=False).indices
        out = flat.scatter(-1, idx, 0.0)
        out[..., 0] = flat[..., 0]  # [CLS]→[CLS] is kept
        return out.reshape(fused.shape)
    if mode != "per row":
        raise UserError(f"Unknown discard mode {mode!r}: use {' or '.join(DISCARD_MODES)}.")
    patches = fused[..., num_prefix_tokens:]  # (..., N, P)
    k = int(patches.shape[-1] * ratio)
    if k == 0:
        return fused
    idx = patches.topk(k, dim=-1, largest=False).indices
    out = fused.clone()
    out[..., num_prefix_tokens:] = patches.scatter(-1, idx, 0.0)
    return out


def rollout_stack(att: torch.Tensor, fusion: Fusion = "mean", discard: float = 0.0,
                  num_prefix_tokens: int = 1, discard_mode: DiscardMode = "per row") -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020) after every layer.

    att: (L, H, N, N) -> (L, N, N) where [l] = Â_{l+1} ··· Â_1 (0-based: rollout through
    block l+1), with Â = 0.5·F + 0.5·I, rows renormalised to sum to 1, F the fused heads
    with the lowest `discard` fraction zeroed (per row of patch keys, or globally as
    vit-explain does: see discard_lowest).
    """
    fused = discard_lowest(fuse_heads(att, fusion), discard, num_prefix_tokens, discard_mode)  # (L, N, N)
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


def rollout_row(att: torch.Tensor, q: torch.Tensor, layer: int, fusion: Fusion = "mean", discard: float = 0.0,
                num_prefix_tokens: int = 1, discard_mode: DiscardMode = "per row",
                head: int | None = None) -> torch.Tensor:
    """One row of a rollout: q · R, (N,), for query weights q (N,) (token t's row: q = e_t; the
    patch queries' mean; SigLIP's MAP weights). R is rollout_stack's rollout through `layer` (1-based)
    layers, Â_layer ··· Â_1; or with `head` (0-based) the per-head rollout rollout_heads gives,
    Â_{layer,head} · R_{layer−1} over the mean, no-discard rollout below. Vector-times-matrix products
    from the top layer down: layer · N² multiply-adds where the whole stack takes layer · N³ (the
    live camera draws one map a frame)."""
    # v · Â with Â = D⁻¹(½F + ½I), D the rows' sums: (v / d) · ½F + (v / d) · ½, without building Â.
    if head is None:
        fused = discard_lowest(fuse_heads(att[:layer], fusion), discard, num_prefix_tokens, discard_mode)
    else:  # the head on top of the mean rollout, no discard, below it
        fused = torch.cat([fuse_heads(att[:layer - 1], "mean"), att[layer - 1, head][None].float()])
    d = 0.5 * fused.sum(-1) + 0.5  # (layer, N)
    v = q.float()
    for layer_i in range(layer - 1, -1, -1):
        w = v / d[layer_i]
        v = 0.5 * (w @ fused[layer_i]) + 0.5 * w
    return v


def rollout_maps(att: torch.Tensor, g: Geometry, fusion: Fusion = "mean", discard: float = 0.0,
                 discard_mode: DiscardMode = "per row", summary: str | torch.Tensor | None = None) -> torch.Tensor:
    """(L, H, N, N) -> (L, gh, gw): the summary's row ([CLS] for ViT) of the rollout after each
    layer (SigLIP: summary·R_l, the rollout ending with the MAP head, see summary_row)."""
    return cls_to_patches(rollout_stack(att, fusion, discard, g.num_prefix_tokens, discard_mode), g, summary)




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
    token 0 with "row" is the [CLS] map. token -1 is the patch mean (a mean-pooling head's
    summary): row = the patch queries' mean row; column = each patch query's mean weight on
    the patches.
    """
    p = g.num_prefix_tokens
    if direction == "row":
        v = m[..., p:, p:].mean(-2) if token < 0 else m[..., token, p:]
    elif direction == "column":
        v = m[..., p:, p:].mean(-1) if token < 0 else m[..., p:, token]
    else:
        raise UserError(f"Unknown direction {direction!r}: use row or column.")
    return v.reshape(*v.shape[:-1], *g.grid)


def rollout_heads(att: torch.Tensor, num_prefix_tokens: int = 1, below: torch.Tensor | None = None) -> torch.Tensor:
    """Per-head rollout: (L, H, N, N) -> (L, H, N, N), [l, h] = Â_{l,h} · R_{l-1}.

    R_{l-1} is the mean-fusion, no-discard rollout through the layers below (R_0 = I)
    and Â_{l,h} = 0.5·A_{l,h} + 0.5·I with rows renormalised. Mean fusion is linear, so
    the mean over h of [l, h] equals rollout_stack(att)[l]. One batched (H, N, N) @ (N, N)
    product per layer. below: that mean rollout (L, N, N), when already computed (vizvit.methods.maps).
    """
    n = att.shape[-1]
    eye = torch.eye(n)
    if below is None:
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
    """Chefer et al. 2021b ("Generic Attention-model Explainability", ICCV 2021) relevance, (N, N).

    att, grads: per layer (H, N, N), in layer order (vit-explain's issue #6 had them
    reversed). R = I; for each layer R <- R + mean_h[(∇A ⊙ A)⁺] · R (the paper's rules
    5 and 6). Not Chefer et al. 2021a (LRP, "Transformer Interpretability Beyond
    Attention Visualization"), a different method.
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


def attention_distance(att: torch.Tensor, g: Geometry, norm: DistanceNorm = "renormalised") -> torch.Tensor:
    """Mean attention distance (ViT paper Fig. 7), (L, H, N, N) -> (L, H) pixels.

    renormalised: d = mean over patch queries i of Σ_j A[i,j]·dist(i,j) / Σ_j A[i,j], j over
    patches only ([CLS] excluded, the rest rescaled to sum to 1).
    raw (probing-vits): d = mean_i Σ_j A[i,j]·dist(i,j), no rescaling, so each query's
    term is the renormalised one times (1 − its weight on the prefix tokens).
    """
    p = g.num_prefix_tokens
    a = att[..., p:, p:].float()  # (L, H, P, P)
    per_query = (a * patch_distances(g)).sum(-1)  # (L, H, P)
    if norm == "renormalised":
        per_query = per_query / a.sum(-1).clamp_min(1e-12)
    elif norm != "raw (probing-vits)":
        raise UserError(f"Unknown distance normalisation {norm!r}: use {' or '.join(DISTANCE_NORMS)}.")
    return per_query.mean(-1)


def mass_threshold(values: torch.Tensor, tau: float) -> torch.Tensor:
    """(gh, gw) non-negative map -> bool mask of the smallest set of patches that holds
    at least a fraction `tau` of the total mass (DINO's attention threshold)."""
    return mass_thresholds(values.reshape(1, -1), tau).reshape(values.shape)


def mass_thresholds(values: torch.Tensor, tau: float) -> torch.Tensor:
    """(Q, P) maps, one a row -> (Q, P) bool: mass_threshold of each row, in one sort. Of equal
    weights the lower patch number is kept first (a stable sort), so a map's mask is the same alone
    or in a stack (the page gets every clicked query's mask at once: views.books.query_book)."""
    if not 0 < tau <= 1:
        raise UserError("The mass threshold τ must be in (0, 1].")
    flat = values.float().clamp_min(0)
    order = flat.argsort(dim=1, descending=True, stable=True)
    cum = flat.gather(1, order).cumsum(1)
    k = (cum < tau * cum[:, -1:]).sum(1) + 1  # first prefix whose mass reaches tau
    ranked = torch.arange(flat.shape[1]).expand_as(flat) < k[:, None]
    return torch.zeros_like(flat, dtype=torch.bool).scatter_(1, order, ranked)
