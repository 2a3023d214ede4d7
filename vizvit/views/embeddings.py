"""Panel functions for the Embeddings tab: Analysis + UI params -> images, tables, figures.

`prepare` does the per-photo work once (cached by the caller); the depth slider, a click
and the colour choice only render from it, so none of them runs the model.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import cv2
import numpy as np
import plotly.graph_objects as go
import torch

from .. import figures, render
from ..attention import rollout_maps
from ..errors import UserError
from ..engine import Analysis
from ..models import Geometry, VitModel
from ..patches import patch_at, token_index
from ..session import Photo
from ..tokens import (
    EmbeddingStage,
    FilterPCA,
    ParamRow,
    OUTLIER_METHOD,
    TokenStats,
    cosine_to,
    embedding_filters_pca,
    embedding_stage,
    patch_conv,
    parameter_table,
    token_stats,
)
from ..vocab import COLOR_CHOICES

SIM_CMAP = "RdBu_r"  # cosine similarity: blue −1, white 0, red +1

EMBED_TEXT = """**From pixels to tokens, and what the tokens become.** The model never sees the photo
as a picture: a convolution with kernel = stride = P turns each P×P patch into one D-dimensional
token, [CLS] is put in front, and learned position embeddings are added. Then L blocks rewrite
every token. Below, the real tensors of this photo, then the tokens at any depth."""

DEPTH_TEXT = """**Tokens at depth l.** l = 0 is the output of the embedding stage, l = k the output of
block k. *Left*: the three main directions of variation (PCA) of the patch tokens as red, green and
blue, blended over the photo: patches with similar colours have similar tokens. **Click a patch**
(on either picture) to see how similar its token is (cosine) to every other token at this depth.
Moving the slider re-uses the one forward pass already made."""

FILTERS_TEXT = """**Patch-embedding filters** (ViT paper, Fig. 7 left). Each of the D rows of the
embedding matrix is a filter of P×P×3 numbers; these are its first principal components shown as
RGB patches (grey = 0), with the share of the filters' variance each explains. Trained models show
smooth, Fourier-like patterns; random weights show noise."""


@dataclass(frozen=True)
class EmbeddingsData:
    """Per-photo results the tab renders from (cached by the caller)."""

    stage: EmbeddingStage
    params: tuple[ParamRow, ...]
    total_params: int
    filters: FilterPCA
    tokens: TokenStats
    rollout: np.ndarray  # (gh, gw) float32: [CLS] rollout through all blocks
    thumbs: np.ndarray  # (P,) str: each patch as a PNG data URI, for the scatter's hover
    big: np.ndarray  # (s·H, s·W, 3) uint8: the model-input view enlarged for display


def prepare(vm: VitModel, a: Analysis, filters: FilterPCA | None = None) -> EmbeddingsData:
    """Everything the tab shows that depends on the photo but on no slider. No forward pass:
    one conv for the demonstration, a few SVDs, a rollout. filters: the model's filter PCA when
    already computed (it depends on the model only; see `data`)."""
    g = vm.geometry
    if a.dropped:
        raise UserError("The Embeddings tab needs the full token sequence; remove the token drop.")
    return EmbeddingsData(
        stage=embedding_stage(vm.vit.embeddings, a.pixel_values, a.patch_embeddings, a.hidden_states[0], g,
                              getattr(vm.vit, "pre_layrnorm", None)),
        params=parameter_table(vm.model),
        total_params=vm.num_parameters,
        filters=filters or model_filters(vm),
        tokens=token_stats(a.hidden_states, g),
        rollout=rollout_maps(a.attentions, g, summary=a.summary_weights)[-1].numpy().astype(np.float32),
        thumbs=np.array(patch_thumbnails(a.input_view, g)),
        big=render.enlarge(a.input_view, render.display_scale(g)),
    )


def model_filters(vm: VitModel) -> FilterPCA:
    """The principal components of the model's patch-embedding filters."""
    return embedding_filters_pca(patch_conv(vm.vit.embeddings).weight)


def patch_thumbnails(view: np.ndarray, g: Geometry) -> list[str]:
    """Each patch of the (H, W, 3) view as a PNG data URI, row-major."""
    p = g.patch_size
    gh, gw = g.grid
    out = []
    for r in range(gh):
        for c in range(gw):
            tile = view[r * p:(r + 1) * p, c * p:(c + 1) * p, ::-1]  # RGB -> BGR for OpenCV
            _, buf = cv2.imencode(".png", np.ascontiguousarray(tile))
            out.append("data:image/png;base64," + base64.b64encode(buf.tobytes()).decode())
    return out


# ------------------------------------------------------------------ section 1: the embedding stage
@dataclass(frozen=True)
class StagePanel:
    steps: list[list[str]]  # [step, shape, what happens]
    check: str  # markdown: conv == unfold + linear, with the max |difference|
    params: list[list[str]]  # [stage, parameters, share]
    total: str  # markdown: the rows' sum against the model's own count


def _shape(s: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(v) for v in s) + ")"


def stage_panel(vm: VitModel, d: EmbeddingsData) -> StagePanel:
    g = vm.geometry
    p, dim, (_gh, gw) = g.patch_size, g.hidden_size, g.grid
    fam = vm.family
    pe_names = " ".join(g.prefix_names[:fam.pe_prefix])
    ops = [
        ("photo → pixels", f"resized to {g.image_size[0]}×{g.image_size[1]}, normalised per colour"),
        ("patch conv", f"Conv2d(3 → {dim}, kernel = stride = {p}): one {dim}-vector per {p}×{p} patch"),
        ("flatten", f"row-major: token {g.num_prefix_tokens}+i is patch (i // {gw}, i % {gw})"),
        (f"prepend {pe_names}", f"{fam.pe_prefix} learned token{'s' if fam.pe_prefix > 1 else ''} in front"),
        ("+ position embeddings", fam.pe_text),
    ]
    if g.num_registers:
        ops.append((f"insert {g.num_registers} registers", "learned [REG] tokens between [CLS] and the patches, "
                                                            "with no position"))
    steps = [[name, _shape(shape), op] for (name, op), (_, shape) in zip(ops, d.stage.shapes)]
    pd = d.stage.patch_dim
    check = (f"**The conv is one matrix.** `F.unfold` cuts the pixels into {g.num_patches} columns of "
             f"3·{p}·{p} = {pd:,} numbers; multiplying them by the conv weight reshaped to a {dim}×{pd:,} "
             f"matrix (plus the bias) gives the same tokens: **max |conv − unfold·W| = "
             f"{d.stage.conv_vs_linear:.2e}** (float32 rounding). Checked against the forward pass: "
             f"patch tokens differ by {d.stage.conv_vs_forward:.2e}, and the assembled sequence from "
             f"hidden state 0 by {d.stage.embed_vs_forward:.2e}.")
    total = sum(r.count for r in d.params)
    params = [[r.stage, f"{r.count:,}", f"{r.count / total:.2%}"] for r in d.params]
    same = total == d.total_params
    params.append(["total (sum of rows)", f"{total:,}", "100%"])
    total_md = (f"**Total: {total:,} parameters** = sum of the {len(d.params)} rows "
                + ("= `sum(p.numel() for p in model.parameters())` ✓" if same
                   else f"≠ the model's {d.total_params:,} (a parameter was counted twice?)"))
    return StagePanel(steps=steps, check=check, params=params, total=total_md)


# ------------------------------------------------------------------ section 2: tokens at depth l
@dataclass(frozen=True)
class DepthPanel:
    pca_over_photo: np.ndarray  # (s·H, s·W, 3) uint8, clickable
    maps: np.ndarray  # PCA RGB map alone | token-norm heatmap, uint8
    text: str


@dataclass(frozen=True)
class SimilarityPanel:
    image: np.ndarray  # (s·H, s·W, 3) uint8, clickable: cos(clicked token, patch) over the photo
    text: str


def default_patch(g: Geometry) -> tuple[int, int]:
    return g.grid[0] // 2, g.grid[1] // 2


def _patch_or_default(g: Geometry, rc: tuple[int, int] | None) -> tuple[int, int]:
    """The clicked patch, or the centre one when none was clicked or it lies outside this
    model's grid (a click kept from a model with a bigger grid)."""
    if rc is None or not (0 <= rc[0] < g.grid[0] and 0 <= rc[1] < g.grid[1]):
        return default_patch(g)
    return int(rc[0]), int(rc[1])


def clicked_token(g: Geometry, x: float, y: float) -> tuple[int, int, int]:
    """A click at (x, y) on one of the tab's enlarged images -> (row, col, token index)."""
    r, c = patch_at(x, y, g, render.display_scale(g))
    return r, c, token_index(r, c, g)


def _check_depth(g: Geometry, depth: int) -> int:
    depth = int(depth)
    if not 0 <= depth <= g.num_layers:
        raise UserError(f"Depth must be 0..{g.num_layers} for this model.")
    return depth


def _map_image(values: np.ndarray, size: int) -> np.ndarray:
    """(gh, gw) or (gh, gw, 3) -> (size·gh/gw..., 3) uint8 with one flat tile per patch."""
    gh, gw = values.shape[:2]
    return cv2.resize(values, (size, size * gh // gw), interpolation=cv2.INTER_NEAREST)


def _blend_tiles(big: np.ndarray, tiles: np.ndarray, alpha: float) -> np.ndarray:
    """Blend a (gh, gw, 3) uint8 map, one flat tile per patch, over the enlarged view.
    Colouring the small map before enlarging is the same picture as render.overlay with
    nearest upsampling, and ~10× cheaper at 672 px, which matters on every slider move."""
    return cv2.addWeighted(_map_image(tiles, big.shape[1]), float(alpha), big, 1.0 - float(alpha), 0.0)


def pca_over_photo(vm: VitModel, d: EmbeddingsData, depth: int,
                   clicked: tuple[int, int] | None) -> np.ndarray:
    """(s·H, s·W, 3) uint8: the patch-token PCA colours at `depth` over the photo, grid, clicked patch."""
    g = vm.geometry
    depth = _check_depth(g, depth)
    rgb = (d.tokens.pca_rgb[depth] * 255).round().astype(np.uint8)  # (gh, gw, 3)
    return render.draw_grid(_blend_tiles(d.big, rgb, 0.65), g, highlight=_patch_or_default(g, clicked))


def depth_panel(vm: VitModel, a: Analysis, d: EmbeddingsData, depth: int,
                clicked: tuple[int, int] | None = None) -> DepthPanel:
    g = vm.geometry
    depth = _check_depth(g, depth)
    rgb = (d.tokens.pca_rgb[depth] * 255).round().astype(np.uint8)  # (gh, gw, 3)
    norms = d.tokens.norms[depth]
    side = 336
    out = d.tokens.outliers[depth]  # (gh, gw) bool: high-norm patches (tokens.OUTLIER_METHOD)
    tiles = np.stack([
        render.label(_map_image(rgb, side), f"PCA -> RGB, l={depth}"),
        render.label(_outline_cells(_map_image(render.colorize(norms, "viridis"), side), out),
                     f"norm {norms.min():.1f} - {norms.max():.1f}"),
    ])
    maps = render.mosaic(tiles, 1, 2, sep=6)
    ratio = d.tokens.pca_ratio[depth]
    where = "the embedding stage ([CLS] + positions added)" if depth == 0 else f"block {depth}"
    text = (f"**Depth l = {depth}** of {g.num_layers}: output of {where}. The 3 PCA components explain "
            f"{ratio[0]:.1%} · {ratio[1]:.1%} · {ratio[2]:.1%} of the {g.num_patches} patch tokens' "
            "variance "
            f"(D = {g.hidden_size}). Token norms: {norms.min():.2f} … {norms.max():.2f} "
            f"(mean {norms.mean():.2f}); "
            + ", ".join(f"‖{n}‖ = {v:.2f}" for n, v in zip(g.prefix_names, d.tokens.prefix_norms[depth]))
            + f". **{int(out.sum())} high-norm outlier patch{'es' if out.sum() != 1 else ''}** (outlined red; "
            f"{OUTLIER_METHOD}).")
    return DepthPanel(pca_over_photo=pca_over_photo(vm, d, depth, clicked), maps=maps, text=text)


def similarity_panel(vm: VitModel, a: Analysis, d: EmbeddingsData, depth: int,
                     clicked: tuple[int, int] | None) -> SimilarityPanel:
    """Cosine similarity of the clicked patch's token to every patch token and to [CLS]."""
    g = vm.geometry
    depth = _check_depth(g, depth)
    r, c = _patch_or_default(g, clicked)
    t = token_index(r, c, g)
    sims = cosine_to(a.hidden_states[depth], t).numpy()  # (N,)
    pre = g.num_prefix_tokens
    grid = sims[pre:].reshape(g.grid)
    heat = render.colorize(grid, SIM_CMAP, -1.0, 1.0)  # (gh, gw, 3)
    img = render.draw_grid(_blend_tiles(d.big, heat, 0.7), g, lines=False, highlight=(r, c))
    others = np.delete(sims[pre:], t - pre)
    best = [int(i) for i in np.argsort(-sims[pre:]) if i != t - pre][:3]
    near = ", ".join(f"({i // g.grid[1]}, {i % g.grid[1]}) {sims[pre + i]:.2f}" for i in best)
    text = (f"Patch (row {r}, col {c}) = token {t} at depth {depth}: cosine to **[CLS] = {sims[0]:+.3f}**; "
            f"to the other patches {others.min():+.2f} … {others.max():+.2f} (mean {others.mean():+.2f}); "
            f"most similar: {near}. Colours: blue −1, white 0, red +1.")
    return SimilarityPanel(image=img, text=text)


def scatter_figure(vm: VitModel, d: EmbeddingsData, depth: int, color_by: str = "row") -> go.Figure:
    """The patch tokens at `depth` on their first two principal components."""
    g = vm.geometry
    depth = _check_depth(g, depth)
    gh, gw = g.grid
    rows, cols = np.divmod(np.arange(g.num_patches), gw)
    if color_by == "row":
        color, label, scale = rows.astype(float), "row", "Viridis"
    elif color_by == "column":
        color, label, scale = cols.astype(float), "column", "Viridis"
    elif color_by == "rollout":
        color, label, scale = d.rollout.reshape(-1).astype(float), "rollout weight", "Inferno"
    else:
        raise UserError(f"Colour by {color_by!r}? Use one of {', '.join(COLOR_CHOICES)}.")
    ratio = d.tokens.pca_ratio[depth]
    return figures.token_scatter(
        d.tokens.pca_xy[depth], color, label, rows, cols, rows * gw + cols + g.num_prefix_tokens, d.thumbs,
        (f"PC 1 ({ratio[0]:.1%})", f"PC 2 ({ratio[1]:.1%})"),
        f"Patch tokens at depth {depth}: PCA (hover a point for its patch)", scale)


# ------------------------------------------------------------------ per photo: [CLS] by layer, filters
def cls_similarity_image(vm: VitModel, d: EmbeddingsData, tile: int = 196) -> np.ndarray:
    """One tile per depth: cos([CLS], patch) on a shared −1..1 scale."""
    sims = d.tokens.cls_sim  # (L+1, gh, gw)
    tiles = np.stack([render.label(_map_image(render.colorize(m, SIM_CMAP, -1, 1), tile),
                                   f"l={i} {m.mean():+.2f}") for i, m in enumerate(sims)])
    cols = min(len(tiles), 7)
    return render.mosaic(tiles, -(-len(tiles) // cols), cols, sep=4)


def cls_similarity_text(vm: VitModel, d: EmbeddingsData) -> str:
    if vm.geometry.num_prefix_tokens == 0:
        return ("**How similar [CLS] is to each patch**: this model has **no [CLS] token** (SigLIP sums the "
                "photo up with an attention-pooling head after the last block), so there is nothing to compare.")
    means = ", ".join(f"{m:+.2f}" for m in d.tokens.cls_sim.reshape(len(d.tokens.cls_sim), -1).mean(1))
    return (f"**How similar [CLS] is to each patch, layer by layer** (cosine; blue −1, white 0, red +1). "
            f"Mean over patches for l = 0…{vm.geometry.num_layers}: {means}.\n\n" + norms_table(vm, d))


def norms_table(vm: VitModel, d: EmbeddingsData) -> str:
    """Markdown: ‖token‖₂ of every prefix token ([CLS], [DIST], [REG1..R]) at each depth, beside the
    patch tokens' median and maximum and the number of high-norm outlier patches."""
    g = vm.geometry
    t = d.tokens
    flat = t.norms.reshape(len(t.norms), -1)  # (L+1, P)
    depths = range(len(flat))
    rows = [f"| {name} | " + " | ".join(f"{t.prefix_norms[l, j]:.1f}" for l in depths) + " |"
            for j, name in enumerate(g.prefix_names)]
    rows += ["| patch median | " + " | ".join(f"{np.median(flat[l]):.1f}" for l in depths) + " |",
             "| patch max | " + " | ".join(f"{flat[l].max():.1f}" for l in depths) + " |",
             "| outlier patches | " + " | ".join(str(int(t.outliers[l].sum())) for l in depths) + " |"]
    head = "| token norm ‖x‖₂ | " + " | ".join(f"l={l}" for l in depths) + " |"
    regs = (f" Registers ({', '.join(g.prefix_names[i] for i in g.register_tokens)}) hold no patch: "
            "in trained models they take over the role of the high-norm artifact patches." if g.num_registers else "")
    return (f"**Token norms by depth**, every named token beside the patches.{regs} Outliers: {OUTLIER_METHOD}.\n\n"
            + "\n".join([head, "|---|" + "---|" * len(flat), *rows]))


def _outline_cells(img: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Red boxes around the True cells of a (gh, gw) mask drawn over an enlarged map."""
    if not cells.any():
        return img
    gh, gw = cells.shape
    sy, sx = img.shape[0] / gh, img.shape[1] / gw
    out = img.copy()
    for r, c in zip(*np.nonzero(cells)):
        cv2.rectangle(out, (int(c * sx), int(r * sy)), (int((c + 1) * sx) - 1, int((r + 1) * sy) - 1), (230, 30, 30), 2)
    return out


def filters_image(d: EmbeddingsData, scale: int | None = None) -> np.ndarray:
    """The filter components as RGB P×P tiles, 4 rows of 7, each labelled with its variance share."""
    tiles = d.filters.tiles  # (k, p, p, 3), signed
    p = tiles.shape[1]
    s = scale or max(1, round(160 / p))  # room for a label at render.TEXT_PX
    out = []
    for k, (t, share) in enumerate(zip(tiles, d.filters.explained_ratio)):
        m = float(np.abs(t).max()) or 1.0
        img = ((0.5 + 0.5 * t / m) * 255).round().astype(np.uint8)  # each tile on its own ±max scale
        big = render.enlarge(img, s)
        out.append(render.label(big, f"{k + 1}: {share:.1%}"))
    cols = 7
    return render.mosaic(np.stack(out), -(-len(out) // cols), cols, sep=3)


def filters_text(vm: VitModel, d: EmbeddingsData) -> str:
    k = len(d.filters.explained_ratio)
    p = vm.geometry.patch_size
    return (f"First {k} principal components of the {vm.geometry.hidden_size} filters "
            f"({p}×{p}×3 = {3 * p * p:,} numbers each); together they explain "
            f"{d.filters.explained_ratio.sum():.1%} of the variance.")


# ------------------------------------------------------------------ export
def embedding_arrays(vm: VitModel, a: Analysis, d: EmbeddingsData | None = None) -> dict[str, np.ndarray]:
    """arrays.npz keys of this tab (see README)."""
    d = d or prepare(vm, a)
    return {
        "patch_embeddings": a.patch_embeddings.numpy().astype(np.float32),  # (P, D)
        "token_norms": d.tokens.norms,  # (L+1, gh, gw)
        "prefix_norms": d.tokens.prefix_norms,  # (L+1, T): [CLS], [DIST], [REG1..R] in layout order
        "norm_outliers": d.tokens.outliers.astype(np.float32),  # (L+1, gh, gw) 1 = outlier (tokens.OUTLIER_METHOD)
        **({"register_norms": d.tokens.prefix_norms[:, list(vm.geometry.register_tokens)]}  # (L+1, R)
           if vm.geometry.num_registers else {}),
        "token_pca_rgb": d.tokens.pca_rgb,  # (L+1, gh, gw, 3)
        "embedding_filters_pca": d.filters.tiles,  # (28, p, p, 3)
    }


def embedding_figures(vm: VitModel, a: Analysis, d: EmbeddingsData | None = None) -> dict[str, np.ndarray]:
    d = d or prepare(vm, a)
    return {
        "embedding_filters_pca": filters_image(d),
        "token_pca_last_layer": depth_panel(vm, a, d, vm.geometry.num_layers).pca_over_photo,
        "cls_patch_similarity": cls_similarity_image(vm, d),
        "token_scatter_last_layer": scatter_figure(vm, d, vm.geometry.num_layers, "rollout"),
    }


# ------------------------------------------------------------------ entry points
def data(ph: Photo) -> EmbeddingsData:
    """The per-photo work of the tab, once per photo and model."""
    # The filter PCA is the slowest part of opening the tab and depends on the model alone:
    # cached once per model, in the same cache as everything else.
    filters = ph.per_model("filter_pca", lambda: model_filters(ph.vm))
    return ph.derived("embeddings", lambda: prepare(ph.vm, ph.analysis(), filters))


@dataclass(frozen=True)
class EmbeddingsPage:
    """Everything the tab shows on open, at one depth."""

    depth: int  # the depth shown (clamped to this model's L)
    stage: StagePanel
    depth_panel: DepthPanel
    similarity: SimilarityPanel
    scatter: go.Figure
    cls_text: str
    cls_image: np.ndarray
    filters_text: str
    filters_image: np.ndarray


def show(ph: Photo, depth: int, rc: tuple[int, int] | None = None, color_by: str = "row") -> EmbeddingsPage:
    """On open (a new photo or model): every part of the tab at `depth` (clamped to L)."""
    vm, a, d = ph.vm, ph.analysis(), data(ph)
    depth = min(int(depth), vm.geometry.num_layers)
    return EmbeddingsPage(depth, stage_panel(vm, d), depth_panel(vm, a, d, depth, rc),
                          similarity_panel(vm, a, d, depth, rc), scatter_figure(vm, d, depth, color_by),
                          cls_similarity_text(vm, d), cls_similarity_image(vm, d), filters_text(vm, d),
                          filters_image(d))


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    return embedding_arrays(ph.vm, ph.analysis(), data(ph))


def export_figures(ph: Photo) -> dict[str, np.ndarray]:
    return embedding_figures(ph.vm, ph.analysis(), data(ph))
