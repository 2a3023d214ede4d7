"""Constructed inputs with known answers: geometries, attention tensors and a stand-in Analysis, for
tests of the maths and the views that need no model."""

from __future__ import annotations

import numpy as np
import torch

from vizvit.model.models import Geometry

GEOMS = {"g14": Geometry((224, 224), 16, (14, 14), 1, 3, 4, 32),
         "g7": Geometry((224, 224), 32, (7, 7), 1, 3, 4, 32)}


def random_attention(g: Geometry, seed: int = 0, sharp: float = 3.0) -> torch.Tensor:
    """(L, H, N, N) softmax rows with sharp peaks, so fusions and discards differ."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(g.num_layers, g.num_heads, g.seq_len, g.seq_len, generator=gen) * sharp
    return logits.softmax(-1)


def pointing_attention(g: Geometry, target: int, weight: float = 0.9) -> torch.Tensor:
    """Every query puts `weight` on key `target` and spreads the rest uniformly."""
    n = g.seq_len
    att = torch.full((g.num_layers, g.num_heads, n, n), (1 - weight) / n)
    att[..., target] += weight
    return att


def stand_in_analysis(g: Geometry, att: torch.Tensor):
    """A stand-in Analysis: only geometry, input view and attentions are read by the views tested."""
    from vizvit.model.engine import Analysis
    from vizvit.model.images import View

    return Analysis(model_id="constructed", geometry=g, view=View(),
                    input_view=np.full((*g.image_size, 3), 128, np.uint8), pixel_values=torch.zeros(1),
                    logits=None, probs=None, top5=(), attentions=att,
                    hidden_states=torch.ones(g.num_layers + 1, g.seq_len, 4),  # equal norms: no outliers
                    patch_embeddings=torch.zeros(1), kept_tokens=torch.arange(g.seq_len), seconds=0.0)


class StandInModel:
    """What the attention views read of a VitModel: its geometry and name."""

    def __init__(self, g: Geometry, display_name: str = "constructed"):
        self.geometry = g
        self.display_name = display_name
