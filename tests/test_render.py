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


def test_colorbar_runs_from_vmax_on_top_to_vmin_with_ticks_at_their_values():
    # gray: value v is drawn as grey level 255·(v − vmin)/(vmax − vmin).
    bar = render.colorbar(101, "gray", vmin=0.0, vmax=0.02, width=10)
    assert bar.shape[0] == 101 and bar.shape[1] > 10 + 30  # room for labels like "0.015"
    assert bar[0, :10].tolist() == [[255] * 3] * 10 and bar[-1, :10].tolist() == [[0] * 3] * 10
    assert abs(int(bar[50, 0, 0]) - 128) <= 1
    # Default ticks: five, evenly spaced, a black tick mark right of the bar at rows 0, 25, ..., 100.
    marks = [y for y in range(101) if bar[y, 10:14].max() == 0]
    assert marks == [0, 25, 50, 75, 100]
    # A flat map (vmin == vmax) still gets a bar of one colour with one tick, not a division by zero.
    flat = render.colorbar(40, "gray", 0.3, 0.3, width=10)
    assert flat.shape[0] == 40 and (flat[:, :10] == flat[0, 0]).all()
    assert [y for y in range(40) if flat[y, 10:14].max() == 0] == [0]


def test_with_colorbar_keeps_the_image_pixels_where_they_were(rng):
    img = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    out = render.with_colorbar(img, "inferno", 0.0, 1.0)
    assert out.shape[0] == 60 and out.shape[1] > 80
    assert np.array_equal(out[:, :80], img)


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
