"""Debian chromium driven by Playwright. Screenshots land in artifacts/screenshots/."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from browser_path import find_browser
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from settle import report, watch

SHOTS = Path(__file__).resolve().parent.parent / "artifacts" / "screenshots"
NO_BROWSER = "no Chromium/Chrome found"  # the skip reason conftest counts in the run's summary
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run", "--disable-sync", "--disable-quic",
        # Nothing outside this machine: a name fails at once instead of waiting on the closed network.
        # (A page.route did it by sending each of a load's ~100 requests through Playwright's driver.)
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]


# One Playwright driver and one Chromium per set of flags for the whole run: launching Chromium
# costs seconds (about 5x a fresh context here), and ~150 page_at calls each launched one. Every
# page_at still gets a fresh browser context: its own cookies, storage, cache and permissions, as
# a new visitor has. (Playwright's sync API allows one driver per thread: page_at runs on the
# test's thread, the main one.)
_driver = None
_find_browser = cache(find_browser)  # once: its Playwright fallback cannot start beside _driver
_browsers: dict[tuple, object] = {}


def _browser(chromium: str, args: tuple):
    """The shared Chromium for these flags, launched on first use (again if it crashed)."""
    global _driver
    if _driver is None:
        from playwright.sync_api import sync_playwright

        _driver = sync_playwright().start()
    browser = _browsers.get(args)
    if browser is None or not browser.is_connected():
        browser = _browsers[args] = _driver.chromium.launch(executable_path=chromium, headless=True,
                                                            args=[*ARGS, *args])
    return browser


def close_browsers() -> None:
    """Close the shared browsers and the driver (the end of the run: tests/page/conftest.py)."""
    global _driver
    for browser in _browsers.values():
        try:
            browser.close()
        except Exception:  # noqa: BLE001 - already gone (crashed): nothing left to close
            pass
    _browsers.clear()
    if _driver is not None:
        _driver.stop()
        _driver = None


# An init_script: every text the page ever showed that holds "Upload a photo first", kept as it appeared in
# window.__seen (a toast goes after some seconds).
UPLOAD_FIRST_SEEN = """window.__seen = []; new MutationObserver(() => {
    const t = document.body?.innerText ?? '';
    if (t.includes('Upload a photo first')) window.__seen.push(t.slice(0, 80));
}).observe(document, {subtree: true, childList: true, characterData: true});"""


# The events of each session whose answer has not come (web/answer_stream.js).
OWED = "() => Object.entries(window.__vizvitAnswers?.sessions ?? {}).map(([k, s]) => [k, [...s.owed]])"


def _chromium() -> str:
    """The browser's path; the test is skipped without one (failed under CI, which must have it)."""
    chromium = _find_browser()
    if chromium is None:
        if os.environ.get("CI"):
            pytest.fail(f"{NO_BROWSER}: .ci/run must install Debian's chromium")
        pytest.skip(NO_BROWSER)
    return chromium


@contextmanager
def blank_page(html: str = "") -> Iterator:
    """A page of `html` alone, no server (a page script tried on its own), in a fresh context of the
    shared browser, closed after the block."""
    context = _browser(_chromium(), ()).new_context()
    try:
        page = context.new_page()
        page.set_content(html)
        yield page
    finally:
        context.close()


@contextmanager
def page_at(url: str, width: int = 1400, height: int = 1100, wait_for: str = "#upload", args: tuple = (),
            init_script: str | None = None) -> Iterator:
    """args: more Chromium flags (e.g. a fake camera); init_script: run before the page's own.
    The page is in a fresh context of a shared browser; every context opened during the block (a
    test's extra pages, browser.new_page) is closed with it."""
    browser = _browser(_chromium(), tuple(args))
    before = set(browser.contexts)
    try:
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        watch(page)  # settle.settled(page): every answer in, watched from the first request
        page.set_default_timeout(60_000)
        if init_script:
            page.add_init_script(init_script)
        # "networkidle" never comes with Gradio 6.31 here (a long-lived request stays
        # open), so wait for the page's own upload box instead. Wait for the box, not its
        # <input type=file>: a deep link to an example fills the box, and a filled gr.File
        # has no file input, so on a fast machine the input may never be seen at all.
        page.goto(url, wait_until="load")
        page.wait_for_selector(wait_for, state="attached")
        try:
            yield page
        except PlaywrightTimeout as e:  # any wait that timed out says what the page was still waiting for
            e.add_note(f"the page then: {report(page)}; answers owed: {page.evaluate(OWED)}")
            raise
    finally:
        for ctx in [c for c in browser.contexts if c not in before]:
            try:
                ctx.close()
            except Exception:  # noqa: BLE001 - the browser crashed: _browser launches another next time
                pass


def shot(page, name: str, full_page: bool = True) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def upload(page, path: str) -> None:
    page.set_input_files("#upload input[type=file]", path)


def drop_photo(page, path: str) -> None:
    """Drop the file at `path` on the filled photo box, as a person drags it there (web/upload_replace.js): a
    new upload, where a click on an example reads the example's cached copy (which another server on this
    machine may have deleted as it closed)."""
    page.evaluate("""([b64, name]) => { const bin = atob(b64), a = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) a[i] = bin.charCodeAt(i);
      const dt = new DataTransfer(); dt.items.add(new File([a], name, {type: 'image/jpeg'}));
      const t = document.querySelector('#upload .file-preview-holder');
      for (const kind of ['dragover', 'drop'])
        t.dispatchEvent(new DragEvent(kind, {dataTransfer: dt, bubbles: true, cancelable: true})); }""",
                  [base64.b64encode(Path(path).read_bytes()).decode(), Path(path).name])


def image_src(page, elem_id: str) -> str | None:
    """The src of the <img> inside a gr.Image with elem_id (changes when the image does)."""
    loc = page.locator(f"#{elem_id} img")
    return loc.first.get_attribute("src") if loc.count() else None


def wait_image(page, elem_id: str, old: str | None = None, timeout_ms: int = 60_000) -> str:
    """Wait until the gr.Image shows an image different from `old`; return its src. On a timeout the
    error says what the page still waited for (settle.report): a lost answer shows in CI's log."""
    try:
        page.wait_for_function(
            """([id, old]) => { const i = document.querySelector('#' + id + ' img');
                                 return i && i.src && i.complete && i.naturalWidth > 0 && i.src !== old; }""",
            arg=[elem_id, old], timeout=timeout_ms)
    except PlaywrightTimeout as e:
        raise AssertionError(f"#{elem_id} showed no new picture in {timeout_ms} ms: {report(page)}") from e
    return image_src(page, elem_id)


def click_image_at(page, elem_id: str, fx: float, fy: float) -> None:
    """Click at a fraction (fx, fy) of the displayed image's box."""
    box = page.locator(f"#{elem_id} img").first.bounding_box()
    page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])


def click_pixel(page, elem_id: str, px: float, py: float) -> None:
    """Click pixel (px, py) of the image's own pixels. A small image is drawn centred in a
    wider <img> box (object-fit: contain), so box fractions would miss it."""
    img = page.locator(f"#{elem_id} img").first
    img.scroll_into_view_if_needed()  # clicks outside the viewport are lost
    box = img.bounding_box()
    nw, nh = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
    s = min(box["width"] / nw, box["height"] / nh)
    x0 = box["x"] + (box["width"] - nw * s) / 2
    y0 = box["y"] + (box["height"] - nh * s) / 2
    page.mouse.click(x0 + px * s, y0 + py * s)


def set_slider(page, elem_id: str, value: float) -> None:
    """Type a value into a gr.Slider's number box and press Enter, as a user would."""
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def upload_and_open(page, photo: str, tab: str) -> None:
    """Upload a photo, wait for the first tab to show it, then open `tab`."""
    upload(page, photo)
    wait_image(page, "patch-grid")
    page.get_by_role("tab", name=tab).click()


def served_path(picture, fmt: str = "jpeg") -> str:
    """Where a gr.Image of format `fmt` saves `picture` as an output: a path named by the hash of
    the encoded bytes, so two equal paths mean byte-identical files. A picture sent in an update (with
    its keyboard cells class) is saved as its value."""
    import gradio as gr
    from built_page import picture as shown

    return gr.Image(format=fmt).postprocess(shown(picture)).path


def wait_flip_pages(page, name: str, n: int, timeout_ms: int = 60_000) -> None:
    """Wait until the page holds `n` pages of flipbook `name` (page/web/flipbook.js)."""
    page.wait_for_function("([name, n]) => { const b = window.__vizvitFlip && window.__vizvitFlip.books[name];"
                           " return b && Object.keys(b.pages).length >= n; }", arg=[name, n], timeout=timeout_ms)


# The targets' srcs right now, and whether the page itself put each there (a flipbook page).
FLIPPED_JS = """(ids) => ids.map((id) => { const i = document.querySelector('#' + id + ' img');
  return [i.getAttribute('src'), i.dataset.flipped === i.getAttribute('src')]; })"""


# A canvas's pixels as [width, height, base64 of its RGB rows] (a JS function's source, to call
# inside a page.evaluate: "(" + CANVAS_RGB_JS + ")(canvas)").
CANVAS_RGB_JS = """(cv) => {
  const d = cv.getContext('2d').getImageData(0, 0, cv.width, cv.height).data;
  const rgb = new Uint8Array(cv.width * cv.height * 3);
  for (let i = 0, j = 0; i < d.length; i += 4, j += 3) { rgb[j] = d[i]; rgb[j + 1] = d[i + 1]; rgb[j + 2] = d[i + 2]; }
  let s = '';
  for (let i = 0; i < rgb.length; i += 0x8000) s += String.fromCharCode.apply(null, rgb.subarray(i, i + 0x8000));
  return [cv.width, cv.height, btoa(s)];
}"""


def rgb_array(got: list) -> np.ndarray:
    """CANVAS_RGB_JS's [width, height, base64] -> (height, width, 3) uint8."""
    w, h, data = got
    return np.frombuffer(base64.b64decode(data), np.uint8).reshape(h, w, 3)


# The picture in #id's <img> as shown, pixel for pixel, read back through a canvas.
IMG_RGB_JS = """(id) => { const i = document.querySelector('#' + id + ' img'), c = document.createElement('canvas');
  c.width = i.naturalWidth; c.height = i.naturalHeight; c.getContext('2d').drawImage(i, 0, 0);
  return (""" + CANVAS_RGB_JS + ")(c); }"
