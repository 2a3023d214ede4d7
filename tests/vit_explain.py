"""jacobgil/vit-explain's two methods, ported once as plain functions (each port names its file and
commit): the reference of vizvit's rollout (tests/system/test_methods.py) and of its gradient rollout
(tests/methods/test_grad_rollout.py). As published but for the `keepdim` switch (its issue #16's fix)."""

from __future__ import annotations

import numpy as np
import torch


def vit_explain_rollout(attentions: list[torch.Tensor], discard_ratio: float, head_fusion: str,
                        keepdim: bool = False) -> np.ndarray:
    """Port of `rollout` in jacobgil/vit-explain vit_rollout.py (commit
    1d68f2249970190ca109a4922f3c0e94f8d7db0d). attentions: per layer (1, H, N, N).

    keepdim=False is the code as published (`a / a.sum(dim=-1)` divides column j by row j's
    sum, its issue #16); keepdim=True is the one-word fix. Returns the map / its max."""
    result = torch.eye(attentions[0].size(-1))
    with torch.no_grad():
        for attention in attentions:
            if head_fusion == "mean":
                attention_heads_fused = attention.mean(axis=1)
            elif head_fusion == "max":
                attention_heads_fused = attention.max(axis=1)[0]
            else:
                attention_heads_fused = attention.min(axis=1)[0]
            flat = attention_heads_fused.view(attention_heads_fused.size(0), -1)
            _, indices = flat.topk(int(flat.size(-1) * discard_ratio), -1, False)
            indices = indices[indices != 0]
            flat[0, indices] = 0
            eye = torch.eye(attention_heads_fused.size(-1))
            a = (attention_heads_fused + 1.0 * eye) / 2
            a = a / a.sum(dim=-1, keepdim=True) if keepdim else a / a.sum(dim=-1)
            result = torch.matmul(a, result)
    mask = result[0, 0, 1:]
    width = int(mask.size(-1) ** 0.5)
    mask = mask.reshape(width, width).numpy()
    return mask / np.max(mask)


def vit_explain_grad_rollout(attentions, gradients, discard_ratio, keepdim=False):
    """Port of `grad_rollout` in jacobgil/vit-explain vit_grad_rollout.py (commit
    311da9a350607c518fe6b3e35de13f24f59a7ddf). attentions, gradients: per layer (1, H, N, N).
    keepdim=True is the one-word fix of its row normalisation (issue #16). Returns mask / max."""
    result = torch.eye(attentions[0].size(-1))
    with torch.no_grad():
        for attention, grad in zip(attentions, gradients):
            weights = grad
            attention_heads_fused = (attention * weights).mean(axis=1)
            attention_heads_fused[attention_heads_fused < 0] = 0
            flat = attention_heads_fused.view(attention_heads_fused.size(0), -1)
            _, indices = flat.topk(int(flat.size(-1) * discard_ratio), -1, False)
            flat[0, indices] = 0
            I = torch.eye(attention_heads_fused.size(-1))
            a = (attention_heads_fused + 1.0 * I) / 2
            a = a / a.sum(dim=-1, keepdim=True) if keepdim else a / a.sum(dim=-1)
            result = torch.matmul(a, result)
    mask = result[0, 0, 1:]
    width = int(mask.size(-1) ** 0.5)
    mask = mask.reshape(width, width).numpy()
    return mask / np.max(mask)
