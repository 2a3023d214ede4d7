"""Tiny ViTs built from ViTConfig, saved with save_pretrained and loaded back through
vizvit.load_model: the real code path, no network. Two geometries so nothing can
hard-code a 14×14 grid."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # a test that reaches for the hub fails fast
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
import transformers  # noqa: E402
from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessorPil  # noqa: E402

import vizvit  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "assets" / "examples"

# name -> (image_size, patch_size): 224/16 gives a 14×14 grid, 224/32 a 7×7 one.
GEOMETRIES = {"p16": (224, 16), "p32": (224, 32)}


def make_tiny_vit(path: Path, image_size: int, patch_size: int, num_labels: int = 7,
                  seed: int = 0) -> Path:
    config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, image_size=image_size, patch_size=patch_size,
                       num_labels=num_labels,
                       id2label={i: f"thing {i}" for i in range(num_labels)},
                       label2id={f"thing {i}": i for i in range(num_labels)})
    torch.manual_seed(seed)
    return save_perturbed(ViTForImageClassification(config), path, image_size)


def save_perturbed(model: torch.nn.Module, path: Path, size: int) -> Path:
    """Random init leaves position embeddings tiny (and BEiT's bias table at zero): perturb every
    parameter so each part matters in tests, then save the model and a processor for size×size."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    model.save_pretrained(path)
    ViTImageProcessorPil(size={"height": size, "width": size}).save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("models")
    return {k: make_tiny_vit(base / k, *v) for k, v in GEOMETRIES.items()}


@pytest.fixture(scope="session", params=list(GEOMETRIES))
def tiny(request, tiny_dirs) -> vizvit.VitModel:
    """A tiny ViT in each test geometry, loaded on the CPU through load_model."""
    return vizvit.load_model(str(tiny_dirs[request.param]), device="cpu")


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


def make_tiny_family(path: Path, name: str, seed: int = 0) -> Path:
    cfg_cls, model_cls, numbers, size = FAMILY_CONFIGS[name]
    config = getattr(transformers, cfg_cls)(**numbers)
    if "num_labels" in numbers:
        n = numbers["num_labels"]
        config.id2label = {i: f"thing {i}" for i in range(n)}
        config.label2id = {f"thing {i}": i for i in range(n)}
    torch.manual_seed(seed)
    cls = getattr(transformers, model_cls)
    model = cls(config, add_pooling_layer=False) if model_cls == "ViTModel" else cls(config)
    return save_perturbed(model, path, size)


@pytest.fixture(scope="session")
def family_dirs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("families")
    return {k: make_tiny_family(base / k, k) for k in FAMILY_CONFIGS}


@pytest.fixture(scope="session")
def families(family_dirs) -> dict[str, vizvit.VitModel]:
    """name -> a tiny model of that family, loaded on the CPU through load_model."""
    return {k: vizvit.load_model(str(d), device="cpu") for k, d in family_dirs.items()}


@pytest.fixture(scope="session", params=list(FAMILY_CONFIGS))
def fam(request, families) -> vizvit.VitModel:
    return families[request.param]


@pytest.fixture(scope="session")
def tiny16(tiny_dirs) -> vizvit.VitModel:
    return vizvit.load_model(str(tiny_dirs["p16"]), device="cpu")


def trained_dir() -> Path | None:
    """The real ImageNet ViT-Ti/16 (../shared/models/vit-tiny-augreg, or VIZVIT_TRAINED), if here."""
    for candidate in (os.environ.get("VIZVIT_TRAINED"), ROOT.parent / "shared" / "models" / "vit-tiny-augreg"):
        if candidate and (Path(candidate) / "config.json").is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def trained() -> vizvit.VitModel:
    """The trained ViT-Ti through the same load_model path as any checkpoint. Skipped with one line
    where it is missing; under CI (which has ../shared) a missing model fails instead."""
    path = trained_dir()
    if path is None:
        message = "trained weights not found: set VIZVIT_TRAINED or put ../shared/models/vit-tiny-augreg beside the repo"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return vizvit.load_model(str(path), device="cpu")


@pytest.fixture(scope="session")
def cat() -> Image.Image:
    return vizvit.load_image(EXAMPLES / "chelsea.jpg")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def pytest_terminal_summary(terminalreporter) -> None:
    """One line when browser tests were skipped for want of a browser, and how to get one."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "no Chromium/Chrome found" in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} browser tests were skipped: no Chromium/Chrome found. Install one "
            "(sudo apt-get install chromium, or python -m playwright install chromium) or set VIZVIT_CHROMIUM.",
            yellow=True)
