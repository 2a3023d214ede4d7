"""CLIP and SigLIP image towers with zero-shot labels: tiny models built from CLIPConfig /
SiglipConfig with a tiny WordLevel tokenizer, saved with save_pretrained and loaded through
vizvit.load_model. Every number is checked against a plain reference written here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import vizvit
from vizvit.methods import maths as A
from vizvit.model import engine
from vizvit.model.images import model_input_view, to_pixel_values
from vizvit.session import PhotoKey, Workbench

LABELS = ("a cat", "a dog", "a teapot", "a bird")


def plain_probs(vm: vizvit.VitModel, image, labels: tuple[str, ...], template: str) -> torch.Tensor:
    """The reference: both towers as HF's get_*_features, normalised, times the scale (+ bias),
    softmax or sigmoid."""
    m = vm.model
    tok = vm.text.tokenize.tok
    pad = "max_length" if m.config.model_type == "siglip" else True
    enc = tok([template.replace("{}", lab) for lab in labels], padding=pad, truncation=True, max_length=16,
              return_tensors="pt")
    pixels = to_pixel_values(model_input_view(image, vm.preprocess), vm.preprocess)
    with torch.no_grad():
        if m.config.model_type == "siglip":
            t = m.get_text_features(input_ids=enc["input_ids"]).pooler_output
        else:
            t = m.get_text_features(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).pooler_output
        i = m.get_image_features(pixel_values=pixels).pooler_output
    t = t / t.norm(dim=-1, keepdim=True)
    i = i / i.norm(dim=-1, keepdim=True)
    logits = (i @ t.T)[0] * m.logit_scale.exp()
    if m.config.model_type == "siglip":
        return (logits + m.logit_bias).sigmoid()
    return logits.softmax(-1)


@pytest.mark.parametrize("name", ["clip16", "clip32", "siglip16", "siglip32"])
def test_zero_shot_probs_match_plain_reference(towers, cat, name):
    vm = towers[name]
    assert vm.is_zero_shot and vm.has_classifier and vm.geometry.num_prefix_tokens == (0 if "siglip" in name else 1)
    labelled = vizvit.model.engine.with_labels(vm, ", ".join(LABELS), "a photo of {}")
    a = engine.analyze(labelled, cat)
    want = plain_probs(vm, cat, LABELS, "a photo of {}")
    torch.testing.assert_close(a.probs, want.float(), rtol=1e-4, atol=1e-5)
    assert [p.label for p in a.top5] == [LABELS[int(i)] for i in want.argsort(descending=True)[:4]]
    assert labelled.zero_shot.rule == ("sigmoid" if "siglip" in name else "softmax")


def test_siglip_map_attention_and_rollout_match_plain_reference(towers, cat):
    vm = towers["siglip16"]
    a = engine.analyze(vm, cat)
    g = vm.geometry
    assert g.summary == "map" and a.attentions.shape[-1] == g.num_patches
    # the MAP head's attention, recomputed by hand from its probe and the final hidden state
    head = vm.vit.head
    x = vm.vit.post_layernorm(a.hidden_states[-1][None])
    mha = head.attention
    d, h = g.hidden_size, g.num_heads
    wq, wk, _ = mha.in_proj_weight.chunk(3)
    bq, bk, _ = mha.in_proj_bias.chunk(3)
    with torch.no_grad():
        q = (head.probe[0] @ wq.T + bq).reshape(h, d // h)  # (H, d)
        k = (x[0] @ wk.T + bk).reshape(-1, h, d // h).transpose(0, 1)  # (H, P, d)
        want = torch.stack([(k[i] @ q[i] / (d // h) ** 0.5).softmax(-1) for i in range(h)])  # (H, P)
        # and nn.MultiheadAttention's own weights
        _, w = mha(head.probe, x, x, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(a.summary_attention, want, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(a.summary_attention, w[0, :, 0], rtol=1e-4, atol=1e-6)
    # the pooled embedding equals HF's own pooler output
    with torch.no_grad():
        hf = vm.model.get_image_features(pixel_values=a.pixel_values).pooler_output[0]
    torch.testing.assert_close(a.image_embeds, hf, rtol=1e-4, atol=1e-5)
    # rollout ending with the MAP head: s · R_L, R by loops
    s = want.mean(0)  # (P,)
    n = g.num_patches
    r = torch.eye(n)
    for layer in range(g.num_layers):
        f = a.attentions[layer].mean(0)
        ah = 0.5 * f + 0.5 * torch.eye(n)
        ah = ah / ah.sum(-1, keepdim=True)
        r = ah @ r
    ref = (s @ r).reshape(g.grid)
    got = A.rollout_maps(a.attentions, g, summary=a.summary_weights)[-1]
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-6)
    assert abs(float(got.sum()) - 1.0) < 1e-4  # s sums to 1 and R is row-stochastic


def test_relevance_for_a_typed_label(towers, cat):
    """Chefer relevance of a label: gradients of that label's logit (its scaled similarity)."""
    from vizvit.methods.relevance import relevance_parts

    for name in ("clip16", "siglip16"):
        vm = vizvit.model.engine.with_labels(towers[name], LABELS)
        a = engine.analyze(vm, cat)
        r, s = relevance_parts(vm, a, 2)
        g = vm.geometry
        # reference: autograd of the label's logit w.r.t. each attention, by a plain loop
        pixels = a.pixel_values.clone().requires_grad_(True)
        with torch.enable_grad():
            out = engine._forward(vm, pixels, output_attentions=True)
            atts = list(out.attentions) + ([out.summary_attention] if out.summary_attention is not None else [])
            grads = torch.autograd.grad(out.logits[0, 2], atts)
        n = g.seq_len
        want = torch.eye(n)
        for l in range(g.num_layers):
            cam = (grads[l][0] * atts[l][0]).clamp(min=0).mean(0)
            want = want + cam @ want
        torch.testing.assert_close(r, want.detach(), rtol=1e-4, atol=1e-6)
        if name.startswith("siglip"):
            cam = (grads[-1][0, :, 0] * atts[-1][0, :, 0]).clamp(min=0).mean(0)
            torch.testing.assert_close(s, cam.detach(), rtol=1e-4, atol=1e-7)
        else:
            assert s is None


def test_a_label_typed_twice_runs_the_text_tower_once(towers, cat):
    vm = towers["clip32"]
    wb = Workbench()
    wb.add_model(vm)
    sha = wb.add_photo(cat)
    calls: list[int] = []
    embedding = vm.model.text_model.embeddings.token_embedding
    h = embedding.register_forward_hook(lambda m, i, o: calls.append(i[0].shape[0]))
    image_runs: list[int] = []
    hv = vm.vit.register_forward_hook(lambda *a: image_runs.append(1))
    try:
        key = PhotoKey(vm.id, sha, labels=("a cat", "a dog"), template="a photo of {}")
        a1 = wb.analysis(key)
        n_text, n_image = len(calls), len(image_runs)
        assert n_text == 1 and n_image == 1
        a2 = wb.analysis(key)  # the same list again: nothing runs
        assert len(calls) == 1 and len(image_runs) == 1
        torch.testing.assert_close(a1.probs, a2.probs)
        # a new label in a new list: one text forward of the ONE new prompt, no image forward
        key3 = PhotoKey(vm.id, sha, labels=("a dog", "a fish", "a cat"), template="a photo of {}")
        a3 = wb.analysis(key3)
        assert len(calls) == 2 and calls[-1] == 1 and len(image_runs) == 1
        assert [p.label for p in a3.top5][0] in ("a dog", "a fish", "a cat")
        assert wb.handle(key3).vm.labels == ("a dog", "a fish", "a cat")
    finally:
        h.remove()
        hv.remove()


def test_labels_parse_and_template_errors():
    from vizvit.model.zeroshot import check_template, parse_labels

    assert parse_labels(" a cat, a dog ;a cat\n a  teapot ,, ") == ("a cat", "a dog", "a teapot")
    assert check_template("") == "" and check_template("a photo of {}") == "a photo of {}"
    with pytest.raises(ValueError, match="exactly one"):
        check_template("a photo")
    with pytest.raises(ValueError):
        parse_labels(",".join(f"x{i}" for i in range(200)))


def test_random_towers_offline():
    for name, prefix, summary in (("random:clip-vit-base-patch16", 1, "cls"),
                                  ("random:siglip-base-patch16-224", 0, "map")):
        vm = vizvit.load_model(name, device="cpu")
        assert not vm.is_pretrained and "UNTRAINED" in vm.display_name
        assert vm.geometry.num_prefix_tokens == prefix and vm.geometry.summary == summary
        assert vm.geometry.grid == (14, 14) and vm.is_zero_shot and vm.labels
        lab = vizvit.model.engine.with_labels(vm, "a cat, a dog")
        assert lab.labels == ("a cat", "a dog") and lab.zero_shot.text_embeds.shape[0] == 2
    from vizvit.model.catalog import random_twin

    assert random_twin("openai/clip-vit-base-patch16") == "random:clip-vit-base-patch16"
    assert random_twin("google/siglip-base-patch16-224") == "random:siglip-base-patch16-224"


@pytest.mark.parametrize("name", ["clip32", "siglip16"])
def test_export_with_labels(towers, tmp_path, name):
    from vizvit.export import export

    s = export(Path(__file__).resolve().parents[2] / "assets/examples/chelsea.jpg", tmp_path, towers[name],
               labels="a cat,a dog", charts_png=False)  # charts as PNG: tests/test_export.py
    z = np.load(tmp_path / "arrays.npz")
    assert z["zero_shot_probs"].shape == (2,) and list(z["label_names"]) == ["a cat", "a dog"]
    g = towers[name].geometry
    assert z["patch_label_cosine"].shape == (2, *g.grid) and np.abs(z["patch_label_cosine"]).max() <= 1 + 1e-5
    assert z["relevance"].shape == g.grid and z["rollout"].shape == (g.num_layers, *g.grid)
    assert s["zero_shot"]["labels"] == ["a cat", "a dog"]
    if name.startswith("siglip"):
        assert z["summary_attention"].shape == (g.num_heads, *g.grid)
        assert s["zero_shot"]["rule"] == "sigmoid"
