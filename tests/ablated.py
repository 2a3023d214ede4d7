"""A plain reference for head ablation, written here and not taken from vizvit: the model's own whole
forward with one head zeroed (or set to its mean over the tokens: the "mean" mode) by a pre-hook of this file on
its layer's output projection, and the head importance read from such forwards (tests of vizvit/model/truncated.py,
engine.zeroed_head_chunks and vizvit/readings/heads.py compare against it)."""

from __future__ import annotations

import numpy as np
import torch

from vizvit.model.images import model_input_view, to_pixel_values


def zero_head(vm, layer: int, head: int, mode: str = "zero"):
    """This test's own ablation: a pre-hook on layer `layer`'s output projection that sets head `head`'s
    slice of its input (B, N, H·d) to 0, or (mode "mean") each column of it to that column's mean over the
    N tokens. Returns the handle."""
    d = vm.geometry.hidden_size // vm.geometry.num_heads

    def hook(_m, args):
        x = args[0].clone()
        cols = slice(head * d, (head + 1) * d)
        if mode == "zero":
            x[..., cols] = 0
        else:
            for b in range(x.shape[0]):  # plain loops: each sample, each column, its mean over the tokens
                for j in range(cols.start, cols.stop):
                    x[b, :, j] = x[b, :, j].sum() / x.shape[1]
        return (x, *args[1:])

    return vm.family.out_proj(vm.vit, layer).register_forward_pre_hook(hook)


def whole(vm, pixels: torch.Tensor, cell: tuple[int, int] | None = None, mode: str = "zero"):
    """The model's own whole forward, with `cell` (layer, head) zeroed: its hidden states (L+1, N, D) as
    transformers records them, and its logits (C,) or None (no classifier). CLIP / SigLIP: the whole
    image-text model on the typed labels' prompts, its logits_per_image."""
    handle = zero_head(vm, *cell, mode) if cell is not None else None
    try:
        with torch.inference_mode():
            if vm.text is None:
                out = vm.model(pixel_values=pixels, output_hidden_states=True)
                return torch.cat(out.hidden_states), (out.logits[0] if hasattr(out, "logits") else None)
            enc = vm.text.tokenize([f"a photo of {lab}" for lab in vm.labels])
            mask = {"attention_mask": enc["attention_mask"]} if vm.text.use_attention_mask else {}
            out = vm.model(input_ids=enc["input_ids"], pixel_values=pixels, output_hidden_states=True, **mask)
            return torch.cat(out.vision_model_output.hidden_states), out.logits_per_image[0]
    finally:
        if handle is not None:
            handle.remove()


def pixels_of(vm, cat) -> torch.Tensor:
    return to_pixel_values(model_input_view(cat, vm.preprocess), vm.preprocess)  # (1, 3, H, W)


def reference_probs(vm, pixels: torch.Tensor, cells, mode: str = "zero") -> torch.Tensor:
    """(len(cells), C) the probabilities of the whole forward with each (layer, head) cell alone zeroed
    (or set to its mean) ((-1, -1): none), by the model's rule (a sigmoid per label for SigLIP, else a softmax)."""
    rule = (lambda z: z.sigmoid()) if vm.geometry.family == "siglip" else (lambda z: z.softmax(-1))
    return torch.stack([rule(whole(vm, pixels, None if l < 0 else (l, h), mode)[1]) for l, h in cells])


def reference_importance(vm, pixels: torch.Tensor, mode: str = "zero") -> np.ndarray:
    """(L, H) p_c(intact) − p_c(that head alone zeroed, or set to its mean), c the intact top-1, from L·H + 1
    whole forwards."""
    g = vm.geometry
    cells = [(-1, -1)] + [(l, h) for l in range(g.num_layers) for h in range(g.num_heads)]
    p = reference_probs(vm, pixels, cells, mode)
    c = int(p[0].argmax())
    return (p[0, c] - p[1:, c]).reshape(g.num_layers, g.num_heads).numpy().astype(np.float32)
