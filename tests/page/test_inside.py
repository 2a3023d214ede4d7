"""The Inside tab in a real browser: the logit lens table, a head switched off by a click with the
top-5 showing a Δ, the attention tab showing the ablated model, and which heads matter."""

from __future__ import annotations

import re

import numpy as np
from appserver import photos_read_late, serving
from browser import UPLOAD_FIRST_SEEN, click_pixel, drop_photo, page_at, shot, upload_and_open, wait_image
from PIL import Image
from tiny import EXAMPLES

from vizvit.views import inside


def test_switch_a_head_off_and_the_top5_shows_a_change(url, tiny16):
    g = tiny16.geometry
    with page_at(url, height=1500) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Inside")
        page.wait_for_selector("#lens-table:has-text('0 (emb.)')")
        page.wait_for_selector("#lens-text:has-text('the same on every photo')")  # the text says why
        table = page.inner_text("#lens-table")
        assert f"\n{g.num_layers}\t" in table or str(g.num_layers) in table
        grid = wait_image(page, "ablate-grid")
        page.wait_for_selector("#ablate-top5 .js-plotly-plot")
        # no change written at the chart's edge (a signed percentage) while every head is on
        assert not re.search(r"[+\u2212-]<?\d+\.\d+ pp|(?<![\d.])0 pp", page.inner_text("#ablate-top5"))
        assert "All heads on" in page.inner_text("#ablate-text")
        # Click head 2 of layer 1 (the picture is shown at its own pixel size or scaled: use fractions).
        click_pixel(page, "ablate-grid", inside.LEFT + 1.5 * inside.CELL, inside.TOP + 0.5 * inside.CELL)
        page.wait_for_selector("#ablate-text:has-text('Switched off')")
        assert "1.2" in page.inner_text("#ablate-text")
        # Each bar's change from the intact model, as the chart's right-hand labels ("+0.3 pp").
        page.wait_for_function("() => /(^|\\n)[+−-]<?\\d+\\.\\d+ pp/"
                               ".test(document.querySelector('#ablate-top5').innerText)")
        assert page.locator("#ablate-heads input, #ablate-heads textarea").first.input_value() == "1.2"
        assert "heads off" in page.inner_text("#status")
        wait_image(page, "ablate-grid", grid)
        shot(page, "inside_ablation", full_page=False)
        # Which heads matter: 4 forwards for the tiny model, streamed into the grid.
        page.click("#importance-run")
        page.wait_for_selector("#importance-text:has-text('Done')")
        shot(page, "inside_importance")
        # Type a whole layer instead; then all heads on again.
        box = page.locator("#ablate-heads input, #ablate-heads textarea").first
        box.fill("2")
        box.press("Enter")
        page.wait_for_selector("#ablate-text:has-text('2.1,2.2')")
        page.click("#ablate-clear")
        page.wait_for_selector("#ablate-text:has-text('All heads on')")


def test_a_deep_link_opens_with_heads_off(url):
    with page_at(url + "?example=chelsea&tab=inside&ablate=2.2&ablate_mode=mean") as page:
        page.wait_for_selector("#ablate-text:has-text('Switched off (mean)')", timeout=60_000)
        assert "2.2" in page.inner_text("#ablate-text")
        assert page.locator("#ablate-mode input[value='mean']").is_checked()


def test_heads_typed_off_on_a_deep_link_before_its_photo_is_in_go_off_once_it_is(tiny16):
    """A walk-through: ?example=chelsea&tab=inside, heads typed and Enter pressed (or the mode chosen) while the
    example was still being read: "Upload a photo first." with the photo in its box, and the heads stayed on.
    Enter and the mode's choice now wait for the photo (web/run_waits.js) and apply once it is in. The server
    reads each photo 3 s late here (a loaded machine)."""
    with serving(tiny16) as (url, wb):
        photos_read_late(wb)
        with page_at(url + "?example=chelsea&tab=inside", wait_for="#ablate-heads",
                     init_script=UPLOAD_FIRST_SEEN) as page:
            box = page.locator("#ablate-heads input, #ablate-heads textarea").first
            box.fill("2.2")  # then corrected: the last Enter stands (a reviewer: the first one held was applied)
            box.press("Enter")
            box.fill("1.2")
            box.press("Enter")
            page.locator("#ablate-mode label:has-text('mean')").click()
            page.wait_for_selector(".vv-run-wait", timeout=10_000)
            assert "still being read" in page.inner_text(".vv-run-wait")
            assert page.evaluate("window.__seen") == [], "said 'Upload a photo first' with the photo on its way"
            page.wait_for_selector("#ablate-text:has-text('Switched off (mean)')", timeout=120_000)
            assert "1.2" in page.inner_text("#ablate-text") and "2.2" not in page.inner_text("#ablate-text")
            assert "heads off" in page.inner_text("#status")
            assert page.locator("#ablate-mode input[value='mean']").is_checked()
            assert page.locator(".vv-run-wait").count() == 0 and page.evaluate("window.__seen") == []


def test_the_lens_charts_depth_axis_is_named(url):
    """A walk-through at 1366 px: the logit lens chart's rows 0…12 had no name on the page. Its y-axis
    title was a plain string in an unvalidated figure, which the page's plotly.js drops (it reads
    title.text only), so the axis read as bare numbers."""
    with page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Inside")
        page.wait_for_selector("#lens-plot .js-plotly-plot .main-svg")
        page.wait_for_function("() => document.querySelector('#lens-plot .xtick') !== null")
        titles = page.eval_on_selector_all("#lens-plot .g-ytitle", "gs => gs.map(g => g.textContent)")
        assert titles == ["depth (0 = embedding)"], titles


LABEL = "() => document.querySelector('#ablate-grid [data-testid=block-label]')?.innerText.trim()"


def test_on_a_phone_which_heads_matter_says_where_its_result_is_drawn(url, tmp_path):
    """A walk-through at 390×844: the run drew into the layers × heads grid ~1,600 px above its button, the
    grid still titled "click to switch heads off", the sentence under the button saying only "Cells show…".
    Two photos of this test's own (flipped: no run cached for them by another test on this server)."""
    cat = np.asarray(Image.open(EXAMPLES / "chelsea.jpg").convert("RGB"))
    first, second = tmp_path / "lr.jpg", tmp_path / "ud.jpg"
    Image.fromarray(cat[:, ::-1].copy()).save(first)
    Image.fromarray(cat[::-1].copy()).save(second)
    with page_at(url, 390, 844) as page:
        upload_and_open(page, str(first), "Inside")
        page.wait_for_selector("#ablate-grid img", state="attached")
        page.locator("#ablate-grid").scroll_into_view_if_needed()  # a picture below the screen is loaded lazily
        grid = wait_image(page, "ablate-grid")
        assert page.evaluate(LABEL) == inside.GRID_LABEL == "Layers × heads: click to switch heads off"
        page.locator("#importance-run").scroll_into_view_if_needed()
        page.click("#importance-run")
        page.wait_for_selector("#importance-text:has-text('Done')")
        text = page.inner_text("#importance-text")
        assert "drawn in the Layers × heads grid above: each cell is the drop of the top-1 probability" in text, text
        page.wait_for_function(f"() => ({LABEL})() !== {inside.GRID_LABEL!r}")
        assert page.evaluate(LABEL) == "Layers × heads: each head's importance (top-1 drop) · click to switch heads off"
        # "above" holds on a phone: the grid ends above the button
        tops = page.evaluate("""() => [document.querySelector('#ablate-grid').getBoundingClientRect().bottom,
                                       document.querySelector('#importance-run').getBoundingClientRect().top]""")
        assert tops[0] < tops[1], tops
        page.locator("#ablate-grid").scroll_into_view_if_needed()
        wait_image(page, "ablate-grid", grid)
        shot(page, "phone_inside_importance_grid", full_page=False)
        # A new photo without a run: the grid shows the switch-off state again, and its label says so.
        drop_photo(page, str(second))  # onto the filled photo box, as a person replaces a photo
        page.wait_for_function(f"() => ({LABEL})() === {inside.GRID_LABEL!r}")
        assert page.inner_text("#importance-text").strip() == ""
