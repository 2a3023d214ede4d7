"""vizvit.readings.lens: the photo's logit lens, read through a Workbench, is the final layernorm and
classifier applied by hand to what the head reads ([CLS]'s hidden state; a DINOv2 classifier's [CLS] ⊕ patch
mean) at every depth, and is computed once, under its name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vizvit.readings import lens as rlens
from vizvit.session import PhotoKey, Workbench


def test_the_lens_of_a_photo_is_the_manual_readout_cached_once(tiny, cat):
    wb = Workbench()
    wb.add_model(tiny)
    ph = wb.handle(PhotoKey(tiny.id, wb.add_photo(cat)))
    assert ph.peek(rlens.LOGIT_LENS) is None
    got = rlens.lens_of(ph)
    assert ph.peek(rlens.LOGIT_LENS) is got and rlens.lens_of(ph) is got  # cached under its own name
    a = ph.analysis()
    ln = tiny.vit.layernorm
    W, b = tiny.model.classifier.weight.detach().double(), tiny.model.classifier.bias.detach().double()
    for depth in range(tiny.geometry.num_layers + 1):
        x = a.hidden_states[depth, 0].double()
        x = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + ln.eps) * ln.weight.double() + ln.bias.double()
        np.testing.assert_allclose(got.probs[depth], torch.softmax(W @ x + b, -1).numpy(), atol=1e-5)
    np.testing.assert_array_equal(got.probs[-1], a.probs.numpy())  # the last depth: the model's own prediction


@pytest.mark.parametrize("name", ["dinov2_cls", "dinov2_reg_cls"])
def test_a_dinov2_classifiers_lens_reads_cls_and_the_patch_mean(dino_classifiers, cat, name):
    """A DINOv2 classifier's head reads [CLS] ⊕ the mean of the patch tokens (registers left out): the lens
    is that head by hand at every depth, and its last depth is the model's own prediction."""
    vm = dino_classifiers[name]
    wb = Workbench()
    wb.add_model(vm)
    ph = wb.handle(PhotoKey(vm.id, wb.add_photo(cat)))
    got = rlens.lens_of(ph)
    a = ph.analysis()
    g, ln = vm.geometry, vm.vit.layernorm
    W, b = vm.model.classifier.weight.detach().double(), vm.model.classifier.bias.detach().double()
    for depth in range(g.num_layers + 1):
        x = a.hidden_states[depth].double()  # (N, D)
        x = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + ln.eps)
        x = x * ln.weight.double() + ln.bias.double()
        read = torch.cat([x[0], x[-g.num_patches:].mean(0)])  # [CLS] ⊕ the patch mean
        np.testing.assert_allclose(got.probs[depth], torch.softmax(W @ read + b, -1).numpy(), atol=1e-5)
    np.testing.assert_allclose(got.probs[-1], a.probs.numpy(), rtol=0, atol=1e-6)  # the model's own prediction
    assert got.final_class == int(a.probs.argmax())
