"""Zero-shot labels for CLIP and SigLIP: the user's own text is the classifier.

A CLIP or SigLIP checkpoint has no classifier head. Its image tower maps the photo to one
image embedding (E,); its text tower maps each prompt ("a photo of a {label}") to a text
embedding (E,). The "head" is then the (C, E) matrix of L2-normalised text embeddings:

    CLIP:   logits = exp(logit_scale) · cos(image, text_c);           probs = softmax over the labels
    SigLIP: logits = exp(logit_scale) · cos(image, text_c) + bias;    probs = sigmoid per label

(CLIP: Radford et al. 2021; SigLIP: Zhai et al. 2023). A ``ZeroShotHead`` holds the text side of
one label list; ``VitModel.with_zero_shot(head)`` gives the same shared model with that head, so
every view, batched prediction and gradient reads the typed labels. Text embeddings are computed
by ``engine.text_embeddings`` (the only place the model runs) and cached per prompt by the
session (``session.text_key``): a new label costs one text forward, never an image forward.

Where the image tower ends, per family (``engine``'s pooling, from the family's pooling kind):
- CLIP: the [CLS] token (token 0) after the final layernorm, through ``visual_projection``.
- SigLIP: no [CLS]. A multihead attention pooling head (MAP) lets one learned probe attend
  over every patch token after the final layernorm; its attention (H, P) is the summary's
  attention, and rollout ends with it (``attention.summary_row``).

Plain Python and torch; no gradio.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import torch
from transformers import PreTrainedModel

from vizvit.errors import UserError

Rule = Literal["softmax", "sigmoid"]
RULE_TEXT: dict[str, str] = {
    "softmax": "CLIP's rule: softmax over your labels of exp(logit_scale)·cosine (they sum to 100 %)",
    "sigmoid": "SigLIP's rule: a sigmoid per label of exp(logit_scale)·cosine + bias (each label on its "
               "own; they need not sum to 100 %)",
}
DEFAULT_LABELS = ("a cat", "a dog", "a teapot", "a coffee mug", "an astronaut", "a car", "a bird",
                  "a flower", "a building", "a person")
DEFAULT_TEMPLATE = "a photo of {}"
MAX_LABELS = 64
MAX_LABEL_CHARS = 80
def patch_label_method(model: PreTrainedModel) -> str:
    """How the patch-label map is computed, for this tower (the whole CLIP / SigLIP model): CLIP projects
    the patch tokens, SigLIP has no projection (its tokens are already in the text's width)."""
    projected = ", then the image projection" if hasattr(model, "visual_projection") else ""
    return (f"patch-label similarity: cosine of each patch token (final layernorm{projected}) with the label's "
            "text embedding")
PATCH_LABEL_CAVEAT = ("CLIP and SigLIP were trained to align the *pooled* image embedding with text, not "
                      "each patch token: this map is known to be noisy and can even highlight the background "
                      "(Zhou et al. 2022, MaskCLIP; Li et al. 2023, CLIP Surgery). Read it as a probe, not "
                      "as an explanation; class relevance is the explanation.")


def parse_labels(text: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """"a cat, a dog; a teapot" (commas, semicolons or new lines) -> ("a cat", "a dog", "a teapot").
    Blank entries and repeats are dropped, order kept. Empty -> ()."""
    if text is None:
        return ()
    parts = text if isinstance(text, (tuple, list)) else re.split(r"[,;\n]", str(text))
    labels = tuple(dict.fromkeys(" ".join(str(p).split()) for p in parts if str(p).strip()))
    if len(labels) > MAX_LABELS:
        raise UserError(f"{len(labels)} labels: give at most {MAX_LABELS}.")
    long = [lab for lab in labels if len(lab) > MAX_LABEL_CHARS]
    if long:
        raise UserError(f"The label {long[0][:30]!r}… is too long: keep each under {MAX_LABEL_CHARS} "
                        "characters.")
    return labels


def required_labels(text: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """parse_labels, refusing an empty list (the one place that says so)."""
    labels = parse_labels(text)
    if not labels:
        raise UserError("Type at least one label, e.g. a cat, a dog, a teapot.")
    return labels


def check_template(template: str | None) -> str:
    """"" -> the label as it is; otherwise the template must hold one {} where the label goes."""
    t = " ".join(str(template or "").split())
    if t and t.count("{}") != 1:
        raise UserError("The prompt template needs exactly one {} where the label goes, "
                        'e.g. "a photo of {}".')
    if "{" in t.replace("{}", "") or "}" in t.replace("{}", ""):
        raise UserError("The prompt template may hold only one pair of braces, {}, where the label goes.")
    return t


def prompts(labels: tuple[str, ...], template: str) -> list[str]:
    return [template.replace("{}", lab) if template else lab for lab in labels]


@dataclass(frozen=True)
class TextRule:
    """How one image-text family reads typed labels: part of its ``models.Family`` entry."""

    rule: Rule  # how a label's probability is made from its logit
    pad_to_max: bool = False  # pad prompts to max_length (SigLIP: it pools the last position)
    attention_mask: bool = True  # the text tower was trained with one (SigLIP's was not)
    bos: bool = True  # prompts begin with the config's bos_token_id (SigLIP's have none)


CLIP_TEXT = TextRule("softmax")
SIGLIP_TEXT = TextRule("sigmoid", pad_to_max=True, attention_mask=False, bos=False)


@dataclass(frozen=True)
class ZeroShotHead:
    """The text side of one label list: plays the classifier's role. CPU tensors."""

    labels: tuple[str, ...]  # C labels as typed
    template: str  # "" or a prompt with one {}
    text_embeds: torch.Tensor  # (C, E) float32, L2-normalised rows
    scale: float  # exp(logit_scale)
    bias: float  # SigLIP's logit_bias; 0.0 for CLIP
    rule: Rule

    def logits(self, image_embeds: torch.Tensor) -> torch.Tensor:
        """(B, E) image embeddings (any device, in a graph or not) -> (B, C) logits."""
        img = image_embeds.float()
        img = img / img.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return self.scale * img @ self.text_embeds.to(img.device).T + self.bias

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """(..., C) logits -> probabilities by the model's own rule."""
        return logits.float().softmax(-1) if self.rule == "softmax" else logits.float().sigmoid()

    @property
    def rule_text(self) -> str:
        return RULE_TEXT[self.rule]


def head_of(model: torch.nn.Module, labels: tuple[str, ...], template: str, text_embeds: torch.Tensor,
            rule: Rule) -> ZeroShotHead:
    """A head from already-computed (C, E) text embeddings (normalised here); model: the CLIP /
    SigLIP model (its logit scale and bias); rule: the family's (VitModel.text.rule)."""
    scale = float(model.get_parameter("logit_scale").detach().float().exp())
    bias = float(model.get_parameter("logit_bias").detach().float()) if hasattr(model, "logit_bias") else 0.0
    emb = text_embeds.float().cpu()
    emb = emb / emb.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return ZeroShotHead(labels, template, emb, scale, bias, rule)


# ------------------------------------------------------------------ tokenizers
class ByteTokenizer:
    """A tokenizer that needs no vocabulary file: each UTF-8 byte is one token (id = byte + 3),
    with the family's begin/end/pad ids. For ``random:`` CLIP and SigLIP only (their text towers
    are untrained, so any fixed, deterministic tokenization is as good as the real one)."""

    def __init__(self, bos: int | None, eos: int, pad: int, max_length: int, pad_to_max: bool):
        self.bos, self.eos, self.pad = bos, eos, pad
        self.max_length, self.pad_to_max = max_length, pad_to_max

    def __call__(self, texts: list[str]) -> dict[str, torch.Tensor]:
        seqs: list[list[int]] = []
        for t in texts:
            codes = [b + 3 for b in t.lower().encode("utf-8")]
            room = self.max_length - 1 - (self.bos is not None)
            seqs.append(([self.bos] if self.bos is not None else []) + codes[:room] + [self.eos])
        n = self.max_length if self.pad_to_max else max(len(s) for s in seqs)
        ids = torch.full((len(seqs), n), self.pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), n), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, :len(s)] = torch.tensor(s)
            mask[i, :len(s)] = 1
        return {"input_ids": ids, "attention_mask": mask}


class HubTokenizer:
    """A checkpoint's own tokenizer, called the way its model was trained: CLIP pads to the
    longest prompt (it pools at the end token); SigLIP pads to max_length (it pools the last
    position, and was trained on 64-token sequences)."""

    def __init__(self, tok: Any, max_length: int, pad_to_max: bool):
        self.tok, self.max_length, self.pad_to_max = tok, max_length, pad_to_max

    def __call__(self, texts: list[str]) -> dict[str, torch.Tensor]:
        enc = self.tok(texts, padding="max_length" if self.pad_to_max else True, truncation=True,
                       max_length=self.max_length, return_tensors="pt")
        return {k: enc[k] for k in ("input_ids", "attention_mask") if k in enc}


@runtime_checkable
class TextTower(Protocol):
    """A model with a text tower (CLIP, SigLIP): what the engine calls to embed the prompts."""

    def get_text_features(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> Any: ...


@dataclass(frozen=True)
class TextSide:
    """What a CLIP/SigLIP VitModel has beyond its image tower."""

    tokenize: Any  # list[str] -> {"input_ids": (C, T), "attention_mask": (C, T)}
    rule: Rule
    use_attention_mask: bool  # SigLIP's text tower was trained without one


def text_side(model: PreTrainedModel, name: str | None, rule: TextRule) -> TextSide:
    """The tokenizer and rule of a CLIP/SigLIP model (rule: its family's): the checkpoint's own
    tokenizer (name), or a byte tokenizer (name None: random weights) with the text config's ids
    (random SigLIP: </s> = <pad> = 1, no <s>; CLIP pads with its end token)."""
    tc = model.config.text_config
    max_len = int(tc.max_position_embeddings)
    if name is None:
        pad = int(tc.pad_token_id) if rule.pad_to_max else int(tc.eos_token_id)
        tok: Any = ByteTokenizer(int(tc.bos_token_id) if rule.bos else None, int(tc.eos_token_id), pad,
                                 max_len, rule.pad_to_max)
    else:
        tok = HubTokenizer(_auto_tokenizer(name), max_len, rule.pad_to_max)
    return TextSide(tok, rule.rule, rule.attention_mask)


def _auto_tokenizer(name: str) -> Any:
    from transformers import AutoTokenizer

    hint = ("vizvit needs the checkpoint's tokenizer for zero-shot labels: save it with the model "
            "(tokenizer.save_pretrained(dir)).")
    try:
        try:
            return AutoTokenizer.from_pretrained(name, local_files_only=True, trust_remote_code=False)
        except OSError:
            return AutoTokenizer.from_pretrained(name, trust_remote_code=False)
    except Exception as e:  # hub and tokenizer errors come as many types
        raise UserError(f"Cannot load the text tokenizer of {name!r}: {type(e).__name__}. {hint}") from e
