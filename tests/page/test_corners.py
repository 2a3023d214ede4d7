"""Issue 51's last unreadable corners, measured in Chromium at their sizes: projector mode (1366×900,
?projector=1) and a phone (390×844). Positions from getBoundingClientRect, text sizes from
getComputedStyle; a label is cut where its scrollWidth exceeds its clientWidth."""

from __future__ import annotations

import pytest
from browser import page_at, set_slider, shot, upload, wait_image
from settle import settled
from tiny import EXAMPLES

# Every visible panel label (picture, chart) whose text is cut, as [its block's id, its text].
CUT_LABELS = """() => [...document.querySelectorAll('[data-testid="block-label"]')]
  .filter((l) => l.offsetParent && !l.classList.contains('sr-only') && l.scrollWidth > l.clientWidth + 1)
  .map((l) => [l.closest('.block').id, l.textContent.trim()])"""


def _cat(page) -> None:
    upload(page, str(EXAMPLES / "chelsea.jpg"))
    wait_image(page, "patch-grid")
    page.wait_for_selector("#status:has-text('top-1')")


def test_embeddings_first_picture_is_in_the_first_screen_from_a_projector_link(url):
    with page_at(url + "?example=chelsea&tab=embeddings&projector=1", 1366, 900) as page:
        wait_image(page, "emb-pca")
        settled(page)  # the rest of the tab's answer
        page.evaluate("window.scrollTo(0, 0)")
        top = page.evaluate("document.querySelector('#emb-pca img').getBoundingClientRect().top")
        shot(page, "corners_projector_embeddings_link", full_page=False)
        assert top < 900 - 200, f"the PCA picture starts {top:.0f} px down"


def _cut_labels(page, tabs: tuple[str, ...]) -> dict[str, list]:
    """tab -> the labels cut on it (CUT_LABELS), each tab opened in turn and given time to draw."""
    cut = {}
    for tab in tabs:
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(2500)
        cut[tab] = page.evaluate(CUT_LABELS)
    return cut


@pytest.mark.slow
def test_projector_labels_whole_readout_wide_and_slider_values_whole(url):
    with page_at(url + "?projector=1", 1366, 900) as page:
        _cat(page)
        cut = _cut_labels(page, ("Patches", "Embeddings", "Attention", "Positions"))
        assert not any(cut.values()), f"labels cut in projector mode: {cut}"
        # The upload box's clear button sits inside the box, not on its border.
        x, box = (page.locator(sel).first.bounding_box() for sel in ("#upload button[aria-label='Clear']", "#upload"))
        assert x["y"] >= box["y"] + 6 and x["x"] + x["width"] <= box["x"] + box["width"] - 6, (x, box)
        # Without the corner tab's border: moved in from the corner, its two sides drew a bracket round it.
        sides = page.evaluate("""() => {
            const s = getComputedStyle(document.querySelector('#upload .icon-button-wrapper'));
            return [s.borderLeftWidth, s.borderBottomWidth, s.borderTopWidth, s.borderRightWidth]; }""")
        assert sides == ["0px"] * 4, sides
        page.get_by_role("tab", name="Attention").click()
        wait_image(page, "attn-main")
        set_slider(page, "attn-discard", 0.95)
        settled(page)
        whole = page.evaluate("""() => { const i = document.querySelector('#attn-discard input[type=number]');
            return [i.value, i.scrollWidth, i.clientWidth]; }""")
        assert whole[0] == "0.95" and whole[1] <= whole[2], f"the discard box cuts its value: {whole}"
        # Its limit under the track ("0.95"), whole inside its panel (it showed "0.").
        limit = page.evaluate("""() => { const m = document.querySelector('#attn-discard [data-testid=max-value]');
            return [m.getBoundingClientRect().right,
                    document.querySelector('#attn-discard').getBoundingClientRect().right]; }""")
        assert limit[0] <= limit[1], f"the slider's limit runs past its panel: {limit}"
        # A checkbox's words whole beside a slider ("one shared colour scale" was cut to "one share").
        cut_boxes = page.evaluate("""() => [...document.querySelectorAll('.block input[type=checkbox]')]
            .filter((i) => i.offsetParent).map((i) => { const l = i.closest('label'), b = i.closest('.block');
              return [b.id, l.scrollWidth, l.clientWidth, l.getBoundingClientRect().right,
                      b.getBoundingClientRect().right]; })
            .filter(([, sw, cw, lr, br]) => sw > cw + 1 || lr > br + 1)""")
        assert not cut_boxes, f"checkbox labels cut in projector mode: {cut_boxes}"
        width = page.evaluate("document.querySelector('#attn-readout').getBoundingClientRect().width")
        shot(page, "corners_projector_attention", full_page=True)
        assert width > 700, f"the readout is a {width:.0f} px column"


def _title_below_label(page, elem_id: str) -> dict:
    return page.evaluate("""(id) => { const b = document.querySelector('#' + id);
        const t = b.querySelector('.gtitle'), l = b.querySelector('[data-testid="block-label"]');
        const sizes = [...t.querySelectorAll('tspan'), t].map((e) => parseFloat(getComputedStyle(e).fontSize));
        const r = t.getBoundingClientRect(), g = b.querySelector('.main-svg').getBoundingClientRect();
        return {title: r.top, label: l.getBoundingClientRect().bottom, right: r.right, chart: g.right,
                smallest: Math.min(...sizes)}; }""", elem_id)


@pytest.mark.slow
def test_positions_chart_titles_clear_of_their_labels_whole_and_large_enough(url):
    for query, least in (("", 12), ("?projector=1", 24)):
        with page_at(url + query, 1366, 900) as page:
            _cat(page)
            page.get_by_role("tab", name="Positions").click()
            page.wait_for_selector("#pos-cls .gtitle")
            page.wait_for_timeout(2500 if query else 500)  # projector.js enlarges the charts
            for elem in ("pos-cls", "pos-tile"):
                m = _title_below_label(page, elem)
                assert m["title"] >= m["label"] - 1, (query, elem, m)
                assert m["right"] <= m["chart"] + 1, (query, elem, "title cut", m)
                assert m["smallest"] >= least, (query, elem, m)
            shot(page, f"corners_positions{'_projector' if query else ''}", full_page=False)


def test_phone_charts_without_toolbar_and_labels_whole(url):
    with page_at(url, 390, 844) as page:
        _cat(page)
        cut = _cut_labels(page, ("Patches", "Embeddings", "Attention", "Experiments"))
        assert not any(cut.values()), f"labels cut on a phone: {cut}"
        page.get_by_role("tab", name="Patches").click()
        page.wait_for_selector("#top5 .modebar-container", state="attached")
        shown = page.evaluate("""() => [...document.querySelectorAll('.modebar-container')]
            .filter((m) => m.offsetParent && getComputedStyle(m).display !== 'none').length""")
        assert shown == 0, f"{shown} plotly toolbars over the charts on a phone"
