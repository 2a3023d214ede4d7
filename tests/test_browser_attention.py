"""The Attention tab in a real browser: open it, click a cell of the layers × heads grid,
see the main map change; click a patch; switch to rolled out; ask for relevance."""

from __future__ import annotations

import pytest

from appserver import running
from browser import click_pixel, image_src, page_at, set_slider, shot, upload_and_open, wait_image
from conftest import EXAMPLES
from vizvit.views import attention as ap
from vizvit import render


@pytest.fixture(scope="module")
def url(tiny16):
    with running(tiny16) as u:
        yield u


def test_attention_tab_grid_click_changes_the_main_map(url, tiny16):
    with page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Attention")
        main = wait_image(page, "attn-main")
        wait_image(page, "attn-grid")
        wait_image(page, "attn-strip")
        page.wait_for_selector("#attn-distance .js-plotly-plot")
        assert "Layer 2 · mean of 2 heads" in page.inner_text("#attn-readout")
        shot(page, "attention_tab")

        # Moving the head slider while the heads are fused shows that one head.
        set_slider(page, "attn-head", 2)
        page.wait_for_function("() => document.querySelector('#attn-readout').innerText.includes('Layer 2 · head 2 ')")
        assert page.locator("#attn-show input[value='one head']").is_checked()
        main = wait_image(page, "attn-main", main)

        # tiny16: 2 layers × 2 heads. Click the middle of cell (layer 1, head 2).
        grid = image_src(page, "attn-grid")
        t = ap.grid_tile(tiny16.geometry)
        click_pixel(page, "attn-grid", ap.GRID_LEFT + t + ap.GRID_SEP + t / 2, ap.GRID_TOP + t / 2)
        main = wait_image(page, "attn-main", main)
        page.wait_for_function("() => document.querySelector('#attn-readout').innerText.includes('Layer 1 · head 2')")
        assert wait_image(page, "attn-grid", grid) != grid  # the yellow outline moved
        shot(page, "attention_grid_clicked")

        # A patch of the main map becomes the query: (row 2, col 5) of the 14×14 grid.
        px = tiny16.geometry.patch_size * render.display_scale(tiny16.geometry)
        click_pixel(page, "attn-main", 5.5 * px, 2.5 * px)
        main = wait_image(page, "attn-main", main)
        page.wait_for_function("() => document.querySelector('#attn-readout').innerText.includes('patch (row 2, col 5)')")
        page.locator("#attn-mode").get_by_text("rolled out").click()
        main = wait_image(page, "attn-main", main)
        page.wait_for_function("() => document.querySelector('#attn-readout').innerText.includes('per-head rollout')")
        shot(page, "attention_query_rolled_out", full_page=False)

        page.get_by_role("button", name="Compute class relevance").click()
        rel = wait_image(page, "attn-relevance")
        first = page.inner_text("#attn-relevance-text")
        # Another class in the list: its map and text come at once, never the old class's.
        page.locator("#attn-class input").click()
        page.get_by_role("option").nth(1).click()
        page.wait_for_function("([old]) => document.querySelector('#attn-relevance-text').innerText !== old",
                               arg=[first])
        wait_image(page, "attn-relevance", rel)
        chosen = page.locator("#attn-class input").input_value().split(" (")[0]
        assert f"Relevance for {chosen}" in page.inner_text("#attn-relevance-text")
        page.locator("#attn-relevance").scroll_into_view_if_needed()
        shot(page, "attention_relevance", full_page=False)

        # A click on a dot of the distance chart opens that head: points are in (layer, head)
        # order, so point 2 of 2 layers × 2 heads is (layer 2, head 1).
        def click_dot(k: int) -> None:
            page.locator("#attn-distance").scroll_into_view_if_needed()
            # The page script has attached its click listener to this very chart.
            page.wait_for_function("""() => { const gd = document.querySelector('#attn-distance .js-plotly-plot');
                                              return gd && gd._ev && gd.__vizvitEv === gd._ev; }""")
            box = page.locator("#attn-distance .scatterlayer .point").nth(k).bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.down()
            page.mouse.up()

        def shows(layer: int, head: int) -> None:
            page.wait_for_function(
                f"() => document.querySelector('#attn-readout').innerText.includes('Layer {layer} · head {head} ')")
            page.wait_for_function(f"""() => document.querySelector('#attn-layer input[type=number]').value === '{layer}'
                && document.querySelector('#attn-head input[type=number]').value === '{head}'""")

        click_dot(2)
        shows(2, 1)
        # Elsewhere (a grid cell), then the same dot again: it must open (layer 2, head 1) again.
        click_pixel(page, "attn-grid", ap.GRID_LEFT + t + ap.GRID_SEP + t / 2, ap.GRID_TOP + t / 2)
        shows(1, 2)
        click_dot(2)
        shows(2, 1)


def test_one_click_downloads_the_tabs_charts_as_html(url, tmp_path):
    with page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Attention")
        page.wait_for_selector("#attn-distance .js-plotly-plot")
        with page.expect_download(timeout=60_000) as d:
            page.locator("#charts-btn-attention").click()
        path = tmp_path / d.value.suggested_filename
        d.value.save_as(path)
        html = path.read_text()
        assert path.suffix == ".html" and "Mean attention distance" in html and "plotly" in html.lower()
        # A second click downloads a new file, not the first one again.
        with page.expect_download(timeout=60_000) as d2:
            page.locator("#charts-btn-attention").click()
        assert d2.value.suggested_filename != d.value.suggested_filename


def test_the_peers_conventions_are_options_on_the_page(url):
    """Rollout discard over the whole matrix (vit-explain) and attention distance without
    renormalisation (probing-vits): each changes what is drawn, and the page names it."""
    with page_at(url, height=1500) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Attention")
        main = wait_image(page, "attn-main")
        page.wait_for_selector("#attn-distance .js-plotly-plot")
        page.locator("#attn-mode input[value='rolled out']").check()
        main = wait_image(page, "attn-main", main)
        set_slider(page, "attn-discard", 0.5)
        main = wait_image(page, "attn-main", main)
        assert "per-row discard 0.50" in page.inner_text("#attn-readout")
        page.locator("#attn-discard-mode input[value='global (vit-explain)']").check()
        wait_image(page, "attn-main", main)
        page.wait_for_selector("#attn-readout:has-text('global (vit-explain) discard 0.50')")
        page.locator("#attn-distance-norm input[value='raw (probing-vits)']").check()
        page.wait_for_selector("#attn-distance:has-text('probing-vits')")
