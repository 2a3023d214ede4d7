"""Perturbation experiments: shifts, patch masks, shift sweeps and faithfulness curves.

Single perturbed views go through the cached ``analyze`` (one forward each). The sweep
and the deletion/insertion curves need dozens of views, so they run as BATCHED forwards
(``engine.predict_chunks``) that keep only what they need: probabilities and patch embeddings.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from vizvit.cancel import NEVER, Cancel
from vizvit.errors import UserError
from vizvit.model.engine import DEFAULT_CHUNK, Progress, keep_indices, predict_batch, predict_chunks
from vizvit.model.hooks import Hook
from vizvit.model.images import MaskMode, fill_pixels, mask_pixels, shift_view
from vizvit.model.models import Geometry, VitModel
from vizvit.vocab import Fill


# ------------------------------------------------------------------ shift
def patches_moved_back(d: int, patch: int) -> int:
    """Whole patches the photo moved for a shift of d pixels: d / P rounded toward 0, so that
    −d and +d pair alike (−1 px: 0 patches, as +1 px; −16 px: −1). Flooring would pair a patch
    shifted 1 px left with its left neighbour, which holds 1/P of its pixels. For the sweep's
    k ≥ 0 this is ⌊k/P⌋."""
    return -((-d) // patch) if d < 0 else d // patch


def shift_cosine(base: torch.Tensor, shifted: torch.Tensor, dx: int, dy: int, g: Geometry,
                 wrap: bool = False) -> np.ndarray:
    """Per-patch cosine of patch embeddings, original (i, j) vs shifted (i + mdy, j + mdx), where
    mdx = patches_moved_back(dx, P): dx/P rounded toward 0, and likewise mdy.

    base, shifted: (P, D) embeddings before position embeddings. Returns (gh, gw) float
    indexed by the ORIGINAL patch; NaN where the partner falls outside the grid. wrap: the view was
    rolled (fill "wrap"), so a partner past one edge is the patch at the other: every patch has one.
    """
    gh, gw = g.grid
    a = base.float().reshape(gh, gw, -1)
    b = shifted.float().reshape(gh, gw, -1)
    di, dj = patches_moved_back(dy, g.patch_size), patches_moved_back(dx, g.patch_size)
    if wrap:  # partner of (i, j) is ((i + di) mod gh, (j + dj) mod gw)
        partner = torch.roll(b, shifts=(-di, -dj), dims=(0, 1))
        return torch.nn.functional.cosine_similarity(a, partner, dim=-1).numpy().astype(np.float64)
    out = np.full((gh, gw), np.nan)
    # Original rows i with 0 <= i + di < gh, columns likewise.
    i0, i1 = max(0, -di), min(gh, gh - di)
    j0, j1 = max(0, -dj), min(gw, gw - dj)
    if i0 < i1 and j0 < j1:
        cos = torch.nn.functional.cosine_similarity(a[i0:i1, j0:j1], b[i0 + di:i1 + di, j0 + dj:j1 + dj],
                                                    dim=-1)
        out[i0:i1, j0:j1] = cos.numpy()
    return out


def cos_summary(cos: np.ndarray) -> tuple[float, float]:
    """(mean, min) over the patches that have a partner; NaN when none does."""
    finite = cos[np.isfinite(cos)]
    return (float(finite.mean()), float(finite.min())) if finite.size else (float("nan"), float("nan"))


@dataclass(frozen=True)
class SweepRow:
    k: int  # shift to the right, pixels
    moved_back: int  # ⌊k / P⌋
    mean_cos: float
    min_cos: float
    top1_index: int  # this view's own top-1 class (-1 without a classifier)
    top1_label: str
    top1_prob: float  # this view's top-1 probability
    base_class_prob: float  # probability of the UNSHIFTED photo's top-1 class


@dataclass(frozen=True)
class ShiftSweep:
    rows: tuple[SweepRow, ...]
    total: int  # rows when complete (2P + 1)

    @property
    def done(self) -> bool:
        return len(self.rows) == self.total

    def array(self) -> np.ndarray:
        """(rows, 4) float32: k, mean_cos, min_cos, probability of the unshifted top-1 class."""
        return np.array([[r.k, r.mean_cos, r.min_cos, r.base_class_prob] for r in self.rows], np.float32)


def shift_sweep_steps(vm: VitModel, base_view: np.ndarray, fill: Fill = "edge",
                      chunk: int = DEFAULT_CHUNK, cancel: Cancel = NEVER,
                      extra: Sequence[Hook] = ()) -> Iterator[ShiftSweep]:
    """Shift the photo k = 0..2P pixels right, batched; yields the growing sweep per chunk.

    base_view: (H, W, 3) uint8 model-input view. k = 0 is in the first chunk and serves
    as the reference for the cosines and the base class, so all rows share one numeric path.
    cancel: checked before each batch (Cancelled). extra: hooks for every forward (ablation_hooks:
    the session's heads switched off, so the sweep is the model every other tab shows).
    """
    g = vm.geometry
    ks = list(range(2 * g.patch_size + 1))
    views = [shift_view(base_view, k, 0, fill) for k in ks]
    rows: list[SweepRow] = []
    ref: torch.Tensor | None = None
    base_class = -1
    for start, pred in predict_chunks(vm, views, chunk=chunk, extra=extra, cancel=cancel):
        if ref is None:
            ref = pred.patch_embeddings[0]
            base_class = int(pred.probs[0].argmax()) if pred.probs is not None else -1
        for b in range(pred.patch_embeddings.shape[0]):
            k = ks[start + b]
            mean, low = cos_summary(shift_cosine(ref, pred.patch_embeddings[b], k, 0, g, wrap=fill == "wrap"))
            if pred.probs is not None:
                p = pred.probs[b]
                top = int(p.argmax())
                rows.append(SweepRow(k, patches_moved_back(k, g.patch_size), mean, low, top, vm.labels[top],
                                     float(p[top]), float(p[base_class])))
            else:
                rows.append(SweepRow(k, patches_moved_back(k, g.patch_size), mean, low, -1, "", float("nan"),
                                     float("nan")))
        yield ShiftSweep(tuple(rows), len(ks))


def shift_sweep(vm: VitModel, base_view: np.ndarray, fill: Fill = "edge", chunk: int = DEFAULT_CHUNK,
                cancel: Cancel = NEVER) -> ShiftSweep:
    """The complete sweep (see shift_sweep_steps)."""
    *_, last = shift_sweep_steps(vm, base_view, fill, chunk, cancel)
    return last


# ------------------------------------------------------------------ masks
def mask_by_map(values: np.ndarray | torch.Tensor, fraction: float, top: bool = True) -> tuple[int, ...]:
    """The `fraction` of patches ranked highest (top) or lowest by a (gh, gw) map, row-major ids."""
    if not 0 <= fraction <= 1:
        raise UserError("The fraction must be between 0 and 1 (0 % to 100 %).")
    flat = np.asarray(values, dtype=np.float64).ravel()
    n = int(round(fraction * flat.size))
    order = np.argsort(-flat if top else flat, kind="stable")
    return tuple(sorted(int(i) for i in order[:n]))


def random_mask(num_patches: int, fraction: float, seed: int = 0) -> tuple[int, ...]:
    """round(fraction · num_patches) distinct patches drawn with a seeded generator."""
    if not 0 <= fraction <= 1:
        raise UserError("The fraction must be between 0 and 1 (0 % to 100 %).")
    n = int(round(fraction * num_patches))
    return tuple(sorted(int(i) for i in np.random.default_rng(seed).choice(num_patches, n, replace=False)))


def toggle(mask: Sequence[int], patch: int) -> tuple[int, ...]:
    s = set(mask)
    s.symmetric_difference_update({int(patch)})
    return tuple(sorted(s))


def invert(mask: Sequence[int], num_patches: int) -> tuple[int, ...]:
    s = set(mask)
    return tuple(i for i in range(num_patches) if i not in s)


# ------------------------------------------------------------------ faithfulness
@dataclass(frozen=True)
class Curves:
    """Deletion and insertion curves (Petsiuk et al. 2018) for several maps."""

    names: tuple[str, ...]
    fractions: np.ndarray  # (S+1,) fraction of patches removed (deletion) / added (insertion)
    deletion: np.ndarray  # (M, S+1) probability of the target class
    insertion: np.ndarray  # (M, S+1)
    target: int  # class index tracked: the unmasked photo's top-1
    target_label: str
    mode: str  # how patches were removed: black, mean, blur or drop
    forwards: int  # distinct views actually run

    @property
    def deletion_auc(self) -> np.ndarray:
        """(M,) area under each deletion curve: lower = the map found what matters."""
        return np.trapezoid(self.deletion, self.fractions, axis=1)

    @property
    def insertion_auc(self) -> np.ndarray:
        """(M,) area under each insertion curve: higher is better."""
        return np.trapezoid(self.insertion, self.fractions, axis=1)


def faithfulness_curves(vm: VitModel, base_view: np.ndarray, maps: dict[str, np.ndarray], steps: int = 10,
                        mode: MaskMode = "black", target: int | None = None,
                        chunk: int = DEFAULT_CHUNK, cancel: Cancel = NEVER,
                        progress: Progress | None = None, extra: Sequence[Hook] = (),
                        read_back: Collection[str] = (), known: dict[tuple[int, ...], torch.Tensor] | None = None,
                        ) -> Curves:
    """Delete (insert) patches most-important-first by each map; track the target's probability.

    base_view: (H, W, 3) uint8. maps: name -> (gh, gw) scores (any scale; only the order
    counts, ties broken by patch index). Step s removes round(s/steps · P) patches.
    Identical masks (step 0, the last step, equal rankings) run once; all views run
    batched. target: class to track, default the unmasked view's top-1. cancel: checked before
    each batch (Cancelled). progress: told (views done, distinct views) after each batch. extra: hooks
    for every forward (ablation_hooks: the session's heads switched off). read_back: maps (random
    orders) whose insertion adds patches in the reverse of their deletion order: its views are then
    the deletion's read backwards, run once (see _distinct_masks). known: mask -> (C,) probabilities of views
    already run for the same model, view, mode and hooks (a contest run map by map shares its intact and empty
    views and the random map's order): those are not run again, and the ones run here are added to it.
    Curves.forwards counts the views run here.
    """
    if not vm.has_classifier:
        raise UserError("Deletion and insertion curves need a model with a classifier head.")
    if steps < 1:
        raise UserError("Use at least one step.")
    if mode == "mask":  # the batched forwards have no [MASK] hook: say so, not leave the pixels as they are
        raise UserError("The curves remove patches by a pixel fill or by token drop, "
                        "not by the [MASK] token.")
    g = vm.geometry
    names = tuple(maps)
    fractions = np.linspace(0.0, 1.0, steps + 1)
    counts = [int(round(f * g.num_patches)) for f in fractions]
    orders = {name: _order(name, maps[name], g) for name in names}
    masks, slots = _distinct_masks(orders, counts, frozenset(read_back))
    new = [m for m in masks if known is None or m not in known]
    table = {} if known is None else known
    if new:
        table.update(zip(new, _masked_probs(vm, base_view, new, mode, chunk, cancel, progress, extra)))
    probs = torch.stack([table[m] for m in masks])
    tgt = int(probs[0].argmax()) if target is None else int(target)
    p = probs[:, tgt].numpy()
    deletion = np.stack([p[slots[n][0]] for n in names])
    insertion = np.stack([p[slots[n][1]] for n in names])
    return Curves(names, fractions, deletion, insertion, tgt, vm.labels[tgt], mode, len(new))


def _order(name: str, scores: np.ndarray, g: Geometry) -> np.ndarray:
    """(gh, gw) scores -> (P,) patch indices, most important first (ties: the lower index first)."""
    m = np.asarray(scores, dtype=np.float64)
    if m.shape != g.grid:
        raise UserError(f"Map {name!r} has shape {m.shape}; expected the patch grid {g.grid}.")
    return np.argsort(-m.ravel(), kind="stable")


def _distinct_masks(orders: dict[str, np.ndarray], counts: Sequence[int], read_back: frozenset[str] = frozenset(),
                    ) -> tuple[list[tuple[int, ...]], dict[str, tuple[list[int], list[int]]]]:
    """Every map's deletion and insertion masks at each count of removed patches, each distinct mask once.
    -> (the distinct masks, the unmasked view first: each a sorted tuple of patch indices; per map, the
    index of each step's deletion mask and insertion mask in that list). A map in read_back inserts
    along its order reversed: n patches in = its last n kept = its deletion's view at P − n removed,
    one view for both. For a random order that is still a uniformly random order, so a random
    baseline's insertion then costs no views: deletion at a fraction f and insertion at 1 − f are the
    same experiment (a random f of the patches removed), and its insertion AUC equals its deletion AUC."""
    unique: dict[tuple[int, ...], int] = {(): 0}
    slots: dict[str, tuple[list[int], list[int]]] = {}
    for name, order in orders.items():
        dele: list[int] = []
        ins: list[int] = []
        inserted = order[::-1] if name in read_back else order
        for n in counts:
            for masked, out in ((order[:n], dele), (inserted[n:], ins)):
                key = tuple(sorted(int(i) for i in masked))
                out.append(unique.setdefault(key, len(unique)))
        slots[name] = (dele, ins)
    return list(unique), slots


def _masked_probs(vm: VitModel, base_view: np.ndarray, masks: Sequence[tuple[int, ...]], mode: MaskMode,
                  chunk: int, cancel: Cancel, progress: Progress | None, extra: Sequence[Hook] = ()) -> torch.Tensor:
    """(M, C) the model's probabilities of the view with each mask's patches removed by `mode` (a pixel
    fill, or token drop), batched."""
    g = vm.geometry
    if mode == "drop":
        views = [base_view] * len(masks)
        keeps = [keep_indices(m, g) for m in masks]
        # Group equal sequence lengths so batches are rectangular.
        order = sorted(range(len(masks)), key=lambda i: keeps[i].numel())
        found = predict_batch(vm, [views[i] for i in order], [keeps[i] for i in order], chunk, extra, cancel=cancel,
                              progress=progress).probs
        assert found is not None  # the model has a classifier (checked above)
        probs = torch.empty_like(found)
        probs[torch.tensor(order)] = found
        return probs
    filler = fill_pixels(base_view, g.patch_size, mode)  # once for all the masks: the blur is costly
    views = [mask_pixels(base_view, m, g.patch_size, g.grid[1], mode, filler) for m in masks]
    found = predict_batch(vm, views, None, chunk, extra, cancel=cancel, progress=progress).probs
    assert found is not None  # the model has a classifier (checked above)
    return found


def merge_curves(parts: Sequence[Curves]) -> Curves:
    """Curves computed map by map (same steps, mode and target) -> one Curves."""
    first = parts[0]
    if any(p.target != first.target or p.mode != first.mode or len(p.fractions) != len(first.fractions)
           for p in parts):
        raise UserError("Only curves of the same target, mode and steps can be merged.")
    return Curves(tuple(n for p in parts for n in p.names), first.fractions,
                  np.concatenate([p.deletion for p in parts]), np.concatenate([p.insertion for p in parts]),
                  first.target, first.target_label, first.mode, sum(p.forwards for p in parts))


# ------------------------------------------------------------------ the random baseline as a spread
# Random patch orders behind the baseline: one draw ranked first on chelsea by luck (issue 43).
RANDOM_ORDERS = 10


def random_orders(grid: tuple[int, int], n: int = RANDOM_ORDERS, seed: int = 0) -> dict[str, np.ndarray]:
    """n random (gh, gw) maps, seeds seed .. seed + n − 1: "random order 1" is the same order as
    vizvit.methods.maps' "random" map of the same seed, so the contestant and the band share its views."""
    if n < 2:
        raise UserError("A spread needs at least two random orders.")
    return {f"random order {k + 1}": np.random.default_rng(seed + k).random(grid) for k in range(n)}


@dataclass(frozen=True)
class Spread:
    """Mean ± sd (ddof = 1) of n values: the random orders' AUCs. A map is outside the band when its
    AUC is below `low` or above `high`; inside it, it is no better or worse than chance here."""

    mean: float
    sd: float
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.sd

    @property
    def high(self) -> float:
        return self.mean + self.sd


def spread(values: np.ndarray | Sequence[float]) -> Spread:
    v = np.asarray(values, np.float64).ravel()
    if v.size < 2:
        raise UserError("A spread needs at least two values.")
    return Spread(float(v.mean()), float(v.std(ddof=1)), int(v.size))


def against_band(auc: float, band: Spread, higher_is_better: bool) -> str:
    """'better', 'within' or 'worse': where one map's AUC falls against the random orders' mean ± sd."""
    if band.low <= auc <= band.high:
        return "within"
    return "better" if (auc > band.high) == higher_is_better else "worse"


def split_curves(c: Curves, names: Sequence[str]) -> tuple[Curves, Curves]:
    """(the curves of `names`, the rest), in c's order: one batched run of maps and random orders
    (their shared views run once) split back into the contestants and the band."""
    keep = [k for k, n in enumerate(c.names) if n in set(names)]
    rest = [k for k in range(len(c.names)) if k not in keep]

    def part(idx: list[int]) -> Curves:
        return Curves(tuple(c.names[k] for k in idx), c.fractions, c.deletion[idx], c.insertion[idx],
                      c.target, c.target_label, c.mode, c.forwards)

    return part(keep), part(rest)
