"""What the learned position embeddings encode (ViT paper, Fig. 7 centre).

All pure tensor/array functions:
- ``position_embeddings`` splits the model's table into prefix ([CLS]) and patch rows
  using ``num_prefix_tokens`` (the snippet in google-research/vision_transformer#55
  slices ``[:-1]`` and so keeps [CLS] and drops the last patch);
- ``cosine_similarity_matrix``: the whole (P, P) similarity in ONE normalised matmul;
- the baselines: 1-D sinusoidal (Vaswani et al.), 2-D sin-cos (MAE) and the
  architecture's own seeded random init;
- ``neighbour_contrast``: one number for "is the 2-D structure there?";
- ``interpolate_patch_positions``: exactly what ``interpolate_pos_encoding`` does.

The tables come from ``engine.position_tables`` (read under the engine's lock) as a
``PositionTables``: nothing here touches a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.model.patches import (
    grid_at,
    interpolate_patch_positions as interpolate_patch_positions,  # re-exported: the docstring lists it
    positions_for_grid,
)

# Positions at least this far apart (Chebyshev grid distance) count as "far".
FAR = 5
RANDOM_INIT_SEED = 0


@dataclass(frozen=True)
class PositionTables:
    """What this module reads of one model, as CPU float32 tensors (engine.position_tables)."""

    geometry: Geometry
    pe_prefix: int  # prefix tokens with a row in the table ([CLS]; DeiT: [CLS], [DIST]; SigLIP: 0)
    antialias: bool  # the family's interpolate_pos_encoding antialiases (DINOv2 with registers)
    table: torch.Tensor | None  # (pe_prefix + P0, D) as stored; None: a relative bias instead (BEiT)
    table_grid: tuple[int, int]  # (th, tw), th·tw = P0: the grid the table was trained at (VitModel.position_grid)
    random_table: torch.Tensor | None  # the same, from the architecture's seeded random init
    # relative bias: ((R + 3, H) table, window) per module
    bias: tuple[tuple[torch.Tensor, tuple[int, int]], ...]
    missing: str  # what to say when there is no table


def stored_positions(t: PositionTables) -> tuple[torch.Tensor, torch.Tensor, tuple[int, int]]:
    """The model's position table as stored: (prefix rows (T', D), patch rows (P0, D), its grid).

    T' counts the prefix tokens that have a position ([CLS]; DeiT: [CLS], [DIST]; registers
    have none). The grid is the training grid (from the config, not √P0: it may be non-square),
    which DINOv2 interpolates at every forward."""
    if t.table is None:
        raise UserError(t.missing)
    table = t.table  # (T' + P0, D)
    pre, patches = table[:t.pe_prefix], table[t.pe_prefix:]
    th, tw = t.table_grid
    if th * tw != patches.shape[0]:
        raise UserError(f"The position table has {patches.shape[0]} patch rows, not the {th}×{tw} grid "
                        "its config names.")
    return pre, patches, (th, tw)


def positions_at(t: PositionTables, grid: tuple[int, int]) -> torch.Tensor:
    """(gh'·gw', D) patch positions for a grid, exactly as the model's forward makes them
    (the stored rows, or those rows interpolated as the family's interpolate_pos_encoding does)."""
    _, patches, g0 = stored_positions(t)
    return positions_for_grid(patches, g0, grid, t.antialias)


def position_embeddings(t: PositionTables) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's position embeddings at its input grid, split into (prefix (T', D), patches (P, D)).

    Patch rows are row-major over the (gh, gw) grid, exactly as the tokens are. For DINOv2 the
    stored (training-size) table is interpolated to the grid, as every forward does."""
    pre, _, _ = stored_positions(t)
    return pre, positions_at(t, t.geometry.grid)


def cosine_similarity_matrix(a: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """(M, D), (K, D) -> (M, K) cosine similarities in one matmul of unit rows.

    b defaults to a (the (P, P) self-similarity). A zero row gives 0, not NaN.
    """
    an = F.normalize(a.float(), dim=-1)
    bn = an if b is None else F.normalize(b.float(), dim=-1)
    return an @ bn.T


def sinusoidal_1d(n: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """Vaswani et al. (2017), for positions 0..n-1 of a sequence -> (n, d).

    PE[pos, 2i] = sin(pos / base^(2i/d)),  PE[pos, 2i+1] = cos(pos / base^(2i/d)).
    Here the sequence is the row-major patch order, so it knows nothing about rows.
    """
    if d % 2:
        raise UserError(f"Sinusoidal encodings need an even width, got {d}.")
    pos = torch.arange(n, dtype=torch.float64)[:, None]  # (n, 1)
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    pe = torch.empty(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe.float()


def _sincos_1d_mae(d: int, pos: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """MAE's get_1d_sincos_pos_embed_from_grid: (M,) -> (M, d) = [sin(pos·ω) | cos(pos·ω)],
    ω_i = 1 / base^(i / (d/2)), i = 0..d/2-1 (halves concatenated, not interleaved)."""
    omega = 1.0 / base ** (torch.arange(d // 2, dtype=torch.float64) / (d / 2.0))
    out = pos.double().reshape(-1)[:, None] * omega[None]  # (M, d/2)
    return torch.cat([torch.sin(out), torch.cos(out)], dim=1)


def sincos_2d(grid: tuple[int, int], d: int, base: float = 10000.0) -> torch.Tensor:
    """MAE's get_2d_sincos_pos_embed for a (gh, gw) grid -> (gh·gw, d), row-major.

    The first d/2 channels encode the column (x), the last d/2 the row (y), as in MAE,
    whose meshgrid puts w first.
    """
    if d % 4:
        raise UserError(f"2-D sin-cos encodings need a width divisible by 4, got {d}.")
    gh, gw = grid
    rows, cols = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")  # (gh, gw)
    emb = torch.cat([_sincos_1d_mae(d // 2, cols, base), _sincos_1d_mae(d // 2, rows, base)], dim=1)
    return emb.float()


def random_init_positions(t: PositionTables) -> torch.Tensor:
    """(P, D) patch position embeddings of the same architecture, untrained (the seeded init the
    engine made with the checkpoint class's own init; nothing downloaded, no other weight built)."""
    g = t.geometry
    if t.random_table is None:
        raise UserError(t.missing)
    # DINOv2: a training-size table, interpolated like the model's
    return positions_for_grid(t.random_table[t.pe_prefix:].float(), t.table_grid, g.grid, t.antialias)


def grid_distances(grid: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(P, P) Manhattan and Chebyshev distances between the grid cells, row-major."""
    gh, gw = grid
    r = torch.arange(gh).repeat_interleave(gw)  # (P,)
    c = torch.arange(gw).repeat(gh)
    dr = (r[:, None] - r[None]).abs()
    dc = (c[:, None] - c[None]).abs()
    return dr + dc, torch.maximum(dr, dc)


@dataclass(frozen=True)
class Contrast:
    """neighbour: mean similarity of each position to its 4-neighbours (Manhattan 1);
    far: mean similarity over pairs at Chebyshev distance >= FAR (max(|Δrow|, |Δcol|));
    contrast = neighbour - far (NaN when the grid has no far pairs)."""

    neighbour: float
    far: float

    @property
    def contrast(self) -> float:
        return self.neighbour - self.far

    def shown(self) -> tuple[str, str, str]:
        """neighbour and far at 3 decimals, and the contrast as the difference of those two numbers, so a student's
        subtraction gives the number written ("+0.85 … −0.08, a contrast of +0.92": the parts at 2 decimals
        summed to 0.93, a reviewer). Every text and table that writes the parts beside the contrast uses these."""
        n, f = round(self.neighbour, 3), round(self.far, 3)
        return f"{n:+.3f}", f"{f:+.3f}", f"{n - f:+.3f}"


def neighbour_contrast(sim: torch.Tensor, grid: tuple[int, int], far: int = FAR) -> Contrast:
    """sim: (P, P) -> the means over all ordered 4-neighbour pairs and all far pairs."""
    manhattan, chebyshev = grid_distances(grid)
    near_mask, far_mask = manhattan == 1, chebyshev >= far
    near = float(sim[near_mask].mean()) if near_mask.any() else float("nan")
    farv = float(sim[far_mask].mean()) if far_mask.any() else float("nan")
    return Contrast(near, farv)


@dataclass(frozen=True)
class PositionReport:
    """Everything the Positions tab shows for one model (photo-independent)."""

    grid: tuple[int, int]
    sim: np.ndarray  # (P, P) float32: learned patch positions, row-major
    cls_sim: np.ndarray | None  # (gh, gw) float32: [CLS] position vs every patch position; None: no [CLS] (SigLIP)
    baselines: dict[str, np.ndarray]  # name -> (P, P) float32 (1-D sin, 2-D sin-cos, random)
    contrasts: dict[str, Contrast]  # "learned" and each baseline


BASELINES = ("1-D sinusoidal", "2-D sin-cos (MAE)", "random init")


def position_report(t: PositionTables) -> PositionReport:
    g = t.geometry
    prefix, patches = position_embeddings(t)  # (T, D), (P, D)
    d = patches.shape[-1]
    sims = {
        "learned": cosine_similarity_matrix(patches),
        BASELINES[0]: cosine_similarity_matrix(sinusoidal_1d(g.num_patches, d)),
        BASELINES[1]: cosine_similarity_matrix(sincos_2d(g.grid, d)),
        BASELINES[2]: cosine_similarity_matrix(random_init_positions(t)),
    }
    # [CLS] is prefix 0. SigLIP has no [CLS] and so no [CLS] position: None, not a grid of NaN
    cls = cosine_similarity_matrix(prefix[:1], patches)[0].reshape(g.grid) if len(prefix) else None
    return PositionReport(
        grid=g.grid,
        sim=sims["learned"].numpy().astype(np.float32),
        cls_sim=None if cls is None else cls.numpy().astype(np.float32),
        baselines={k: sims[k].numpy().astype(np.float32) for k in BASELINES},
        contrasts={k: neighbour_contrast(v, g.grid) for k, v in sims.items()},
    )


def interpolated_similarity(t: PositionTables, size: int) -> tuple[tuple[int, int], np.ndarray]:
    """The (P', P') similarity of the patch positions interpolated for a size×size input."""
    new = grid_at(t.geometry, size)
    sim = cosine_similarity_matrix(positions_at(t, new))  # from the stored table, as the forward does
    return new, sim.numpy().astype(np.float32)


# ------------------------------------------------------------------ BEiT: relative position bias
RELATIVE_BIAS_METHOD = ("relative position bias (BEiT): a learned value per (Δrow, Δcol) = query − key and "
                        "head, added to the attention logits; 3 more for [CLS]→patch, patch→[CLS], "
                        "[CLS]→[CLS]")


@dataclass(frozen=True)
class RelativeBias:
    """A BEiT model's relative position bias, read from its table for the model's grid."""

    tables: np.ndarray  # (L or 1, H, 2·gh−1, 2·gw−1) float32: [.., Δrow + gh − 1, Δcol + gw − 1]
    special: np.ndarray  # (L or 1, H, 3) float32: [CLS]→patch, patch→[CLS], [CLS]→[CLS]
    shared: bool  # one table for all layers


def relative_bias_table(table: torch.Tensor, window: tuple[int, int],
                        grid: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """One BeitRelativePositionBias module's (R + 3, H) table for its training `window` ->
    ((H, 2gh−1, 2gw−1) by offset, (H, 3) [CLS] entries).

    The stored table has (2·wh−1)(2·ww−1) + 3 rows for its training window (wh, ww), row
    (Δrow + wh − 1)·(2·ww − 1) + (Δcol + ww − 1) for offset (Δrow, Δcol) = query − key. At another
    grid it is resized bilinearly, as transformers does."""
    wh, ww = window  # table: (R + 3, H)
    sub = table[:-3].reshape(2 * wh - 1, 2 * ww - 1, -1).permute(2, 0, 1)  # (H, 2wh−1, 2ww−1)
    new = (2 * grid[0] - 1, 2 * grid[1] - 1)
    if tuple(sub.shape[1:]) != new:
        sub = F.interpolate(sub[None], size=new, mode="bilinear")[0]
    return sub, table[-3:].T  # (H, 3): cls→token, token→cls, cls→cls


def relative_bias(t: PositionTables, grid: tuple[int, int] | None = None) -> RelativeBias:
    """The relative bias of every module for `grid` (default: the model's)."""
    if not t.bias:
        raise UserError("This model has no relative position bias.")
    parts = [relative_bias_table(table, window, grid or t.geometry.grid) for table, window in t.bias]
    return RelativeBias(tables=torch.stack([b for b, _ in parts]).numpy().astype(np.float32),
                        special=torch.stack([c for _, c in parts]).numpy().astype(np.float32),
                        shared=len(t.bias) == 1 and t.geometry.num_layers > 1)
