"""Pictures: enlargement, colour maps, overlays, grid lines, mosaics and the token strip,
against plain numpy references and constructed inputs."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vizvit.model.models import Geometry
from vizvit.model.patches import patch_box
from vizvit.pictures import render


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
    bar = render.colorbar(401, "gray", vmin=0.0, vmax=0.02, width=10)
    assert bar.shape[0] == 401 and bar.shape[1] > 10 + render.text_size("0.015")[0]  # room for the labels
    assert bar[0, :10].tolist() == [[255] * 3] * 10 and bar[-1, :10].tolist() == [[0] * 3] * 10
    assert abs(int(bar[200, 0, 0]) - 128) <= 1
    # Default ticks: five, evenly spaced, a black tick mark right of the bar at rows 0, 100, ..., 400.
    marks = [y for y in range(401) if bar[y, 10:14].max() == 0]
    assert marks == [0, 100, 200, 300, 400]
    # A short bar gets fewer ticks, never overlapping labels.
    short = render.colorbar(101, "gray", vmin=0.0, vmax=0.02, width=10)
    ys = [y for y in range(101) if short[y, 10:14].max() == 0]
    assert len(ys) >= 2 and min(b - a for a, b in zip(ys, ys[1:])) >= 1.5 * render.text_size("0")[1]
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
    out = render.overlay(view, m, alpha=1.0, cmap="gray", vmin=0, vmax=1, g=g)
    hot = out[2 * 32:3 * 32, 5 * 32:6 * 32]
    assert (hot == 255).all() and out.sum() == hot.sum()


def test_grid_lines_sit_on_patch_borders():
    g = geom()
    out = render.draw_grid(np.zeros((448, 448, 3), np.uint8), g, color=(255, 0, 0))  # scale 2
    lit_rows = set(np.nonzero((out[:, 1] == (255, 0, 0)).all(-1))[0])
    assert lit_rows == {64 * k for k in range(1, 7)}


def test_the_default_grid_shows_on_white_and_on_black():
    """A PNG with alpha on white (and any white background, snow, a page): the 1-px white grid lines
    did not show, so the Patches tab showed no grid there."""
    g = geom()
    half = np.zeros((448, 448, 3), np.uint8)
    half[:, 224:] = 255  # left black, right white
    out = render.draw_grid(half, g)  # scale 2: lines at 64 k
    on_black, on_white = out[64, 10], out[64, 300]
    assert (on_black == 255).all(), "white over dark pixels, as before"
    lum = lambda c: c[0] * 0.299 + c[1] * 0.587 + c[2] * 0.114  # noqa: E731
    assert lum(on_white) < 255 - 100, f"the line over white is {on_white}: it must stand out"
    assert (out[65, 300] == 255).all() and (out[65, 10] == 0).all(), "only the line's own pixels change"


def test_mosaic_places_tile_k_at_row_major_position(rng):
    tiles = rng.integers(0, 256, (5, 4, 6, 3), dtype=np.uint8)
    out = render.mosaic(tiles, rows=2, cols=3, sep=2)
    assert out.shape == (2 * 4 + 2, 3 * 6 + 2 * 2, 3)
    for k in range(5):
        r, c = divmod(k, 3)
        assert np.array_equal(out[r * 6:r * 6 + 4, c * 8:c * 8 + 6], tiles[k])
    assert (out[4:6] == 255).all()  # separator row


def test_sequence_strip_wraps_at_the_grid_width_with_cls_first_and_outlines_the_clicked_patch():
    g = geom()
    view = np.zeros((224, 224, 3), np.uint8)
    for i in range(49):  # patch i is filled with grey level i
        r, c = divmod(i, 7)
        view[r * 32:(r + 1) * 32, c * 32:(c + 1) * 32] = i
    strip = render.sequence_strip(view, g, tile=20)
    step = 20 + render.STRIP_SEP
    margin = strip.shape[1] - 7 * step + render.STRIP_SEP  # 7 tokens a row: the grid's width
    assert strip.shape[0] == 8 * step - render.STRIP_SEP  # [CLS] row + 7 grid rows
    assert strip[10, margin + 10].tolist() == list(render.CLS_COLOR)
    for k in range(49):  # patch k (token k + 1) sits at strip row 1 + k // 7, column k % 7
        r, c = divmod(k, 7)
        assert (strip[(1 + r) * step + 10, margin + c * step + 10] == k).all(), k
    lit = render.sequence_strip(view, g, tile=20, highlight=(2, 3))
    y0, x0 = 3 * step, margin + 3 * step
    assert lit[y0, x0 + 10].tolist() == [255, 230, 0] and not np.array_equal(lit, strip)
    dropped = render.sequence_strip(view, g, tile=20, kept=np.array([0, 1, 3]))
    assert dropped.shape[0] == 2 * step - render.STRIP_SEP
    m2 = dropped.shape[1] - 2 * step + render.STRIP_SEP
    assert (dropped[step + 10, m2 + 10] == 0).all() and (dropped[step + 10, m2 + step + 10] == 2).all()


def _ink_height(px: float) -> int:
    img = np.zeros((120, 200, 3), np.uint8)
    render.put_text(img, "H", (10, 100), px, (255, 255, 255))
    rows = np.nonzero(img[..., 0].max(1) > 128)[0]
    return int(rows.max() - rows.min() + 1)


@pytest.mark.parametrize("px", [render.MIN_TEXT_PX, render.TEXT_PX, 40])
def test_text_in_pictures_has_the_cap_height_of_its_font_size(px):
    """A label's ink is CAP_RATIO of its font size (as in a browser's sans-serif), so the font
    size it is drawn at is the size a visitor reads, times the picture's display scale."""
    assert abs(_ink_height(px) - render.CAP_RATIO * px) <= 2


def test_no_label_is_below_the_size_a_lecture_hall_reads():
    """put_text refuses small text, every label goes through it, and the page's projector mode
    shows pictures at a scale that keeps the smallest label at ≥ READABLE_PX (about 24 px nominal)."""
    with pytest.raises(ValueError, match="lecture hall"):
        render.put_text(np.zeros((40, 40, 3), np.uint8), "1", (2, 30), render.MIN_TEXT_PX - 1)
    assert render.MIN_TEXT_PX * render.PROJECTOR_MIN_SCALE >= render.READABLE_PX
    assert render.CAP_RATIO * render.MIN_TEXT_PX * render.PROJECTOR_MIN_SCALE >= 15  # cap height on screen
    import pathlib
    import re

    src = pathlib.Path(render.__file__).parent
    for f in [*src.glob("*.py"), *src.glob("views/*.py")]:
        text = f.read_text()
        if f.name == "render.py":
            text = text[text.index("def put_text"):]
            text = text[text.index("\ndef ", 1):]  # everything after put_text itself
        assert not re.search(r"cv2\.putText", text), f"{f.name} draws text without render.put_text"


def test_colorbar_marks_a_level_and_says_when_it_is_outside_the_range():
    bar = render.colorbar(400, "gray", 0.0, 0.01, width=18, marks={"1/N": 0.005})
    blue = [y for y in range(400) if tuple(bar[y, 0]) == render.MARK_COLOR]
    assert blue and abs(np.mean(blue) - 200) <= 2, "the mark sits at its value"
    above = render.colorbar(400, "gray", 0.0, 0.004, width=18, marks={"1/N": 0.005})
    assert above.shape[1] > bar.shape[1]  # room for "1/N above"


@pytest.mark.parametrize("lo, hi, level, end", [(0.0, 0.000552, 1 / 197, "top"), (0.006, 0.01, 1 / 197, "bottom")])
def test_a_level_outside_the_range_keeps_the_bars_end_value_and_draws_no_line(lo, hi, level, end):
    """A flat grey photo's [CLS] map runs 0 … 0.000552 and 1/N = 0.00508 lies 9x above it: the mark,
    pinned to the top with its label there, pushed the top tick out, so 0.000552 stood nowhere on the
    bar and a blue line at the top read as 1/N's level. Now: the end's tick and number stay, the label
    "1/N above" (or "below") sits one line inside it, and no blue line is drawn on the bar."""
    h = 672  # the Attention tab's map at 3x
    cap = render.text_size("0")[1]
    line = int(cap * render.LINE_SPACING)
    labels = render.colorbar_labels(h, lo, hi, marks={"1/N": level})
    ticks = {text: (y, b) for y, b, text, m in labels if not m}
    end_row, end_value = (0, hi) if end == "top" else (h - 1, lo)
    assert ticks[f"{end_value:.3g}"][0] == end_row, labels  # the end's number stays at the end
    (mark,) = [(y, b, text) for y, b, text, m in labels if m]
    assert mark[0] is None and mark[2] == "1/N " + ("above" if end == "top" else "below")
    base = sorted(b for _, b, _, _ in labels)
    assert all(b2 - b1 >= line for b1, b2 in zip(base, base[1:])), labels  # no two labels overlap
    bar = render.colorbar(h, "gray", lo, hi, width=18, marks={"1/N": level})
    assert not (bar[:, :18] == render.MARK_COLOR).all(-1).any()  # no line: 1/N has no row on this bar
    ink = (bar[:, 18 + render.LABEL_OFFSET:] < 128).any(-1).any(-1)  # black text rows
    top_number = ticks[f"{end_value:.3g}"][1]
    assert ink[top_number - cap:top_number].any()  # the end's number is written there


@pytest.mark.parametrize("t", [1, 2, 4, 5])
def test_outline_has_square_corners_and_edges_t_px_wide_centred_on_the_border(t):
    """The outline the page's script also draws (attention_map.js): each edge covers the border line
    and (t + 1) // 2 px on each side of it (t > 1), corners filled; the inside is untouched."""
    img = np.zeros((60, 60, 3), np.uint8)
    render.outline(img, (20, 10), (39, 29), (255, 230, 0), t)
    e = 0 if t == 1 else (t + 1) // 2
    want = np.zeros((60, 60), bool)
    want[10 - e:29 + e + 1, 20 - e:39 + e + 1] = True
    want[10 + e + 1:29 - e, 20 + e + 1:39 - e] = False
    assert ((img == (255, 230, 0)).all(-1) == want).all()
    # Where cv2.rectangle has rounded corners, ours are square; along the edges they agree.
    ref = np.zeros((60, 60), np.uint8)
    cv2.rectangle(ref, (20, 10), (39, 29), 255, t)
    assert (want[:, 30] == (ref[:, 30] > 0)).all() and (want[20, :] == (ref[20, :] > 0)).all()


def test_patch_numbers_never_run_together():
    """A walk-through: at 3× (a 48-px cell) "100101102…" ran together, every 3-digit number wider than its
    cell at the least readable size. Where the widest fits, every patch is numbered; where it does not,
    every other one in a checkerboard, so a number's left and right neighbours hold no ink of their own."""
    def ink(out, step, r, c):  # white text pixels in the middle half of cell (r, c)
        q = step // 4
        return int((out[r * step + q:(r + 1) * step - q, c * step + q:(c + 1) * step - q] > 200).any(-1).sum())

    g = geom((14, 14), 16)  # 196 patches: "195" is 49 px at 24 px, wider than a 48-px cell
    step = 48
    out = render.draw_grid(np.zeros((14 * step, 14 * step, 3), np.uint8), g, lines=False, indices=True)
    for r in range(14):
        for c in range(14):
            assert (ink(out, step, r, c) > 0) == ((r + c) % 2 == 0), (r, c)
    # each row's ink runs in separate pieces, one per number (they ran together as one)
    for r in range(14):
        cols = (out[r * step:(r + 1) * step] > 200).any(-1).any(0)
        pieces = int(np.count_nonzero(np.diff(cols.astype(int)) == 1) + cols[0])
        assert pieces >= 7, (r, pieces)
    # 49 patches at 64 px a cell: every number fits, every patch numbered
    small = render.draw_grid(np.zeros((7 * 64, 7 * 64, 3), np.uint8), geom(), lines=False, indices=True)
    assert all(ink(small, 64, r, c) > 0 for r in range(7) for c in range(7))


# SigLIP so400m-patch14-384: 384 = 27·14 + 6, so patch (r, c) is pixels 14c..14c+13 (patches.patch_box)
# and the last 6 px of each row and column are read by no patch.
SO400M = Geometry((384, 384), 14, (27, 27), 0, 1, 1, 8, summaries=("MAP head",), family="siglip")


def test_a_map_sits_on_patch_box_pixels_when_the_side_is_not_a_multiple_of_the_patch():
    g = SO400M
    m = np.zeros(g.grid, np.float32)
    m[0, 26] = 1.0
    x0, y0, x1, y1 = patch_box(0, 26, g)
    assert (x0, y0, x1, y1) == (364, 0, 378, 14)
    up = render.upsample_map(m, (384, 384), g=g)
    assert np.array_equal(np.argwhere(up == 1), [(y, x) for y in range(0, 14) for x in range(364, 378)])
    assert np.isnan(up[:, 378:]).all() and np.isnan(up[378:]).all() and not np.isnan(up[:378, :378]).any()
    # The overlay at alpha 1 in grey: the patch white, the unread strip grey (a NaN's colour), the rest black.
    out = render.overlay(np.zeros((384, 384, 3), np.uint8), m, alpha=1.0, cmap="gray", vmin=0, vmax=1, g=g)
    assert (out[0:14, 364:378] == 255).all() and (out[:, 378:] == 128).all() and (out[378:] == 128).all()
    assert out[:378, :378].sum() == 255 * 3 * 14 * 14
    # Enlarged 2×: every patch box doubled, the strip 12 px.
    big = render.upsample_map(m, (768, 768), g=g)
    assert np.array_equal(np.argwhere(big == 1)[[0, -1]], [(0, 728), (27, 755)])
    assert np.isnan(big[:, 756:]).all() and not np.isnan(big[:756, :756]).any()
    # Every patch on its box (a loop over patch_box, the click's geometry).
    idx = np.arange(g.num_patches, dtype=np.float32).reshape(g.grid)
    up = render.upsample_map(idx, (384, 384), g=g)
    for r, c in [(0, 0), (5, 13), (26, 0), (26, 26), (13, 25)]:
        x0, y0, x1, y1 = patch_box(r, c, g)
        assert (up[y0:y1, x0:x1] == r * 27 + c).all() and up[y0 - 1 if y0 else y1, x0] != r * 27 + c


def test_grid_lines_and_outlines_follow_the_patch_not_the_side_over_the_grid():
    g = SO400M
    for scale in (1, 2):
        out = render.draw_grid(np.zeros((384 * scale, 384 * scale, 3), np.uint8), g, color=(255, 0, 0))
        lit_rows = set(np.nonzero((out[:, 1] == (255, 0, 0)).all(-1))[0])
        # 14k (not 384k/27) up to the line closing the grid at 378: the strip beyond holds no line.
        assert lit_rows == {14 * scale * k for k in range(1, 28)}
        lit_cols = set(np.nonzero((out[1] == (255, 0, 0)).all(-1))[0])
        assert lit_cols == lit_rows
        assert not out[1:378 * scale, 378 * scale + 1:].any()  # the lines stop at the grid's edge
    # The clicked patch's outline, an artifact's outline and a painted patch: patch_box's pixels.
    hi = render.draw_grid(np.zeros((384, 384, 3), np.uint8), g, lines=False, highlight=(0, 26))
    ys, xs = np.nonzero(hi.any(-1))
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (364, 377, 0, 13)
    cells = np.zeros(g.grid, bool)
    cells[26, 0] = True
    ol = render.outline_patches(np.zeros((384, 384, 3), np.uint8), g, cells, (0, 255, 0), 1)
    ys, xs = np.nonzero(ol.any(-1))
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (0, 13, 364, 377)
    painted = render.paint_patches(np.zeros((384, 384, 3), np.uint8), cells, (0, 255, 0), g)
    assert np.array_equal(np.argwhere(painted.any(-1))[[0, -1]], [(364, 0), (377, 13)])
    assert painted.any(-1).sum() == 14 * 14


def test_patch_colours_sit_on_patch_boxes_and_the_unread_strip_is_grey():
    """tile_picture (the Embeddings tab's colours over the photo): patch (0, 26)'s colour on x 364-377."""
    tiles = np.zeros((27, 27, 3), np.uint8)
    tiles[0, 26] = (255, 0, 0)
    out = render.tile_picture(tiles, (384, 384), SO400M)
    red = np.argwhere((out == (255, 0, 0)).all(-1))
    assert (red[:, 1].min(), red[:, 1].max(), red[:, 0].min(), red[:, 0].max()) == (364, 377, 0, 13)
    assert len(red) == 14 * 14 and (out[:, 378:] == 128).all() and (out[378:] == 128).all()


def test_a_grid_line_takes_one_colour_along_each_patchs_side():
    """Pixel by pixel, the light pixels of a mid-tone patch (the cat's fur) turned single pixels of the white
    line dark grey: stray specks (a reviewer, chelsea on the trained ViT-Ti). The colour is decided for each
    patch's side by its mean luminance: a side whose pixels are mostly dark, with a few light ones, stays
    white, and a light side turns dark grey whole."""
    g = geom()
    img = np.full((448, 448, 3), 100, np.uint8)  # 7 patches of 64 px: lines at y, x = 64 k
    img[64, 40] = img[64, 41] = 250  # two light pixels under the line at y = 64, in the side x 0..63
    img[64, 128:192] = 230  # a whole light side, x 128..191 (the line x = 128 crosses it: the picture's colour)
    out = render.draw_grid(img, g)
    assert (out[64, :64] == 255).all(), "a mostly dark side stays white, its light pixels too"
    assert (out[64, 129:192] == render.GRID_ON_LIGHT).all(), "a light side turns dark grey whole"
    assert (out[64, 193:256] == 255).all()
