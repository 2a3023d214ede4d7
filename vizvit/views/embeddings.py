"""Panel functions for the Embeddings tab: Analysis + UI params -> images, tables, figures.

vizvit.readings.embeddings does the per-photo work once (cached per photo); the depth slider, a click
and the colour choice only render from it, so none of them runs the model.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import plotly.graph_objects as go
import torch

from vizvit.errors import UserError
from vizvit.model.engine import Analysis
from vizvit.model.models import Geometry, Preprocess, VitModel
from vizvit.model.patches import patch_at, token_index
from vizvit.model.tokens import (
    OUTLIER_METHOD,
    DropoutCheck,
    FilterPCA,
    dropout_check,
)
from vizvit.pictures import figures, render
from vizvit.readings import artifacts_rule as art_mod, embeddings as emb
from vizvit.session import Photo
from vizvit.views import flip
from vizvit.vocab import COLOR_CHOICES, DEFAULT_DROPOUT

# The names this module's results are cached under (Photo.derived / per_model).


SIM_CMAP = "RdBu_r"  # cosine similarity: blue −1, white 0, red +1
SIM_ALPHA = 0.7  # the similarity's colours over the photo
PCA_ALPHA = 0.65  # the PCA colours over the photo
NORM_CMAP = "viridis"
ARTIFACT_COLOR = (230, 30, 30)  # artifact tokens are outlined in red in every picture of this tab
NORM_SCALE = ("log colour scale over the ordinary patches' range (min … max of the patches that are not "
              "artifact tokens); artifact tokens are clipped to the top colour and outlined red")
ARTIFACTS_AT_DEPTH = (f"artifact token at depth l: a patch whose token there is a high-norm outlier (‖x‖₂ > Q3 + "
                      f"3·IQR of that depth's patch norms and > {art_mod.NORM_FACTOR:g}× their median)")

EMBED_TEXT = """**From pixels to tokens, and what the tokens become.** The model never sees the photo
as a picture: a convolution with kernel = stride = P turns each P×P patch into one D-dimensional
token, [CLS] is put in front, and learned position embeddings are added. Then L blocks rewrite
every token. Below, the real tensors of this photo, then the tokens at any depth."""

# The two depth pictures' titles (the page's labels): the text names a picture by its title, never by a side, since
# on a phone the two stack and "Left:" named a side there is none of (a walk-through at 390 px).
PCA_TITLE = "Patch-token PCA as RGB over the photo"
SIM_TITLE = "Cosine similarity of the clicked token to every patch"

DEPTH_TEXT = f"""**Tokens at depth l.** l = 0 is the output of the embedding stage, l = k the output of
block k. *{PCA_TITLE}*: the three main directions of variation (PCA) of the patch tokens as red, green and
blue, blended over the photo: patches with similar colours have similar tokens (fitted without that
depth's artifact tokens, outlined red, which would take the first component alone). **Click a patch**
(on either picture): *{SIM_TITLE}* then shows how similar its token is (cosine) to every other token at
this depth. Moving the slider re-uses the one forward pass already made."""

FILTERS_TEXT = """**Patch-embedding filters** (ViT paper, Fig. 7 left). Each of the D rows of the
embedding matrix is a filter of P×P×3 numbers; these are its first principal components shown as
RGB patches (grey = 0), with the share of the filters' variance each explains. The ViT paper reports, for
its ViT-L/32, components that look like smooth basis functions for the fine structure within a patch: a
reference, not a promise. Another checkpoint's may differ (a small ViT's first ones can be fine
checkerboards); read this model's from the tiles themselves. Random weights show noise."""


# ------------------------------------------------------------------ section 1: the embedding stage
@dataclass(frozen=True)
class StagePanel:
    steps: list[list[str]]  # [step, shape, what happens]
    check: str  # markdown: conv == unfold + linear, with the max |difference|
    params: list[list[str]]  # [stage, parameters, share]
    total: str  # markdown: the rows' sum against the model's own count


def _shape(s: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(v) for v in s) + ")"


def resize_text(pp: Preprocess) -> str:
    """The processor's resize and crop in words: "resized to 224×224" was said of a ViT whose
    processor scales the short side to 248 and keeps the centre 224×224 (the status line's sizes)."""
    size = (f"short side scaled to {pp.resize} px" if isinstance(pp.resize, int)
            else f"resized to {pp.resize[0]}×{pp.resize[1]}")
    return size + (f", centre {pp.crop[0]}×{pp.crop[1]} kept" if pp.crop is not None else "")


def stage_panel(vm: VitModel, d: emb.EmbeddingsData) -> StagePanel:
    g = vm.geometry
    p, dim, (_gh, gw) = g.patch_size, g.hidden_size, g.grid
    fam = vm.family
    pe_names = " ".join(g.prefix_names[:fam.pe_prefix])
    # One row per step vizvit.model.tokens.embedding_stage_of took, in its order: a step only some
    # families take (SigLIP prepends nothing, CLIP layer-norms) is a row only where it was taken.
    ops = [
        ("photo → pixels", f"{resize_text(vm.preprocess)}, normalised per colour"),
        ("patch conv", f"Conv2d(3 → {dim}, kernel = stride = {p}): one {dim}-vector per {p}×{p} patch"),
        ("flatten", f"row-major: token {g.num_prefix_tokens}+i is patch (i // {gw}, i % {gw})"),
        *([(f"prepend {pe_names}", f"{fam.pe_prefix} learned token{'s' if fam.pe_prefix > 1 else ''} in front")]
          if fam.pe_prefix else []),
        ("+ position embeddings" if fam.has_position_table else "no position embeddings", fam.pe_text),
        *([(f"insert {g.num_registers} registers", "learned [REG] tokens between [CLS] and the patches, "
                                                   "with no position")] if g.num_registers else []),
        *([("pre-layernorm", "CLIP layer-norms every token before block 1")] if fam.pre_norm else []),
    ]
    if len(ops) != len(d.stage.shapes):  # a step taken that this table does not name: a mistake, not a shifted row
        raise AssertionError(f"embedding steps {[n for n, _ in d.stage.shapes]} against rows {[n for n, _ in ops]}")
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
def _stage_added(vm: VitModel) -> str:
    """What the embedding stage adds to the patch tokens, in this family: '[CLS] + positions added';
    SigLIP 'positions added'; BEiT '[CLS] added (positions: a bias inside attention)'; a model told
    no positions '[CLS] added (no positions at all)'."""
    fam, g = vm.family, vm.geometry
    added = " + ".join([*([" ".join(g.prefix_names[:fam.pe_prefix])] if fam.pe_prefix else []),
                        *(["positions"] if fam.has_position_table else [])]) + " added"
    if fam.has_bias_table:
        added += " (and a bias inside attention)" if fam.has_position_table else " (positions: a bias inside attention)"
    elif not fam.has_positions:
        added += " (no positions at all)"
    return added + (f", {g.num_registers} registers inserted" if g.num_registers else "")


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


def picked_cell(g: Geometry, cell: str) -> tuple[int, int]:
    """The page's drawn click, "row,col" (and anything after: its number) -> (row, col) on the grid."""
    parts = str(cell).split(",")
    if len(parts) < 2 or not all(p.strip().isascii() and p.strip().isdigit() and len(p.strip()) < 5 for p in parts[:2]):
        raise UserError("A clicked patch is given as row,col.")
    r, c = int(parts[0]), int(parts[1])
    if not (0 <= r < g.grid[0] and 0 <= c < g.grid[1]):
        raise UserError(f"Patch ({r}, {c}) is outside this model's {g.grid[0]}x{g.grid[1]} grid.")
    return r, c


def _check_depth(g: Geometry, depth: int) -> int:
    depth = int(depth)
    if not 0 <= depth <= g.num_layers:
        raise UserError(f"Depth must be 0..{g.num_layers} for this model.")
    return depth


def _map_image(values: np.ndarray, size: int) -> np.ndarray:
    """(gh, gw) or (gh, gw, 3) -> (size·gh/gw..., 3) uint8 with one flat tile per patch."""
    gh, gw = values.shape[:2]
    return cv2.resize(values, (size, size * gh // gw), interpolation=cv2.INTER_NEAREST)


def _blend_tiles(big: np.ndarray, tiles: np.ndarray, alpha: float, g: Geometry) -> np.ndarray:
    """Blend a (gh, gw, 3) uint8 map, one flat tile per patch on its own pixels, over the enlarged view.
    Colouring the small map before enlarging is the same picture as render.overlay with
    nearest upsampling (the strip no patch reads grey there too), and ~10× cheaper at 672 px,
    which matters on every slider move."""
    heat = render.tile_picture(tiles, big.shape[:2], g)
    return cv2.addWeighted(heat, float(alpha), big, 1.0 - float(alpha), 0.0)


def pca_over_photo(vm: VitModel, d: emb.EmbeddingsData, depth: int,
                   clicked: tuple[int, int] | None) -> np.ndarray:
    """(s·H, s·W, 3) uint8: the patch-token PCA colours at `depth` over the photo, grid, clicked patch."""
    g = vm.geometry
    depth = _check_depth(g, depth)
    rgb = (d.tokens.fit_rgb[depth] * 255).round().astype(np.uint8)  # (gh, gw, 3)
    img = render.draw_grid(_blend_tiles(d.big, rgb, PCA_ALPHA, g), g, highlight=_patch_or_default(g, clicked))
    return _outline_cells(img, d.tokens.excluded[depth], ARTIFACT_BOX, render.patch_step(g, img.shape[0]))


def norm_colors(norms: np.ndarray, excluded: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(gh, gw) norms -> ((gh, gw, 3) uint8, lo, hi): NORM_CMAP over log(norm) from lo to hi, the
    min and max of the patches `excluded` (gh, gw) leaves in; the excluded ones clip to an end.

    Why: from depth 8 on a trained ViT-Ti's four artifact tokens reach 18-31× the median norm, so a
    linear range over all patches gives every ordinary patch the bottom colour. The log keeps
    equal ratios equal steps wherever the range lies."""
    keep = norms[~excluded] if (~excluded).any() else norms.reshape(-1)
    lo, hi = float(keep.min()), float(keep.max())
    return render.colorize(np.log(np.maximum(norms, 1e-12)), NORM_CMAP, np.log(max(lo, 1e-12)),
                           np.log(max(hi, lo * (1 + 1e-9), 1e-12))), lo, hi


def log_colorbar(height: int, lo: float, hi: float, cmap: str = NORM_CMAP) -> np.ndarray:
    """A vertical bar for norm_colors: log-spaced from lo (bottom) to hi (top), labelled in norm
    units at lo, the geometric middle and hi, titled "log" -> (height, w, 3) uint8."""
    bar = render.colorbar(height, cmap, 0.0, 1.0, ticks=())  # colours only; labels in norm units below
    bw = render.BAR_WIDTH
    ticks = [(hi, 0), (float(np.sqrt(lo * hi)), (height - 1) // 2), (lo, height - 1)]
    texts = [f"{v:.1f}" for v, _ in ticks] + ["log"]
    out = np.full((height, bw + 12 + max(render.text_size(t)[0] for t in texts), 3), 255, np.uint8)
    out[:, :bw] = bar[:, :bw]
    cap = render.text_size("0")[1]
    for (_, y), t in zip(ticks, texts):
        out[y, bw:bw + 5] = 0
        render.put_text(out, t, (bw + 8, min(max(y + cap // 2, 2 * cap + 12), height - 3)))
    render.put_text(out, "log", (bw + 8, cap + 2))  # the scale's name, above the top tick
    return out


def depth_panel(vm: VitModel, a: Analysis, d: emb.EmbeddingsData, depth: int,
                clicked: tuple[int, int] | None = None) -> DepthPanel:
    g = vm.geometry
    depth = _check_depth(g, depth)
    t = d.tokens
    rgb = (t.fit_rgb[depth] * 255).round().astype(np.uint8)  # (gh, gw, 3)
    norms = t.norms[depth]
    side = 336
    art = t.excluded[depth]  # (gh, gw) bool: this depth's artifact tokens
    heat, lo, hi = norm_colors(norms, art)
    # Titles above the maps, not on them: a label box would hide the top-left artifact's outline.
    heat_img = _map_image(heat, side)  # (side·gh/gw, side, 3): as tall as the grid's shape makes it
    tiles = np.stack([_titled(_outline_cells(_map_image(rgb, side), art), f"PCA -> RGB, l={depth}"),
                      _titled(_outline_cells(heat_img, art), "token norm")])
    maps = render.mosaic(tiles, 1, 2, sep=6)
    # The bar spans the maps below their titles; a non-square grid's maps are not `side` tall.
    bar = log_colorbar(heat_img.shape[0], lo, hi)
    bar = np.concatenate([np.full((maps.shape[0] - len(bar), bar.shape[1], 3), 255, np.uint8), bar])
    maps = np.concatenate([maps, np.full((maps.shape[0], 8, 3), 255, np.uint8), bar], axis=1)
    ratio, full = t.fit_ratio[depth], t.pca_ratio[depth]
    n_art = int(art.sum())
    where = f"the embedding stage ({_stage_added(vm)})" if depth == 0 else f"block {depth}"
    if n_art:
        fitted = (f"PCA fitted on the {g.num_patches - n_art} ordinary patch tokens (the {n_art} artifact "
                  f"token{'s' if n_art != 1 else ''} left out, then projected and clipped to the colour ends): its 3 "
                  f"components explain {ratio[0]:.1%} · {ratio[1]:.1%} · {ratio[2]:.1%} of their variance; fitted "
                  f"with the artifacts, component 1 takes {full[0]:.1%}, mostly the artifacts against the rest")
        ordinary = norms[~art]
        norm_text = (f"Token norms: ordinary patches {ordinary.min():.2f} … {ordinary.max():.2f} (median "
                     f"{np.median(ordinary):.2f}), artifact tokens {norms[art].min():.1f} … {norms[art].max():.1f}")
    else:
        fitted = (f"The 3 PCA components explain {ratio[0]:.1%} · {ratio[1]:.1%} · {ratio[2]:.1%} of the "
                  f"{g.num_patches} patch tokens' variance")
        norm_text = (f"Token norms: {norms.min():.2f} … {norms.max():.2f} (median {np.median(norms):.2f}), colours "
                     "on a log scale over that range")
    if n_art:
        norm_text += f", colours on a {NORM_SCALE}"
    text = (f"**Depth l = {depth}** of {g.num_layers}: output of {where} (D = {g.hidden_size}). {fitted}. "
            f"{norm_text}; "
            + ", ".join(f"‖{n}‖ = {v:.2f}" for n, v in zip(g.prefix_names, t.prefix_norms[depth]))
            + ". " + artifact_sentence(vm, a, d, depth))
    return DepthPanel(pca_over_photo=pca_over_photo(vm, d, depth, clicked), maps=maps, text=text)


def _titled(img: np.ndarray, text: str) -> np.ndarray:
    """A white strip with the title above img."""
    cap = render.text_size(text)[1]
    strip = np.full((2 * cap, img.shape[1], 3), 255, np.uint8)
    render.put_text(strip, text, (2, int(1.5 * cap)))
    return np.concatenate([strip, img], axis=0)


def artifact_depths(excluded: np.ndarray) -> str:
    """Where a photo's artifact tokens are, from (L+1, gh, gw) bool (some depth has one). "from depth 8 on:
    the four corners" only when the same patches are artifact tokens at every depth from there to the last:
    on a plain gradient the ViT-Ti's (13, 13) falls under 4× the median at depth 12 (3 of them there), and
    "the four corners from depth 8 on" sat beside a norm table that counted 3."""
    depths = np.flatnonzero(excluded.any(axis=(1, 2)))
    first, last = int(depths[0]), len(excluded) - 1
    if all((excluded[k] == excluded[first]).all() for k in range(first, last + 1)):
        return f"from depth {first} on: {art_mod.describe(excluded[first])}"
    counts = ", ".join(f"{int(excluded[k].sum())} at {k}" for k in range(first, last + 1))
    return (f"first at depth {first}: {art_mod.describe(excluded[first])}; not the same patches at every "
            f"depth after it: {counts}")


def artifact_sentence(vm: VitModel, a: Analysis, d: emb.EmbeddingsData, depth: int) -> str:
    """One sentence on this depth's artifact tokens: where, how many × the median norm, what share of
    [CLS]'s last-layer attention over the patches they hold (the Attention tab's bright spots), and the paper."""
    g = vm.geometry
    art = d.tokens.excluded[depth]
    any_depth = d.tokens.excluded.any(axis=(1, 2))
    if not art.any():
        where = f"at this depth ({artifact_depths(d.tokens.excluded)})" if any_depth.any() else \
            "at any depth of this photo"
        return f"**No artifact tokens** {where}; rule: {ARTIFACTS_AT_DEPTH}."
    norms = d.tokens.norms[depth]
    ratio = float(norms[art].mean() / np.median(norms))
    n = int(art.sum())
    # Their share of what [CLS] gives the patches, as the Attention tab's default map says it (its
    # artifact_share): of all [CLS]'s attention (its own and the prefix tokens' too) the grey photo's
    # corners got 0.8985 = "90%" here beside "94.3%" there, one quantity read two ways. n/P: an even spread.
    held, patches = emb.cls_attention_share(a, g, art), emb.cls_attention_share(a, g, np.ones_like(art))
    cls_part = ""
    if np.isfinite(held) and patches > 0:
        share = held / patches
        spots = "corners" if art_mod.describe(art) == "the four corners" else "spots"
        # Named as the maps' bright spots only when they take over 3× a uniform share.
        link = (f": they are the bright {spots} of the Attention tab's maps" if share > 3 * n / g.num_patches else "")
        cls_part = (f" In the last layer {'they hold' if n > 1 else 'it holds'} **{share:.1%}** of [CLS]'s attention "
                    f"over the patches (mean over heads, as the Attention tab's map), against {n / g.num_patches:.1%} "
                    f"for an even spread{link}.")
    return (f"**{n} artifact token{'s' if n != 1 else ''}: {art_mod.describe(art)}**, at {ratio:.0f}× the median "
            f"patch norm, outlined red in every picture here ({ARTIFACTS_AT_DEPTH}). A trained ViT turns a few "
            "low-information patches into such high-norm tokens and uses them as scratch space (Darcet et al. "
            f"2024, \"Vision Transformers Need Registers\").{cls_part}")


def similarity_panel(vm: VitModel, a: Analysis, d: emb.EmbeddingsData, depth: int,
                     clicked: tuple[int, int] | None) -> SimilarityPanel:
    """Cosine similarity of the clicked patch's token to every patch token and to [CLS]."""
    g = vm.geometry
    depth = _check_depth(g, depth)
    r, c = _patch_or_default(g, clicked)
    t = token_index(r, c, g)
    sims = emb.token_similarities(a, depth)[t]  # (N,)
    pre = g.num_prefix_tokens
    grid = sims[pre:].reshape(g.grid)
    heat = render.colorize(grid, SIM_CMAP, -1.0, 1.0)  # (gh, gw, 3)
    img = render.draw_grid(_blend_tiles(d.big, heat, SIM_ALPHA, g), g, lines=False, highlight=(r, c))
    img = _outline_cells(img, d.tokens.excluded[depth], ARTIFACT_BOX, render.patch_step(g, img.shape[0]))
    others = np.delete(sims[pre:], t - pre)
    best = [int(i) for i in np.argsort(-sims[pre:]) if i != t - pre][:3]
    near = ", ".join(f"({i // g.grid[1]}, {i % g.grid[1]}) {sims[pre + i]:.2f}" for i in best)
    to_cls = f"cosine to **[CLS] = {sims[0]:+.3f}**; to" if pre else "cosine (no [CLS] in this model) to"
    text = (f"Patch (row {r}, col {c}) = token {t} at depth {depth}: {to_cls} "
            f"the other patches {others.min():+.2f} … {others.max():+.2f} (mean {others.mean():+.2f}); "
            f"most similar: {near}. Colours: blue −1, white 0, red +1.")
    return SimilarityPanel(image=img, text=text)


def scatter_figure(vm: VitModel, d: emb.EmbeddingsData, depth: int, color_by: str = "row") -> go.Figure:
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
    ratio = d.tokens.fit_ratio[depth]
    art = d.tokens.excluded[depth].reshape(-1)  # (P,) artifact tokens: left out of the fit
    xy, ranges, title = d.tokens.fit_xy[depth].astype(np.float64), None, f"Patch tokens at depth {depth}: PCA"
    marked_name = ""
    if art.any():
        # The fit's own patches set the axes; the artifacts, 20-45× longer, sit clipped on the edge.
        lo, hi = xy[~art].min(0), xy[~art].max(0)
        pad = 0.08 * np.maximum(hi - lo, 1e-9)
        # clipped to the middle of the margin, so the whole ring shows inside the axes
        xy = np.clip(xy, lo - pad / 2, hi + pad / 2)
        lo, hi = lo - pad, hi + pad
        ranges = ((float(lo[0]), float(hi[0])), (float(lo[1]), float(hi[1])))
        n = int(art.sum())
        title = f"Depth {depth}: PCA of the {g.num_patches - n} ordinary patch tokens"
        marked_name = (f"{n} artifact token{'s' if n != 1 else ''}: left out of the fit, projected, "
                       "clipped to the edge")
    return figures.token_scatter(
        xy, color, label, rows, cols, rows * gw + cols + g.num_prefix_tokens, d.thumbs.tolist(),
        (f"PC 1 ({ratio[0]:.1%})", f"PC 2 ({ratio[1]:.1%})"),
        title + " (hover a point)", scale, marked=art, marked_name=marked_name, ranges=ranges)


# ------------------------------------------------------------------ per photo: [CLS] by layer, filters
def cls_similarity_image(vm: VitModel, d: emb.EmbeddingsData, tile: int = 196) -> np.ndarray:
    """One tile per depth: cos([CLS], patch) on a shared −1..1 scale."""
    sims = d.tokens.cls_sim  # (L+1, gh, gw)
    # Titles above the tiles: a label box on them would hide the top-left artifact's outline.
    tiles = np.stack([_titled(_outline_cells(_map_image(render.colorize(m, SIM_CMAP, -1, 1), tile), art),
                              f"l={i} {m.mean():+.2f}") for i, (m, art) in enumerate(zip(sims, d.tokens.excluded))])
    cols = min(len(tiles), 7)
    return render.mosaic(tiles, -(-len(tiles) // cols), cols, sep=4)


def cls_similarity_text(vm: VitModel, d: emb.EmbeddingsData) -> str:
    if vm.geometry.num_prefix_tokens == 0:
        return ("**How similar [CLS] is to each patch**: this model has **no [CLS] token** (SigLIP sums the "
                "photo up with an attention-pooling head after the last block), so there is nothing to compare.")
    means = ", ".join(f"{m:+.2f}" for m in d.tokens.cls_sim.reshape(len(d.tokens.cls_sim), -1).mean(1))
    ex = d.tokens.excluded  # (L+1, gh, gw)
    art = ""
    if ex.any():
        depths = np.flatnonzero(ex.any(axis=(1, 2)))
        on = np.mean([d.tokens.cls_sim[l][ex[l]].mean() for l in depths])
        off = np.mean([d.tokens.cls_sim[l][~ex[l]].mean() for l in depths])
        art = (f" Artifact tokens (outlined red) at depths {depths[0]}–{depths[-1]}: cos([CLS], artifact) "
               f"averages {on:+.2f} there, the other patches {off:+.2f}.")
    return (f"**How similar [CLS] is to each patch, layer by layer** (cosine; blue −1, white 0, red +1). "
            f"Mean over patches for l = 0…{vm.geometry.num_layers}: {means}.{art}\n\n" + norms_table(vm, d))


def norms_table(vm: VitModel, d: emb.EmbeddingsData) -> str:
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
             "| outlier patches | " + " | ".join(str(int(t.outliers[l].sum())) for l in depths) + " |",
             "| artifact tokens | " + " | ".join(str(int(t.excluded[l].sum())) for l in depths) + " |"]
    head = "| token norm ‖x‖₂ | " + " | ".join(f"l={l}" for l in depths) + " |"
    regs = (f" Registers ({', '.join(g.prefix_names[i] for i in g.register_tokens)}) hold no patch: "
            "in trained models they take over the role of the high-norm artifact patches." if g.num_registers else "")
    return (f"**Token norms by depth**, every named token beside the patches.{regs} Outliers: {OUTLIER_METHOD}. "
            f"Artifact tokens (outlined red in the pictures): {ARTIFACTS_AT_DEPTH}.\n\n"
            + "\n".join([head, "|---|" + "---|" * len(flat), *rows]))


def _outline_cells(img: np.ndarray, cells: np.ndarray, thickness: int = 2, step: float | None = None) -> np.ndarray:
    """Red boxes (ARTIFACT_COLOR) around the True cells of a (gh, gw) mask drawn over an enlarged map,
    with a 1-px white line inside so the box also shows on a red tile (RdBu similarity maps).
    render.outline's square corners: the page draws the same pixels (embeddings_click.js). step: a
    patch's side in px over the photo (render.patch_step); None: the cells fill the map (no photo)."""
    if not cells.any():
        return img
    gh, gw = cells.shape
    sy, sx = (img.shape[0] / gh, img.shape[1] / gw) if step is None else (step, step)
    out = img.copy()
    for r, c in zip(*np.nonzero(cells)):
        x0, y0, x1, y1 = int(c * sx), int(r * sy), int((c + 1) * sx) - 1, int((r + 1) * sy) - 1
        render.outline(out, (x0, y0), (x1, y1), ARTIFACT_COLOR, thickness)
        inset = inset_of(thickness)
        if x1 - x0 > 2 * inset + 1:
            render.outline(out, (x0 + inset, y0 + inset), (x1 - inset, y1 - inset), (255, 255, 255), 1)
    return out


def inset_of(thickness: int) -> int:
    """Where an artifact box's white inner line lies, px inside its edge."""
    return (thickness + 1) // 2 + 1


ARTIFACT_BOX = 3  # px: an artifact token's box on the PCA and similarity pictures


def filters_image(d: emb.EmbeddingsData, scale: int | None = None) -> np.ndarray:
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


def filters_text(vm: VitModel, d: emb.EmbeddingsData) -> str:
    k = len(d.filters.explained_ratio)
    p = vm.geometry.patch_size
    return (f"First {k} principal components of the {vm.geometry.hidden_size} filters "
            f"({p}×{p}×3 = {3 * p * p:,} numbers each); together they explain "
            f"{d.filters.explained_ratio.sum():.1%} of the variance.")


# ------------------------------------------------------------------ export
def embedding_arrays(vm: VitModel, a: Analysis, d: emb.EmbeddingsData | None = None) -> dict[str, np.ndarray]:
    """arrays.npz keys of this tab (see README)."""
    d = d or emb.prepare(vm, a)
    return {
        "patch_embeddings": a.patch_embeddings.numpy().astype(np.float32),  # (P, D)
        "token_norms": d.tokens.norms,  # (L+1, gh, gw)
        "prefix_norms": d.tokens.prefix_norms,  # (L+1, T): [CLS], [DIST], [REG1..R] in layout order
        "norm_outliers": d.tokens.outliers.astype(np.float32),  # (L+1, gh, gw) 1 = outlier (tokens.OUTLIER_METHOD)
        **({"register_norms": d.tokens.prefix_norms[:, list(vm.geometry.register_tokens)]}  # (L+1, R)
           if vm.geometry.num_registers else {}),
        "token_pca_rgb": d.tokens.pca_rgb,  # (L+1, gh, gw, 3): fitted on all patches
        "token_pca_rgb_no_artifacts": d.tokens.fit_rgb,  # (L+1, gh, gw, 3): fitted without artifact_tokens_at_depth
        "artifact_tokens_at_depth": d.tokens.excluded.astype(np.float32),  # (L+1, gh, gw) 1 = artifact token
        "embedding_filters_pca": d.filters.tiles,  # (28, p, p, 3)
    }


def embedding_figures(vm: VitModel, a: Analysis, d: emb.EmbeddingsData | None = None) -> dict[str, np.ndarray]:
    d = d or emb.prepare(vm, a)
    return {
        "embedding_filters_pca": filters_image(d),
        "token_pca_last_layer": depth_panel(vm, a, d, vm.geometry.num_layers).pca_over_photo,
        "cls_patch_similarity": cls_similarity_image(vm, d),
        "token_scatter_last_layer": scatter_figure(vm, d, vm.geometry.num_layers, "rollout"),
    }


# ------------------------------------------------------------------ entry points
def warm_model(ph: Photo) -> FilterPCA:
    """The model's own work (the filter PCA), when the model is warmed (Workbench.model_work)."""
    return emb.filters_of(ph)


def warm_photo(ph: Photo) -> emb.EmbeddingsData | None:
    """The photo's work (token statistics, rollout, thumbnails), after its forward, in the
    background (Workbench.photo_work); None where the tab has nothing to prepare (a token drop)."""
    return None if ph.analysis().dropped else emb.data(ph)


# ------------------------------------------------------------------ dropout, train against eval
DROPOUT_TOKENS, DROPOUT_DIMS, DROPOUT_CELL = 32, 64, 6  # the picture: the first tokens × the first numbers of each


@dataclass(frozen=True)
class DropoutPanel:
    image: np.ndarray  # (h, w, 3) uint8: a corner of the tokens before | in train mode; zeros black
    text: str
    check: DropoutCheck


def _dropout_picture(x: torch.Tensor, lim: float) -> np.ndarray:
    img = render.colorize(x.numpy(), SIM_CMAP, vmin=-lim, vmax=lim)
    img[x.numpy() == 0] = 0  # a zero is black: the dropped entries stand out
    return render.enlarge(img, DROPOUT_CELL)


def dropout_panel(vm: VitModel, a: Analysis, p: float) -> DropoutPanel:
    """Dropout with probability p on this photo's tokens after the embedding stage (hidden state 0:
    what the embeddings' dropout gets), train mode against eval mode (tokens.dropout_check)."""
    c = dropout_check(a.hidden_states[0], p)
    n, dim = c.before.shape
    t, k = min(DROPOUT_TOKENS, n), min(DROPOUT_DIMS, dim)
    lim = float(c.before[:t, :k].abs().max()) or 1.0
    gap = np.full((t * DROPOUT_CELL, 8, 3), 255, np.uint8)
    image = np.concatenate([render.caption_below(_dropout_picture(c.before[:t, :k], lim), "eval mode = before"),
                            render.caption_below(gap, ""),
                            render.caption_below(_dropout_picture(c.train[:t, :k], lim), f"train mode, p = {c.p:g}")],
                           axis=1)
    cfg = emb.config_dropout(vm)
    said = ("its config sets no dropout here" if cfg is None else
            f"the checkpoint's config sets hidden_dropout_prob = {cfg:g}" + (
                ": transformers would drop nothing even in train mode, so p is chosen here" if cfg == 0 else ""))
    expect = 1.0 / (1.0 - c.p)
    text = (f"**Dropout p = {c.p:g}** on the {n} × {dim} numbers of this photo's tokens after the embedding stage "
            f"({said}). **Train mode: {c.zeros_train:.1%} of them are zero** (before: {c.zeros_before:.1%}), and "
            f"every survivor is multiplied by 1/(1−p) = {expect:.4f} (measured {c.scale:.4f}, largest deviation "
            f"{c.scale_error:.1e}), so each number keeps its expected value. **Eval mode changes {c.eval_changed} "
            f"numbers**: at inference dropout is the identity, which is what every other view of this page shows. "
            f"Picture: the first {t} tokens ({(vm.geometry.prefix_names or ('patch 0',))[0]} on top) × their first "
            f"{k} numbers; zeros black.")
    return DropoutPanel(image, text, c)


@dataclass(frozen=True)
class EmbeddingsParams:
    """Everything a control on the tab sets."""

    depth: int = 0  # 0 = after the embedding stage; l = after block l
    clicked: tuple[int, int] | None = None  # (row, col); None = the middle patch
    color_by: str = "row"  # vocab.COLOR_CHOICES
    dropout: float = DEFAULT_DROPOUT  # the dropout panel's p

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> EmbeddingsParams:
        """The page's control values by field name -> EmbeddingsParams."""
        return cls(depth=int(v["depth"]), clicked=v["clicked"], color_by=v.get("color_by", "row"),
                   dropout=float(v.get("dropout", DEFAULT_DROPOUT)))


@dataclass(frozen=True)
class DepthChange:
    """A new depth: the pictures at that depth (the scatter follows on its own, see scatter)."""

    pca: np.ndarray  # the patch-token PCA as RGB over the photo (clickable)
    maps: np.ndarray  # the PCA map alone | token norms
    similarity: np.ndarray  # cos(clicked token, patch) over the photo (clickable)
    similarity_text: str
    depth_text: str


@dataclass(frozen=True)
class ClickChange:
    """A clicked patch: the two pictures that outline it, and the similarity's text."""

    pca: np.ndarray
    similarity: np.ndarray
    similarity_text: str
    book: flip.Flipbook  # no pages yet, the new look (depth_book fills it)


@dataclass(frozen=True)
class EmbeddingsPage(DepthChange):
    """What the tab shows first on open, at one depth, each field named like its component: the
    pictures at that depth, the texts and tables. The chart and the pictures further down follow
    (EmbeddingsRest), so the first picture waits neither for them nor for Plotly's first render."""

    steps: list[list[str]]  # [step, shape, what happens]
    check: str  # conv == unfold + linear
    params: list[list[str]]  # [stage, parameters, share]
    params_total: str
    cls_text: str
    filters_text: str
    depth: int  # the depth shown (clamped to this model's L)
    num_layers: int  # the depth slider's top
    book: flip.Flipbook  # no pages yet: the page drops another photo's depth pictures (depth_book fills it)
    dropout_image: np.ndarray  # the tokens before | in train mode (DropoutPanel)
    dropout_text: str


def depth_look(ph: Photo, p: EmbeddingsParams) -> str:
    """What the depth pictures depend on besides the depth: the photo (model, heads off) and the clicked patch."""
    return f"{ph.key!r}|{_patch_or_default(ph.vm.geometry, p.clicked)}"


DEPTH_TARGETS = ("pca", "maps", "similarity")  # the DepthChange pictures a depth move swaps
DEPTH_CONTROLS = ("depth",)


def depth_book(ph: Photo, p: EmbeddingsParams) -> flip.Flipbook:
    """The depth pictures at every depth 0..L (as change_depth draws them), for the page to swap
    while the slider moves (~5 ms of drawing a depth, so ~70 ms for ViT-B/16's 13)."""
    pages = {}
    for depth in range(ph.vm.geometry.num_layers + 1):
        ch = change_depth(ph, dataclasses.replace(p, depth=depth))
        pages[flip.page_key(depth)] = {t: getattr(ch, t) for t in DEPTH_TARGETS}
    return flip.Flipbook(depth_look(ph, p), DEPTH_CONTROLS, pages)




def token_book(ph: Photo, p: EmbeddingsParams, with_view: bool = True) -> str:
    """What the page needs to draw a click on either picture at p.depth, as one JSON string: each
    token's similarity row as colour-table rows ((P, P) uint8: render.color_index on −1..1, the
    rows colorize paints), the PCA colours ((P, 3) uint8), the artifact tokens, the colour table, the
    blend weights, outline widths and colours, and (with_view) the model-input view as PNG (the
    page keeps the last one of the same look: a depth change sends none). ~51 kB + the view's
    ~140 kB for 196 patches."""
    vm, a, d = ph.vm, ph.analysis(), emb.data(ph)
    g = vm.geometry
    depth = _check_depth(g, p.depth)
    pre = g.num_prefix_tokens
    sims = emb.token_similarities(a, depth)[pre:, pre:]  # (P, P): row i, patch i's similarity_panel map
    rgb = (d.tokens.fit_rgb[depth] * 255).round().astype(np.uint8)
    s = render.display_scale(g)
    step = s * g.patch_size  # a patch's side in the picture (render.patch_step)
    view = None
    if with_view:
        png = cv2.imencode(".png", cv2.cvtColor(a.input_view, cv2.COLOR_RGB2BGR))[1]
        view = "data:image/png;base64," + base64.b64encode(png.tobytes()).decode("ascii")
    b64 = lambda x: base64.b64encode(np.ascontiguousarray(x).tobytes()).decode("ascii")  # noqa: E731
    return json.dumps({
        "look": repr(ph.key), "depth": depth, "grid": list(g.grid), "size": list(g.image_size), "scale": s,
        "patch": g.patch_size, "view": view,
        "sim": b64(render.color_index(sims, -1.0, 1.0)), "pca": b64(rgb),
        "excluded": np.flatnonzero(d.tokens.excluded[depth]).tolist(),
        "lut": b64(render.lut(SIM_CMAP)), "alpha": {"sim": SIM_ALPHA, "pca": PCA_ALPHA},
        "outline": max(1, int(step // 12)), "box": ARTIFACT_BOX, "inset": inset_of(ARTIFACT_BOX),
        "colors": {"grid": render.grid_lines_style(), "highlight": list(render.HIGHLIGHT_COLOR),
                   "artifact": list(ARTIFACT_COLOR)},
    }, separators=(",", ":"))


@dataclass(frozen=True)
class EmbeddingsRest:
    """The rest of the tab on open, sent after its first pictures are painted."""

    scatter: go.Figure
    cls_image: np.ndarray
    filters_image: np.ndarray


def show(ph: Photo, p: EmbeddingsParams) -> EmbeddingsPage:
    """On open (a new photo or model): the tab's first part at `depth` (clamped to L); see rest."""
    vm, a, d = ph.vm, ph.analysis(), emb.data(ph)
    L = vm.geometry.num_layers
    depth = min(p.depth, L)
    dp, sp = depth_panel(vm, a, d, depth, p.clicked), similarity_panel(vm, a, d, depth, p.clicked)
    st = stage_panel(vm, d)
    dr = dropout_panel(vm, a, p.dropout)
    return EmbeddingsPage(dropout_image=dr.image, dropout_text=dr.text, pca=dp.pca_over_photo, maps=dp.maps,
                          similarity=sp.image, similarity_text=sp.text,
                          depth_text=dp.text, steps=st.steps, check=st.check, params=st.params, params_total=st.total,
                          cls_text=cls_similarity_text(vm, d), filters_text=filters_text(vm, d), depth=depth,
                          num_layers=L, book=flip.empty(depth_look(ph, p), DEPTH_CONTROLS))


def rest(ph: Photo, p: EmbeddingsParams) -> EmbeddingsRest:
    """After show: the token scatter at `depth` (clamped to L), [CLS] by depth, the filters."""
    vm, d = ph.vm, emb.data(ph)
    return EmbeddingsRest(scatter=scatter_figure(vm, d, min(p.depth, vm.geometry.num_layers), p.color_by),
                          cls_image=cls_similarity_image(vm, d), filters_image=filters_image(d))


def change_depth(ph: Photo, p: EmbeddingsParams) -> DepthChange:
    """On a depth change: the pictures and texts at the new depth."""
    vm, a, d = ph.vm, ph.analysis(), emb.data(ph)
    dp, sp = depth_panel(vm, a, d, p.depth, p.clicked), similarity_panel(vm, a, d, p.depth, p.clicked)
    return DepthChange(pca=dp.pca_over_photo, maps=dp.maps, similarity=sp.image, similarity_text=sp.text,
                       depth_text=dp.text)


def change_click(ph: Photo, p: EmbeddingsParams) -> ClickChange:
    """On a clicked patch: the PCA picture and the similarity picture, outlining it."""
    vm, a, d = ph.vm, ph.analysis(), emb.data(ph)
    sp = similarity_panel(vm, a, d, p.depth, p.clicked)
    return ClickChange(pca=pca_over_photo(vm, d, p.depth, p.clicked), similarity=sp.image, similarity_text=sp.text,
                       book=flip.empty(depth_look(ph, p), DEPTH_CONTROLS))


@dataclass(frozen=True)
class ScatterChange:
    """A depth or colour change: the scatter, and its other colourings for the page to swap in."""

    scatter: go.Figure
    book: flip.Flipbook


COLOR_CONTROLS = ("color_by",)


def color_book(ph: Photo, p: EmbeddingsParams, shown: go.Figure | None = None) -> flip.Flipbook:
    """Every colouring of the scatter at this depth, as a restyle of its points (marker and hover
    text: ~3 KB, where the figure with its thumbnails is ~190 KB)."""
    pages = {}
    for c in COLOR_CHOICES:
        fig = shown if shown is not None and c == p.color_by else scatter_figure(ph.vm, emb.data(ph), p.depth, c)
        trace = fig.data[0]
        pages[flip.page_key(c)] = {"scatter": flip.Chart(restyle={"marker": trace.marker.to_plotly_json(),
                                                                   "hovertemplate": trace.hovertemplate})}
    return flip.Flipbook(f"{ph.key!r}|{p.depth}", COLOR_CONTROLS, pages)


def scatter(ph: Photo, p: EmbeddingsParams) -> ScatterChange:
    """On a depth or colour change: the PCA scatter (the slowest part of a slider move)."""
    fig = scatter_figure(ph.vm, emb.data(ph), p.depth, p.color_by)
    return ScatterChange(fig, color_book(ph, p, fig))


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    return embedding_arrays(ph.vm, ph.analysis(), emb.data(ph))


def export_figures(ph: Photo) -> dict[str, np.ndarray]:
    return embedding_figures(ph.vm, ph.analysis(), emb.data(ph))
