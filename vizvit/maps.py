"""One path per computation: the cached rollouts and the map-method registry.

The mean-fusion, no-discard rollout is read by the Attention tab (maps, strip, grid, export), the
masks ("top / bottom by rollout"), the faithfulness curves, the Embeddings tab's colours and the
API: it is computed here, once per photo, under ``MEAN_ROLLOUT``. A map method (a (gh, gw)
map that ranks the patches: what a deletion curve removes first and a mask can be drawn from) is
one ``MapMethod`` in ``MAP_METHODS``, whatever asks for it.

`cache(name, compute)` is ``Photo.derived`` (or ``no_cache``): the names are this module's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator

import numpy as np
import torch

from . import attention as att_mod
from . import engine, explain
from .cancel import NEVER, Cancel
from .engine import Analysis
from .errors import UserError
from .models import VitModel
from .relevance import check_class, checked_gradients, map_step, relevance_parts
from .vocab import DiscardMode, Fusion

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


MEAN_ROLLOUT = rollout_name()  # mean fusion, no discard: vizvit.maps.mean_rollout
HEAD_ROLLOUT = ("rollout_heads",)  # (L, H, N, N) per-head rollout


def relevance_name(class_index: int) -> tuple:
    """Chefer relevance parts (R (N, N), the MAP step or None) for one class."""
    return ("relevance", int(class_index))


def method_map_name(method: str, class_index: int) -> tuple:
    """(gh, gw) map of one class-specific method of vizvit.maps.CLASS_METHODS (not Chefer's:
    relevance_name) for one class."""
    return ("method map", method, int(class_index))


ATTENTION_FLOW = ("attention flow",)  # (N,) exact attention flow from the summary (vizvit.explain)


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


# ------------------------------------------------------------------ the class-specific methods
# Each (vm, a, class_index) -> (gh, gw) float32: one forward and at most one backward through the
# engine (under its lock), on a's own input and heads switched off; cached per class by `class_map`.
def _grad_rollout(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """vit-explain's gradient rollout (explain.grad_rollout) from the summary's row; SigLIP: the
    MAP head's step (as for relevance) times R."""
    att, grads = checked_gradients(vm, a, class_index)
    n = vm.geometry.num_layers
    r = explain.grad_rollout(torch.stack(att[:n]), torch.stack(grads[:n]))
    s = map_step(att, grads, n)
    return att_mod.cls_to_patches(r, vm.geometry, s).numpy().astype(np.float32)


def _legrad(vm: VitModel, a: Analysis, class_index: int, readout: str = "summary") -> np.ndarray:
    """LeGrad over the last explain.LEGRAD_LAYERS blocks (its default layer_index = −2); readout:
    "summary" (the model's own head: [CLS] for a ViT) or explain.LEGRAD_TOKEN_MEAN (torchcam's)."""
    check_class(vm, a, class_index)
    g = vm.geometry
    layers = range(max(0, g.num_layers - explain.LEGRAD_LAYERS), g.num_layers)
    grads = engine.layer_score_gradients(vm, a.pixel_values, class_index, layers, a.ablation, readout)
    return explain.legrad(grads, g.num_prefix_tokens).reshape(g.grid).numpy().astype(np.float32)


def _legrad_mean(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """LeGrad with each layer read from the mean of its tokens (torchcam 0.5's LeGrad). An image-text
    tower's LeGrad already reads CLIP's mean and SigLIP's pooling head: the same map as "LeGrad"."""
    return _legrad(vm, a, class_index, explain.LEGRAD_TOKEN_MEAN)


def _gradcam(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """Grad-CAM on the last block's first layernorm (pytorch-grad-cam's ViT target layer)."""
    check_class(vm, a, class_index)
    act, grad = engine.activation_gradients(vm, a.pixel_values, class_index, a.ablation)
    g = vm.geometry
    return explain.gradcam(act, grad, g.num_prefix_tokens, g.grid).numpy().astype(np.float32)


CLASS_METHODS: dict[str, Callable[[VitModel, Analysis, int], np.ndarray]] = {
    "gradient rollout": _grad_rollout,
    "LeGrad": _legrad,
    "Grad-CAM": _gradcam,
}
LEGRAD_MEAN = "LeGrad (token mean)"
# Variants of a class-specific map that the Attention tab's menu and the API offer, but that the
# contest does not rank and export does not write (one more backward each, for a readout choice).
CLASS_VARIANTS: dict[str, Callable[[VitModel, Analysis, int], np.ndarray]] = {
    LEGRAD_MEAN: _legrad_mean,
}
# The exact method each name stands for (titles, texts, the API and export; docs/methods.md).
METHOD_TEXT: dict[str, str] = {
    "rollout": att_mod.ROLLOUT_METHOD + ", mean fusion, no discard",
    "last-layer [CLS] attention": "last layer's [CLS] attention, mean over heads",
    "random": "random order (a baseline)",
    "class relevance": att_mod.RELEVANCE_METHOD,
    "gradient rollout": explain.GRAD_ROLLOUT_METHOD + f", discard {explain.GRAD_ROLLOUT_DISCARD}",
    "LeGrad": explain.LEGRAD_METHOD + f", last {explain.LEGRAD_LAYERS} layers",
    LEGRAD_MEAN: explain.LEGRAD_METHOD + f", last {explain.LEGRAD_LAYERS} layers, each read from the mean of its "
                 "tokens through the final norm and head (torchcam 0.5's readout)",
    "Grad-CAM": explain.GRADCAM_METHOD,
    "attention flow": explain.FLOW_METHOD,
}


def class_map(method: str, vm: VitModel, a: Analysis, class_index: int, cache: Cache = no_cache) -> np.ndarray:
    """(gh, gw) float32 map of one class-specific method ("class relevance" or CLASS_METHODS) for
    `class_index`, cached per class."""
    if method == "class relevance":
        return relevance_map(vm, a, class_index, cache)
    compute = CLASS_METHODS.get(method) or CLASS_VARIANTS.get(method)
    if compute is None:
        raise UserError(f"Unknown class-specific method {method!r}: use class relevance, "
                        f"{', '.join([*CLASS_METHODS, *CLASS_VARIANTS])}.")
    check_class(vm, a, int(class_index))
    return cache(method_map_name(method, class_index), lambda: compute(vm, a, int(class_index)))


# ------------------------------------------------------------------ attention flow: a job
def flow_steps(a: Analysis, cache: Cache = no_cache, should_stop: Callable[[], bool] = lambda: False,
               cancel: Cancel = NEVER) -> Iterator[explain.FlowStep]:
    """Exact attention flow from the summary, streamed (explain.attention_flow_steps); the finished
    (N,) flows are cached under ATTENTION_FLOW. Pure maths on the cached attentions: it never
    holds the engine's lock (minutes on ViT-Ti, and every other user would wait)."""
    for step in explain.attention_flow_steps(full_attentions(a), a.summary_weights, should_stop, cancel):
        if step.flows is not None:
            flows = step.flows
            cache(ATTENTION_FLOW, lambda: flows)
        yield step


def attention_flow(a: Analysis, cache: Cache = no_cache, cancel: Cancel = NEVER) -> np.ndarray:
    """(N,) attention flow of the analysis, from the cache or computed to the end (Cancelled: nothing cached)."""
    def run() -> np.ndarray:
        return explain.attention_flow(full_attentions(a), a.summary_weights, cancel)
    return cache(ATTENTION_FLOW, run)


def flow_map(a: Analysis, cache: Cache = no_cache, cancel: Cancel = NEVER) -> np.ndarray:
    """(gh, gw) float32 attention flow over the patches (the input tokens after the prefix)."""
    g = a.geometry
    return attention_flow(a, cache, cancel)[g.num_prefix_tokens:].reshape(g.grid).astype(np.float32)


# ------------------------------------------------------------------ map methods
@dataclass(frozen=True)
class MapMethod:
    """A map of one analysis that ranks the patches: compute(vm, a, cache, seed) -> (gh, gw)."""

    name: str  # as the curves, their export (deletion_curve_maps) and the page name it
    compute: Callable[[VitModel, Analysis, Cache, int], np.ndarray]
    needs_classifier: bool = False  # a class to explain: only for models with a classifier
    slow: bool = False  # minutes (attention flow): in the curves only once computed (the Attention tab)


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


def _top1(method: str) -> Callable[[VitModel, Analysis, Cache, int], np.ndarray]:
    return lambda vm, a, cache, seed: class_map(method, vm, a, a.top5[0].index, cache)


MAP_METHODS: dict[str, MapMethod] = {m.name: m for m in (
    MapMethod("rollout", _rollout_map),
    MapMethod("last-layer [CLS] attention", _last_layer_map),
    MapMethod("random", _random_map),
    MapMethod("class relevance", _relevance_map, needs_classifier=True),  # Chefer et al. 2021b, top-1 class
    *(MapMethod(n, _top1(n), needs_classifier=True) for n in CLASS_METHODS),  # top-1 class
    MapMethod("attention flow", lambda vm, a, cache, seed: flow_map(a, cache), slow=True),
)}


def method_map(name: str, vm: VitModel, a: Analysis, cache: Cache = no_cache, seed: int = 0) -> np.ndarray:
    """(gh, gw) map of one method."""
    if name not in MAP_METHODS:
        raise UserError(f"Unknown map {name!r}: use one of {', '.join(MAP_METHODS)}.")
    return MAP_METHODS[name].compute(vm, a, cache, seed)


def applies(name: str, vm: VitModel, a: Analysis) -> bool:
    """Whether method `name` has a map for this model and analysis (a class needs a classifier)."""
    return not (MAP_METHODS[name].needs_classifier and not (vm.has_classifier and a.top5))


def ranking_maps(vm: VitModel, a: Analysis, cache: Cache = no_cache, seed: int = 0,
                 names: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """name -> (gh, gw) map of every method that applies (all of MAP_METHODS but the slow ones by
    default; the class-specific ones only with a classifier), in registry order."""
    wanted = tuple(n for n in MAP_METHODS if not MAP_METHODS[n].slow) if names is None else names
    return {n: method_map(n, vm, a, cache, seed) for n in wanted if applies(n, vm, a)}
