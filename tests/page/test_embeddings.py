"""The Embeddings tab in a real browser: open it, move the depth slider, click a patch,
hover the token scatter (thumbnail), recolour it. Screenshots are artifacts."""

from __future__ import annotations

import numpy as np
from browser import (
    CANVAS_RGB_JS,
    IMG_RGB_JS,
    click_image_at,
    page_at,
    rgb_array,
    shot,
    upload_and_open,
    wait_image,
)
from settle import settled
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
            point.wait_for(state="visible")  # a re-plot under load can leave it unlaid for a moment: no box yet
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
        settled(page)
        assert page.locator(".toast-body.error").count() == 0


# The page's drawing of picture `kind` ('pca' or 'sim') for a click on patch [r, c], from its book.
PICTURE_JS = """([kind, cell]) => {
  const E = window.__vizvitEmb, b = E.state.book;
  return (""" + CANVAS_RGB_JS + """)(E.picture(b, E.state.view.px, kind, cell)); }"""
TOKENS = ("(d) => { const E = window.__vizvitEmb;"
          " return E && E.state.book && E.state.book.depth === d && !!E.state.view; }")


def _same_clicks(page, vm, a, d, depth: int, cells) -> None:
    """The page's pictures for clicks on `cells` at `depth` against pca_over_photo's and
    similarity_panel's, pixel for pixel."""
    from vizvit.views import embeddings as ev

    for cell in cells:
        want = {"pca": ev.pca_over_photo(vm, d, depth, cell), "sim": ev.similarity_panel(vm, a, d, depth, cell).image}
        for kind, server in want.items():
            got = rgb_array(page.evaluate(PICTURE_JS, [kind, list(cell)]))
            assert got.shape == server.shape, (kind, cell)
            diff = np.abs(got.astype(int) - server)
            assert diff.max() == 0, (kind, depth, cell, np.argwhere(diff > 0)[:5])


def test_a_clicked_token_is_drawn_in_the_page_as_the_server_draws_it(url, tiny16, trained):
    """A click on either picture is drawn from the tab's token book: the PCA picture with the clicked
    patch outlined and the clicked token's similarity map, the server's very pixels, at the depth
    shown and after a depth change; on the trained ViT-Ti at a depth with artifact tokens (their red
    boxes), through a book the page is handed."""
    import vizvit
    from vizvit.readings import embeddings as emb
    from vizvit.session import PhotoKey, Workbench
    from vizvit.views import embeddings as ev

    photo = str(EXAMPLES / "chelsea.jpg")
    g = tiny16.geometry
    with page_at(url, height=1400) as page:
        upload_and_open(page, photo, "Embeddings")
        wait_image(page, "emb-pca")
        page.wait_for_function(TOKENS, arg=0)
        a = vizvit.analyze(tiny16, vizvit.load_image(photo))
        d = emb.prepare(tiny16, a)
        _same_clicks(page, tiny16, a, d, 0, [(0, 0), (3, 5), (g.grid[0] - 1, g.grid[1] - 1)])
        box = page.locator("#emb-depth input[type=number]")
        box.fill(str(g.num_layers))
        box.press("Enter")
        page.wait_for_function(TOKENS, arg=g.num_layers)
        _same_clicks(page, tiny16, a, d, g.num_layers, [(7, 2)])

        wb = Workbench(device="cpu")
        wb.add_model(trained)
        ph = wb.handle(PhotoKey(trained.id, wb.add_photo(vizvit.load_image(photo))))
        at = trained.geometry.num_layers
        assert emb.data(ph).tokens.excluded[at].any(), "the trained ViT-Ti has artifact tokens at its last depth"
        page.evaluate("(t) => window.__vizvitEmb.setBook(t)", ev.token_book(ph, ev.EmbeddingsParams(depth=at)))
        page.wait_for_function("() => window.__vizvitEmb.state.book"
                               " && window.__vizvitEmb.state.book.excluded.length > 0")
        art = tuple(int(v) for v in np.argwhere(emb.data(ph).tokens.excluded[at])[0])
        _same_clicks(page, trained, ph.analysis(), emb.data(ph), at, [art, (6, 7)])


def test_a_click_paints_at_once_and_an_older_answer_never_stays(url, tiny16):
    """Two clicks in quick succession: each is drawn in the page (a drawing of that patch laid over
    each picture) before its own answer; every answer lands under a drawing, and none under the first
    click's once the second is drawn; once both are in, the drawings are gone and the pictures are
    the server's for the second click (its text too). The drawing lies exactly over its picture."""
    import vizvit
    from vizvit.readings import embeddings as emb
    from vizvit.views import embeddings as ev

    g = tiny16.geometry
    with page_at(url, height=1400) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Embeddings")
        wait_image(page, "emb-sim")
        page.wait_for_function(TOKENS, arg=0)
        page.locator("#emb-sim img").scroll_into_view_if_needed()
        # Each new picture the server puts in the <img>, and the drawing over it at that moment.
        page.evaluate("""() => { const img = document.querySelector('#emb-sim img'), log = window.__simLog = [];
            new MutationObserver(() => { const cv = document.querySelector('#emb-sim canvas.vv-drawn');
                                         log.push(cv ? cv.dataset.drawn : null); })
              .observe(img, { attributes: true, attributeFilter: ['src'] }); }""")
        for r, c in [(2, 3), (9, 11)]:
            click_image_at(page, "emb-sim", (c + 0.5) / g.grid[1], (r + 0.5) / g.grid[0])
            for kind in ("sim", "pca"):  # at once, or once the picture loading under it is decoded (page.js)
                page.wait_for_function("([k, v]) => document.querySelector('#emb-' + k + ' canvas.vv-drawn')"
                                       "?.dataset.drawn === v",
                                       arg=[kind, f"{r},{c}"], timeout=5000)
        token = g.num_prefix_tokens + 9 * g.grid[1] + 11
        page.wait_for_function(f"() => document.querySelector('#emb-sim-info').innerText.includes('token {token} ')")
        page.wait_for_function("() => !document.querySelector('#emb-pictures canvas.vv-drawn')")
        log = page.evaluate("window.__simLog")
        # Every answer landed under a drawing (none showed on its own), and none under the first
        # click's drawing once the second was drawn (page.js may hold the second click until the
        # first answer's picture is decoded: then that answer lands under the first drawing).
        assert log and None not in log and log[-1] == "9,11" and "2,3" not in log[log.index("9,11"):], log
        shown = rgb_array(page.evaluate(IMG_RGB_JS, "emb-sim"))
        a = vizvit.analyze(tiny16, vizvit.load_image(str(EXAMPLES / "chelsea.jpg")))
        want = ev.similarity_panel(tiny16, a, emb.prepare(tiny16, a), 0, (9, 11)).image
        other = ev.similarity_panel(tiny16, a, emb.prepare(tiny16, a), 0, (2, 3)).image
        err = lambda x: float(np.abs(shown.astype(int) - x).mean())  # noqa: E731 - the server's JPEG
        assert err(want) < 3 and err(other) > 3 * err(want), (err(want), err(other))
        # A drawing lies exactly over its picture (same box), so what is seen does not move.
        click_image_at(page, "emb-sim", 0.5 / g.grid[1], 0.5 / g.grid[0])
        boxes = page.evaluate("""() => ['img', 'canvas.vv-drawn'].map((s) => {
            const r = document.querySelector('#emb-sim ' + s).getBoundingClientRect();
            return [r.left, r.top, r.width, r.height]; })""")
        img_box, cv_box = boxes
        assert all(abs(p - q) < 1 for p, q in zip(img_box, cv_box)), boxes


def test_a_links_depth_opens_the_tab_there_and_its_copied_link_keeps_it(url):
    """The copied link of the Embeddings tab lost its depth: a student's link at depth 1 opened at depth 0."""
    with page_at(f"{url}?example=chelsea&tab=embeddings&depth=1", height=1400) as page:
        page.wait_for_selector("#status:has-text('top-1')", timeout=120_000)
        wait_image(page, "emb-pca")
        settled(page)
        assert page.locator("#emb-depth input[type=number]").input_value() == "1"
        assert not page.locator("#notice").is_visible()
        page.locator("#copy-link").click()
        page.wait_for_function("() => document.querySelector('#link-box textarea').value.includes('tab=embeddings')")
        copied = page.locator("#link-box textarea").input_value()
        assert "tab=embeddings&" in copied and copied.endswith("&depth=1"), copied
    with page_at(f"{url}?example=chelsea&tab=embeddings&depth=nan") as page:
        page.wait_for_selector("#notice:has-text('About this link')")
        assert "depth=nan' is not a whole number" in page.inner_text("#notice")


def test_the_token_norms_table_fits_a_projector_without_a_sideways_scroll(trained):
    """Projector mode at 1366 px on the trained ViT-Ti (13 depths): the table ran to 1,353 px in a 1,216-px column,
    l = 11 cut and l = 12 out of sight, behind a scroll nobody in a hall can use (a walk-through)."""
    from appserver import running

    with running(trained) as u, page_at(u + "?example=chelsea&tab=embeddings&projector=1", width=1366,
                                        height=900) as page:
        page.wait_for_selector("#emb-cls-info table", timeout=60_000)
        wide, shown = page.evaluate("() => { const t = document.querySelector('#emb-cls-info table');"
                                    " return [t.scrollWidth, t.clientWidth]; }")
        assert "l=12" in page.inner_text("#emb-cls-info table")
        assert wide <= shown, f"the table is {wide} px wide in a {shown}-px box"
