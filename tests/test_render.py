"""Pictures: enlargement, colour maps, overlays, grid lines, mosaics and the token strip,
against plain numpy references and constructed inputs."""

from __future__ import annotations

import numpy as np
import pytest

from vizvit import render
from vizvit.models import Geometry


def geom(grid=(7, 7), p=32) -> Geometry:
    return Geometry(image_size=(grid[0] * p, grid[1] * p), patch_size=p, grid=grid, num_prefix_tokens=1,
                    num_layers=2, num_heads=2, hidden_size=8)


@pytest.mark.parametrize("scale", [1, 2, 3, 5])
def test_enlarge_equals_repeating_pixels(scale, rng):
    img = rng.integers(0, 256, (13, 7, 3), dtype=np.uint8)
    ref = np.repeat(np.repeat(img, scale, axis=0), scale, axis=1)
    assert np.array_equal(render.enlarge(img, scale), ref)


def test_colorize_ends_and_nan():
    v = np.array([[0.0, 1.0], [0.5, np.nan]])
    out = render.colorize(v, "gray", 0.0, 1.0)
    assert out[0, 0].tolist() == [0, 0, 0] and out[0, 1].tolist() == [255, 255, 255]
    assert abs(int(out[1, 0, 0]) - 128) <= 1 and out[1, 1].tolist() == [128, 128, 128]
    with pytest.raises(ValueError, match="colour map"):
        render.colorize(v, "no-such-map")


def test_overlay_puts_patch_values_on_their_patches():
    g = geom()
    view = np.zeros((224, 224, 3), np.uint8)
    m = np.zeros(g.grid)
    m[2, 5] = 1.0  # the hot patch
    out = render.overlay(view, m, alpha=1.0, cmap="gray", vmin=0, vmax=1)
    hot = out[2 * 32:3 * 32, 5 * 32:6 * 32]
    assert (hot == 255).all() and out.sum() == hot.sum()


def test_grid_lines_sit_on_patch_borders():
    g = geom()
    out = render.draw_grid(np.zeros((448, 448, 3), np.uint8), g, color=(255, 0, 0))  # scale 2
    lit_rows = set(np.nonzero((out[:, 1] == (255, 0, 0)).all(-1))[0])
    assert lit_rows == {64 * k for k in range(1, 7)}


def test_mosaic_places_tile_k_at_row_major_position(rng):
    tiles = rng.integers(0, 256, (5, 4, 6, 3), dtype=np.uint8)
    out = render.mosaic(tiles, rows=2, cols=3, sep=2)
    assert out.shape == (2 * 4 + 2, 3 * 6 + 2 * 2, 3)
    for k in range(5):
        r, c = divmod(k, 3)
        assert np.array_equal(out[r * 6:r * 6 + 4, c * 8:c * 8 + 6], tiles[k])
    assert (out[4:6] == 255).all()  # separator row


def test_sequence_strip_holds_cls_then_every_patch_in_order():
    g = geom()
    view = np.zeros((224, 224, 3), np.uint8)
    for i in range(49):  # patch i is filled with grey level i
        r, c = divmod(i, 7)
        view[r * 32:(r + 1) * 32, c * 32:(c + 1) * 32] = i
    strip = render.sequence_strip(view, g, per_row=10, tile=28)
    cell_w, cell_h = 28 + 2, 28 + 12 + 2
    for t in range(1, 50):  # token t = patch t - 1
        r, c = divmod(t, 10)
        centre = strip[r * cell_h + 14, c * cell_w + 14]
        assert (centre == t - 1).all(), t
    assert strip[5, 5].tolist() == list(render.CLS_COLOR)
    dropped = render.sequence_strip(view, g, per_row=10, kept=np.array([0, 1, 3]))
    assert (dropped[14, cell_w + 14] == 0).all() and (dropped[14, 2 * cell_w + 14] == 2).all()
