"""The gradients of a class with respect to every attention map, which class relevance (Chefer et al.
2021b, generic attention: vizvit.methods.class_relevance) and gradient rollout read: checks, then one
forward and backward pass (engine.backward), then the maths in ``attention.chefer_relevance``.
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

from vizvit.errors import NO_CLASS, UserError
from vizvit.methods.maths import chefer_relevance
from vizvit.model.ablation import Ablation
from vizvit.model.engine import Analysis, Out, backward, target_logit
from vizvit.model.models import VitModel


def check_class(vm: VitModel, a: Analysis, class_index: int) -> None:
    """A clear message unless `class_index` is a class of `vm` that `a` can be explained for."""
    if not vm.has_classifier or a.logits is None:
        raise UserError(NO_CLASS)
    if not 0 <= class_index < a.logits.numel():
        raise UserError(f"Class index {class_index} is outside 0..{a.logits.numel() - 1}.")
    if a.dropped:
        raise UserError("Relevance needs the full token sequence: turn token drop off.")


def attention_gradients(vm: VitModel, pixel_values: torch.Tensor, class_index: int,
                        ablation: Ablation = Ablation()) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """One forward and one backward pass (engine.backward): the attentions (H, N, N) per layer and the
    gradients of logit `class_index` with respect to them, in layer order, on the CPU. SigLIP: the MAP
    head's attention (1, H, P) comes last, as a (H, 1, P) "layer" whose one query is the probe
    (relevance_row reads it so)."""
    def grads(out: Out, _run: object) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        atts = list(out.attentions or ()) + ([out.summary_attention] if out.summary_attention is not None else [])
        got = torch.autograd.grad(target_logit(out.logits, class_index), atts)  # (1, H, N, N) each
        return [t[0].detach().cpu() for t in atts], [t[0].cpu() for t in got]
    return backward(vm, pixel_values, grads, ablation=ablation, output_attentions=True)


def checked_gradients(vm: VitModel, a: Analysis, class_index: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """attention_gradients of `a`'s input after check_class: (H, N, N) per layer, twice."""
    check_class(vm, a, class_index)
    return attention_gradients(vm, a.pixel_values, class_index, a.ablation)


def map_step(att: list[torch.Tensor], grads: list[torch.Tensor], num_layers: int) -> torch.Tensor | None:
    """SigLIP's MAP-head step mean_h[(∇A_map ⊙ A_map)⁺] (N,) from the (L+1)-long lists of
    attention_gradients; None where the summary is a token ([CLS])."""
    if len(att) == num_layers:
        return None
    return (grads[num_layers].float() * att[num_layers].float()).clamp(min=0).mean(0)[0]


def relevance_parts(vm: VitModel, a: Analysis, class_index: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One forward and one backward pass on `a.pixel_values` (the same input `a` saw), with the
    same heads switched off as in `a`: the blocks' (N, N) relevance R and, for SigLIP, the MAP
    head's step cam_map (N,) = mean_h[(∇A_map ⊙ A_map)⁺] (None for a [CLS] summary). The map is
    attention.cls_to_patches(R, g, cam_map): R's row 0, or cam_map·R."""
    att, grads = checked_gradients(vm, a, class_index)
    n = vm.geometry.num_layers  # SigLIP's MAP attention (H, 1, N) comes after the L blocks'
    return chefer_relevance(att[:n], grads[:n]), map_step(att, grads, n)


def relevance_matrix(vm: VitModel, a: Analysis, class_index: int) -> torch.Tensor:
    """(N, N) float32 relevance R for class `class_index` of the photo behind `a` (see relevance_parts).
    The map is R[0, num_prefix_tokens:] (see attention.cls_to_patches); SigLIP: cam_map·R."""
    return relevance_parts(vm, a, class_index)[0]
