"""vizvit/model/hooks.py: a run's hooks are on the model only inside its `with`, under the one run lock."""

from __future__ import annotations

import threading

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
