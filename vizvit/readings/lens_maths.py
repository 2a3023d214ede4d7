"""Logit lens: read the summary token's state after every block through the FINAL head.

For depth l = 0..L, probs[l] = softmax(classifier(layernorm(h_l[summary]))), where h_l is
the hidden state after block l (h_0: after the embedding stage) and the summary is what the head
reads ([CLS]; DeiT: [CLS] and [DIST]; BEiT: the patch mean; a DINOv2 classifier: [CLS] ⊕ the
patch mean, registers left out: pooling.read_logits). It is a readout through the
model's last layernorm and classifier, which were trained to read h_L only; what it shows at
early depths is how far the summary token already points at a class in the final head's
coordinates, not what the layer "thinks" (nostalgebraist 2020; ViT-Prisma's logit lens).
No new forward: it reads the cached Analysis's hidden states, through engine.readout (the
model's own head, run under the engine's lock); this module is the maths on those logits.

CLIP / SigLIP: the readout is the image tower's own end (final layernorm, then [CLS] through the
projection, or SigLIP's attention-pooling head over every token) and the typed labels' text
embeddings, with the model's probability rule (softmax or sigmoid).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vizvit.errors import UserError
from vizvit.model.models import VitModel

LENS_METHOD = "logit lens: the model's final norm and head applied to the summary token after each block"


@dataclass(frozen=True)
class Lens:
    probs: np.ndarray  # (L+1, C) float32: softmax of the readout at each depth
    final_class: int  # the model's own top-1 (argmax of probs[L])
    final_prob: np.ndarray  # (L+1,) probability of final_class at each depth
    final_rank: np.ndarray  # (L+1,) its rank at each depth, 1 = top


def logit_lens(vm: VitModel, logits: torch.Tensor) -> Lens:
    """logits: (L+1, C) the readout of one analysis's hidden states at every depth through the
    model's own head (engine.readout: the family's final norm and head, or CLIP's / SigLIP's tower
    end and the typed labels). Returns the lens by the model's probability rule."""
    if not vm.has_classifier:
        raise UserError("This model has no classifier, so there is nothing to read out: the logit lens "
                        "needs a head that maps the summary token to classes.")
    logits = logits.float()  # (L+1, C)
    probs = vm.zero_shot.probs(logits) if vm.zero_shot is not None else logits.softmax(-1)
    final = int(probs[-1].argmax())
    # rank = 1 + number of classes strictly more probable than the final class at that depth
    rank = 1 + (probs > probs[:, final:final + 1]).sum(-1)
    return Lens(probs=probs.numpy().astype(np.float32), final_class=final,
                final_prob=probs[:, final].numpy().astype(np.float32), final_rank=rank.numpy())
