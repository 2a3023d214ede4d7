"""Gradient rollout (vizvit/methods/grad_rollout.py) against jacobgil/vit-explain's own code
(tests/vit_explain.py), with the documented differences (its issues #6 and #16)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from synthetic import random_attention
from vit_explain import vit_explain_grad_rollout

import vizvit
from vizvit.methods import grad_rollout
from vizvit.readings import methods


def _attentions_and_grads(vm, a, index):
    """The attentions (L, H, N, N) and d logit / d attention, taken as the authors' hooks see them:
    a plain backward with the gradients kept on the attention maps (retain_grad)."""
    with torch.inference_mode(False), torch.enable_grad():
        pixels = a.pixel_values.detach().clone().requires_grad_(True)
        out = vm.model(pixels, output_attentions=True)
        for t in out.attentions:
            t.retain_grad()
        out.logits[0, index].backward()
    return [t.detach() for t in out.attentions], [t.grad for t in out.attentions]


# ------------------------------------------------------------------ vit-explain: gradient rollout
@pytest.mark.parametrize("discard", [0.0, 0.9])
def test_grad_rollout_equals_vit_explain_with_its_two_fixes_on_random_tensors(geom, discard):
    att = random_attention(geom, seed=3)
    grads = torch.randn(att.shape, generator=torch.Generator().manual_seed(4))
    mine = A_map(grad_rollout.grad_rollout(att, grads, discard), geom)
    want = vit_explain_grad_rollout([t[None] for t in att], [t[None] for t in grads], discard, keepdim=True)
    np.testing.assert_allclose(mine / mine.max(), want, rtol=1e-4, atol=1e-6)


def A_map(r: torch.Tensor, g) -> np.ndarray:
    return r[0, g.num_prefix_tokens:].reshape(g.grid).numpy()


def test_grad_rollout_on_a_tiny_vit_equals_vit_explain_and_differs_from_it_as_published(tiny32, cat):
    """vit-explain collects the gradients with backward hooks, which fire last layer first (its
    issue #6), and divides by row sums without keepdim: vizvit keeps layer order and row sums."""
    a = vizvit.analyze(tiny32, cat)
    index = a.top5[1].index
    att, grads = _attentions_and_grads(tiny32, a, index)
    mine = methods.class_map("gradient rollout", tiny32, a, index)
    fixed = vit_explain_grad_rollout(att, grads, grad_rollout.GRAD_ROLLOUT_DISCARD, keepdim=True)
    np.testing.assert_allclose(mine / mine.max(), fixed, rtol=1e-4, atol=1e-6)
    published = vit_explain_grad_rollout(att, grads[::-1], grad_rollout.GRAD_ROLLOUT_DISCARD)
    assert np.abs(published - fixed).max() > 1e-3
