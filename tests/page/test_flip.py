"""Flipbooks in a real browser (page/web/flipbook.js): a control moved to a position the page
holds shows the server's own picture for it at once, byte for byte, with no round trip, and an
older answer never replaces it."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from appserver import page_name, serving
from browser import (
    FLIPPED_JS,
    IMG_RGB_JS,
    click_pixel,
    page_at,
    rgb_array,
    served_path,
    upload,
    upload_and_open,
    wait_flip_pages,
    wait_image,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from settle import settled
from tiny import EXAMPLES

from vizvit.model.images import image_sha1, load_image
from vizvit.pictures import render
from vizvit.readings import embeddings as emb
from vizvit.session import PhotoKey
from vizvit.views import embeddings, experiments, header, inside, patches, positions

PHOTO = str(EXAMPLES / "chelsea.jpg")
DEPTH_IDS = {"pca": "emb-pca", "maps": "emb-maps", "similarity": "emb-sim"}

# Every src each target shows from now on, in order (read when each change is seen).
RECORD_JS = """(ids) => { window.__seen = []; new MutationObserver(() => {
  window.__seen.push(ids.map((id) => document.querySelector('#' + id + ' img').getAttribute('src')));
}).observe(document.documentElement, { subtree: true, attributes: true, attributeFilter: ['src'] }); }"""


@pytest.fixture(scope="module")
def server(tiny16):
    """The page and its Workbench: the expected pictures come from the server's own cached
    analysis (a second forward could differ in the last bit, and a PCA colour with it)."""
    with serving(tiny16) as (url, wb):
        yield url, wb


def _photo(wb, vm):
    """The photo the page uploaded, as the server holds it (after the upload)."""
    return wb.handle(PhotoKey(page_name(vm), image_sha1(load_image(PHOTO))))


def _depth_files(ph, depth: int) -> list[str]:
    """The files the server's own depth answer brings (change_depth), in DEPTH_IDS order."""
    ch = embeddings.change_depth(ph, embeddings.EmbeddingsParams(depth=depth))
    return [served_path(getattr(ch, t)) for t in DEPTH_IDS]


def _shows(page, ids: list[str], files: list[str], by_page: bool) -> None:
    got = page.evaluate(FLIPPED_JS, ids)
    assert [src.split("file=", 1)[-1] for src, _ in got] == files, (got, files)
    if by_page:
        assert all(flipped for _, flipped in got), got


def test_the_depth_slider_shows_the_servers_pictures_at_once_by_keys_and_number_box(server, tiny16, monkeypatch):
    url, wb = server
    L = tiny16.geometry.num_layers
    ids = list(DEPTH_IDS.values())
    with page_at(url, height=1400) as page:
        upload_and_open(page, PHOTO, "Embeddings")
        wait_image(page, "emb-pca")
        wait_flip_pages(page, "emb-depth", L + 1)
        ph = _photo(wb, tiny16)

        page.evaluate(RECORD_JS, ids)
        rng = page.locator("#emb-depth input[type=range]")
        rng.focus()
        # The server's answer for depth 1 comes late: after the page has drawn depth 2, an older
        # answer than the user's last move (as a held-back slider event's answer can).
        change_depth = embeddings.change_depth

        def slow(ph_, p):
            if p.depth == 1:
                time.sleep(1.5)
            return change_depth(ph_, p)

        monkeypatch.setattr(embeddings, "change_depth", slow)
        for depth in range(1, L + 1):  # each key press: drawn before the press returns (no answer yet)
            rng.press("ArrowRight")
            _shows(page, ids, _depth_files(ph, depth), by_page=True)
        page.evaluate("() => { window.__seen = []; }")
        # Every answer has come (the last one names depth L); none put an older depth on screen.
        page.wait_for_function(f"() => document.querySelector('#emb-depth-info').innerText.includes('Depth l = {L}')")
        settled(page)
        _shows(page, ids, _depth_files(ph, L), by_page=False)
        final = [src for src, _ in page.evaluate(FLIPPED_JS, ids)]
        assert all(seen == final for seen in page.evaluate("() => window.__seen")), page.evaluate("() => window.__seen")
        # The slider's number box, typed.
        box = page.locator("#emb-depth input[type=number]")
        box.fill("0")
        _shows(page, ids, _depth_files(ph, 0), by_page=True)
        box.press("Enter")
        page.wait_for_function("() => document.querySelector('#emb-depth-info').innerText.includes('Depth l = 0')")
        settled(page)
        _shows(page, ids, _depth_files(ph, 0), by_page=False)


def test_a_shift_seen_before_comes_back_at_once(server, tiny16):
    url, wb = server
    ids = ["shift-view", "shift-cos"]

    def files(dx: int) -> list[str]:
        panel = experiments.shift_panel(_photo(wb, tiny16), dx, 0, "edge")
        return [served_path(panel.view), served_path(panel.cosine)]

    with page_at(url, height=1400) as page:
        upload_and_open(page, PHOTO, "Experiments")
        wait_flip_pages(page, "shift", 1)
        _shows(page, ids, files(0), by_page=False)
        rng = page.locator("#shift-dx input[type=range]")
        rng.focus()
        rng.press("ArrowRight")  # a new shift: one forward, the server's answer
        wait_flip_pages(page, "shift", 2)
        page.wait_for_function("() => document.querySelector('#shift-info').innerText.includes('dx = 1,')")
        _shows(page, ids, files(1), by_page=False)
        rng.press("ArrowLeft")  # back to a shift seen before: the page's own copy, at once
        _shows(page, ids, files(0), by_page=True)


# On each change of a picture's src: [src, drawn by the page (flipbook), the text beside it then].
AT_CHANGE_JS = """([id, text]) => { window.__at = []; new MutationObserver(() => {
  const i = document.querySelector('#' + id + ' img');
  const last = window.__at[window.__at.length - 1];
  if (last && last[0] === i.getAttribute('src')) return;
  window.__at.push([i.getAttribute('src'), i.dataset.flipped === i.getAttribute('src'),
                    document.querySelector('#' + text).innerText]);
}).observe(document.documentElement, { subtree: true, attributes: true, attributeFilter: ['src'] }); }"""


CHART_SHOWS_JS = """([bars]) => { const gd = document.querySelector('#shift-top5 .js-plotly-plot');
  const x = gd && gd.data && gd.data[0].x;
  return x && JSON.stringify(Array.from(x)) === JSON.stringify(bars); }"""  # the shift chart's bars are these


def _first_shown(page, path: str) -> list:
    """The record of the first change that put the file `path` on screen (AT_CHANGE_JS)."""
    page.wait_for_function("(p) => window.__at.some((r) => r[0].endsWith('file=' + p))", arg=path)
    return next(r for r in page.evaluate("window.__at") if r[0].endswith("file=" + path))


def test_a_new_shift_and_a_new_mask_are_drawn_from_the_servers_page_before_gradios_answer(server, tiny16):
    """A shift or mask the page holds no page for is asked of the server over plain HTTP and drawn
    at once: the picture is the server's own file, on screen while the text still tells the old
    view (Gradio's answer, which brings the text, comes after), and the top-5 chart is the server's."""
    url, wb = server
    g = tiny16.geometry
    cell = g.patch_size * render.display_scale(g)
    with page_at(url, height=1400) as page:
        upload_and_open(page, PHOTO, "Experiments")
        wait_flip_pages(page, "shift", 1)
        wait_flip_pages(page, "mask", 1)
        ph = _photo(wb, tiny16)
        # The open's charts come after its pictures (on_show's `then`): wait for them, so that the
        # chart read below is the move's (a follow-up answered after the move's leaves the chart
        # alone: page/follow_up.py, tested in test_experiments.py).
        opened = json.loads(experiments.shift_panel(ph, 0, 0, "edge").top5.to_json())["data"][0]["x"]
        page.wait_for_function(CHART_SHOWS_JS, arg=[opened])
        page.evaluate(AT_CHANGE_JS, ["shift-view", "shift-info"])
        rng = page.locator("#shift-dx input[type=range]")
        rng.focus()
        rng.press("ArrowRight")
        want = experiments.shift_panel(ph, 1, 0, "edge")
        src, by_page, text = _first_shown(page, served_path(want.view))
        assert by_page and "dx = 0," in text, (by_page, text)
        # The chart: the server's top-5 for dx = 1. (Not asserted before Gradio's answer: Plotly draws
        # it after the picture, and on a loaded machine the answer's text can land first; the full
        # suite on 2 workers timed out waiting for that order twice.)
        bars = json.loads(want.top5.to_json())["data"][0]["x"]
        page.wait_for_function(CHART_SHOWS_JS, arg=[bars])
        page.wait_for_function("() => document.querySelector('#shift-info').innerText.includes('dx = 1,')")
        _shows(page, ["shift-view", "shift-cos"], [served_path(want.view), served_path(want.cosine)], by_page=False)

        page.evaluate(AT_CHANGE_JS, ["masked-view", "mask-info"])
        click_pixel(page, "mask-grid", 3.5 * cell, 2.5 * cell)
        want = experiments.mask_panel(ph, (2 * g.grid[1] + 3,), "drop")
        src, by_page, text = _first_shown(page, served_path(want.masked))
        assert by_page and f"0 of {g.num_patches}" in text, (by_page, text)
        page.wait_for_function(f"() => document.querySelector('#mask-info').innerText.includes('1 of {g.num_patches}')")
        _shows(page, ["mask-grid", "masked-view"], [served_path(want.grid), served_path(want.masked)], by_page=False)

        # The route, as any caller may call it: refusals say why, and it goes on serving.
        import urllib.error
        import urllib.parse
        import urllib.request

        fetch = page.evaluate("() => window.__vizvitFlip.books.shift.fetch")

        def get(path: str, key: str, raw: bool = False) -> tuple[int, dict]:
            try:
                with urllib.request.urlopen(url + path + "&key=" + (key if raw else urllib.parse.quote(key)),
                                            timeout=60) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())

        assert get(fetch.replace("t=", "t=x"), "2|0|edge")[0] == 404
        assert get("vizvit/flip/shift?t=", "2|0|edge")[0] == 404
        for bad in ("2|0", "a|0|edge", "2|0|lava", "2|0|" + "e" * 9000):
            status, body = get(fetch, bad)
            assert status == 409 and body["error"], (bad, status, body)
        assert get(fetch, "%00%7C%ED%A0%80%7C%FF", raw=True)[0] == 409  # not UTF-8
        every = ",".join(map(str, range(g.num_patches)))
        status, body = get(page.evaluate("() => window.__vizvitFlip.books.mask.fetch"), "drop|" + every)
        assert status == 409 and "leave at least one patch" in body["error"]
        status, body = get(fetch, "2|0|edge")
        assert status == 200 and list(body["pages"]) == ["2|0|edge"] and body["name"] == "shift"
        want = experiments.shift_panel(ph, 2, 0, "edge")
        assert body["pages"]["2|0|edge"]["shift-view"] == served_path(want.view)


# Whether the charts' wait (after_quiet.js) was running when the key went down, seen by the page itself.
# Armed before the tab is clicked: a wait that begins and ends before the test's next call reaches a
# loaded page (the open's wait, ~0.3 s) is still seen (an S2 run at load 11 waited 60 s for one gone).
KEY_IN_WAIT_JS = """() => {
  const waiting = () => Number(document.body.dataset.vizvitWaiting || 0) > 0;
  new MutationObserver(() => { if (waiting()) window.__waitSeen = true; })
    .observe(document.body, { attributes: true, attributeFilter: ['data-vizvit-waiting'] });
  document.addEventListener('keydown', () => { window.__keyInWait = waiting(); }, { capture: true, once: true });
}"""


def test_a_shift_made_while_the_tabs_charts_wait_is_the_one_they_show(server, tiny16):
    """The tab's charts (on_show's `then`) wait until the person pauses (after_quiet.js). A slider
    moved during that wait is drawn at once; the charts that come after must be that shift's, not
    the open's (dx = 0): they gather the controls when the wait ends, not when it began. A try whose
    key press came after the wait (a busy machine) is tried again: the test counts only presses the
    page saw during the wait."""
    url, wb = server
    bars = None
    for _attempt in range(3):
        with page_at(url, height=1400) as page:
            upload(page, PHOTO)
            wait_image(page, "patch-grid")
            settled(page)  # the new photo's own follow-up has been sent: the next wait is the tab's
            page.evaluate(KEY_IN_WAIT_JS)
            page.get_by_role("tab", name="Experiments").click()
            rng = page.locator("#shift-dx input[type=range]")
            rng.focus()
            page.wait_for_function("() => window.__waitSeen")
            page.keyboard.press("ArrowRight")  # a trusted key: the wait goes on until the person pauses
            settled(page)
            if not page.evaluate("window.__keyInWait"):
                continue
            if bars is None:
                want = experiments.shift_panel(_photo(wb, tiny16), 1, 0, "edge")
                bars = json.loads(want.top5.to_json())["data"][0]["x"]
            # Every answer is in; Plotly draws the last one after it (a frame or more under load).
            try:
                page.wait_for_function(CHART_SHOWS_JS, arg=[bars], timeout=10_000)
            except PlaywrightTimeout:
                pytest.fail("the chart shows another shift than dx = 1")
            assert "dx = 1," in page.locator("#shift-info").inner_text()
            return
    pytest.fail("in 3 tries the key press never came while the charts waited")


def _pixels(page, elem_id: str) -> np.ndarray:
    return rgb_array(page.evaluate(IMG_RGB_JS, elem_id))


def test_a_clicked_position_tile_is_outlined_by_the_page_as_the_server_outlines_it(server, tiny16):
    url, wb = server
    mp = positions.cached_model_positions(_photo(wb, tiny16))
    gh, gw = mp.report.grid
    step = gh * mp.cell + positions.SEP
    with page_at(url, height=1400) as page:
        upload_and_open(page, PHOTO, "Positions")
        wait_image(page, "pos-grid")
        page.wait_for_function("() => { const m = window.__vizvitFlip && window.__vizvitFlip.marks['pos-grid'];"
                               " return m && m.baseImg.naturalWidth && m.markImg.naturalWidth; }")
        # Corners (the outline clipped at the picture's edge) and the middle.
        for rc in [(0, 0), (gh - 1, gw - 1), (2, gw - 1), (gh // 2, 3)]:
            click_pixel(page, "pos-grid", (rc[1] + 0.5) * step, (rc[0] + 0.5) * step)
            flipped = page.evaluate("() => { const i = document.querySelector('#pos-grid img');"
                                    " return i.dataset.flipped === i.getAttribute('src'); }")
            assert flipped, rc  # drawn by the page, at once
            page.wait_for_function("() => document.querySelector('#pos-grid img').complete")
            want = positions.highlight_tile(mp.grid_img, rc, (gh, gw), mp.cell)
            got = _pixels(page, "pos-grid")
            assert got.shape == want.shape and np.array_equal(got, want), (rc, np.argwhere(got != want)[:5])
            settled(page)  # the server's answer: the same pixels (once loaded: an image of width 0 until decoded)
            page.wait_for_function("() => { const i = document.querySelector('#pos-grid img');"
                                   " return i.complete && i.naturalWidth > 0; }")
            assert np.array_equal(_pixels(page, "pos-grid"), want), rc


def test_grid_lines_and_numbers_swap_the_servers_grid_at_once(server, tiny16):
    url, wb = server
    g = tiny16.geometry
    with page_at(url, height=1200) as page:
        upload(page, PHOTO)
        wait_image(page, "patch-grid")
        wait_flip_pages(page, "patch-grid", 4)
        view = _photo(wb, tiny16).input_view()
        for box, lines, indices in [("patch-lines", False, False), ("patch-indices", False, True),
                                    ("patch-lines", True, True)]:
            page.locator(f"#{box} input[type=checkbox]").click()
            _shows(page, ["patch-grid"], [served_path(patches.grid_of_view(g, view, lines, indices))], by_page=True)
        settled(page)  # the server's answer: the same file
        _shows(page, ["patch-grid"], [served_path(patches.grid_of_view(g, view, True, True))], by_page=False)


# The scatter's first trace as drawn (plotly's full data: typed arrays decoded): its colours, colour scale,
# colour-bar title and hover text.
TRACE_JS = """() => { const t = document.querySelector('#emb-scatter .js-plotly-plot')._fullData[0];
  return { color: Array.from(t.marker.color), scale: JSON.stringify(t.marker.colorscale),
           title: t.marker.colorbar.title.text, hover: t.hovertemplate, n: t.x.length }; }"""


def test_the_colour_by_choice_recolours_the_scatter_in_the_page_as_the_server_would(server, tiny16):
    url, wb = server
    with page_at(url, height=1400) as page:
        upload_and_open(page, PHOTO, "Embeddings")
        page.wait_for_selector("#emb-scatter .js-plotly-plot .scatterlayer .point")
        wait_flip_pages(page, "emb-color", 3)
        ph = _photo(wb, tiny16)
        for choice in ("rollout", "column", "row"):
            page.locator("#emb-color").get_by_text(choice, exact=True).click()
            drawn = page.evaluate(TRACE_JS)  # at once: the page's restyle
            want = embeddings.scatter_figure(tiny16, emb.data(ph), 0, choice).data[0]
            assert drawn["title"] == want.marker.colorbar.title.text and drawn["hover"] == want.hovertemplate
            assert np.allclose(drawn["color"], np.asarray(want.marker.color, float)), choice
            settled(page)  # the server's figure for the same choice: the same trace
            assert page.evaluate(TRACE_JS) == drawn, choice


BARS_JS = """() => { const gd = document.querySelector('#lens-top5 .js-plotly-plot');
  return [gd.layout.title.text, JSON.stringify(gd._fullData.map((t) => [Array.from(t.x), Array.from(t.y)]))]; }"""


def test_the_logit_lens_depth_swaps_in_the_servers_chart_for_each_depth(server, tiny16):
    url, wb = server
    L = tiny16.geometry.num_layers
    with page_at(url, height=1400) as page:
        upload_and_open(page, PHOTO, "Inside")
        page.wait_for_selector("#lens-top5 .js-plotly-plot")
        wait_flip_pages(page, "lens", L + 1)
        ph = _photo(wb, tiny16)
        rng = page.locator("#lens-depth input[type=range]")
        rng.focus()
        for d in range(L - 1, -1, -1):
            rng.press("ArrowLeft")
            title, bars = page.evaluate(BARS_JS)  # at once: the page's chart
            want = inside.depth_top5(ph, d)
            assert title == want.layout.title.text, (d, title)
            assert json.loads(bars)[0][1] == list(want.data[0].y), d  # the same five classes, in order
        settled(page)  # the server's chart for depth 0: the same bars
        assert page.evaluate(BARS_JS)[1] == bars
        # A row of the table sets the slider, drawn at once too.
        page.locator(f"#lens-table [data-row='{L}'][data-col='0']").click()
        assert page.evaluate(BARS_JS)[0] == inside.depth_top5(ph, L).layout.title.text
        assert page.locator("#lens-depth input[type=range]").input_value() == str(L)
        settled(page)  # and the server agrees
        assert page.evaluate(BARS_JS)[0] == inside.depth_top5(ph, L).layout.title.text
        assert page.locator("#lens-depth input[type=number]").input_value() == str(L)


def test_masks_seen_before_come_back_at_once_and_quick_clicks_are_never_lost(server, tiny16, monkeypatch):
    url, wb = server
    g = tiny16.geometry
    cell = g.patch_size * render.display_scale(g)
    ids = ["mask-grid", "masked-view"]

    def files(mask: tuple[int, ...]) -> list[str]:
        panel = experiments.mask_panel(_photo(wb, tiny16), mask, "drop")
        return [served_path(panel.grid), served_path(panel.masked)]

    def click(r: int, c: int) -> None:
        click_pixel(page, "mask-grid", (c + 0.5) * cell, (r + 0.5) * cell)

    a, b, c, d = (2, 3), (5, 7), (9, 1), (11, 12)
    ia, ib, ic, id_ = (r * g.grid[1] + col for r, col in (a, b, c, d))
    with page_at(url, height=1400) as page:
        upload_and_open(page, PHOTO, "Experiments")
        wait_flip_pages(page, "mask", 1)
        click(*a)  # a new mask: the server's answer (one forward)
        wait_flip_pages(page, "mask", 2)
        settled(page)
        _shows(page, ids, files((ia,)), by_page=False)
        click(*a)  # back to no mask: the page's own copy, at once
        _shows(page, ids, files(()), by_page=True)
        click(*a)
        _shows(page, ids, files((ia,)), by_page=True)
        settled(page)
        # Three new patches inside one round trip (the first one's answer held back a second):
        # Gradio sends only the last click held meanwhile, which must carry every click before it.
        panel_of = experiments.mask_panel

        def slow(ph_, m, mode="drop"):
            if m and ib in m and ic not in m:
                time.sleep(1.0)
            return panel_of(ph_, m, mode)

        monkeypatch.setattr(experiments, "mask_panel", slow)
        click(*b)
        page.wait_for_timeout(200)
        click(*c)
        click(*d)
        settled(page)
        _shows(page, ids, files(tuple(sorted((ia, ib, ic, id_)))), by_page=False)


def test_a_picked_label_shows_the_servers_patch_label_map_at_once(towers):
    vm = towers["clip16"]
    labels = ["a fish", "a teapot", "a bird"]
    with serving(vm) as (url, wb), page_at(url, height=1600) as page:
        upload(page, PHOTO)
        wait_image(page, "label-map")
        box = page.locator("#zs-labels textarea, #zs-labels input").first
        box.fill(", ".join(labels))
        box.press("Enter")
        page.wait_for_function("() => document.querySelector('#top5').innerText.includes('a fish')")
        wait_flip_pages(page, "label-map", 3)
        ph = wb.handle(header.photo_key(wb, page_name(vm), image_sha1(load_image(PHOTO)), "", "zero", ", ".join(labels),
                                        page.locator("#zs-template textarea, #zs-template input").first.input_value()))
        for label in ("a bird", "a fish", "a teapot"):  # each one not shown before it (the top-1 shows first)
            page.locator("#label-pick input").click()
            page.get_by_role("option", name=label, exact=True).click()
            _shows(page, ["label-map"], [served_path(patches.label_map(ph, label)[0])], by_page=True)
            page.wait_for_function(f"() => document.querySelector('#label-map-text').innerText.includes('{label}')")
            _shows(page, ["label-map"], [served_path(patches.label_map(ph, label)[0])], by_page=False)


def test_the_fetcher_names_photos_by_tokens_and_computes_one_page_per_photo_at_a_time(tiny16):
    """page/flip.py Fetcher, without a browser: a photo keeps its token while remembered, the
    oldest are forgotten (404 then), and a second ask while one is computed is refused (429)."""
    import threading

    import gradio as gr

    from page.flip import Fetcher
    from vizvit.session import Workbench
    from vizvit.views.flip import Flipbook

    started, go = threading.Event(), threading.Event()

    def build(ph, key: str) -> Flipbook:
        if key == "slow":
            started.set()
            go.wait(10)
        return Flipbook(repr(ph.key), ("x",), {key: {"pic": np.zeros((4, 4, 3), np.uint8)}}, merge=True)

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    f = Fetcher("t", wb, build, {"pic": gr.Image(elem_id="pic")}, {"x": gr.Slider(elem_id="x")}, size=2)
    a, b, c = (PhotoKey(tiny16.id, s * 40) for s in "abc")
    ta = f.token(a)
    assert f.token(a) == ta and f.token(b) != ta and f.value(Flipbook("l", ("x",)), a).count(ta) == 1
    status, body = f.answer(ta, "1")
    assert status == 200 and list(json.loads(body)["pages"]) == ["1"]
    done = []
    t = threading.Thread(target=lambda: done.append(f.answer(ta, "slow")))
    t.start()
    assert started.wait(10)
    assert f.answer(ta, "2")[0] == 429  # one at a time per photo
    assert f.answer(f.token(b), "2")[0] == 200  # another photo is not held up
    go.set()
    t.join(10)
    assert done[0][0] == 200 and f.answer(ta, "2")[0] == 200
    f.token(c)  # a third photo: the least recently used (a) is forgotten
    assert f.answer(ta, "2")[0] == 404 and f.answer("", "2")[0] == 404
    # At most at_once pages at once over all photos: another photo's ask is refused meanwhile.
    started.clear()
    go.clear()
    one = Fetcher("u", wb, build, {"pic": gr.Image(elem_id="pic")}, {"x": gr.Slider(elem_id="x")}, at_once=1)
    t = threading.Thread(target=lambda: done.append(one.answer(one.token(b), "slow")))
    t.start()
    assert started.wait(10)
    status, body = one.answer(one.token(c), "2")
    assert status == 429 and "busy" in json.loads(body)["error"]
    go.set()
    t.join(10)
    assert done[-1][0] == 200 and one.answer(one.token(c), "2")[0] == 200  # the slot is back


def test_a_book_box_holding_what_no_page_sends_fills_nothing_and_says_nothing():
    """filled_later's event reads the hidden book box's text, which a caller writes as it likes: text
    that is no JSON, a list, a number or "1e999" was "Something went wrong" and a traceback in the log.
    Such a box holds no book: nothing is filled. A book without its pages is filled, as before."""
    import gradio as gr

    from page import flip

    with gr.Blocks() as demo:
        book, out = gr.HTML(), gr.Textbox()
        flip.filled_later(book, lambda v: {out: f"filled {v}"}, [out], [out])
    run = demo.fns[0].fn
    for held in ("x" * 100_000, "[" * 100_000, ["vit", "0" * 40], 7, "1e999", "[1, 2]", '"text"', None, ""):
        assert run(held, "v") == {out: gr.skip()}, held
    assert run(json.dumps({"name": "b", "pages": {}}), "v") == {out: "filled v"}
    assert run(json.dumps({"name": "b", "pages": {"1": "p"}}), "v") == {out: gr.skip()}
