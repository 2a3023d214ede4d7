"""Artifact tokens as a reading: each layer's high-norm tokens of one photo (vizvit.readings.artifacts_rule
holds the pure rule), cached per photo under this module's name."""

from __future__ import annotations

import numpy as np

from vizvit.methods.maps import Cache
from vizvit.model.engine import Analysis
from vizvit.readings import artifacts_rule as art_mod

ARTIFACTS = ("artifacts",)  # (L, gh, gw) bool artifact tokens per layer


def artifact_masks(a: Analysis, cache: Cache | None = None) -> np.ndarray:
    """(L, gh, gw) bool: each layer's artifact tokens (artifacts.ARTIFACT_RULE), cached per photo.
    Token drop has no full attention matrix: no artifacts are named then."""
    g = a.geometry
    if a.dropped:
        return np.zeros((g.num_layers, *g.grid), bool)
    compute = lambda: art_mod.artifact_tokens(a.hidden_states, g)  # noqa: E731
    return compute() if cache is None else cache(ARTIFACTS, compute)


def artifacts_through(a: Analysis, cache: Cache | None = None) -> np.ndarray:
    """(L, gh, gw) bool: the artifact tokens of any layer up to each (what a rollout through that
    layer passes through: artifacts.through_layers)."""
    return art_mod.through_layers(artifact_masks(a, cache))
