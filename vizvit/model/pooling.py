"""What each family's head reads after the last block, written out: SigLIP's multihead attention
pooling head (``map_pool``, keeping the probe's attention), CLIP's projection of [CLS] (``pooled``), and
a classifier's final norm, pooling and heads (``read_logits``; DINOv2's classifiers read [CLS] ⊕ the
patch mean: ``cls_and_patch_mean``).

Functions of the model's modules and tensors only: the caller holds the run lock (vizvit.model.engine's
forward and backward, and its readout; a method's score inside engine.backward). The modules are
reached by name through ``get_submodule`` / ``get_parameter`` (typed as a Module / a Parameter), not by
attribute, which torch types as ``Tensor | Module``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import PretrainedConfig

from vizvit.errors import UserError
from vizvit.model.models import Family, backbone_of, part
from vizvit.model.zeroshot import ZeroShotHead


def _same(x: torch.Tensor) -> torch.Tensor:
    return x


@dataclass(frozen=True)
class Written:
    """Hooks on the parts of a forward the engine writes out itself, which have no module to hook: SigLIP's
    pooling head's keys and values (B, H, P, d), and the image embedding (B, E) before the zero-shot
    head's cosine. Identity by default; a method's rules replace them (vizvit.methods.attnlrp)."""

    keys: Callable[[torch.Tensor], torch.Tensor] = _same
    values: Callable[[torch.Tensor], torch.Tensor] = _same
    embedding: Callable[[torch.Tensor], torch.Tensor] = _same


PLAIN = Written()


def map_pool(head: torch.nn.Module, x: torch.Tensor, written: Written = PLAIN) -> tuple[torch.Tensor, torch.Tensor]:
    """SigLIP's multihead attention pooling head, written out as its own forward does it, keeping
    the per-head attention. x: (B, P, D) after the final layernorm -> pooled (B, D), attention
    (B, H, 1, P): the probe's (one query's) softmax weights over the tokens. The output is computed FROM that
    attention tensor, so a gradient with respect to it exists (relevance); nn.MultiheadAttention
    returns only a copy of its weights. written: hooks on its keys and values."""
    mha = part(head, "attention", torch.nn.MultiheadAttention)
    b, n, d = x.shape
    h = mha.num_heads
    wq, wk, wv = mha.in_proj_weight.chunk(3)
    bq, bk, bv = mha.in_proj_bias.chunk(3)
    probe = head.get_parameter("probe").expand(b, 1, d)
    q = torch.nn.functional.linear(probe, wq, bq).reshape(b, 1, h, d // h).transpose(1, 2)  # (B, H, 1, d)
    k = torch.nn.functional.linear(x, wk, bk).reshape(b, n, h, d // h).transpose(1, 2)  # (B, H, P, d)
    v = torch.nn.functional.linear(x, wv, bv).reshape(b, n, h, d // h).transpose(1, 2)
    k, v = written.keys(k), written.values(v)
    att = ((q @ k.transpose(-1, -2)) * (d // h) ** -0.5).softmax(-1)  # (B, H, 1, P)
    out = mha.out_proj((att @ v).transpose(1, 2).reshape(b, 1, d))  # (B, 1, D)
    out = out + head.get_submodule("mlp")(head.get_submodule("layernorm")(out))
    return out[:, 0], att  # (B, D), (B, H, 1, P): a view would not be in the graph


def pooled(fam: Family, model: torch.nn.Module, z: torch.Tensor,
           written: Written = PLAIN) -> tuple[torch.Tensor, torch.Tensor | None]:
    """z: (B, N, D) token states AFTER the image tower's final layernorm -> image embeddings (B, E)
    and the summary's attention over the tokens (B, H, 1, N), or None where the summary is a token
    of the sequence ([CLS]: its attention is in the blocks' attentions)."""
    if fam.pooling == "map":
        return map_pool(backbone_of(model).get_submodule("head"), z, written)
    return model.get_submodule("visual_projection")(z[:, 0]), None  # "projection" (CLIP): [CLS]


def cls_and_patch_mean(fam: Family, model: torch.nn.Module, normed: torch.Tensor) -> torch.Tensor:
    """(B, N, D) final-normed tokens -> (B, 2·D) what a DINOv2 classifier's head reads: [CLS] ⊕ the mean
    of the patch tokens, which begin after the family's prefix tokens ([CLS], then the registers: never
    in the mean, as in Dinov2WithRegistersForImageClassification's ``1 + num_register_tokens`` slice)."""
    config = getattr(model, "config", None)
    if not isinstance(config, PretrainedConfig):  # every transformers model has one
        raise UserError("This model has no config to read its token layout from.")
    start = len(fam.prefix(config))  # 1 + R
    return torch.cat([normed[:, 0], normed[:, start:].mean(dim=1)], dim=1)


def read_logits(fam: Family, model: torch.nn.Module, states: torch.Tensor,
                head: ZeroShotHead | None = None) -> torch.Tensor:
    """(B, N, D) block outputs -> (B, C) logits, exactly as the model's own head computes them from
    its last block, by the family's pooling: final norm, then [CLS]'s head (ViT), the mean of the
    [CLS] and [DIST] heads (DeiT distilled), the head on [CLS] ⊕ the patch mean (DINOv2's classifiers),
    the head on the normed patch mean (a "pooler": BEiT's mean pooling), or the image tower's end and
    the typed labels' text embeddings (`head`: CLIP, SigLIP)."""
    backbone = backbone_of(model)
    if fam.tower:
        if head is None:
            raise UserError("Zero-shot labels are needed to read this image-text model out: type some.")
        return head.logits(pooled(fam, model, fam.final_norm(backbone)(states))[0])
    heads = fam.heads(model)
    if not heads:
        raise UserError("This model has no classifier, so there is nothing to read out: the logit lens "
                        "needs a head that maps the summary token to classes.")
    normed = backbone.get_submodule("layernorm")(states)
    pooler = fam.pooler(backbone)
    if pooler is not None:
        return heads["head"](pooler(normed))
    if fam.pooling == "cls+mean":
        return heads["head"](cls_and_patch_mean(fam, model, normed))
    if len(heads) == 2:  # DeiT distilled
        cls, dist = heads.values()
        return (cls(normed[:, 0]) + dist(normed[:, 1])) / 2
    return heads["head"](normed[:, 0])
