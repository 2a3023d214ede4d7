"""Issue 43, item 4: a new photo replaces the shown one in one step (dropped on the filled box, chosen
by a click on its file name, or pasted from the clipboard), without × first; after a refused file the
box still names the photo the tabs show."""

from __future__ import annotations

import base64

from browser import page_at
from settle import settled
from tiny import EXAMPLES

# A File built in the page from bytes (what a drop or a paste carries).
MAKE_FILE = """([b64, name, mime]) => { const bin = atob(b64); const a = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) a[i] = bin.charCodeAt(i); return new File([a], name, {type: mime}); }"""
DROP = """([f, make]) => { const dt = new DataTransfer(); dt.items.add(eval(make)(f));
  const t = document.querySelector('#upload .file-preview-holder');
  for (const kind of ['dragover', 'drop'])
    t.dispatchEvent(new DragEvent(kind, {dataTransfer: dt, bubbles: true, cancelable: true})); }"""
PASTE = """([f, make]) => { const dt = new DataTransfer(); dt.items.add(eval(make)(f));
  document.body.dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true})); }"""


def _file(data: bytes, name: str) -> list[str]:
    return [base64.b64encode(data).decode(), name, "image/jpeg"]


def _shows(page, stem: str, before: str = "") -> str:
    """The box names `stem` (uploaded) and the status line is a new photo's (its forward done): its text."""
    page.wait_for_selector(f"#upload .file-preview-holder:has-text('{stem}')", timeout=60_000)
    page.wait_for_function("b => { const t = document.querySelector('#status').innerText;"
                           " return /top-1/.test(t) && t !== b; }", arg=before, timeout=120_000)
    return page.inner_text("#status")


def test_drop_choose_and_paste_replace_the_photo_in_one_step_and_a_refused_file_keeps_its_name(url, tmp_path):
    with page_at(url + "?example=chelsea") as page:
        status = _shows(page, "chelsea")
        # Dropped on the filled box: no × needed.
        page.evaluate(DROP, [_file((EXAMPLES / "coffee.jpg").read_bytes(), "coffee.jpg"), MAKE_FILE])
        status = _shows(page, "coffee", status)
        assert "chelsea" not in page.inner_text("#upload")
        # A refused file: the toast and the status say so, and the box still names the photo shown.
        page.evaluate(DROP, [_file(b"not a photo at all", "notes.jpg"), MAKE_FILE])
        page.wait_for_selector("#status:has-text('was not used')", timeout=60_000)
        page.wait_for_selector("#upload:has-text('coffee')", timeout=60_000)
        settled(page)  # the box put back: its change is the shown photo, nothing runs again
        assert "was not used" in page.inner_text("#status") and "notes" not in page.inner_text("#upload")
        # Chosen: a click on the filled box's file name opens the file chooser.
        with page.expect_file_chooser() as fc:
            page.locator("#upload .filename").click()
        fc.value.set_files(str(EXAMPLES / "astronaut.jpg"))
        status = _shows(page, "astronaut", status)
        # Pasted from the clipboard (a screenshot tool's "image.png").
        page.evaluate(PASTE, [_file((EXAMPLES / "chelsea.jpg").read_bytes(), "image.png"), MAKE_FILE])
        _shows(page, "image", status)
        assert "astronaut" not in page.inner_text("#upload")
