"""Load a ViT checkpoint (hub id, local directory or ``random:<arch>``) once.

Everything the rest of vizvit needs to know about the model's shape lives in
``Geometry``, read from the config, so nothing downstream hard-codes 14 or 197.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import torch
import transformers
from PIL import Image
from transformers import (
    AutoConfig,
    AutoImageProcessor,
    AutoModel,
    PretrainedConfig,
    PreTrainedModel,
)

from vizvit.errors import UserError
from vizvit.model.zeroshot import CLIP_TEXT, SIGLIP_TEXT, TextRule, TextSide, ZeroShotHead, text_side

log = logging.getLogger(__name__)

DEFAULT_MODEL = "google/vit-base-patch16-224"
RANDOM_PREFIX = "random:"
_LABELS_FILE = Path(__file__).resolve().parents[2] / "assets" / "imagenet1k_labels.txt"
# The pseudo-token a mean-pooling head reads: the mean of the patch tokens (no prefix token, no register):
# BEiT's head reads it alone, a DINOv2 classifier's beside [CLS].
PATCH_MEAN = "patch mean"
# The summary of a SigLIP image tower: a multihead attention pooling head's probe, outside the
# sequence, attending once over every token after the last block (its weights: Analysis.summary_weights).
MAP_HEAD = "MAP head"

RANDOM_SEED = 0


@dataclass(frozen=True)
class Geometry:
    """Shape facts of one ViT, all read from its config, and its token layout.

    The sequence is the prefix tokens (``prefix_names``: [CLS], then [DIST] or [REG1..R]),
    then the gh·gw patches row-major. Every label of a token comes from here (token_name)."""

    image_size: tuple[int, int]  # (H, W) of the model input, pixels
    patch_size: int  # P: patches are P×P pixels
    grid: tuple[int, int]  # (gh, gw) patches per column / per row
    num_prefix_tokens: int  # tokens before the patches: [CLS], maybe [DIST] or registers
    num_layers: int  # L
    num_heads: int  # H
    hidden_size: int  # D
    prefix_names: tuple[str, ...] = ()  # len num_prefix_tokens; () = ("[CLS]",) for plain ViTs
    # Tokens a map can be read from, default first: prefix tokens the heads read, and PATCH_MEAN for
    # a head that reads the patch mean (BEiT: first; a DINOv2 classifier: after [CLS]).
    summaries: tuple[str, ...] = ("[CLS]",)
    family: str = "vit"  # key into FAMILIES

    def __post_init__(self) -> None:
        if len(self.prefix_names) != self.num_prefix_tokens:
            # no names (or a replace() of the count alone): [CLS], then generic names
            names = (tuple(self.prefix_names) or ("[CLS]",))[:self.num_prefix_tokens]
            names += tuple(f"[PREFIX{i}]" for i in range(len(names), self.num_prefix_tokens))
            object.__setattr__(self, "prefix_names", names)

    @property
    def summary(self) -> str:
        """What sums the photo up by default: "cls" (a token of the sequence, or the patch mean) or
        "map" (SigLIP: the MAP head's probe, outside the sequence), read from ``summaries``."""
        return "map" if self.summaries[0] == MAP_HEAD else "cls"

    @property
    def pools_with_map_head(self) -> bool:
        """The default summary is an attention-pooling head's probe (SigLIP), not a token of the
        sequence: its maps are its weights (Analysis.summary_weights) read through the matrices."""
        return self.summary == "map"

    @property
    def num_patches(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def seq_len(self) -> int:
        """N = prefix tokens + patches."""
        return self.num_prefix_tokens + self.num_patches

    @property
    def register_tokens(self) -> tuple[int, ...]:
        """Sequence positions of the register tokens ([REG1..R]); () without registers."""
        return tuple(i for i, n in enumerate(self.prefix_names) if n.startswith("[REG"))

    @property
    def num_registers(self) -> int:
        return len(self.register_tokens)

    def token_name(self, i: int) -> str:
        """[CLS], [DIST], [REG1] ... or "patch k" (k counts patches from 0, row-major)."""
        if i < self.num_prefix_tokens:
            return self.prefix_names[i]
        return f"patch {i - self.num_prefix_tokens}"

    @property
    def token_names(self) -> tuple[str, ...]:
        """All N names in sequence order (export's token layout)."""
        return tuple(self.token_name(i) for i in range(self.seq_len))

    def summary_index(self, name: str | None = None) -> int:
        """Sequence position of a prefix summary token (default: the first); -1 for PATCH_MEAN and
        MAP_HEAD (not tokens of the sequence)."""
        name = self.summaries[0] if name is None else name
        if name in (PATCH_MEAN, MAP_HEAD):
            return -1
        if name not in self.prefix_names:
            raise UserError(f"This model has no {name} token: choose one of {', '.join(self.summaries)}.")
        return self.prefix_names.index(name)


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
    # Parameters the checkpoint did not hold, so transformers initialised them: never trained (e.g. a
    # [MASK] token a class builds that the checkpoint lacks). Names as in the model's state dict.
    missing_keys: tuple[str, ...] = ()

    @property
    def has_classifier(self) -> bool:
        return len(self.labels) > 0

    @property
    def is_zero_shot(self) -> bool:
        """An image-text model: its classes are the labels a user types."""
        return self.text is not None

    def with_zero_shot(self, head: ZeroShotHead) -> VitModel:
        """The same shared model with `head`'s labels as its classes (a new label list costs no load)."""
        return replace(self, labels=head.labels, zero_shot=head)

    @property
    def vit(self) -> torch.nn.Module:
        """The image backbone (embeddings, blocks, final layernorm) of any family: a ViT's base
        model, or the image tower of CLIP / SigLIP."""
        return backbone_of(self.model)

    @cached_property
    def family(self) -> Family:
        """The family's description as this checkpoint's config has it (Family.for_config)."""
        return FAMILIES[self.geometry.family].for_config(self.model.config)

    @property
    def position_grid(self) -> tuple[int, int]:
        """(th, tw): the grid the learned position table's patch rows are laid out on, the one the
        model was trained at (its config's image_size / patch_size). geometry.grid is the input's
        grid instead, which differs for a family that interpolates at every forward (DINOv2 at its
        processor's size). Not the table's row count's square root: a 160×224 ViT's table is 5×7."""
        return geometry_of(self.model.config).grid

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def display_name(self) -> str:
        """Name for the page: never a server path, always flags untrained weights."""
        if not self.is_pretrained:
            return f"{self.id} (UNTRAINED random weights)"
        return short_name(self.id)


# ------------------------------------------------------------------ families
Module = torch.nn.Module
M = TypeVar("M", bound=Module)


def part(module: Module, path: str, kind: type[M]) -> M:
    """``module``'s submodule at the dotted ``path``, checked to be a ``kind``. torch types attribute
    access (``nn.Module.__getattr__``) as ``Tensor | Module``; ``get_submodule`` checks it is a
    Module, and this checks which one (AttributeError / TypeError when it is not)."""
    m = module.get_submodule(path)
    if not isinstance(m, kind):
        raise TypeError(f"{type(module).__name__}.{path} is a {type(m).__name__}, not a {kind.__name__}")
    return m


@runtime_checkable
class BiasTable(Protocol):
    """A relative-position-bias module (BEiT): its (num_relative_distance, H) table and its (gh, gw) window."""

    relative_position_bias_table: torch.Tensor
    window_size: tuple[int, int]


Pooling = str  # "token" | "cls+mean" | "pooler" | "projection" | "map": see Family.pooling


@dataclass(frozen=True)
class Family:
    """One ViT family, described once: its token layout, position encoding, head and pooling, its
    random architectures and curated checkpoints, its text rule, and where its parts live. The
    engine hooks and runs through it; every view reads the layout from ``Geometry`` and the words
    and properties from here. No view asks for a model_type or a family key: adding a family is
    one entry (``register_family``)."""

    key: str  # config.model_type
    title: str  # e.g. "DINOv2 with registers"
    prefix: Callable[[PretrainedConfig], tuple[str, ...]]  # names of the tokens before the patches
    pe: str  # "learned" | "learned, interpolated" | "relative bias" | "learned and relative bias" | "none"
    pe_text: str  # one sentence for the Positions tab
    head_text: str  # what the classifier reads, for the page
    summaries: Callable[[PretrainedConfig, bool], tuple[str, ...]]  # (config, has head) -> Geometry.summaries
    classes: tuple[str, ...]  # transformers classes a checkpoint of this family may name
    random_class: str | type  # the class random:<arch> builds (a transformers name, or the class itself)
    config_class: str | type  # its config class (likewise)
    pe_prefix: int = 1  # prefix tokens with a row in the position table ([CLS], [DIST])
    pe_antialias: bool = False  # the family's interpolate_pos_encoding antialiases (DINOv2 w/ registers)
    pre_norm: bool = False  # a layernorm on every token before block 1 (CLIP's pre_layrnorm)
    interpolate_kwarg: bool = True  # forward() takes interpolate_pos_encoding (DINOv2 always interpolates)
    pooling_kwarg: bool = True  # the base class takes add_pooling_layer
    # What the head reads after the last block: "token" (the final norm, then [CLS]'s head, or DeiT's
    # [CLS] and [DIST] heads), "cls+mean" (the final norm, then one head on [CLS] ⊕ the mean of the
    # patch tokens, 2·D wide, the registers left out: DINOv2's classifiers), "pooler" (the base model's
    # pooler when it has one: BEiT's mean of the patch tokens, normed), "projection" (CLIP: [CLS]
    # through visual_projection) or "map" (SigLIP: a multihead attention-pooling head over every token).
    pooling: Pooling = "token"
    # An image-text model (CLIP, SigLIP): the backbone is its image tower (model.vision_model), the
    # classes are the labels a user types, read through the text tower by this rule (vizvit/model/zeroshot.py).
    text: TextRule | None = None
    # random:<arch> -> its config numbers (those of the published checkpoint; each arch is the last
    # part of that hub id, so catalog.random_twin finds it); curated hub id -> download size in MB.
    random_archs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, compare=False)
    curated: Mapping[str, int] = field(default_factory=dict, compare=False)
    # A family whose config chooses its position encoding (BEiT: a relative bias, shared or per layer,
    # an absolute table, or neither): config -> pe. None: always ``pe``.
    pe_of: Callable[[PretrainedConfig], str] | None = field(default=None, compare=False)

    def for_config(self, config: PretrainedConfig) -> Family:
        """The family as this checkpoint has it: its own ``pe`` (and sentence) where the config
        chooses it, so a BEiT built with an absolute table and no bias is read as a table."""
        pe = self.pe if self.pe_of is None else self.pe_of(config)
        return self if pe == self.pe else replace(self, pe=pe, pe_text=PE_TEXTS[pe])

    @property
    def tower(self) -> bool:
        """An image-text model's image tower: its classes are typed labels (``text``)."""
        return self.text is not None

    @property
    def has_bias_table(self) -> bool:
        """Positions are a relative position bias in every attention (BEiT), not a table of embeddings."""
        return self.pe in ("relative bias", "learned and relative bias")

    @property
    def has_position_table(self) -> bool:
        """Learned absolute positions are added to the tokens before block 1 (not a bias, not none)."""
        return self.pe in ("learned", "learned, interpolated", "learned and relative bias")

    @property
    def has_positions(self) -> bool:
        """The model is told where its patches are at all (a table or a bias): a config may turn both off."""
        return self.pe != "none"

    @property
    def interpolates_positions(self) -> bool:
        """The family interpolates its position table to the input's grid at every forward (DINOv2)."""
        return self.pe == "learned, interpolated"

    def build_class(self, which: str = "random") -> type:
        """The transformers class random:<arch> builds ("random") or its config class ("config")."""
        c = self.random_class if which == "random" else self.config_class
        return getattr(transformers, c) if isinstance(c, str) else c

    # where the parts live (backbone = backbone_of(model): model.base_model, or the image tower)
    def embeddings(self, backbone: Module) -> Module:
        return backbone.get_submodule("embeddings")

    def patch_embedding(self, backbone: Module) -> Module:
        """The patch projection: a module giving (B, P, D), or CLIP's / SigLIP's Conv2d giving
        (B, D, gh, gw) (the engine flattens it row-major)."""
        if self.tower:
            return backbone.get_submodule("embeddings.patch_embedding")
        return backbone.get_submodule("embeddings.patch_embeddings")

    def patch_conv(self, backbone: Module) -> torch.nn.Conv2d:
        """The patch-embedding Conv2d (kernel = stride = p): its weights, for the engine to read."""
        if self.tower:
            return part(backbone, "embeddings.patch_embedding", torch.nn.Conv2d)
        return part(backbone, "embeddings.patch_embeddings.projection", torch.nn.Conv2d)

    def blocks(self, backbone: Module) -> list[Module]:
        """The transformer blocks in order (their attention's output projection: ``out_proj``)."""
        enc = getattr(backbone, "encoder", None)
        if enc is not None and hasattr(enc, "layer"):
            return list(enc.layer)
        if enc is not None and hasattr(enc, "layers"):  # CLIP, SigLIP
            return list(enc.layers)
        return list(backbone.get_submodule("layers").children())

    def out_proj(self, backbone: Module, layer: int) -> Module:
        """The Linear that mixes layer `layer`'s concatenated head outputs (B, N, H·d): ablation hooks
        here."""
        block = self.blocks(backbone)[layer]
        return block.get_submodule("self_attn.out_proj" if self.tower else "attention.o_proj")

    def attention_norm(self, backbone: Module, layer: int) -> Module:
        """Block `layer`'s first layernorm, the one its attention reads (Grad-CAM's target layer,
        pytorch-grad-cam's ``blocks[-1].norm1``): ``layernorm_before``, DINOv2's ``norm1``, CLIP's /
        SigLIP's ``layer_norm1``."""
        block = self.blocks(backbone)[layer]
        for name in ("layernorm_before", "norm1", "layer_norm1"):
            if hasattr(block, name):
                return getattr(block, name)
        raise UserError(f"{self.title} blocks have no first layernorm for Grad-CAM to read.")

    def pooler(self, backbone: Module) -> Module | None:
        """The base model's pooler, for a "pooler" family that has one (BEiT with mean pooling), else None."""
        return getattr(backbone, "pooler", None) if self.pooling == "pooler" else None

    def final_norm(self, backbone: Module) -> Module:
        """The norm the head reads through: BEiT with mean pooling has Identity here and its
        norm in the pooler (applied to the patch mean); CLIP / SigLIP: the tower's post_layernorm."""
        if self.tower:
            return backbone.get_submodule("post_layernorm")
        pooler = self.pooler(backbone)
        if pooler is not None and getattr(pooler, "layernorm", None) is not None:
            return pooler.get_submodule("layernorm")
        return backbone.get_submodule("layernorm")

    def heads(self, model: Module) -> dict[str, Module]:
        """name -> classifier; empty without one. DeiT distilled: the [CLS] and [DIST] heads,
        whose logits the model averages. CLIP / SigLIP: none (the typed labels are the classes)."""
        if self.tower:
            return {}
        if hasattr(model, "cls_classifier") and hasattr(model, "distillation_classifier"):
            return {"[CLS] head": model.get_submodule("cls_classifier"),
                    "[DIST] head": model.get_submodule("distillation_classifier")}
        head = getattr(model, "classifier", None)
        return {"head": head} if isinstance(head, Module) else {}

    def position_table_of(self, embeddings: Module) -> torch.Tensor | None:
        """(pe_prefix + P0, D) learned absolute positions of an embeddings module, or None (BEiT:
        relative bias). The one accessor of the table (the engine reads it, detached)."""
        if self.tower:  # an nn.Embedding (N, D)
            return part(embeddings, "position_embedding", torch.nn.Embedding).weight.detach()
        t = getattr(embeddings, "position_embeddings", None)
        return None if t is None else t.detach()[0]

    def position_table(self, backbone: Module) -> torch.Tensor | None:
        """(pe_prefix + P0, D) learned absolute positions, or None (BEiT: relative bias)."""
        return self.position_table_of(self.embeddings(backbone))

    def bias_modules(self, backbone: Module) -> list[Module]:
        """BEiT: the relative-position-bias modules (one per layer, or the shared one)."""
        return [m for m in backbone.modules() if hasattr(m, "relative_position_bias_table")]


def _cls(config: PretrainedConfig) -> tuple[str, ...]:
    return ("[CLS]",)


def _cls_regs(config: PretrainedConfig) -> tuple[str, ...]:
    return ("[CLS]",) + tuple(f"[REG{i + 1}]" for i in range(int(config.num_register_tokens)))


# The sentence for a position encoding a config chose against its family's usual one (Family.for_config).
PE_TEXTS = {
    "learned": "Learned absolute position embeddings for [CLS] and each patch position, added once "
               "before block 1 (this checkpoint's config turns the relative bias off and the table on).",
    "relative bias": "No absolute position embeddings: each layer (or all layers, shared) adds a learned bias "
                     "to the attention logits that depends only on the offset (Δrow, Δcol) between query and "
                     "key patch.",
    "learned and relative bias": "Both: learned absolute position embeddings for [CLS] and each patch position, "
                                 "added once before block 1, and a learned bias on the attention logits of each "
                                 "layer (or all layers, shared) that depends only on the offset (Δrow, Δcol) "
                                 "between query and key patch (this checkpoint's config turns both on).",
    "none": "No position information at all: this checkpoint's config turns off both the position table and "
            "the relative bias, so the model sees its patches as an unordered set: shuffle them and each "
            "patch's token comes out the same, only moved with it.",
}


def _beit_pe(config: PretrainedConfig) -> str:
    """BEiT's config chooses a relative bias (per layer or shared), an absolute table, both, or neither."""
    bias = any(getattr(config, k, False) for k in ("use_relative_position_bias", "use_shared_relative_position_bias"))
    table = bool(getattr(config, "use_absolute_position_embeddings", False))
    return {(True, True): "learned and relative bias", (True, False): "relative bias",
            (False, True): "learned", (False, False): "none"}[bias, table]


def _cls_only(config: PretrainedConfig, has_head: bool) -> tuple[str, ...]:
    return ("[CLS]",)


def _cls_and_mean(config: PretrainedConfig, has_head: bool) -> tuple[str, ...]:
    """A DINOv2 classifier's head reads [CLS] ⊕ the patch mean; without one, [CLS] sums the photo up."""
    return ("[CLS]", PATCH_MEAN) if has_head else ("[CLS]",)


def backbone_of(model: Module) -> Module:
    """The image backbone: CLIP's / SigLIP's image tower, else the model's base model."""
    tower = getattr(model, "vision_model", None)
    return tower if tower is not None else model.get_submodule("base_model")


_TOWER_HEAD = ("no classifier: the labels you type are the classes, each embedded by the text tower "
               "(\"a photo of {label}\"); ")
_DINO_PE = ("Learned absolute position embeddings for the training grid (37×37 for 518 px in the published "
            "checkpoints), bicubically interpolated to the input's grid at every forward: DINOv2 runs at "
            "any size.")
_DINO_HEAD = ("nothing in the self-supervised checkpoints (no classifier); a classifier's linear head reads "
              "[CLS] ⊕ the mean of the patch tokens (concatenated, 2·D numbers, after the final layernorm)")
_B16 = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)
_DINO_S = dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, mlp_ratio=4, image_size=518,
               patch_size=14)
_CLIP_TEXT = dict(hidden_size=512, num_hidden_layers=12, num_attention_heads=8, intermediate_size=2048,
                  max_position_embeddings=77)
_L16 = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
            patch_size=16)

# The registry: model_type -> its one entry. Order = the page's model list.
FAMILIES: dict[str, Family] = {f.key: f for f in (
    Family("vit", "ViT", _cls, "learned", "Learned absolute position embeddings, one per patch position.",
           "a linear head on the final [CLS] token", _cls_only,
           ("ViTForImageClassification", "ViTModel"), "ViTForImageClassification", "ViTConfig",
           random_archs={
               "vit-base-patch16-224": dict(_B16, image_size=224, patch_size=16),
               # ViT-Ti/16 and ViT-S/16 (AugReg, ported by WinKawaks): small enough for a free CPU Space
               "vit-tiny-patch16-224": dict(hidden_size=192, num_hidden_layers=12, num_attention_heads=3,
                                            intermediate_size=768, image_size=224, patch_size=16),
               "vit-small-patch16-224": dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                                             intermediate_size=1536, image_size=224, patch_size=16),
               "vit-base-patch32-384": dict(_B16, image_size=384, patch_size=32),
               "vit-large-patch16-224": dict(_L16, image_size=224),
               "vit-large-patch16-384": dict(_L16, image_size=384),
           },
           curated={"google/vit-base-patch16-224": 346,
                    # ViT-Ti/16 and ViT-S/16, AugReg weights (Steiner et al. 2021) in transformers' format:
                    # the fast ones, for live use on a free CPU Space
                    "WinKawaks/vit-tiny-patch16-224": 23, "WinKawaks/vit-small-patch16-224": 88,
                    "google/vit-base-patch32-384": 353, "google/vit-large-patch16-224": 1220,
                    "facebook/deit-base-patch16-224": 346,  # DeiT without distillation: a ViT
                    "facebook/dino-vitb16": 343}),  # DINO v1: a ViT without a classifier
    Family("deit", "DeiT (distilled)", lambda c: ("[CLS]", "[DIST]"), "learned",
           "Learned absolute position embeddings for [CLS], [DIST] and each patch position.",
           "two linear heads, on [CLS] (trained on labels) and on [DIST] (trained on a CNN teacher's "
           "predictions); the prediction is the mean of their logits",
           lambda c, h: ("[CLS]", "[DIST]"),
           ("DeiTForImageClassificationWithTeacher", "DeiTForImageClassification", "DeiTModel"),
           "DeiTForImageClassificationWithTeacher", "DeiTConfig", pe_prefix=2,
           random_archs={"deit-base-distilled-patch16-224": dict(_B16, image_size=224, patch_size=16)},
           curated={"facebook/deit-base-distilled-patch16-224": 349}),
    Family("dinov2", "DINOv2", _cls, "learned, interpolated", _DINO_PE,
           _DINO_HEAD, _cls_and_mean, ("Dinov2ForImageClassification", "Dinov2Model"), "Dinov2Model",
           "Dinov2Config", interpolate_kwarg=False, pooling_kwarg=False, pooling="cls+mean",
           random_archs={"dinov2-small": dict(_DINO_S)}, curated={"facebook/dinov2-small": 88}),
    Family("dinov2_with_registers", "DINOv2 with registers", _cls_regs, "learned, interpolated", _DINO_PE,
           _DINO_HEAD + "; register tokens are read by nothing (the patch mean leaves them out): they are scratch "
           "space (Darcet et al. 2024)",
           _cls_and_mean, ("Dinov2WithRegistersForImageClassification", "Dinov2WithRegistersModel"),
           "Dinov2WithRegistersModel", "Dinov2WithRegistersConfig", pe_antialias=True,
           interpolate_kwarg=False, pooling_kwarg=False, pooling="cls+mean",
           random_archs={"dinov2-with-registers-small": dict(_DINO_S, num_register_tokens=4)},
           curated={"facebook/dinov2-with-registers-small": 88}),
    Family("beit", "BEiT", _cls, "relative bias", PE_TEXTS["relative bias"],
           "a linear head on the layer-normed mean of the patch tokens ([CLS] is not read) when "
           "use_mean_pooling, else on [CLS]",
           lambda c, h: (PATCH_MEAN, "[CLS]") if h and getattr(c, "use_mean_pooling", False) else ("[CLS]",),
           ("BeitForImageClassification", "BeitModel"), "BeitForImageClassification", "BeitConfig",
           pooling="pooler", pe_of=_beit_pe,
           random_archs={"beit-base-patch16-224": dict(_B16, image_size=224, patch_size=16,
                                                       use_relative_position_bias=True,
                                                       use_absolute_position_embeddings=False,
                                                       use_mean_pooling=True, layer_scale_init_value=0.1)},
           curated={"microsoft/beit-base-patch16-224": 347}),
    # Image-text models: the image tower is the ViT, the typed labels its classes (both towers load);
    # vision / text numbers as in the checkpoints (the whole model is built).
    Family("clip", "CLIP (image tower)", _cls, "learned",
           "Learned absolute position embeddings for [CLS] and each patch position.",
           _TOWER_HEAD + "the image embedding is the final [CLS] token, layer-normed and projected; "
           "probability = softmax over your labels of exp(logit_scale)·cosine",
           _cls_only, ("CLIPModel",), "CLIPModel", "CLIPConfig", pooling_kwarg=False, pooling="projection",
           pre_norm=True,
           text=CLIP_TEXT,
           random_archs={
               "clip-vit-base-patch16": dict(projection_dim=512, text_config=_CLIP_TEXT,
                                             vision_config=dict(_B16, image_size=224, patch_size=16)),
               "clip-vit-base-patch32": dict(projection_dim=512, text_config=_CLIP_TEXT,
                                             vision_config=dict(_B16, image_size=224, patch_size=32))},
           curated={"openai/clip-vit-base-patch16": 599, "openai/clip-vit-base-patch32": 605}),
    Family("siglip", "SigLIP (image tower)", lambda c: (), "learned",
           "Learned absolute position embeddings, one per patch position (no [CLS]).",
           _TOWER_HEAD + "no [CLS]: a multihead attention pooling (MAP) head's probe attends over every "
           "token after the last block; probability = a sigmoid per label of exp(logit_scale)·cosine + bias",
           lambda c, h: (MAP_HEAD,), ("SiglipModel",), "SiglipModel", "SiglipConfig", pe_prefix=0,
           pooling_kwarg=False, pooling="map", text=SIGLIP_TEXT,
           random_archs={"siglip-base-patch16-224": dict(
               vision_config=dict(_B16, image_size=224, patch_size=16),
               text_config=dict(_B16, max_position_embeddings=64, vocab_size=32000, pad_token_id=1,
                                eos_token_id=1, bos_token_id=None))},
           curated={"google/siglip-base-patch16-224": 813}),
)}


def register_family(fam: Family) -> None:
    """Add (or replace) a family: its models load, analyse, and its random architectures and curated
    checkpoints appear in the catalog; nothing else needs to change."""
    clash = [a for f in FAMILIES.values() if f.key != fam.key
             for a in f.random_archs if a in fam.random_archs]
    if clash:
        raise UserError(f"random:{clash[0]} belongs to another family already.")
    FAMILIES[fam.key] = fam


def unregister_family(key: str) -> None:
    FAMILIES.pop(key, None)


class _RandomArchs(Mapping[str, tuple[str, Mapping[str, Any]]]):
    """random:<arch> -> (family key, config numbers), read live from FAMILIES (a derived view)."""

    def _all(self) -> dict[str, tuple[str, Mapping[str, Any]]]:
        return {a: (f.key, n) for f in FAMILIES.values() for a, n in f.random_archs.items()}

    def __getitem__(self, arch: str) -> tuple[str, Mapping[str, Any]]:
        return self._all()[arch]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


# Architectures offered with seeded random weights, for offline use and as the "untrained" baseline.
RANDOM_ARCHS: Mapping[str, tuple[str, Mapping[str, Any]]] = _RandomArchs()


def tower_model_types() -> tuple[str, ...]:
    """Image-text families (zero-shot labels)."""
    return tuple(k for k, f in FAMILIES.items() if f.tower)

# Why the nearest non-ViTs are not shown (model_type -> reason).
NOT_VITS: dict[str, str] = {
    "swin": "Swin attends within shifted local windows and merges patches between stages, so there is no "
            "global token-to-token attention map and the grid shrinks",
    "swinv2": "Swin V2 attends within shifted local windows and merges patches between stages",
    "convnext": "ConvNeXt is a convolutional network: no tokens, no attention",
    "convnextv2": "ConvNeXt V2 is a convolutional network: no tokens, no attention",
    "resnet": "ResNet is a convolutional network: no tokens, no attention",
    "vit_hybrid": "a hybrid ViT's tokens come from a CNN's feature map, not from patches of the photo",
    "dinat": "DiNAT attends within local neighbourhoods, not globally",
    "levit": "LeViT mixes convolutions and attention over shrinking grids",
    "mobilevit": "MobileViT mixes convolutions and local attention",
}


def supported_text() -> str:
    return ", ".join(f"{f.title} ({k})" for k, f in FAMILIES.items())


def family_of_type(model_type: str, name: str = "this model") -> Family:
    if model_type in FAMILIES:
        return FAMILIES[model_type]
    why = NOT_VITS.get(model_type, "it is not one of the ViT families vizvit knows")
    raise UserError(f"{name!r} is a {model_type!r} model, not a ViT in vizvit's sense: {why}. vizvit "
                    f"shows ViTs whose tokens are the photo's patches and whose every layer attends "
                    f"globally: "
                    f"{supported_text()}; e.g. {DEFAULT_MODEL}.")


def is_local_path(model_id: str) -> bool:
    """Whether a model id names a directory on this machine (a server path, never to be shown)."""
    p = Path(model_id)
    return p.is_absolute() or model_id.startswith(".") or p.is_dir()


def short_name(model_id: str) -> str:
    """A hub id as is; a local directory by its last component only (no server paths)."""
    return f"local: {Path(model_id).resolve().name}" if is_local_path(model_id) else model_id


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


def geometry_of(config: PretrainedConfig, has_head: bool = True) -> Geometry:
    def pair(v: int | tuple[int, int] | list[int]) -> tuple[int, int]:
        return (int(v[0]), int(v[1])) if isinstance(v, (tuple, list)) else (int(v), int(v))

    fam = family_of_type(getattr(config, "model_type", "vit"))
    prefix = fam.prefix(config)
    summaries = fam.summaries(config, has_head)
    if fam.tower:  # the numbers of the image tower
        config = config.vision_config
    image_size = pair(config.image_size)
    ph, pw = pair(config.patch_size)
    if ph != pw:
        raise UserError(f"Non-square patches ({ph}×{pw}) are not supported.")
    return Geometry(
        image_size=image_size,
        patch_size=ph,
        grid=(image_size[0] // ph, image_size[1] // pw),
        num_prefix_tokens=len(prefix),
        num_layers=int(config.num_hidden_layers),
        num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size),
        prefix_names=prefix,
        summaries=summaries,
        family=fam.key,
    )


def at_input_size(g: Geometry, pp: Preprocess) -> Geometry:
    """A family that interpolates its positions at every forward (DINOv2) runs at whatever size
    its processor makes (224 for dinov2-small, trained at 518): the geometry follows the input."""
    size = pp.crop or (pp.resize if isinstance(pp.resize, tuple) else None)
    if not FAMILIES[g.family].interpolates_positions or size is None or tuple(size) == g.image_size:
        return g
    h, w = int(size[0]), int(size[1])
    return replace(g, image_size=(h, w), grid=(h // g.patch_size, w // g.patch_size))


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
    size: Any = getattr(proc, "size", None)  # a SizeDict (height/width or shortest_edge), or None
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
    cs: Any = getattr(proc, "crop_size", None)
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
    kw: dict[str, Any] = dict(backend="pil", trust_remote_code=False)
    try:
        return AutoImageProcessor.from_pretrained(name, local_files_only=True, **kw)
    except OSError:
        return AutoImageProcessor.from_pretrained(name, **kw)


def _three(v: float | Iterable[float] | None,
           default: tuple[float, float, float]) -> tuple[float, float, float]:
    """A processor's per-channel mean or std: a scalar (or a list of one) means the same for R, G and B."""
    if v is None:
        return default
    vals = (float(v),) if isinstance(v, (int, float)) else tuple(float(x) for x in v)
    if len(vals) == 1:
        return vals[0], vals[0], vals[0]
    if len(vals) != 3:
        raise UserError(f"The image processor gives {len(vals)} per-channel values; a photo has 3 (R, G, B).")
    return vals[0], vals[1], vals[2]


def labels_of(config: PretrainedConfig, has_head: bool) -> tuple[str, ...]:
    if not has_head:
        return ()
    id2label = getattr(config, "id2label", None) or {}
    n = int(config.num_labels or 0)  # None when the config has no id2label (int(None) raised)
    labels = [str(id2label.get(i, id2label.get(str(i), f"class {i}"))) for i in range(n)]
    # Configs built without labels say "LABEL_3"; ImageNet-1k heads get real names.
    if n == 1000 and all(lab.startswith("LABEL_") for lab in labels) and _LABELS_FILE.exists():
        labels = _LABELS_FILE.read_text().splitlines()[:1000]
    return tuple(labels)


# transformers' from_pretrained swaps torch.nn.init's functions (and init_weights) for no-ops process-wide
# while it builds a model (transformers.initialization.no_init_weights): a random model built meanwhile
# in another thread kept uninitialised weights, a different "untrained" model each time. Every model
# this module builds is built under this lock.
_BUILD_LOCK = threading.RLock()


def _random_model(arch: str) -> PreTrainedModel:
    if arch not in RANDOM_ARCHS:
        raise UserError(
            f"Unknown random architecture {arch!r}. Choose one of: "
            + ", ".join(RANDOM_PREFIX + a for a in RANDOM_ARCHS)
        )
    kind, numbers = RANDOM_ARCHS[arch]
    fam = FAMILIES[kind]
    config = fam.build_class("config")(**({} if fam.tower else {"num_labels": 1000}), **numbers)
    # Seeded so that every process (and every test) sees the same "untrained" model.
    with _BUILD_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(RANDOM_SEED)
        model = fam.build_class("random")(config)
    model.set_attn_implementation("eager")
    return model


def _random_preprocess(kind: str, default: Preprocess) -> Preprocess:
    """random:<arch> has no processor: the published checkpoint's (DINOv2: 256 bicubic, 224 crop,
    ImageNet statistics), else ViT's defaults."""
    if FAMILIES[kind].interpolates_positions:
        return Preprocess(resize=256, crop=(224, 224), resample=Image.Resampling.BICUBIC,
                          mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
    return default


def _pretrained_model(name: str) -> tuple[PreTrainedModel, tuple[str, ...]]:
    """The checkpoint's model and the parameters it did not hold (initialised, never trained)."""
    hint = (
        "Check the hub id or the directory (it must hold a ViT saved with save_pretrained), "
        f"or run offline with --model {RANDOM_PREFIX}vit-base-patch16-224."
    )
    try:
        config = AutoConfig.from_pretrained(name)  # never trust_remote_code
    except Exception as e:  # hub errors come as many types; all mean "cannot load"
        raise UserError(f"Cannot load model {name!r}: {type(e).__name__}. {hint}") from e
    fam = family_of_type(config.model_type, name)
    archs = [a for a in (getattr(config, "architectures", None) or []) if a in fam.classes]
    try:
        kwargs: dict[str, Any] = {"attn_implementation": "eager"}
        if archs:  # the class the checkpoint names (Auto would load a distilled DeiT without its [DIST] head)
            cls = getattr(transformers, archs[0])
        else:
            cls = AutoModel
        if cls.__name__.endswith("Model") and fam.pooling_kwarg:
            kwargs["add_pooling_layer"] = False
        with _BUILD_LOCK:
            model, info = cls.from_pretrained(name, output_loading_info=True, **kwargs)
        return model, tuple(sorted(info.get("missing_keys") or ()))
    except Exception as e:
        raise UserError(f"Cannot load weights of {name!r}: {type(e).__name__}. {hint}") from e


def load_checkpoint(name: str = DEFAULT_MODEL, device: str = "auto") -> VitModel:
    """A ViT's checkpoint, ready for analysis but without zero-shot labels (those need a text
    forward, which only the engine runs): call ``engine.load_model``, the one way to load a model.

    name: a hub id (``google/vit-base-patch16-224``), a local ``save_pretrained``
    directory, or ``random:<arch>`` (seeded random weights, offline). Raises
    ValueError with what to do when it cannot be loaded.
    """
    name = str(name).strip()
    dev = pick_device(device)
    missing: tuple[str, ...]
    if name.startswith(RANDOM_PREFIX):
        model = _random_model(name[len(RANDOM_PREFIX):])
        is_pretrained, missing = False, ()
    else:
        model, missing = _pretrained_model(name)
        is_pretrained = True
    model.eval().to(dev)
    for p in model.parameters():
        p.requires_grad_(False)  # shared read-only; gradients w.r.t. activations still work
    config = model.config
    fam = family_of_type(getattr(config, "model_type", "vit"), name)
    has_head = bool(fam.heads(model))
    geometry = geometry_of(config, has_head)
    pp = _preprocess_of(name, config)
    if name.startswith(RANDOM_PREFIX):
        pp = _random_preprocess(fam.key, pp)
    vm = VitModel(
        id=name,
        model=model,
        geometry=at_input_size(geometry, pp),
        preprocess=pp,
        labels=labels_of(config, has_head),
        device=dev,
        is_pretrained=is_pretrained,
        missing_keys=missing,
        text=text_side(model, name if is_pretrained else None, fam.text) if fam.text is not None else None,
    )
    return vm  # CLIP / SigLIP get their default labels in engine.load_model (a text forward)
