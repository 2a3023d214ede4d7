"""A real browser uses the real page: upload, look, click. Screenshots are artifacts."""

from __future__ import annotations

import pytest

from appserver import running
from browser import click_image_at, page_at, shot, upload, wait_image
from conftest import EXAMPLES


@pytest.fixture(scope="module")
def url(tiny16):
    with running(tiny16) as u:
        yield u


def test_upload_shows_the_patch_grid_and_a_click_names_the_patch(url):
    with page_at(url) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        wait_image(page, "sequence-strip")
        page.wait_for_selector("#top5 .js-plotly-plot", timeout=60_000)
        shot(page, "patches_tab")
        # Patch (row 2, col 5) of the 14×14 grid: click the middle of that cell.
        click_image_at(page, "patch-grid", (5 + 0.5) / 14, (2 + 0.5) / 14)
        page.wait_for_function(
            "() => document.querySelector('#patch-info').innerText.includes('row 2, col 5')")
        assert "token index 34" in page.inner_text("#patch-info")
        shot(page, "patches_tab_clicked", full_page=False)


def test_invalid_upload_shows_an_error(url, tmp_path):
    bad = tmp_path / "notes.jpg"
    bad.write_text("not a photo at all")
    with page_at(url) as page:
        upload(page, str(bad))
        page.wait_for_selector("text=not an image we can read", timeout=60_000)
        shot(page, "invalid_upload", full_page=False)
