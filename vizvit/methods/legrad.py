"""LeGrad (Bousselham et al. 2024): Σ_l meanₕ meanq [∂s_l/∂A_l]⁺ over the last layers, s_l the class's
score of layer l's own tokens read out by the model's head; one forward, then one backward per layer
(engine.backward). Two records: the model's own readout (the contest's), and torchcam's token mean.

Shapes: ∂s_l/∂A_l is (H, Q, N) per layer (Q queries: N for a block, 1 for SigLIP's pooling probe).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from functools import reduce

import numpy as np
import torch

from vizvit.errors import NO_LABELS, UserError
from vizvit.methods.base import TOP1, Method, of_class
from vizvit.model.engine import Analysis, Out, backward, target_logit
from vizvit.model.hooks import Hooked
from vizvit.model.models import VitModel, backbone_of
from vizvit.model.pooling import map_pool, read_logits

LEGRAD_METHOD = "LeGrad (Bousselham et al. 2024)"
LEGRAD_LAYERS = 2  # LeGrad's default layer_index=-2: the last two blocks
# A classifier's LeGrad reads each layer with the model's own head: [CLS] for a ViT (a DINOv2 classifier's:
# [CLS] ⊕ the patch mean, pooling.read_logits). torchcam 0.5's LeGrad reads the MEAN of all tokens instead
# (as LeGrad reads CLIP, whose pooled embedding is trained on it); on the trained ViT-Ti the two maps agree
# at r 0.74-0.85 but share 0-2 of their top-5 patches (docs/methods.md). The mean readout is offered as
# its own map.
LEGRAD_TOKEN_MEAN = "token mean"


def legrad(layer_grads: list[torch.Tensor], num_prefix_tokens: int) -> torch.Tensor:
    """LeGrad: Σ_l mean_h mean_q [∂s_l/∂A_l]⁺ over the patch keys. layer_grads: per used layer
    (H, Q, N) the gradient of that layer's own score s_l (its tokens read out by the model's head)
    with respect to its attention (Q queries: N for a block, 1 for SigLIP's pooling probe) -> (P,).
    Not min-max scaled (LeGrad's code scales the sum to 0..1)."""
    if not layer_grads:
        raise UserError("LeGrad needs at least one layer.")
    return reduce(operator.add, (g.float().clamp(min=0).mean(0).mean(0)[num_prefix_tokens:] for g in layer_grads))


def layer_score(vm: VitModel, z: torch.Tensor, class_index: int,
                readout: str = "summary") -> tuple[torch.Tensor, torch.Tensor | None]:
    """LeGrad's score of one layer's tokens z (1, N, D) for one class, and for SigLIP the pooling
    head's attention (1, H, 1, N) it was read through (None: the block's own attention is the target).

    A classifier: the model's own head on those tokens (its final norm and pooling, pooling.read_logits).
    readout=LEGRAD_TOKEN_MEAN (classifiers only) reads the MEAN of every token instead, through the same
    final norm and head: torchcam 0.5's LeGrad (heads(ln(z.mean(1)))), as LeGrad reads CLIP. Every
    token is set to the mean, so each family's pooling reads it unchanged. CLIP: LeGrad's
    compute_legrad_clip, the MEAN of every token through the final layernorm and the projection (not
    [CLS]). SigLIP: its compute_legrad_siglip, the pooling head applied to the block's output without the
    final layernorm. The score is the class's logit, scale·cos(+ bias): a positive multiple of LeGrad's
    plain cosine."""
    fam, model = vm.family, vm.model
    if not fam.tower:
        if readout == LEGRAD_TOKEN_MEAN:
            z = z.mean(1, keepdim=True).expand_as(z)  # (1, N, D): the mean where the head reads a token
        return read_logits(fam, model, z)[0, class_index], None
    if vm.zero_shot is None:
        raise UserError(NO_LABELS)
    backbone = backbone_of(model)
    if fam.pooling == "map":
        emb, att = map_pool(backbone.get_submodule("head"), z)
        return vm.zero_shot.logits(emb)[0, class_index], att
    emb = model.get_submodule("visual_projection")(backbone.get_submodule("post_layernorm")(z.mean(1)))
    return vm.zero_shot.logits(emb)[0, class_index], None


def layer_score_gradients(vm: VitModel, a: Analysis, class_index: int, layers: Sequence[int],
                          readout: str = "summary") -> list[torch.Tensor]:
    """LeGrad's gradients on `a`'s input, its heads switched off: one forward, then for each block l in
    `layers` the gradient of that layer's own score (layer_score of its output tokens, read by `readout`)
    with respect to its attention, (H, N, N) per layer (SigLIP: the pooling head's (H, 1, N), the head
    run on that layer's tokens). Each backward runs from s_l to A_l only, through block l (autograd prunes
    the rest), so all of them together cost about one full backward (benchmarks/methods_effects.py)."""
    def grads(out: Out, _run: Hooked) -> list[torch.Tensor]:
        target_logit(out.logits, class_index)  # checks the class
        attentions, states = out.layers()
        got = []
        for l in layers:
            score, pool_att = layer_score(vm, states[l + 1], class_index, readout)
            target = pool_att if pool_att is not None else attentions[l]
            (g,) = torch.autograd.grad(score, [target], retain_graph=True)
            got.append(g[0].float().cpu())
        return got
    return backward(vm, a.pixel_values, grads, ablation=a.ablation, output_attentions=True,
                    output_hidden_states=True)


def legrad_of(readout: str) -> Callable[[VitModel, Analysis, int], np.ndarray]:
    """LeGrad over the last LEGRAD_LAYERS blocks (its default layer_index = −2); readout: "summary" (the
    model's own head: [CLS] for a ViT) or LEGRAD_TOKEN_MEAN (torchcam's; an image-text tower's LeGrad
    already reads CLIP's mean and SigLIP's pooling head: the same map)."""
    def run(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
        g = vm.geometry
        layers = range(max(0, g.num_layers - LEGRAD_LAYERS), g.num_layers)
        grads = layer_score_gradients(vm, a, class_index, layers, readout)
        return legrad(grads, g.num_prefix_tokens).reshape(g.grid).numpy().astype(np.float32)
    return run


_CAPTION = LEGRAD_METHOD + f", last {LEGRAD_LAYERS} layers"
LEGRAD = Method(
    "LeGrad", of_class(legrad_of("summary")), _CAPTION, "Bousselham et al. 2024, WalBouss/LeGrad",
    "*LeGrad* (Bousselham et al. 2024): each of the last two layers read out by the model's own head ([CLS]; a "
    "DINOv2 classifier's: [CLS] ⊕ the patch mean), and the positive gradient of that score with respect to that "
    "layer's attention, averaged;",
    needs_class=True, menu=True, per_class=True, export_key="map_legrad",
    export_text=_CAPTION + TOP1 + "; each layer read by the model's own head; not min-max scaled")
# A variant the menu and the API offer, but that the contest does not rank and export does not write
# (one more backward each, for a readout choice).
LEGRAD_MEAN = Method(
    "LeGrad (token mean)", of_class(legrad_of(LEGRAD_TOKEN_MEAN)),
    _CAPTION + ", each read from the mean of its tokens through the final norm and head (torchcam 0.5's "
    "readout)", "frgfm/torch-cam 0.5",
    "*LeGrad (token mean)* reads the mean of all tokens instead, as torchcam's LeGrad and LeGrad on CLIP do.",
    needs_class=True, menu=True, per_class=True, contest=False)
