"""Load a ViT checkpoint (hub id, local directory or ``random:<arch>``) once.

Everything the rest of vizvit needs to know about the model's shape lives in
``Geometry``, read from the config, so nothing downstream hard-codes 14 or 197.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from PIL import Image
from transformers import (
    AutoConfig,
    AutoImageProcessor,
    AutoModel,
    AutoModelForImageClassification,
    CLIPConfig,
    CLIPModel,
    PretrainedConfig,
    PreTrainedModel,
    SiglipConfig,
    SiglipModel,
    ViTConfig,
    ViTForImageClassification,
)

from .errors import UserError
from .zeroshot import TextSide, ZeroShotHead, text_side

log = logging.getLogger(__name__)

DEFAULT_MODEL = "google/vit-base-patch16-224"
RANDOM_PREFIX = "random:"
SUPPORTED_MODEL_TYPES = ("vit", "clip", "siglip")
# Image towers of image-text models: loaded whole (image tower, text tower, logit scale), read
# through their image tower; their classes are the labels a user types (vizvit/zeroshot.py).
TOWER_MODEL_TYPES = ("clip", "siglip")
_LABELS_FILE = Path(__file__).resolve().parent.parent / "assets" / "imagenet1k_labels.txt"

# Architectures offered with seeded random weights, for offline use and as the
# "untrained" baseline. Numbers are those of the published checkpoints.
RANDOM_ARCHS: dict[str, dict[str, Any]] = {
    "vit-base-patch16-224": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                 intermediate_size=3072, image_size=224, patch_size=16),
    "vit-base-patch32-384": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                 intermediate_size=3072, image_size=384, patch_size=32),
    "vit-large-patch16-224": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                  intermediate_size=4096, image_size=224, patch_size=16),
    "vit-large-patch16-384": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                  intermediate_size=4096, image_size=384, patch_size=16),
    # Image-text models: "model_type" picks the config; vision / text as in the checkpoints.
    "clip-vit-base-patch16": dict(model_type="clip", projection_dim=512,
                                  vision=dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                              intermediate_size=3072, image_size=224, patch_size=16),
                                  text=dict(hidden_size=512, num_hidden_layers=12, num_attention_heads=8,
                                            intermediate_size=2048, max_position_embeddings=77)),
    "clip-vit-base-patch32": dict(model_type="clip", projection_dim=512,
                                  vision=dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                              intermediate_size=3072, image_size=224, patch_size=32),
                                  text=dict(hidden_size=512, num_hidden_layers=12, num_attention_heads=8,
                                            intermediate_size=2048, max_position_embeddings=77)),
    "siglip-base-patch16-224": dict(model_type="siglip",
                                    vision=dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                                intermediate_size=3072, image_size=224, patch_size=16),
                                    text=dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                              intermediate_size=3072, max_position_embeddings=64,
                                              vocab_size=32000, pad_token_id=1, eos_token_id=1, bos_token_id=None)),
}
RANDOM_SEED = 0


@dataclass(frozen=True)
class Geometry:
    """Shape facts of one ViT, all read from its config."""

    image_size: tuple[int, int]  # (H, W) of the model input, pixels
    patch_size: int  # P: patches are P×P pixels
    grid: tuple[int, int]  # (gh, gw) patches per column / per row
    num_prefix_tokens: int  # tokens before the patches ([CLS], maybe distillation)
    num_layers: int  # L
    num_heads: int  # H
    hidden_size: int  # D
    # What sums the photo up for the head: "cls" (token 0 of the sequence) or "map" (SigLIP: a
    # multihead attention pooling head's probe, outside the sequence, attending once after block L)
    summary: str = "cls"

    @property
    def summary_name(self) -> str:
        return "[CLS]" if self.summary == "cls" else "MAP head"

    @property
    def num_patches(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def seq_len(self) -> int:
        """N = prefix tokens + patches."""
        return self.num_prefix_tokens + self.num_patches


@dataclass(frozen=True)
class Preprocess:
    """How the checkpoint's image processor turns a photo into pixels."""

    resize: tuple[int, int] | int  # (H, W) exact, or int = shortest edge
    crop: tuple[int, int] | None  # centre crop (H, W) after resizing, or None
    resample: int  # PIL resampling filter
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    rescale: float = 1 / 255


@dataclass(frozen=True)
class VitModel:
    """A loaded model, shared read-only by every request of the process."""

    id: str  # what the user asked for: hub id, local path or random:<arch>
    model: PreTrainedModel  # eval mode, eager attention, on `device`
    geometry: Geometry
    preprocess: Preprocess
    labels: tuple[str, ...]  # empty when the checkpoint has no classifier
    device: torch.device
    is_pretrained: bool  # False for random:<arch>: flag it wherever it is shown
    text: TextSide | None = None  # CLIP / SigLIP: the tokenizer and probability rule of the text side
    zero_shot: ZeroShotHead | None = None  # CLIP / SigLIP: the labels' text embeddings, the "classifier"

    @property
    def has_classifier(self) -> bool:
        return len(self.labels) > 0

    @property
    def is_zero_shot(self) -> bool:
        """An image-text model: its classes are the labels a user types."""
        return self.text is not None

    def with_zero_shot(self, head: ZeroShotHead) -> "VitModel":
        """The same shared model with `head`'s labels as its classes (a new label list costs no load)."""
        return replace(self, labels=head.labels, zero_shot=head)

    @property
    def vit(self) -> torch.nn.Module:
        """The image backbone (embeddings, layers, final layernorm): a ViT's base model, or the
        image tower of CLIP / SigLIP."""
        tower = getattr(self.model, "vision_model", None)
        return tower if tower is not None else self.model.base_model

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def display_name(self) -> str:
        """Name for the page: never a server path, always flags untrained weights."""
        if not self.is_pretrained:
            return f"{self.id} (UNTRAINED random weights)"
        return short_name(self.id)


def short_name(model_id: str) -> str:
    """A hub id as is; a local directory by its last component only (no server paths)."""
    p = Path(model_id)
    return f"local: {p.name}" if p.is_absolute() or model_id.startswith(".") or p.is_dir() else model_id


def pick_device(device: str = "auto") -> torch.device:
    """'auto' -> cuda, then mps, then cpu; anything else is passed to torch."""
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise UserError(f"Unknown device {device!r}: use auto, cpu, cuda, cuda:0 or mps.") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UserError("CUDA was asked for but is not available here: use --device cpu or auto.")
    return dev


def geometry_of(config: PretrainedConfig) -> Geometry:
    def pair(v: int | tuple[int, int] | list[int]) -> tuple[int, int]:
        return (int(v[0]), int(v[1])) if isinstance(v, (tuple, list)) else (int(v), int(v))

    summary, prefix = "cls", 1  # ViT, CLIP: [CLS] only
    if config.model_type in TOWER_MODEL_TYPES:
        if config.model_type == "siglip":
            summary, prefix = "map", 0
        config = config.vision_config
    image_size = pair(config.image_size)
    ph, pw = pair(config.patch_size)
    if ph != pw:
        raise UserError(f"Non-square patches ({ph}×{pw}) are not supported.")
    return Geometry(
        image_size=image_size,
        patch_size=ph,
        grid=(image_size[0] // ph, image_size[1] // pw),
        num_prefix_tokens=prefix,
        num_layers=int(config.num_hidden_layers),
        num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size),
        summary=summary,
    )


def _preprocess_of(name: str, config: PretrainedConfig) -> Preprocess:
    """What the checkpoint's own (PIL) image processor does, read from the processor object, so
    its class defaults count too (a bare {"feature_extractor_type": "DeiTFeatureExtractor"} means
    256 bicubic, then a 224 crop). No processor saved with the checkpoint: ViT's defaults."""
    h, w = geometry_of(config).image_size
    default = Preprocess(resize=(h, w), crop=None, resample=Image.Resampling.BILINEAR,
                         mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    if name.startswith(RANDOM_PREFIX):
        return default
    try:
        proc = _image_processor(name)
    except (OSError, ValueError, KeyError, TypeError, ImportError, AttributeError) as e:
        # ImportError: a processor that exists only for the torchvision backend.
        log.warning("no usable PIL image processor for %s (%s): ViT's defaults", name, e)
        return default
    size = getattr(proc, "size", None)
    resize: tuple[int, int] | int = (h, w)
    if not getattr(proc, "do_resize", True):
        log.warning("%s: its processor does not resize, but the model needs %d×%d: resizing", name, h, w)
    elif getattr(size, "height", None) and getattr(size, "width", None):
        resize = (int(size.height), int(size.width))
    elif getattr(size, "shortest_edge", None) and not getattr(size, "longest_edge", None):
        resize = int(size.shortest_edge)
    else:
        log.warning("%s: unsupported processor size %s: resizing to %d×%d", name, size, h, w)
    crop = None
    cs = getattr(proc, "crop_size", None)
    if getattr(proc, "do_center_crop", False) and getattr(cs, "height", None) and getattr(cs, "width", None):
        crop = (int(cs.height), int(cs.width))
    if getattr(proc, "do_normalize", True):
        mean, std = (_three(getattr(proc, k, None), d) for k, d in (("image_mean", default.mean),
                                                                     ("image_std", default.std)))
    else:
        mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    resample = getattr(proc, "resample", None)
    return Preprocess(
        resize=resize,
        crop=crop,
        resample=int(resample) if resample is not None else Image.Resampling.BILINEAR,
        mean=mean,
        std=std,
        rescale=float(getattr(proc, "rescale_factor", 1 / 255)) if getattr(proc, "do_rescale", True) else 1.0,
    )


def _image_processor(name: str) -> Any:
    """The checkpoint's PIL image processor, never running code from the checkpoint. The local
    copy first: with the hub unreachable (and HF_HUB_OFFLINE unset) each online lookup waits
    on retries, and the model's own load has just waited on them once."""
    kw = dict(backend="pil", trust_remote_code=False)
    try:
        return AutoImageProcessor.from_pretrained(name, local_files_only=True, **kw)
    except OSError:
        return AutoImageProcessor.from_pretrained(name, **kw)


def _three(v: object, default: tuple[float, float, float]) -> tuple[float, float, float]:
    """A processor's per-channel mean or std: a scalar means the same for R, G and B."""
    if v is None:
        return default
    if isinstance(v, (int, float)):
        return (float(v),) * 3
    return tuple(float(x) for x in v)  # type: ignore[return-value]


def labels_of(config: PretrainedConfig, has_head: bool) -> tuple[str, ...]:
    if not has_head:
        return ()
    id2label = getattr(config, "id2label", None) or {}
    n = int(config.num_labels)
    labels = [str(id2label.get(i, id2label.get(str(i), f"class {i}"))) for i in range(n)]
    # Configs built without labels say "LABEL_3"; ImageNet-1k heads get real names.
    if n == 1000 and all(lab.startswith("LABEL_") for lab in labels) and _LABELS_FILE.exists():
        labels = _LABELS_FILE.read_text().splitlines()[:1000]
    return tuple(labels)


def _random_model(arch: str) -> PreTrainedModel:
    if arch not in RANDOM_ARCHS:
        raise UserError(
            f"Unknown random architecture {arch!r}. Choose one of: "
            + ", ".join(RANDOM_PREFIX + a for a in RANDOM_ARCHS)
        )
    spec = dict(RANDOM_ARCHS[arch])
    kind = spec.pop("model_type", "vit")
    # Seeded so that every process (and every test) sees the same "untrained" model.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(RANDOM_SEED)
        if kind == "clip":
            model = CLIPModel(CLIPConfig(vision_config=spec["vision"], text_config=spec["text"],
                                         projection_dim=spec["projection_dim"]))
        elif kind == "siglip":
            model = SiglipModel(SiglipConfig(vision_config=spec["vision"], text_config=spec["text"]))
        else:
            model = ViTForImageClassification(ViTConfig(num_labels=1000, **spec))
    model.set_attn_implementation("eager")
    return model


def _pretrained_model(name: str) -> PreTrainedModel:
    hint = (
        "Check the hub id or the directory (it must hold a ViT saved with save_pretrained), "
        f"or run offline with --model {RANDOM_PREFIX}vit-base-patch16-224."
    )
    try:
        config = AutoConfig.from_pretrained(name)  # never trust_remote_code
    except Exception as e:  # hub errors come as many types; all mean "cannot load"
        raise UserError(f"Cannot load model {name!r}: {type(e).__name__}. {hint}") from e
    if config.model_type not in SUPPORTED_MODEL_TYPES:
        raise UserError(
            f"{name!r} is a {config.model_type!r} model, not a ViT. vizvit shows ViTs "
            f"(model_type {', '.join(SUPPORTED_MODEL_TYPES)}), e.g. {DEFAULT_MODEL}."
        )
    if config.model_type in TOWER_MODEL_TYPES:  # both towers: the text side is the classifier
        try:
            return AutoModel.from_pretrained(name, attn_implementation="eager")
        except Exception as e:
            raise UserError(f"Cannot load weights of {name!r}: {type(e).__name__}. {hint}") from e
    archs = getattr(config, "architectures", None) or []
    auto = AutoModelForImageClassification if any("ImageClassification" in a for a in archs) else AutoModel
    try:
        kwargs = {"attn_implementation": "eager"}
        if auto is AutoModel:
            kwargs["add_pooling_layer"] = False
        return auto.from_pretrained(name, **kwargs)
    except Exception as e:
        raise UserError(f"Cannot load weights of {name!r}: {type(e).__name__}. {hint}") from e


def load_model(name: str = DEFAULT_MODEL, device: str = "auto") -> VitModel:
    """Load a ViT for analysis.

    name: a hub id (``google/vit-base-patch16-224``), a local ``save_pretrained``
    directory, or ``random:<arch>`` (seeded random weights, offline). Raises
    ValueError with what to do when it cannot be loaded.
    """
    name = str(name).strip()
    dev = pick_device(device)
    if name.startswith(RANDOM_PREFIX):
        model = _random_model(name[len(RANDOM_PREFIX):])
        is_pretrained = False
    else:
        model = _pretrained_model(name)
        is_pretrained = True
    model.eval().to(dev)
    for p in model.parameters():
        p.requires_grad_(False)  # shared read-only; gradients w.r.t. activations still work
    config = model.config
    has_head = hasattr(model, "classifier")
    vm = VitModel(
        id=name,
        model=model,
        geometry=geometry_of(config),
        preprocess=_preprocess_of(name, config),
        labels=labels_of(config, has_head) if config.model_type not in TOWER_MODEL_TYPES else (),
        device=dev,
        is_pretrained=is_pretrained,
        text=text_side(model, name if is_pretrained else None) if config.model_type in TOWER_MODEL_TYPES else None,
    )
    if vm.text is not None:  # the default labels, so that every view has top-5 from the start
        from .zeroshot import DEFAULT_LABELS, DEFAULT_TEMPLATE, with_labels

        vm = with_labels(vm, DEFAULT_LABELS, DEFAULT_TEMPLATE)
    return vm
