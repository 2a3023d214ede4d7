"""Issue 43, item 1: every tab opened from a fresh link (?example=chelsea&tab=X) on the trained ViT-Ti,
as a student's first click on a lecturer's link: no error toast in the page, no traceback in the
server's log. The Compare tab raised "Slider minimum must be less than maximum." here (no model B:
a 1..1 depth slider) and its toast stayed on screen in every other tab."""

from __future__ import annotations

import logging
import time

import pytest

from appserver import running
from browser import page_at
from vizvit.vocab import TAB_IDS, TABS

SETTLE_S = 6  # after the photo's forward: the open tab's own events (a liveness wait, not a timing test)


@pytest.fixture(scope="module")
def trained_url(trained):
    with running(trained) as u:
        yield u


def _errors(page) -> list[str]:
    """The text of every error toast on the page (Gradio's toasts: a title, then the message)."""
    return [t for t in page.locator(".toast-body").all_inner_texts() if t.strip().lower().startswith("error")]


@pytest.mark.parametrize("tab", TAB_IDS)
def test_every_tab_opens_from_a_fresh_link_without_an_error(trained_url, tab, capfd, caplog):
    caplog.set_level(logging.ERROR)
    with page_at(f"{trained_url}?example=chelsea&tab={tab}") as page:
        page.wait_for_selector("#status:has-text('top-1')", timeout=180_000)  # the forward is done
        page.wait_for_function("t => [...document.querySelectorAll('[role=tab][aria-selected=true]')]"
                               ".some(b => b.innerText.trim() === t)", arg=TABS[tab])  # the link's tab is open
        time.sleep(SETTLE_S)
        errors = _errors(page)
    log = capfd.readouterr()
    assert not errors, f"tab {tab}: error toast(s) {errors}"
    assert "Traceback" not in log.err + log.out, f"tab {tab}: a traceback in the server log:\n{log.err[-3000:]}"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], \
        f"tab {tab}: {[r.getMessage() for r in caplog.records]}"


def test_a_compare_links_layer_sets_the_depth_cursor_and_a_copied_link_keeps_it(trained_url):
    """layer= on the Compare tab is its depth cursor's position (12 layers against the random twin's 12)."""
    twin = "random:vit-tiny-patch16-224"
    with page_at(f"{trained_url}?example=chelsea&tab=compare&compare={twin}&layer=5", height=1400) as page:
        page.wait_for_function("() => (document.querySelector('#cmp-verdict')?.innerText || '').includes('position ')",
                               timeout=180_000)
        verdict = page.inner_text("#cmp-verdict")
        assert "position 5 of 12" in verdict and "A (layer 5/12)" in verdict, verdict
        assert not _errors(page)
        page.locator("#copy-link").click()
        page.wait_for_function("() => document.querySelector('#link-box textarea').value.includes('tab=compare')")
        copied = page.locator("#link-box textarea").input_value()
        assert "layer=5" in copied and f"compare={twin}" in copied, copied
