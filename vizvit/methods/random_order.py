"""Random order: the faithfulness contest's baseline (Petsiuk et al. 2018), a seeded uniform map."""

from __future__ import annotations

import numpy as np

from vizvit.cancel import Cancel
from vizvit.methods.base import Method
from vizvit.methods.maps import Cache
from vizvit.model.engine import Analysis
from vizvit.model.models import VitModel


def random_map(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    """(gh, gw) float64 uniform [0, 1) values from numpy's default generator seeded with `seed`."""
    return np.random.default_rng(seed).random(a.geometry.grid)


RANDOM = Method("random", random_map, "random order (a baseline)", "Petsiuk et al. 2018's baseline", baseline=True)
