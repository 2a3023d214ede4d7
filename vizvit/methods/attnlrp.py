"""AttnLRP (Achtibat et al., ICML 2024): its rules as gradient × input, the way lxt's efficient mode runs
them, the hooks that put them on a model, and its record.

Each rule keeps the forward value and replaces the backward, so that one ordinary backward pass,
times the input, gives the relevance the rule prescribes. ``attnlrp_hooks`` puts them on a model's
blocks as forward hooks, found by kind, and ``WRITTEN`` on the parts the engine writes out itself
(SigLIP's pooling head, the cosine's norm); ``attnlrp_relevance`` runs engine.backward with both.

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

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch

from vizvit.errors import UserError
from vizvit.methods.base import TOP1, Method, of_class
from vizvit.model.engine import Analysis, Out, backward, target_logit
from vizvit.model.hooks import Hook, Hooked
from vizvit.model.models import VitModel
from vizvit.model.pooling import Written

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


# ------------------------------------------------------------------ on a model
_QK_NAMES = ("query", "key", "q_proj", "k_proj")  # each family's attention projections (HF module names)
_V_NAMES = ("value", "v_proj")
# The rules on the parts the engine writes out: SigLIP's pooling head's matmuls (the uniform rule) and
# the cosine's norm (the identity rule: a constant).
WRITTEN = Written(keys=lambda k: divide_gradient(k, QK_DIVISOR), values=lambda v: divide_gradient(v, V_DIVISOR),
                  embedding=lambda e: l2_normalize(e.float()))


def _is_activation(m: torch.nn.Module) -> bool:
    """An element-wise non-linearity module (transformers' ACT2FN modules, torch's GELU and kin)."""
    return type(m).__module__ == "transformers.activations" or isinstance(
        m, (torch.nn.GELU, torch.nn.ReLU, torch.nn.SiLU, torch.nn.Tanh))


def _norm_rule(mod: torch.nn.LayerNorm, inp: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
    """A LayerNorm's forward hook: its output again, with the standard deviation detached."""
    return layer_norm(inp[0], mod.weight, mod.bias, mod.eps)


def _activation_rule(_mod: torch.nn.Module, inp: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
    """An activation's forward hook: the identity rule."""
    return identity_rule(inp[0], out)


def _divide_rule(factor: float, _mod: torch.nn.Module, _inp: tuple[Any, ...], out: torch.Tensor) -> torch.Tensor:
    """A query, key or value projection's forward hook: the uniform rule, its gradient ÷ `factor`."""
    return divide_gradient(out, factor)


def _itself(m: torch.nn.Module, _backbone: torch.nn.Module) -> torch.nn.Module:
    """Where a hook on a module found by name goes: that module, whatever the backbone."""
    return m


def attnlrp_hooks(vm: VitModel) -> list[Hook]:
    """Forward hooks that put AttnLRP's rules on every family's blocks, found by kind, not by family:
    every LayerNorm (std detached), every activation (identity rule), every attention's query and key
    (gradient ÷ 4) and value (÷ 2) projections. SigLIP's pooling head and the cosine: WRITTEN. A
    UserError if the attention is not found."""
    hooks: list[Hook] = []
    qkv = 0
    for name, m in vm.model.named_modules():
        last = name.rsplit(".", 1)[-1]
        fn: Callable[..., torch.Tensor]
        if isinstance(m, torch.nn.LayerNorm):
            fn = _norm_rule
        elif _is_activation(m):
            fn = _activation_rule
        elif isinstance(m, torch.nn.Linear) and last in _QK_NAMES + _V_NAMES:
            fn = partial(_divide_rule, QK_DIVISOR if last in _QK_NAMES else V_DIVISOR)
            qkv += 1
        else:
            continue
        hooks.append(Hook(partial(_itself, m), fn))
    if qkv < 3 * vm.geometry.num_layers:
        raise UserError(f"AttnLRP does not know where {vm.family.title}'s attention projections are.")
    return hooks


@dataclass(frozen=True)
class LrpRelevance:
    """AttnLRP's relevance of one class, on the CPU (float64)."""

    tokens: torch.Tensor  # (N,) each token at the embedding stage's output (embedding + position, [CLS], registers)
    patches: torch.Tensor  # (P,) the patch embeddings' own part (the conv's output): the map; the rest of
    # tokens[prefix:] is the position embeddings' (a bias term: no input depends on it)
    logit: float  # the logit explained


def attnlrp_relevance(vm: VitModel, a: Analysis, class_index: int) -> LrpRelevance:
    """AttnLRP on `a`'s input, its heads switched off: one forward with the rules (attnlrp_hooks and
    WRITTEN) and one backward from logit `class_index` (engine.backward): the relevance of each token at
    the embedding stage's output and of each patch embedding alone, and the logit explained."""
    kept: dict[str, torch.Tensor] = {}

    def keep(_m: torch.nn.Module, _inp: Any, out: Any) -> None:
        kept["h0"] = out[0] if isinstance(out, tuple) else out  # (1, N, D)

    def grads(out: Out, run: Hooked) -> LrpRelevance:
        logit = target_logit(out.logits, class_index)
        (grad,) = torch.autograd.grad(logit, [kept["h0"]])
        p0 = vm.geometry.num_prefix_tokens
        conv = run.patch_embeddings[0].detach()  # (P, D): the patch embeddings alone
        patches = token_relevance(conv, grad[0, p0:p0 + conv.shape[0]])
        return LrpRelevance(token_relevance(kept["h0"][0].detach(), grad[0]).cpu(), patches.cpu(),
                            float(logit.detach()))

    hooks = [*attnlrp_hooks(vm), Hook(lambda b: vm.family.embeddings(b), keep)]
    return backward(vm, a.pixel_values, grads, hooks, a.ablation, WRITTEN, patches=True)


def attnlrp_map(vm: VitModel, a: Analysis, class_index: int) -> np.ndarray:
    """(gh, gw) float32 AttnLRP relevance of each patch embedding (the position embeddings' share is a bias
    term); signed: negative is against the class."""
    return attnlrp_relevance(vm, a, class_index).patches.reshape(vm.geometry.grid).numpy().astype(np.float32)


def signed_note(values: np.ndarray) -> str:
    """AttnLRP's map is signed: say how much of it speaks against the class."""
    neg = float(-values[values < 0].sum())
    return (f" Signed: the patches' negative relevance (evidence against the class) totals {neg:.4g}, "
            f"their positive {float(values[values > 0].sum()):.4g}.")


ATTNLRP = Method(
    "AttnLRP", of_class(attnlrp_map), ATTNLRP_METHOD,
    "Achtibat et al., ICML 2024; rules ported from rachtibat/LRP-eXplains-Transformers (lxt 2.1)",
    "*AttnLRP* (Achtibat et al. 2024): layer-wise relevance propagation through the whole model with its "
    "authors' rules (LayerNorm and GELU pass relevance through, each attention matmul halves it between its "
    "operands, softmax by its Taylor rule), as gradient × input at the patch embeddings before block 1, "
    "the position embeddings' share left out as LRP leaves out a bias; the patches' relevance and the bias "
    "terms sum to the class's logit.",
    needs_class=True, menu=True, per_class=True, export_key="map_attnlrp",
    export_text=ATTNLRP_METHOD + TOP1 + "; signed (negative: against the class), not rescaled", note=signed_note)
