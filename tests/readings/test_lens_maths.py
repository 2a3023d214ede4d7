"""Logit lens against a plain reference: the final layernorm and classifier applied by hand to
[CLS]'s hidden state after each block; its last row is the model's own prediction."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vizvit
from vizvit.errors import UserError
from vizvit.model import engine
from vizvit.readings.lens_maths import logit_lens


def test_last_depth_equals_the_models_own_prediction(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    lens = logit_lens(tiny, engine.readout(tiny, a.hidden_states))
    assert lens.probs.shape == (tiny.geometry.num_layers + 1, len(tiny.labels))
    np.testing.assert_array_equal(lens.probs[-1], a.probs.numpy())  # exactly
    assert lens.final_class == a.top5[0].index and lens.final_rank[-1] == 1


def test_every_depth_against_a_manual_readout(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    lens = logit_lens(tiny, engine.readout(tiny, a.hidden_states))
    w_ln, b_ln = tiny.vit.layernorm.weight.detach(), tiny.vit.layernorm.bias.detach()
    eps = tiny.vit.layernorm.eps
    W, b = tiny.model.classifier.weight.detach(), tiny.model.classifier.bias.detach()
    for depth in range(tiny.geometry.num_layers + 1):
        x = a.hidden_states[depth, 0].double()
        x = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + eps) * w_ln.double() + b_ln.double()
        p = torch.softmax(W.double() @ x + b.double(), -1)
        np.testing.assert_allclose(lens.probs[depth], p.numpy(), atol=1e-5)
        c = lens.final_class
        assert lens.final_rank[depth] == 1 + int((p > p[c]).sum())
        assert lens.final_prob[depth] == pytest.approx(float(p[c]), abs=1e-5)


def test_a_model_without_a_classifier_says_why(tiny_dirs, cat):
    from transformers import ViTModel

    vm = vizvit.load_model(str(tiny_dirs["p16"]), device="cpu")
    headless = ViTModel.from_pretrained(str(tiny_dirs["p16"]), attn_implementation="eager", add_pooling_layer=False)
    vm = type(vm)(**{**vm.__dict__, "model": headless.eval(), "labels": ()})
    with pytest.raises(UserError, match="no classifier"):
        logit_lens(vm, torch.zeros(3, 7))


@pytest.mark.parametrize("name", ["deit", "beit"])
def test_the_lens_reads_through_each_familys_own_head(families, cat, name):
    """DeiT distilled: the mean of the [CLS] and [DIST] heads; BEiT: the head on the normed patch
    mean. Either way the last depth is the model's own prediction, bit for bit."""
    vm = families[name]
    a = vizvit.analyze(vm, cat)
    lens = logit_lens(vm, engine.readout(vm, a.hidden_states))
    np.testing.assert_array_equal(lens.probs[-1], a.probs.numpy())
    assert lens.probs.shape == (vm.geometry.num_layers + 1, len(vm.labels))


