"""Class-specific relevance (Chefer et al. 2021): the one place besides `analyze` that
runs the model, because it needs a backward pass. Only run when a user asks for it.

The model is shared read-only and its parameters have requires_grad=False, so the
graph is rooted at a private copy of the pixel values that requires grad; the
attention probabilities the model returns are then graph tensors whose gradients we
take directly. Nothing on the model is changed.
"""

from __future__ import annotations

import torch

from .attention import chefer_relevance
from .errors import UserError
from .forward import HOOKED_FORWARD_LOCK, Analysis
from .gpu import on_gpu
from .models import VitModel


@on_gpu
def relevance_matrix(vm: VitModel, a: Analysis, class_index: int) -> torch.Tensor:
    """(N, N) float32 relevance R for class `class_index` of the photo behind `a`.

    One forward and one backward pass on `a.pixel_values` (the same input `a` saw).
    The map is R[0, num_prefix_tokens:] (see attention.cls_to_patches).
    """
    if not vm.has_classifier or a.logits is None:
        raise UserError("This model has no classifier, so there is no class to explain.")
    if not 0 <= class_index < a.logits.numel():
        raise UserError(f"Class index {class_index} is outside 0..{a.logits.numel() - 1}.")
    if a.dropped:
        raise UserError("Relevance needs the full token sequence: turn token drop off.")
    pixels = a.pixel_values.detach().clone().to(vm.device).requires_grad_(True)
    # Another request's forward hooks (token drop) must not run inside this forward.
    with HOOKED_FORWARD_LOCK, torch.inference_mode(False), torch.enable_grad():
        out = vm.model(pixels, output_attentions=True)
        # Gradients w.r.t. the (1, H, N, N) tensors the model used, in layer order.
        grads = torch.autograd.grad(out.logits[0, class_index], out.attentions)
    return chefer_relevance([t[0].detach().cpu() for t in out.attentions], [t[0].cpu() for t in grads])
