"""Head ablation and "which heads matter" against a plain reference: a ViT forward written out
from the weights, with one head's slice of the concatenated head outputs zeroed (or replaced by its
token mean) before the output projection; and a constructed model where one head alone carries the
answer."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch

import vizvit
from vizvit.errors import UserError
from vizvit.model.ablation import Ablation, format_heads, parse_heads
from vizvit.model.images import model_input_view, to_pixel_values
from vizvit.readings import heads
from vizvit.session import PhotoKey, Workbench


def manual_logits(vm, pixels: torch.Tensor, off: dict[int, list[int]], mode: str = "zero") -> torch.Tensor:
    """(C,) logits of a transformers ViT computed by hand from its weights, heads in `off` ablated."""
    m, vit = vm.model, vm.vit
    H = vm.geometry.num_heads
    conv = vit.embeddings.patch_embeddings.projection
    x = torch.nn.functional.conv2d(pixels, conv.weight, conv.bias, stride=conv.stride)  # (1, D, gh, gw)
    x = x.flatten(2).transpose(1, 2)  # (1, P, D)
    x = torch.cat([vit.embeddings.cls_token, x], 1) + vit.embeddings.position_embeddings
    for l, blk in enumerate(vit.layers):
        a = blk.attention
        h = torch.nn.functional.layer_norm(x, x.shape[-1:], blk.layernorm_before.weight, blk.layernorm_before.bias,
                                           blk.layernorm_before.eps)
        n, D = h.shape[1], h.shape[2]
        d = D // H
        q, k, v = (lin(h).view(1, n, H, d).transpose(1, 2) for lin in (a.q_proj, a.k_proj, a.v_proj))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), -1)
        heads = (att @ v).transpose(1, 2)  # (1, n, H, d)
        for hd in off.get(l, []):
            heads[:, :, hd] = 0 if mode == "zero" else heads[:, :, hd].mean(1, keepdim=True)
        x = x + a.o_proj(heads.reshape(1, n, D))
        h = torch.nn.functional.layer_norm(x, x.shape[-1:], blk.layernorm_after.weight, blk.layernorm_after.bias,
                                           blk.layernorm_after.eps)
        x = x + blk.mlp.fc2(torch.nn.functional.gelu(blk.mlp.fc1(h)))
    x = vit.layernorm(x)
    return m.classifier(x[:, 0])[0]


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_ablation_equals_a_manual_forward_with_that_slice_changed(tiny, cat, mode):
    pixels = to_pixel_values(model_input_view(cat, tiny.preprocess), tiny.preprocess)
    with torch.no_grad():
        intact = manual_logits(tiny, pixels, {})
        np.testing.assert_allclose(intact.numpy(), vizvit.analyze(tiny, cat).logits.numpy(), atol=1e-4)
        for off in ({0: [1]}, {1: [0]}, {0: [0, 1], 1: [1]}):
            ab = Ablation(tuple((l, h) for l, hs in off.items() for h in hs), mode)
            got = vizvit.analyze(tiny, cat, ablation=ab)
            want = manual_logits(tiny, pixels, off, mode)
            np.testing.assert_allclose(got.logits.numpy(), want.numpy(), atol=1e-4, err_msg=str(off))
            assert not torch.allclose(got.logits, intact, atol=1e-3), "the ablation changed nothing"
            assert got.ablation == ab


@pytest.fixture(scope="module")
def one_head_model(tiny_dirs):
    """Only head 2 of the last layer writes anything: its value is a constant vector that the
    output projection turns into +100 along coordinate 0, which class 3 reads; class 0 has a bias."""
    vm = vizvit.load_model(str(tiny_dirs["p16"]), device="cpu")
    vm = type(vm)(**{**vm.__dict__, "id": "one-head", "model": copy.deepcopy(vm.model)})
    L, H, D = vm.geometry.num_layers, vm.geometry.num_heads, vm.geometry.hidden_size
    d = D // H
    with torch.no_grad():
        for blk in vm.vit.layers:
            blk.attention.v_proj.weight.zero_()
            blk.attention.v_proj.bias.zero_()
            blk.attention.o_proj.bias.zero_()
        last = vm.vit.layers[L - 1].attention
        last.v_proj.bias[1 * d:2 * d] = 1.0  # head 2 (index 1) outputs the ones vector at every token
        last.o_proj.weight.zero_()
        last.o_proj.weight[0, 1 * d:2 * d] = 100.0 / d  # -> +100 on coordinate 0
        vm.vit.layernorm.weight.fill_(1.0)
        vm.vit.layernorm.bias.zero_()
        vm.model.classifier.weight.zero_()
        vm.model.classifier.bias.zero_()
        vm.model.classifier.weight[3, 0] = 1.0
        vm.model.classifier.bias[0] = 4.0
    return vm


def test_one_head_alone_carries_the_answer(one_head_model, cat):
    vm = one_head_model
    L = vm.geometry.num_layers
    intact = vizvit.analyze(vm, cat)
    assert intact.top5[0].index == 3
    carrier = vizvit.analyze(vm, cat, ablation=Ablation(((L - 1, 1),)))
    assert carrier.top5[0].index != 3, "zeroing the carrying head must change the prediction"
    other = vizvit.analyze(vm, cat, ablation=Ablation(((L - 1, 0), (0, 1))))
    assert torch.equal(other.logits, intact.logits), "zeroing a head that writes nothing changes nothing"
    imp = heads.head_importance(photo_of(vm, cat), chunk=3)
    assert imp[L - 1, 1] > 0.5 and np.abs(np.delete(imp.ravel(), (L - 1) * 2 + 1)).max() == 0.0


def photo_of(vm, image):
    wb = Workbench(device="cpu")
    wb.add_model(vm)
    return wb.handle(PhotoKey(vm.id, wb.add_photo(image)))


def test_heads_parse_and_print_counted_from_one(tiny):
    g = tiny.geometry
    assert parse_heads("2.1, 1.2", g) == ((0, 1), (1, 0))
    assert parse_heads("2", g) == ((1, 0), (1, 1))  # a whole layer
    assert format_heads(((0, 1), (1, 0))) == "1.2,2.1"
    for bad in ("3.1", "1.3", "x", "1.2.3"):
        with pytest.raises(UserError):
            parse_heads(bad, g)
    # the refusal's example is a head this 2 x 2 model has ("e.g. 3.2" suggested one it lacks)
    with pytest.raises(UserError, match=r"\(e\.g\. 2\.2\)") as e:
        parse_heads("x", g)
    assert parse_heads(str(e.value).split("e.g. ")[1].split(")")[0], g) == ((1, 1),)


def test_a_heads_box_of_megabytes_costs_what_its_heads_do(tiny):
    """The heads box is any caller's to fill (up to the 4 MB body limit). Each "1" (a whole layer) was expanded
    into every head of it before any was checked or merged: "1," a million times took ~1.3 GB and seconds on
    12 heads, for two heads here. Now each head once, each part checked as it comes, and a refusal quotes only
    the start of what it refuses."""
    import tracemalloc

    g = dataclasses.replace(tiny.geometry, num_layers=12, num_heads=12)  # ViT-B/16's heads: 12 a layer
    tracemalloc.start()
    try:
        got = parse_heads("1, 2.2," * 50_000, g)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == tuple(sorted({(0, h) for h in range(12)} | {(1, 1)}))
    # the text's own parts (100,000 short strings, ~6 MB) bound it, not their heads (650,000 tuples)
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MB"
    for bad in ("x" * 100_000, "1," * 100_000 + "99"):
        with pytest.raises(UserError) as e:
            parse_heads(bad, g)
        assert len(str(e.value)) < 200, len(str(e.value))


def test_ablation_reaches_every_family(fam, cat):
    """The hook sits on each family's own output projection: the stream after it changes, the
    ablated layer's own attention does not."""
    a = vizvit.analyze(fam, cat)
    b = vizvit.analyze(fam, cat, ablation=Ablation(((0, 1),)))
    assert torch.equal(a.attentions[0], b.attentions[0])
    assert not torch.allclose(a.hidden_states[1], b.hidden_states[1])




def test_the_heads_the_page_gives_as_an_example_exist_in_a_three_head_model():
    """The Inside tab's text and box, the lecturers' link list, a link's refusal and the command line suggest
    heads to type. "3.5, 7.1" was refused on the trained ViT-Ti (12 layers x 3 heads) by the page that suggested
    it. Every example shown must parse on the smallest model offered (ViT-Ti, DeiT-Ti: 3 heads)."""
    import re

    from vizvit.model.models import Geometry
    from vizvit.views.inside import ABLATE_TEXT
    from vizvit.views.lecture import LECTURE_TEXT
    from vizvit.vocab import HEADS_EXAMPLE

    ti = Geometry(image_size=(224, 224), patch_size=16, grid=(14, 14), num_prefix_tokens=1, num_layers=12,
                  num_heads=3, hidden_size=192)
    shown = [re.search(r"layer\.head counted from 1 \(`([^`]+)`", ABLATE_TEXT).group(1),
             re.search(r"layer\.head from 1, e\.g\. `([^`]+)`", LECTURE_TEXT).group(1), HEADS_EXAMPLE]
    for text in shown:
        assert len(parse_heads(text, ti)) == 2, text
