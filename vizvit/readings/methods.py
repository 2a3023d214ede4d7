"""ONE Method registry: every map the app can explain a photo by is one ``Method`` record, each in its own
module of vizvit.methods (its maths, its call into the engine, its record: the only place its name is
written). This module only lists them, in order, and answers the questions every consumer asks of the
list; no consumer compares a method's name with a string (tests/readings/test_methods.py greps for it).
"""

from __future__ import annotations

import numpy as np

from vizvit.errors import UserError
from vizvit.methods.attnlrp import ATTNLRP
from vizvit.methods.base import Method
from vizvit.methods.class_relevance import RELEVANCE
from vizvit.methods.flow import FLOW
from vizvit.methods.grad_rollout import GRAD_ROLLOUT
from vizvit.methods.gradcam import GRADCAM
from vizvit.methods.last_layer import LAST_LAYER
from vizvit.methods.legrad import LEGRAD, LEGRAD_MEAN
from vizvit.methods.maps import Cache, no_cache
from vizvit.methods.random_order import RANDOM
from vizvit.methods.rollout import ROLLOUT
from vizvit.model.engine import Analysis
from vizvit.model.models import VitModel

__all__ = ["Method", "ROLLOUT", "LAST_LAYER", "RANDOM", "RELEVANCE", "GRAD_ROLLOUT", "LEGRAD", "LEGRAD_MEAN",
           "GRADCAM", "ATTNLRP", "FLOW"]

# Registry order: the menu's, the curves' and the export's.
METHODS: tuple[Method, ...] = (ROLLOUT, LAST_LAYER, RANDOM, RELEVANCE, GRAD_ROLLOUT, LEGRAD, LEGRAD_MEAN, GRADCAM,
                               ATTNLRP, FLOW)
BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}
MENU: tuple[Method, ...] = tuple(m for m in METHODS if m.menu)  # the Attention tab's menu and /relevance
CONTEST: tuple[Method, ...] = tuple(m for m in METHODS if m.contest)  # the curves (costly ones once computed)
EXPORTED: tuple[Method, ...] = tuple(m for m in METHODS if m.export_key)  # arrays.npz, top-1 class
RANK_BY: tuple[Method, ...] = tuple(m for m in CONTEST if not m.baseline and not m.costly)  # the mask's "rank by"
COSTLY: tuple[Method, ...] = tuple(m for m in METHODS if m.costly)  # jobs: streamed, checked, stoppable
# Seconds a costly job may run (vizvit.service.jobs.Jobs(limits=...)): each costly record's own.
JOB_LIMITS: dict[str, float] = {m.name: m.limit_s for m in COSTLY if m.limit_s is not None}


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
