"""The Patches tab's readings: for an image-text model (CLIP / SigLIP), the cosine of each patch token with each
label's text embedding (engine.patch_label_cosine), cached per photo and label list. Nothing here draws:
vizvit.views.patches lays the map over the photo."""

from __future__ import annotations

import numpy as np

from vizvit.errors import UserError
from vizvit.model.engine import patch_label_cosine
from vizvit.session import Photo

# The names this module's results are cached under (Photo.derived).
PATCH_LABEL_COSINE = "patch-label cosine"  # CLIP / SigLIP: (C, gh, gw) per label list


def label_cosines(ph: Photo) -> np.ndarray:
    """(C, gh, gw) float32 cosine of each patch token with each label's text embedding, cached
    per photo and label list (engine.patch_label_cosine)."""
    vm = ph.vm
    head = vm.zero_shot
    if head is None:
        raise UserError("Patch-label similarity needs an image-text model (CLIP or SigLIP) and labels.")
    g = vm.geometry

    def compute() -> np.ndarray:
        a = ph.analysis()
        if a.dropped:
            raise UserError("Patch-label similarity needs the full token sequence: turn token drop off.")
        cos = patch_label_cosine(vm, a.hidden_states[-1], head)  # (C, P)
        return cos.reshape(-1, *g.grid).numpy().astype(np.float32)

    return ph.derived(PATCH_LABEL_COSINE, compute)
