"""Gradient rollout (jacobgil/vit-explain): rollout of meanₕ(A ⊙ ∇A)⁺ with the lowest 90 % dropped, from
one backward pass (vizvit.methods.relevance.checked_gradients); two of vit-explain's bugs fixed (docs/methods.md).

Shapes: A, ∇A are (L, H, N, N), rows = queries; N = T prefix tokens + P patches.
"""

from __future__ import annotations

import numpy as np
import torch

from vizvit.errors import UserError
from vizvit.methods import maths as att_mod
from vizvit.methods.base import TOP1, Method, of_class
from vizvit.methods.relevance import checked_gradients, map_step
from vizvit.model.engine import Analysis
from vizvit.model.models import VitModel

GRAD_ROLLOUT_METHOD = "gradient rollout (vit-explain)"
GRAD_ROLLOUT_DISCARD = 0.9  # vit-explain's default discard_ratio for vit_grad_rollout


def grad_rollout(att: torch.Tensor, grads: torch.Tensor, discard: float = GRAD_ROLLOUT_DISCARD) -> torch.Tensor:
    """vit-explain's gradient rollout. att, grads: (L, H, N, N), grads in layer order -> (N, N) R.

    Per layer: F = mean_h(A ⊙ ∇A), negatives set to 0; the lowest ⌊discard·N²⌋ entries of F zeroed
    (the whole matrix, [CLS]→[CLS] included, as vit-explain's code); Â = (F + I)/2, rows
    renormalised; R ← Â·R from R = I. vit-explain divides by ``a.sum(dim=-1)`` without keepdim
    (column j by row j's sum, its issue #16) and zips its gradients in reverse layer order (its
    issue #6); here the rows are renormalised and the layers kept in order (docs/methods.md)."""
    if att.shape != grads.shape:
        raise UserError("Attentions and gradients must have the same shape.")
    n = att.shape[-1]
    eye = torch.eye(n)
    r = eye.clone()
    for a, g in zip(att.float(), grads.float()):
        fused = (a * g).mean(0).clamp(min=0)
        k = int(n * n * discard)
        if k:
            flat = fused.reshape(-1)
            flat[flat.topk(k, largest=False).indices] = 0
        m = (fused + eye) / 2
        r = (m / m.sum(-1, keepdim=True)) @ r
    return r


def grad_rollout_map(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """(gh, gw) float32 gradient rollout from the summary's row; SigLIP: the MAP head's step (as for
    relevance) times R."""
    att, grads = checked_gradients(vm, a, class_index)
    n = vm.geometry.num_layers
    r = grad_rollout(torch.stack(att[:n]), torch.stack(grads[:n]))
    s = map_step(att, grads, n)
    return att_mod.cls_to_patches(r, vm.geometry, s).numpy().astype(np.float32)


_CAPTION = GRAD_ROLLOUT_METHOD + f", discard {GRAD_ROLLOUT_DISCARD}"
GRAD_ROLLOUT = Method(
    "gradient rollout", of_class(grad_rollout_map), _CAPTION, "jacobgil/vit-explain",
    "*Gradient rollout* (vit-explain): rollout of meanₕ(A ⊙ ∇A)⁺ with the lowest 90 % dropped.",
    needs_class=True, menu=True, per_class=True, export_key="map_gradient_rollout",
    export_text=_CAPTION + TOP1 + "; layers in order, rows renormalised (vit-explain's issues #6 and #16 fixed)")
