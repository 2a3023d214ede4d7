"""Grad-CAM (Selvaraju et al. 2017) on the last block's first layernorm, pytorch-grad-cam's ViT recipe:
that layer's output weighted by its mean gradient, from one backward pass (engine.backward with a hook
that keeps the layer's output)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vizvit.methods.base import TOP1, Method, of_class
from vizvit.model.engine import Analysis, Out, backward, target_logit
from vizvit.model.hooks import Hook, Hooked
from vizvit.model.models import VitModel

GRADCAM_METHOD = "Grad-CAM (last block, pytorch-grad-cam's ViT reshape)"


def gradcam(act: torch.Tensor, grad: torch.Tensor, num_prefix_tokens: int, grid: tuple[int, int]) -> torch.Tensor:
    """Grad-CAM over the patch tokens. act, grad: (N, D) a layer's output and the class logit's
    gradient there -> (gh, gw) relu(Σ_d w_d·act[:, d]), w_d = mean over patches of grad[:, d].

    pytorch-grad-cam's ViT recipe (its `reshape_transform`) drops token 0 and reshapes the rest to
    (D, gh, gw); here every prefix token (T of them: [CLS], [DIST], registers) is dropped. Not
    resized to the image and not min-max scaled (pytorch-grad-cam does both)."""
    t = num_prefix_tokens
    a, g = act[t:].float(), grad[t:].float()  # (P, D)
    w = g.mean(0)  # (D,) the pooled gradients
    return (a @ w).clamp(min=0).reshape(grid)


def activation_gradients(vm: VitModel, a: Analysis, class_index: int,
                         layer: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """One forward and one backward pass on `a`'s input, its heads switched off: the output (N, D) of
    block `layer`'s first layernorm (Grad-CAM's target layer) and the gradient of logit `class_index`
    with respect to it, on the CPU. A forward hook keeps that output (a graph tensor)."""
    kept: dict[str, torch.Tensor] = {}

    def keep(_m: torch.nn.Module, _inp: Any, out: torch.Tensor) -> None:
        kept["act"] = out

    def grads(out: Out, _run: Hooked) -> tuple[torch.Tensor, torch.Tensor]:
        (grad,) = torch.autograd.grad(target_logit(out.logits, class_index), [kept["act"]])
        return kept["act"][0].detach().float().cpu(), grad[0].float().cpu()

    return backward(vm, a.pixel_values, grads, [Hook(lambda b: vm.family.attention_norm(b, layer), keep)],
                    a.ablation)


def gradcam_map(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """(gh, gw) float32 Grad-CAM of class `class_index` on the last block's first layernorm."""
    act, grad = activation_gradients(vm, a, class_index)
    g = vm.geometry
    return gradcam(act, grad, g.num_prefix_tokens, g.grid).numpy().astype(np.float32)


GRADCAM = Method(
    "Grad-CAM", of_class(gradcam_map), GRADCAM_METHOD, "Selvaraju et al. 2017, jacobgil/pytorch-grad-cam",
    "*Grad-CAM*: the last block's first layernorm, weighted by its mean gradient (pytorch-grad-cam's ViT recipe).",
    needs_class=True, menu=True, per_class=True, export_key="map_gradcam",
    export_text=GRADCAM_METHOD + TOP1 + "; not min-max scaled or resized")
