"""Attention flow (vizvit/methods/flow.py) against Abnar & Zuidema's networkx code (ported here), constructed
cases with a known answer, and wired through the API and the Attention tab's job."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

import vizvit
from vizvit.errors import UserError
from vizvit.methods import flow, maps
from vizvit.readings import attention as ra, methods


# ------------------------------------------------------------------ attention flow
def abnar_get_adjmat(mat, input_tokens):
    """Port of `get_adjmat` in samiraabnar/attention_flow attention_graph_util.py (stored copy
    .ipynb_checkpoints/attention_graph_util-checkpoint.py, commit 3e53e4c1d3d16fe6c1f19e2ed44f2eebe0cbcb07)."""
    n_layers, length, _ = mat.shape
    adj_mat = np.zeros(((n_layers + 1) * length, (n_layers + 1) * length))
    labels_to_index = {}
    for k in np.arange(length):
        labels_to_index[str(k) + "_" + input_tokens[k]] = k
    for i in np.arange(1, n_layers + 1):
        for k_f in np.arange(length):
            index_from = (i) * length + k_f
            label = "L" + str(i) + "_" + str(k_f)
            labels_to_index[label] = index_from
            for k_t in np.arange(length):
                index_to = (i - 1) * length + k_t
                adj_mat[index_from][index_to] = mat[i - 1][k_f][k_t]
    return adj_mat, labels_to_index


def abnar_flow(att: np.ndarray) -> np.ndarray:
    """Abnar & Zuidema's attention flow of output token 0 ([CLS]) to every input token, as their
    notebooks run it: the residual-adjusted attention (mean over heads + I, rows normalised),
    get_adjmat, the graph with 'capacity' set per edge (draw_attention_graph; nx.from_numpy_matrix is
    from_numpy_array in networkx 3) and compute_node_flow (edmonds_karp per input token, normalised).
    att: (L, H, N, N) numpy."""
    res_att_mat = att.sum(axis=1) / att.shape[1]
    res_att_mat = res_att_mat + np.eye(res_att_mat.shape[1])[None, ...]
    res_att_mat = res_att_mat / res_att_mat.sum(axis=-1)[..., None]
    n_layers, length = res_att_mat.shape[:2]
    tokens = [f"t{k}" for k in range(length)]
    adj, labels_to_index = abnar_get_adjmat(res_att_mat, tokens)
    G = nx.from_numpy_array(adj, create_using=nx.DiGraph())
    nx.set_edge_attributes(G, {(i, j): adj[i, j] for i, j in G.edges()}, "capacity")
    input_nodes = [k for k in labels_to_index if labels_to_index[k] < length]
    u = labels_to_index[f"L{n_layers}_0"]
    pre_layer = n_layers - 1
    flow_values = np.zeros(len(labels_to_index))
    for key in input_nodes:
        v = labels_to_index[key]
        flow_values[pre_layer * length + v] = nx.maximum_flow_value(G, u, v, flow_func=nx.algorithms.flow.edmonds_karp)
    flow_values /= flow_values.sum()
    return flow_values[pre_layer * length: pre_layer * length + length]


def constructed_two_layers() -> torch.Tensor:
    """2 layers, 1 head, 5 tokens, where each bottleneck is plain to see (rows sum to 1).

    With Â = (A + I)/2: Â_2[0] = (.5, .3, .2, 0, 0), Â_1[0] = (.5, 0, 0, 0, .5),
    Â_1[1] = (0, .5, .1, .4, 0), Â_1[2] = (0, 0, 1, 0, 0). Max-flow from [CLS] after layer 2 to input
    j is the sum over middle tokens k of min(Â_2[0, k], Â_1[k, j]): (.5, .3, .1 + .2, .3, .5), total
    1.9. Rollout (the product) gives (.25, .15, .23, .12, .25): flow takes the min, not the product."""
    a = torch.full((2, 1, 5, 5), 0.2)
    a[1, 0, 0] = torch.tensor([0, .6, .4, 0, 0])
    a[0, 0, 0] = torch.tensor([0, 0, 0, 0, 1.])
    a[0, 0, 1] = torch.tensor([0, 0, .2, .8, 0])
    a[0, 0, 2] = torch.tensor([0, 0, 1., 0, 0])
    return a


def test_attention_flow_equals_the_known_answer_and_networkx_on_two_layers():
    att = constructed_two_layers()
    want = np.array([.5, .3, .3, .3, .5]) / 1.9
    np.testing.assert_allclose(flow.attention_flow(att), want, atol=1e-12)
    np.testing.assert_allclose(abnar_flow(att.numpy().astype(np.float64)), want, atol=1e-12)
    rollout = np.array([.25, .15, .23, .12, .25])
    from vizvit.methods.maths import rollout_stack
    np.testing.assert_allclose(rollout_stack(att, "mean", 0.0, 1)[-1, 0].numpy(), rollout, atol=1e-6)


def test_attention_flow_on_a_tiny_vit_equals_abnars_networkx_code(tiny32, cat):
    a = vizvit.analyze(tiny32, cat)
    want = abnar_flow(a.attentions.double().numpy())
    np.testing.assert_allclose(flow.attention_flow(a.attentions), want, rtol=1e-9, atol=1e-12)
    g = tiny32.geometry
    np.testing.assert_allclose(flow.flow_map(a), want[1:].reshape(g.grid), rtol=1e-6)


def test_attention_flow_streams_stops_and_refuses_a_graph_too_large():
    att = constructed_two_layers()
    steps = list(flow.attention_flow_steps(att))
    assert [s.done for s in steps[:-1]] == list(range(1, 6)) and steps[-1].flows is not None
    assert all(s.flows is None for s in steps[:-1])
    calls = iter(range(100))
    stopped = list(flow.attention_flow_steps(att, should_stop=lambda: next(calls) >= 3))
    assert len(stopped) == 3 and all(s.flows is None for s in stopped)
    with pytest.raises(UserError, match="edges"):
        flow.check_flow_size((13, 3, 300, 300))


def networkx_flow_values(att: torch.Tensor, tokens: list[int], summary: np.ndarray | slice | None = None) -> np.ndarray:
    """The max-flow values (not normalised) from the summary to a few input tokens, in networkx's pure-Python
    float max-flow: vizvit's own networkx code before issue 52 (one layered graph, zero capacities
    dropped, preflow-push on one residual network), kept here as the reference. Abnar's loop above
    runs every token on the full adjacency graph: minutes on ViT-Ti, so it only checks the small
    models. att: (L, H, N, N); summary: SigLIP's probe weights (N,) above every layer, the rows of the
    last layer a mean-pooling head averages (BEiT: the patch rows), or None for [CLS] after the last layer."""
    m = att.double().numpy().mean(1) + np.eye(att.shape[-1])
    res = m / m.sum(-1, keepdims=True)  # (L, N, N) Â, rows = queries
    if isinstance(summary, slice):  # a mean-pooling head: the mean of those rows of the last layer
        top, below = res[-1, summary].mean(0), res[:-1]
    else:
        top, below = (res[-1, 0], res[:-1]) if summary is None else (np.asarray(summary, np.float64), res)
    K = below.shape[0]
    g = nx.DiGraph()
    for j in np.nonzero(top)[0]:
        g.add_edge("source", (K, int(j)), capacity=float(top[j]))
    for k in range(K):
        for i, j in zip(*np.nonzero(below[k])):
            g.add_edge((k + 1, int(i)), (k, int(j)), capacity=float(below[k, i, j]))
    residual = nx.algorithms.flow.build_residual_network(g, "capacity")
    return np.array([nx.algorithms.flow.preflow_push(g, "source", (0, j), residual=residual, value_only=True)
                     .graph["flow_value"] if (0, j) in g else 0.0 for j in tokens])


def c_flow_values(att: torch.Tensor, tokens: list[int], summary: torch.Tensor | None = None) -> np.ndarray:
    g = flow.flow_graph(*flow.flow_inputs(att, summary))
    return np.array([flow.flow_value(g, j) for j in tokens])


@pytest.mark.parametrize("seed", range(6))
def test_the_c_max_flow_equals_networkx_on_random_small_graphs(seed):
    """Random attentions with many exact zeros (edges left out), a few layers and tokens, [CLS] or a
    probe on top: every token's flow equals networkx's float max-flow, normalised within 1e-4 (and
    raw within 1e-7: the integer capacities' rounding, 2**-31 an edge)."""
    gen = torch.Generator().manual_seed(seed)
    L, H, N = 2 + seed % 3, 2, 4 + seed
    att = torch.rand(L, H, N, N, generator=gen) ** 3
    att[torch.rand(L, H, N, N, generator=gen) < 0.5] = 0  # sparse: zero capacities, cuts with few edges
    att = att / att.sum(-1, keepdim=True).clamp(min=1e-9)
    summary = torch.softmax(torch.randn(N, generator=gen) * 3, 0).double() if seed % 2 else None
    tokens = list(range(N))
    want = networkx_flow_values(att, tokens, None if summary is None else summary.numpy())
    got = c_flow_values(att, tokens, summary)
    np.testing.assert_allclose(got, want, atol=1e-7)
    np.testing.assert_allclose(flow.attention_flow(att, summary), want / want.sum(), atol=1e-4)


def test_the_integer_capacities_keep_a_known_answer_that_does_not_round():
    """Capacities 1/3 and 1/7 are no multiples of 2**-30: the integer max-flow is off by up to 2**-31
    an edge, the cut's float capacity is not. One layer of 3 tokens: source -> (1, k) at top[k], then
    (1, k) -> (0, j) at res[0, k, j]: flow to j = Σ_k min(top[k], res[0, k, j])."""
    top = np.array([1 / 3, 1 / 3, 1 / 3])
    res = np.array([[[1 / 7, 6 / 7, 0], [0, 1 / 3, 2 / 3], [1 / 2, 1 / 2, 0]]])
    g = flow.flow_graph(res, top)
    want = [1 / 7 + 0 + 1 / 3, 1 / 3 + 1 / 3 + 1 / 3, 0 + 1 / 3 + 0]
    np.testing.assert_allclose([flow.flow_value(g, j) for j in range(3)], want, rtol=0, atol=1e-15)


@pytest.mark.slow
def test_the_c_max_flow_equals_networkx_on_the_trained_vit_ti_for_a_few_patches(trained, cat):
    """The full graph of a trained ViT-Ti (427k edges): a handful of output patches against networkx
    (each ~3 s there; all 197 tokens would take ~10 min). Raw values within 1e-6, and normalised by
    the C path's full sum within 1e-4 of networkx's values by that sum."""
    a = vizvit.analyze(trained, cat)
    tokens = [0, 1, 45, 100, 196]  # [CLS], the corner patch, two inner ones, the last patch
    want = networkx_flow_values(a.attentions, tokens)
    np.testing.assert_allclose(c_flow_values(a.attentions, tokens), want, atol=1e-6)
    flows = flow.attention_flow(a.attentions)  # (N,) normalised, the product path
    total = c_flow_values(a.attentions, list(range(a.attentions.shape[-1]))).sum()
    np.testing.assert_allclose(flows[tokens], want / total, atol=1e-4)


@pytest.mark.slow
def test_the_c_max_flow_equals_networkx_on_a_random_vit_b16_for_a_few_patches(cat):
    """Random ViT-B/16 weights (12 heads: flatter attention than the trained Ti's), three patches."""
    vm = vizvit.load_model("random:vit-base-patch16-224", device="cpu")
    a = vizvit.analyze(vm, cat)
    tokens = [3, 98, 150]
    np.testing.assert_allclose(c_flow_values(a.attentions, tokens), networkx_flow_values(a.attentions, tokens),
                               atol=1e-6)


# ------------------------------------------------------------------ wired: the API, the tab, the contest
def test_the_api_and_the_attention_tab_give_every_method_and_flow_through_the_cache(tiny32, cat):
    from tiny import EXAMPLES

    from vizvit.api import PublicApi
    from vizvit.methods.flow import ATTENTION_FLOW
    from vizvit.session import PhotoKey, Workbench
    from vizvit.views import attention as ap

    wb = Workbench(device="cpu")
    wb.add_model(tiny32)
    api = PublicApi(wb)
    path = str(EXAMPLES / "chelsea.jpg")
    ph = wb.handle(PhotoKey(tiny32.id, wb.add_photo(path)))
    a = ph.analysis()
    for method in ap.EXPLAIN_METHODS[:-1]:
        r = api.relevance(path, tiny32.id, 3, method)
        want = maps.relevance_map(tiny32, a, 3) if method == "class relevance" else \
            methods.class_map(method, tiny32, a, 3)
        np.testing.assert_allclose(np.array(r["map"]), want, atol=1e-6)
        img, text = ap.explain(ph, method, 3, ra.AttnParams())
        assert img.ndim == 3 and f"**{method}**" in text or method == "class relevance"
    with pytest.raises(UserError, match="job_progress"):
        ap.explain(ph, "attention flow", None, ra.AttnParams())  # a job: never blocks a plain event
    steps = list(ap.job_progress(ph, "attention flow", ra.AttnParams()))
    assert steps[0][0] is None and steps[-1][0] is not None and ph.peek(ATTENTION_FLOW) is not None
    assert len(list(ap.job_progress(ph, "attention flow", ra.AttnParams()))) == 1  # cached now: the map at once
    r = api.relevance(path, tiny32.id, -1, "attention flow")
    np.testing.assert_allclose(np.array(r["map"]), abnar_flow(a.attentions.double().numpy())[1:].reshape(7, 7),
                               atol=1e-6)
    with pytest.raises(UserError, match="method must be one of"):
        api.relevance(path, tiny32.id, -1, "SmoothGrad")


def test_the_flow_map_is_the_flow_over_the_patches_in_grid_order(tiny16, cat, monkeypatch):
    analysis = vizvit.analyze(tiny16, cat)
    g = analysis.geometry
    n = g.num_prefix_tokens + g.num_patches
    flows = np.arange(n, dtype=np.float64)  # token t's flow = t: its place in the map shows
    monkeypatch.setattr(flow, "attention_flow", lambda att, w, cancel, rows: flows)
    m = flow.flow_map(analysis)
    assert m.shape == g.grid and m.dtype == np.float32
    assert m[0, 0] == g.num_prefix_tokens and m[0, 1] == g.num_prefix_tokens + 1
    assert m[1, 0] == g.num_prefix_tokens + g.grid[1]  # row-major patches


def test_a_mean_pooling_head_flows_from_the_patch_mean_that_rollout_reads(families, cat):
    """BEiT's head reads the mean of the patch tokens, not [CLS] (an audit: flow alone started from [CLS],
    ranked in the contest beside maps that start from the patch mean): its flow's source is the mean of
    the last layer's patch rows, as networkx computes it from that source."""
    vm = families["beit"]
    a = vizvit.analyze(vm, cat)
    g = a.geometry
    n = a.attentions.shape[-1]
    want = networkx_flow_values(a.attentions, list(range(n)), slice(g.num_prefix_tokens, None))
    got = flow.flow_map(a)
    np.testing.assert_allclose(got.ravel(), (want / want.sum())[g.num_prefix_tokens:], atol=1e-4)
    from_cls = networkx_flow_values(a.attentions, list(range(n)))
    assert np.abs(got.ravel() - (from_cls / from_cls.sum())[g.num_prefix_tokens:]).max() > 1e-4  # not [CLS]'s
