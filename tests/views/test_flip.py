"""Flipbook keys and marks (vizvit/views/flip.py) against constructed cases."""

from __future__ import annotations

import numpy as np
import pytest

from vizvit.views import flip, positions


@pytest.mark.parametrize("value, key", [(3, "3"), (3.0, "3"), (-2, "-2"), (0.05, "0.05"), (True, "true"),
                                        (False, "false"), ("edge", "edge"), (np.int64(7), "7"), (np.float32(2.0), "2")])
def test_a_value_is_keyed_as_the_page_reads_it_from_the_dom(value, key):
    # A range input's value is "3" for 3 (String(Number("3.0")) in the page), a radio's its text.
    assert flip.key_value(value) == key


def test_a_page_key_joins_the_controls_in_order():
    assert flip.page_key(1, -2, "edge") == "1|-2|edge"


def _moved(m: flip.Marks, rc: tuple[int, int]) -> np.ndarray:
    """What the page draws (flipbook.js drawMark): the mark's opaque pixels over the base at the
    cell's start + offset, clipped to the picture. Written out plainly here."""
    out = m.base.copy()
    h, w = out.shape[:2]
    x0, y0 = rc[1] * m.step[0] + m.offset[0], rc[0] * m.step[1] + m.offset[1]
    for y in range(m.mark.shape[0]):
        for x in range(m.mark.shape[1]):
            if m.mark[y, x, 3] and 0 <= y0 + y < h and 0 <= x0 + x < w:
                out[y0 + y, x0 + x] = m.mark[y, x, :3]
    return out


@pytest.mark.parametrize("outline", [positions.tile_outline((14, 14), 3), positions.tile_outline((4, 6), 5),
                                     positions.TileOutline((54, 54), (3, 4), (255, 215, 0), 2)],
                         ids=["vit-14x14", "odd-thick", "bias-gold"])
def test_a_mark_moved_to_any_cell_is_the_servers_outline_there(outline):
    rows, cols = outline.cells
    sx, sy = outline.step
    rng = np.random.default_rng(0)
    base = rng.integers(0, 256, (rows * sy + 5, cols * sx + 9, 3), np.uint8)  # a bar's width beyond the cells
    m = outline.marks("look", base, (0, 0))
    assert m.step == outline.step and m.cells == outline.cells
    for rc in [(0, 0), (rows - 1, cols - 1), (0, cols - 1), (rows // 2, 1)]:
        assert np.array_equal(_moved(m, rc), outline.on(base, rc)), rc
