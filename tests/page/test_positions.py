"""A real browser opens the Positions tab, sees the grid of similarity maps and clicks a tile."""

from __future__ import annotations

from browser import click_image_at, page_at, shot, upload_and_open, wait_image
from tiny import EXAMPLES

from vizvit.views import positions as positions_panel


def test_positions_tab_shows_the_grid_and_a_click_enlarges_the_tile(url, tiny16):
    gh, gw = tiny16.geometry.grid
    cell = positions_panel.tile_cell((gh, gw))
    tile = gh * cell + positions_panel.SEP
    with page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Positions")
        old = wait_image(page, "pos-grid")
        wait_image(page, "pos-compare")
        # the other resolution follows the grid (its own event), by when the page has grown: its lazy
        # <img> loads once in view
        page.locator("#pos-res-grid").scroll_into_view_if_needed()
        wait_image(page, "pos-res-grid")
        page.locator("#pos-grid").scroll_into_view_if_needed()
        page.wait_for_selector("#pos-tile .js-plotly-plot", timeout=60_000)
        page.wait_for_selector("#pos-cls .js-plotly-plot", timeout=60_000)
        assert "contrast" in page.inner_text("#pos-text")
        shot(page, "positions_tab")
        # Click the middle of tile (row 2, col 5); the image also holds the colour bar on its right.
        w, h = page.evaluate("() => { const i = document.querySelector('#pos-grid img');"
                             " return [i.naturalWidth, i.naturalHeight]; }")
        click_image_at(page, "pos-grid", (5 * tile + tile / 2) / w, (2 * tile + tile / 2) / h)
        page.wait_for_function(
            "() => document.querySelector('#pos-tile').textContent.includes('Position (2, 5)')")
        wait_image(page, "pos-grid", old)  # the clicked tile is outlined
        page.locator("#pos-tile").scroll_into_view_if_needed()
        shot(page, "positions_tab_clicked", full_page=False)
