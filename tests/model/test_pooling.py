"""vizvit/model/pooling.py: each family's head written out gives what the model's own modules give (their
forward, run by transformers), on tiny models of every family."""

from __future__ import annotations

import pytest
import torch

from vizvit.errors import UserError
from vizvit.model import engine
from vizvit.model.images import model_input_view, to_pixel_values
from vizvit.model.pooling import PLAIN, Written, map_pool, pooled, read_logits


def _pixels(vm, image) -> torch.Tensor:
    return to_pixel_values(model_input_view(image, vm.preprocess), vm.preprocess)


def test_siglip_head_written_out_is_its_own_forward_and_keeps_its_attention(towers, cat):
    vm = towers["siglip16"]
    head = vm.vit.head
    with torch.no_grad():
        x = vm.vit(_pixels(vm, cat)).last_hidden_state  # (1, P, D) after the final layernorm
        got, att = map_pool(head, x)
        want = head(x)  # transformers' SiglipMultiheadAttentionPoolingHead
        _, weights = head.attention(head.probe, x, x, need_weights=True, average_attn_weights=False)
    g = vm.geometry
    assert att.shape == (1, g.num_heads, 1, g.num_patches)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(att, weights, rtol=1e-4, atol=1e-6)


def test_written_hooks_go_on_the_keys_values_and_nowhere_else(towers, cat):
    vm = towers["siglip16"]
    head = vm.vit.head
    seen: list[tuple[int, ...]] = []

    def keys(k: torch.Tensor) -> torch.Tensor:
        seen.append(tuple(k.shape))
        return k

    with torch.no_grad():
        x = vm.vit(_pixels(vm, cat)).last_hidden_state
        plain, _ = map_pool(head, x, PLAIN)
        same, _ = map_pool(head, x, Written(keys=keys))
        zeroed, _ = map_pool(head, x, Written(values=torch.zeros_like))
    g = vm.geometry
    assert seen == [(1, g.num_heads, g.num_patches, g.hidden_size // g.num_heads)]
    torch.testing.assert_close(same, plain)
    # no values: the attention output is the out projection's bias alone, whatever the photo
    assert not torch.allclose(zeroed, plain)
    with torch.no_grad():
        bias_only = head.attention.out_proj.bias.expand(1, 1, -1)
        want = (bias_only + head.mlp(head.layernorm(bias_only)))[:, 0]
    torch.testing.assert_close(zeroed, want, rtol=1e-5, atol=1e-6)


def test_clip_pools_cls_through_its_projection(towers, cat):
    vm = towers["clip16"]
    with torch.no_grad():
        out = vm.vit(_pixels(vm, cat))
        emb, att = pooled(vm.family, vm.model, out.pooler_output.unsqueeze(1))
        want = vm.model.get_image_features(pixel_values=_pixels(vm, cat)).pooler_output
    assert att is None
    torch.testing.assert_close(emb, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["deit", "beit"])
def test_a_classifiers_logits_read_from_its_last_block_are_its_own(families, cat, name):
    """DeiT distilled (the mean of the [CLS] and [DIST] heads) and BEiT (its pooler's mean of the patches)."""
    vm = families[name]
    with torch.no_grad():
        out = vm.model(_pixels(vm, cat), output_hidden_states=True)
        got = read_logits(vm.family, vm.model, out.hidden_states[-1])
    torch.testing.assert_close(got, out.logits, rtol=1e-4, atol=1e-5)


def test_a_vit_classifiers_logits_read_from_its_last_block_are_its_own(tiny16, cat):
    vm = tiny16
    with torch.no_grad():
        out = vm.model(_pixels(vm, cat), output_hidden_states=True)
        got = read_logits(vm.family, vm.model, out.hidden_states[-1])
    torch.testing.assert_close(got, out.logits, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["clip16", "siglip16"])
def test_an_image_text_models_logits_are_read_through_the_typed_labels(towers, cat, name):
    vm = towers[name]
    a = engine.analyze(vm, cat)
    with torch.no_grad():
        last = vm.vit(a.pixel_values, output_hidden_states=True).hidden_states[-1]
        got = read_logits(vm.family, vm.model, last, vm.zero_shot)
    torch.testing.assert_close(got[0], a.logits, rtol=1e-4, atol=1e-5)
    with pytest.raises(UserError, match="Zero-shot labels"):
        read_logits(vm.family, vm.model, last)


@pytest.mark.parametrize("name", ["dino", "dinov2", "dinov2_reg"])
def test_a_model_without_a_classifier_has_nothing_to_read(families, name):
    """DINO v1 and the self-supervised DINOv2 checkpoints (with and without registers) have no head."""
    vm = families[name]
    states = torch.zeros(1, vm.geometry.seq_len, vm.geometry.hidden_size)
    with pytest.raises(UserError, match="no classifier"):
        read_logits(vm.family, vm.model, states)


def _dino_head_by_hand(vm, last: torch.Tensor) -> torch.Tensor:
    """(1, N, D) last block output -> (C,) float64: the final layernorm by hand, then the linear head on
    [CLS] ⊕ the mean of the patch tokens, which are the last gh·gw tokens (registers before them)."""
    ln, fc = vm.vit.layernorm, vm.model.classifier
    x = last[0].double()
    x = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + ln.eps)
    x = x * ln.weight.double() + ln.bias.double()
    patches = x[-vm.geometry.num_patches:]
    return fc.weight.double() @ torch.cat([x[0], patches.mean(0)]) + fc.bias.double()


@pytest.mark.parametrize("name", ["dinov2_cls", "dinov2_reg_cls"])
def test_a_dinov2_classifiers_logits_read_from_its_last_block_are_its_own(dino_classifiers, cat, name):
    """A DINOv2 classifier's head reads [CLS] ⊕ the patch mean (2·D wide; the registers are not in the
    mean): read from its last block's output (before the final layernorm) it is the model's own logits,
    and the head by hand."""
    vm = dino_classifiers[name]
    g = vm.geometry
    assert vm.model.classifier.in_features == 2 * g.hidden_size
    with torch.no_grad():
        out = vm.model(_pixels(vm, cat), output_hidden_states=True)
        last = out.hidden_states[-1]  # (1, N, D)
        got = read_logits(vm.family, vm.model, last)
    assert last.shape == (1, g.seq_len, g.hidden_size)
    torch.testing.assert_close(got, out.logits, rtol=0, atol=1e-5)
    torch.testing.assert_close(got[0].double(), _dino_head_by_hand(vm, last), rtol=0, atol=1e-5)


def test_a_dinov2_classifier_does_not_read_its_registers(dino_classifiers, cat):
    """Whatever the register tokens hold, the logits stay (Darcet et al.'s scratch space); [CLS] and a
    patch each change them."""
    vm = dino_classifiers["dinov2_reg_cls"]
    regs = vm.geometry.register_tokens
    assert regs == (1, 2, 3, 4)
    with torch.no_grad():
        last = vm.model(_pixels(vm, cat), output_hidden_states=True).hidden_states[-1]
        base = read_logits(vm.family, vm.model, last)
        for token, same in ((list(regs), True), ([0], False), ([vm.geometry.num_prefix_tokens], False)):
            moved = last.clone()
            moved[:, token] = 5 * torch.randn_like(moved[:, token])
            got = read_logits(vm.family, vm.model, moved)
            assert torch.allclose(got, base, rtol=0, atol=1e-6) == same, token
