"""One path per computation: the cached rollouts and the map-method registry.

The mean-fusion, no-discard rollout is read by the Attention tab (maps, strip, grid, export), the
masks ("top / bottom by rollout"), the faithfulness curves, the Embeddings tab's colours and the
API: it is computed here, once per photo, under ``session.MEAN_ROLLOUT``. A map method (a (gh, gw)
map that ranks the patches: what a deletion curve removes first and a mask can be drawn from) is
one ``MapMethod`` in ``MAP_METHODS``, whatever asks for it.

`cache(name, compute)` is ``Photo.derived`` (or ``no_cache``): names come from vizvit.session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable

import numpy as np
import torch

from . import attention as att_mod
from .engine import Analysis
from .errors import UserError
from .models import VitModel
from .relevance import relevance_parts
from .session import HEAD_ROLLOUT, MEAN_ROLLOUT, relevance_name, rollout_name
from .vocab import DiscardMode, Fusion

Cache = Callable[[Hashable, Callable[[], Any]], Any]


def no_cache(name: Hashable, compute: Callable[[], Any]) -> Any:
    return compute()


def full_attentions(a: Analysis) -> torch.Tensor:
    """(L, H, N, N) attentions of an analysis that kept every token."""
    if a.dropped:
        raise UserError("Attention maps need the full token sequence: turn token drop off.")
    return a.attentions


# ------------------------------------------------------------------ rollouts
def mean_rollout(a: Analysis, cache: Cache = no_cache) -> torch.Tensor:
    """(L, N, N) the mean-fusion, no-discard rollout after each layer: THE rollout every view reads."""
    return cache(MEAN_ROLLOUT, lambda: att_mod.rollout_stack(full_attentions(a), "mean", 0.0,
                                                             a.geometry.num_prefix_tokens, "per row"))


def rollout(a: Analysis, fusion: Fusion = "mean", discard: float = 0.0, cache: Cache = no_cache,
            discard_mode: DiscardMode = "per row") -> torch.Tensor:
    """(L, N, N) rollout after each layer, cached per (fusion, discard, discard mode); the mean
    without a discard is mean_rollout."""
    mode = discard_mode if discard > 0 else "per row"  # no discard: one stack for both modes
    if rollout_name(fusion, discard, mode) == MEAN_ROLLOUT:
        return mean_rollout(a, cache)
    return cache(rollout_name(fusion, discard, mode),
                 lambda: att_mod.rollout_stack(full_attentions(a), fusion, discard, a.geometry.num_prefix_tokens,
                                               mode))


def head_rollout(a: Analysis, cache: Cache = no_cache) -> torch.Tensor:
    """(L, H, N, N) per-head rollout Â_{l,h}·R_{l−1}, on top of the cached mean rollout."""
    return cache(HEAD_ROLLOUT, lambda: att_mod.rollout_heads(full_attentions(a), a.geometry.num_prefix_tokens,
                                                             below=mean_rollout(a, cache)))


# What the Attention tab's modes show per (layer, head): vocab.MODES -> the (L, H, N, N) stack.
HEAD_STACKS: dict[str, Callable[[Analysis, Cache], torch.Tensor]] = {
    "raw": lambda a, cache: full_attentions(a),  # each head's attention
    "rolled out": head_rollout,  # each head on top of the mean rollout below it
}


def relevance(vm: VitModel, a: Analysis, class_index: int,
              cache: Cache = no_cache) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Chefer relevance parts of one class (relevance.relevance_parts: one backward pass), cached."""
    return cache(relevance_name(class_index), lambda: relevance_parts(vm, a, int(class_index)))


# ------------------------------------------------------------------ map methods
@dataclass(frozen=True)
class MapMethod:
    """A map of one analysis that ranks the patches: compute(vm, a, cache, seed) -> (gh, gw)."""

    name: str  # as the curves, their export (deletion_curve_maps) and the page name it
    compute: Callable[[VitModel, Analysis, Cache, int], np.ndarray]
    needs_classifier: bool = False  # a class to explain: only for models with a classifier


def _rollout_map(vm: VitModel, a: Analysis, cache: Cache, seed: int) -> np.ndarray:
    """The summary's row of the mean rollout through every layer (SigLIP: the MAP head's weights·R)."""
    return att_mod.cls_to_patches(mean_rollout(a, cache), a.geometry, a.summary_weights)[-1].numpy()


def _last_layer_map(vm: VitModel, a: Analysis, cache: Cache, seed: int) -> np.ndarray:
    """Raw last-layer [CLS] attention (mean over heads); SigLIP: the MAP head's own attention, the
    summary's last attention, under the same name."""
    g = a.geometry
    if a.summary_weights is None:
        return att_mod.cls_to_patches(att_mod.fuse_heads(a.attentions[-1]), g).numpy()
    return a.summary_weights[g.num_prefix_tokens:].reshape(g.grid).numpy()


def _random_map(vm: VitModel, a: Analysis, cache: Cache, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(a.geometry.grid)


def relevance_map(vm: VitModel, a: Analysis, class_index: int, cache: Cache = no_cache,
                  summary: str | None = None) -> np.ndarray:
    """(gh, gw) float32 relevance of `class_index`, read from the summary token's row (R is (N, N);
    SigLIP: the MAP head's relevance step s (N,), s·R)."""
    r, s = relevance(vm, a, class_index, cache)
    return att_mod.cls_to_patches(r, vm.geometry, s if s is not None else summary).numpy().astype(np.float32)


def _relevance_map(vm: VitModel, a: Analysis, cache: Cache, seed: int) -> np.ndarray:
    return relevance_map(vm, a, a.top5[0].index, cache)


MAP_METHODS: dict[str, MapMethod] = {m.name: m for m in (
    MapMethod("rollout", _rollout_map),
    MapMethod("last-layer [CLS] attention", _last_layer_map),
    MapMethod("random", _random_map),
    MapMethod("class relevance", _relevance_map, needs_classifier=True),  # Chefer et al. 2021b, top-1 class
)}


def method_map(name: str, vm: VitModel, a: Analysis, cache: Cache = no_cache, seed: int = 0) -> np.ndarray:
    """(gh, gw) map of one method."""
    if name not in MAP_METHODS:
        raise UserError(f"Unknown map {name!r}: use one of {', '.join(MAP_METHODS)}.")
    return MAP_METHODS[name].compute(vm, a, cache, seed)


def ranking_maps(vm: VitModel, a: Analysis, cache: Cache = no_cache, seed: int = 0,
                 names: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """name -> (gh, gw) map of every method that applies (all of MAP_METHODS by default; the
    class-relevance one only with a classifier), in registry order."""
    wanted = tuple(MAP_METHODS) if names is None else names
    return {n: method_map(n, vm, a, cache, seed) for n in wanted
            if not (MAP_METHODS[n].needs_classifier and not (vm.has_classifier and a.top5))}
