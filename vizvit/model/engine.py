"""The only place the model runs.

Every forward goes through here: ``analyze`` (one view, everything the tabs need), ``predict_chunks``
/ ``predict_batch`` (many views, probabilities and patch embeddings only), ``predict_at_size`` (another
input size) and ``backward`` (every class-specific method of vizvit.methods: one forward with the
hooks the method asks for, then its gradients). ``cnn_probs`` runs the optional CNN under the same
lock, and so does every other use of the model's modules or weights: ``readout`` (the logit lens),
``text_embeddings``, ``patch_label_cosine``, ``embedding_stage`` / ``patch_filters`` and
``position_tables``; the maths modules (lens, tokens, positional, zeroshot) only get tensors.

The model object is shared by every request: hooks go on it for one run only, under one lock, by
vizvit.model.hooks' ``Hooked``. What differs between model families (where the embedding stage, patch
embedding, blocks, final norm, heads and relative-bias modules live; the token layout) is one
``models.Family`` entry in ``models.FAMILIES`` (re-exported here); what each family's head reads after
the last block is written out in vizvit.model.pooling. The results (``Analysis`` and kin) are
vizvit.model.results' dataclasses.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import numpy as np
import torch
from PIL import Image

from vizvit.cancel import NEVER, Cancel
from vizvit.errors import NO_CLASS, NO_LABELS, UserError
from vizvit.model import truncated
from vizvit.model.ablation import Ablation, per_sample_ablate_hook
from vizvit.model.gpu import on_gpu
from vizvit.model.hooks import Hook, Hooked, ablation_hooks
from vizvit.model.images import View, apply_view, model_input_view, to_pixel_values, view_at_size
from vizvit.model.models import (  # noqa: F401  (Family, FAMILIES: re-exported)
    DEFAULT_MODEL,
    FAMILIES,
    RANDOM_SEED,
    BiasTable,
    Family,
    Geometry,
    VitModel,
    load_checkpoint,
)
from vizvit.model.patches import check_resizable, grid_at
from vizvit.model.pooling import PLAIN, Written, pooled, read_logits
from vizvit.model.positional import PositionTables
from vizvit.model.results import (  # noqa: F401
    Analysis,
    BatchPrediction,
    Prediction,
    ResolutionPrediction,
    keep_indices,  # (Prediction, keep_indices, nbytes: read as engine's)
    kept_token_indices,
    nbytes,
    top_predictions,
)
from vizvit.model.tokens import EmbeddingStage, EmbeddingWeights, embedding_stage_of
from vizvit.model.zeroshot import (
    DEFAULT_LABELS,
    DEFAULT_TEMPLATE,
    TextTower,
    ZeroShotHead,
    check_template,
    head_of,
    prompts,
    required_labels,
)

# Above this many bytes (ViT-L/16 at 384 px: 24·16·577² floats = 511 MB; ViT-B/16 at 384 px:
# 192 MB) attentions are kept in float16, so a few analyses still fit the cache; ViT-B/16 at
# 224 (22 MB) stays float32. float16 keeps 11 bits: a weight of 0.5 is off by at most 2.4e-4,
# so the readout's 4th decimal can move by one (the README says so).
ATTENTION_FP32_LIMIT = 128 * 2**20
DEFAULT_CHUNK = 8  # views per batched forward: ViT-B/16 needs ~0.6 GB of activations at 8
# (views done, views in all) after each batch of a batched run: what a progress bar is told.
Progress = Callable[[int, int], None]
T = TypeVar("T")


def probs_of(vm: VitModel, logits: torch.Tensor) -> torch.Tensor:
    """(..., C) logits -> probabilities by the model's rule: softmax for a classifier and CLIP,
    a sigmoid per label for SigLIP."""
    return vm.zero_shot.probs(logits) if vm.zero_shot is not None else logits.float().softmax(-1)


def with_zero_shot(a: Analysis, vm: VitModel) -> Analysis:
    """The analysis with its logits, probs and top-5 read through `vm`'s zero-shot head (the typed
    labels) from the image embedding it kept: no image forward. Unchanged for a classifier."""
    if vm.zero_shot is None or a.image_embeds is None:
        return a
    logits = vm.zero_shot.logits(a.image_embeds.unsqueeze(0))[0]  # (C,)
    probs = vm.zero_shot.probs(logits)
    return dataclasses.replace(a, logits=logits, probs=probs, top5=top_predictions(probs, vm.labels))


@dataclass(frozen=True)
class Out:
    """What one forward of a model gives, whatever its family (what a method's backward reads)."""

    logits: torch.Tensor | None  # (B, C)
    attentions: tuple[torch.Tensor, ...] | None  # L × (B, H, N, N)
    hidden_states: tuple[torch.Tensor, ...] | None  # (L+1) × (B, N, D)
    image_embeds: torch.Tensor | None = None  # (B, E) CLIP / SigLIP
    summary_attention: torch.Tensor | None = None  # (B, H, 1, P) SigLIP's MAP head: one query, the probe
    raw: Any = None  # the model's own output (a classifier's: DeiT distilled's per-head logits)

    def layers(self) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
        """The attentions (L × (B, H, N, N)) and hidden states ((L+1) × (B, N, D)) the forward was asked for
        (output_attentions, output_hidden_states); a RuntimeError where the model gave none."""
        if not self.attentions:
            raise RuntimeError("The model returned no attentions: it must be loaded with attn_implementation='eager'.")
        if not self.hidden_states:
            raise RuntimeError("The model returned no hidden states.")
        return self.attentions, self.hidden_states

    @property
    def class_logits(self) -> torch.Tensor:
        """(B, C) logits; a UserError for a model with no classes."""
        if self.logits is None:
            raise UserError(NO_CLASS)
        return self.logits


def _forward(vm: VitModel, pixels: torch.Tensor, written: Written = PLAIN, **kw: Any) -> Out:
    """One forward: a classifier as it is; CLIP / SigLIP through the image tower, the image
    embedding, then the zero-shot head (the typed labels' text embeddings). written: hooks on the
    parts written out here (SigLIP's pooling head, the embedding before the cosine)."""
    if vm.text is None:
        out = vm.model(pixels, **kw)
        return Out(getattr(out, "logits", None), getattr(out, "attentions", None), getattr(out, "hidden_states", None),
                   raw=out)
    out = vm.vit(pixels, **kw)
    if vm.family.pooling == "map":  # SigLIP: last_hidden_state is after the final layernorm
        emb, summ = pooled(vm.family, vm.model, out.last_hidden_state, written)
    else:  # CLIP: pooler_output is [CLS] after the final layernorm
        emb, summ = pooled(vm.family, vm.model, out.pooler_output.unsqueeze(1), written)
    if vm.zero_shot is not None:
        emb = written.embedding(emb)
    logits = vm.zero_shot.logits(emb) if vm.zero_shot is not None else None
    return Out(logits, getattr(out, "attentions", None), getattr(out, "hidden_states", None), emb, summ)


# ------------------------------------------------------------------ one view, everything
@dataclass(frozen=True)
class Request:
    """One analysis to run: a photo (or a ready (H, W, 3) uint8 model-input view), its view, and
    the heads switched off."""

    image: Image.Image | np.ndarray
    view: View = View()
    ablation: Ablation = Ablation()


def analyze(vm: VitModel, image: Image.Image | np.ndarray, view: View = View(), extra: Sequence[Hook] = (),
            ablation: Ablation = Ablation()) -> Analysis:
    """ONE forward pass of `vm` on `image` (a PIL photo, or an already-made (H, W, 3)
    uint8 model-input view), perturbed by `view`, with `ablation`'s heads switched off.
    Results moved to the CPU once."""
    return analyze_batch(vm, [Request(image, view, ablation)], extra)[0]


def batchable(vm: VitModel, a: Request, b: Request) -> bool:
    """Whether two requests can share one forward: the same heads off and the same tokens kept
    (a token drop changes the sequence length; hooks are per run)."""
    g = vm.geometry
    keep = lambda r: tuple(kept_token_indices(r.view.mask, g).tolist()) if r.view.mask_mode == "drop" else ()  # noqa: E731
    return a.ablation == b.ablation and keep(a) == keep(b)


def _inputs(vm: VitModel, r: Request) -> tuple[np.ndarray, torch.Tensor]:
    """What the model sees of one request: its view (H, W, 3) uint8 and its pixels (1, 3, H, W)."""
    g = vm.geometry
    base = r.image if isinstance(r.image, np.ndarray) else model_input_view(r.image, vm.preprocess)
    shown = apply_view(base, r.view, g.patch_size, g.grid[1])
    return shown, to_pixel_values(shown, vm.preprocess)


def _masked(vm: VitModel, requests: Sequence[Request]) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The [MASK] of a batch: (B, P) bool, the patches each request masks with the token, and the
    token (D,); (None, None) when no request masks with it."""
    if not any(r.view.mask_mode == "mask" and r.view.mask for r in requests):
        return None, None
    token = mask_token(vm).vector
    masked = torch.zeros(len(requests), vm.geometry.num_patches, dtype=torch.bool)  # (B, P)
    for i, r in enumerate(requests):
        if r.view.mask_mode == "mask":
            masked[i, list(r.view.mask)] = True
    return masked, token


def _kept_dtype(attentions: Sequence[torch.Tensor]) -> torch.dtype:
    """The dtype an analysis keeps its attentions (L × (B, H, N, N)) in: float16 above ATTENTION_FP32_LIMIT.
    Chosen before concatenating, layer by layer: a float32 copy of all of ViT-L/16@384's attentions
    (511 MB) would otherwise exist next to the originals."""
    fp32_bytes = sum(t[:1].numel() for t in attentions) * 4
    return torch.float16 if fp32_bytes > ATTENTION_FP32_LIMIT else torch.float32


@on_gpu
def analyze_batch(vm: VitModel, requests: Sequence[Request], extra: Sequence[Hook] = ()) -> list[Analysis]:
    """analyze() of several requests in ONE forward (a batch of B images: one pass over the
    weights, which is what a GPU, and a little a CPU, gains by). They must be batchable (same
    ablation, same kept tokens). A batch of one is analyze itself. Every result equals its single
    forward's up to float32 summation order: BLAS tiles a (B·N, D) matmul differently for other B
    (≤ 1e-5 here; tests/model/test_engine.py), and is then cached under the same key."""
    if not requests:
        return []
    g = vm.geometry
    first = requests[0]
    if any(not batchable(vm, first, r) for r in requests[1:]):
        raise ValueError("analyze_batch needs requests with the same ablation and the same kept tokens")
    shown, pixels = zip(*(_inputs(vm, r) for r in requests))
    view = first.view
    keep = kept_token_indices(view.mask, g) if view.mask_mode == "drop" else torch.arange(g.seq_len)
    hooks = [*extra, *ablation_hooks(vm, first.ablation)]
    masked, token = _masked(vm, requests)
    with Hooked(vm, keep=keep if keep.numel() != g.seq_len else None, extra=hooks, masked=masked,
                token=token) as run:
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = _forward(vm, torch.cat(pixels).to(vm.device), output_attentions=True, output_hidden_states=True)
            if vm.device.type == "cuda":
                torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    attentions, hidden_states = out.layers()
    dtype = _kept_dtype(attentions)
    results = []
    for i, r in enumerate(requests):
        logits = out.logits[i].float().cpu() if out.logits is not None else None
        probs = probs_of(vm, logits) if logits is not None else None
        results.append(Analysis(
            model_id=vm.id,
            geometry=g,
            view=r.view,
            input_view=shown[i],
            pixel_values=pixels[i],
            logits=logits,
            probs=probs,
            top5=top_predictions(probs, vm.labels) if probs is not None else (),
            attentions=torch.cat([t[i:i + 1].to(dtype) for t in attentions]).cpu(),  # (L, H, N, N)
            hidden_states=torch.cat([t[i:i + 1] for t in hidden_states]).float().cpu(),  # (L+1, N, D)
            patch_embeddings=run.patch_embeddings[i].float().cpu(),  # (P, D)
            kept_tokens=keep,
            seconds=seconds / len(requests),  # this image's share of the forward
            ablation=r.ablation,
            image_embeds=None if out.image_embeds is None else out.image_embeds[i].float().cpu(),
            summary_attention=None if out.summary_attention is None else out.summary_attention[i, :, 0].float().cpu(),
            head_logits=_head_logits(out.raw, i),
        ))
    return results


def _head_logits(out: Any, i: int = 0) -> dict[str, torch.Tensor]:
    """Image i's logits per head: DeiT distilled returns each head's beside their mean; other
    families one head."""
    cls, dist = getattr(out, "cls_logits", None), getattr(out, "distillation_logits", None)
    if cls is None or dist is None:
        return {}
    return {"[CLS] head": cls[i].float().cpu(), "[DIST] head": dist[i].float().cpu()}


# ------------------------------------------------------------------ many views, batched
@on_gpu
def predict_chunks(vm: VitModel, views: Sequence[np.ndarray], keeps: Sequence[torch.Tensor] | None = None,
                   chunk: int = DEFAULT_CHUNK, extra: Sequence[Hook] = (),
                   cancel: Cancel = NEVER) -> Iterator[tuple[int, BatchPrediction]]:
    """Batched forwards over `views`, `chunk` at a time; yields (start index, predictions).

    views: B arrays (H, W, 3) uint8 (already shifted / pixel-masked).
    keeps: optional per-view (N'_b,) sequence positions to keep after the embedding stage
    (token drop). A chunk is cut early where N'_b changes, so each batch is rectangular.
    Yielding per chunk lets a caller stream progress and stop early.
    extra: hooks for every run (e.g. ablation_hooks: heads switched off).
    cancel: checked before each batch (Cancelled), so a job whose caller left stops within one batch.
    """
    if chunk < 1:
        raise UserError("The chunk size must be at least 1.")
    n = len(views)
    if keeps is not None and len(keeps) != n:
        raise UserError("Give one keep list per view.")
    start = 0
    while start < n:
        cancel.check()
        stop = min(start + chunk, n)
        if keeps is not None:  # same sequence length within one batch
            length = keeps[start].numel()
            stop = next((i for i in range(start + 1, stop) if keeps[i].numel() != length), stop)
        pixels = torch.cat([to_pixel_values(v, vm.preprocess) for v in views[start:stop]]).to(vm.device)
        idx = None
        if keeps is not None and keeps[start].numel() != vm.geometry.seq_len:
            idx = torch.stack(list(keeps[start:stop]))  # (b, N')
        # One run per chunk, so interactive single views can run between chunks.
        with Hooked(vm, keep=idx, extra=extra, attentions=False) as run, torch.inference_mode():
            out = _forward(vm, pixels)
        probs = probs_of(vm, out.logits).cpu() if vm.has_classifier and out.logits is not None else None
        yield start, BatchPrediction(probs, run.patch_embeddings.float().cpu())
        start = stop


def predict_batch(vm: VitModel, views: Sequence[np.ndarray], keeps: Sequence[torch.Tensor] | None = None,
                  chunk: int = DEFAULT_CHUNK, extra: Sequence[Hook] = (), cancel: Cancel = NEVER,
                  progress: Progress | None = None) -> BatchPrediction:
    """All of `predict_chunks`, concatenated: probs (B, C), patch_embeddings (B, P, D). progress:
    told (views done, B) after each batch (the export's bars)."""
    parts = []
    for start, p in predict_chunks(vm, views, keeps, chunk, extra, cancel):
        parts.append(p)
        if progress is not None:
            progress(start + p.patch_embeddings.shape[0], len(views))
    probs = [p.probs for p in parts if p.probs is not None]  # all or none: the model has classes or not
    return BatchPrediction(torch.cat(probs) if probs else None, torch.cat([p.patch_embeddings for p in parts]))


# ------------------------------------------------------------------ which heads matter
@on_gpu
def zeroed_head_chunks(vm: VitModel, view: np.ndarray, cells: Sequence[tuple[int, int]],
                       chunk: int = DEFAULT_CHUNK, cancel: Cancel = NEVER,
                       states: torch.Tensor | None = None, mode: str = "zero") -> Iterator[tuple[int, torch.Tensor]]:
    """One run per (layer, head) cell with that head alone zeroed (mode "mean": set to its mean over the
    tokens, as an Ablation's mode does), batched up to `chunk` cells of one layer at a time (sample b of a
    batch ablates cells[b]); yields (start index, (b, C) probabilities on
    the CPU). Each run starts from the intact hidden state entering the cell's layer (vizvit.model.truncated:
    nothing before it changes), so L·H runs cost about half of L·H whole forwards; a model truncated
    cannot start inside runs whole forwards, batched across layers.

    view: (H, W, 3) uint8 model-input view, the same for every sample. states: (L+1, N, D) the view's
    intact hidden states where the caller has them (an Analysis of `view`), else one forward computes
    them. cancel: checked before each batch (Cancelled)."""
    if not vm.has_classifier:
        raise UserError("This model has no classifier: there is no prediction for a head to change.")
    if chunk < 1:
        raise UserError("The chunk size must be at least 1.")
    fam, g = vm.family, vm.geometry
    pixels = to_pixel_values(view, vm.preprocess).to(vm.device)  # (1, 3, H, W)
    if not truncated.starts_inside(fam, vm.model):
        states = None
    elif states is None:
        with Hooked(vm, capture_patches=False), torch.inference_mode():
            states = truncated.intact_states(vm.model, pixels)  # (L+1, N, D)
    w = next(vm.model.parameters())
    for start, stop in truncated.cell_batches(cells, chunk, by_layer=states is not None):
        cancel.check()
        part = torch.tensor(cells[start:stop], dtype=torch.long)  # (b, 2)
        hooks = [Hook(partial(fam.out_proj, layer=l), per_sample_ablate_hook(l, part, g.num_heads, mode),
                      pre=True)
                 for l in sorted({int(c[0]) for c in part})]
        with Hooked(vm, capture_patches=False, extra=hooks, attentions=False), torch.inference_mode():
            if states is not None:
                l = int(part[0, 0])
                x = states[l].to(device=w.device, dtype=w.dtype).expand(len(part), -1, -1)  # (b, N, D)
                logits = truncated.logits_from(fam, vm.model, x, l, g, vm.zero_shot)
            else:
                logits = _forward(vm, pixels.expand(len(part), -1, -1, -1)).class_logits
        yield start, probs_of(vm, logits).cpu()


# ------------------------------------------------------------------ another input size
@on_gpu
def predict_at_size(vm: VitModel, image: Image.Image, size: int,
                    ablation: Ablation = Ablation()) -> ResolutionPrediction:
    """ONE forward on a size×size view with ``interpolate_pos_encoding=True``, with `ablation`'s heads
    off (the session's model: its 224-px top-1 beside this one was the ablated model's, this the intact's).

    Not through ``analyze``: it needs none of the attentions or hidden states (at 384 px
    they would be 3× larger)."""
    g = vm.geometry
    grid = grid_at(g, size)
    if vm.family.position_table(vm.vit) is not None:  # its forward would fail mid-way on a non-square table
        check_resizable(vm.position_grid, grid)
    view = view_at_size(image, vm.preprocess, g.image_size[0], size)
    pixels = to_pixel_values(view, vm.preprocess)
    t0 = time.perf_counter()
    kwargs = {"interpolate_pos_encoding": True} if vm.family.interpolate_kwarg else {}  # DINOv2 always does
    with Hooked(vm, capture_patches=False, extra=ablation_hooks(vm, ablation)), torch.inference_mode():
        out = _forward(vm, pixels.to(vm.device), PLAIN, **kwargs)
    seconds = time.perf_counter() - t0
    if out.logits is None:
        return ResolutionPrediction(size, grid, view, None, (), seconds)
    probs = probs_of(vm, out.logits[0].float().cpu())
    return ResolutionPrediction(size, grid, view, probs.numpy(), top_predictions(probs, vm.labels), seconds)


# ------------------------------------------------------------------ one backward, for every method
@on_gpu
def backward(vm: VitModel, pixel_values: torch.Tensor, grads: Callable[[Out, Hooked], T],
             hooks: Sequence[Hook] = (), ablation: Ablation = Ablation(), written: Written = PLAIN,
             patches: bool = False, **kw: Any) -> T:
    """One forward with gradients, under the run lock, with the method's `hooks` (then `ablation`'s) and
    `written` (kw: output_attentions=True, ...); returns `grads(out, run)`, the method's autograd.grad calls
    (run.patches: (1, P, D) when `patches`). The model's parameters do not require grad: the graph is
    rooted at a private copy of the pixels, so what the forward returns or a hook keeps is in it.
    Nothing on the model is changed; every hook is gone when this returns."""
    if vm.family.tower and vm.zero_shot is None:
        raise UserError(NO_LABELS)
    pixels = pixel_values.detach().clone().to(vm.device).requires_grad_(True)
    with Hooked(vm, capture_patches=patches, extra=[*hooks, *ablation_hooks(vm, ablation)]) as run, \
            torch.inference_mode(False), torch.enable_grad():
        return grads(_forward(vm, pixels, written, **kw), run)


def target_logit(logits: torch.Tensor | None, class_index: int) -> torch.Tensor:
    """The logit a class-specific method explains (a graph tensor): class `class_index` of image 0."""
    if logits is None:
        raise UserError(NO_CLASS)
    if not 0 <= class_index < logits.shape[-1]:
        raise UserError(f"Class index {class_index} is outside 0..{logits.shape[-1] - 1}.")
    return logits[0, class_index]


# ------------------------------------------------------------------ the text tower
@on_gpu
def text_embeddings(vm: VitModel, prompts: Sequence[str]) -> torch.Tensor:
    """(C, E) float32 CPU embeddings of the prompts by CLIP's / SigLIP's text tower (not yet
    normalised). One batched forward; the caller caches (session.text_key)."""
    model = vm.model
    if vm.text is None or not isinstance(model, TextTower):
        raise UserError("This model has no text tower.")
    enc = vm.text.tokenize(list(prompts))
    kw = {"input_ids": enc["input_ids"].to(vm.device)}
    if vm.text.use_attention_mask and "attention_mask" in enc:
        kw["attention_mask"] = enc["attention_mask"].to(vm.device)
    with Hooked(None), torch.inference_mode():
        out = model.get_text_features(**kw)
    emb = out.pooler_output if hasattr(out, "pooler_output") else out
    return emb.float().cpu()


# ------------------------------------------------------------------ the optional CNN
@on_gpu
def cnn_probs(model: torch.nn.Module, pixel_values: torch.Tensor, device: torch.device) -> torch.Tensor:
    """(B, C) softmax of a CNN classifier on normalised (B, 3, H, W) pixels, under the run lock."""
    with Hooked(None), torch.inference_mode():
        return model(pixel_values=pixel_values.to(device)).logits.float().softmax(-1).cpu()


# ------------------------------------------------------------------ the model's own parts, read under the lock
# Every other tab reads the model's weights or runs one of its modules (the logit lens's final norm
# and head, the embedding conv's weights, the position tables) through these: under the run lock, so
# no hook of a concurrent run fires on them (CLIP's / SigLIP's patch conv is the very module
# Hooked hooks), and the maths modules get plain tensors.
@on_gpu
def readout(vm: VitModel, states: torch.Tensor) -> torch.Tensor:
    """(L+1, N, D) hidden states -> (L+1, C) float32 CPU logits through the model's own head (its
    family's pooling; CLIP / SigLIP: the tower's end and the typed labels). Each depth goes through
    the same shapes as the model's head (a (1, N, D) norm), so the last depth reproduces its logits
    bit for bit. What vizvit.readings.lens_maths reads."""
    p = next(vm.model.parameters())
    with Hooked(None), torch.inference_mode():
        rows = [read_logits(vm.family, vm.model, h.unsqueeze(0).to(device=p.device, dtype=p.dtype), vm.zero_shot)
                for h in states]
    return torch.cat(rows).float().cpu()


def embedding_weights(vm: VitModel) -> EmbeddingWeights:
    """The embedding stage's weights as tensors (on the model's device): the patch conv, the prefix
    tokens that get a position, the position table, the registers, CLIP's pre-layernorm."""
    fam, backbone = vm.family, vm.vit
    emb = fam.embeddings(backbone)
    conv = fam.patch_conv(backbone)
    with Hooked(None):
        learned = {"[CLS]": "cls_token", "[DIST]": "distillation_token"}
        pe_names = vm.geometry.prefix_names[:fam.pe_prefix]
        # each (1, D); CLIP has a (D,) class embedding
        prefix = [emb.get_parameter(learned[n])[0] if hasattr(emb, learned.get(n, ""))
                  else emb.get_parameter("class_embedding")[None] for n in pe_names]
        w = conv.weight.detach()
        pre = getattr(backbone, "pre_layrnorm", None)
        return EmbeddingWeights(
            conv_weight=w, conv_bias=None if conv.bias is None else conv.bias.detach(),
            stride=int(conv.stride[0]),
            prefix=torch.cat(prefix).detach() if prefix else w.new_zeros(0, w.shape[0]),
            positions=fam.position_table_of(emb), table_grid=vm.position_grid,
            registers=emb.get_parameter("register_tokens").detach()[0] if vm.geometry.num_registers else None,
            pre_norm=None if pre is None else (pre.weight.detach(), pre.bias.detach(), float(pre.eps)))


@on_gpu
def embedding_stage(vm: VitModel, a: Analysis) -> EmbeddingStage:
    """The embedding stage of `a` recomputed by hand (vizvit.model.tokens) from the model's own weights
    and checked against the cached forward; one conv's worth of work, under the lock."""
    fam = vm.family
    with Hooked(None):
        return embedding_stage_of(embedding_weights(vm), a.pixel_values, a.patch_embeddings, a.hidden_states[0],
                                  a.geometry, fam.pe_prefix, fam.pe_antialias)


@dataclass(frozen=True)
class MaskToken:
    """The model's [MASK] token and where it comes from, for the page to say."""

    vector: torch.Tensor  # (D,) float32 CPU: what a masked patch's embedding becomes
    trained: bool  # read from a trained checkpoint (False: an initial value, never trained)
    source: str  # one sentence: where the vector comes from


def mask_token(vm: VitModel) -> MaskToken:
    """The [MASK] token of `vm`'s embedding stage, read under the lock. A family whose embeddings have
    a mask-token slot (ViT, DeiT, BEiT, DINOv2) has one; a checkpoint class built without it (every
    ViT classifier: use_mask_token=False) gets transformers' initial value, zeros, said to be untrained.
    Raises UserError for a family with no slot (CLIP, SigLIP)."""
    with Hooked(None):
        emb = vm.family.embeddings(vm.vit)
        if not hasattr(emb, "mask_token"):
            raise UserError(f"{vm.family.title} has no [MASK] token in its embedding stage: use drop or a pixel fill.")
        t = emb.mask_token  # a Parameter, or None where the class was built without one
        d = vm.geometry.hidden_size
        if not isinstance(t, torch.Tensor):
            return MaskToken(torch.zeros(d), False, (
                "this checkpoint has no [MASK] token (its class was built for classification, without one): "
                "the [MASK] here is transformers' initial value, zeros, **never trained**"))
        vec = t.detach().float().reshape(-1)[:d].cpu().clone()
        if not vm.is_pretrained:
            return MaskToken(vec, False, "random weights: the [MASK] token is **untrained** like everything else")
        if any(k.endswith("mask_token") for k in vm.missing_keys):
            return MaskToken(vec, False, ("the checkpoint holds no [MASK] token: transformers initialised it, "
                                          "**never trained**"))
        return MaskToken(vec, True, "the [MASK] token read from the checkpoint")


def patch_filters(vm: VitModel) -> torch.Tensor:
    """(D, 3, p, p) float32 CPU: the patch-embedding conv's weight (the filters' PCA reads it)."""
    with Hooked(None):
        return vm.family.patch_conv(vm.vit).weight.detach().float().cpu()


def position_tables(vm: VitModel, random_init: bool = True, seed: int = RANDOM_SEED) -> PositionTables:
    """What vizvit.model.positional reads of a model, as CPU float32 tensors: its position table as stored,
    the same architecture's seeded random init of it (random_init: only its embedding module is
    built, with the checkpoint class's own init), and for a relative-bias family each bias module's
    table and window."""
    fam, g = vm.family, vm.geometry
    with Hooked(None):
        table = fam.position_table(vm.vit)
        random_table = None
        if table is not None and random_init:
            emb_cls = type(fam.embeddings(vm.vit))
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                emb = emb_cls(getattr(vm.model.config, "vision_config", vm.model.config))  # CLIP / SigLIP: the tower's
                vm.model._init_weights(emb)  # the checkpoint class's init (trunc-normal, std 0.02 for ViT)
            random_table = fam.position_table_of(emb)
        bias = tuple((m.relative_position_bias_table.detach().float().cpu(),
                      (int(m.window_size[0]), int(m.window_size[1])))
                     for m in fam.bias_modules(vm.vit) if isinstance(m, BiasTable))
    return PositionTables(
        geometry=g, pe_prefix=fam.pe_prefix, antialias=fam.pe_antialias,
        table=None if table is None else table.float().cpu(), table_grid=vm.position_grid, bias=bias,
        random_table=None if random_table is None else random_table.float(),
        missing=f"{fam.title} has no absolute position embeddings: {fam.pe_text}" if fam.has_positions
        else f"Nothing to show on this tab. {fam.pe_text}")


# ------------------------------------------------------------------ zero-shot labels (the text tower)
def patch_label_cosine(vm: VitModel, last_state: torch.Tensor, head: ZeroShotHead) -> torch.Tensor:
    """(N, D) hidden state after the last block -> (C, P) cosine of each patch token, through the
    final layernorm and the image projection (CLIP's visual_projection; SigLIP has none: the
    patch tokens are already in the text's width), with each label's text embedding.

    SigLIP: the MAP head's MLP is not applied per patch (it acts on the pooled probe), so the
    patch tokens are compared as the MAP head reads them."""
    p = vm.geometry.num_prefix_tokens
    w = next(vm.vit.parameters())
    with Hooked(None), torch.inference_mode():
        z = vm.vit.get_submodule("post_layernorm")(last_state.to(device=w.device, dtype=w.dtype))[p:]  # (P, D)
        if hasattr(vm.model, "visual_projection"):
            z = vm.model.get_submodule("visual_projection")(z)
        z = z.float().cpu()
    if z.shape[-1] != head.text_embeds.shape[-1]:
        raise UserError("This model's patch tokens and text embeddings have different widths.")
    z = z / z.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return head.text_embeds @ z.T  # (C, P)


# The text side of a label list for a loaded image-text model: (vm, labels, template) -> its head.
HeadOf = Callable[[VitModel, "tuple[str, ...] | str", str], ZeroShotHead]


def zero_shot_head(vm: VitModel, labels: tuple[str, ...] | str, template: str = DEFAULT_TEMPLATE) -> ZeroShotHead:
    """The zero-shot head for `labels` (a tuple, or "a cat, a dog"): one text forward, no cache.
    A long-running process asks ``session.Workbench.zero_shot`` instead (cached per prompt)."""
    if vm.text is None:
        raise UserError("Zero-shot labels need an image-text model (CLIP or SigLIP); this model has its own classes.")
    labs = required_labels(labels)
    t = check_template(template)
    return head_of(vm.model, labs, t, text_embeddings(vm, prompts(labs, t)), vm.text.rule)


def with_labels(vm: VitModel, labels: tuple[str, ...] | str, template: str = DEFAULT_TEMPLATE) -> VitModel:
    """`vm` with `labels` as its classes (zero_shot_head's one text forward)."""
    return vm.with_zero_shot(zero_shot_head(vm, labels, template))


def load_model(name: str = DEFAULT_MODEL, device: str = "auto", head: HeadOf = zero_shot_head) -> VitModel:
    """THE way to load a model: models.load_checkpoint (the checkpoint, eager attention, its
    geometry), and for CLIP / SigLIP the default zero-shot labels, so that every view has a top-5
    from the start. head: how the labels' text side is computed (the Workbench passes its own,
    which caches each prompt's embedding)."""
    vm = load_checkpoint(name, device)
    return vm.with_zero_shot(head(vm, DEFAULT_LABELS, DEFAULT_TEMPLATE)) if vm.text is not None else vm
