"""What the page says and returns for the families whose tokens are not ViT's (an audit, 2026-12-06):
SigLIP has no [CLS], BEiT's head reads the patch mean, DINOv2 with registers has five tokens in front,
CLIP layer-norms before block 1. Every number is checked against the model's own config or a plain
computation on its attentions and hidden states, not against the view's own output."""

from __future__ import annotations

import json

import numpy as np
import torch

from vizvit.api import PublicApi
from vizvit.export import methods_used
from vizvit.readings import embeddings as re_, lesson as rl
from vizvit.session import PhotoKey, Workbench
from vizvit.views import embeddings, patches, positions


def handle(vm, cat):
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(vm)
    return wb, wb.handle(PhotoKey(vm.id, wb.add_photo(cat)))


def test_siglip_has_no_cls_position_and_says_so_in_strict_json(towers, tiny16, cat):
    vm = towers["siglip32"]
    wb, ph = handle(vm, cat)
    page = positions.show(ph, positions.PositionsParams())
    assert page.cls is None, "a chart of [CLS]'s position for a model without [CLS]"
    assert "no [CLS] token" in page.text and "[CLS] excluded" not in page.text and "nan" not in page.text
    answer = PublicApi(wb).positions(vm.id, 0, 0)
    json.dumps(answer, allow_nan=False)  # NaN is no JSON: a client's parser would refuse the answer
    assert answer["cls_similarity"] is None
    assert "cls_pos_similarity" not in positions.export_arrays(ph)
    assert "cls_pos_similarity_chart" not in positions.export_figures(ph)
    res = positions.resolution_panel(ph, 384)
    assert ";  " not in res.text and " keeps its own" not in res.text  # no clause about a token it lacks
    _, vit = handle(tiny16, cat)
    assert positions.show(vit, positions.PositionsParams()).cls is not None  # a ViT keeps its chart


def test_a_patch_click_names_cls_only_where_there_is_one(towers, tiny16, cat):
    for vm, has_cls in ((towers["siglip32"], False), (tiny16, True)):
        _, ph = handle(vm, cat)
        a = ph.analysis()
        text = embeddings.similarity_panel(vm, a, re_.data(ph), 1, (0, 0)).text
        h = a.hidden_states[1].double()
        p = vm.geometry.num_prefix_tokens
        cos_cls = float(torch.nn.functional.cosine_similarity(h[p], h[0], dim=0))
        assert (f"[CLS] = {cos_cls:+.3f}" in text) == has_cls, text
        assert ("cosine to **[CLS]" in text) == has_cls, text


def test_the_embedding_steps_table_has_one_row_per_step_with_its_shape(towers, families, cat):
    """Each family's rows and shapes from its config: SigLIP prepends nothing (its positions row was shown
    as 'prepend'), CLIP layer-norms (its row was dropped), DINOv2 inserts 4 registers after positions."""
    for vm in (towers["siglip32"], towers["clip32"], families["dinov2_reg"], families["deit"]):
        _, ph = handle(vm, cat)
        g, cfg = vm.geometry, vm.vit.config
        P, D = g.num_patches, cfg.hidden_size
        rows = {r[0]: r[1] for r in embeddings.stage_panel(vm, re_.data(ph)).steps}
        pe = 2 if vm.family.key == "deit" else (0 if vm.family.key == "siglip" else 1)
        assert rows["+ position embeddings"] == str((1, pe + P, D)), rows
        assert any(k.startswith("prepend") for k in rows) == (pe > 0), rows
        assert ("pre-layernorm" in rows) == (vm.family.key == "clip"), rows
        if g.num_registers:
            assert rows[f"insert {g.num_registers} registers"] == str((1, 1 + g.num_registers + P, D)), rows
        assert len(rows) == len(re_.data(ph).stage.shapes)
        depth0 = embeddings.depth_panel(vm, ph.analysis(), re_.data(ph), 0).text
        assert ("[CLS]" in depth0.split("embedding stage (")[1].split(")")[0]) == (pe > 0), depth0


def test_the_api_attention_map_is_read_from_the_family_summary(towers, families, cat):
    """/attention as the Attention tab reads it: SigLIP's from its MAP head's weights (s·A), BEiT's from
    the mean of the patch rows, labelled so (it said '[CLS]' and, for SigLIP, read the patch mean)."""
    for vm, who in ((towers["siglip32"], "MAP head"), (families["beit"], "patch mean")):
        wb, ph = handle(vm, cat)
        a = ph.analysis()
        g = a.geometry
        got = PublicApi(wb).attention(cat, vm.id, 2, "mean")
        A = a.attentions[1].double().mean(0)  # (N, N) layer 2, heads' mean
        p = g.num_prefix_tokens
        row = a.summary_weights.double() @ A if who == "MAP head" else A[p:].mean(0)
        assert got["query"] == who
        np.testing.assert_allclose(np.array(got["map"]).ravel(), row[p:].numpy(), atol=1e-6)


def test_lesson_cost_and_rollout_count_this_models_tokens(towers, families, cat):
    steps = {s.measure: s for s in rl.steps()}
    for vm in (towers["siglip32"], families["dinov2_reg"], families["beit"]):
        _, ph = handle(vm, cat)
        g = vm.geometry
        n = g.num_prefix_tokens + g.num_patches  # the sequence the blocks see
        cost = rl.MEASURES["cost"](ph, steps["cost"]).line
        assert f"{n * n:,} for patch tokens" in cost, cost
        line = rl.MEASURES["rollout"](ph, steps["rollout"]).line
        assert "[CLS]'s" not in line or g.summaries[0] == "[CLS]", line
        if g.num_prefix_tokens == 0:
            assert "no tokens in front of the patches" in line and "the rest on" not in line, line


def test_the_exports_method_notes_follow_the_family(towers, families, dino_classifiers):
    beit, reg, siglip, clip = families["beit"], dino_classifiers["dinov2_reg_cls"], towers["siglip32"], towers["clip32"]
    m = methods_used(beit)
    assert "relative_position_bias" in m and "pos_similarity" not in m and "position_interpolation" not in m
    assert "mean of the patch tokens" in m["logit_lens"] and "[CLS] after block" not in m["logit_lens"]
    assert "antialiased" in methods_used(reg)["position_interpolation"]
    assert "sigmoid" in methods_used(siglip)["logit_lens"]
    assert "softmax of the logits" not in methods_used(siglip)["logit_lens"]
    assert "softmax of the logits" in methods_used(beit)["logit_lens"]
    assert "projection" not in methods_used(siglip)["patch_label_cosine"]
    assert "image projection" in methods_used(clip)["patch_label_cosine"]


def test_siglip_sentences_have_no_empty_token_names(towers, cat):
    vm = towers["siglip32"]
    text = patches.patches_explanation(vm)
    assert "with  in front" not in text and "no token in front" in text
