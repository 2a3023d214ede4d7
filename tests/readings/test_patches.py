"""The patch-label cosines (vizvit/readings/patches.py) against a plain reference: the model's own projection of
each patch token, dotted with each label's text embedding; cached per photo and label list."""

from __future__ import annotations

import pytest
import torch

from vizvit.errors import UserError
from vizvit.readings import patches
from vizvit.session import PhotoKey, Workbench
from vizvit.views import patches as patches_view

LABELS = ("a cat", "a dog", "a teapot", "a bird")


def test_patch_label_cosine_plain_reference(towers, cat):
    vm = towers["clip16"]
    wb = Workbench()
    wb.add_model(vm)
    ph = wb.handle(PhotoKey(vm.id, wb.add_photo(cat), labels=LABELS, template="a photo of {}"))
    cos = patches.label_cosines(ph)  # (C, gh, gw)
    assert cos.shape == (len(LABELS), *vm.geometry.grid) and wb.peek_derived(ph.key, patches.PATCH_LABEL_COSINE) is cos
    a = ph.analysis()
    with torch.no_grad():
        z = vm.model.visual_projection(vm.vit.post_layernorm(a.hidden_states[-1]))[1:]  # (P, E)
    t = ph.vm.zero_shot.text_embeds
    for c in range(len(LABELS)):
        for p in (0, 5, 48):
            want = float(torch.dot(z[p], t[c]) / z[p].norm())
            assert abs(cos[c].flat[p] - want) < 1e-5
    img, text = patches_view.label_map(ph, "a dog")
    assert img.ndim == 3 and "a dog" in text and "not" in text


def test_a_classifier_has_no_label_cosines(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    with pytest.raises(UserError):
        patches.label_cosines(wb.handle(PhotoKey(tiny16.id, wb.add_photo(cat))))
