"""vizvit/model/hooks.py: a run's hooks are on the model only inside its `with`, under the one run lock."""

from __future__ import annotations

import threading

import numpy as np
import torch

import vizvit
from vizvit.model.ablation import Ablation
from vizvit.model.hooks import Hook, Hooked, ablation_hooks


def _hook_count(model: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_hooks_are_registered_for_one_run_and_removed_after_it(tiny16, cat):
    pixels = vizvit.analyze(tiny16, cat).pixel_values
    before = _hook_count(tiny16.model)
    seen = []
    extra = [Hook(lambda b: tiny16.family.embeddings(b), lambda m, i, o: seen.append(o.shape))]
    with Hooked(tiny16, extra=extra) as run, torch.inference_mode():
        assert _hook_count(tiny16.model) == before + 2  # the patch grab and the extra one
        tiny16.model(pixels)
    assert _hook_count(tiny16.model) == before
    assert seen == [(1, tiny16.geometry.seq_len, tiny16.geometry.hidden_size)]
    assert run.patches.shape == (1, tiny16.geometry.num_patches, tiny16.geometry.hidden_size)


def test_a_run_holds_the_lock_so_another_thread_waits(tiny16):
    got = []

    def other_run() -> None:
        with Hooked(tiny16):
            got.append("ran")

    with Hooked(tiny16):
        t = threading.Thread(target=other_run)
        t.start()
        t.join(0.2)
        assert t.is_alive() and not got  # blocked on the run lock
    t.join(5)
    assert got == ["ran"]


def test_ablation_hooks_are_one_pre_hook_per_layer_with_heads_off(tiny16):
    assert ablation_hooks(tiny16, Ablation()) == []
    hooks = ablation_hooks(tiny16, Ablation(heads=((0, 1), (1, 0), (1, 1))))
    assert len(hooks) == 2 and all(h.pre for h in hooks)


def _eager_calls(monkeypatch, vm: vizvit.VitModel) -> list[int]:
    """Counts the model's eager attention calls (each family's modeling module looks the function up by
    name at every forward where the config says "eager")."""
    import sys

    calls: list[int] = []
    module = sys.modules[type(vm.vit).__module__]
    real = module.eager_attention_forward

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(module, "eager_attention_forward", counted)
    return calls


def test_batched_views_run_fused_attention_and_give_the_eager_models_probabilities(families, tiny16, monkeypatch):
    """predict_batch reads no attention weights, so it runs SDPA (Hooked(attentions=False)); its probabilities
    are a plain eager forward's, done here with transformers alone, and the model is eager again after (an
    analysis still gets its attentions). BEiT's relative bias and a token drop go through SDPA's mask."""
    from vizvit.model.engine import predict_batch
    from vizvit.model.images import to_pixel_values

    rng = np.random.default_rng(0)
    for name, vm in {"p16": tiny16, **{k: families[k] for k in ("deit", "beit", "dinov2_reg")}}.items():
        if not vm.has_classifier:
            continue
        size = vm.geometry.image_size
        views = [rng.integers(0, 256, (*size, 3), dtype=np.uint8) for _ in range(3)]
        calls = _eager_calls(monkeypatch, vm)
        got = predict_batch(vm, views, chunk=2).probs
        assert calls == [], name  # fused, not eager
        with torch.inference_mode():
            ref = vm.model(torch.cat([to_pixel_values(v, vm.preprocess) for v in views])).logits.softmax(-1)
        assert calls, name  # the plain forward after: eager again
        assert vm.model.config._attn_implementation == "eager"
        torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)
        assert len(vizvit.analyze(vm, views[0]).attentions) == vm.geometry.num_layers
