"""The [MASK] token mode: a masked patch's embedding replaced by the mask token before [CLS] and the
position embeddings, checked against the embedding stage written out by hand (a ViT classifier, whose
checkpoint has no mask token: zeros) and against transformers' own bool_masked_pos path (DINOv2 and
BEiT, whose embeddings hold a mask token)."""

from __future__ import annotations

import pytest
import torch

from vizvit import engine
from vizvit.errors import UserError
from vizvit.images import View

MASK = (0, 5, 17, 30)


def test_vit_classifier_mask_is_zeros_substituted_by_hand(tiny16, cat):
    vm = tiny16
    a = engine.analyze(vm, cat, View(mask=MASK, mask_mode="mask"))
    vit = vm.model.vit
    with torch.inference_mode():
        x = vit.embeddings.patch_embeddings(a.pixel_values)  # (1, P, D): the conv, by the model's own module
        x[:, list(MASK)] = 0.0  # the untrained [MASK]: transformers' initial value, zeros
        x = torch.cat([vit.embeddings.cls_token, x], 1) + vit.embeddings.position_embeddings
        h = x
        for block in vit.layers:
            h = block(h)
            h = h[0] if isinstance(h, tuple) else h
        logits = vm.model.classifier(vit.layernorm(h)[:, 0])[0]
    assert torch.allclose(a.hidden_states[0], x[0], atol=1e-6), "the embedding stage with [MASK] differs"
    assert torch.allclose(a.logits, logits, atol=1e-5), (a.logits, logits)
    plain = engine.analyze(vm, cat)
    assert not torch.allclose(plain.logits, a.logits, atol=1e-4), "masking changed nothing"
    assert torch.equal(plain.patch_embeddings, a.patch_embeddings), "patch_embeddings must stay the conv's output"
    t = engine.mask_token(vm)
    assert not t.trained and "never trained" in t.source and torch.count_nonzero(t.vector) == 0


@pytest.mark.parametrize("name", ["dinov2", "beit"])
def test_a_family_with_a_mask_token_equals_transformers_bool_masked_pos(families, cat, name):
    vm = families[name]
    g = vm.geometry
    mask = tuple(i for i in MASK if i < g.num_patches)
    a = engine.analyze(vm, cat, View(mask=mask, mask_mode="mask"))
    backbone = vm.vit
    t = engine.mask_token(vm)
    pos = torch.zeros(1, g.num_patches, dtype=torch.bool)
    pos[0, list(mask)] = True
    given = backbone.embeddings.mask_token is None  # BEiT's classifier class builds none: zeros, as BeitModel(use_mask_token=True) starts
    if given:
        backbone.embeddings.mask_token = torch.nn.Parameter(torch.zeros(1, 1, g.hidden_size), requires_grad=False)
    try:
        with torch.inference_mode():
            ref = backbone(a.pixel_values, bool_masked_pos=pos, output_hidden_states=True)
    finally:
        if given:
            backbone.embeddings.mask_token = None
    for l, h in enumerate(ref.hidden_states):
        assert torch.allclose(a.hidden_states[l], h[0], atol=1e-5), f"{name}: depth {l} differs from bool_masked_pos"
    assert given == (not t.trained), f"{name}: {t.source}"


def test_a_family_without_a_mask_token_is_refused(towers, cat):
    vm = towers["clip16"]
    with pytest.raises(UserError, match="no \\[MASK\\] token"):
        engine.mask_token(vm)
