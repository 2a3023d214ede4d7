"""Class relevance's record (vizvit/methods/class_relevance.py) against Chefer et al.'s rule written out on
the gradients the model gives (tests/system/test_methods.py holds the rule to their code)."""

from __future__ import annotations

import numpy as np
import torch

import vizvit
from vizvit.methods.class_relevance import RELEVANCE


def test_the_relevance_map_is_chefers_rule_on_the_models_own_gradients(tiny16, cat):
    a = vizvit.analyze(tiny16, cat)
    c = a.top5[1].index
    with torch.inference_mode(False), torch.enable_grad():  # the gradients as a plain backward sees them
        out = tiny16.model(a.pixel_values.clone().requires_grad_(True), output_attentions=True)
        grads = torch.autograd.grad(out.logits[0, c], out.attentions)
    n = tiny16.geometry.seq_len
    r = torch.eye(n)
    for att, g in zip(out.attentions, grads):  # R ← R + mean_h[(∇A ⊙ A)⁺]·R
        r = r + (g[0] * att[0].detach()).clamp(min=0).mean(0) @ r
    want = r[0, tiny16.geometry.num_prefix_tokens:].reshape(tiny16.geometry.grid).numpy()
    np.testing.assert_allclose(RELEVANCE(tiny16, a, c), want, rtol=1e-4, atol=1e-6)
    assert RELEVANCE.needs_class and RELEVANCE.reads_summary
