"""Grid geometry: token index <-> (row, col) <-> pixel box. Row-major, prefix tokens first."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import torch
import torch.nn.functional as F

from vizvit.errors import UserError
from vizvit.model.models import Geometry

Values = TypeVar("Values", torch.Tensor, np.ndarray)  # to_grid gives back what it was given


def token_index(row: int, col: int, g: Geometry) -> int:
    """Sequence position of patch (row, col): num_prefix_tokens + row·gw + col."""
    gh, gw = g.grid
    if not (0 <= row < gh and 0 <= col < gw):
        raise UserError(f"Patch ({row}, {col}) is outside the {gh}×{gw} grid.")
    return g.num_prefix_tokens + row * gw + col


def patch_of_token(token: int, g: Geometry) -> tuple[int, int]:
    """Inverse of token_index. Raises for prefix tokens ([CLS] has no place on the grid)."""
    i = token - g.num_prefix_tokens
    if not (0 <= i < g.num_patches):
        raise UserError(f"Token {token} is not a patch token (prefix tokens: {g.num_prefix_tokens}).")
    return divmod(i, g.grid[1])


def patch_box(row: int, col: int, g: Geometry) -> tuple[int, int, int, int]:
    """Pixel box (x0, y0, x1, y1) of patch (row, col) in the model-input view, x1/y1 exclusive."""
    token_index(row, col, g)  # validates
    p = g.patch_size
    return col * p, row * p, (col + 1) * p, (row + 1) * p


def patch_at(x: float, y: float, g: Geometry, scale: float = 1.0) -> tuple[int, int]:
    """Patch (row, col) under pixel (x, y) of a view displayed `scale` times enlarged."""
    p = g.patch_size * scale
    gh, gw = g.grid
    row, col = int(y // p), int(x // p)
    if not (0 <= row < gh and 0 <= col < gw):
        raise UserError(f"Pixel ({x:.0f}, {y:.0f}) is outside the patch grid.")
    return row, col


def to_grid(values: Values, g: Geometry) -> Values:
    """(..., num_patches) -> (..., gh, gw), row-major. Patch tokens only: slice prefixes first."""
    if values.shape[-1] != g.num_patches:
        raise UserError(f"Expected {g.num_patches} patch values, got {values.shape[-1]}.")
    return values.reshape(*values.shape[:-1], *g.grid)


def patch_tokens(x: torch.Tensor, g: Geometry) -> torch.Tensor:
    """Drop the prefix tokens along the sequence axis: (..., N, D) -> (..., num_patches, D)."""
    return x[..., g.num_prefix_tokens:, :]


def describe_patch(row: int, col: int, g: Geometry) -> str:
    """One line for a clicked patch: its place, token index and pixel box."""
    x0, y0, x1, y1 = patch_box(row, col, g)
    t = token_index(row, col, g)
    k = t - g.num_prefix_tokens
    cls = "[CLS]" if g.num_prefix_tokens == 1 else f"{g.num_prefix_tokens} prefix tokens"
    return (f"Patch (row {row}, col {col}) · patch #{k} (patches 0–{g.num_patches - 1}, row by row) · "
            f"token index {t} (0–{g.seq_len - 1}; {cls} first, so patch #{k} is token {t}) · "
            f"pixels x {x0}–{x1 - 1}, y {y0}–{y1 - 1}")


# ------------------------------------------------------------------ the grid at other sizes
def interpolate_patch_positions(patches: torch.Tensor, grid: tuple[int, int],
                                new_grid: tuple[int, int], antialias: bool = False) -> torch.Tensor:
    """(gh·gw, D) -> (nh·nw, D): bicubic, align_corners=False, as ViT's
    ``interpolate_pos_encoding`` does for a larger input (e.g. 384 px -> 24×24). antialias: as
    DINOv2 with registers does (its Family says so); plain DINOv2, ViT and DeiT do not."""
    gh, gw = grid
    d = patches.shape[-1]
    x = patches.reshape(1, gh, gw, d).permute(0, 3, 1, 2)  # (1, D, gh, gw)
    x = F.interpolate(x, size=new_grid, mode="bicubic", align_corners=False, antialias=antialias)
    return x.permute(0, 2, 3, 1).reshape(-1, d)


def check_resizable(table_grid: tuple[int, int], grid: tuple[int, int]) -> None:
    """Raise UserError where transformers cannot make a position table for `grid`: every family's
    ``interpolate_pos_encoding`` reshapes the stored patch rows to √P0×√P0, so a table learned on a
    non-square grid (a 160×224 ViT's 5×7) runs only at its own grid; there the forward adds it as is."""
    th, tw = table_grid
    if th != tw and (th, tw) != tuple(grid):
        raise UserError(f"This model learned its positions on a {th}×{tw} grid (a non-square input), and "
                        f"transformers resizes only a square position table, so the model runs only at "
                        f"its own size, not on a {grid[0]}×{grid[1]} grid.")


def positions_for_grid(patches: torch.Tensor, table_grid: tuple[int, int], grid: tuple[int, int],
                       antialias: bool = False) -> torch.Tensor:
    """(th·tw, D) stored patch positions laid out on `table_grid` -> (gh·gw, D) for `grid`, as the
    forward makes them: the rows as stored at their own grid, else interpolated
    (interpolate_patch_positions). UserError where transformers cannot (check_resizable)."""
    th, tw = table_grid
    if th * tw != patches.shape[0]:
        raise UserError(f"The position table has {patches.shape[0]} patch rows, not the {th}×{tw} grid "
                        "its config names.")
    if (th, tw) == tuple(grid):
        return patches
    check_resizable(table_grid, grid)
    return interpolate_patch_positions(patches, (th, tw), (grid[0], grid[1]), antialias)


def grid_at(g: Geometry, size: int) -> tuple[int, int]:
    """The patch grid of a size×size input."""
    if size < g.patch_size:
        raise UserError(f"{size} px is smaller than one {g.patch_size}-px patch.")
    return size // g.patch_size, size // g.patch_size
