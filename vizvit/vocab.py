"""Every choice a visitor (or a link, or the command line) can make, and its URL spelling,
defined once. Types are Literals; the tuples the page shows are read from them."""

from __future__ import annotations

from typing import Literal, get_args

# -- the tabs, in the page's order: id -> title. THE tab list: vizvit/views/<id>.py computes a
# tab, page/tabs/<id>.py wires it (both found by the id); ids double as URL values (?tab=attention).
TABS: dict[str, str] = {"patches": "Patches", "embeddings": "Embeddings", "attention": "Attention",
                        "camera": "Camera", "positions": "Positions", "compare": "Compare",
                        "experiments": "Experiments", "inside": "Inside", "lesson": "Lesson",
                        "lecture": "For lecturers"}
TabId = str  # one of TAB_IDS
TAB_IDS: tuple[str, ...] = tuple(TABS)

# -- attention: how heads are fused, which way a clicked patch is read, raw or rolled out
Fusion = Literal["mean", "max", "min"]
FUSIONS: tuple[Fusion, ...] = get_args(Fusion)
ONE_HEAD = "one head"
SHOW_CHOICES: tuple[str, ...] = (ONE_HEAD, *FUSIONS)
Direction = Literal["row", "column"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)
Mode = Literal["raw", "rolled out"]
MODES: tuple[Mode, ...] = get_args(Mode)
# URL spellings (a space is awkward in a link); every accepted spelling -> the mode.
MODE_URL: dict[str, str] = {"raw": "raw", "rolled out": "rollout"}
MODE_FROM_URL: dict[str, str] = {"raw": "raw", "rollout": "rolled out", "rolled": "rolled out",
                                 "rolled out": "rolled out"}
# rollout discard and attention-distance conventions (docs/methods.md says how peers differ)
DiscardMode = Literal["per row", "global (vit-explain)"]
# per row: each query's lowest patch keys, prefix columns untouched (vizvit's default);
# global: the lowest entries of the whole N×N matrix, only [CLS]→[CLS] kept, as
# jacobgil/vit-explain's vit_rollout.py does (docs/methods.md, "Rollout").
DISCARD_MODES: tuple[DiscardMode, ...] = get_args(DiscardMode)
DistanceNorm = Literal["renormalised", "raw (probing-vits)"]
# renormalised: each query's patch weights divided by their sum ([CLS] dropped, rest
# rescaled to 1); raw: [CLS] dropped and not rescaled, as sayakpaul/probing-vits does.
DISTANCE_NORMS: tuple[DistanceNorm, ...] = get_args(DistanceNorm)
# the main attention map's colour scale (issue 17): 0..max shows near-uniform attention as
# near-uniform (the default); the map's own range stretches any difference to the whole colour
# map; fixed: one range (0 .. the largest value of this query over every layer and head).
AttnScale = Literal["0 to max", "this map's range", "fixed across layers and heads"]
ATTN_SCALES: tuple[AttnScale, ...] = get_args(AttnScale)
COLORMAPS: tuple[str, ...] = ("inferno", "viridis", "magma", "turbo", "jet", "gray", "RdBu_r")

# -- embeddings: what colours the points of the PCA scatter
COLOR_CHOICES: tuple[str, ...] = ("row", "column", "rollout")

# -- positions: input sizes for the other-resolution forward (pixels, square)
RESOLUTIONS: tuple[int, ...] = (288, 384, 448, 512)

# -- experiments: what enters at the border of a shift; how a masked patch is removed
Fill = Literal["edge", "wrap", "constant"]
FILLS: tuple[str, ...] = get_args(Fill)
MaskMode = Literal["drop", "mask", "black", "mean", "blur"]
# drop first: a transformer's own way; "mask": the patch's embedding replaced by the [MASK] token
# (BERT, BEiT, the ViT paper's masked-patch prediction), its position embedding kept.
MASK_MODES: tuple[str, ...] = get_args(MaskMode)
# What the page shows for a value, where not the value itself.
MASK_MODE_LABELS: dict[str, str] = {"mask": "[MASK] token"}
TOKEN_MODES: tuple[str, ...] = ("drop", "mask")  # masks applied to the tokens, not the pixels
PIXEL_FILLS: tuple[str, ...] = tuple(m for m in MASK_MODES if m not in TOKEN_MODES)
CURVE_MODES: tuple[str, ...] = (*PIXEL_FILLS, "drop")  # a pixel fill first: comparable with CNN papers
MaskAction = Literal["clear", "invert", "random", "top", "bottom"]
MASK_ACTIONS: tuple[str, ...] = get_args(MaskAction)

# -- inside the model: how a switched-off head's output is replaced
AblateMode = Literal["zero", "mean"]
ABLATE_MODES: tuple[str, ...] = get_args(AblateMode)
# The heads given as an example wherever a visitor types some (the box, a link, the command line): heads that exist
# in every model the page offers, ViT-Ti's and DeiT-Ti's 3 heads a layer included ("3.5, 7.1" was refused on the
# trained ViT-Ti by the very page that suggested it: "layers 1..12, heads 1..3").
HEADS_EXAMPLE = "3.2,7.1"

# -- embeddings: the dropout panel's p (the ViT paper's dropout for ImageNet-21k/JFT training, Table 3,
# where the config says 0); a lesson step without its own p measures this one
DEFAULT_DROPOUT = 0.1
