"""Tiny models of every family, built from their configs and saved with save_pretrained, so tests
load them through the product's own path (vizvit.load_model), with no network; and where the
examples and the trained ViT-Ti are."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from tokenizers.processors import TemplateProcessing
from transformers import (
    CLIPConfig,
    CLIPImageProcessorPil,
    CLIPModel,
    PreTrainedTokenizerFast,
    SiglipConfig,
    SiglipImageProcessorPil,
    SiglipModel,
    ViTConfig,
    ViTForImageClassification,
    ViTImageProcessorPil,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "assets" / "examples"

# name -> (image_size, patch_size): 224/16 gives a 14×14 grid, 224/32 a 7×7 one.
GEOMETRIES = {"p16": (224, 16), "p32": (224, 32)}
# A non-square ViT (conftest's tiny_rect): 160×224 px at patch 32, a 5×7 grid and position table.
RECT = ((160, 224), 32)


def make_tiny_vit(path: Path, image_size: int | tuple[int, int], patch_size: int, num_labels: int = 7,
                  seed: int = 0) -> Path:
    config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, image_size=image_size, patch_size=patch_size,
                       num_labels=num_labels,
                       id2label={i: f"thing {i}" for i in range(num_labels)},
                       label2id={f"thing {i}": i for i in range(num_labels)})
    torch.manual_seed(seed)
    return save_perturbed(ViTForImageClassification(config), path, image_size)


def save_perturbed(model: torch.nn.Module, path: Path, size: int | tuple[int, int]) -> Path:
    """Random init leaves position embeddings tiny (and BEiT's bias table at zero): perturb every
    parameter so each part matters in tests, then save the model and a processor for size×size
    (or (height, width))."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    model.save_pretrained(path)
    h, w = (size, size) if isinstance(size, int) else size
    ViTImageProcessorPil(size={"height": h, "width": w}).save_pretrained(path)
    return path


# Tiny models of every other family, through the same save_pretrained -> load_model path:
# name -> (config class, model class, config numbers, processor size or None).
_TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
FAMILY_CONFIGS = {
    # DeiT distilled: [CLS] and [DIST], two heads whose logits are averaged; 7×7 grid.
    "deit": ("DeiTConfig", "DeiTForImageClassificationWithTeacher",
             dict(_TINY, image_size=224, patch_size=32, num_labels=7), 224),
    # DINOv2: patch 14, trained at 126 px (9×9 table), run at 112 px (8×8): interpolated positions;
    # SwiGLU MLP and LayerScale on.
    "dinov2": ("Dinov2Config", "Dinov2Model",
               dict(_TINY, image_size=126, patch_size=14, mlp_ratio=2, use_swiglu_ffn=True, layerscale_value=0.5),
               112),
    # DINOv2 with 4 registers between [CLS] and the patches.
    "dinov2_reg": ("Dinov2WithRegistersConfig", "Dinov2WithRegistersModel",
                   dict(_TINY, image_size=126, patch_size=14, mlp_ratio=2, num_register_tokens=4), 112),
    # BEiT: relative position bias per layer, no absolute positions, mean pooling head.
    "beit": ("BeitConfig", "BeitForImageClassification",
             dict(_TINY, image_size=112, patch_size=16, num_labels=7, use_relative_position_bias=True,
                  use_absolute_position_embeddings=False, use_mean_pooling=True, layer_scale_init_value=0.1),
             112),
    # DINO v1: a ViT without a classifier.
    "dino": ("ViTConfig", "ViTModel", dict(_TINY, image_size=224, patch_size=32), 224),
}


# DINOv2 image classifiers (tests: conftest's dino_classifiers): the head reads [CLS] ⊕ the mean of the
# patch tokens (the registers left out), 2·D wide; numbers as the self-supervised tiny ones above.
DINO_CLASSIFIERS = {
    "dinov2_cls": ("Dinov2Config", "Dinov2ForImageClassification",
                   dict(FAMILY_CONFIGS["dinov2"][2], num_labels=5), 112),
    "dinov2_reg_cls": ("Dinov2WithRegistersConfig", "Dinov2WithRegistersForImageClassification",
                       dict(FAMILY_CONFIGS["dinov2_reg"][2], num_labels=5), 112),
}


# BEiTs whose config departs from the published ones' relative bias (tests/views/test_beit_positions.py): an
# absolute position table instead, both, or no position information at all. No published BEiT is built so.
BEIT_POSITIONS = {
    "beit_abs": ("BeitConfig", "BeitForImageClassification",
                 dict(FAMILY_CONFIGS["beit"][2], use_relative_position_bias=False,
                      use_absolute_position_embeddings=True), 112),
    "beit_both": ("BeitConfig", "BeitForImageClassification",
                  dict(FAMILY_CONFIGS["beit"][2], use_absolute_position_embeddings=True), 112),
    "beit_nopos": ("BeitConfig", "BeitForImageClassification",
                   dict(FAMILY_CONFIGS["beit"][2], use_relative_position_bias=False), 112),
}


def make_tiny_family(path: Path, name: str, seed: int = 0) -> Path:
    cfg_cls, model_cls, numbers, size = {**FAMILY_CONFIGS, **DINO_CLASSIFIERS, **BEIT_POSITIONS}[name]
    config = getattr(transformers, cfg_cls)(**numbers)
    if "num_labels" in numbers:
        n = numbers["num_labels"]
        config.id2label = {i: f"thing {i}" for i in range(n)}
        config.label2id = {f"thing {i}": i for i in range(n)}
    torch.manual_seed(seed)
    cls = getattr(transformers, model_cls)
    model = cls(config, add_pooling_layer=False) if model_cls == "ViTModel" else cls(config)
    return save_perturbed(model, path, size)


def trained_dir() -> Path | None:
    """The real ImageNet ViT-Ti/16 (../shared/models/vit-tiny-augreg, or VIZVIT_TRAINED), if here."""
    for candidate in (os.environ.get("VIZVIT_TRAINED"), ROOT.parent / "shared" / "models" / "vit-tiny-augreg"):
        if candidate and (Path(candidate) / "config.json").is_file():
            return Path(candidate)
    return None


WORDS = ["a", "photo", "of", "cat", "dog", "teapot", "coffee", "mug", "an", "astronaut", "car", "bird",
         "flower", "building", "person", "fish"]
VISION = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, image_size=224)
TEXT = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=16)


def tiny_tokenizer(kind: str) -> PreTrainedTokenizerFast:
    specials = ["<pad>", "<unk>", "<bos>", "<eos>"]
    vocab = {w: i for i, w in enumerate(specials + WORDS)}
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    if kind == "clip":  # CLIP: <bos> text <eos>, pooled at <eos>
        tok.post_processor = TemplateProcessing(single="<bos> $A <eos>", special_tokens=[("<bos>", 2), ("<eos>", 3)])
    else:  # SigLIP: text <eos>, padded to max_length, pooled at the last position
        tok.post_processor = TemplateProcessing(single="$A <eos>", special_tokens=[("<eos>", 3)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>",
                                   eos_token="<eos>")


def make_tiny_tower(path: Path, kind: str, patch: int = 32, seed: int = 0) -> Path:
    text = dict(TEXT, vocab_size=len(WORDS) + 4, pad_token_id=0, bos_token_id=2, eos_token_id=3)
    torch.manual_seed(seed)
    if kind == "clip":
        model = CLIPModel(CLIPConfig(vision_config=dict(VISION, patch_size=patch), text_config=text, projection_dim=16))
        proc = CLIPImageProcessorPil(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    else:
        model = SiglipModel(SiglipConfig(vision_config=dict(VISION, patch_size=patch), text_config=text))
        proc = SiglipImageProcessorPil(size={"height": 224, "width": 224})
    with torch.no_grad():  # make every part matter (SigLIP inits its scale and bias to 0)
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
        model.logit_scale.fill_(1.5)
        if kind == "siglip":
            model.logit_bias.fill_(-2.0)
    model.save_pretrained(path)
    proc.save_pretrained(path)
    tiny_tokenizer(kind).save_pretrained(path)
    return path


def run_export(model_dir, out, *extra) -> subprocess.CompletedProcess:
    """`python -m vizvit export` of the example coffee photo, offline, as a user runs it."""
    cmd = [sys.executable, "-m", "vizvit", "export", str(EXAMPLES / "coffee.jpg"), "--model", str(model_dir),
           "--device", "cpu", "--out", str(out), *extra]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
