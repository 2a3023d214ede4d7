"""Run a model from inside: its blocks from layer l on, then its head, from the intact hidden state
entering layer l. Zeroing a head of layer l (vizvit.model.ablation) changes nothing before layer l, so
head importance (engine.zeroed_head_chunks) runs only layers l..L−1 of each ablated copy: about half
of L·H whole forwards, with the same numbers up to float summation order.

What the start state is, every family alike (transformers records the input of block 0, then each
block's output, as ``hidden_states``; an Analysis keeps them as (L+1, N, D)): hidden_states[0] is the
embedding stage's output, the patches with [CLS] / [DIST] / the registers before them and the
position embeddings added (none for BEiT, whose positions are a bias inside each block; DINOv2's
interpolated to the input's grid), after CLIP's pre-layernorm; hidden_states[l] for l ≥ 1 is block
l−1's output, before any final norm.

The blocks are called directly, one after the other, as the backbone's own loop calls them, rather
than through a shallow copy of the backbone with a sliced layer list: ViT's, DeiT's and BEiT's base
model have no forward that starts from hidden states (theirs starts from pixels), and a copied
nn.Module shares its dictionaries of submodules, parameters and hooks with the original, so one
assignment on the copy would change the shared model under every other request. Calling the blocks
only reads attributes: nothing on the model changes, so runs in other threads see nothing of this
one. Each block is called through its ``__call__``, so a run's hooks on it (the ablation's pre-hook on
the output projection, registered by vizvit.model.hooks' ``Hooked``, whose run lock the caller holds)
fire as in the whole forward. The head is ``pooling.read_logits``, the logit lens's reading of the
last block's output, which reproduces the model's own logits.

Not run here (``starts_inside`` is False, and the engine runs whole forwards): a block class whose
forward this module has not read. Every family's head is read_logits' (a DINOv2 classifier's [CLS] ⊕
the patch mean included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from vizvit.model.models import Family, Geometry, backbone_of
from vizvit.model.pooling import read_logits
from vizvit.model.zeroshot import ZeroShotHead

# Blocks called as block(hidden_states, attention_mask) (transformers 5): an image without padding has
# no attention mask (the backbones' own create_bidirectional_mask gives None; CLIP's and SigLIP's
# image towers pass none).
PLAIN_BLOCKS = frozenset({"ViTLayer", "DeiTLayer", "Dinov2Layer", "Dinov2WithRegistersLayer", "CLIPEncoderLayer",
                          "SiglipEncoderLayer"})
# BEiT's block also takes the input's resolution, from which it builds its relative position bias.
BIAS_BLOCKS = frozenset({"BeitLayer"})


def starts_inside(fam: Family, model: torch.nn.Module) -> bool:
    """Whether `model` can be run from a layer's input here: every block of a class read here (the head
    after them is the family's, read_logits)."""
    return all(type(b).__name__ in PLAIN_BLOCKS | BIAS_BLOCKS for b in fam.blocks(backbone_of(model)))


def _block_kwargs(backbone: torch.nn.Module, block: torch.nn.Module, n: int, g: Geometry) -> dict[str, Any]:
    """What the backbone's loop passes a block besides the hidden states, for an input of g's size, n
    tokens and no padding: BEiT's resolution (each block builds its own bias from it) and its shared bias
    (for g's grid, as BeitModel builds it) as the attention mask; None as the mask for every other block."""
    if type(block).__name__ not in BIAS_BLOCKS:
        return {"attention_mask": None}
    shared = getattr(backbone, "shared_position_bias", None)
    mask = None if shared is None else shared(g.grid, interpolate_pos_encoding=False, dim_size=n)
    return {"attention_mask": mask, "interpolate_pos_encoding": False, "resolution": g.image_size}


def intact_states(model: torch.nn.Module, pixels: torch.Tensor) -> torch.Tensor:
    """(1, 3, H, W) pixels -> (L+1, N, D) the hidden states of the backbone's intact forward (the
    states every run starts from; an Analysis holds them already). The caller holds the run lock."""
    hidden = backbone_of(model)(pixels, output_hidden_states=True).hidden_states
    return torch.cat(hidden)


def blocks_from(fam: Family, model: torch.nn.Module, states: torch.Tensor, layer: int, g: Geometry) -> torch.Tensor:
    """(B, N, D) the hidden state entering block `layer` -> (B, N, D) the last block's output (what
    hidden_states[L] of the whole forward is), through blocks layer..L−1. g: the geometry of the model input
    the states come from (BEiT's bias is built for its grid)."""
    backbone = backbone_of(model)
    blocks: Sequence[torch.nn.Module] = fam.blocks(backbone)
    if not 0 <= layer < len(blocks):
        raise ValueError(f"Layer {layer} is outside 0..{len(blocks) - 1}.")
    kw = _block_kwargs(backbone, blocks[layer], states.shape[1], g)  # one model's blocks: one class
    x = states
    for block in blocks[layer:]:
        x = block(x, **kw)
    return x


def logits_from(fam: Family, model: torch.nn.Module, states: torch.Tensor, layer: int, g: Geometry,
                head: ZeroShotHead | None = None) -> torch.Tensor:
    """(B, N, D) the hidden state entering block `layer` -> (B, C) logits of the model run from there:
    blocks_from, then the family's head (read_logits; CLIP / SigLIP: the tower's end and `head`, the
    typed labels). The caller checks ``starts_inside`` and holds the run lock."""
    return read_logits(fam, model, blocks_from(fam, model, states, layer, g), head)


def cell_batches(cells: Sequence[tuple[int, int]], chunk: int, by_layer: bool = True) -> list[tuple[int, int]]:
    """(start, stop) index ranges cutting `cells` ((layer, head) pairs, in their order) into batches of at
    most `chunk` cells; by_layer: of one layer each (a batch shares its start state), a new batch
    beginning wherever the layer changes, so cells grouped by layer make ⌈H / chunk⌉ batches a layer."""
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(cells) + 1):
        if i == len(cells) or i - start == chunk or (by_layer and cells[i][0] != cells[start][0]):
            out.append((start, i))
            start = i
    return out
