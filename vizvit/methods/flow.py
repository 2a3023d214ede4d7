"""Attention flow (Abnar & Zuidema 2020): an exact max-flow from the summary to each input token through
the attention graph, one per token (Dinic's in C, scipy), on the cached attentions: no forward. The one
costly method: a job, streamed (``flow_progress``), checked against its time limit before it waits
(``check_flow_time``), its result cached per photo under ATTENTION_FLOW.

Shapes: A is (L, H, N, N), rows = queries; N = T prefix tokens + P patches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

from vizvit.cancel import NEVER, Cancel
from vizvit.errors import UserError
from vizvit.methods.base import Method
from vizvit.methods.maps import Cache, full_attentions, no_cache
from vizvit.model.engine import Analysis
from vizvit.model.models import PATCH_MEAN, Geometry, VitModel

FLOW_METHOD = "attention flow (Abnar & Zuidema 2020, exact max-flow)"
# Exact flow runs one max-flow per input token on a graph of ~L·N² edges: bounded by this many edges
# (ViT-Ti/16 at 224 px: 12·197² = 466k; measured in benchmarks/methods_effects.py).
FLOW_MAX_EDGES = 600_000
# A model whose flow graph is ~15x smaller than ViT-Ti/16's (50 tokens at 224 px: 11·50²+50 edges, 50
# max-flows), named when a flow is refused for time.
FLOW_SMALLER_MODEL = "openai/clip-vit-base-patch32"
ATTENTION_FLOW = ("attention_flow",)  # the cache name of the (N,) exact attention flow from the summary
FLOW_PROGRESS_EVERY = 10  # max-flows between two progress lines
# Seconds a flow job may run (vizvit.service.jobs.Jobs(limits=...)): Attention flow on ViT-Ti/16 or ViT-B/16 takes
# 4-8 s on two busy cores since issue 52 (benchmarks/bench_flow.py; ~10 min in networkx before): 120 s is ten
# times that on a machine many times busier, and still a tenth of the old limit for a job holding a slot.
FLOW_LIMIT_S = 120.0


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


CLS_ROW = slice(0, 1)  # the source a [CLS] head reads: token 0's row of the last layer


def summary_rows(g: Geometry) -> slice:
    """The last layer's rows whose mean is the source, as rollout reads the family's summary: [CLS] (or
    the first summary token) its own row; a mean-pooling head (BEiT) the mean of the patch rows. SigLIP's
    probe is not a row (its weights are flow_inputs' `summary`)."""
    if g.summaries[0] == PATCH_MEAN:
        return slice(g.num_prefix_tokens, None)
    i = max(g.summary_index(), 0)
    return slice(i, i + 1)


def flow_inputs(att: torch.Tensor, summary: torch.Tensor | None = None,
                rows: slice = CLS_ROW) -> tuple[np.ndarray, np.ndarray]:
    """(L, H, N, N) attentions -> (res, top) for flow_graph: the mean of the last layer's `rows` (default
    [CLS], token 0; summary_rows), or `summary` (N,), the weights of a pooling probe above the last
    layer (SigLIP)."""
    res = residual_attention(att)
    if summary is None:
        return res[:-1], res[-1, rows].mean(0)  # one row: that row itself
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
                         cancel: Cancel = NEVER, speed: FlowSpeed = FLOW_SPEED,
                         rows: slice = CLS_ROW) -> Iterator[FlowStep]:
    """Attention flow from the summary ([CLS]; the mean of the last layer's `rows`, e.g. BEiT's patch
    rows; or SigLIP's probe with weights `summary` (N,)) to
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
    g = flow_graph(*flow_inputs(att, summary, rows))  # ~0.1 s on ViT-B/16's graph: numpy, nothing to check inside
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


def attention_flow(att: torch.Tensor, summary: torch.Tensor | None = None, cancel: Cancel = NEVER,
                   rows: slice = CLS_ROW) -> np.ndarray:
    """(L, H, N, N) -> (N,) float64 attention flow from the summary (see attention_flow_steps)."""
    for step in attention_flow_steps(att, summary, cancel=cancel, rows=rows):
        if step.flows is not None:  # the last step
            return step.flows
    raise RuntimeError("Attention flow ended without its flows.")  # only should_stop ends it early


# ------------------------------------------------------------------ on an analysis, through the cache
def flow_steps(a: Analysis, cache: Cache = no_cache, should_stop: Callable[[], bool] = lambda: False,
               cancel: Cancel = NEVER) -> Iterator[FlowStep]:
    """Exact attention flow from the summary, streamed (attention_flow_steps); the finished (N,) flows
    are cached under ATTENTION_FLOW. Pure maths on the cached attentions: it never holds the engine's
    lock (seconds on ViT-Ti, and every other user would wait)."""
    for step in attention_flow_steps(full_attentions(a), a.summary_weights, should_stop, cancel,
                                     rows=summary_rows(a.geometry)):
        if step.flows is not None:  # the last step: cached before it is handed on, in case the caller stops there
            cache(ATTENTION_FLOW, _computed(step.flows))
        yield step


def _computed(value: np.ndarray) -> Callable[[], np.ndarray]:
    """What the cache computes for a value the stream already has: that value."""
    return lambda: value


def flow_of(a: Analysis, cache: Cache = no_cache, cancel: Cancel = NEVER) -> np.ndarray:
    """(N,) attention flow of the analysis, from the cache or computed to the end (Cancelled: nothing cached)."""
    def run() -> np.ndarray:
        return attention_flow(full_attentions(a), a.summary_weights, cancel, summary_rows(a.geometry))
    return cache(ATTENTION_FLOW, run)


def flow_map(a: Analysis, cache: Cache = no_cache, cancel: Cancel = NEVER) -> np.ndarray:
    """(gh, gw) float32 attention flow over the patches (the input tokens after the prefix)."""
    g = a.geometry
    return flow_of(a, cache, cancel)[g.num_prefix_tokens:].reshape(g.grid).astype(np.float32)


PROGRESS = "Attention flow: "  # how every progress line of the job begins (the finished map's text does not)


def is_progress(text: str | None) -> bool:
    """Whether `text` is one of flow_progress's lines (the job still running when it was shown)."""
    return bool(text) and text.startswith(PROGRESS)  # type: ignore[union-attr]


def flow_progress(a: Analysis, cache: Cache = no_cache, cancel: Cancel = NEVER) -> Iterator[str]:
    """The flow as a job: a progress line before the graph and every FLOW_PROGRESS_EVERY max-flows; at its
    end the flows are cached (Method.progress)."""
    shape = tuple(a.attentions.shape)  # the first estimate: this process's measured speed, else the default's
    yield (f"{PROGRESS}building the attention graph, then {shape[-1]} max-flows: about "
           f"{duration(FLOW_SPEED.estimate(shape))}…")
    for step in flow_steps(a, cache, cancel=cancel):
        if step.flows is None and step.done % FLOW_PROGRESS_EVERY == 0:
            left = step.seconds / step.done * (step.total - step.done)
            yield (f"{PROGRESS}{step.done} of {step.total} max-flows in {step.seconds:.0f} s, about "
                   f"{left:.0f} s left. Stop ends it (nothing is kept until it is done).")


def _flow(vm: VitModel, a: Analysis, c: int | None, cache: Cache, seed: int, cancel: Cancel) -> np.ndarray:
    return flow_map(a, cache, cancel)


def flat_note(values: np.ndarray) -> str:
    """Max-flows share their bottlenecks: the map is nearly flat."""
    return (f" Every patch gets between {values.min():.4g} and {values.max():.4g} (uniform: {1 / values.size:.4g}): "
            "flow spreads over many paths, so its maps are flatter than rollout's.")


FLOW = Method(
    "attention flow", _flow, FLOW_METHOD, "Abnar & Zuidema 2020",
    "*Attention flow* (Abnar & Zuidema 2020): an exact max-flow from the summary ([CLS]; BEiT: the patch mean; "
    "SigLIP: its pooling probe) to each input token through the attention graph; not class-specific, "
    "5-10 s on a 12-layer model (one max-flow per token), streamed and "
    "stoppable.",
    menu=True, costly=True, limit_s=FLOW_LIMIT_S, cached_as=ATTENTION_FLOW,
    check=lambda a, limit_s: check_flow_time(tuple(a.attentions.shape), limit_s), progress=flow_progress,
    note=flat_note)
