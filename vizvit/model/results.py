"""What a forward gives (an Analysis of one view, a batch's predictions, a prediction at another size),
what it keeps alive in bytes, and which tokens a masked view keeps: plain data, no model runs here
(vizvit.model.engine makes them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image

from vizvit.errors import UserError
from vizvit.model.ablation import Ablation
from vizvit.model.images import View
from vizvit.model.models import Geometry


@dataclass(frozen=True)
class Prediction:
    index: int  # class index into the model's labels
    label: str
    prob: float


@dataclass(frozen=True, eq=False)
class Analysis:
    """Everything one forward pass tells about one (model, photo, view). CPU tensors."""

    model_id: str
    geometry: Geometry
    view: View
    input_view: np.ndarray  # (H, W, 3) uint8: exactly what the model saw
    pixel_values: torch.Tensor  # (1, 3, H, W) float32, normalised
    logits: torch.Tensor | None  # (C,) or None without a classifier
    probs: torch.Tensor | None  # (C,) softmax of logits
    top5: tuple[Prediction, ...]  # best first; empty without a classifier
    attentions: torch.Tensor  # (L, H, N, N), rows = queries, sum to 1 over keys
    hidden_states: torch.Tensor  # (L+1, N, D): [0] after the embedding stage, [l] after block l
    patch_embeddings: torch.Tensor  # (P, D): conv output before [CLS] and position embeddings
    kept_tokens: torch.Tensor  # (N,) index of each kept token in the full sequence
    seconds: float  # wall time of the forward pass
    ablation: Ablation = Ablation()  # heads switched off in this forward (none by default)
    # Families with more than one head (DeiT distilled): name -> (C,) logits of each head;
    # `logits` is then their mean, as the model's own output. Empty for one head.
    head_logits: dict[str, torch.Tensor] = dataclasses.field(default_factory=dict)
    image_embeds: torch.Tensor | None = None  # (E,) CLIP / SigLIP: the image tower's output embedding
    summary_attention: torch.Tensor | None = None  # (H, P) SigLIP: the MAP head's attention over the patches

    @property
    def summary_weights(self) -> torch.Tensor | None:
        """(N,) float32 the summary's weights over the tokens when it is not a token of the sequence
        (SigLIP's MAP head, mean over its heads); None for a [CLS] summary (row 0 of the attentions)."""
        return None if self.summary_attention is None else self.summary_attention.float().mean(0)

    @property
    def nbytes(self) -> int:
        return nbytes(self)

    @property
    def dropped(self) -> bool:
        """True when masked patch tokens were removed from the sequence (token drop)."""
        return self.kept_tokens.numel() != self.geometry.seq_len


@dataclass(frozen=True)
class BatchPrediction:
    """What a batched forward keeps of each view. CPU tensors."""

    probs: torch.Tensor | None  # (B, C) softmax; None without a classifier
    patch_embeddings: torch.Tensor  # (B, P, D) conv output, before [CLS] and position embeddings


@dataclass(frozen=True)
class ResolutionPrediction:
    """One forward at another input size, with the position table interpolated."""

    size: int  # input is size×size pixels
    grid: tuple[int, int]
    input_view: np.ndarray  # (size, size, 3) uint8
    probs: np.ndarray | None  # (C,) float32; None without a classifier
    top5: tuple[Prediction, ...]
    seconds: float


def nbytes(obj: Any) -> int:
    """Bytes that obj (dataclasses, tuples, lists, dicts of tensors, arrays, PIL images, bytes and
    strings) keeps alive: a tensor's or array's whole buffer, counted once however many views of
    it obj holds. A view keeps its whole buffer: a batched forward's (C,) logits of one photo were
    a view of the batch's (B, C) (issue 42: the cache's count must match what eviction frees)."""
    return _nbytes(obj, set())


def _nbytes(obj: Any, seen: set) -> int:
    if isinstance(obj, torch.Tensor):
        if obj.is_nested or obj.layout != torch.strided:
            return obj.numel() * obj.element_size()
        storage = obj.untyped_storage()
        if (storage.device, storage.data_ptr()) in seen:
            return 0
        seen.add((storage.device, storage.data_ptr()))
        return storage.nbytes()
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        if id(base) in seen:
            return 0
        seen.add(id(base))
        return base.nbytes if base.base is None else obj.nbytes  # a buffer numpy does not own: obj's share
    if isinstance(obj, Image.Image):
        return obj.width * obj.height * len(obj.getbands())
    if isinstance(obj, (bytes, bytearray, str)):
        return len(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(_nbytes(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(x, seen) for x in obj)
    if isinstance(obj, dict):
        return sum(_nbytes(x, seen) for x in obj.values())
    return 0


def kept_token_indices(mask: tuple[int, ...], g: Geometry, allow_empty: bool = False) -> torch.Tensor:
    """(N',) sequence positions left after dropping the masked patches' tokens.

    allow_empty: dropping every patch is allowed (only the prefix tokens remain), as the
    100 % point of a deletion curve needs; a user's mask must leave one patch."""
    keep = torch.ones(g.seq_len, dtype=torch.bool)
    idx = torch.tensor(mask, dtype=torch.long) + g.num_prefix_tokens
    if idx.numel() and (idx.max() >= g.seq_len or idx.min() < g.num_prefix_tokens):
        raise UserError(f"Mask indices must be patch numbers 0..{g.num_patches - 1}.")
    keep[idx] = False
    if keep.sum() == g.num_prefix_tokens and not allow_empty:
        raise UserError("Every patch is masked: leave at least one patch for the model to see.")
    return keep.nonzero().squeeze(1)


def keep_indices(mask: Sequence[int], g: Geometry) -> torch.Tensor:
    """(N',) tokens left after dropping the masked patches; dropping all of them is allowed."""
    return kept_token_indices(tuple(int(i) for i in mask), g, allow_empty=True)


def top_predictions(probs: torch.Tensor, labels: tuple[str, ...]) -> tuple[Prediction, ...]:
    p, i = probs.topk(min(5, probs.numel()))
    return tuple(Prediction(int(k), labels[int(k)], float(v)) for v, k in zip(p, i))
