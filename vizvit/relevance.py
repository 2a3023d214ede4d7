"""Class-specific relevance (Chefer et al. 2021b, generic attention) of one analysis: checks, then the
engine's forward and backward pass, then the maths in ``attention.chefer_relevance``.
Only run when a user asks for it."""

from __future__ import annotations

import torch

from .attention import chefer_relevance
from .engine import Analysis, attention_gradients
from .errors import UserError
from .models import VitModel


def relevance_matrix(vm: VitModel, a: Analysis, class_index: int) -> torch.Tensor:
    """(N, N) float32 relevance R for class `class_index` of the photo behind `a`.

    One forward and one backward pass on `a.pixel_values` (the same input `a` saw), with the
    same heads switched off as in `a`.
    The map is R[0, num_prefix_tokens:] (see attention.cls_to_patches).
    """
    if not vm.has_classifier or a.logits is None:
        raise UserError("This model has no classifier, so there is no class to explain.")
    if not 0 <= class_index < a.logits.numel():
        raise UserError(f"Class index {class_index} is outside 0..{a.logits.numel() - 1}.")
    if a.dropped:
        raise UserError("Relevance needs the full token sequence: turn token drop off.")
    return chefer_relevance(*attention_gradients(vm, a.pixel_values, class_index, a.ablation))
