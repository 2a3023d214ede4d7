"""The Embeddings tab's readings: the per-photo data its panels render from (the embedding stage, the token
statistics at every depth, the [CLS] rollout, the patches as thumbnails and the enlarged input view), cached
per photo, and the patch-embedding filters' PCA, cached per model. No forward pass: one conv for the
demonstration, a few SVDs, a rollout. Nothing here draws: vizvit.views.embeddings renders from EmbeddingsData.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import cv2
import numpy as np
import torch

from vizvit.errors import UserError
from vizvit.methods import maps
from vizvit.model import engine
from vizvit.model.engine import Analysis
from vizvit.model.models import Geometry, VitModel
from vizvit.model.positional import cosine_similarity_matrix
from vizvit.model.tokens import (
    EmbeddingStage,
    FilterPCA,
    ParamRow,
    TokenStats,
    embedding_filters_pca,
    parameter_table,
    token_stats,
)
from vizvit.pictures import render
from vizvit.readings import artifacts_rule as art_mod, methods
from vizvit.session import Photo

# The names this module's results are cached under (Photo.derived / per_model).
EMBEDDINGS = "embeddings"  # the Embeddings tab's per-photo data
FILTER_PCA = "filter_pca"  # per model: the patch-embedding filters' PCA


@dataclass(frozen=True)
class EmbeddingsData:
    """Per-photo results the tab renders from (cached under EMBEDDINGS by `data`)."""

    stage: EmbeddingStage
    params: tuple[ParamRow, ...]
    total_params: int
    filters: FilterPCA
    tokens: TokenStats
    rollout: np.ndarray  # (gh, gw) float32: [CLS] rollout through all blocks
    thumbs: np.ndarray  # (P,) str: each patch as a PNG data URI, for the scatter's hover
    big: np.ndarray  # (s·H, s·W, 3) uint8: the model-input view enlarged for display


def prepare(vm: VitModel, a: Analysis, filters: FilterPCA | None = None,
            cache: maps.Cache = maps.no_cache) -> EmbeddingsData:
    """Everything the tab shows that depends on the photo but on no slider. No forward pass:
    one conv for the demonstration, a few SVDs, a rollout. filters: the model's filter PCA when
    already computed (it depends on the model only; see `data`)."""
    g = vm.geometry
    if a.dropped:
        raise UserError("The Embeddings tab needs the full token sequence; remove the token drop.")
    return EmbeddingsData(
        stage=engine.embedding_stage(vm, a),
        params=parameter_table(vm.model),
        total_params=vm.num_parameters,
        filters=filters or model_filters(vm),
        # Fitted without each depth's artifact tokens: with them, PCA's first component is
        # "artifact or not" and every ordinary patch gets one colour.
        tokens=token_stats(a.hidden_states, g, art_mod.high_norm_at_depth(a.hidden_states, g)),
        rollout=methods.ROLLOUT(vm, a, None, cache).astype(np.float32),
        thumbs=np.array(patch_thumbnails(a.input_view, g)),
        big=render.enlarge(a.input_view, render.display_scale(g)),
    )


def model_filters(vm: VitModel) -> FilterPCA:
    """The principal components of the model's patch-embedding filters."""
    return embedding_filters_pca(engine.patch_filters(vm))


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


def data(ph: Photo) -> EmbeddingsData:
    """The per-photo work of the tab, once per photo and model."""
    # The filter PCA is the slowest part of opening the tab and depends on the model alone:
    # cached once per model, in the same cache as everything else.
    filters = filters_of(ph)
    return ph.derived(EMBEDDINGS, lambda: prepare(ph.vm, ph.analysis(), filters, ph.derived))


def filters_of(ph: Photo) -> FilterPCA:
    """The model's filter PCA, cached per model under FILTER_PCA."""
    return ph.per_model(FILTER_PCA, lambda: model_filters(ph.vm))


def token_similarities(a: Analysis, depth: int) -> np.ndarray:
    """(N, N) float32: the cosine similarity of every token to every token at `depth`, in one
    matmul of unit rows. The view's similarity picture reads a row of it, its token book sends all the
    patches' rows: the same numbers, so the page's colours are the server's."""
    return cosine_similarity_matrix(a.hidden_states[depth]).numpy()


def cls_attention_share(a: Analysis, g: Geometry, cells: np.ndarray) -> float:
    """[CLS]'s attention over the patches in the last layer, mean over heads (what the Attention tab's default
    map shows), summed over the (gh, gw) bool `cells`; NaN without a [CLS] or after a token drop."""
    pre = g.num_prefix_tokens
    if not pre or a.dropped:
        return float("nan")
    return float(a.attentions[-1, :, 0, pre:].float().mean(0).reshape(g.grid)[torch.from_numpy(cells)].sum())


def config_dropout(vm: VitModel) -> float | None:
    """The dropout the checkpoint's config applies after the position embeddings (None: no such setting)."""
    cfg = getattr(vm.vit, "config", vm.model.config)
    p = getattr(cfg, "hidden_dropout_prob", None)
    return None if p is None else float(p)
