"""Token embeddings: how pixels become tokens, and what tokens look like layer by layer.

Pure functions over tensors. Shapes: hidden states are (L+1, N, D) with [0] the output
of the embedding stage and [l] the output of block l; N = num_prefix_tokens + gh·gw;
P (patches) = gh·gw; p = patch size in pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.model.patches import patch_tokens, positions_for_grid, to_grid

NUM_FILTER_COMPONENTS = 28  # ViT paper, Fig. 7 left


# ------------------------------------------------------------------ the embedding stage
@dataclass(frozen=True)
class EmbeddingWeights:
    """The embedding stage's own weights, as tensors (engine.embedding_weights reads them from the
    model under its lock): this module only does maths with them."""

    conv_weight: torch.Tensor  # (D, 3, p, p): the patch conv, kernel = stride = p
    conv_bias: torch.Tensor | None  # (D,); None for CLIP / SigLIP
    stride: int  # p
    # (T', D) the prefix tokens that get a position ([CLS]; DeiT [CLS] [DIST]; SigLIP none)
    prefix: torch.Tensor
    positions: torch.Tensor | None  # (T' + P0, D) the learned table; None for a relative bias (BEiT)
    table_grid: tuple[int, int]  # (th, tw), th·tw = P0: the grid the table was trained at (VitModel.position_grid)
    registers: torch.Tensor | None  # (R, D) register tokens (no position), or None
    pre_norm: tuple[torch.Tensor, torch.Tensor, float] | None  # CLIP's pre-layernorm (weight, bias, eps)


def conv_as_unfold_linear(pixels: torch.Tensor, weight: torch.Tensor,
                          bias: torch.Tensor | None = None) -> torch.Tensor:
    """The patch-embedding conv written as "cut into patches, apply one matrix".

    pixels (1, 3, H, W), weight (D, 3, p, p) -> (1, P, D). Each p×p patch is flattened channel-first
    (F.unfold's order, the same as the conv weight's (D, 3, p, p) layout) and multiplied
    by the conv weight reshaped to a (D, 3·p·p) matrix. Equal to
    conv(pixels).flatten(2).transpose(1, 2) because kernel = stride = p: the windows
    neither overlap nor leave gaps.
    """
    p = weight.shape[-1]
    cols = F.unfold(pixels, kernel_size=p, stride=p)  # (1, 3·p·p, P)
    return F.linear(cols.transpose(1, 2), weight.reshape(weight.shape[0], -1), bias)  # (1, P, D)


@dataclass(frozen=True)
class EmbeddingStage:
    """The embedding stage recomputed step by step from the model's own weights."""

    shapes: tuple[tuple[str, tuple[int, ...]], ...]  # (step name, tensor shape), in order
    conv_vs_linear: float  # max |conv - unfold+linear|
    conv_vs_forward: float  # max |our conv tokens - the patch embeddings the forward captured|
    embed_vs_forward: float  # max |[CLS]+patches+positions - hidden_states[0]|
    patch_dim: int  # 3·p·p numbers per patch


@torch.inference_mode()
def embedding_stage_of(w: EmbeddingWeights, pixels: torch.Tensor, patch_embeddings: torch.Tensor,
                       hidden0: torch.Tensor, g: Geometry, pe_prefix: int = 1,
                       antialias: bool = False) -> EmbeddingStage:
    """Run only the embedding stage by hand (from weights `w`) and check it against the cached forward.

    pixels (1, 3, H, W); patch_embeddings (P, D) and hidden0 (N, D) from the Analysis. Cheap (one
    conv), so it runs no transformer block. pe_prefix: prefix tokens with a position row; antialias:
    the family interpolates its table with antialiasing (its Family says so).
    """
    dev = w.conv_weight.device
    x = pixels.to(dev, w.conv_weight.dtype)  # (1, 3, H, W)
    fmap = F.conv2d(x, w.conv_weight, w.conv_bias, stride=w.stride)  # (1, D, gh, gw)
    seq = fmap.flatten(2).transpose(1, 2)  # (1, P, D): row-major over the grid
    lin = conv_as_unfold_linear(x, w.conv_weight, w.conv_bias)  # (1, P, D)
    # The prefix tokens that get a position ([CLS], and DeiT's [DIST]) go in front first (SigLIP: none).
    pe_names = g.prefix_names[:pe_prefix]
    # (1, pe_prefix + P, D)
    tokens = torch.cat([w.prefix[None].to(seq.dtype), seq], dim=1) if pe_names else seq
    shapes = [("pixels", tuple(x.shape)), ("conv 3→D, kernel = stride = p", tuple(fmap.shape)),
              ("flatten row-major", tuple(seq.shape))]
    if pe_names:
        shapes.append((f"prepend {' '.join(pe_names)}", tuple(tokens.shape)))
    if w.positions is not None:  # (pe_prefix + P0, D), interpolated to this grid as the family does
        pe_pre, pe_patches = w.positions[:pe_prefix], w.positions[pe_prefix:]
        pe_patches = positions_for_grid(pe_patches.float(), w.table_grid, g.grid, antialias).to(pe_patches.dtype)
        embedded = tokens + torch.cat([pe_pre, pe_patches])[None]  # (1, pe_prefix + P, D)
        shapes.append(("add position embeddings", tuple(embedded.shape)))
    else:  # BEiT: positions enter inside attention, as a relative bias (or, as its config may say, not at all)
        embedded = tokens
        shapes.append(("no absolute positions added", tuple(embedded.shape)))
    # Registers go between [CLS] and the patches, after the positions: they have none.
    if w.registers is not None:
        embedded = torch.cat([embedded[:, :1], w.registers[None], embedded[:, 1:]], dim=1)
        shapes.append((f"insert [REG1]…[REG{g.num_registers}] after [CLS]", tuple(embedded.shape)))
    if w.pre_norm is not None:
        weight, bias, eps = w.pre_norm
        embedded = F.layer_norm(embedded, (embedded.shape[-1],), weight, bias, eps)
        shapes.append(("pre-layernorm (CLIP)", tuple(embedded.shape)))
    seq_c, emb_c = seq[0].float().cpu(), embedded[0].float().cpu()
    return EmbeddingStage(
        shapes=tuple(shapes),
        conv_vs_linear=float((seq - lin).abs().max()),
        conv_vs_forward=float((seq_c - patch_embeddings.float()).abs().max()),
        embed_vs_forward=float((emb_c - hidden0.float()).abs().max()),
        patch_dim=int(w.conv_weight[0].numel()),
    )


@dataclass(frozen=True)
class ParamRow:
    stage: str  # e.g. "block 3 · attention (q, k, v, o)"
    count: int


def _stage_of(name: str) -> str:
    """Parameter name (HF ViT naming) -> the stage it belongs to."""
    parts = name.split(".")
    if "embeddings" in parts:
        if "patch_embeddings" in parts:
            return "embedding conv (patch projection)"
        if "cls_token" in parts:
            return "[CLS] token"
        if "position_embeddings" in parts:
            return "position embeddings"
        return "embeddings · other"
    if "layers" in parts or "layer" in parts:
        i = parts.index("layers" if "layers" in parts else "layer")
        block = f"block {int(parts[i + 1]) + 1}"
        if "attention" in parts:
            return f"{block} · attention (q, k, v, o)"
        if "mlp" in parts or "intermediate" in parts or "output" in parts:
            return f"{block} · MLP (fc1, fc2)"
        if any(n.startswith("layernorm") for n in parts):
            return f"{block} · norms (before, after)"
        return f"{block} · other"
    if "layernorm" in parts:
        return "final norm"
    if parts[0] == "classifier":
        return "classifier"
    if "pooler" in parts:
        return "pooler"
    return "other"


def parameter_table(model: torch.nn.Module) -> tuple[ParamRow, ...]:
    """Parameters per stage and per encoder block, in model order. Every parameter lands in
    exactly one row (unknown ones in "other"), so the rows sum to sum(p.numel())."""
    counts: dict[str, int] = {}
    for name, p in model.named_parameters():
        stage = _stage_of(name)
        counts[stage] = counts.get(stage, 0) + p.numel()
    return tuple(ParamRow(s, c) for s, c in counts.items())


# ------------------------------------------------------------------ PCA
@dataclass(frozen=True)
class PCA:
    """Principal components of n samples of dimension d."""

    components: np.ndarray  # (k, d) unit rows, sign fixed: largest-|loading| entry positive
    scores: np.ndarray  # (n, k) centred samples projected on the components
    explained_variance: np.ndarray  # (k,) variance along each component (ddof = 1)
    explained_ratio: np.ndarray  # (k,) share of the total variance
    mean: np.ndarray  # (d,)


def pca(x: np.ndarray | torch.Tensor, k: int) -> PCA:
    """PCA of x (n, d), in float64.

    Eigen-decomposes the smaller of the two Gram matrices of the centred data (n×n or
    d×d) with torch: the same components as an SVD, and ~30× faster than numpy's SVD on
    a busy shared CPU. SVD/eigh leave each component's sign arbitrary (it can flip
    between BLAS builds or between two nearly identical photos); flipping so the
    largest-|loading| entry is positive makes colours and scatter plots deterministic.
    """
    x = torch.as_tensor(np.asarray(x), dtype=torch.float64)
    n, d = x.shape
    if not 1 <= k <= min(n, d):
        raise UserError(f"Cannot take {k} principal components of {n} samples of dimension {d}.")
    mean = x.mean(0)
    xc = x - mean  # (n, d)
    if n <= d:
        lam, u = torch.linalg.eigh(xc @ xc.T)  # ascending; lam = s²
        lam, u = lam.flip(0)[:k].clamp_min(0), u.flip(1)[:, :k]
        comps = (xc.T @ u / lam.sqrt().clamp_min(1e-300)).T  # (k, d) = V's first rows
    else:
        lam, v = torch.linalg.eigh(xc.T @ xc)
        lam, comps = lam.flip(0)[:k].clamp_min(0), v.flip(1)[:, :k].T
    comps = comps / comps.norm(dim=1, keepdim=True).clamp_min(1e-300)
    big = comps.abs().argmax(1)
    signs = torch.sign(comps[torch.arange(k), big])
    signs[signs == 0] = 1.0
    comps = comps * signs[:, None]
    var = lam / max(n - 1, 1)
    total = float((xc**2).sum()) / max(n - 1, 1)
    ratio = var / total if total > 0 else torch.zeros(k, dtype=torch.float64)
    return PCA(components=comps.numpy(), scores=(xc @ comps.T).numpy(), explained_variance=var.numpy(),
               explained_ratio=ratio.numpy(), mean=mean.numpy())


def fitted_rows(exclude: np.ndarray | None, n: int, k: int) -> np.ndarray:
    """(n,) bool: the rows pca_without fits, those `exclude` leaves in, or all of them where k or fewer are left."""
    keep = np.ones(n, bool) if exclude is None else ~np.asarray(exclude, bool).reshape(-1)
    return keep if keep.sum() > k else np.ones(n, bool)


def pca_without(x: np.ndarray | torch.Tensor, exclude: np.ndarray | None, k: int) -> PCA:
    """PCA fitted on the rows of x (n, d) that `exclude` (n,) bool leaves in, with scores (n, k)
    for EVERY row (the left-out rows projected on the fitted mean and components).

    A trained ViT's artifact tokens (vizvit.readings.artifacts_rule) have norms 20-45× the others': fitted with
    them, component 1 is "artifact or not" (94 % of the variance on ViT-Ti) and the other patches
    collapse to one point. explained_* describe the fitted rows only. Too few rows left (≤ k): the
    plain fit of all rows."""
    x = np.asarray(x, dtype=np.float64)
    keep = fitted_rows(exclude, len(x), k)
    if keep.all():
        return pca(x, k)
    fit = pca(x[keep], k)
    return replace(fit, scores=(x - fit.mean) @ fit.components.T)


def minmax(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """Scale to [0, 1] along `axis` (a constant column becomes 0.5)."""
    lo, hi = x.min(axis, keepdims=True), x.max(axis, keepdims=True)
    span = hi - lo
    return np.where(span > 0, (x - lo) / np.where(span > 0, span, 1), 0.5)


# ------------------------------------------------------------------ tokens per depth
@dataclass(frozen=True)
class TokenStats:
    """Everything per depth l = 0..L that the depth slider shows, computed once per photo."""

    pca_rgb: np.ndarray  # (L+1, gh, gw, 3) float32 in [0, 1]: patch-token PCA of all patches, 3 components
    pca_xy: np.ndarray  # (L+1, P, 2) float32: the first two PCA scores of each patch token
    pca_ratio: np.ndarray  # (L+1, 3) float32: variance share of those components
    # The same PCA fitted without the `excluded` patches of each depth (artifact tokens): what the
    # page shows. Equal to the three above at a depth with nothing excluded.
    excluded: np.ndarray  # (L+1, gh, gw) bool: patches left out of the fit and of the colour ranges
    fit_rgb: np.ndarray  # (L+1, gh, gw, 3) float32 in [0, 1]: left-out patches projected, clipped
    fit_xy: np.ndarray  # (L+1, P, 2) float32: scores of every patch on the fitted components
    fit_ratio: np.ndarray  # (L+1, 3) float32: variance share among the fitted patches
    norms: np.ndarray  # (L+1, gh, gw) float32: ‖token‖₂ of each patch
    cls_norms: np.ndarray  # (L+1,) float32: ‖[CLS]‖₂
    prefix_norms: np.ndarray  # (L+1, T) float32: ‖token‖₂ of every prefix token ([CLS], [DIST], [REG1..R])
    outliers: np.ndarray  # (L+1, gh, gw) bool: high-norm patches (norm_outliers)
    cls_sim: np.ndarray  # (L+1, gh, gw) float32: cos([CLS], patch)


def token_norms(hidden: torch.Tensor, g: Geometry) -> torch.Tensor:
    """(L+1, N, D) -> (L+1, gh, gw): the L2 norm of each patch token at each depth."""
    return to_grid(patch_tokens(hidden, g).float().norm(dim=-1), g)


# Darcet et al. 2024 ("Vision Transformers Need Registers") call a patch an artifact when its
# output norm exceeds 150 in DINOv2 ViT-L/g; that absolute number does not carry over to other
# widths or depths, so vizvit flags norms far out in each depth's own patch-norm distribution.
OUTLIER_K = 3.0
OUTLIER_METHOD = ("high-norm outlier: ‖token‖₂ > Q3 + 3·IQR of that depth's patch-token norms (Tukey's "
                  "far-out fence); Darcet et al. 2024 use ‖token‖ > 150 for DINOv2 ViT-L/g")


def norm_outliers(norms: torch.Tensor, k: float = OUTLIER_K) -> torch.Tensor:
    """(..., gh, gw) patch-token norms -> bool, same shape: norm > Q3 + k·IQR of the patch norms
    at the same depth (the last two axes)."""
    flat = norms.flatten(-2).float()  # (..., P)
    q1 = torch.quantile(flat, 0.25, dim=-1, keepdim=True)
    q3 = torch.quantile(flat, 0.75, dim=-1, keepdim=True)
    return (flat > q3 + k * (q3 - q1)).reshape(norms.shape)


def cosine_to(x: torch.Tensor, i: int) -> torch.Tensor:
    """(n, D) -> (n,): cosine similarity of token i to every token (one row of
    positional.cosine_similarity_matrix)."""
    return F.cosine_similarity(x.float(), x[i:i + 1].float(), dim=-1)


def cls_patch_similarity(hidden: torch.Tensor, g: Geometry) -> torch.Tensor:
    """(L+1, N, D) -> (L+1, gh, gw): cos([CLS], patch) at each depth. [CLS] is token 0."""
    h = hidden.float()
    return to_grid(F.cosine_similarity(patch_tokens(h, g), h[:, :1], dim=-1), g)


def token_pca_rgb(patches: torch.Tensor | np.ndarray, g: Geometry,
                  exclude: np.ndarray | None = None) -> tuple[np.ndarray, PCA]:
    """(P, D) patch tokens -> (gh, gw, 3) in [0, 1]: three PCA scores as R, G, B, each
    min-max scaled over the patches; plus the PCA. exclude: (gh, gw) or (P,) bool patches left
    out of the fit and of the min-max; they are projected and clipped to [0, 1]."""
    fit = pca_without(patches, exclude, 3)
    keep = np.ones(g.num_patches, bool) if exclude is None else ~np.asarray(exclude, bool).reshape(-1)
    if keep.sum() <= 3:
        keep[:] = True
    lo, hi = fit.scores[keep].min(0), fit.scores[keep].max(0)
    span = hi - lo
    scaled = np.where(span > 0, (fit.scores - lo) / np.where(span > 0, span, 1), 0.5)
    return np.clip(scaled, 0.0, 1.0).reshape(*g.grid, 3).astype(np.float32), fit


def token_stats(hidden: torch.Tensor, g: Geometry, exclude: np.ndarray | None = None) -> TokenStats:
    """hidden (L+1, N, D) -> TokenStats. A few small SVDs; no forward pass. exclude: (L+1, gh, gw)
    bool, the patches of each depth to leave out of the fitted PCA (the views pass the artifact
    tokens, vizvit.readings.artifacts_rule.high_norm_at_depth); None leaves none out."""
    if hidden.shape[1] != g.seq_len:
        raise UserError("Token views need the full sequence: this analysis dropped tokens.")
    patches = patch_tokens(hidden, g).float().numpy()  # (L+1, P, D)
    excluded = (np.zeros((len(patches), *g.grid), bool) if exclude is None
                else np.asarray(exclude, bool).reshape(len(patches), *g.grid))
    rgbs, xys, ratios, frgbs, fxys, fratios = [], [], [], [], [], []
    for layer, ex in zip(patches, excluded):
        rgb, fit = token_pca_rgb(layer, g)
        rgbs.append(rgb)
        xys.append(fit.scores[:, :2])
        ratios.append(fit.explained_ratio)
        if ex.any():
            rgb, fit = token_pca_rgb(layer, g, ex)
        frgbs.append(rgb)
        fxys.append(fit.scores[:, :2])
        fratios.append(fit.explained_ratio)
    return TokenStats(
        pca_rgb=np.stack(rgbs).astype(np.float32),
        pca_xy=np.stack(xys).astype(np.float32),
        pca_ratio=np.stack(ratios).astype(np.float32),
        excluded=excluded,
        fit_rgb=np.stack(frgbs).astype(np.float32),
        fit_xy=np.stack(fxys).astype(np.float32),
        fit_ratio=np.stack(fratios).astype(np.float32),
        norms=token_norms(hidden, g).numpy().astype(np.float32),
        # SigLIP has no [CLS] token: zeros (the Embeddings tab says so)
        cls_norms=(hidden[:, 0].float().norm(dim=-1).numpy().astype(np.float32) if g.num_prefix_tokens
                   else np.zeros(hidden.shape[0], np.float32)),
        prefix_norms=hidden[:, :g.num_prefix_tokens].float().norm(dim=-1).numpy().astype(np.float32),
        outliers=norm_outliers(token_norms(hidden, g)).numpy(),
        cls_sim=(cls_patch_similarity(hidden, g).numpy().astype(np.float32) if g.num_prefix_tokens
                 else np.zeros((hidden.shape[0], *g.grid), np.float32)),
    )


# ------------------------------------------------------------------ patch-embedding filters
@dataclass(frozen=True)
class FilterPCA:
    tiles: np.ndarray  # (k, p, p, 3) float32: components as RGB patches (unit norm overall)
    explained_ratio: np.ndarray  # (k,) share of the filters' variance each explains


def embedding_filters_pca(weight: torch.Tensor, k: int = NUM_FILTER_COMPONENTS) -> FilterPCA:
    """Principal components of the D patch-embedding filters (ViT paper, Fig. 7 left).

    weight: the conv weight (D, 3, p, p); each filter is one sample of dimension 3·p·p.
    Returns the first min(k, D, 3·p·p) components reshaped to (p, p, 3) RGB patches.
    """
    d, c, p, _ = weight.shape
    k = min(k, d, c * p * p)
    fit = pca(weight.detach().float().cpu().reshape(d, -1).numpy(), k)
    tiles = fit.components.reshape(k, c, p, p).transpose(0, 2, 3, 1)  # channel-last for display
    return FilterPCA(tiles=tiles.astype(np.float32), explained_ratio=fit.explained_ratio.astype(np.float32))


# ------------------------------------------------------------------ dropout on the tokens
DROPOUT_SEED = 0  # one fixed draw, so the page, a link and the lesson show the same zeros


@dataclass(frozen=True)
class DropoutCheck:
    """Dropout (torch.nn.Dropout, the module the embedding stage applies after the position
    embeddings) on the photo's own tokens, in train and in eval mode."""

    p: float  # the drop probability
    before: torch.Tensor  # (N, D) the tokens after the embedding stage (what dropout gets)
    train: torch.Tensor  # (N, D) train mode: each entry zeroed with probability p, survivors × 1/(1−p)
    zeros_before: float  # share of exact zeros in `before`
    zeros_train: float  # share of exact zeros in `train` (about p)
    scale: float  # survivors' train / before, the median (1/(1−p) up to float rounding)
    scale_error: float  # max |train / before − 1/(1−p)| over the survivors
    eval_changed: int  # entries eval mode changed (0: dropout is the identity at inference)


def dropout_check(tokens: torch.Tensor, p: float, seed: int = DROPOUT_SEED) -> DropoutCheck:
    """tokens (N, D) -> DropoutCheck: nn.Dropout(p) in train mode (one seeded draw) and in eval mode.
    A fresh module, never the shared model's (its mode must not change under other requests)."""
    if not 0.0 <= float(p) < 1.0:
        raise UserError(f"A dropout probability is in [0, 1), not {p}.")
    x = tokens.detach().float()
    drop = torch.nn.Dropout(float(p))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        y = drop.train()(x)
    same = drop.eval()(x)
    alive = (y != 0) & (x != 0)
    ratio = y[alive] / x[alive]
    expect = 1.0 / (1.0 - float(p))
    return DropoutCheck(
        p=float(p), before=x, train=y, zeros_before=float((x == 0).float().mean()),
        zeros_train=float((y == 0).float().mean()),
        scale=float(ratio.median()) if ratio.numel() else float("nan"),
        scale_error=float((ratio - expect).abs().max()) if ratio.numel() else 0.0,
        eval_changed=int((same != x).sum()))
