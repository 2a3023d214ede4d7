"""Hooks on the shared model, for exactly one run: ``Hooked`` registers them on enter, removes them on
exit, and holds the one process-wide run lock in between (in the manner of pytorch-grad-cam's
``ActivationsAndGradients``). Every run of the model (vizvit.model.engine, vizvit.model.forwards) goes through it;
extra hooks (e.g. one that zeroes a head's output before the output projection, or a method's rules)
are ``Hook`` values passed to a run."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from vizvit.model.ablation import Ablation, ablate_pre_hook
from vizvit.model.models import VitModel

# Hooks live on the shared model object: two concurrent hooked forwards (a token drop and
# a batched sweep, say) would each run the other's hooks. Every run holds this lock, so
# no run ever sees another's hooks.
_RUN_LOCK = threading.RLock()


def ablation_hooks(vm: VitModel, ablation: Ablation) -> list[Hook]:
    """Pre-hooks on the output projections (the Linear that mixes a layer's concatenated head
    outputs, (B, N, H·d)) of the layers that have heads switched off."""
    if not ablation:
        return []
    fam = vm.family
    ablation.checked(vm.geometry)
    return [Hook(partial(fam.out_proj, layer=l), ablate_pre_hook(heads, ablation.mode, vm.geometry.num_heads), pre=True)
            for l, heads in ablation.by_layer().items()]


@dataclass(frozen=True)
class Hook:
    """An extra forward hook for one run: `where(backbone)` is the module, `fn` the hook
    (as for ``register_forward_hook``; with pre=True, ``register_forward_pre_hook``)."""

    where: Callable[[torch.nn.Module], torch.nn.Module]
    fn: Callable[..., Any]
    pre: bool = False


class Hooked:
    """One run of a shared model with its hooks: register on enter, remove on exit, and
    hold the run lock in between, so no other run sees them.

        with Hooked(vm, keep=idx) as run:
            out = vm.model(pixels)
        run.patches  # (B, P, D) patch embeddings before [CLS] and position embeddings

    keep: tokens to keep after the embedding stage (token drop), (N',) for every view or
    (B, N') per view; None keeps all. Each kept patch keeps its own position embedding:
    something only a transformer can do.
    attentions=False: a run that reads no attention weights (the batched views' and ablations' logits)
    runs PyTorch's fused attention (SDPA) where the model has it, and eager again after: the same
    probabilities to ~1e-7 and 5-12 % less time a ViT-B/16 view on two cores (docs/speed.md). Safe to
    switch on the shared model only because the run lock is held: no run that reads attentions is between.
    """

    def __init__(self, vm: VitModel | None, keep: torch.Tensor | None = None, capture_patches: bool = True,
                 extra: Sequence[Hook] = (), masked: torch.Tensor | None = None, token: torch.Tensor | None = None,
                 attentions: bool = True):
        self.vm = vm
        self.attentions = attentions
        self._attn: str | None = None  # the implementation to put back on exit, where this run switched it
        self.keep = keep
        # [MASK]: (B, P) bool, the patches whose embedding becomes `token` (D,), before [CLS] and the
        # position embeddings are added: transformers' own bool_masked_pos rule (ViT, BEiT, DINOv2).
        if (masked is None) != (token is None):
            raise ValueError("A [MASK] run needs both the masked patches and the token.")
        self.masked, self.token = masked, token
        self.capture_patches = capture_patches and vm is not None
        self.extra = tuple(extra)
        self.patches: torch.Tensor | None = None
        self._handles: list[Any] = []

    def _grab(self, _m: torch.nn.Module, _inp: Any, out: Any) -> None:
        out = out[0] if isinstance(out, tuple) else out
        # (B, P, D); a Conv2d gives (B, D, gh, gw)
        self.patches = out.flatten(2).transpose(1, 2) if out.dim() == 4 else out

    @property
    def patch_embeddings(self) -> torch.Tensor:
        """(B, P, D) the patch embeddings this run captured; a RuntimeError if it captured none
        (capture_patches=False, or no forward ran)."""
        if self.patches is None:
            raise RuntimeError("This run captured no patch embeddings.")
        return self.patches

    def __enter__(self) -> Hooked:
        _RUN_LOCK.acquire()
        try:
            if self.vm is not None and not self.attentions and getattr(self.vm.model, "_supports_sdpa", False):
                self._attn = self.vm.model.config._attn_implementation
                self.vm.model.config._attn_implementation = "sdpa"  # sets the towers' configs too
            if self.vm is not None:
                backbone = self.vm.vit
                fam = self.vm.family
                if self.capture_patches:  # first: the conv's own output, before any [MASK]
                    self._handles.append(fam.patch_embedding(backbone).register_forward_hook(self._grab))
                if self.masked is not None and self.token is not None:
                    mask = partial(_mask, self.masked, self.token)
                    self._handles.append(fam.patch_embedding(backbone).register_forward_hook(mask))
                if self.keep is not None:
                    self._handles.append(fam.embeddings(backbone).register_forward_hook(partial(_drop, self.keep)))
                    for m in fam.bias_modules(backbone):
                        self._handles.append(m.register_forward_hook(partial(_drop_bias, self.keep)))
                for h in self.extra:
                    m = h.where(backbone)
                    self._handles.append(m.register_forward_pre_hook(h.fn) if h.pre else m.register_forward_hook(h.fn))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            for h in self._handles:
                h.remove()
            self._handles.clear()
            if self._attn is not None and self.vm is not None:
                self.vm.model.config._attn_implementation = self._attn
                self._attn = None
        finally:
            _RUN_LOCK.release()


def _mask(masked: torch.Tensor, token: torch.Tensor, _m: torch.nn.Module, _inp: Any, out: Any) -> Any:
    """The patch embeddings (B, P, D) with the `masked` (B, P) rows replaced by the [MASK] `token` (D,), as
    ViTEmbeddings does with bool_masked_pos: x·(1 − m) + token·m."""
    x = out[0] if isinstance(out, tuple) else out
    m = masked.to(x.device).unsqueeze(-1).to(x.dtype)
    y = x * (1.0 - m) + token.to(x.device, x.dtype) * m
    return (y, *out[1:]) if isinstance(out, tuple) else y


def _drop(keep: torch.Tensor, _m: torch.nn.Module, _inp: Any, out: torch.Tensor) -> torch.Tensor:
    """The embedding stage's output (B, N, D) -> the kept tokens' (B, N', D); keep: (N',) or (B, N')."""
    keep = keep.to(out.device)
    if keep.dim() == 1:
        return out[:, keep]
    return out.gather(1, keep.unsqueeze(-1).expand(-1, -1, out.shape[-1]))


def _drop_bias(keep: torch.Tensor, _m: torch.nn.Module, _inp: Any, bias: torch.Tensor) -> torch.Tensor:
    """A relative position bias (1, H, N, N) computed for the whole window -> the kept
    tokens' rows and columns: (1, H, N', N'), or (B, H, N', N') for per-view keeps. Without
    this, BEiT would add the first N' rows of the full bias to a shorter sequence."""
    keep = keep.to(bias.device)
    if keep.dim() == 1:
        return bias[:, :, keep][:, :, :, keep]
    b = bias[0]  # (H, N, N)
    return torch.stack([b[:, k][:, :, k] for k in keep])
