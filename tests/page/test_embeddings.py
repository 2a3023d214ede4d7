"""The Embeddings tab in a real browser: open it, move the depth slider, click a patch,
hover the token scatter (thumbnail), recolour it. Screenshots are artifacts."""

from __future__ import annotations


from browser import click_image_at, page_at, shot, upload_and_open, wait_image
from tiny import EXAMPLES


def test_embeddings_tab_depth_click_hover(url, tiny16):
    g = tiny16.geometry
    with page_at(url, height=1400) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Embeddings")
        src = wait_image(page, "emb-pca")
        # The pictures further down follow the first ones (their own event): lazy <img>s, loaded once in view.
        for below in ("emb-filters", "emb-cls"):
            page.locator(f"#{below}").scroll_into_view_if_needed()
            wait_image(page, below)
        page.locator("#emb-pca").scroll_into_view_if_needed()
        page.wait_for_selector("#emb-scatter .js-plotly-plot .scatterlayer .point")
        assert "max |conv − unfold·W|" in page.inner_text("#emb-check")
        assert f"Total: {tiny16.num_parameters:,} parameters" in page.inner_text("#emb-params-total")
        assert "✓" in page.inner_text("#emb-params-total")
        assert "(1, 3, 224, 224)" in page.inner_text("#emb-steps")
        shot(page, "embeddings_tab")

        forwards = []
        hook = tiny16.model.register_forward_hook(lambda *_: forwards.append(1))
        try:
            # Depth slider to the last block, through its number box.
            box = page.locator("#emb-depth input[type=number]")
            box.fill(str(g.num_layers))
            box.press("Enter")
            src = wait_image(page, "emb-pca", src)
            page.wait_for_function(
                "() => document.querySelector('#emb-depth-info').innerText"
                f".includes('Depth l = {g.num_layers}')")
            # The scatter follows the pictures (its event waits until they are painted).
            page.wait_for_function(f"() => document.querySelector('#emb-scatter').innerText"
                                   f".includes('Patch tokens at depth {g.num_layers}')")

            # Click patch (row 3, col 5): the similarity panel names its token.
            r, c = 3, 5
            page.locator("#emb-pca img").scroll_into_view_if_needed()
            click_image_at(page, "emb-pca", (c + 0.5) / g.grid[1], (r + 0.5) / g.grid[0])
            token = g.num_prefix_tokens + r * g.grid[1] + c
            page.wait_for_function(
                f"() => document.querySelector('#emb-sim-info').innerText.includes('token {token} ')")
            assert f"row {r}, col {c}" in page.inner_text("#emb-sim-info")
            wait_image(page, "emb-sim")
            page.locator("#emb-pca").scroll_into_view_if_needed()
            shot(page, "embeddings_tab_clicked", full_page=False)

            # Colour by rollout, then hover a point: its thumbnail shows next to the cursor.
            page.locator("#emb-color label", has_text="rollout").click()
            page.wait_for_function(
                "() => document.querySelector('#emb-scatter .colorbar') && "
                "document.querySelector('#emb-scatter').innerText.includes('rollout weight')")
            page.locator("#emb-scatter").scroll_into_view_if_needed()
            # The hover script has (re-)attached to the re-plotted chart.
            page.wait_for_function("""() => { const gd = document.querySelector('#emb-scatter .js-plotly-plot');
                                              return gd && gd._ev && gd.__vizvitEv === gd._ev; }""")
            point = page.locator("#emb-scatter .scatterlayer .point").nth(20)
            box = point.bounding_box()
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.wait_for_function(
                "() => { const b = document.querySelector('#emb-thumb');"
                " const i = b && b.querySelector('img');"
                " return b && b.style.display === 'block' && i.complete && i.naturalWidth > 0; }")
            assert page.locator("#emb-thumb img").get_attribute("src").startswith("data:image/png;base64,")
            assert "row" in page.inner_text("#emb-thumb")
            shot(page, "embeddings_scatter_hover", full_page=False)
        finally:
            hook.remove()
        assert not forwards, "the depth slider, clicks and colouring must not run the model"


def test_embeddings_tab_before_any_photo_is_empty_not_an_error(url):
    with page_at(url) as page:
        page.get_by_role("tab", name="Embeddings").click()
        page.wait_for_selector("#emb-depth")
        page.wait_for_timeout(500)
        assert page.locator(".toast-body.error").count() == 0
