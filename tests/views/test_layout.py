"""vizvit.views.layout: constructed maps with known answers: a one-hot map lights exactly its patch, in the
one-map picture and in the right cell of the layers × heads grid; a click at a cell's centre opens
that cell; each tile's own top is the plain percentile rule."""

from __future__ import annotations

import numpy as np
import pytest
from synthetic import GEOMS

from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.pictures import render
from vizvit.readings.attention import AttnParams
from vizvit.views import layout


def one_hot(shape, where) -> np.ndarray:
    m = np.zeros(shape, np.float32)
    m[where] = 1.0
    return m


@pytest.mark.parametrize("name", list(GEOMS))
def test_a_one_hot_map_lights_exactly_its_patch(name):
    g = GEOMS[name]
    r, c = 2, 5
    view = np.zeros((*g.image_size, 3), np.uint8)
    p = AttnParams(alpha=1.0, cmap="inferno")
    img = layout.map_image(view, one_hot(g.grid, (r, c)), g, p, lo_hi=(0.0, 1.0), scale=1)
    lut = render.lut("inferno")
    s = g.patch_size
    np.testing.assert_array_equal(img[r * s + s // 2, c * s + s // 2], lut[255])  # the patch: the top colour
    np.testing.assert_array_equal(img[(r + 2) * s + s // 2, c * s + s // 2], lut[0])  # another: the bottom
    assert img.shape[1] > g.image_size[1]  # the colour bar on the right, the map keeps its pixel coordinates


def test_tau_darkens_the_patches_outside_the_kept_mass():
    g = GEOMS["g7"]
    view = np.full((*g.image_size, 3), 200, np.uint8)
    p = AttnParams(alpha=1.0, tau=0.5)
    img = layout.map_image(view, one_hot(g.grid, (0, 0)), g, p, lo_hi=(0.0, 1.0), scale=1)
    s = g.patch_size
    assert (img[3 * s + 1, 3 * s + 1] == int(200 * layout.DIM)).all()  # outside the kept patch: the dimmed view


@pytest.mark.parametrize("name", list(GEOMS))
def test_a_one_hot_grid_cell_lights_at_its_documented_place(name):
    g = GEOMS[name]
    gh, gw = g.grid
    maps = np.zeros((g.num_layers, g.num_heads, gh, gw), np.float32)
    l, h, r, c = g.num_layers - 1, 1, 3, 4
    maps[l, h, r, c] = 1.0
    img = layout.compose_grid(maps, "inferno", shared=True, vmax=1.0, bar=False)
    t = layout.tile_edge(g.grid, g.num_heads)
    s = t // max(gh, gw)
    x0 = layout.GRID_LEFT + h * (t + layout.GRID_SEP)
    y0 = layout.GRID_TOP + l * (t + layout.GRID_SEP)
    lut = render.lut("inferno")
    np.testing.assert_array_equal(img[y0 + r * s + s // 2, x0 + c * s + s // 2], lut[255])
    np.testing.assert_array_equal(img[y0 + s // 2, x0 + s // 2], lut[0])  # the same cell's patch (0, 0)
    assert (img[y0 - 1, x0 + 1] == 255).all()  # the white gap between cells
    assert layout.grid_cell_at(g, x0 + t / 2, y0 + t / 2) == (l + 1, h + 1)
    with pytest.raises(UserError):
        layout.grid_cell_at(g, 2, 2)  # the label margin


def test_tile_tops_are_the_percentile_or_half_the_max():
    gen = np.random.default_rng(0)
    maps = gen.random((2, 3, 14, 14)).astype(np.float32)
    maps[1, 2, 0, 0] = 50.0  # a lone peak: the tile's top is half of it, not its 99th percentile
    tops = layout.tile_tops(maps)
    for l in range(2):
        for h in range(3):
            flat = maps[l, h].reshape(-1)
            want = max(np.percentile(flat, layout.TILE_PERCENTILE), flat.max() / 2)
            assert tops[l, h] == pytest.approx(want, rel=1e-5)
    assert tops[1, 2] == pytest.approx(25.0)


def test_the_strip_outlines_the_chosen_layer():
    g = GEOMS["g7"]
    maps = np.zeros((g.num_layers, *g.grid), np.float32)
    strip = layout.compose_strip(np.zeros((*g.image_size, 3), np.uint8), maps, AttnParams())
    out = layout.outline_strip_tile(strip, g.num_layers, 1)
    x0 = layout.STRIP_TILE + 3  # the second tile: tiles 3 px apart
    cols = np.flatnonzero((out != strip).any(-1).any(0))  # the columns the outline changed
    assert x0 - 2 <= cols.min() <= x0 and x0 + layout.STRIP_TILE - 2 <= cols.max() <= x0 + layout.STRIP_TILE + 1
    np.testing.assert_array_equal(out[1, x0 + 10], render.HIGHLIGHT_COLOR)


@pytest.mark.parametrize("layers", [12, 24])
def test_the_strip_wraps_so_its_labels_stay_readable_on_a_phone(layers):
    """A 390-px phone gives the strip ~358 px: its "<=l" labels (render.TEXT_PX in the picture) must
    show at >= 11 CSS px there, so the strip may be at most 358 * TEXT_PX / 11 px wide (one row of
    twelve tiles was ~1,190 px: ~8 px labels)."""
    maps = np.zeros((layers, 14, 14), np.float32)
    strip = layout.compose_strip(np.zeros((224, 224, 3), np.uint8), maps, AttnParams())
    step = layout.STRIP_TILE + 3
    per_row = (strip.shape[1] + 3) // step
    assert per_row * step - 3 == strip.shape[1]  # whole tiles, 3 px apart
    assert -(-layers // per_row) * (layout.STRIP_TILE + layout.strip_caption() + 3) - 3 == strip.shape[0]
    label_px = 358 * render.TEXT_PX / strip.shape[1]
    assert label_px >= 11, f"{strip.shape[1]} px wide: labels at {label_px:.1f} px"


def test_a_map_on_a_side_not_a_multiple_of_the_patch_sits_on_patch_boxes_and_greys_the_unread_strip():
    """SigLIP so400m-patch14-384: 27 patches of 14 px cover 378 px; patch (0, 26) is x 364-377 (patch_box),
    not 370-383 (384/27 px a patch). Enlarged 2×: x 728-755. The 6 px (12 enlarged) no patch reads are
    blended grey, and τ, which dims left-out patches, leaves them so."""
    g = Geometry((384, 384), 14, (27, 27), 0, 1, 1, 8, summaries=("MAP head",), family="siglip")
    view = np.full((384, 384, 3), 200, np.uint8)
    m = one_hot(g.grid, (0, 26))
    img = layout.map_image(view, m, g, AttnParams(alpha=1.0, cmap="gray"), lo_hi=(0.0, 1.0), scale=2)
    hot = np.argwhere((img[:768, :768] == 255).all(-1))
    assert (hot[:, 1].min(), hot[:, 1].max(), hot[:, 0].min(), hot[:, 0].max()) == (728, 755, 0, 27)
    assert (img[:768, 756:768] == 128).all() and (img[756:768, :768] == 128).all()
    dimmed = layout.map_image(view, m, g, AttnParams(alpha=1.0, cmap="gray", tau=0.5), lo_hi=(0.0, 1.0), scale=2)
    assert (dimmed[100, 100] == int(200 * layout.DIM)).all() and (dimmed[:768, 756:768] == 128).all()
