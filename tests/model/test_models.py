"""load_model: local checkpoints, random architectures, bad names, no classifier."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from transformers import (
    BertConfig,
    BertModel,
    SwinConfig,
    SwinModel,
    ViTConfig,
    ViTForImageClassification,
    ViTModel,
)

import vizvit
from vizvit.methods import maths as att_mod
from vizvit.model import catalog, engine, positional
from vizvit.model.catalog import Catalog, random_twin
from vizvit.model.images import View
from vizvit.model.models import (
    FAMILIES,
    PATCH_MEAN,
    RANDOM_ARCHS,
    RANDOM_PREFIX,
    geometry_of,
    register_family,
    unregister_family,
)
from vizvit.model.tokens import norm_outliers
from vizvit.session import PhotoKey, Workbench
from vizvit.views import VIEWS


def test_vit_b16_architecture_has_the_published_parameter_count():
    vm = vizvit.load_model("random:vit-base-patch16-224", device="cpu")
    assert vm.num_parameters == 86_567_656
    assert not vm.is_pretrained and "UNTRAINED" in vm.display_name
    g = vm.geometry
    assert (g.grid, g.seq_len, g.num_layers, g.num_heads, g.hidden_size) == ((14, 14), 197, 12, 12, 768)
    assert len(vm.labels) == 1000 and vm.labels[281] == "tabby, tabby cat"
    assert vm.model.config._attn_implementation == "eager"
    assert not vm.model.training


def test_random_weights_are_seeded():
    a = vizvit.load_model("random:vit-base-patch32-384", device="cpu")
    b = vizvit.load_model("random:vit-base-patch32-384", device="cpu")
    assert torch.equal(a.model.classifier.weight, b.model.classifier.weight)
    assert a.geometry.grid == (12, 12)


def test_local_checkpoint(tiny):
    assert tiny.is_pretrained
    assert tiny.labels[3] == "thing 3"
    assert tiny.model.config._attn_implementation == "eager"
    assert tiny.device == torch.device("cpu")


def test_geometry_is_read_from_config():
    g = geometry_of(ViTConfig(image_size=384, patch_size=32, num_hidden_layers=3, num_attention_heads=4,
                              hidden_size=64))
    assert g.grid == (12, 12) and g.seq_len == 145 and g.num_layers == 3 and g.num_heads == 4


def test_backbone_without_classifier_loads(tmp_path, cat):
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                    patch_size=32)
    ViTModel(cfg, add_pooling_layer=False).save_pretrained(tmp_path)
    vm = vizvit.load_model(str(tmp_path), device="cpu")
    assert not vm.has_classifier and vm.labels == ()
    a = vizvit.analyze(vm, cat)
    assert a.logits is None and a.top5 == () and a.attentions.shape == (2, 2, 50, 50)


@pytest.mark.parametrize("name", ["nobody/no-such-model-xyz", "random:vit-gigantic"])
def test_unknown_model_says_what_to_do(name):
    with pytest.raises(ValueError, match="random:vit-base-patch16-224"):
        vizvit.load_model(name, device="cpu")


def test_not_a_vit_is_refused(tmp_path):
    BertModel(BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="not a ViT"):
        vizvit.load_model(str(tmp_path), device="cpu")


def test_device_choice():
    from vizvit.model.models import pick_device

    expect = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available() and getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        expect = "mps"
    assert pick_device("auto").type == expect
    assert pick_device("cpu").type == "cpu"
    with pytest.raises(ValueError):
        pick_device("tpu-9000")


# ---- formerly tests/test_models_families.py
# Every ViT family (DeiT distilled, DINO v1, DINOv2, DINOv2 with registers, BEiT) through the
# same load_model -> analyze -> views path, against plain references written here.

LAYOUTS = {
    "deit": ("[CLS]", "[DIST]"),
    "dinov2": ("[CLS]",),
    "dinov2_reg": ("[CLS]", "[REG1]", "[REG2]", "[REG3]", "[REG4]"),
    "beit": ("[CLS]",),
    "dino": ("[CLS]",),
}


def plain_rollout(att: torch.Tensor, row: int | None) -> torch.Tensor:
    """(L, H, N, N) -> (L, N): rollout with loops, Â = ½·mean_h A + ½I rows renormalised; the
    row of token `row`, or the mean of the patch rows (row None, with the prefix count below)."""
    n = att.shape[-1]
    r = torch.eye(n, dtype=torch.float64)
    out = []
    for a in att.double():
        f = sum(a[h] for h in range(a.shape[0])) / a.shape[0]
        ah = 0.5 * f + 0.5 * torch.eye(n, dtype=torch.float64)
        ah = ah / ah.sum(1, keepdim=True)
        r = ah @ r
        out.append(r)
    return torch.stack(out)


def test_token_layout_comes_from_geometry(families, cat):
    for name, vm in families.items():
        g = vm.geometry
        assert g.prefix_names == LAYOUTS[name], name
        a = vizvit.analyze(vm, cat)
        n = g.seq_len
        assert a.attentions.shape[-2:] == (n, n) and a.hidden_states.shape[1] == n, name
        assert g.token_names[:g.num_prefix_tokens] == LAYOUTS[name]
        assert g.token_names[g.num_prefix_tokens] == "patch 0" and g.token_names[-1] == f"patch {g.num_patches - 1}"
    assert families["dinov2_reg"].geometry.register_tokens == (1, 2, 3, 4)
    assert families["deit"].geometry.summaries == ("[CLS]", "[DIST]")
    assert families["beit"].geometry.summaries == (PATCH_MEAN, "[CLS]")  # use_mean_pooling


def test_what_a_dinov2_head_reads_is_cls_and_the_patch_mean(families, dino_classifiers):
    """The family says what the head reads (Geometry.summaries, the page's sentence): a DINOv2 classifier
    (with or without registers) reads [CLS] ⊕ the patch mean, [CLS] the default map; a self-supervised
    checkpoint, of the same family, has no head and [CLS] alone sums the photo up."""
    for name, ssl in (("dinov2_cls", "dinov2"), ("dinov2_reg_cls", "dinov2_reg")):
        vm, bare = dino_classifiers[name], families[ssl]
        assert vm.family is bare.family and vm.has_classifier and not bare.has_classifier
        assert vm.geometry.summaries == ("[CLS]", PATCH_MEAN), name
        assert bare.geometry.summaries == ("[CLS]",), ssl
        assert vm.family.pooling == "cls+mean"
        assert "[CLS] ⊕ the mean of the patch tokens" in vm.family.head_text
    assert "the patch mean leaves them out" in dino_classifiers["dinov2_reg_cls"].family.head_text


def test_dinov2_runs_at_its_processor_size_not_its_training_size(families):
    g = families["dinov2"].geometry
    assert g.image_size == (112, 112) and g.grid == (8, 8), "trained at 126 px (9×9), run at 112 px (8×8)"


@pytest.mark.parametrize("name", ["deit", "dinov2_reg", "beit", "dinov2_reg_cls"])
def test_rollout_from_each_prefix_token_matches_a_plain_loop(families, dino_classifiers, cat, name):
    vm = {**families, **dino_classifiers}[name]
    g = vm.geometry
    a = vizvit.analyze(vm, cat)
    p = g.num_prefix_tokens
    ref = plain_rollout(a.attentions, None)  # (L, N, N)
    for i, token in enumerate(g.prefix_names):
        got = att_mod.rollout_maps(a.attentions, g, summary=token).double()
        want = ref[:, i, p:].reshape(-1, *g.grid)
        assert torch.allclose(got, want, atol=1e-6), f"{name}: rollout from {token}"
    if PATCH_MEAN in g.summaries:
        got = att_mod.rollout_maps(a.attentions, g, summary=PATCH_MEAN).double()
        want = ref[:, p:, p:].mean(1).reshape(-1, *g.grid)
        assert torch.allclose(got, want, atol=1e-6), "rollout from the patch mean (no register in it)"


@pytest.mark.parametrize("name", ["deit", "dinov2_reg", "beit", "dino"])
def test_token_drop_keeps_prefix_and_registers_and_matches_a_masked_forward(families, cat, name):
    """Dropping tokens = masking them as keys in a full forward (a token only meets others through
    attention). BEiT's relative bias must then be cut to the kept rows and columns too."""
    vm = families[name]
    g = vm.geometry
    mask = (0, 3, g.num_patches - 1)
    a = vizvit.analyze(vm, cat, View(mask=mask, mask_mode="drop"))
    keep = a.kept_tokens
    assert keep[:g.num_prefix_tokens].tolist() == list(range(g.num_prefix_tokens)), "prefix and registers kept"
    assert keep.numel() == g.seq_len - len(mask)
    n = g.seq_len
    additive = torch.zeros(1, 1, n, n)
    gone = torch.ones(n, dtype=torch.bool)
    gone[keep] = False
    additive[..., gone] = float("-inf")
    with torch.no_grad():
        out = vm.model(a.pixel_values, attention_mask=additive, output_hidden_states=True)
    ref = out.hidden_states[-1][0, keep]
    assert torch.allclose(a.hidden_states[-1], ref, atol=1e-5), name
    if PATCH_MEAN in g.summaries:  # the pooled head averages the kept patches only
        want = vm.model.classifier(vm.family.final_norm(vm.vit)(ref[g.num_prefix_tokens:].mean(0)))
        assert torch.allclose(a.logits, want, atol=1e-5)
    elif getattr(out, "logits", None) is not None:
        assert torch.allclose(a.logits, out.logits[0], atol=1e-5)


def test_beit_relative_bias_table_matches_its_own_computed_bias(families):
    vm = families["beit"]
    g = vm.geometry
    gh, gw = g.grid
    rb = positional.relative_bias(engine.position_tables(vm))
    mods = vm.family.bias_modules(vm.vit)
    assert rb.tables.shape == (g.num_layers, g.num_heads, 2 * gh - 1, 2 * gw - 1) and not rb.shared
    assert rb.special.shape == (g.num_layers, g.num_heads, 3)
    rows, cols = np.divmod(np.arange(g.num_patches), gw)
    for l, m in enumerate(mods):
        with torch.no_grad():
            bias = m(g.grid)[0].numpy()  # (H, 1+P, 1+P), what the layer adds to its logits
        for h in range(g.num_heads):
            for i in range(g.num_patches):
                for j in (0, 5, g.num_patches - 1, i):
                    want = bias[h, 1 + i, 1 + j]
                    got = rb.tables[l, h, rows[i] - rows[j] + gh - 1, cols[i] - cols[j] + gw - 1]
                    assert got == pytest.approx(want, abs=1e-6), (l, h, i, j)
            assert rb.special[l, h, 0] == pytest.approx(bias[h, 0, 1])  # [CLS] → patch
            assert rb.special[l, h, 1] == pytest.approx(bias[h, 1, 0])  # patch → [CLS]
            assert rb.special[l, h, 2] == pytest.approx(bias[h, 0, 0])  # [CLS] → [CLS]


@pytest.mark.parametrize("name", ["dinov2", "dinov2_reg"])
@pytest.mark.parametrize("size", [112, 168])
def test_dinov2_position_interpolation_matches_its_forward_at_that_size(families, name, size):
    """The embedding stage's output minus the patch conv's is the patch positions the forward used."""
    vm = families[name]
    g = vm.geometry
    px = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(size))
    emb = vm.vit.embeddings
    with torch.no_grad():
        seq = emb(px)[0]  # (1 + R + P', D)
        conv = emb.patch_embeddings(px)[0]  # (P', D)
    used = seq[g.num_prefix_tokens:] - conv
    ours = positional.positions_at(engine.position_tables(vm), (size // g.patch_size, size // g.patch_size))
    assert ours.shape == used.shape
    assert torch.allclose(ours, used, atol=1e-5), f"{name} at {size} px"


def test_embedding_stage_by_hand_matches_the_forward_for_every_family(families, cat):
    for name, vm in families.items():
        a = vizvit.analyze(vm, cat)
        st = engine.embedding_stage(vm, a)
        assert st.embed_vs_forward < 1e-5, name
        assert st.shapes[-1][1] == (1, vm.geometry.seq_len, vm.geometry.hidden_size), name


def test_deit_shows_both_heads_and_their_mean(families, cat):
    vm = families["deit"]
    a = vizvit.analyze(vm, cat)
    assert set(a.head_logits) == {"[CLS] head", "[DIST] head"}
    final = vm.vit.layernorm(a.hidden_states[-1][None])[0]  # (N, D)
    cls = vm.model.cls_classifier(final[0])
    dist = vm.model.distillation_classifier(final[1])
    assert torch.allclose(a.head_logits["[CLS] head"], cls, atol=1e-5)
    assert torch.allclose(a.head_logits["[DIST] head"], dist, atol=1e-5)
    assert torch.allclose(a.logits, (cls + dist) / 2, atol=1e-5)


def test_norm_outliers_use_a_far_out_fence():
    norms = torch.ones(2, 4, 4)
    norms[1, 2, 3] = 50.0  # one artifact patch at depth 1
    norms[0] += torch.arange(16).reshape(4, 4) * 0.01
    out = norm_outliers(norms)
    assert out[1].sum() == 1 and out[1, 2, 3] and not out[0].any()


def test_export_writes_the_token_layout_and_per_family_keys(families, tmp_path):
    from tiny import EXAMPLES

    from vizvit.export import export

    # charts as PNG (kaleido, a browser: seconds a call) are the same code for every family: tests/test_export.py
    s = export(EXAMPLES / "chelsea.jpg", tmp_path / "beit", families["beit"], charts_png=False)
    g = families["beit"].geometry
    assert s["geometry"]["token_layout"][:2] == ["[CLS]", "patch 0"]
    assert s["family"]["position_encoding"] == "relative bias"
    arr = np.load(tmp_path / "beit" / "arrays.npz")
    assert arr["relative_position_bias"].shape == (g.num_layers, g.num_heads, 2 * g.grid[0] - 1, 2 * g.grid[1] - 1)
    assert "pos_similarity" not in arr
    s = export(EXAMPLES / "chelsea.jpg", tmp_path / "deit", families["deit"], charts_png=False)
    assert s["geometry"]["token_layout"][:3] == ["[CLS]", "[DIST]", "patch 0"]
    assert set(s["head_top5"]) == {"[CLS] head", "[DIST] head"}
    arr = np.load(tmp_path / "deit" / "arrays.npz")
    g = families["deit"].geometry
    assert arr["attentions"].shape[-1] == g.seq_len == 2 + g.num_patches
    assert arr["prefix_rollout"].shape == (2, g.num_layers, *g.grid)


def test_not_vits_say_why(tmp_path):
    SwinModel(SwinConfig(embed_dim=16, depths=[1, 1], num_heads=[1, 1], image_size=64, window_size=4)
              ).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="shifted local windows.*DINOv2 with registers"):
        vizvit.load_model(str(tmp_path), device="cpu")


def test_every_random_family_architecture_has_its_layout_and_a_twin():
    for hub_id, arch in [("facebook/deit-base-distilled-patch16-224", "deit-base-distilled-patch16-224"),
                         ("facebook/dinov2-small", "dinov2-small"),
                         ("facebook/dinov2-with-registers-small", "dinov2-with-registers-small"),
                         ("microsoft/beit-base-patch16-224", "beit-base-patch16-224")]:
        assert arch in RANDOM_ARCHS and hub_id in catalog.CURATED and catalog.CURATED[hub_id] > 0
        assert catalog.random_twin(hub_id) == RANDOM_PREFIX + arch
        assert RANDOM_ARCHS[arch][0] in FAMILIES


def test_random_dinov2_with_registers_builds_with_its_layout(cat):
    vm = vizvit.load_model("random:dinov2-with-registers-small", device="cpu")
    g = vm.geometry
    assert g.prefix_names == ("[CLS]", "[REG1]", "[REG2]", "[REG3]", "[REG4]")
    assert g.grid == (16, 16) and g.patch_size == 14 and not vm.has_classifier
    a = engine.analyze(vm, cat)
    assert a.attentions.shape[-1] == 5 + 256


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_export_cli_works_for_every_family(family_dirs, tmp_path, name, capsys):
    """The command line's export of each family's model, in this process (`python -m vizvit` itself and
    the charts as PNG, the same for every family: tests/test_export.py)."""
    import json

    from tiny import EXAMPLES

    from vizvit.__main__ import main

    rc = main(["export", str(EXAMPLES / "coffee.jpg"), "--model", str(family_dirs[name]), "--device", "cpu",
               "--out", str(tmp_path), "--quiet", "--no-png"])
    assert rc == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert tuple(summary["geometry"]["token_layout"][:len(LAYOUTS[name])]) == LAYOUTS[name]
    arrays = np.load(tmp_path / "arrays.npz")
    assert set(summary["arrays"]) == set(arrays.files)
    n = len(summary["geometry"]["token_layout"])
    assert arrays["attentions"].shape[-2:] == (n, n)


# ---- formerly tests/test_models_registry.py
# A family is one entry (issue 26): registering a new ``Family`` (here a copy of the ViT family
# under its own model_type, with its own random architecture and curated checkpoint) is enough for
# its models to load, be analysed by every tab and appear in the catalog; no other code changes.

KEY = "throwaway_vit"
ARCH = "throwaway-vit-tiny"
HUB_ID = "someone/" + ARCH


class ThrowawayConfig(ViTConfig):
    model_type = KEY


class ThrowawayViT(ViTForImageClassification):
    config_class = ThrowawayConfig


@pytest.fixture
def throwaway():
    fam = dataclasses.replace(
        FAMILIES["vit"], key=KEY, title="Throwaway ViT", classes=("ThrowawayViT",), random_class=ThrowawayViT,
        config_class=ThrowawayConfig,
        random_archs={ARCH: dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                 image_size=64, patch_size=16)},
        curated={HUB_ID: 1})
    register_family(fam)
    try:
        yield fam
    finally:
        unregister_family(KEY)


def test_a_registered_family_loads_analyses_and_is_listed(throwaway, cat):
    assert ARCH in RANDOM_ARCHS and RANDOM_ARCHS[ARCH][0] == KEY
    assert HUB_ID in catalog.CURATED and random_twin(HUB_ID) == RANDOM_PREFIX + ARCH
    wb = Workbench(catalog=Catalog(RANDOM_PREFIX + ARCH), device="cpu")
    assert HUB_ID in wb.catalog.ids and RANDOM_PREFIX + ARCH in wb.catalog.ids
    vm = wb.model(RANDOM_PREFIX + ARCH)  # through the catalog's gate and load_model
    assert vm.family is throwaway and vm.geometry.family == KEY and vm.model.config.model_type == KEY
    g = vm.geometry
    assert g.grid == (4, 4) and g.prefix_names == ("[CLS]",)
    a = vizvit.analyze(vm, cat)
    assert a.attentions.shape == (2, 2, g.seq_len, g.seq_len) and a.probs.shape == (1000,)
    ph = wb.handle(PhotoKey(vm.id, wb.add_photo(cat)))
    arrays = {k: v for view in VIEWS for k, v in view.export_arrays(ph).items()}  # every tab
    assert arrays["rollout"].shape == (2, 4, 4) and arrays["pos_similarity"].shape == (16, 16)
    assert arrays["logit_lens"].shape == (3, 1000) and np.isfinite(arrays["deletion_curves"]).all()


def test_unregistering_takes_the_family_out_again(throwaway):
    unregister_family(KEY)
    assert KEY not in FAMILIES and ARCH not in RANDOM_ARCHS and HUB_ID not in catalog.CURATED
    with pytest.raises(ValueError, match="Unknown random architecture"):
        vizvit.load_model(RANDOM_PREFIX + ARCH, device="cpu")


def test_a_random_architecture_belongs_to_one_family():
    clash = dataclasses.replace(FAMILIES["vit"], key=KEY, random_archs={"vit-base-patch16-224": {}})
    with pytest.raises(ValueError, match="another family"):
        register_family(clash)
    assert KEY not in FAMILIES


def test_no_family_branch_outside_models_and_the_engine():
    """Views and the rest ask a Family or Geometry for a property: no model_type or family-key test."""
    import re
    from pathlib import Path

    root = Path(vizvit.__file__).parent
    keys = "|".join(re.escape(k) for k in FAMILIES)
    pattern = re.compile(rf"model_type\s*[!=]=|\.key\s*[!=]=|family\s*[!=]=|[!=]=\s*[\"']({keys})[\"']|"
                         rf"[\"']({keys})[\"']\s*[!=]=|summary\s*[!=]=\s*[\"']map[\"']|\.pe\s*[!=]=")
    hits = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py") if p.name not in ("models.py", "engine.py")
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == [], hits


def test_a_random_model_built_while_another_thread_loads_a_checkpoint_is_the_same_random_model(tmp_path, monkeypatch):
    """transformers' from_pretrained makes torch.nn.init's functions no-ops process-wide while it builds
    (no_init_weights): a random model built then in another thread kept uninitialised weights (seen in
    the page tests: the twin's top-1 'centipede' instead of 'ear'). Here a checkpoint's load holds that
    state for a while; the random model asked for meanwhile must equal one built alone."""
    import threading
    import time

    from transformers import PreTrainedModel, ViTConfig, ViTForImageClassification
    from transformers.initialization import no_init_weights

    from vizvit.model import models

    ViTForImageClassification(ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=64, image_size=32, patch_size=16,
                                        num_labels=3)).save_pretrained(tmp_path)
    alone = models._random_model("vit-tiny-patch16-224").state_dict()
    inside = threading.Event()
    original = PreTrainedModel.from_pretrained.__func__

    def slow(cls, *a, **k):
        with no_init_weights():  # what from_pretrained does while it builds, held a while
            inside.set()
            time.sleep(1.5)
        return original(cls, *a, **k)

    monkeypatch.setattr(PreTrainedModel, "from_pretrained", classmethod(slow))
    loader = threading.Thread(target=models._pretrained_model, args=(str(tmp_path),))
    loader.start()
    assert inside.wait(60)
    during = models._random_model("vit-tiny-patch16-224").state_dict()
    loader.join()
    assert all(torch.equal(alone[k], during[k]) for k in alone)
