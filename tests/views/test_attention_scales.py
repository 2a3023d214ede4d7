"""The Attention tab's scales say what they show (issue 43 item 5): heads are categories on the
distance chart, the grid outlines what the main map shows (a fused map: the whole layer), the
per-tile bar gives its top a number, and a caption never says an artifact token is drawn in the top
colour when it is not. Constructed attentions with known answers."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from synthetic import GEOMS, StandInModel, random_attention, stand_in_analysis

from vizvit import vocab
from vizvit.pictures import render
from vizvit.readings import attention as ra
from vizvit.views import attention as ap, layout


def test_the_distance_chart_colours_heads_as_categories():
    d = np.arange(12 * 3, dtype=float).reshape(12, 3)  # (L, H)
    fig = ap.distance_figure(d)
    points = fig.data[0]
    assert points.marker.colorscale is None and points.marker.colorbar.title.text is None, "no continuous bar"
    colors = np.array(points.marker.color).reshape(12, 3)
    assert (colors == colors[0]).all() and len(set(colors[0])) == 3, "one colour per head, the same in every layer"
    np.testing.assert_array_equal(np.array(points.y), d.ravel())  # the click and the tests read trace 0
    legend = [t for t in fig.data[1:] if t.showlegend is not False]
    assert [t.name for t in legend] == ["head 1", "head 2", "head 3"]
    assert [t.marker.color for t in legend] == list(colors[0])
    assert len(set(ap.head_colors(12))) == 12 and len(set(ap.head_colors(16))) == 16  # ViT-B, ViT-L


def _yellow_columns(img: np.ndarray, y: int) -> np.ndarray:
    """x of the outline colour on row y."""
    return np.flatnonzero((img[y] == render.HIGHLIGHT_COLOR).all(-1))


@pytest.mark.parametrize("name", list(GEOMS))
def test_the_grid_outlines_one_cell_for_a_head_and_the_whole_layer_for_a_fusion(name):
    g = GEOMS[name]
    a = stand_in_analysis(g, random_attention(g))
    t = layout.grid_tile(g)
    step = t + layout.GRID_SEP
    layer = 2
    y_mid = layout.GRID_TOP + (layer - 1) * step + t // 2  # a row through the layer's cells
    one = ap.attention_view(StandInModel(g), a, ra.AttnParams(layer=layer, head=2, show=vocab.ONE_HEAD)).grid
    xs = _yellow_columns(one, y_mid)
    assert xs.min() >= layout.GRID_LEFT + step - 2 and xs.max() <= layout.GRID_LEFT + step + t + 1, "head 2's cell"
    fused = ap.attention_view(StandInModel(g), a, ra.AttnParams(layer=layer, head=1, show="mean")).grid
    xs = _yellow_columns(fused, y_mid)
    assert xs.min() <= layout.GRID_LEFT and xs.max() >= layout.GRID_LEFT + (g.num_heads - 1) * step + t - 1, \
        "every head of the layer: the mean is no one cell"


def test_tile_tops_are_each_tiles_p99_outside_the_excluded_patches_or_half_its_max():
    rng = np.random.default_rng(0)
    maps = rng.random((2, 3, 7, 7)).astype(np.float32)
    maps[1, 2] = 0.01
    maps[1, 2, 3, 3] = 1.0  # a lone peak
    exclude = np.zeros((2, 7, 7), bool)
    exclude[0, 0, 0] = True
    maps[0, :, 0, 0] = 50.0  # an excluded patch never sets a top
    tops = layout.tile_tops(maps, exclude)
    for l in range(2):
        for h in range(3):
            kept = maps[l, h][~exclude[l]]
            want = max(np.percentile(kept, layout.TILE_PERCENTILE), kept.max() / 2)
            assert tops[l, h] == pytest.approx(want, rel=1e-6), (l, h)


def test_the_per_tile_bar_gives_the_outlined_cells_top_a_number():
    g = GEOMS["g7"]
    att = random_attention(g)
    att[1, 0] *= 0.01  # layer 2, head 1: a much lower top than head 2
    att[1, 0, :, 0] += 1 - att[1, 0].sum(-1)  # rows still sum to 1 (the rest on [CLS])
    a = stand_in_analysis(g, att)
    grids = [ap.attention_view(StandInModel(g), a, ra.AttnParams(layer=2, head=h, show=vocab.ONE_HEAD)).grid
             for h in (1, 2)]
    assert grids[0].shape == grids[1].shape, "the picture keeps its width while the cell changes"
    right = grids[0].shape[1] - layout.GRID_LEFT - g.num_heads * (layout.grid_tile(g) + layout.GRID_SEP)
    bar0, bar1 = grids[0][:, -right:], grids[1][:, -right:]
    assert (bar0 != bar1).any(), "the bar names the outlined cell's top"
    maps = ra.grid_maps(a, ra.AttnParams(layer=2)).numpy()
    tops = layout.tile_tops(maps, None, ra.range_floor(g))
    assert tops[1, 0] < tops[1, 1] / 10  # the two numbers differ, as constructed


def test_the_artifact_caption_does_not_say_every_artifact_is_in_the_top_colour():
    arts = np.zeros((14, 14), bool)
    arts[0, 0] = True
    text = ap.artifact_note(arts, ra.AttnParams(), "through layer", 12)
    assert "show in the top colour" not in text and "clipped to the top colour" in text
    assert "low-information" in text and "only receives much attention is not one" in text


def test_the_artifact_caption_says_what_the_artifacts_hold_of_this_map():
    """chelsea on the trained ViT-Ti: the four corners hold 0.571 of layer 12's raw [CLS] map, but only
    0.029 of its rollout (1.4x their 4-of-196 share), where "soak up attention" went unqualified.
    Constructed maps: 4 corners of a 14x14 grid."""
    arts = np.zeros((14, 14), bool)
    arts[[0, 0, -1, -1], [0, -1, 0, -1]] = True
    flat = np.full((14, 14), 1.0, np.float32)
    flat[arts] = 1.5
    flat[5, 5] = 2.0  # the max elsewhere; 6 / (191 + 2 + 6) of the total: 1.48x the even 4/196
    text = ap.artifact_note(arts, ra.AttnParams(), "through layer", 12, flat)
    assert "On this map they do not stand out: they hold **3.0%** of its total over the patches, 1.5× what 4 " \
           "of 196 patches hold" in text
    peaked = np.full((14, 14), 1.0, np.float32)
    peaked[arts] = 64.0  # 256 / 448 of the total: 28x the even share
    text = ap.artifact_note(arts, ra.AttnParams(), "in layer", 12, peaked)
    assert "On this map they hold **57.1%** of its total" in text and "28.0× what 4 of 196" in text
    assert "stand out" not in text
    # astronaut's rollout on the trained ViT-Ti: 1.6x their share in all, but the map's max at corner (0, 0):
    # "they do not stand out" stood beside the table's "max 0.0072 at (row 0, col 0)".
    top = flat.copy()
    top[0, 0] = 2.5  # 7 / 200: 1.7x even, the max
    text = ap.artifact_note(arts, ra.AttnParams(), "through layer", 12, top)
    assert "do not stand out in total" in text and "largest value, at (row 0, col 0), is one of them" in text, text
    # A signed map (a class map with negatives) gets no share: a share of a signed sum means nothing.
    signed = peaked - 2.0
    assert "On this map" not in ap.artifact_note(arts, ra.AttnParams(), "through layer", 12, signed)


def test_a_map_before_the_artifact_layers_names_the_corners_when_they_stand_out():
    """Layer 8 of the trained ViT-Ti reads the tokens entering block 8 (no artifact token yet), but [CLS]
    already gave the corners 25 % of its map there, the max at a corner, and nothing named them.
    Constructed: 3 layers, the corners artifact tokens from layer 3 on; maps of layer 2."""
    masks = np.zeros((3, 14, 14), bool)
    masks[2, [0, 0, -1, -1], [0, -1, 0, -1]] = True
    peaked = np.full((14, 14), 1.0, np.float32)
    peaked[0, 0], peaked[0, -1], peaked[-1, 0], peaked[-1, -1] = 16.0, 8.0, 8.0, 8.0  # 40 / 232: 8.4x even
    text = ap.early_artifact_note(peaked, masks, 2)
    assert "the four corners are artifact tokens from layer 3 on" in text, text
    assert "hold **17.2%** of its total over the patches, 8.4× what 4 of 196 patches hold when it is spread " \
           "evenly (40 of 232)" in text, text
    assert "the max, at (row 0, col 0), is one" in text, text
    flat = np.full((14, 14), 1.0, np.float32)
    flat[masks[2]] = 1.5  # 1.5x even: they do not stand out, nothing to say
    assert ap.early_artifact_note(flat, masks, 2) == ""
    assert ap.early_artifact_note(peaked, masks, 3) == "", "no later layer: layer 3's own note names them"
    assert ap.early_artifact_note(peaked - 2.0, masks, 2) == "", "a signed map has no share"


def test_a_share_of_a_map_nearly_zero_everywhere_is_not_called_drawing_attention():
    """Layer 1 head 3 of the trained ViT-Ti on coffee.jpg: the patches get 1.3e-05 in all ("Nearly zero
    everywhere"), and the corners' 6.4 % of that, 3.1x their even share, was called "already drawing attention".
    A share of a near-zero total draws nothing: no note while each of them lies below the colours' floor (1 % of
    1/N); the same map scaled up to attention the colours show gets it. Constructed: the corners 3x even."""
    masks = np.zeros((3, 14, 14), bool)
    masks[2, [0, 0, -1, -1], [0, -1, 0, -1]] = True
    floor = ra.NEAR_ZERO / 197  # ra.range_floor of a 14×14 grid with [CLS]: 1 % of 1/N
    shape = np.full((14, 14), 1.0, np.float32)
    shape[masks[2]] = 3.0  # 12 / 204: 3.0x their even share
    tiny = shape * (floor / 10)  # every patch below the floor, the corners' max 0.3 of it
    assert ap.early_artifact_note(tiny, masks, 2, floor) == ""
    seen = shape * floor  # the corners at 3x the floor, in the colours
    text = ap.early_artifact_note(seen, masks, 2, floor)
    assert "already drawing attention" in text and "hold **5.9%**" in text, text


def test_nearly_uniform_is_said_of_flat_maps_only_read_as_the_colours_are():
    """The helper's catches on the trained ViT-Ti: a column map far below 1/N everywhere but 34x
    brighter at one patch was called "nearly uniform" (its spread was measured against 1/N), and a flat
    map beside four artifact corners was not (their values set the spread, though the colours leave
    them out). Constructed maps with known answers."""
    g = GEOMS["g14"]
    u = 1 / g.seq_len
    column = np.full(g.grid, 6e-5, np.float32)
    column[9, 9] = 0.002  # 0.4 of 1/N at most, 34x its floor
    assert "nearly uniform" not in ap.scale_note(column, 0, 0.002, "0 to max", g)
    flat = np.full(g.grid, 0.3 * u, np.float32)
    flat[5, 5] = 0.33 * u  # within 10 % of the level
    corners = np.zeros(g.grid, bool)
    corners[[0, 0, -1, -1], [0, -1, 0, -1]] = True
    flat[corners] = 0.2
    note = ap.scale_note(flat, 0, 0.33 * u, "0 to max", g, exclude=corners)
    assert "nearly uniform" in note and "(the artifact tokens left out)" in note and "10% of their mean" in note
    assert "nearly uniform" not in ap.scale_note(flat, 0, 0.2, "0 to max", g)  # the corners in the range: not flat
    faint = np.full(g.grid, 1e-7, np.float32)
    faint[corners] = 0.2
    note = ap.scale_note(faint, 0, 1e-7, "0 to max", g, exclude=corners)
    assert "Nearly zero everywhere" in note and "the artifact tokens" in note.split("the rest goes to")[1]


def test_a_near_zero_maps_bound_is_rounded_up_and_its_table_tells_max_from_min():
    """Layer 1 head 3 of the trained ViT-Ti on chelsea: [CLS] keeps 1.0000 for itself, its patches' max is
    1.1229e-07, and the note said "every patch gets less than 1.1e-07" (the max rounded to nearest, so DOWN:
    false), while the table gave max and min both as "0.0000". Constructed: the same numbers."""
    g = GEOMS["g14"]
    att = torch.zeros(g.num_layers, g.num_heads, g.seq_len, g.seq_len)
    patches = torch.linspace(3.4e-10, 1.1229e-07, g.num_patches)  # min 3.4e-10, max 1.1229e-07
    att[..., 0, 1:] = patches
    att[..., 0, 0] = 1 - patches.sum()
    att[..., 1:, 0] = 1.0  # the patch rows: all on [CLS] (not read by a [CLS]-row map)
    p = ra.AttnParams(layer=1, head=3, show=vocab.ONE_HEAD, artifacts_in_range=True)
    readout = ap.main_panel(StandInModel(g), stand_in_analysis(g, att), p, with_image=False).readout
    said = re.search(r"every patch gets at most ([0-9.e+-]+)", readout)
    assert said and float(said.group(1)) >= 1.1229e-07, readout  # a bound: never below the max
    assert float(said.group(1)) <= 1.2e-07, "rounded up to 2 figures, not further"
    assert "| max | 1.12e-07 at (row 13, col 13) |" in readout, readout
    assert "| min | 3.40e-10 at (row 0, col 0) |" in readout, readout
    assert "| [CLS]→[CLS] | 1.0000 |" in readout, "numbers from 1e-3 up keep their 4 decimals"


@pytest.mark.parametrize("x, up, want", [(1.1229e-07, True, "1.2e-07"), (1.1229e-07, False, "1.1e-07"),
                                         (0.0012, True, "0.0012"), (0.0099901, True, "0.01"),
                                         (0.25, False, "0.25"), (0.0, True, "0")])
def test_bound_rounds_away_from_what_it_bounds(x, up, want):
    assert ap.bound(x, up=up) == want


@pytest.mark.parametrize("name", ["MAIN_TEXT", "GRID_TEXT", "ROLLOUT_TEXT", "DISTANCE_TEXT"])
def test_the_help_texts_place_nothing_beside_the_map(name):
    """MAIN_TEXT said "the numbers beside the map", but at 390 px the readout table is below the map: a
    help text names where a thing is only in words that hold at every width (the page stacks columns)."""
    text = " ".join(getattr(ap, name).split()).lower()
    assert not [w for w in ("beside the", "right of the", "left of the", "next to the") if w in text], text


def test_the_grid_text_says_a_few_bright_patches_leave_the_rest_of_a_tile_dark():
    """GRID_TEXT said each tile is scaled "so every head's pattern shows"; on the trained ViT-Ti at layer 8
    (chelsea) the corners set each tile's top and every other patch sat at 2-8 % of it: tiles black but for
    the corners. Constructed: four patches at 10x the rest, none of them artifact tokens; the picture's own
    rule (tile_tops) puts the rest at a tenth of the top, and the text says so instead of promising a pattern."""
    g = GEOMS["g14"]
    tile = np.full(g.grid, 0.004, np.float32)
    tile[[0, 0, -1, -1], [0, -1, 0, -1]] = 0.04
    top = layout.tile_tops(tile[None, None])[0, 0]
    assert tile[5, 5] / top <= 0.2, "the rest is dark under the tile's own top"
    text = " ".join(ap.GRID_TEXT.split())
    assert "every head's pattern shows" not in text
    assert "where a few patches get far more than the rest, they set the tile's top and the rest of it is dark" \
        in text, text


def test_a_layers_tile_tops_are_written_apart_where_they_differ():
    """The grid's bar under fused heads wrote "L12: 0.0058-0.0058" for tops like 0.00576 and 0.00584 (a reviewer, the
    trained ViT-Ti on a camera frame): two significant digits made a range look like one value."""
    from vizvit.views.layout import _span

    assert _span(np.array([0.00576, 0.0058, 0.00584])) == "0.00576-0.00584"
    assert _span(np.array([0.0031, 0.052])) == "0.0031-0.052"  # apart at 2 digits: as before
    assert _span(np.array([0.25, 0.25])) == "0.25"  # one value: said once


@pytest.mark.parametrize("lo, hi, where", [(0.0, 0.000552, "above"), (0.006, 0.01, "below"), (0.0, 0.02, None)])
def test_the_scale_note_says_where_1_over_n_is_when_the_bar_has_no_line_for_it(lo, hi, where):
    """A flat grey photo (trained ViT-Ti): its [CLS] map runs 0 … 0.000552, 1/N = 1/197 = 0.00508 lies 9x
    above it, and the note said "the blue line on the bar is the uniform level", a line the bar does not
    draw. Constructed ranges: 1/N above, below and inside."""
    g = GEOMS["g14"]
    assert g.seq_len == 197
    values = np.linspace(lo, hi, g.grid[0] * g.grid[1], dtype=np.float32).reshape(g.grid)
    note = ap.scale_note(values, lo, hi, "0 to max", g)
    if where is None:
        assert "the blue line on the bar is the uniform level 1/N = 1/197 = 0.00508." in note, note
    else:
        assert "blue line on the bar is" not in note, note
        assert f"1/N = 1/197 = 0.00508 is {where} this map's whole range" in note, note
        assert f"*1/N {where}*" in note  # the words on the bar


def test_the_grid_text_says_a_nearly_zero_tile_is_held_at_the_floor():
    """The trained ViT-Ti's layer 1 head 3 tile is black ([CLS]→[CLS] 1.0000, each patch ~1e-07: its top raised
    to range_floor) and GRID_TEXT only said "0 to its own 99th percentile, or half its max". Constructed: a tile of
    1e-07 everywhere has its top at the floor, 1 % of 1/N, and the text says that floor."""
    g = GEOMS["g14"]
    floor = 0.01 / g.seq_len  # NEAR_ZERO of the uniform level 1/N, written out
    tile = np.full(g.grid, 1e-7, np.float32)
    assert layout.tile_tops(tile[None, None], floor=floor)[0, 0] == pytest.approx(floor)
    text = " ".join(ap.GRID_TEXT.split())
    assert "A top is never below **1% of the uniform level 1/N**" in text and "Nearly zero everywhere" in text, text
