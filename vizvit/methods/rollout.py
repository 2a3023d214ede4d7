"""Rollout (Abnar & Zuidema 2020): the summary's row of the mean-fusion, no-discard rollout through every
layer. The maths is vizvit.methods.maths's rollout, computed once per photo (vizvit.methods.maps.mean_rollout),
since every tab reads the same rollout."""

from __future__ import annotations

import numpy as np

from vizvit.cancel import Cancel
from vizvit.methods import maths as att_mod
from vizvit.methods.base import Method
from vizvit.methods.maps import Cache, summary_rollout_map
from vizvit.model.engine import Analysis
from vizvit.model.models import VitModel


def rollout_map(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    """(gh, gw) the summary's row of the mean rollout (SigLIP: the MAP head's weights·R)."""
    return summary_rollout_map(a, cache)


ROLLOUT = Method("rollout", rollout_map, att_mod.ROLLOUT_METHOD + ", mean fusion, no discard", "Abnar & Zuidema 2020")
