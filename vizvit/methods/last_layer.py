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
    """Raw last-layer attention of the summary (mean over heads) (gh, gw): [CLS]'s row; a mean-pooling head
    (BEiT) the patch rows' mean (cls_to_patches reads the family's summary); SigLIP: the MAP head's own
    attention, the summary's last attention, under the same name."""
    g = a.geometry
    if a.summary_weights is None:
        return att_mod.cls_to_patches(att_mod.fuse_heads(a.attentions[-1]), g).numpy()
    return a.summary_weights[g.num_prefix_tokens:].reshape(g.grid).numpy()


# Named as the ViT paper's maps are known; read from the family's summary ([CLS]; BEiT's patch mean; SigLIP's
# MAP head), as every other map here, and the label says so.
LAST_LAYER = Method("last-layer [CLS] attention", last_layer_map,
                    "last layer's attention from the summary ([CLS]; BEiT: the patch mean; SigLIP: the MAP head), "
                    "mean over heads",
                    "the ViT paper's attention maps (Dosovitskiy et al. 2021)")
