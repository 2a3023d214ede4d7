"""The Positions tab's view (vizvit/views/positions.py): the similarity grid, a clicked tile, other resolutions, the
[CLS] chart."""

from __future__ import annotations

import numpy as np
import pytest

from vizvit.errors import UserError
from vizvit.model import positional
from vizvit.pictures import render
from vizvit.session import PhotoKey, Workbench
from vizvit.views import positions as positions_panel


def test_panels_click_and_resolution(tiny, cat):
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    g = tiny.geometry
    gh, gw = g.grid
    p = positions_panel.positions_panel(wb.handle(key))
    mp = positions_panel.cached_model_positions(wb.handle(key))
    sep = positions_panel.SEP
    assert p.grid_img.shape[0] == gh * (gh * mp.cell + sep) - sep
    tile_h, tile_w = gh * mp.cell + sep, gw * mp.cell + sep
    hit = positions_panel.click_tile(wb.handle(key), 1 * tile_w + 2, (gh - 1) * tile_h + 2)  # tile (gh-1, 1)
    assert hit is not None
    img, fig = hit
    np.testing.assert_allclose(np.asarray(fig.data[0].z), mp.report.sim[(gh - 1) * gw + 1].reshape(gh, gw))
    assert fig.data[0].zmin == -1 and fig.data[0].zmax == 1
    assert not np.array_equal(img, mp.grid_img)  # the clicked tile is outlined
    assert positions_panel.click_tile(wb.handle(key), p.grid_img.shape[1] - 3, 3) is None
    assert "[CLS]" in p.text and f"{mp.report.contrasts['learned'].contrast:+.2f}" in p.text
    assert [row[0] for row in p.numbers] == ["learned", *positional.BASELINES]
    r = positions_panel.resolution_panel(wb.handle(key), 384)
    assert r.top5 is not None and "384" in r.text
    misses = wb.cache.misses
    positions_panel.resolution_panel(wb.handle(key), 384)
    positions_panel.positions_panel(wb.handle(key))
    assert wb.cache.misses == misses, "a second look must come from the cache"



def test_grid_cells_are_flat_blocks_with_no_smoothing_across_borders(rng):
    """Each position is a cell×cell block of ONE colour (nearest, no blend into its neighbours),
    cells are at least MIN_CELL px on a 14×14 grid, and a stride keeps whole tiles."""
    gh = gw = 14
    cell = positions_panel.tile_cell((gh, gw))
    assert cell >= positions_panel.MIN_CELL
    # A checkerboard per tile: the worst case for any smoothing (every neighbour differs).
    k, m = np.meshgrid(np.arange(gh), np.arange(gw), indexing="ij")
    board = np.where((k + m) % 2 == 0, 1.0, -1.0).reshape(-1)
    sim = np.tile(board, (gh * gw, 1)).astype(np.float32)
    sim[5] = rng.uniform(-1, 1, gh * gw)
    img = positions_panel.similarity_grid(sim, (gh, gw), cell)
    sep = positions_panel.SEP
    step = gh * cell + sep
    for r, c in [(0, 0), (0, 5), (13, 13), (7, 3)]:
        tile = img[r * step:r * step + gh * cell, c * step:c * step + gw * cell]
        blocks = tile.reshape(gh, cell, gw, cell, 3)
        assert (blocks == blocks[:, :1, :, :1]).all(), f"tile ({r}, {c}): a cell is not one flat colour"
    # the separators are the separator colour, not a blend of two tiles
    assert (img[gh * cell:gh * cell + sep, :gw * cell] == positions_panel.SEP_COLOR).all()
    # every 2nd tile of a 24×24 grid: 12×12 whole tiles, tile (1, 1) shown is position (2, 2)
    big = rng.uniform(-1, 1, (576, 576)).astype(np.float32)
    k2 = positions_panel.tile_stride((24, 24))
    assert k2 == 2
    c2 = positions_panel.tile_cell((24, 24), stride=k2)
    img2 = positions_panel.similarity_grid(big, (24, 24), c2, stride=k2)
    assert img2.shape[0] == 12 * (24 * c2 + sep) - sep
    lut = render.colorize(np.linspace(-1, 1, 256)[None], positions_panel.CMAP, -1, 1)[0]
    y0 = x0 = 24 * c2 + sep  # tile (1, 1) of the picture
    want = lut[int(round((big[2 * 24 + 2, 3 * 24 + 4] + 1) / 2 * 255))]  # its pixel (3, 4)
    assert (img2[y0 + 3 * c2, x0 + 4 * c2] == want).all()



def test_cls_chart_uses_its_own_symmetric_range():
    cls = np.array([[0.03, -0.061], [0.118, 0.0]], np.float32)
    fig = positions_panel.cls_figure(cls)
    assert fig.data[0].zmin == -0.12 and fig.data[0].zmax == 0.12
    assert "±0.12" in fig.layout.title.text



def test_tile_layout_puts_each_step_centre_on_its_own_tile(tiny, cat):
    """The keyboard's cells (tile_layout, page/web/a11y.js clicks a step's centre) against the grid
    image's own geometry: rows × cols tiles of gh·cell (gw·cell) px, SEP px apart."""
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(tiny)
    ph = wb.handle(PhotoKey(tiny.id, wb.add_photo(cat)))
    gh, gw = tiny.geometry.grid
    cell = positions_panel.cached_model_positions(ph).cell
    rows, cols, (sx, sy) = positions_panel.tile_layout(ph)
    assert (rows, cols, sx, sy) == (gh, gw, gw * cell + positions_panel.SEP, gh * cell + positions_panel.SEP)
    for r, c in ((0, 0), (rows - 1, cols - 1), (2, 5)):
        assert positions_panel.tile_at((c + 0.5) * sx, (r + 0.5) * sy, (gh, gw), cell) == (r, c)


def test_a_non_square_vit_shows_its_table_and_refuses_another_size(tiny_rect, cat):
    """A 5×7 table: the tab shows 5×7 tiles; the other-size panel says why it cannot (transformers
    resizes only a square table) instead of failing inside the forward."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny_rect)
    ph = wb.handle(PhotoKey(tiny_rect.id, wb.add_photo(cat)))
    page = positions_panel.show(ph, positions_panel.PositionsParams())
    assert "5×7" in page.text
    with pytest.raises(UserError, match="only a square position table"):
        positions_panel.resolution_panel(ph, 384)


def test_an_input_size_that_is_no_number_is_refused_with_a_sentence():
    """None passes Gradio's Dropdown (a caller's value): int(None) in from_controls was "Something went
    wrong" and a traceback in the log."""
    assert positions_panel.PositionsParams.from_controls({"size": 448}).size == 448
    for bad in (None, "big", [384], {"s": 1}):
        with pytest.raises(UserError, match="input size is a number of pixels"):
            positions_panel.PositionsParams.from_controls({"size": bad})


def test_a_contrast_is_written_as_the_difference_of_the_parts_written_beside_it():
    """"+0.85 … −0.08, a contrast of +0.92": the parts at 2 decimals summed to 0.93 (a reviewer, the trained
    ViT-Ti: 0.846, −0.078, 0.924). Each part at 3 decimals and the contrast their difference, as written."""
    from vizvit.model.positional import Contrast

    assert Contrast(0.8464, -0.0776).shown() == ("+0.846", "-0.078", "+0.924")
    # where the rounded difference and the difference of the rounded parts differ, the parts win
    assert Contrast(0.8464, -0.0774).shown() == ("+0.846", "-0.077", "+0.923")


def test_the_comparison_pictures_titles_write_each_contrast_as_the_table_and_text_do(monkeypatch):
    """Chelsea on the trained ViT-Ti: the titles said "+0.33 / +0.21 / +0.00" beside a table and a text
    saying +0.326 / +0.214 / +0.003. Constructed contrasts with those parts: one precision everywhere."""
    from vizvit.model.positional import Contrast, PositionReport

    p = 14 * 14
    eye = np.eye(p, dtype=np.float32)
    parts = {"learned": Contrast(0.8464, -0.0776), "1-D sinusoidal": Contrast(0.8121, 0.4862),
             "2-D sin-cos (MAE)": Contrast(0.9841, 0.7702), "random init": Contrast(0.0021, -0.0013)}
    r = PositionReport((14, 14), eye, None, {k: eye for k in positional.BASELINES}, parts)
    titles = []
    real = positions_panel._titled
    monkeypatch.setattr(positions_panel, "_titled", lambda img, text: titles.append(text) or real(img, text))
    positions_panel.compare_image(r)
    assert titles == ["learned (this model): contrast +0.924", "1-D sinusoidal: contrast +0.326",
                      "2-D sin-cos (MAE): contrast +0.214", "random init: contrast +0.003"], titles
    rows = positions_panel.contrast_rows(r)  # the table beside it
    assert [row[3] for row in rows] == ["+0.924", "+0.326", "+0.214", "+0.003"], rows
    # A 16×16 grid (patch 14 at 224 px) has rows of 3·16·10 + 20 = 500 px: every title fits whole.
    titles.clear()
    eye = np.eye(16 * 16, dtype=np.float32)
    img = positions_panel.compare_image(PositionReport((16, 16), eye, None, {k: eye for k in positional.BASELINES},
                                                       parts))
    assert titles[0] == "learned: contrast +0.924" and titles[1:] == ["1-D sinusoidal: contrast +0.326",
                                                                       "2-D sin-cos (MAE): contrast +0.214",
                                                                       "random init: contrast +0.003"], titles
    assert all(render.text_size(t)[0] + 2 <= 500 for t in titles) and img.shape[1] > 500
