"""The explanation methods of issue 32 against their authors' code, ported here as plain functions
(repository, path and commit in each port's docstring; pip could not install the packages
themselves without replacing torch: docs/methods.md), or against constructed cases with a known
answer. Where vizvit follows another convention, the test checks the documented difference.
LeGrad is also held to torchcam's own LeGrad (the last section, merged from tests/test_explain_torchcam.py).
"""

from __future__ import annotations

import math

import cv2
import networkx as nx
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import vizvit
from vizvit import engine, explain, maps
from vizvit.readings import methods
from vizvit.errors import UserError
from synthetic import random_attention


@pytest.fixture(scope="module")
def tiny32(tiny_dirs) -> vizvit.VitModel:
    """The tiny ViT with a 7×7 grid (N = 50): small enough for the authors' slow max-flow loop."""
    return vizvit.load_model(str(tiny_dirs["p32"]), device="cpu")


def _attentions_and_grads(vm, a, index):
    """The attentions (L, H, N, N) and d logit / d attention, taken as the authors' hooks see them:
    a plain backward with the gradients kept on the attention maps (retain_grad)."""
    with torch.inference_mode(False), torch.enable_grad():
        pixels = a.pixel_values.detach().clone().requires_grad_(True)
        out = vm.model(pixels, output_attentions=True)
        for t in out.attentions:
            t.retain_grad()
        out.logits[0, index].backward()
    return [t.detach() for t in out.attentions], [t.grad for t in out.attentions]


# ------------------------------------------------------------------ vit-explain: gradient rollout
def vit_explain_grad_rollout(attentions, gradients, discard_ratio, keepdim=False):
    """Port of `grad_rollout` in jacobgil/vit-explain vit_grad_rollout.py (commit
    311da9a350607c518fe6b3e35de13f24f59a7ddf). attentions, gradients: per layer (1, H, N, N).
    keepdim=True is the one-word fix of its row normalisation (issue #16). Returns mask / max."""
    result = torch.eye(attentions[0].size(-1))
    with torch.no_grad():
        for attention, grad in zip(attentions, gradients):
            weights = grad
            attention_heads_fused = (attention * weights).mean(axis=1)
            attention_heads_fused[attention_heads_fused < 0] = 0
            flat = attention_heads_fused.view(attention_heads_fused.size(0), -1)
            _, indices = flat.topk(int(flat.size(-1) * discard_ratio), -1, False)
            flat[0, indices] = 0
            I = torch.eye(attention_heads_fused.size(-1))  # noqa: E741 (as published)
            a = (attention_heads_fused + 1.0 * I) / 2
            a = a / a.sum(dim=-1, keepdim=True) if keepdim else a / a.sum(dim=-1)
            result = torch.matmul(a, result)
    mask = result[0, 0, 1:]
    width = int(mask.size(-1) ** 0.5)
    mask = mask.reshape(width, width).numpy()
    return mask / np.max(mask)


@pytest.mark.parametrize("discard", [0.0, 0.9])
def test_grad_rollout_equals_vit_explain_with_its_two_fixes_on_random_tensors(geom, discard):
    att = random_attention(geom, seed=3)
    grads = torch.randn(att.shape, generator=torch.Generator().manual_seed(4))
    mine = A_map(explain.grad_rollout(att, grads, discard), geom)
    want = vit_explain_grad_rollout([t[None] for t in att], [t[None] for t in grads], discard, keepdim=True)
    np.testing.assert_allclose(mine / mine.max(), want, rtol=1e-4, atol=1e-6)


def A_map(r: torch.Tensor, g) -> np.ndarray:
    return r[0, g.num_prefix_tokens:].reshape(g.grid).numpy()


def test_grad_rollout_on_a_tiny_vit_equals_vit_explain_and_differs_from_it_as_published(tiny32, cat):
    """vit-explain collects the gradients with backward hooks, which fire last layer first (its
    issue #6), and divides by row sums without keepdim: vizvit keeps layer order and row sums."""
    a = vizvit.analyze(tiny32, cat)
    index = a.top5[1].index
    att, grads = _attentions_and_grads(tiny32, a, index)
    mine = methods.class_map("gradient rollout", tiny32, a, index)
    fixed = vit_explain_grad_rollout(att, grads, explain.GRAD_ROLLOUT_DISCARD, keepdim=True)
    np.testing.assert_allclose(mine / mine.max(), fixed, rtol=1e-4, atol=1e-6)
    published = vit_explain_grad_rollout(att, grads[::-1], explain.GRAD_ROLLOUT_DISCARD)
    assert np.abs(published - fixed).max() > 1e-3


# ------------------------------------------------------------------ pytorch-grad-cam
def gradcam_scale_cam_image(cam, target_size=None):
    """Port of `scale_cam_image` in jacobgil/pytorch-grad-cam pytorch_grad_cam/utils/image.py
    (grad-cam 1.5.7 on PyPI), 2-D branch."""
    result = []
    for img in cam:
        img = img - np.min(img)
        img = img / (1e-7 + np.max(img))
        if target_size is not None:
            img = cv2.resize(np.float32(img), target_size)
        result.append(img)
    return np.float32(result)


def gradcam_vit_reshape_transform(tensor, height=14, width=14):
    """Port of `vit_reshape_transform` (pytorch_grad_cam/utils/reshape_transforms.py, 1.5.7)."""
    result = tensor[:, 1:, :].reshape(tensor.size(0), height, width, tensor.size(2))
    return result.transpose(2, 3).transpose(1, 2)


def pytorch_grad_cam(model_logits, pixels, target_layer, category, grid):
    """GradCAM(model, [target_layer], reshape_transform)(pixels, [ClassifierOutputTarget(category)])
    of pytorch-grad-cam 1.5.7, ported: ActivationsAndGradients (a forward hook and a tensor hook),
    GradCAM.get_cam_weights (mean over the spatial axes), BaseCAM.get_cam_image, relu, scaling
    to the input size, aggregate_multi_layers. model_logits(pixels) -> (1, C)."""
    acts, grads = [], []
    reshape = lambda t: gradcam_vit_reshape_transform(t, *grid)  # noqa: E731

    def save(_m, _i, output):
        acts.append(reshape(output).cpu().detach())
        output.register_hook(lambda g: grads.insert(0, reshape(g).cpu().detach()))

    handle = target_layer.register_forward_hook(save)
    try:
        with torch.inference_mode(False), torch.enable_grad():
            x = pixels.detach().clone().requires_grad_(True)  # compute_input_gradient: frozen weights
            outputs = model_logits(x)
            loss = sum([o[category] for o in outputs])  # ClassifierOutputTarget
            loss.backward(retain_graph=True)
    finally:
        handle.remove()
    activations, gradients = acts[0].numpy(), grads[0].numpy()
    weights = np.mean(gradients, axis=(2, 3))
    cam = (weights[:, :, None, None] * activations).sum(axis=1)
    cam = np.maximum(cam, 0)
    scaled = gradcam_scale_cam_image(cam, (x.size(-1), x.size(-2)))
    per_layer = np.maximum(np.concatenate([scaled[:, None, :]], axis=1), 0)
    return gradcam_scale_cam_image(np.mean(per_layer, axis=1))


def as_pytorch_grad_cam_shows_it(m: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The documented difference: pytorch-grad-cam min-max scales the map and resizes it to the input."""
    return gradcam_scale_cam_image(gradcam_scale_cam_image(np.maximum(m, 0)[None], size))


def test_gradcam_on_a_tiny_vit_equals_pytorch_grad_cam(tiny32, cat):
    a = vizvit.analyze(tiny32, cat)
    index = a.top5[1].index
    g = tiny32.geometry
    want = pytorch_grad_cam(lambda x: tiny32.model(x).logits, a.pixel_values,
                            tiny32.model.vit.layers[-1].layernorm_before, index, g.grid)
    mine = methods.class_map("Grad-CAM", tiny32, a, index)
    assert mine.shape == g.grid and mine.min() >= 0
    np.testing.assert_allclose(as_pytorch_grad_cam_shows_it(mine, (224, 224)), want, atol=2e-4)


class _ToGrid(torch.nn.Module):
    """(B, N, D) tokens -> (B, D, gh, gw) patch grid, as pytorch-grad-cam's reshape_transform: a
    module, so captum can take a layer's gradient there."""

    def __init__(self, prefix: int, grid: tuple[int, int]):
        super().__init__()
        self.prefix, self.grid = prefix, grid

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, self.prefix:].transpose(1, 2).reshape(x.shape[0], x.shape[2], *self.grid)


def test_gradcam_on_a_tiny_vit_and_deit_equals_captums_layer_grad_cam(tiny32, families, cat):
    """The authors of captum (0.9.0, installed as a test dependency) on the same layer: its
    LayerGradCam pools the gradient over the dimensions after the channels, so it gets the patch
    tokens as a (B, D, gh, gw) grid through an identity-valued detour of the layernorm's output."""
    from captum.attr import LayerGradCam

    for vm in (tiny32, families["deit"]):
        a = vizvit.analyze(vm, cat)
        index = a.top5[1].index
        g = vm.geometry
        to_grid = _ToGrid(g.num_prefix_tokens, g.grid)

        def detour(_m, _i, out):  # the same values, now through to_grid's output
            grid = to_grid(out)
            return torch.cat([out[:, :g.num_prefix_tokens], grid.flatten(2).transpose(1, 2)], 1)

        handle = vm.family.attention_norm(vm.vit, -1).register_forward_hook(detour)
        try:
            with torch.inference_mode(False), torch.enable_grad():
                want = LayerGradCam(lambda x: vm.model(x).logits, to_grid).attribute(
                    a.pixel_values.detach().clone(), target=index, relu_attributions=True)
        finally:
            handle.remove()
        np.testing.assert_allclose(methods.class_map("Grad-CAM", vm, a, index), want[0, 0].detach().numpy(),
                                   rtol=1e-4, atol=1e-7)


def test_gradcam_on_a_tiny_clip_equals_pytorch_grad_cam(towers, cat):
    vm = towers["clip32"]
    a = vizvit.analyze(vm, cat)
    index = a.top5[1].index
    head = vm.zero_shot

    def logits(x):  # the typed labels' logits, scale·cos(image, text), as a classifier's output
        emb = vm.model.visual_projection(vm.model.vision_model(x).pooler_output)
        emb = emb / emb.norm(dim=-1, keepdim=True)
        return head.scale * emb @ head.text_embeds.T

    want = pytorch_grad_cam(logits, a.pixel_values, vm.model.vision_model.encoder.layers[-1].layer_norm1, index,
                            vm.geometry.grid)
    mine = methods.class_map("Grad-CAM", vm, a, index)
    np.testing.assert_allclose(as_pytorch_grad_cam_shows_it(mine, (224, 224)), want, atol=2e-4)


# ------------------------------------------------------------------ LeGrad
def legrad_min_max(logits):
    """Port of `min_max` in WalBouss/LeGrad legrad/utils.py (commit c5c7b20d3bfc20169471f4a123abd0636c6a16e1)."""
    B, num_prompt = logits.shape[:2]
    logits_min = logits.reshape(B, num_prompt, -1).min(dim=-1, keepdim=True)[0].unsqueeze(-1)
    logits_max = logits.reshape(B, num_prompt, -1).max(dim=-1, keepdim=True)[0].unsqueeze(-1)
    return (logits - logits_min) / (logits_max - logits_min)


def legrad_loop(feats, attn_maps, score, starting_depth, patch_size, query=None):
    """The loop of `compute_legrad_clip` (query None: mean over every query) and of
    `compute_legrad_siglip` without its correction (query 0: the pooling probe's row) in WalBouss/LeGrad
    legrad/wrapper.py (commit 8c2ca901a0dd185fba22314c32fa7857e24c5425). feats: each block's output
    (1, N, D); attn_maps: the attention its score is differentiated by; score(feat) -> (1, 1)."""
    n = attn_maps[-1].shape[-1]
    w = h = int(math.sqrt(n if query is not None else n - 1))
    accum_expl_map = 0
    for layer in range(starting_depth, len(feats)):
        sim = score(feats[layer], layer)
        one_hot = torch.sum(sim)
        grad = torch.autograd.grad(one_hot, [attn_maps[layer]], retain_graph=True, create_graph=True)[0]
        grad = torch.clamp(grad, min=0.)
        if query is None:
            image_relevance = grad.mean(dim=1).mean(dim=1)[:, 1:]
        else:
            image_relevance = grad.mean(dim=1)[:, query]
        expl_map = image_relevance.reshape(1, 1, w, h)
        accum_expl_map += expl_map
    return F.interpolate(legrad_min_max(accum_expl_map), scale_factor=patch_size, mode="bilinear")


def as_legrad_shows_it(m: np.ndarray, patch: int) -> torch.Tensor:
    """The documented difference: LeGrad min-max scales the sum and upsamples it by the patch size."""
    return F.interpolate(legrad_min_max(torch.from_numpy(m)[None, None]), scale_factor=patch, mode="bilinear")


def test_legrad_on_a_tiny_clip_equals_compute_legrad_clip(towers, cat):
    vm = towers["clip32"]
    a = vizvit.analyze(vm, cat)
    index = a.top5[1].index
    text = vm.zero_shot.text_embeds[index:index + 1]  # normalised, as LeGrad's text_embedding
    vision, proj = vm.model.vision_model, vm.model.visual_projection
    with torch.inference_mode(False), torch.enable_grad():
        out = vision(a.pixel_values.detach().clone().requires_grad_(True), output_attentions=True,
                     output_hidden_states=True)

        def score(feat, _layer):  # ln_post(mean over tokens) @ proj, normalised; text @ feat.T
            f = F.normalize(proj(vision.post_layernorm(feat.mean(dim=1))), dim=-1)
            return text @ f.transpose(-1, -2)

        L = len(out.attentions)
        want = legrad_loop(list(out.hidden_states[1:]), list(out.attentions), score, L - explain.LEGRAD_LAYERS, 32)
    mine = methods.class_map("LeGrad", vm, a, index)
    torch.testing.assert_close(as_legrad_shows_it(mine, 32), want, atol=1e-5, rtol=1e-4)


def legrad_attentional_pooler(head, x):
    """`hooked_attentional_pooler_timm_forward` of LeGrad legrad/utils.py (same commit) over the
    weights of transformers' SiglipMultiheadAttentionPoolingHead (one latent, no pos_embed, no q/k
    norm): returns the pooled (1, D) and the probe's attention probabilities (1, H, 1, N)."""
    mha = head.attention
    B, N, C = x.shape
    num_heads, head_dim = mha.num_heads, C // mha.num_heads
    wq, wk, wv = mha.in_proj_weight.chunk(3)
    bq, bk, bv = mha.in_proj_bias.chunk(3)
    q_latent = head.probe.expand(B, -1, -1)
    q = F.linear(q_latent, wq, bq).reshape(B, 1, num_heads, head_dim).transpose(1, 2)
    kv = torch.cat([F.linear(x, wk, bk), F.linear(x, wv, bv)], -1)
    kv = kv.reshape(B, N, 2, num_heads, head_dim).permute(2, 0, 3, 1, 4)
    k, v = kv.unbind(0)
    q = q * head_dim ** -0.5
    attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
    y = (attn @ v).transpose(1, 2).reshape(B, 1, C)
    y = mha.out_proj(y)
    y = y + head.mlp(head.layernorm(y))
    return y[:, 0], attn


def test_legrad_on_a_tiny_siglip_equals_compute_legrad_siglip_without_its_correction(towers, cat):
    vm = towers["siglip32"]
    a = vizvit.analyze(vm, cat)
    index = a.top5[1].index
    text = vm.zero_shot.text_embeds[index:index + 1]
    vision = vm.model.vision_model
    with torch.inference_mode(False), torch.enable_grad():
        out = vision(a.pixel_values.detach().clone().requires_grad_(True), output_hidden_states=True)
        feats = list(out.hidden_states[1:])
        pooled = [legrad_attentional_pooler(vision.head, f) for f in feats]  # the pooler per layer, as LeGrad

        def score(_feat, layer):
            return text @ F.normalize(pooled[layer][0], dim=-1).transpose(-1, -2)

        L = len(feats)
        want = legrad_loop(feats, [p[1] for p in pooled], score, L - explain.LEGRAD_LAYERS, 32, query=0)
    mine = methods.class_map("LeGrad", vm, a, index)
    torch.testing.assert_close(as_legrad_shows_it(mine, 32), want, atol=1e-5, rtol=1e-4)


def test_legrad_on_a_tiny_vit_reads_each_layer_through_the_models_own_head(tiny32, cat):
    """LeGrad's code has no classifier path: vizvit's rule is its loop with each layer's score the
    class logit of the model's head on that layer's [CLS] (final layernorm, then the classifier)."""
    vm = tiny32
    a = vizvit.analyze(vm, cat)
    index = a.top5[1].index
    with torch.inference_mode(False), torch.enable_grad():
        out = vm.model(a.pixel_values.detach().clone().requires_grad_(True), output_attentions=True,
                       output_hidden_states=True)

        def score(feat, _layer):
            return vm.model.classifier(vm.model.vit.layernorm(feat)[:, 0])[:, index]

        L = len(out.attentions)
        want = legrad_loop(list(out.hidden_states[1:]), list(out.attentions), score, L - explain.LEGRAD_LAYERS, 32)
    mine = methods.class_map("LeGrad", vm, a, index)
    torch.testing.assert_close(as_legrad_shows_it(mine, 32), want, atol=1e-5, rtol=1e-4)


def test_legrad_backward_runs_once_per_layer_from_that_layers_score(tiny32, cat):
    """A constructed check of what "that layer's score" means: the LeGrad gradient of the last layer
    is d logit / d A_L, the same number Chefer's backward gives for the last layer."""
    a = vizvit.analyze(tiny32, cat)
    index = a.top5[0].index
    L = tiny32.geometry.num_layers
    (last,) = engine.layer_score_gradients(tiny32, a.pixel_values, index, [L - 1])
    _, grads = engine.attention_gradients(tiny32, a.pixel_values, index)
    torch.testing.assert_close(last, grads[-1].float(), atol=1e-6, rtol=1e-5)


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
    np.testing.assert_allclose(explain.attention_flow(att), want, atol=1e-12)
    np.testing.assert_allclose(abnar_flow(att.numpy().astype(np.float64)), want, atol=1e-12)
    rollout = np.array([.25, .15, .23, .12, .25])
    from vizvit.attention import rollout_stack
    np.testing.assert_allclose(rollout_stack(att, "mean", 0.0, 1)[-1, 0].numpy(), rollout, atol=1e-6)


def test_attention_flow_on_a_tiny_vit_equals_abnars_networkx_code(tiny32, cat):
    a = vizvit.analyze(tiny32, cat)
    want = abnar_flow(a.attentions.double().numpy())
    np.testing.assert_allclose(explain.attention_flow(a.attentions), want, rtol=1e-9, atol=1e-12)
    g = tiny32.geometry
    np.testing.assert_allclose(maps.flow_map(a), want[1:].reshape(g.grid), rtol=1e-6)


def test_attention_flow_streams_stops_and_refuses_a_graph_too_large():
    att = constructed_two_layers()
    steps = list(explain.attention_flow_steps(att))
    assert [s.done for s in steps[:-1]] == list(range(1, 6)) and steps[-1].flows is not None
    assert all(s.flows is None for s in steps[:-1])
    calls = iter(range(100))
    stopped = list(explain.attention_flow_steps(att, should_stop=lambda: next(calls) >= 3))
    assert len(stopped) == 3 and all(s.flows is None for s in stopped)
    with pytest.raises(UserError, match="edges"):
        explain.check_flow_size((13, 3, 300, 300))


def networkx_flow_values(att: torch.Tensor, tokens: list[int], summary: np.ndarray | None = None) -> np.ndarray:
    """The max-flow values (not normalised) from the summary to a few input tokens, in networkx's pure-Python
    float max-flow: vizvit's own networkx code before issue 52 (one layered graph, zero capacities
    dropped, preflow-push on one residual network), kept here as the reference. Abnar's loop above
    runs every token on the full adjacency graph: minutes on ViT-Ti, so it only checks the small
    models. att: (L, H, N, N); summary: SigLIP's probe weights (N,) above every layer, or None for
    [CLS] after the last layer."""
    m = att.double().numpy().mean(1) + np.eye(att.shape[-1])
    res = m / m.sum(-1, keepdims=True)  # (L, N, N) Â, rows = queries
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
    g = explain.flow_graph(*explain.flow_inputs(att, summary))
    return np.array([explain.flow_value(g, j) for j in tokens])


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
    np.testing.assert_allclose(explain.attention_flow(att, summary), want / want.sum(), atol=1e-4)


def test_the_integer_capacities_keep_a_known_answer_that_does_not_round():
    """Capacities 1/3 and 1/7 are no multiples of 2**-30: the integer max-flow is off by up to 2**-31
    an edge, the cut's float capacity is not. One layer of 3 tokens: source -> (1, k) at top[k], then
    (1, k) -> (0, j) at res[0, k, j]: flow to j = Σ_k min(top[k], res[0, k, j])."""
    top = np.array([1 / 3, 1 / 3, 1 / 3])
    res = np.array([[[1 / 7, 6 / 7, 0], [0, 1 / 3, 2 / 3], [1 / 2, 1 / 2, 0]]])
    g = explain.flow_graph(res, top)
    want = [1 / 7 + 0 + 1 / 3, 1 / 3 + 1 / 3 + 1 / 3, 0 + 1 / 3 + 0]
    np.testing.assert_allclose([explain.flow_value(g, j) for j in range(3)], want, rtol=0, atol=1e-15)


@pytest.mark.slow
def test_the_c_max_flow_equals_networkx_on_the_trained_vit_ti_for_a_few_patches(trained, cat):
    """The full graph of a trained ViT-Ti (427k edges): a handful of output patches against networkx
    (each ~3 s there; all 197 tokens would take ~10 min). Raw values within 1e-6, and normalised by
    the C path's full sum within 1e-4 of networkx's values by that sum."""
    a = vizvit.analyze(trained, cat)
    tokens = [0, 1, 45, 100, 196]  # [CLS], the corner patch, two inner ones, the last patch
    want = networkx_flow_values(a.attentions, tokens)
    np.testing.assert_allclose(c_flow_values(a.attentions, tokens), want, atol=1e-6)
    flows = explain.attention_flow(a.attentions)  # (N,) normalised, the product path
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
    from vizvit.maps import ATTENTION_FLOW
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
        img, text = ap.explain(ph, method, 3, ap.AttnParams())
        assert img.ndim == 3 and f"**{method}**" in text or method == "class relevance"
    with pytest.raises(UserError, match="flow_progress"):
        ap.explain(ph, "attention flow", None, ap.AttnParams())  # a job: never blocks a plain event
    steps = list(ap.flow_progress(ph, ap.AttnParams()))
    assert steps[0][0] is None and steps[-1][0] is not None and ph.peek(ATTENTION_FLOW) is not None
    assert len(list(ap.flow_progress(ph, ap.AttnParams()))) == 1  # cached now: the map at once
    r = api.relevance(path, tiny32.id, -1, "attention flow")
    np.testing.assert_allclose(np.array(r["map"]), abnar_flow(a.attentions.double().numpy())[1:].reshape(7, 7),
                               atol=1e-6)
    with pytest.raises(UserError, match="method must be one of"):
        api.relevance(path, tiny32.id, -1, "SmoothGrad")


# ---- From tests/test_explain_torchcam.py (merged, issue 44) ------------------------------------
# LeGrad against torchcam 0.5.0's own `torchcam.methods.LeGrad` (a test dependency, installed with
# --no-deps: requirements-nodeps.txt, scripts/setup --dev). Its import needs neither torchvision nor
# open_clip; its built-in readout is for torchvision's VisionTransformer
# (`heads(encoder.ln(tokens.mean(1)))`: the MEAN of every token) and its hooks want each block's
# `self_attention` to be a batch-first nn.MultiheadAttention. So the test rebuilds the transformers
# ViT in torchvision's layout around the very same weights (`TorchvisionLayout`), and gives torchcam
# either its default mean readout or a [CLS] one through its `score_projection` argument.  vizvit's
# "LeGrad" reads [CLS] (the model's own head), "LeGrad (token mean)" reads the mean (docs/methods.md:
# why the two differ, and why CLIP uses the mean).

# torchcam is a test dependency: without it, only the two tests that call torchcam_legrad skip.
TORCHCAM_MISSING = "torchcam not installed: bash scripts/setup --dev"


class TorchvisionBlock(nn.Module):
    """torchvision's EncoderBlock (ln_1, self_attention, ln_2, mlp) over one transformers 5 ViT layer's weights."""

    def __init__(self, layer: nn.Module, heads: int):
        super().__init__()
        att = layer.attention
        d = att.q_proj.weight.shape[0]
        self.ln_1, self.ln_2, self.mlp = layer.layernorm_before, layer.layernorm_after, layer.mlp  # fc1, GELU, fc2
        self.self_attention = nn.MultiheadAttention(d, heads, batch_first=True)
        with torch.no_grad():
            self.self_attention.in_proj_weight.copy_(torch.cat([att.q_proj.weight, att.k_proj.weight, att.v_proj.weight]))
            self.self_attention.in_proj_bias.copy_(torch.cat([att.q_proj.bias, att.k_proj.bias, att.v_proj.bias]))
            self.self_attention.out_proj.weight.copy_(att.o_proj.weight)
            self.self_attention.out_proj.bias.copy_(att.o_proj.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, need_weights=False)  # as torchvision calls it
        x = x + y
        return x + self.mlp(self.ln_2(x))


class TorchvisionLayout(nn.Module):
    """A transformers ViTForImageClassification as torchvision's VisionTransformer is laid out:
    encoder.layers, encoder.ln, heads (what torchcam's LeGrad reads)."""

    def __init__(self, hf: nn.Module, heads: int):
        super().__init__()
        self.embeddings = hf.vit.embeddings
        self.encoder = nn.Module()
        self.encoder.layers = nn.ModuleList(TorchvisionBlock(l, heads) for l in hf.vit.layers)
        self.encoder.ln = hf.vit.layernorm
        self.heads = hf.classifier

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        x = self.embeddings(pixels)
        for block in self.encoder.layers:
            x = block(x)
        return self.heads(self.encoder.ln(x)[:, 0])  # the model's own logits: [CLS]


def torchcam_legrad(vm: vizvit.VitModel, a, index: int, cls_readout: bool) -> np.ndarray:
    """torchcam's LeGrad over the last explain.LEGRAD_LAYERS blocks -> (gh, gw), normalised by torchcam."""
    torchcam_methods = pytest.importorskip("torchcam.methods", reason=TORCHCAM_MISSING)
    g = vm.geometry
    net = TorchvisionLayout(vm.model, g.num_heads).eval()
    blocks = list(net.encoder.layers)[-explain.LEGRAD_LAYERS:]
    kw = {"score_projection": lambda z: net.heads(net.encoder.ln(z)[:, 0])} if cls_readout else {}
    with torch.inference_mode(False), torch.enable_grad():
        with torchcam_methods.LeGrad(net, blocks, prefix_tokens=g.num_prefix_tokens, grid_shape=g.grid, **kw) as cam:
            logits = net(a.pixel_values.detach().clone())
            torch.testing.assert_close(logits, a.logits.reshape(logits.shape), atol=1e-4, rtol=1e-4)  # the same network
            return cam(index, logits)[0][0].detach().numpy()


def _minmax(m: np.ndarray) -> np.ndarray:
    """torchcam's _normalize: (m − min) / (max − min + 1e-8)."""
    m = m - m.min()
    return m / (m.max() + 1e-8)


@pytest.mark.parametrize("cls_readout", [False, True], ids=["torchcam's mean readout", "a [CLS] readout"])
def test_legrad_equals_torchcams_legrad_on_a_tiny_vit(tiny32, cat, cls_readout):
    a = vizvit.analyze(tiny32, cat)
    index = a.top5[1].index
    want = torchcam_legrad(tiny32, a, index, cls_readout)
    mine = methods.class_map("LeGrad" if cls_readout else methods.LEGRAD_MEAN.name, tiny32, a, index)
    # The documented difference: torchcam averages the layers and min-max scales; vizvit sums, unscaled.
    np.testing.assert_allclose(_minmax(mine), want, atol=1e-5)


def test_on_the_trained_vit_mean_and_cls_readouts_correlate_but_rank_patches_differently(trained):
    """docs/methods.md's numbers: r 0.74-0.85, 0-2 shared top-5 patches (chelsea, coffee, astronaut,
    top-1 class), and torchcam with a [CLS] readout equals vizvit's LeGrad."""
    from tiny import EXAMPLES

    for name in ("chelsea", "coffee", "astronaut"):
        a = vizvit.analyze(trained, vizvit.load_image(str(EXAMPLES / f"{name}.jpg")))
        index = a.top5[0].index
        cls_map = methods.class_map("LeGrad", trained, a, index)
        mean_map = methods.class_map(methods.LEGRAD_MEAN.name, trained, a, index)
        np.testing.assert_allclose(_minmax(cls_map), torchcam_legrad(trained, a, index, True), atol=1e-4)
        np.testing.assert_allclose(_minmax(mean_map), torchcam_legrad(trained, a, index, False), atol=1e-4)
        r = np.corrcoef(cls_map.ravel(), mean_map.ravel())[0, 1]
        shared = len(set(np.argsort(cls_map, None)[-5:]) & set(np.argsort(mean_map, None)[-5:]))
        assert 0.6 < r < 0.95 and shared <= 3, (name, r, shared)
