"""AttnLRP's rules (Achtibat et al., ICML 2024) as gradient × input, the way lxt's efficient mode runs them.

Pure maths over tensors: each rule keeps the forward value and replaces the backward, so that one
ordinary backward pass, times the input, gives the relevance the rule prescribes. The engine puts
them on a model through forward hooks (engine.attnlrp_relevance); nothing here touches a model.

Rules, as lxt 2.1 defines them (rachtibat/LRP-eXplains-Transformers, lxt/efficient/rules.py and
lxt/efficient/patches.py; lxt/explicit/functional.py states the same rules as explicit relevance):
- a linear layer: epsilon-LRP, which in gradient × input is the plain gradient (the bias keeps its share);
- LayerNorm: the identity rule on 1/std: the standard deviation is treated as a constant (detached);
- an element-wise non-linearity (GELU): the identity rule: its gradient replaced by act(x)/x, so the
  relevance passes through unchanged;
- the attention matmuls (bilinear): the uniform rule, half the relevance to each operand: the
  gradient of the value divided by 2, of the query and the key by 4 (a half for q·kᵀ, a half for A·V);
- softmax: R_in = x ⊙ (R_out − s ⊙ Σ R_out) (the paper's Proposition 3.1), which is exactly the plain
  gradient of softmax times its input: it needs no change;
- an L2 normalisation (CLIP's and SigLIP's cosine): the identity rule, the norm treated as a constant.
"""

from __future__ import annotations

import torch

ATTNLRP_METHOD = ("AttnLRP (Achtibat et al. 2024; lxt 2.1's rules: epsilon on linear layers, identity on "
                  "LayerNorm's 1/std and GELU, uniform on the attention matmuls), gradient × input at the "
                  "patch embeddings before block 1, summed over channels; the position embedding's share left "
                  "out (a bias term)")
QK_DIVISOR = 4.0  # lxt's wrap_attention_forward: divide_gradient(query, 4), divide_gradient(key, 4)
V_DIVISOR = 2.0  # and divide_gradient(value, 2)
IDENTITY_EPS = 1e-10  # lxt's identity_rule_implicit_fn: output / (input + epsilon)


def divide_gradient(x: torch.Tensor, factor: float) -> torch.Tensor:
    """x unchanged; its gradient divided by `factor` (lxt's divide_gradient: the uniform rule)."""
    return x.detach() + (x - x.detach()) / factor


def identity_rule(x: torch.Tensor, out: torch.Tensor, eps: float = IDENTITY_EPS) -> torch.Tensor:
    """`out` = act(x) unchanged; its gradient with respect to x replaced by act(x) / (x + eps), so
    gradient × input hands act(x)'s relevance to x unchanged (lxt's identity_rule_implicit)."""
    return out.detach() + (x - x.detach()) * (out / (x + eps)).detach()


def layer_norm(x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None, eps: float) -> torch.Tensor:
    """nn.LayerNorm over the last axis with its standard deviation detached (lxt's layer_norm_forward):
    (x − mean) / std, times the weight, plus the bias. The same value; the identity rule on 1/std."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    y = (x - mean) / (var + eps).sqrt().detach()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def l2_normalize(x: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """x / ‖x‖ over the last axis with the norm detached (the identity rule, lxt's normalize)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(eps).detach()


def token_relevance(h: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """(N, D) input tokens and the rules' gradient there -> (N,) relevance, gradient × input summed over channels."""
    return (h.double() * grad.double()).sum(-1)
