"""Head ablation: switch attention heads off and watch the prediction move.

A head's output is its slice of the concatenated head outputs, the input of the attention
block's output projection: (B, N, H·d) = H slices of d. Ablating head h of layer l changes
that slice before the projection mixes the heads:
  zero: the slice is set to 0;
  mean: every token's slice is replaced by its mean over the photo's tokens (the head then
        carries no per-token information, only its average contribution).
The hooks themselves are registered by the engine (vizvit.model.engine), the one owner of hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

from vizvit.errors import UserError, cut
from vizvit.model.models import Geometry
from vizvit.vocab import ABLATE_MODES, HEADS_EXAMPLE

ABLATION_METHOD = ("head ablation: the head's output before the output projection set to 0 (zero) or to its "
                   "mean over the photo's tokens (mean)")


@dataclass(frozen=True)
class Ablation:
    """Which heads are off, and how. Hashable: part of a cache key. Heads are 0-based (layer, head)."""

    heads: tuple[tuple[int, int], ...] = ()
    mode: str = "zero"

    def __post_init__(self) -> None:
        if self.mode not in ABLATE_MODES:
            raise UserError(f"Ablation mode must be one of: {', '.join(ABLATE_MODES)}.")
        object.__setattr__(self, "heads", tuple(sorted({(int(l), int(h)) for l, h in self.heads})))

    def __bool__(self) -> bool:
        return bool(self.heads)

    def checked(self, g: Geometry) -> Ablation:
        for l, h in self.heads:
            if not (0 <= l < g.num_layers and 0 <= h < g.num_heads):
                raise UserError(f"Head {l + 1}.{h + 1} does not exist: layers 1..{g.num_layers}, "
                                f"heads 1..{g.num_heads}.")
        return self

    def by_layer(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for l, h in self.heads:
            out.setdefault(l, []).append(h)
        return out

    def toggled(self, cells: Iterable[tuple[int, int]]) -> Ablation:
        """The same mode with each cell switched: on if it was off, off if it was on."""
        now = set(self.heads)
        return Ablation(tuple(now.symmetric_difference({(int(l), int(h)) for l, h in cells})), self.mode)


def parse_heads(text: str, g: Geometry) -> tuple[tuple[int, int], ...]:
    """'3.5, 7.1' (layer.head, counted from 1 as on the page) -> ((2, 4), (6, 0)); '7' = all heads of layer 7.
    The box is any caller's to fill (megabytes): each part is read once however often it is repeated, and each
    head kept once, so the work is the text's and the heads', never a list of every part's heads ("1," a
    million times was 12 million tuples, ~1.3 GB and ~25 s)."""
    out: set[tuple[int, int]] = set()
    for part in dict.fromkeys(p.strip() for p in str(text).replace(";", ",").split(",")):
        if not part:
            continue
        try:
            if "." in part:
                l, h = (int(x) for x in part.split("."))
                cells: tuple[tuple[int, int], ...] = ((l - 1, h - 1),)
            else:
                cells = tuple((int(part) - 1, h) for h in range(g.num_heads))
        except ValueError:
            # the example a head of this model (HEADS_EXAMPLE's first, or the last one where it has fewer)
            ex = ".".join(str(min(int(x), n)) for x, n in zip(HEADS_EXAMPLE.split(",")[0].split("."),
                                                                 (g.num_layers, g.num_heads)))
            raise UserError(f"'{cut(part)}' is not layer.head (e.g. {ex}) or a layer number.") from None
        out.update(Ablation(cells).checked(g).heads)
    return Ablation(tuple(out)).heads


def format_heads(heads: Iterable[tuple[int, int]]) -> str:
    """((2, 4), (6, 0)) -> '3.5,7.1' (1-based, as on the page and in links)."""
    return ",".join(f"{l + 1}.{h + 1}" for l, h in heads)


def head_slices(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, N, H·d) -> (B, N, H, d) view of the concatenated head outputs."""
    b, n, hd = x.shape
    return x.view(b, n, num_heads, hd // num_heads)


def ablate_pre_hook(heads: list[int], mode: str, num_heads: int) -> Callable:
    """A forward pre-hook for a layer's output projection that ablates `heads` (0-based)."""
    idx = torch.tensor(heads, dtype=torch.long)

    def hook(_m: torch.nn.Module, args: tuple) -> tuple:
        x = args[0].clone()  # (B, N, H·d)
        s = head_slices(x, num_heads)  # a view into x
        i = idx.to(x.device)
        if mode == "zero":
            s[:, :, i] = 0
        else:
            s[:, :, i] = s[:, :, i].mean(dim=1, keepdim=True)
        return (x, *args[1:])

    return hook


def per_sample_ablate_hook(layer: int, cells: torch.Tensor, num_heads: int, mode: str = "zero") -> Callable:
    """A pre-hook for layer `layer`'s output projection in a batch where sample b ablates head
    cells[b, 1] if cells[b, 0] == layer (cells: (B, 2) 0-based (layer, head); -1 = none), as
    ablate_pre_hook's `mode` does: set to 0, or to its mean over the sample's tokens."""

    def hook(_m: torch.nn.Module, args: tuple) -> tuple:
        x = args[0].clone()
        s = head_slices(x, num_heads)  # (B, N, H, d), a view into x
        c = cells.to(x.device)
        rows = (c[:, 0] == layer).nonzero().squeeze(1)
        if rows.numel():
            picked = s[rows, :, c[rows, 1]]  # (b, N, d): each row's own head
            s[rows, :, c[rows, 1]] = 0 if mode == "zero" else picked.mean(dim=1, keepdim=True)
        return (x, *args[1:])

    return hook
