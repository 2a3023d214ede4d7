"""Running a model from inside (vizvit/model/truncated.py), family by family: from the intact hidden state
entering layer l, blocks l..L−1 (and the head) give what the whole model's own forward gives with a head of
layer l zeroed by the tests' own hook (tests/ablated.py); what it cannot run it says so; batches of cells."""

from __future__ import annotations

import torch
import transformers
from ablated import pixels_of, whole, zero_head
from tiny import save_perturbed

import vizvit
from vizvit.model import truncated


def every_model(families, towers, tiny16) -> list[vizvit.VitModel]:
    return [tiny16, *families.values(), *towers.values()]


def test_the_blocks_from_layer_l_give_the_whole_forward_with_a_head_of_layer_l_zeroed(families, towers, tiny16, cat):
    """Every family (ViT, DeiT distilled, DINOv2 with and without registers, BEiT, DINO v1, CLIP's and
    SigLIP's image towers): hidden_states[l] of the intact forward is the input of block l, so the blocks
    from l, with the zeroing hook, end where the whole forward with it ends."""
    for vm in every_model(families, towers, tiny16):
        g = vm.geometry
        px = pixels_of(vm, cat)
        intact, _ = whole(vm, px)
        assert intact.shape == (g.num_layers + 1, g.seq_len, g.hidden_size)
        with torch.inference_mode():  # no head zeroed: block 0's input is the embedding stage's output
            got = truncated.blocks_from(vm.family, vm.model, intact[:1], 0, g)
        torch.testing.assert_close(got[0], intact[-1], rtol=0, atol=1e-5, msg=vm.id)
        for layer in range(g.num_layers):
            for head in range(g.num_heads):
                want, _ = whole(vm, px, (layer, head))
                handle = zero_head(vm, layer, head)
                try:
                    with torch.inference_mode():
                        got = truncated.blocks_from(vm.family, vm.model, intact[layer:layer + 1], layer, g)
                finally:
                    handle.remove()
                torch.testing.assert_close(got[0], want[-1], rtol=0, atol=1e-5, msg=f"{vm.id} {layer}.{head}")
                assert not torch.allclose(want[-1], intact[-1], atol=1e-4), "the zeroed head must matter"


def test_the_logits_from_layer_l_are_the_models_own(families, towers, dino_classifiers, tiny16, cat):
    """The head after the blocks: the model's own logits (ViT, DeiT's mean of two heads, BEiT's pooled
    patch mean, DINOv2's classifiers' [CLS] ⊕ patch mean, with and without registers; CLIP's and
    SigLIP's logits_per_image through the whole image-text model)."""
    models = [vm for vm in every_model(families, towers, tiny16) if vm.has_classifier] + list(dino_classifiers.values())
    assert {vm.family.key for vm in models} == {"vit", "deit", "beit", "clip", "siglip", "dinov2",
                                                 "dinov2_with_registers"}
    for vm in models:
        g = vm.geometry
        px = pixels_of(vm, cat)
        intact, _ = whole(vm, px)
        layer, head = g.num_layers - 1, 1
        _, want = whole(vm, px, (layer, head))
        handle = zero_head(vm, layer, head)
        try:
            with torch.inference_mode():
                got = truncated.logits_from(vm.family, vm.model, intact[layer:layer + 1], layer, g, vm.zero_shot)
        finally:
            handle.remove()
        assert truncated.starts_inside(vm.family, vm.model), vm.id
        torch.testing.assert_close(got[0], want, rtol=0, atol=1e-4, msg=vm.id)


def test_beits_shared_bias_too(tmp_path, cat):
    """BEiT with one relative position bias shared by every block (its per-block bias off): the shared bias
    is built as BeitModel builds it and passed to each block."""
    config = transformers.BeitConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                     image_size=112, patch_size=16, num_labels=7, use_relative_position_bias=False,
                                     use_shared_relative_position_bias=True, use_absolute_position_embeddings=False,
                                     use_mean_pooling=True, layer_scale_init_value=0.1)
    torch.manual_seed(0)
    vm = vizvit.load_model(str(save_perturbed(transformers.BeitForImageClassification(config), tmp_path, 112)),
                           device="cpu")
    assert vm.vit.shared_position_bias is not None and vm.family.key == "beit"
    px = pixels_of(vm, cat)
    intact, _ = whole(vm, px)
    want, logits = whole(vm, px, (1, 0))
    handle = zero_head(vm, 1, 0)
    try:
        with torch.inference_mode():
            got = truncated.blocks_from(vm.family, vm.model, intact[1:2], 1, vm.geometry)
            got_logits = truncated.logits_from(vm.family, vm.model, intact[1:2], 1, vm.geometry)
    finally:
        handle.remove()
    torch.testing.assert_close(got[0], want[-1], rtol=0, atol=1e-5)
    torch.testing.assert_close(got_logits[0], logits, rtol=0, atol=1e-5)


def test_the_model_object_is_left_as_it_was(tiny16, cat):
    """No module, parameter or hook is added, removed or replaced on the shared model. (Taken after a whole
    forward: transformers hooks the blocks itself, once, at a model's first forward, to record hidden states.)"""
    vm = tiny16
    intact, _ = whole(vm, pixels_of(vm, cat))
    before = ([(n, id(m), len(m._forward_hooks), len(m._forward_pre_hooks)) for n, m in vm.model.named_modules()],
              {n: p.clone() for n, p in vm.model.state_dict().items()})
    with torch.inference_mode():
        truncated.logits_from(vm.family, vm.model, intact[1:2].expand(3, -1, -1), 1, vm.geometry)
    assert [(n, id(m), len(m._forward_hooks), len(m._forward_pre_hooks))
            for n, m in vm.model.named_modules()] == before[0]
    assert all(torch.equal(p, before[1][n]) for n, p in vm.model.state_dict().items())


def test_what_it_cannot_run_it_says(monkeypatch, tiny16):
    """A block class not read here (faked); every family's head is read_logits', a DINOv2 classifier's too."""
    assert truncated.starts_inside(tiny16.family, tiny16.model)
    monkeypatch.setattr(truncated, "PLAIN_BLOCKS", frozenset())
    assert not truncated.starts_inside(tiny16.family, tiny16.model)


def test_cells_are_batched_within_one_layer():
    cells = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0)]
    assert truncated.cell_batches(cells, 2) == [(0, 2), (2, 3), (3, 5), (5, 6), (6, 7)]
    assert truncated.cell_batches(cells, 8) == [(0, 3), (3, 6), (6, 7)]
    assert truncated.cell_batches(cells, 1) == [(i, i + 1) for i in range(7)]
    assert truncated.cell_batches(cells, 4, by_layer=False) == [(0, 4), (4, 7)]
    assert truncated.cell_batches([(1, 0), (0, 0), (1, 1)], 8) == [(0, 1), (1, 2), (2, 3)]  # order kept
    assert truncated.cell_batches([], 3) == []
