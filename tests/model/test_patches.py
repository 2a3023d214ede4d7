"""Grid geometry: token index <-> (row, col) <-> pixels, in both test geometries."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.model.patches import (
    check_resizable,
    describe_patch,
    patch_at,
    patch_box,
    patch_of_token,
    positions_for_grid,
    to_grid,
    token_index,
)


def geom(grid=(7, 5), p=32, prefix=1) -> Geometry:
    return Geometry(image_size=(grid[0] * p, grid[1] * p), patch_size=p, grid=grid,
                    num_prefix_tokens=prefix, num_layers=2, num_heads=2, hidden_size=8)


def test_tiny_geometries(tiny):
    g = tiny.geometry
    assert g.grid == (224 // g.patch_size,) * 2
    assert g.seq_len == 1 + g.grid[0] * g.grid[1]
    assert (g.num_layers, g.num_heads, g.hidden_size) == (2, 2, 32)


@pytest.mark.parametrize("prefix", [1, 2])
def test_token_index_round_trip(prefix):
    g = geom(prefix=prefix)
    seen = set()
    for r in range(7):
        for c in range(5):
            t = token_index(r, c, g)
            assert t == prefix + r * 5 + c
            assert patch_of_token(t, g) == (r, c)
            seen.add(t)
    assert seen == set(range(prefix, prefix + 35))
    with pytest.raises(ValueError):
        patch_of_token(0, g)
    with pytest.raises(ValueError):
        token_index(7, 0, g)


def test_patch_box_and_click():
    g = geom()
    assert patch_box(2, 3, g) == (96, 64, 128, 96)
    assert patch_at(96, 64, g) == (2, 3)
    assert patch_at(127.9, 95.9, g) == (2, 3)
    assert patch_at(3 * 96 + 1, 3 * 64 + 1, g, scale=3) == (2, 3)
    with pytest.raises(ValueError):
        patch_at(5 * 32, 0, g)


def test_to_grid_is_row_major():
    import torch

    g = geom()
    grid = to_grid(torch.arange(35), g)
    assert grid.shape == (7, 5) and grid[2, 3] == 13


def test_describe_patch_numbers():
    s = describe_patch(0, 1, geom())
    assert "token index 2 (0–35" in s and "x 32–63" in s
    # One convention, said where it is used: patches from 0, [CLS] is token 0, patch k is token k + 1.
    assert "patch #1 (patches 0–34" in s and "patch #1 is token 2" in s




def test_positions_for_a_non_square_table_keep_its_own_grid():
    """A 2×3 table is laid out on its 2×3 grid (row 1, col 0 is row 3), never on a √6 square: at that
    grid it is used as stored; transformers cannot resize it, so another grid is refused."""
    table = torch.arange(6 * 4, dtype=torch.float32).reshape(6, 4)  # (th·tw, D)
    assert torch.equal(positions_for_grid(table, (2, 3), (2, 3)), table)
    with pytest.raises(UserError, match="2×3 grid"):
        positions_for_grid(table, (2, 3), (3, 3))
    with pytest.raises(UserError, match="6 patch rows"):
        positions_for_grid(table, (3, 3), (3, 3))
    check_resizable((4, 4), (5, 7))  # a square table resizes to any grid, as transformers does
    square = torch.randn(9, 4, generator=torch.Generator().manual_seed(0))
    ref = F.interpolate(square.reshape(1, 3, 3, 4).permute(0, 3, 1, 2), size=(2, 5), mode="bicubic",
                        align_corners=False).permute(0, 2, 3, 1).reshape(10, 4)
    torch.testing.assert_close(positions_for_grid(square, (3, 3), (2, 5)), ref)
