"""load_model: local checkpoints, random architectures, bad names, no classifier."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertModel, ViTConfig, ViTModel

import vizvit
from vizvit.models import geometry_of


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
    from vizvit.models import pick_device

    expect = "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available() and getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        expect = "mps"
    assert pick_device("auto").type == expect
    assert pick_device("cpu").type == "cpu"
    with pytest.raises(ValueError):
        pick_device("tpu-9000")
