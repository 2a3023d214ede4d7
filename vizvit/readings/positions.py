"""The Positions tab's readings: the model's position embeddings as numbers, cached per model (they do
not depend on the photo), and the photo's prediction at another input size, cached per photo.

A learned or fixed table: its similarity report (model.positional.position_report), and the same
table interpolated for another input size with its neighbour contrast. A relative-bias family (BEiT):
its bias tables and their mean bias at offset 0, at the 4 neighbours and far. Nothing here draws:
vizvit.views.positions lays them out.

`per_model(name, compute)` is ``Photo.per_model`` (or the Workbench's for one model id).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from vizvit.model import engine, positional
from vizvit.model.models import VitModel
from vizvit.session import Photo

PerModel = Callable[[Hashable, Callable[[], Any]], Any]

# The names this module's results are cached under (per_model / Photo.derived).
POSITIONS = "positions"  # per model: the position report
RELATIVE_BIAS = "relative-bias"  # per model: a relative-bias family's tables


def positions_at_name(size: int) -> tuple:
    """Per model: the position table interpolated for a size×size input, its similarity."""
    return ("positions-at", size)


def predict_at_name(size: int) -> tuple:
    """Per photo: one forward at size×size."""
    return ("predict-at", size)


def report(vm: VitModel, per_model: PerModel) -> positional.PositionReport:
    """The model's position similarities: (P, P) between patch positions, [CLS]'s to each, the
    neighbour contrast of the learned table and of its baselines."""
    return per_model(POSITIONS, lambda: positional.position_report(engine.position_tables(vm)))


def relative_bias(vm: VitModel, per_model: PerModel) -> positional.RelativeBias:
    """A relative-bias family's tables for the model's grid (UserError for any other family)."""
    return per_model(RELATIVE_BIAS, lambda: positional.relative_bias(engine.position_tables(vm, random_init=False)))


def bias_contrast(rb: positional.RelativeBias, grid: tuple[int, int]) -> np.ndarray:
    """(L or 1, 3) float64: each table's mean over heads of the bias at offset (0, 0), at the 4 neighbours'
    offsets and at offsets ≥ positional.FAR apart (NaN when the grid has none so far)."""
    gh, gw = grid
    mean = rb.tables.mean(1)  # (L, th, tw)
    th, tw = mean.shape[1:]
    dr = np.abs(np.arange(th) - (gh - 1))[:, None]
    dc = np.abs(np.arange(tw) - (gw - 1))[None, :]
    near, far, zero = (dr + dc) == 1, np.maximum(dr, dc) >= positional.FAR, (dr + dc) == 0
    return np.array([[t[zero].mean(), t[near].mean(), t[far].mean() if far.any() else np.nan] for t in mean])


def bias_at_size(vm: VitModel, size: int) -> np.ndarray:
    """(L or 1, H, 2nh−1, 2nw−1) the bias tables resized (bilinearly, as transformers does) for a
    size×size input's nh×nw grid."""
    grid = positional.grid_at(vm.geometry, size)
    return positional.relative_bias(engine.position_tables(vm, random_init=False), grid).tables


@dataclass(frozen=True)
class SimilarityAtSize:
    """The position table interpolated for another input size."""

    grid: tuple[int, int]  # (nh, nw) patches at that size
    sim: np.ndarray  # (P', P') float32 cosine similarity of the interpolated patch positions
    contrast: positional.Contrast


def at_size(vm: VitModel, size: int, per_model: PerModel) -> SimilarityAtSize:
    def run() -> SimilarityAtSize:
        grid, sim = positional.interpolated_similarity(engine.position_tables(vm, random_init=False), size)
        return SimilarityAtSize(grid, sim, positional.neighbour_contrast(torch.from_numpy(sim), grid))

    return per_model(positions_at_name(size), run)


def stored_grid(vm: VitModel) -> tuple[int, int]:
    """The grid the model's position table was learned for (th, tw)."""
    return positional.stored_positions(engine.position_tables(vm, random_init=False))[2]


def predict_at(ph: Photo, size: int) -> engine.ResolutionPrediction:
    """The photo's prediction at size×size (one forward), cached per photo."""
    return ph.derived(predict_at_name(size), lambda: engine.predict_at_size(ph.vm, ph.image, size, ph.key.ablation))
