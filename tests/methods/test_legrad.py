"""LeGrad (vizvit/methods/legrad.py) against its authors' code (WalBouss/LeGrad, ported here as plain functions)
and against torchcam's own LeGrad (the last section, merged from tests/test_explain_torchcam.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import vizvit
from vizvit.methods import legrad, relevance
from vizvit.readings import methods


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
        want = legrad_loop(list(out.hidden_states[1:]), list(out.attentions), score, L - legrad.LEGRAD_LAYERS, 32)
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
        want = legrad_loop(feats, [p[1] for p in pooled], score, L - legrad.LEGRAD_LAYERS, 32, query=0)
    mine = methods.class_map("LeGrad", vm, a, index)
    torch.testing.assert_close(as_legrad_shows_it(mine, 32), want, atol=1e-5, rtol=1e-4)


def test_legrad_on_a_tiny_vit_reads_each_layer_through_the_models_own_head(tiny32, cat):
    """LeGrad's code has no classifier path: vizvit's rule is its loop with each layer's score the
    class logit of the model's head on that layer's [CLS] (final layernorm, then the classifier)."""
    vm = tiny32
    a = vizvit.analyze(vm, cat)
    index = a.top5[1].index
    want = _loop_through_the_models_head(vm, a, lambda feat: vm.model.vit.layernorm(feat)[:, 0], index, 32)
    mine = methods.class_map("LeGrad", vm, a, index)
    torch.testing.assert_close(as_legrad_shows_it(mine, 32), want, atol=1e-5, rtol=1e-4)


def _loop_through_the_models_head(vm, a, head_input, index: int, grid: int) -> torch.Tensor:
    """LeGrad's loop (the authors' rule) on the model's own forward, each layer's score the model's classifier
    on head_input(that layer's tokens), written here from the model's modules."""
    with torch.inference_mode(False), torch.enable_grad():
        out = vm.model(a.pixel_values.detach().clone().requires_grad_(True), output_attentions=True,
                       output_hidden_states=True)

        def score(feat, _layer):
            return vm.model.classifier(head_input(feat))[:, index]

        L = len(out.attentions)
        return legrad_loop(list(out.hidden_states[1:]), list(out.attentions), score, L - legrad.LEGRAD_LAYERS,
                           grid)


def test_legrad_on_a_tiny_dinov2_classifier_reads_cls_and_the_patch_mean(dino_classifiers, cat):
    """A DINOv2 classifier's head reads [CLS] ⊕ the patch mean (2·D wide): each layer's score is that head on
    that layer's tokens after the final layernorm."""
    vm = dino_classifiers["dinov2_cls"]
    a = vizvit.analyze(vm, cat)
    index = a.top5[1].index

    def cls_and_patch_mean(feat):
        z = vm.model.dinov2.layernorm(feat)
        return torch.cat([z[:, 0], z[:, 1:].mean(1)], dim=1)

    want = _loop_through_the_models_head(vm, a, cls_and_patch_mean, index, 14)
    mine = methods.class_map("LeGrad", vm, a, index)
    torch.testing.assert_close(as_legrad_shows_it(mine, 14), want, atol=1e-5, rtol=1e-4)


def test_legrad_backward_runs_once_per_layer_from_that_layers_score(tiny32, cat):
    """A constructed check of what "that layer's score" means: the LeGrad gradient of the last layer
    is d logit / d A_L, the same number Chefer's backward gives for the last layer."""
    a = vizvit.analyze(tiny32, cat)
    index = a.top5[0].index
    L = tiny32.geometry.num_layers
    (last,) = legrad.layer_score_gradients(tiny32, a, index, [L - 1])
    _, grads = relevance.attention_gradients(tiny32, a.pixel_values, index)
    torch.testing.assert_close(last, grads[-1].float(), atol=1e-6, rtol=1e-5)



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
            self.self_attention.in_proj_weight.copy_(
                torch.cat([att.q_proj.weight, att.k_proj.weight, att.v_proj.weight]))
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
    """torchcam's LeGrad over the last legrad.LEGRAD_LAYERS blocks -> (gh, gw), normalised by torchcam."""
    torchcam_methods = pytest.importorskip("torchcam.methods", reason=TORCHCAM_MISSING)
    g = vm.geometry
    net = TorchvisionLayout(vm.model, g.num_heads).eval()
    blocks = list(net.encoder.layers)[-legrad.LEGRAD_LAYERS:]
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
