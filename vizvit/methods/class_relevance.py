"""Class relevance (Chefer et al. 2021b, generic attention; not their 2021a LRP method): one backward
pass gives the gradient of the class's logit with respect to every attention map (vizvit.methods.relevance),
and R ← R + meanₕ[(∇A ⊙ A)⁺] · R from R = I (vizvit.methods.maths.chefer_relevance); the map is R's
summary row, read from the tab's chosen summary token (vizvit.methods.maps.relevance_map, cached per class)."""

from __future__ import annotations

import numpy as np

from vizvit.cancel import Cancel
from vizvit.errors import NO_CLASS, UserError
from vizvit.methods import maths as att_mod
from vizvit.methods.base import TOP1, Method
from vizvit.methods.maps import Cache, relevance_map
from vizvit.model.engine import Analysis
from vizvit.model.models import VitModel


def class_relevance_map(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int,
                        cancel: Cancel) -> np.ndarray:
    """(gh, gw) float32 relevance of class `c` from the summary's row."""
    if c is None:
        raise UserError(NO_CLASS)
    return relevance_map(vm, a, int(c), cache)


RELEVANCE = Method(
    "class relevance", class_relevance_map, att_mod.RELEVANCE_METHOD,
    "Chefer et al. 2021b, hila-chefer/Transformer-MM-Explainability",
    "*Class relevance*, Chefer et al. 2021b (generic attention; not their 2021a LRP method): unlike rollout, it "
    "depends on the class: one backward pass gives the gradient of that class's logit with respect to every "
    "attention map, and R ← R + meanₕ[(∇A ⊙ A)⁺] · R (from R = I, layer by layer) keeps the attention that "
    "*raised* that class. The map is R's [CLS] row.",
    needs_class=True, menu=True, reads_summary=True, export_key="relevance",
    export_text=att_mod.RELEVANCE_METHOD + TOP1 + "; R ← R + mean_h[(∇A ⊙ A)⁺]·R")
