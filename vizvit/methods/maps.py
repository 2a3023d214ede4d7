"""One path per computation: the cached rollouts and relevance (attention flow: vizvit.methods.flow).

The mean-fusion, no-discard rollout is read by the Attention tab (maps, strip, grid, export), the
masks ("top / bottom by rollout"), the faithfulness curves, the Embeddings tab's colours and the
API: it is computed here, once per photo, under ``MEAN_ROLLOUT``. A map method (a (gh, gw)
map that ranks the patches: what a deletion curve removes first and a mask can be drawn from) is
one ``Method`` record in vizvit.readings.methods, whatever asks for it.

`cache(name, compute)` is ``Photo.derived`` (or ``no_cache``): the names are this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import torch

from vizvit.errors import UserError
from vizvit.methods import maths as att_mod
from vizvit.methods.relevance import relevance_parts
from vizvit.model.engine import Analysis
from vizvit.model.models import VitModel
from vizvit.vocab import DiscardMode, Fusion

Cache = Callable[[Hashable, Callable[[], Any]], Any]


def no_cache(name: Hashable, compute: Callable[[], Any]) -> Any:
    return compute()


# ------------------------------------------------------------------ the names this module caches under
# One result has one name wherever it is asked for (the one mean rollout is read by the Attention tab, the
# masks, the curves, the Embeddings tab, export and the API).
def rollout_name(fusion: str = "mean", discard: float = 0.0, discard_mode: str = "per row") -> tuple:
    """(L, N, N) rollout after each layer, per (fusion, discard, discard mode); without a discard
    both modes are one stack."""
    mode = discard_mode if discard > 0 else "per row"
    return ("rollout", fusion, round(float(discard), 4)) + (() if mode == "per row" else (mode,))


MEAN_ROLLOUT = rollout_name()  # mean fusion, no discard: vizvit.methods.maps.mean_rollout
HEAD_ROLLOUT = ("rollout_heads",)  # (L, H, N, N) per-head rollout


def relevance_name(class_index: int) -> tuple:
    """Chefer relevance parts (R (N, N), the MAP step or None) for one class."""
    return ("relevance", int(class_index))


def method_map_name(method: str, class_index: int) -> tuple:
    """(gh, gw) map of one class-specific method of vizvit.readings.methods (not Chefer's:
    relevance_name) for one class."""
    return ("method map", method, int(class_index))


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


# ------------------------------------------------------------------ maps every method reads
def summary_rollout_map(a: Analysis, cache: Cache = no_cache) -> np.ndarray:
    """(gh, gw) the summary's row of the mean rollout through every layer (SigLIP: the MAP head's weights·R)."""
    return att_mod.cls_to_patches(mean_rollout(a, cache), a.geometry, a.summary_weights)[-1].numpy()


def relevance_map(vm: VitModel, a: Analysis, class_index: int, cache: Cache = no_cache,
                  summary: str | None = None) -> np.ndarray:
    """(gh, gw) float32 relevance of `class_index`, read from the summary token's row (R is (N, N);
    SigLIP: the MAP head's relevance step s (N,), s·R)."""
    r, s = relevance(vm, a, class_index, cache)
    return att_mod.cls_to_patches(r, vm.geometry, s if s is not None else summary).numpy().astype(np.float32)
