"""analyze(): shapes, agreement with a manual forward, token drop, and the cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import vizvit
from vizvit.images import View


def manual_forward(vm, pixels: torch.Tensor, keep: torch.Tensor | None = None):
    """Plain reference written from the ViT paper, reading the weights directly:
    conv patches -> [CLS] + pos -> (keep tokens) -> pre-norm blocks -> norm -> head."""
    vit = vm.vit
    cfg = vm.model.config
    conv = vit.embeddings.patch_embeddings.projection
    x = F.conv2d(pixels, conv.weight, conv.bias, stride=cfg.patch_size)  # (1, D, gh, gw)
    x = x.flatten(2).transpose(1, 2)  # (1, P, D)
    patches = x[0].clone()
    x = torch.cat([vit.embeddings.cls_token, x], 1) + vit.embeddings.position_embeddings
    if keep is not None:
        x = x[:, keep]
    hs, atts = [x[0]], []
    heads, d = cfg.num_attention_heads, cfg.hidden_size // cfg.num_attention_heads
    for blk in vit.layers:
        h = F.layer_norm(x, (cfg.hidden_size,), blk.layernorm_before.weight, blk.layernorm_before.bias,
                         cfg.layer_norm_eps)
        at = blk.attention
        q, k, v = (lin(h).view(1, -1, heads, d).transpose(1, 2) for lin in (at.q_proj, at.k_proj, at.v_proj))
        a = (q @ k.transpose(-1, -2) / d ** 0.5).softmax(-1)
        atts.append(a[0])
        x = x + at.o_proj((a @ v).transpose(1, 2).reshape(1, -1, cfg.hidden_size))
        h = F.layer_norm(x, (cfg.hidden_size,), blk.layernorm_after.weight, blk.layernorm_after.bias,
                         cfg.layer_norm_eps)
        x = x + blk.mlp.fc2(F.gelu(blk.mlp.fc1(h)))
        hs.append(x[0])
    out = F.layer_norm(x, (cfg.hidden_size,), vit.layernorm.weight, vit.layernorm.bias, cfg.layer_norm_eps)
    logits = vm.model.classifier(out[:, 0])[0]
    return patches, torch.stack(atts), torch.stack(hs), logits


def test_shapes_and_invariants(tiny, cat):
    g = tiny.geometry
    a = vizvit.analyze(tiny, cat)
    n, L, H = g.seq_len, g.num_layers, g.num_heads
    assert a.input_view.shape == (224, 224, 3) and a.input_view.dtype == np.uint8
    assert a.pixel_values.shape == (1, 3, 224, 224)
    assert a.attentions.shape == (L, H, n, n)
    assert a.hidden_states.shape == (L + 1, n, g.hidden_size)
    assert a.patch_embeddings.shape == (g.num_patches, g.hidden_size)
    assert a.logits.shape == (7,) and torch.allclose(a.probs.sum(), torch.tensor(1.0))
    assert torch.allclose(a.attentions.sum(-1), torch.ones(L, H, n), atol=1e-5)
    assert [p.prob for p in a.top5] == sorted([p.prob for p in a.top5], reverse=True)
    assert a.top5[0].index == int(a.probs.argmax())
    assert all(t.device.type == "cpu" for t in (a.attentions, a.hidden_states, a.patch_embeddings))


def test_matches_a_manual_forward(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    with torch.no_grad():
        patches, atts, hs, logits = manual_forward(tiny, a.pixel_values)
    assert torch.allclose(a.patch_embeddings, patches, atol=1e-5)
    assert torch.allclose(a.attentions, atts, atol=1e-5)
    assert torch.allclose(a.hidden_states, hs, atol=1e-4)
    assert torch.allclose(a.logits, logits, atol=1e-4)


def test_token_drop_with_nothing_dropped_is_the_normal_forward(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    b = vizvit.analyze(tiny, cat, View(mask=(), mask_mode="drop"))
    assert torch.equal(a.logits, b.logits) and not b.dropped


def test_token_drop_matches_manual_forward(tiny, cat):
    g = tiny.geometry
    mask = (0, 3, g.num_patches - 1)
    a = vizvit.analyze(tiny, cat, View(mask=mask, mask_mode="drop"))
    keep = torch.tensor([t for t in range(g.seq_len) if t - 1 not in mask])
    assert torch.equal(a.kept_tokens, keep) and a.dropped
    with torch.no_grad():
        patches, atts, hs, logits = manual_forward(tiny, a.pixel_values, keep)
    n = g.seq_len - len(mask)
    assert a.attentions.shape[-1] == n and a.hidden_states.shape[1] == n
    assert torch.allclose(a.attentions, atts, atol=1e-5)
    assert torch.allclose(a.logits, logits, atol=1e-4)
    assert a.patch_embeddings.shape[0] == g.num_patches  # all patches, before the drop
    # Dropping really changes the answer (the tokens mattered).
    assert not torch.allclose(a.logits, vizvit.analyze(tiny, cat).logits)


def test_dropping_every_patch_is_refused(tiny, cat):
    with pytest.raises(ValueError, match="at least one patch"):
        vizvit.analyze(tiny, cat, View(mask=tuple(range(tiny.geometry.num_patches))))


