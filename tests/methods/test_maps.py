"""The cached rollouts (vizvit/methods/maps.py) against plain float64 loops written here from Abnar & Zuidema
(2020): Â = ½·mean_h A + ½·I, rows renormalised, R_l = Â_l···Â_1; the per-head rollout Â_{l,h}·R_{l−1};
each computed once per cache, under its own name; token drop refused in one sentence. The method
maps are checked against their authors' code in tests/test_explain.py and tests/system/test_methods.py."""

from __future__ import annotations

import numpy as np
import pytest

import vizvit
from vizvit.errors import UserError
from vizvit.methods import maps
from vizvit.methods.flow import flow_map
from vizvit.model.images import View


@pytest.fixture(scope="module")
def analysis(tiny16, cat):
    return vizvit.analyze(tiny16, cat)


def plain_rollout(att: np.ndarray, head_op=lambda a: a.mean(0)) -> np.ndarray:
    """(L, H, N, N) -> (L, N, N), one layer at a time."""
    n = att.shape[-1]
    r, out = np.eye(n), []
    for layer in att:
        a_hat = 0.5 * head_op(layer) + 0.5 * np.eye(n)
        a_hat /= a_hat.sum(-1, keepdims=True)
        r = a_hat @ r
        out.append(r)
    return np.stack(out)


class Counting:
    """A cache that remembers by name and counts what it computes."""

    def __init__(self) -> None:
        self.store, self.computed = {}, []

    def __call__(self, name, compute):
        if name not in self.store:
            self.computed.append(name)
            self.store[name] = compute()
        return self.store[name]


def test_the_mean_rollout_is_the_plain_loop_and_computed_once(analysis):
    att = analysis.attentions.double().numpy()
    cache = Counting()
    got = maps.mean_rollout(analysis, cache)
    np.testing.assert_allclose(got.numpy(), plain_rollout(att), atol=1e-5)
    assert maps.rollout(analysis, "mean", 0.0, cache) is got  # the same stack, not a second one
    assert maps.mean_rollout(analysis, cache) is got and len(cache.computed) == 1


def test_other_fusions_are_their_own_stacks(analysis):
    att = analysis.attentions.double().numpy()
    cache = Counting()
    top = maps.rollout(analysis, "max", 0.0, cache)
    np.testing.assert_allclose(top.numpy(), plain_rollout(att, lambda a: a.max(0)), atol=1e-5)
    maps.rollout(analysis, "mean", 0.0, cache)
    maps.rollout(analysis, "mean", 0.5, cache, "per row")
    maps.rollout(analysis, "mean", 0.5, cache, "global (vit-explain)")
    maps.rollout(analysis, "max", 0.0, cache, "global (vit-explain)")  # no discard: mode does not matter
    assert len(cache.computed) == 4 and len(set(cache.computed)) == 4


def test_the_head_rollout_stacks_each_head_on_the_mean_rollout_below(analysis):
    att = analysis.attentions.double().numpy()  # (L, H, N, N)
    below = plain_rollout(att)
    got = maps.head_rollout(analysis).numpy()
    n = att.shape[-1]
    for layer in range(att.shape[0]):
        r = np.eye(n) if layer == 0 else below[layer - 1]
        for head in range(att.shape[1]):
            a_hat = 0.5 * att[layer, head] + 0.5 * np.eye(n)
            want = (a_hat / a_hat.sum(-1, keepdims=True)) @ r
            np.testing.assert_allclose(got[layer, head], want, atol=1e-5, err_msg=f"layer {layer} head {head}")


def test_token_drop_is_refused_in_one_sentence(tiny16, cat):
    dropped = vizvit.analyze(tiny16, cat, View(mask=(0, 3), mask_mode="drop"))
    assert dropped.dropped
    for call in (maps.full_attentions, maps.mean_rollout, maps.head_rollout, flow_map):
        with pytest.raises(UserError, match="need the full token sequence: turn token drop off"):
            call(dropped)
