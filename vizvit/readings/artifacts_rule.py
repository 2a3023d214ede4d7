"""Artifact tokens: the few patches a trained ViT turns into scratch space (Darcet et al. 2024,
"Vision Transformers Need Registers").

From the middle layers on, a trained ViT picks a handful of patches in low-information places
(on ImageNet ViT-Ti/16: the four corners), gives their tokens norms 20-45× the median, and lets
[CLS] and the other patches put most of their attention there. Every linear colour range is then
set by those few patches and the rest of the map goes dark. The pictures leave them out of the
colour range and mark them; this module only finds them.

An artifact is a HIGH-NORM token, as in Darcet et al. (their Fig. 3: norms above 150 on ViT-L, a
bimodal histogram), never a patch that merely receives much attention: on the rocket photo the
rocket's tip (row 4, col 7) receives over 5/N of layers 9 and 12's attention with an ordinary norm.
That patch is what the model looks at; calling it an artifact would hide the object (issue 43).
attention_sinks is kept to name such patches, not to hide them.

Pure functions over tensors; shapes: attentions (L, H, N, N), hidden states (L+1, N, D).
"""

from __future__ import annotations

import numpy as np
import torch

from vizvit.model.models import Geometry
from vizvit.model.patches import patch_tokens, to_grid
from vizvit.model.tokens import norm_outliers, token_norms

# A high-norm outlier (Tukey's far fence) is an artifact only when its norm is also NORM_FACTOR
# times the median patch norm: on the trained ViT-Ti the corners reach 12-45× from depth 8 on,
# while the other outliers of any depth, trained or random, stay below 2.9× (image content alone
# moves norms that far on random weights).
NORM_FACTOR = 4.0
# A patch that receives, on average over heads and all queries, SINK_FACTOR times the uniform
# level 1/N is an attention sink (attention_sinks). It is NOT an artifact on that ground: on the
# trained ViT-Ti the corners receive 5.5-16× 1/N in layers 9-12, but so does the rocket's tip.
SINK_FACTOR = 5.0
ARTIFACT_SHORT = (f"a patch whose token has a norm over {NORM_FACTOR:g}× the median patch norm (a "
                  "high-norm outlier; docs/methods.md gives the rule)")
ARTIFACT_RULE = ("artifact token in layer l: a patch whose token entering block l is a high-norm outlier "
                 f"(‖x‖₂ > Q3 + 3·IQR of that depth's patch norms and > {NORM_FACTOR:g}× their median); "
                 "rolled out through layer l: an artifact token of any layer up to l. A patch that only "
                 "receives much attention is not one: it is what the model looks at")


def attention_sinks(attentions: torch.Tensor, g: Geometry, factor: float = SINK_FACTOR) -> torch.Tensor:
    """(L, H, N, N) -> (L, gh, gw) bool: patches receiving > factor/N of the attention, averaged
    over heads and every query (prefix tokens included)."""
    received = attentions.float().mean(dim=(1, 2))  # (L, N): column means over heads and queries
    return to_grid(received[:, g.num_prefix_tokens:] > factor / g.seq_len, g)


def artifact_tokens(hidden: torch.Tensor, g: Geometry) -> np.ndarray:
    """(L+1, N, D) -> (L, gh, gw) bool: the artifact tokens of each layer (ARTIFACT_RULE). Layer l's
    attention is computed from hidden[l - 1] (the block's input), so its norm test reads that depth:
    layer l's mask is high_norm_at_depth's depth l - 1, the Embeddings tab's table one row up."""
    return high_norm_at_depth(hidden, g)[:-1]


def high_norm_at_depth(hidden: torch.Tensor, g: Geometry, factor: float = NORM_FACTOR) -> np.ndarray:
    """(L+1, N, D) -> (L+1, gh, gw) bool: the norm part of ARTIFACT_RULE applied to every depth d
    (hidden[d], the output of block d; d = 0 is the embedding stage). It is what a view of the
    tokens AT depth d must leave out of its colour range and fits: artifact_tokens' layer l reads
    hidden[l - 1] instead, because that is what layer l's attention is computed from."""
    norms = token_norms(hidden, g)  # (L+1, gh, gw)
    median = norms.flatten(1).median(dim=1).values[:, None, None]
    return (norm_outliers(norms) & (norms > factor * median)).numpy()


def through_layers(per_layer: np.ndarray) -> np.ndarray:
    """(L, gh, gw) bool -> (L, gh, gw): artifacts of any layer up to each l (what a rollout
    through layer l carries)."""
    return np.logical_or.accumulate(per_layer, axis=0)


def describe(mask: np.ndarray) -> str:
    """(gh, gw) bool -> 'the four corners' / '3 patches: (row 0, col 4), …' (for captions)."""
    gh, gw = mask.shape
    where = [tuple(int(v) for v in rc) for rc in np.argwhere(mask)]
    corners = {(0, 0), (0, gw - 1), (gh - 1, 0), (gh - 1, gw - 1)}
    if set(where) == corners:
        return "the four corners"
    if corners <= set(where):
        rest = [rc for rc in where if rc not in corners]
        return ("the four corners and " + ", ".join(f"({r}, {c})" for r, c in rest[:4])
                + (" …" if len(rest) > 4 else ""))
    names = ", ".join(f"({r}, {c})" for r, c in where[:6]) + (" …" if len(where) > 6 else "")
    edge = sum(r in (0, gh - 1) or c in (0, gw - 1) for r, c in where)
    return names + (f"; {edge} of {len(where)} on the border" if len(where) > 2 and edge else "")


def patch_token_norm_ratio(hidden: torch.Tensor, mask: np.ndarray, depth: int, g: Geometry) -> float:
    """How many times the median patch norm the artifact tokens' mean norm is, at one depth
    (a number for the caption; nan when the mask is empty)."""
    norms = patch_tokens(hidden[depth], g).float().norm(dim=-1).numpy()  # (P,)
    flat = mask.reshape(-1)
    return float(norms[flat].mean() / np.median(norms)) if flat.any() else float("nan")
