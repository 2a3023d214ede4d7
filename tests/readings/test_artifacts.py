"""vizvit.readings.artifacts: a constructed high-norm token is named in the layers whose input holds
it, once per photo under the module's own cache name; rolled out, it stays named after its layer."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from synthetic import GEOMS, random_attention, stand_in_analysis

from vizvit.readings import artifacts as rart


def with_long_token(depth: int, patch: int):
    """A stand-in analysis whose patch `patch` has a token 50x longer than the others from hidden
    state `depth` on (hidden[d] is block d's output, block d + 1's input), plus small noise."""
    g = GEOMS["g7"]
    gen = torch.Generator().manual_seed(0)
    hidden = 1 + 0.01 * torch.randn(g.num_layers + 1, g.seq_len, 4, generator=gen)
    hidden[depth:, g.num_prefix_tokens + patch] *= 50
    a = dataclasses.replace(stand_in_analysis(g, random_attention(g)), hidden_states=hidden)
    return g, a


def test_a_long_token_is_named_from_the_layer_it_enters():
    g, a = with_long_token(depth=1, patch=8)  # long from the output of block 1: layers 2.. read it
    masks = rart.artifact_masks(a)  # (L, gh, gw)
    want = np.zeros((g.num_layers, *g.grid), bool)
    want[1:, 8 // g.grid[1], 8 % g.grid[1]] = True
    np.testing.assert_array_equal(masks, want)


def test_rolled_out_a_layers_artifacts_stay_in_every_later_layer():
    g, a = with_long_token(depth=1, patch=8)
    per_layer = np.zeros((g.num_layers, *g.grid), bool)
    per_layer[0, 0, 0] = True  # constructed: an artifact of layer 1 only
    a2 = dataclasses.replace(a, hidden_states=torch.ones_like(a.hidden_states))  # no long token of its own
    store = {rart.ARTIFACTS: per_layer}
    through = rart.artifacts_through(a2, lambda name, compute: store[name])
    assert through[:, 0, 0].all() and through.sum() == g.num_layers  # layer 1's, then every layer after it


def test_cached_once_under_its_name_and_none_after_a_token_drop():
    g, a = with_long_token(depth=2, patch=3)
    calls = []

    def cache(name, compute):
        calls.append(name)
        return compute()

    rart.artifact_masks(a, cache)
    assert calls == [rart.ARTIFACTS]
    dropped = dataclasses.replace(a, kept_tokens=torch.arange(g.seq_len - 2))
    assert not rart.artifact_masks(dropped, cache).any() and calls == [rart.ARTIFACTS]
