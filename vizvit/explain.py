"""The explanation methods beyond rollout and Chefer relevance, as pure functions over tensors.

Each takes what one forward (and at most one backward, vizvit.engine) gave and returns a map over
the tokens or patches; vizvit.maps caches them and names them for the page (docs/methods.md has the
formulas, sources and commits):

- ``grad_rollout``: vit-explain's gradient-weighted rollout (jacobgil/vit-explain vit_grad_rollout.py);
- ``gradcam``: Grad-CAM on the last block's first layernorm, pytorch-grad-cam's ViT reshape;
- ``legrad``: LeGrad (Bousselham et al. 2024), the positive gradients of each layer's own readout
  with respect to that layer's attention;
- ``attention_flow``: Abnar & Zuidema 2020's attention flow, one exact max-flow per input token.

Shapes: A, ∇A are (L, H, N, N), rows = queries; N = T prefix tokens + P patches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from .cancel import NEVER, Cancel
from .errors import UserError

GRAD_ROLLOUT_METHOD = "gradient rollout (vit-explain)"
GRADCAM_METHOD = "Grad-CAM (last block, pytorch-grad-cam's ViT reshape)"
LEGRAD_METHOD = "LeGrad (Bousselham et al. 2024)"
FLOW_METHOD = "attention flow (Abnar & Zuidema 2020, exact max-flow)"
GRAD_ROLLOUT_DISCARD = 0.9  # vit-explain's default discard_ratio for vit_grad_rollout
LEGRAD_LAYERS = 2  # LeGrad's default layer_index=-2: the last two blocks
# A classifier's LeGrad reads each layer with the model's own head: [CLS] for a ViT. torchcam 0.5's
# LeGrad reads the MEAN of all tokens instead (as LeGrad reads CLIP, whose pooled embedding is
# trained on it); on the trained ViT-Ti the two maps agree at r 0.74-0.85 but share 0-2 of their
# top-5 patches (docs/methods.md). The mean readout is offered as its own map.
LEGRAD_TOKEN_MEAN = "token mean"
# Exact flow runs one max-flow per input token on a graph of ~L·N² edges: bounded by this many edges
# (ViT-Ti/16 at 224 px: 12·197² = 466k; measured in benchmarks/methods_effects.py).
FLOW_MAX_EDGES = 600_000
# A model whose flow graph is ~15x smaller than ViT-Ti/16's (50 tokens at 224 px: 11·50²+50 edges, 50
# max-flows), named when a flow is refused for time.
FLOW_SMALLER_MODEL = "openai/clip-vit-base-patch32"


def grad_rollout(att: torch.Tensor, grads: torch.Tensor, discard: float = GRAD_ROLLOUT_DISCARD) -> torch.Tensor:
    """vit-explain's gradient rollout. att, grads: (L, H, N, N), grads in layer order -> (N, N) R.

    Per layer: F = mean_h(A ⊙ ∇A), negatives set to 0; the lowest ⌊discard·N²⌋ entries of F zeroed
    (the whole matrix, [CLS]→[CLS] included, as vit-explain's code); Â = (F + I)/2, rows
    renormalised; R ← Â·R from R = I. vit-explain divides by ``a.sum(dim=-1)`` without keepdim
    (column j by row j's sum, its issue #16) and zips its gradients in reverse layer order (its
    issue #6); here the rows are renormalised and the layers kept in order (docs/methods.md)."""
    if att.shape != grads.shape:
        raise UserError("Attentions and gradients must have the same shape.")
    n = att.shape[-1]
    eye = torch.eye(n)
    r = eye.clone()
    for a, g in zip(att.float(), grads.float()):
        fused = (a * g).mean(0).clamp(min=0)
        k = int(n * n * discard)
        if k:
            flat = fused.reshape(-1)
            flat[flat.topk(k, largest=False).indices] = 0
        m = (fused + eye) / 2
        r = (m / m.sum(-1, keepdim=True)) @ r
    return r


def gradcam(act: torch.Tensor, grad: torch.Tensor, num_prefix_tokens: int, grid: tuple[int, int]) -> torch.Tensor:
    """Grad-CAM over the patch tokens. act, grad: (N, D) a layer's output and the class logit's
    gradient there -> (gh, gw) relu(Σ_d w_d·act[:, d]), w_d = mean over patches of grad[:, d].

    pytorch-grad-cam's ViT recipe (its `reshape_transform`) drops token 0 and reshapes the rest to
    (D, gh, gw); here every prefix token (T of them: [CLS], [DIST], registers) is dropped. Not
    resized to the image and not min-max scaled (pytorch-grad-cam does both)."""
    t = num_prefix_tokens
    a, g = act[t:].float(), grad[t:].float()  # (P, D)
    w = g.mean(0)  # (D,) the pooled gradients
    return (a @ w).clamp(min=0).reshape(grid)


def legrad(layer_grads: list[torch.Tensor], num_prefix_tokens: int) -> torch.Tensor:
    """LeGrad: Σ_l mean_h mean_q [∂s_l/∂A_l]⁺ over the patch keys. layer_grads: per used layer
    (H, Q, N) the gradient of that layer's own score s_l (its tokens read out by the model's head)
    with respect to its attention (Q queries: N for a block, 1 for SigLIP's pooling probe) -> (P,).
    Not min-max scaled (LeGrad's code scales the sum to 0..1)."""
    if not layer_grads:
        raise UserError("LeGrad needs at least one layer.")
    return sum(g.float().clamp(min=0).mean(0).mean(0)[num_prefix_tokens:] for g in layer_grads)


# ------------------------------------------------------------------ attention flow
def residual_attention(att: torch.Tensor) -> np.ndarray:
    """(L, H, N, N) -> (L, N, N) float64 Â_l = (mean_h A_l + I) / rowsum: the capacities."""
    m = att.double().mean(1) + torch.eye(att.shape[-1], dtype=torch.float64)
    return (m / m.sum(-1, keepdim=True)).numpy()


# Integer capacities for scipy's max-flow (its C code takes int32 only): Â·FLOW_SCALE, rounded.
# Why 2**30: every capacity is in [0, 1] and the source's capacities sum to 1, so no edge's capacity,
# no edge's flow and no flow value can pass 2**30 + N/2 < 2**31 − 1 (int32's limit; a flow value is
# at most the source's capacity). Each capacity is then off by at most 2**-31; a max-flow value is a
# minimum cut, and the value is taken back as the float64 capacity of the cut the integer max-flow
# found (flow_value), so it is exact whenever that cut is also a minimum of the float graph (no other
# cut within the rounding of it), and otherwise off by at most (edges in the two cuts)·2**-31: ~1e-7
# for a cut of a few hundred edges (a layer's tokens), 4e-4 in the absurd case of a cut through every
# edge of ViT-Ti/16's graph, against [CLS] flows that sum to ≥ ½ ([CLS]'s own path keeps ≥ ½ of each
# Â's diagonal). tests/test_explain.py holds the values to networkx's float max-flow.
FLOW_SCALE = 2 ** 30


@dataclass(frozen=True)
class FlowGraph:
    """The layered attention graph below one summary, down to the input tokens, as arrays.

    Nodes: 0 the source (the summary), then (layer k, token i) = 1 + k·N + i, layer 0 the input, layer
    K the one the source feeds. An edge (k+1, i) -> (k, j) has capacity res[k, i, j] (rows at layer
    k+1, keys at layer k); the source -> (K, j) capacity top[j]. Zero capacities are left out.
    capacity: (M, M) int32 CSR, the capacities × FLOW_SCALE rounded (edges that round to 0 left out);
    tail, head, weight: (E,) every edge's ends and float64 capacity, to read a cut's exact value."""

    capacity: sp.csr_array
    tail: np.ndarray
    head: np.ndarray
    weight: np.ndarray
    tokens: int  # N

    def sink(self, j: int) -> int:
        """The node of input token j: (0, j)."""
        return 1 + int(j)


def flow_graph(res: np.ndarray, top: np.ndarray) -> FlowGraph:
    """res: (K, N, N) capacities of the K layers below the source; top: (N,) the source's capacities into
    layer K. For [CLS], top is the last layer's [CLS] row and res the layers below it; SigLIP's pooling
    probe (not a token) has the MAP head's weights on top of every layer."""
    K, n = res.shape[0], res.shape[-1]
    (j0,) = np.nonzero(top)
    k, i, j = np.nonzero(res)  # (E',) each, layer by layer
    tail = np.concatenate([np.zeros(len(j0), np.int64), 1 + (k + 1) * n + i])
    head = np.concatenate([1 + K * n + j0, 1 + k * n + j])
    weight = np.concatenate([top[j0], res[k, i, j]]).astype(np.float64)
    scaled = np.rint(weight * FLOW_SCALE).astype(np.int64)
    kept = scaled > 0
    m = 1 + (K + 1) * n
    cap = sp.csr_array((scaled[kept].astype(np.int32), (tail[kept].astype(np.int32), head[kept].astype(np.int32))),
                       shape=(m, m))
    return FlowGraph(cap, tail, head, weight, n)


def flow_value(g: FlowGraph, j: int) -> float:
    """The max-flow from the source to input token j: Dinic's algorithm in C (scipy) on the integer
    capacities, then the float64 capacity of the minimum cut it found (the nodes the source still
    reaches in the residual graph on one side), so rounding to integers costs nothing where that cut
    is the float graph's minimum too (see FLOW_SCALE)."""
    r = maximum_flow(g.capacity, 0, g.sink(j), method="dinic")
    if r.flow_value == 0:
        return 0.0
    residual = (g.capacity - r.flow).tocsr()  # forward: capacity − flow; reverse: the flow; both ≥ 0
    residual.eliminate_zeros()  # a saturated edge is no edge of the residual graph
    side = np.zeros(g.capacity.shape[0], dtype=bool)
    side[breadth_first_order(residual, 0, directed=True, return_predecessors=False)] = True
    return float(g.weight[side[g.tail] & ~side[g.head]].sum())


def flow_inputs(att: torch.Tensor, summary: torch.Tensor | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(L, H, N, N) attentions -> (res, top) for flow_graph: [CLS] (token 0) after the last layer,
    or `summary` (N,), the weights of a pooling probe above the last layer (SigLIP)."""
    res = residual_attention(att)
    if summary is None:
        return res[:-1], res[-1, 0]
    return res, summary.double().numpy()


@dataclass(frozen=True)
class FlowStep:
    """One more input token's max-flow done: `done` of `total`, seconds so far; `flows` (N,) once
    every token is done (normalised to sum 1, as Abnar & Zuidema's compute_flows), else None."""

    done: int
    total: int
    seconds: float
    flows: np.ndarray | None = None


def flow_edges(shape: tuple[int, ...]) -> int:
    """Edges of the flow graph of attentions (L, H, N, N) (before zero capacities are dropped)."""
    L, n = shape[0], shape[-1]
    return (L - 1) * n * n + n


def check_flow_size(shape: tuple[int, ...]) -> None:
    e = flow_edges(shape)
    if e > FLOW_MAX_EDGES:
        raise UserError(f"Exact attention flow needs one max-flow per token on a graph of {e:,} edges here; it runs "
                        f"up to {FLOW_MAX_EDGES:,} edges (ViT-Ti/16 and ViT-B/16 at 224 px). Use rollout instead.")


@dataclass
class FlowSpeed:
    """What this process has measured of exact flow (both taken as linear in the graph's edges): seconds
    per edge to build the graph, and per edge of one max-flow. Starts a little above ViT-Ti/16 and
    ViT-B/16 at 224 px on two busy cores (427k edges: 0.04-0.08 s to build, 20-40 ms per max-flow with
    its cut, benchmarks/bench_flow.py; docs/methods.md), so a first estimate is ~9 s against the 4-8 s
    measured; each flow run (finished or stopped) replaces it with what it saw."""

    build_s_per_edge: float = 2.5e-7
    flow_s_per_edge: float = 1.1e-7
    measured: bool = False

    def estimate(self, shape: tuple[int, ...]) -> float:
        """Seconds the exact flow of attentions (L, H, N, N) would take here."""
        e, n = flow_edges(shape), shape[-1]
        return e * (self.build_s_per_edge + n * self.flow_s_per_edge)


FLOW_SPEED = FlowSpeed()


def check_flow_time(shape: tuple[int, ...], limit_s: float | None, speed: FlowSpeed = FLOW_SPEED) -> float:
    """The estimated seconds of the flow of attentions (L, H, N, N); a UserError naming a smaller model
    when they exceed `limit_s` (None: no limit), before anything is built."""
    check_flow_size(shape)
    est = speed.estimate(shape)
    if limit_s is not None and est > limit_s:
        how = "as measured on this server" if speed.measured else "at this server's expected speed"
        raise UserError(f"Exact attention flow here needs {shape[-1]} max-flows on a graph of {flow_edges(shape):,} "
                        f"edges: about {duration(est)} {how}, over its limit of {duration(limit_s)}. Use a "
                        f"smaller model, such as {FLOW_SMALLER_MODEL} (50 tokens: ~{_smaller_factor(shape):.0f}x "
                        f"less work), or rollout, which is exact in a second.")
    return est


def duration(seconds: float) -> str:
    """"40 s" under two minutes, else "12 min": what the page and the refusals say."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _smaller_factor(shape: tuple[int, ...]) -> float:
    """How many times less flow work FLOW_SMALLER_MODEL's graph (12 layers, 50 tokens) is than `shape`'s."""
    small = (12, 1, 50, 50)
    return (flow_edges(shape) * shape[-1]) / (flow_edges(small) * small[-1])


def attention_flow_steps(att: torch.Tensor, summary: torch.Tensor | None = None,
                         should_stop: Callable[[], bool] = lambda: False,
                         cancel: Cancel = NEVER, speed: FlowSpeed = FLOW_SPEED) -> Iterator[FlowStep]:
    """Attention flow from the summary ([CLS], or SigLIP's probe with weights `summary` (N,)) to
    every input token, one exact max-flow each (flow_value: Dinic's in C on one graph built once),
    streamed; stops early (without a final `flows`) when should_stop() says so, and raises Cancelled
    when `cancel` is set (checked before the graph and between max-flows) or when the speed seen so
    far says the rest will not finish within its limit. `speed` is updated with what this run
    measured. att: (L, H, N, N)."""
    shape = tuple(att.shape)
    check_flow_time(shape, _left(cancel), speed)
    e = flow_edges(shape)
    t0 = time.perf_counter()
    cancel.check()
    g = flow_graph(*flow_inputs(att, summary))  # ~0.1 s on ViT-B/16's graph: numpy, nothing to check inside
    speed.build_s_per_edge = (time.perf_counter() - t0) / e
    t1 = time.perf_counter()
    n = att.shape[-1]
    flows = np.zeros(n)
    for j in range(n):
        if should_stop():
            return
        cancel.check()
        if j:  # the speed this run sees, and whether the rest fits in what is left of the limit
            speed.flow_s_per_edge, speed.measured = (time.perf_counter() - t1) / (j * e), True
            left = _left(cancel)
            if left is not None and j >= 3 and (n - j) * e * speed.flow_s_per_edge > left:
                raise UserError(f"Exact attention flow stopped after {j} of {n} max-flows: at this speed the rest "
                                f"would take {duration((n - j) * e * speed.flow_s_per_edge)} more, past its "
                                f"limit. Use a smaller model, such as {FLOW_SMALLER_MODEL}, or rollout.")
        flows[j] = flow_value(g, j)  # tens of ms in C: Cancel is checked between two
        yield FlowStep(j + 1, n, time.perf_counter() - t0)
    speed.flow_s_per_edge, speed.measured = (time.perf_counter() - t1) / (n * e), True
    yield FlowStep(n, n, time.perf_counter() - t0, flows / flows.sum())


def _left(cancel: Cancel) -> float | None:
    """Seconds left of the token's limit (None: no limit)."""
    return None if cancel.limit_s is None else cancel.limit_s - cancel.elapsed()


def attention_flow(att: torch.Tensor, summary: torch.Tensor | None = None, cancel: Cancel = NEVER) -> np.ndarray:
    """(L, H, N, N) -> (N,) float64 attention flow from the summary (see attention_flow_steps)."""
    last = None
    for last in attention_flow_steps(att, summary, cancel=cancel):
        pass
    assert last is not None and last.flows is not None
    return last.flows
