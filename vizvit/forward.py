"""The one place the model runs: ``analyze`` -> ``Analysis``; plus a byte-bounded LRU cache."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Hashable

import numpy as np
import torch
from PIL import Image

from .errors import UserError
from .gpu import on_gpu
from .images import View, apply_view, model_input_view, to_pixel_values
from .models import Geometry, VitModel

# Above this many bytes (ViT-L/16 at 384 px: 24·16·577² floats = 511 MB; ViT-B/16 at 384 px:
# 192 MB) attentions are kept in float16, so a few analyses still fit the cache; ViT-B/16 at
# 224 (22 MB) stays float32. float16 keeps 11 bits: a weight of 0.5 is off by at most 2.4e-4,
# so the readout's 4th decimal can move by one (the README says so).
ATTENTION_FP32_LIMIT = 128 * 2**20
# Forward hooks live on the shared model object: two concurrent hooked forwards (a token
# drop and a batched sweep, say) would each run the other's hooks. Hold this around
# register-forward-remove.
HOOKED_FORWARD_LOCK = threading.RLock()


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

    @property
    def nbytes(self) -> int:
        return _nbytes(self)

    @property
    def dropped(self) -> bool:
        """True when masked patch tokens were removed from the sequence (token drop)."""
        return self.kept_tokens.numel() != self.geometry.seq_len


def _nbytes(obj: Any) -> int:
    """Bytes held by the tensors and arrays inside obj (dataclasses, tuples, dicts)."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sum(_nbytes(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(x) for x in obj)
    if isinstance(obj, dict):
        return sum(_nbytes(x) for x in obj.values())
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


def top_predictions(probs: torch.Tensor, labels: tuple[str, ...]) -> tuple[Prediction, ...]:
    p, i = probs.topk(min(5, probs.numel()))
    return tuple(Prediction(int(k), labels[int(k)], float(v)) for v, k in zip(p, i))


@on_gpu
def analyze(vm: VitModel, image: Image.Image | np.ndarray, view: View = View()) -> Analysis:
    """ONE forward pass of `vm` on `image` (a PIL photo, or an already-made (H, W, 3)
    uint8 model-input view), perturbed by `view`. Results moved to the CPU once."""
    g = vm.geometry
    base = image if isinstance(image, np.ndarray) else model_input_view(image, vm.preprocess)
    shown = apply_view(base, view, g.patch_size, g.grid[1])
    pixels = to_pixel_values(shown, vm.preprocess)
    keep = kept_token_indices(view.mask, g) if view.mask_mode == "drop" else torch.arange(g.seq_len)

    captured: dict[str, torch.Tensor] = {}
    emb = vm.vit.embeddings

    def grab_patches(_m: torch.nn.Module, _inp: Any, out: torch.Tensor) -> None:
        captured["patches"] = out  # (1, P, D) before [CLS] and position embeddings

    def drop_tokens(_m: torch.nn.Module, _inp: Any, out: torch.Tensor) -> torch.Tensor:
        # Token drop happens after the embedding stage, so each kept patch keeps its
        # own position embedding: something only a transformer can do.
        return out[:, keep.to(out.device)]

    with HOOKED_FORWARD_LOCK:
        hooks = [emb.patch_embeddings.register_forward_hook(grab_patches)]
        if keep.numel() != g.seq_len:
            hooks.append(emb.register_forward_hook(drop_tokens))
        t0 = time.perf_counter()
        try:
            with torch.inference_mode():
                out = vm.model(pixels.to(vm.device), output_attentions=True, output_hidden_states=True)
                if vm.device.type == "cuda":
                    torch.cuda.synchronize()
        finally:
            for h in hooks:
                h.remove()
    seconds = time.perf_counter() - t0
    if not out.attentions:
        raise RuntimeError("The model returned no attentions: it must be loaded with attn_implementation='eager'.")

    # Choose the dtype before concatenating, layer by layer: a float32 copy of all of
    # ViT-L/16@384's attentions (511 MB) would otherwise exist next to the originals.
    fp32_bytes = sum(t.numel() for t in out.attentions) * 4
    dtype = torch.float16 if fp32_bytes > ATTENTION_FP32_LIMIT else torch.float32
    attentions = torch.cat([t.to(dtype) for t in out.attentions])  # (L, H, N, N)
    logits = out.logits[0].float().cpu() if hasattr(out, "logits") else None
    probs = logits.softmax(-1) if logits is not None else None
    return Analysis(
        model_id=vm.id,
        geometry=g,
        view=view,
        input_view=shown,
        pixel_values=pixels,
        logits=logits,
        probs=probs,
        top5=top_predictions(probs, vm.labels) if probs is not None else (),
        attentions=attentions.cpu(),
        hidden_states=torch.cat(out.hidden_states).float().cpu(),  # (L+1, N, D)
        patch_embeddings=captured["patches"][0].float().cpu(),  # (P, D)
        kept_tokens=keep,
        seconds=seconds,
    )


class AnalysisCache:
    """Thread-safe LRU of computed results, bounded in bytes.

    Holds Analyses and anything derived from them (rollout stacks, relevance maps),
    keyed by hashable tuples. Concurrent requests for the same missing key compute it
    once; the others wait. Evicted entries are simply recomputed (forwards are
    deterministic).
    """

    def __init__(self, max_bytes: int = 1 << 30):
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._inflight: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, value: Any) -> None:
        size = _nbytes(value)
        with self._lock:
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            if size > self.max_bytes:
                return  # would evict everything and still not fit: don't keep it
            self._items[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, s) = self._items.popitem(last=False)
                self._bytes -= s

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        value = self.get(key)
        if value is not None:
            return value
        with self._lock:
            key_lock = self._inflight.setdefault(key, threading.Lock())
        with key_lock:
            value = self.get(key)  # someone else may have computed it meanwhile
            if value is not None:
                return value
            with self._lock:
                self.misses += 1
            try:
                value = compute()
                self.put(key, value)
            finally:
                with self._lock:
                    self._inflight.pop(key, None)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
