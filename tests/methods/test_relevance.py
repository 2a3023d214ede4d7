"""Class relevance's checks and SigLIP's MAP-head step (vizvit/methods/relevance.py): a class outside the
model's or a dropped token refused in one sentence; the MAP step mean_h[(∇A ⊙ A)⁺] worked out by
hand on constructed numbers. The relevance itself is held to Chefer et al.'s code in
tests/system/test_methods.py and tests/test_explain.py."""

from __future__ import annotations

import pytest
import torch

import vizvit
from vizvit.errors import UserError
from vizvit.methods import relevance
from vizvit.model.images import View


def test_a_class_outside_the_model_or_a_dropped_token_is_refused(tiny16, cat):
    a = vizvit.analyze(tiny16, cat)
    n = a.logits.numel()
    relevance.check_class(tiny16, a, 0)
    relevance.check_class(tiny16, a, n - 1)
    for bad in (-1, n):
        with pytest.raises(UserError, match=f"Class index {bad} is outside 0..{n - 1}"):
            relevance.check_class(tiny16, a, bad)
    dropped = vizvit.analyze(tiny16, cat, View(mask=(1,), mask_mode="drop"))
    with pytest.raises(UserError, match="turn token drop off"):
        relevance.relevance_matrix(tiny16, dropped, 0)  # refused before any backward pass


def test_the_map_step_is_the_positive_gradient_times_attention_averaged_over_heads():
    layers = 2
    blocks = [torch.rand(2, 3, 3) for _ in range(layers)]
    assert relevance.map_step(blocks, blocks, layers) is None  # [CLS]: no MAP head after the blocks
    # the MAP head: 2 heads, 1 probe query, 3 keys
    att = torch.tensor([[[0.5, 0.25, 0.25]], [[0.2, 0.6, 0.2]]])
    grad = torch.tensor([[[2.0, -4.0, 1.0]], [[1.0, 1.0, -1.0]]])
    # head 0: (1.0, -1.0, 0.25) -> (1.0, 0, 0.25); head 1: (0.2, 0.6, -0.2) -> (0.2, 0.6, 0); mean:
    want = torch.tensor([0.6, 0.3, 0.125])
    got = relevance.map_step([*blocks, att], [*blocks, grad], layers)
    torch.testing.assert_close(got, want)
