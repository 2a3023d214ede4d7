"""The ``Method`` record every map method is, and what the records share.

A record holds everything about its method: its name (written as a string in its own module only),
whether it needs a class, whether it is a costly job (a progress stream, a check of its cost before any
wait, a time limit), where it is offered (the Attention tab's method menu and ``/relevance``, the
contest and the mask's "rank by", the export), its compute function, its caption and source. Every
consumer reads these fields; none compares a method's name with a string.

A method's ``compute(vm, a, class_index, cache, seed, cancel)`` -> (gh, gw) float32 map over the
patches: one forward and at most one backward through the engine (under its lock), on ``a``'s own
input with its heads switched off, cached per class through ``cache`` (``Photo.derived``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass

import numpy as np

from vizvit.cancel import NEVER, Cancel
from vizvit.errors import NO_CLASS, UserError
from vizvit.methods.maps import Cache, method_map_name, no_cache
from vizvit.methods.relevance import check_class
from vizvit.model.engine import Analysis
from vizvit.model.models import VitModel

Compute = Callable[[VitModel, Analysis, "int | None", Cache, int, Cancel], np.ndarray]
# A costly method's job: progress lines while it runs; at its end its result is in the cache, under
# the record's cached_as. Closing the generator stops it, and so does the Cancel (Cancelled).
Progress = Callable[[Analysis, Cache, Cancel], Iterator[str]]
TOP1 = ", top-1 class"  # what an exported map's text adds: it is the top-1 class's


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
    limit_s: float | None = None  # a costly job's wall-time limit (vizvit.service.jobs)
    cached_as: Hashable | None = None  # a costly one's cache name: in the curves only once computed
    # A costly one: refuses an input it cannot finish (within limit_s seconds at this server's speed;
    # None: no time limit), before any wait or work, and returns its estimated seconds.
    check: Callable[[Analysis, float | None], float] | None = None
    progress: Progress | None = None  # a costly one's job, streamed (see Progress)
    per_class: bool = False  # its maps cached per class, under maps.method_map_name(name, class)
    reads_summary: bool = False  # read from the tab's chosen summary token (the relevance panel)
    export_key: str | None = None  # arrays.npz key of its top-1 class map (None: not exported)
    export_text: str = ""  # summary.json "methods"[export_key]
    note: Callable[[np.ndarray], str] | None = None  # a sentence on this map's values, after its readout

    def __post_init__(self) -> None:
        if self.per_class and not self.needs_class:
            raise ValueError(f"{self.name}: a map cached per class needs a class (needs_class=True).")

    def __call__(self, vm: VitModel, a: Analysis, class_index: int | None = None, cache: Cache = no_cache,
                 seed: int = 0, cancel: Cancel = NEVER) -> np.ndarray:
        """(gh, gw) float32 map; a class-specific method checks the class (None: the top-1)."""
        if self.needs_class:
            class_index = a.top5[0].index if class_index is None and a.top5 else class_index
            if class_index is None:
                raise UserError(NO_CLASS)
            check_class(vm, a, int(class_index))
            c = class_index = int(class_index)
            if self.per_class:  # (only a method that needs a class: __post_init__)
                return cache(method_map_name(self.name, c), lambda: self.compute(vm, a, c, cache, seed, cancel))
        return self.compute(vm, a, class_index, cache, seed, cancel)

    def applies(self, vm: VitModel, a: Analysis) -> bool:
        """Whether it has a map for this model and analysis (a class needs a classifier)."""
        return not (self.needs_class and not (vm.has_classifier and a.top5))


def of_class(fn: Callable[[VitModel, Analysis, int], np.ndarray]) -> Compute:
    """A Compute from a class-specific map fn(vm, a, class_index) (no cache, seed or cancel to read)."""
    def compute(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
        if c is None:
            raise UserError(NO_CLASS)
        return fn(vm, a, int(c))
    return compute
