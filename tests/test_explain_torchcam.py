"""LeGrad against torchcam 0.5.0's own `torchcam.methods.LeGrad` (a test dependency, installed with
--no-deps: requirements-nodeps.txt, scripts/setup --dev). Its import needs neither torchvision nor open_clip;
its built-in readout is for torchvision's VisionTransformer (`heads(encoder.ln(tokens.mean(1)))`:
the MEAN of every token) and its hooks want each block's `self_attention` to be a batch-first
nn.MultiheadAttention. So the test rebuilds the transformers ViT in torchvision's layout around the
very same weights (`TorchvisionLayout`), and gives torchcam either its default mean readout or a
[CLS] one through its `score_projection` argument.

vizvit's "LeGrad" reads [CLS] (the model's own head), "LeGrad (token mean)" reads the mean
(docs/methods.md: why the two differ, and why CLIP uses the mean)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import vizvit
from vizvit import explain
from vizvit.readings import methods

torchcam_methods = pytest.importorskip("torchcam.methods", reason="torchcam not installed: bash scripts/setup --dev")


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


@pytest.fixture(scope="module")
def tiny_vit(tiny_dirs) -> vizvit.VitModel:
    return vizvit.load_model(str(tiny_dirs["p32"]), device="cpu")


@pytest.mark.parametrize("cls_readout", [False, True], ids=["torchcam's mean readout", "a [CLS] readout"])
def test_legrad_equals_torchcams_legrad_on_a_tiny_vit(tiny_vit, cat, cls_readout):
    a = vizvit.analyze(tiny_vit, cat)
    index = a.top5[1].index
    want = torchcam_legrad(tiny_vit, a, index, cls_readout)
    mine = methods.class_map("LeGrad" if cls_readout else methods.LEGRAD_MEAN.name, tiny_vit, a, index)
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
