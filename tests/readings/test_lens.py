"""vizvit.readings.lens: the photo's logit lens, read through a Workbench, is the final layernorm and
classifier applied by hand to [CLS]'s hidden state at every depth, and is computed once, under its name."""

from __future__ import annotations

import numpy as np
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
