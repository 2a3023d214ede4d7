"""Class-specific relevance (Chefer et al. 2021b, generic attention) of one analysis: checks, then the
engine's forward and backward pass, then the maths in ``attention.chefer_relevance``.
Only run when a user asks for it.

For CLIP and SigLIP the "class" is a typed label and the explained number is that label's logit,
exp(logit_scale)·cos(image, text) (+ SigLIP's bias): the gradient of its similarity. SigLIP has
no [CLS]: its summary is the MAP head's probe, a query outside the sequence that attends once,
after the last block. Its relevance row is cam_map·R, with R the blocks' relevance and
cam_map = mean_h[(∇A_map ⊙ A_map)⁺] (P,) the same rule applied to the MAP head's attention
(the probe's own row starts at zero on the patches, as [CLS]'s does).
"""

from __future__ import annotations

import torch

from .attention import chefer_relevance
from .engine import Analysis, attention_gradients
from .errors import UserError
from .models import VitModel


def _checked_gradients(vm: VitModel, a: Analysis, class_index: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    if not vm.has_classifier or a.logits is None:
        raise UserError("This model has no classifier, so there is no class to explain.")
    if not 0 <= class_index < a.logits.numel():
        raise UserError(f"Class index {class_index} is outside 0..{a.logits.numel() - 1}.")
    if a.dropped:
        raise UserError("Relevance needs the full token sequence: turn token drop off.")
    return attention_gradients(vm, a.pixel_values, class_index, a.ablation)


def relevance_parts(vm: VitModel, a: Analysis, class_index: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One forward and one backward pass on `a.pixel_values` (the same input `a` saw), with the
    same heads switched off as in `a`: the blocks' (N, N) relevance R and, for SigLIP, the MAP
    head's step cam_map (N,) = mean_h[(∇A_map ⊙ A_map)⁺] (None for a [CLS] summary). The map is
    attention.cls_to_patches(R, g, cam_map): R's row 0, or cam_map·R."""
    att, grads = _checked_gradients(vm, a, class_index)
    n = vm.geometry.num_layers  # SigLIP's MAP attention (H, 1, N) comes after the L blocks'
    r = chefer_relevance(att[:n], grads[:n])
    if not vm.geometry.pools_with_map_head:
        return r, None
    return r, (grads[n].float() * att[n].float()).clamp(min=0).mean(0)[0]


def relevance_matrix(vm: VitModel, a: Analysis, class_index: int) -> torch.Tensor:
    """(N, N) float32 relevance R for class `class_index` of the photo behind `a` (see relevance_parts).
    The map is R[0, num_prefix_tokens:] (see attention.cls_to_patches); SigLIP: cam_map·R."""
    return relevance_parts(vm, a, class_index)[0]
