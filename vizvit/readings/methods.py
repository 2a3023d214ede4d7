"""ONE Method registry: every map the app can explain a photo by is one ``Method`` record here.

A record holds everything about its method: its name (the only place that name is written as a
string in vizvit/ and page/), whether it needs a class, whether it is a costly job that streams,
where it is offered (the Attention tab's method menu and ``/relevance``, the contest and the mask's
"rank by", the export), its compute function, its caption and source. Every consumer reads these
fields; none compares a method's name with a string (tests/readings/test_methods.py greps for it).

A method's ``compute(vm, a, class_index, cache, seed, cancel)`` -> (gh, gw) float32 map over the
patches: one forward and at most one backward through the engine (under its lock), on ``a``'s own
input with its heads switched off, cached per class through ``cache`` (``Photo.derived``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable

import numpy as np
import torch

from .. import attention as att_mod
from .. import engine, explain, lrp, maps
from ..cancel import NEVER, Cancel
from ..engine import Analysis
from ..errors import UserError
from ..maps import Cache, no_cache
from ..models import VitModel
from ..relevance import check_class, checked_gradients, map_step
from ..maps import ATTENTION_FLOW, method_map_name

Compute = Callable[[VitModel, Analysis, "int | None", Cache, int, Cancel], np.ndarray]


@dataclass(frozen=True)
class Method:
    """One map method: a (gh, gw) map of one analysis that ranks the patches."""

    name: str  # as the menu, the API, the curves' legend and the mask's "rank by" name it
    compute: Compute
    caption: str  # the exact method (titles, the API's "method", export; docs/methods.md)
    source: str  # the paper or code it follows
    blurb: str = ""  # the Attention tab's sentence on it (empty: not in the tab's menu)
    needs_class: bool = False  # a class to explain: only for models with a classifier
    menu: bool = False  # in the Attention tab's method menu and /relevance
    contest: bool = True  # ranked by the faithfulness curves and offered as the mask's "rank by"
    baseline: bool = False  # the contest's baseline (random order): no "rank by", drawn grey
    costly: bool = False  # minutes: a job (a slot, a time limit), streamed, stoppable
    limit_s: float | None = None  # a costly job's wall-time limit (vizvit.jobs)
    cached_as: Hashable | None = None  # a costly one's cache name: in the curves only once computed
    check: Callable[[Analysis], None] | None = None  # refuses an input it cannot finish, before any work
    reads_summary: bool = False  # read from the tab's chosen summary token (the relevance panel)
    export_key: str | None = None  # arrays.npz key of its top-1 class map (None: not exported)
    export_text: str = ""  # summary.json "methods"[export_key]
    note: Callable[[np.ndarray], str] | None = None  # a sentence on this map's values, after its readout

    def __call__(self, vm: VitModel, a: Analysis, class_index: int | None = None, cache: Cache = no_cache,
                 seed: int = 0, cancel: Cancel = NEVER) -> np.ndarray:
        """(gh, gw) float32 map; a class-specific method checks the class (None: the top-1)."""
        if self.needs_class:
            class_index = a.top5[0].index if class_index is None and a.top5 else class_index
            if class_index is None:
                raise UserError("This model has no classifier, so there is no class to explain.")
            check_class(vm, a, int(class_index))
            class_index = int(class_index)
        return self.compute(vm, a, class_index, cache, seed, cancel)

    def applies(self, vm: VitModel, a: Analysis) -> bool:
        """Whether it has a map for this model and analysis (a class needs a classifier)."""
        return not (self.needs_class and not (vm.has_classifier and a.top5))


# ------------------------------------------------------------------ the computations
def _rollout(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    return maps.summary_rollout_map(a, cache)


def _last_layer(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    """Raw last-layer [CLS] attention (mean over heads); SigLIP: the MAP head's own attention, the
    summary's last attention, under the same name."""
    g = a.geometry
    if a.summary_weights is None:
        return att_mod.cls_to_patches(att_mod.fuse_heads(a.attentions[-1]), g).numpy()
    return a.summary_weights[g.num_prefix_tokens:].reshape(g.grid).numpy()


def _random(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    return np.random.default_rng(seed).random(a.geometry.grid)


def _relevance(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    return maps.relevance_map(vm, a, int(c), cache)  # type: ignore[arg-type]


def _per_class(name: str, fn: Callable[[VitModel, Analysis, int], np.ndarray]) -> Compute:
    """A class-specific map cached per class under maps.method_map_name(name, class)."""
    return lambda vm, a, c, cache, seed, cancel: cache(method_map_name(name, int(c)),  # type: ignore[arg-type]
                                                       lambda: fn(vm, a, int(c)))  # type: ignore[arg-type]


def _grad_rollout(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """vit-explain's gradient rollout (explain.grad_rollout) from the summary's row; SigLIP: the
    MAP head's step (as for relevance) times R."""
    att, grads = checked_gradients(vm, a, class_index)
    n = vm.geometry.num_layers
    r = explain.grad_rollout(torch.stack(att[:n]), torch.stack(grads[:n]))
    s = map_step(att, grads, n)
    return att_mod.cls_to_patches(r, vm.geometry, s).numpy().astype(np.float32)


def _legrad_of(readout: str) -> Callable[[VitModel, Analysis, int], np.ndarray]:
    """LeGrad over the last explain.LEGRAD_LAYERS blocks (its default layer_index = −2); readout:
    "summary" (the model's own head: [CLS] for a ViT) or explain.LEGRAD_TOKEN_MEAN (torchcam's; an
    image-text tower's LeGrad already reads CLIP's mean and SigLIP's pooling head: the same map)."""
    def run(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
        g = vm.geometry
        layers = range(max(0, g.num_layers - explain.LEGRAD_LAYERS), g.num_layers)
        grads = engine.layer_score_gradients(vm, a.pixel_values, class_index, layers, a.ablation, readout)
        return explain.legrad(grads, g.num_prefix_tokens).reshape(g.grid).numpy().astype(np.float32)
    return run


def _gradcam(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """Grad-CAM on the last block's first layernorm (pytorch-grad-cam's ViT target layer)."""
    act, grad = engine.activation_gradients(vm, a.pixel_values, class_index, a.ablation)
    g = vm.geometry
    return explain.gradcam(act, grad, g.num_prefix_tokens, g.grid).numpy().astype(np.float32)


def _attnlrp(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """AttnLRP's relevance of each patch embedding (engine.attnlrp_relevance: lxt's rules, one forward and
    one backward; the position embeddings' share is a bias term); signed: negative is against the class."""
    r = engine.attnlrp_relevance(vm, a.pixel_values, class_index, a.ablation)
    return r.patches.reshape(vm.geometry.grid).numpy().astype(np.float32)


def _signed(values: np.ndarray) -> str:
    """AttnLRP's map is signed: say how much of it speaks against the class."""
    neg = float(-values[values < 0].sum())
    return (f" Signed: the patches' negative relevance (evidence against the class, drawn as 0) totals {neg:.4g}, "
            f"their positive {float(values[values > 0].sum()):.4g}.")


def _flow(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    return maps.flow_map(a, cache, cancel)


def _flat_flow(values: np.ndarray) -> str:
    """Max-flows share their bottlenecks: the map is nearly flat."""
    return (f" Every patch gets between {values.min():.4g} and {values.max():.4g} (uniform: {1 / values.size:.4g}): "
            "flow spreads over many paths, so its maps are flatter than rollout's.")


# ------------------------------------------------------------------ the registry
_TOP1 = ", top-1 class"
ROLLOUT = Method("rollout", _rollout, att_mod.ROLLOUT_METHOD + ", mean fusion, no discard", "Abnar & Zuidema 2020")
LAST_LAYER = Method("last-layer [CLS] attention", _last_layer, "last layer's [CLS] attention, mean over heads",
                    "the ViT paper's attention maps (Dosovitskiy et al. 2021)")
RANDOM = Method("random", _random, "random order (a baseline)", "Petsiuk et al. 2018's baseline", baseline=True)
RELEVANCE = Method(
    "class relevance", _relevance, att_mod.RELEVANCE_METHOD, "Chefer et al. 2021b, hila-chefer/Transformer-MM-Explainability",
    "*Class relevance*, Chefer et al. 2021b (generic attention; not their 2021a LRP method): unlike rollout, it "
    "depends on the class: one backward pass gives the gradient of that class's logit with respect to every "
    "attention map, and R ← R + meanₕ[(∇A ⊙ A)⁺] · R (from R = I, layer by layer) keeps the attention that "
    "*raised* that class. The map is R's [CLS] row.",
    needs_class=True, menu=True, reads_summary=True, export_key="relevance",
    export_text=att_mod.RELEVANCE_METHOD + _TOP1 + "; R ← R + mean_h[(∇A ⊙ A)⁺]·R")
GRAD_ROLLOUT = Method(
    "gradient rollout", _per_class("gradient rollout", _grad_rollout),
    explain.GRAD_ROLLOUT_METHOD + f", discard {explain.GRAD_ROLLOUT_DISCARD}", "jacobgil/vit-explain",
    "*Gradient rollout* (vit-explain): rollout of meanₕ(A ⊙ ∇A)⁺ with the lowest 90 % dropped.",
    needs_class=True, menu=True, export_key="map_gradient_rollout",
    export_text=explain.GRAD_ROLLOUT_METHOD + f", discard {explain.GRAD_ROLLOUT_DISCARD}" + _TOP1
    + "; layers in order, rows renormalised (vit-explain's issues #6 and #16 fixed)")
_LEGRAD_CAPTION = explain.LEGRAD_METHOD + f", last {explain.LEGRAD_LAYERS} layers"
LEGRAD = Method(
    "LeGrad", _per_class("LeGrad", _legrad_of("summary")), _LEGRAD_CAPTION, "Bousselham et al. 2024, WalBouss/LeGrad",
    "*LeGrad* (Bousselham et al. 2024): each of the last two layers read out by the model's own head ([CLS]), and "
    "the positive gradient of that score with respect to that layer's attention, averaged;",
    needs_class=True, menu=True, export_key="map_legrad",
    export_text=_LEGRAD_CAPTION + _TOP1 + "; each layer read by the model's own head; not min-max scaled")
# A variant the menu and the API offer, but that the contest does not rank and export does not write
# (one more backward each, for a readout choice).
LEGRAD_MEAN = Method(
    "LeGrad (token mean)", _per_class("LeGrad (token mean)", _legrad_of(explain.LEGRAD_TOKEN_MEAN)),
    _LEGRAD_CAPTION + ", each read from the mean of its tokens through the final norm and head (torchcam 0.5's "
    "readout)", "frgfm/torch-cam 0.5",
    "*LeGrad (token mean)* reads the mean of all tokens instead, as torchcam's LeGrad and LeGrad on CLIP do.",
    needs_class=True, menu=True, contest=False)
GRADCAM = Method(
    "Grad-CAM", _per_class("Grad-CAM", _gradcam), explain.GRADCAM_METHOD, "Selvaraju et al. 2017, jacobgil/pytorch-grad-cam",
    "*Grad-CAM*: the last block's first layernorm, weighted by its mean gradient (pytorch-grad-cam's ViT recipe).",
    needs_class=True, menu=True, export_key="map_gradcam",
    export_text=explain.GRADCAM_METHOD + _TOP1 + "; not min-max scaled or resized")
ATTNLRP = Method(
    "AttnLRP", _per_class("AttnLRP", _attnlrp), lrp.ATTNLRP_METHOD,
    "Achtibat et al., ICML 2024; rules ported from rachtibat/LRP-eXplains-Transformers (lxt 2.1)",
    "*AttnLRP* (Achtibat et al. 2024): layer-wise relevance propagation through the whole model with its "
    "authors' rules (LayerNorm and GELU pass relevance through, each attention matmul halves it between its "
    "operands, softmax by its Taylor rule), as gradient × input at the patch embeddings before block 1, "
    "the position embeddings' share left out as LRP leaves out a bias; the patches' relevance and the bias "
    "terms sum to the class's logit.",
    needs_class=True, menu=True, export_key="map_attnlrp",
    export_text=lrp.ATTNLRP_METHOD + _TOP1 + "; signed (negative: against the class), not rescaled", note=_signed)
FLOW = Method(
    "attention flow", _flow, explain.FLOW_METHOD, "Abnar & Zuidema 2020",
    "*Attention flow* (Abnar & Zuidema 2020): an exact max-flow from [CLS] to each input token through the "
    "attention graph; not class-specific, 5-10 s on a 12-layer model (one max-flow per token), streamed and "
    "stoppable.",
    menu=True, costly=True, limit_s=120.0, cached_as=ATTENTION_FLOW,
    check=lambda a: explain.check_flow_size(tuple(a.attentions.shape)), note=_flat_flow)

# Registry order: the menu's, the curves' and the export's.
METHODS: tuple[Method, ...] = (ROLLOUT, LAST_LAYER, RANDOM, RELEVANCE, GRAD_ROLLOUT, LEGRAD, LEGRAD_MEAN, GRADCAM,
                               ATTNLRP, FLOW)
BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}
MENU: tuple[Method, ...] = tuple(m for m in METHODS if m.menu)  # the Attention tab's menu and /relevance
CONTEST: tuple[Method, ...] = tuple(m for m in METHODS if m.contest)  # the curves (costly ones once computed)
EXPORTED: tuple[Method, ...] = tuple(m for m in METHODS if m.export_key)  # arrays.npz, top-1 class
RANK_BY: tuple[Method, ...] = tuple(m for m in CONTEST if not m.baseline and not m.costly)  # the mask's "rank by"
# Seconds a costly job may run (vizvit.jobs.Jobs(limits=...)): Attention flow on ViT-Ti/16 or ViT-B/16 takes
# 4-8 s on two busy cores since issue 52 (benchmarks/bench_flow.py; ~10 min in networkx before): 120 s is ten
# times that on a machine many times busier, and still a tenth of the old limit for a job holding a slot.
JOB_LIMITS: dict[str, float] = {m.name: m.limit_s for m in METHODS if m.costly and m.limit_s is not None}


def get(name: str, among: tuple[Method, ...] = METHODS) -> Method:
    """The record named `name` among `among`, or a UserError listing them."""
    found = [m for m in among if m.name == name] if isinstance(name, str) else []
    if found:
        return found[0]
    # A caller's value is named only when it is short text: a list or a dict from the API is not echoed back.
    said = repr(name) if isinstance(name, str) and len(name) <= 48 else "this value"
    raise UserError(f"Unknown method {said}: use one of {', '.join(m.name for m in among)}.")


def is_costly(name: str) -> bool:
    """Whether `name` is a costly, streamed job (False for a name that is no method: the caller's check refuses it)."""
    m = BY_NAME.get(name) if isinstance(name, str) else None  # an API caller may send a list or a dict
    return m is not None and m.costly


def class_map(name: str, vm: VitModel, a: Analysis, class_index: int, cache: Cache = no_cache) -> np.ndarray:
    """(gh, gw) float32 map of one class-specific method for `class_index`, cached per class."""
    return get(name, tuple(m for m in METHODS if m.needs_class))(vm, a, class_index, cache)


def method_map(name: str, vm: VitModel, a: Analysis, cache: Cache = no_cache, seed: int = 0) -> np.ndarray:
    """(gh, gw) map of one method (a class-specific one: for the top-1 class)."""
    return get(name)(vm, a, None, cache, seed)


def ranking_maps(vm: VitModel, a: Analysis, cache: Cache = no_cache, seed: int = 0,
                 names: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """name -> (gh, gw) map of every method that applies (the contest's but the costly ones by default;
    the class-specific ones for the top-1 class, only with a classifier), in registry order."""
    wanted = [m for m in CONTEST if not m.costly] if names is None else [get(n) for n in names]
    return {m.name: m(vm, a, None, cache, seed) for m in wanted if m.applies(vm, a)}


def menu_text() -> str:
    """The Attention tab's paragraph on its method menu: each menu method's sentence, in menu order."""
    return ("**Class-specific maps.** " + " ".join(m.blurb for m in MENU)
            + " Each runs only when you press the button (one forward and at most one backward; a costly one "
            "as a job), then it is cached. Sources and formulas: docs/methods.md.")
