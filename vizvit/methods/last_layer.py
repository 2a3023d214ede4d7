"""The last layer's raw attention: what the ViT paper's attention maps show (Dosovitskiy et al. 2021)."""

from __future__ import annotations

import numpy as np

from vizvit.cancel import Cancel
from vizvit.methods import maths as att_mod
from vizvit.methods.base import Method
from vizvit.methods.maps import Cache
from vizvit.model.engine import Analysis
from vizvit.model.models import VitModel


def last_layer_map(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    """Raw last-layer [CLS] attention (mean over heads) (gh, gw); SigLIP: the MAP head's own attention, the
    summary's last attention, under the same name."""
    g = a.geometry
    if a.summary_weights is None:
        return att_mod.cls_to_patches(att_mod.fuse_heads(a.attentions[-1]), g).numpy()
    return a.summary_weights[g.num_prefix_tokens:].reshape(g.grid).numpy()


LAST_LAYER = Method("last-layer [CLS] attention", last_layer_map, "last layer's [CLS] attention, mean over heads",
                    "the ViT paper's attention maps (Dosovitskiy et al. 2021)")
