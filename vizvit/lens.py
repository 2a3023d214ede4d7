"""Logit lens: read the summary token's state after every block through the FINAL head.

For depth l = 0..L, probs[l] = softmax(classifier(layernorm(h_l[summary]))), where h_l is
the hidden state after block l (h_0: after the embedding stage). It is a readout through the
model's last layernorm and classifier, which were trained to read h_L only; what it shows at
early depths is how far the summary token already points at a class in the final head's
coordinates, not what the layer "thinks" (nostalgebraist 2020; ViT-Prisma's logit lens).
No new forward: it reads the cached Analysis's hidden states.

CLIP / SigLIP: the readout is the image tower's own end (final layernorm, then [CLS] through the
projection, or SigLIP's attention-pooling head over every token) and the typed labels' text
embeddings, with the model's probability rule (softmax or sigmoid).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .errors import UserError
from .models import VitModel

LENS_METHOD = "logit lens: final layernorm + classifier applied to [CLS] after each block"


@dataclass(frozen=True)
class Lens:
    probs: np.ndarray  # (L+1, C) float32: softmax of the readout at each depth
    final_class: int  # the model's own top-1 (argmax of probs[L])
    final_prob: np.ndarray  # (L+1,) probability of final_class at each depth
    final_rank: np.ndarray  # (L+1,) its rank at each depth, 1 = top


def readout(vm: VitModel, states: torch.Tensor, summary_token: int = 0) -> torch.Tensor:
    """(L+1, N, D) hidden states -> (L+1, C) logits of the summary token through the final
    layernorm and head. Each depth goes through the same shapes as the model's own head (a
    (1, N, D) layernorm, then one token), so the last depth reproduces its logits bit for bit."""
    if not vm.has_classifier:
        raise UserError("This model has no classifier, so there is nothing to read out: the logit lens "
                        "needs a head that maps the [CLS] token to classes.")
    if vm.zero_shot is not None:  # CLIP / SigLIP: final layernorm, pooling, then the typed labels
        from .zeroshot import readout_embeds

        w = next(vm.vit.parameters())
        with torch.inference_mode():
            emb, _ = readout_embeds(vm, states.to(device=w.device, dtype=w.dtype))  # (L+1, E)
            return vm.zero_shot.logits(emb).float().cpu()
    head = vm.model.classifier
    norm = vm.vit.layernorm
    p = next(head.parameters())
    with torch.inference_mode():
        rows = [head(norm(h.unsqueeze(0).to(device=p.device, dtype=p.dtype))[:, summary_token]) for h in states]
        return torch.cat(rows).float().cpu()


def logit_lens(vm: VitModel, hidden_states: torch.Tensor, summary_token: int = 0) -> Lens:
    """hidden_states: (L+1, N, D) of one analysis. Returns the readout at every depth."""
    logits = readout(vm, hidden_states, summary_token)  # (L+1, C)
    probs = vm.zero_shot.probs(logits) if vm.zero_shot is not None else logits.softmax(-1)
    final = int(probs[-1].argmax())
    # rank = 1 + number of classes strictly more probable than the final class at that depth
    rank = 1 + (probs > probs[:, final:final + 1]).sum(-1)
    return Lens(probs=probs.numpy().astype(np.float32), final_class=final,
                final_prob=probs[:, final].numpy().astype(np.float32), final_rank=rank.numpy())
