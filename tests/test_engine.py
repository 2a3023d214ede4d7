"""analyze(): shapes, agreement with a manual forward, token drop, and the cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import vizvit
from vizvit.session import AnalysisCache
from vizvit.images import View
from vizvit.session import PhotoKey, Workbench


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


def test_cache_hit_runs_no_second_forward(tiny16, cat):
    wb = Workbench(cache_bytes=1 << 28)
    wb.add_model(tiny16)
    calls = []
    hook = tiny16.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        key = PhotoKey(tiny16.id, wb.add_photo(cat))
        a1 = wb.analysis(key)
        a2 = wb.analysis(key)
        assert a1 is a2 and len(calls) == 1
        wb.analysis(key, View(dx=3))
        wb.analysis(key, View(dx=3))
        assert len(calls) == 2
        # An evicted entry is recomputed, identically (deterministic forward).
        wb.cache.clear()
        a3 = wb.analysis(key)
        assert len(calls) == 3 and torch.equal(a3.attentions, a1.attentions)
    finally:
        hook.remove()


def test_cache_is_bounded_in_bytes():
    cache = AnalysisCache(max_bytes=1000)
    for i in range(10):
        cache.put(i, np.zeros(300, np.uint8))
    assert cache.nbytes <= 1000 and len(cache) == 3
    assert cache.get(9) is not None and cache.get(0) is None
    cache.get(7)  # touch: 7 becomes most recent, 8 is evicted next
    cache.put(10, np.zeros(300, np.uint8))
    assert 7 in cache and 8 not in cache
    cache.put("huge", np.zeros(5000, np.uint8))  # larger than the budget: not kept
    assert "huge" not in cache and cache.nbytes <= 1000


def test_concurrent_misses_compute_once():
    import threading
    import time

    cache = AnalysisCache()
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.1)
        return np.ones(3)

    threads = [threading.Thread(target=cache.get_or_compute, args=("k", slow)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1


def test_photo_store_forgets_and_says_so(cat):
    wb = Workbench(photo_bytes=1)
    s1 = wb.add_photo(cat)
    wb.add_photo(cat.rotate(90, expand=True))
    with pytest.raises(ValueError, match="upload it again"):
        wb.photo(s1)
