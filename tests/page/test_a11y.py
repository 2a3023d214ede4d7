"""Issue 51, accessibility: axe-core's WCAG 2.0/2.1 A and AA rules find nothing critical or serious
on the main page with each tab open (after the example cat); a patch of the Patches tab's grid is
chosen by keyboard alone; a Lesson step is answered and revealed by keyboard alone.

axe-core comes from npm (package.json at the repo root; scripts/setup --dev runs npm ci): without
it, the axe test is skipped with one line (CI installs it)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from browser import page_at, upload, wait_image
from settle import settled
from tiny import EXAMPLES

from vizvit.vocab import TABS

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BAD = ("critical", "serious")

# Every violating element of `impacts`: [rule, impact, the element's selector, axe's summary].
RUN_AXE = """async ([tags, impacts]) => {
  const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return r.violations.filter((v) => impacts.includes(v.impact)).flatMap((v) => v.nodes.map((n) =>
    [v.id, v.impact, n.target.join(' '), (n.failureSummary || '').split('\\n').slice(0, 2).join(' ')]));
}"""


def open_every_tab(page, each) -> None:
    """Open each tab in vocab.TABS' order, let its pictures load (lazy ones too: scrolled to), call each(tab_id)."""
    for tab_id, label in TABS.items():
        page.get_by_role("tab", name=label).click()
        settled(page)  # the tab's answers
        height = page.evaluate("document.body.scrollHeight")
        for y in range(0, height, 800):
            page.evaluate(f"window.scrollTo(0, {y})")
            page.wait_for_timeout(100)
        page.evaluate("window.scrollTo(0, 0)")
        settled(page)  # the lazy pictures scrolled to
        each(tab_id)


def axe_violations(url: str, query: str = "", width: int = 1366, height: int = 900) -> dict[str, list]:
    """tab id -> its critical and serious violations (the whole page as it stands with that tab open)."""
    found: dict[str, list] = {}
    with page_at(url + query, width, height) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        page.wait_for_selector("#status:has-text('top-1')")
        page.add_script_tag(path=str(AXE))
        open_every_tab(page, lambda tab_id: found.__setitem__(tab_id, page.evaluate(RUN_AXE, [WCAG_AA, list(BAD)])))
    return found


def _listing(found: dict[str, list]) -> str:
    return "\n".join(f"{tab}: {rule} ({impact}) {target}: {why}"
                     for tab, rows in found.items() for rule, impact, target, why in rows)


@pytest.mark.parametrize("query, width, height", [("", 1366, 900), ("?projector=1", 1366, 900), ("", 390, 844)],
                         ids=["desktop", "projector", "phone"])
@pytest.mark.slow
def test_axe_finds_nothing_critical_or_serious_on_any_tab(url, query, width, height):
    if not AXE.is_file():
        if os.environ.get("CI"):
            pytest.fail("axe-core not installed: scripts/setup --dev runs npm ci")
        pytest.skip("axe-core not installed (npm ci at the repo root)")
    found = axe_violations(url, query, width, height)
    assert not any(found.values()), "axe-core, WCAG 2.1 AA:\n" + _listing(found)


def tab_to(page, selector: str, most: int = 80) -> None:
    """Press Tab until the focused element is inside `selector` (as a keyboard user moves)."""
    for _ in range(most):
        if page.evaluate("(s) => !!document.activeElement && !!document.activeElement.closest(s)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{most} presses of Tab never reached {selector}")


def test_a_patch_is_chosen_with_the_arrow_keys_and_enter(url, tiny16):
    rows, cols = tiny16.geometry.grid
    with page_at(url, 1366, 900) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        page.wait_for_selector(f"#patch-grid.vv-cells-{rows}x{cols}")  # the show's answer: the grid's size
        page.get_by_role("tab", name="Patches").focus()  # where a keyboard user stands after the tabs
        tab_to(page, "#patch-grid .image-container button:not(.icon-button)")
        name = page.evaluate("document.activeElement.getAttribute('aria-label')")
        assert name.startswith("What the model sees") and "Arrow keys" in name, name
        # From the middle cell: two right, one down, then Enter.
        for key in ("ArrowRight", "ArrowRight", "ArrowDown"):
            page.keyboard.press(key)
        mark = page.locator("#patch-grid .vv-cell-mark")
        assert mark.is_visible(), "the focus mark shows the cell the keys are on"
        page.keyboard.press("Enter")
        r, c = rows // 2 + 1, cols // 2 + 2
        page.wait_for_selector(f"#patch-info:has-text('Patch (row {r}, col {c})')", timeout=30_000)
        # The mark sits on that cell of the picture as drawn.
        box, img = mark.bounding_box(), page.locator("#patch-grid img").bounding_box()
        assert abs(box["x"] - (img["x"] + c * img["width"] / cols)) < 3, (box, img)
        assert abs(box["y"] - (img["y"] + r * img["height"] / rows)) < 3, (box, img)


def test_a_lesson_step_is_answered_and_revealed_by_keyboard_alone(url):
    with page_at(url + "?lesson=1&step=2&example=chelsea", 1366, 900) as page:
        page.wait_for_selector("#lesson-step:has-text('Step 2 of')")
        page.wait_for_selector("#status:has-text('top-1')")
        page.wait_for_selector("#lesson-choice input[type=radio]")
        page.get_by_role("tab", name="Lesson").focus()
        tab_to(page, "#lesson-choice")
        page.keyboard.press("Space")  # the first choice
        page.wait_for_timeout(300)
        focused = page.evaluate("document.activeElement.outerHTML.slice(0, 160)")
        page.keyboard.press("ArrowDown")  # the second: arrows move within the group
        checked = page.evaluate("[...document.querySelectorAll('#lesson-choice input')].map((i) => i.checked)")
        assert checked[:2] == [False, True], (checked, focused)
        tab_to(page, "#lesson-reveal")
        page.keyboard.press("Enter")
        page.wait_for_function("() => /Right|Not quite|The answer/"
                               ".test(document.querySelector('#lesson-answer').innerText)",
                               timeout=60_000)


def test_tab_leaves_the_model_list_closed(url):
    """The Model dropdown's list scrolls; Tab from its input went into the list (a scrolling box is a Tab
    stop in Chromium), focus then fell to the page and the list stayed open over the status line."""
    with page_at(url + "?example=chelsea", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        page.focus("#model input")
        page.wait_for_function("() => document.querySelector('#model input').getAttribute('aria-expanded') === 'true'")
        scrolls = page.evaluate("""() => { const l = document.getElementById(
            document.querySelector('#model input').getAttribute('aria-controls'));
            return l.scrollHeight > l.clientHeight; }""")
        assert scrolls, "the case: a list that scrolls"
        page.keyboard.press("Tab")
        page.wait_for_function("() => document.querySelector('#model input').getAttribute('aria-expanded') === 'false'")
        where = page.evaluate("document.activeElement.tagName + ' ' + !!document.activeElement.closest('#model')")
        assert where.split()[0] != "BODY" and where.endswith("false"), where


def test_the_tab_strip_moves_with_the_arrow_keys_home_and_end(url):
    """Gradio's tab strip took Enter only: the arrow keys did nothing (a keyboard user's walk)."""
    names = list(TABS.values())
    with page_at(url + "?example=chelsea", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        page.get_by_role("tab", name=names[0]).focus()

        def now() -> list[str]:
            return page.evaluate("""() => [document.querySelector('[role=tab][aria-selected=true]').innerText.trim(),
                                           document.activeElement.innerText.trim()]""")

        for key, want in (("ArrowRight", names[1]), ("ArrowRight", names[2]), ("ArrowLeft", names[1]),
                          ("End", names[-1]), ("ArrowRight", names[0]), ("ArrowLeft", names[-1]), ("Home", names[0])):
            page.keyboard.press(key)
            page.wait_for_function("(w) => document.querySelector('[role=tab][aria-selected=true]')"
                                   ".innerText.trim() === w", arg=want)
            assert now() == [want, want], (key, now())


def test_the_tab_strip_is_one_tab_stop_the_open_tab(url):
    """WAI-ARIA's tabs pattern: the tab strip is one Tab stop, the open tab; the arrow keys move in it. Each of the
    ten tabs was a Tab stop of its own: a keyboard walk from the open tab to its controls went through the other
    nine (twelve Tabs from the Attention tab to its layer slider, a walk at 1366 px)."""
    with page_at(url + "?example=chelsea&tab=attention", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        settled(page)
        page.get_by_role("tab", name=TABS["attention"]).focus()
        page.keyboard.press("Tab")
        on_tab = page.evaluate("() => document.activeElement.getAttribute('role') === 'tab'")
        assert not on_tab, "Tab went from the open tab to another tab of the strip"
        page.keyboard.press("Shift+Tab")
        back = page.evaluate("() => [document.activeElement.getAttribute('role'), "
                             "document.activeElement.innerText.trim()]")
        assert back == ["tab", TABS["attention"]], back
        page.keyboard.press("ArrowRight")  # the arrow keys open the next tab, which becomes the strip's stop
        page.wait_for_function("(w) => document.querySelector('[role=tab][aria-selected=true]').innerText.trim() === w",
                               arg=TABS["camera"])
        stops = page.evaluate("() => [...document.querySelectorAll('#tabs [role=tab]')].filter((t) => t.tabIndex >= 0)"
                              ".map((t) => t.innerText.trim())")
        assert stops == [TABS["camera"]], stops


# Every other clickable picture (a select handler, or the page's own click drawing): (tab, picture,
# keys from the middle cell, the element whose text says what was picked, that text). The tiny ViT:
# 14 × 14 patches, 2 layers × 2 heads, so the middle cell is (7, 7) of the patches, (1, 1) of the heads.
PICKS = [
    ("Attention", "attn-main", ("ArrowUp", "ArrowLeft"), "#attn-readout", "patch (row 6, col 6)"),
    ("Attention", "attn-grid", ("ArrowUp",), "#attn-readout", "Layer 1 · head 2"),
    ("Embeddings", "emb-pca", ("ArrowDown", "ArrowRight"), "#emb-sim-info", "Patch (row 8, col 8)"),
    ("Embeddings", "emb-sim", ("ArrowLeft", "ArrowLeft", "ArrowLeft"), "#emb-sim-info", "Patch (row 7, col 4)"),
    ("Positions", "pos-grid", ("ArrowRight", "ArrowRight"), "#pos-tile .gtitle", "Position (7, 9)"),
    ("Experiments", "mask-grid", (), "#mask-info", "1 of 196 patches masked"),
    ("Inside", "ablate-grid", ("ArrowLeft",), "#ablate-text", "Switched off (zero): 2.1 "),
]


@pytest.mark.slow
def test_every_clickable_picture_is_named_and_picks_with_the_arrow_keys_and_enter(url):
    """Tab to each picture from its tab, arrow keys, Enter: the same answer a mouse click there gets."""
    with page_at(url, 1366, 900) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        page.wait_for_selector("#status:has-text('top-1')")
        for tab, elem, keys, where, want in PICKS:
            page.get_by_role("tab", name=tab).click()
            page.wait_for_selector(f"#{elem}[class*='vv-cells-'] img", timeout=60_000)  # the show's answer: its cells
            settled(page)  # the tab's other answers (a click is answered after them)
            page.get_by_role("tab", name=tab).focus()
            tab_to(page, f"#{elem} .image-container button:not(.icon-button)")
            name = page.evaluate("document.activeElement.getAttribute('aria-label')")
            assert name and "Arrow keys choose a cell" in name and not name.startswith("picture"), (elem, name)
            for key in (*keys, "Enter"):
                page.keyboard.press(key)
            page.wait_for_selector(f"{where}:has-text('{want}')", timeout=30_000)


def test_section_titles_keep_the_heading_order_at_their_old_size(url):
    """A lecturer's walk (axe, best practice): a tab's section titles were h3 right under the page's h1.
    They are h2 now, drawn at the size h3 had (16 px; the page's h1 stays the one larger title)."""
    if not AXE.is_file():
        pytest.skip("axe-core not installed (npm ci at the repo root)")
    with page_at(url + "?example=chelsea&tab=embeddings") as page:
        page.wait_for_selector("#tabs .prose :is(h2, h3):has-text('The embedding stage')", timeout=60_000)
        page.add_script_tag(path=str(AXE))
        found = page.evaluate("""async () => (await axe.run(document, {
            runOnly: {type: 'rule', values: ['heading-order']}, resultTypes: ['violations']}))
            .violations.flatMap((v) => v.nodes.map((n) => n.target.join(' ')))""")
        assert not found, found
        size = page.evaluate("getComputedStyle(document.querySelector('#tabs .prose h2')).fontSize")
        assert size == "16px", size


def test_a_ticked_checkbox_reached_by_tab_shows_its_focus(url):
    """A walk-through: a ticked checkbox ("grid lines", on by default) looked the same focused or not
    (Gradio sets no outline on it); WCAG 2.4.7 wants the focus visible. Measured: its outline when the Tab
    key lands on it."""
    with page_at(url, 1366, 900) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        page.get_by_role("tab", name="Patches").focus()
        tab_to(page, "#patch-lines input")
        ring = page.evaluate("() => { const e = document.activeElement, s = getComputedStyle(e);"
                             " return [e.checked, s.outlineStyle, parseFloat(s.outlineWidth)]; }")
        assert ring[0] and ring[1] != "none" and ring[2] >= 2, ring


# What a screen reader hears: every text a live region (aria-live other than "off", or role status / alert /
# log) comes to hold, in order; recorded from the page's first script on.
HEARD = """(() => {
  window.__heard = [];
  const live = (n) => { for (let e = n instanceof Element ? n : n.parentElement; e; e = e.parentElement) {
    const a = e.getAttribute('aria-live'), r = e.getAttribute('role');
    if (a === 'off') return null;
    if (a || ['status', 'alert', 'log'].includes(r)) return e; } return null; };
  const last = new WeakMap();
  new MutationObserver((ms) => { for (const m of ms) { const e = live(m.target); if (!e) continue;
    const t = e.textContent.replace(/\\s+/g, ' ').trim();
    if (t && last.get(e) !== t) { last.set(e, t); window.__heard.push(t); } } })
    .observe(document, { childList: true, subtree: true, characterData: true });
})();"""


def heard(page) -> list[str]:
    return page.evaluate("window.__heard.splice(0)")


def test_a_screen_reader_hears_the_answer_to_an_upload_and_to_a_picked_patch(url, tiny16):
    """A walk-through with a screen reader: the page said nothing of its own when a photo's forward pass
    ended or a patch was picked by keyboard (the status line and the patch readout were not live regions),
    and Gradio's own live region said "common.complete" (an untranslated key) after answers. Now the
    settled status line, then the picked patch's readout, are heard, and no "common." key."""
    rows, cols = tiny16.geometry.grid
    with page_at(url, 1366, 900, init_script=HEARD) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        page.wait_for_selector("#status:has-text('top-1')")
        settled(page)
        page.wait_for_timeout(1500)  # the announcement waits for the line to settle
        status = page.inner_text("#status").split("\n")[0]
        top1 = status[status.index("top-1"):].split("·")[0].strip()
        said = heard(page)
        assert any(top1 in s for s in said), (top1, said)
        assert len(said) <= 3, f"one upload, many announcements: {said}"
        page.wait_for_selector(f"#patch-grid.vv-cells-{rows}x{cols}")
        page.get_by_role("tab", name="Patches").focus()
        tab_to(page, "#patch-grid .image-container button:not(.icon-button)")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Enter")
        want = f"Patch (row {rows // 2}, col {cols // 2 + 1})"
        page.wait_for_selector(f"#patch-info:has-text('{want}')", timeout=30_000)
        settled(page)
        page.wait_for_timeout(1500)
        said += heard(page)
        assert any(want in s for s in said), (want, said)
        assert not [s for s in said if "common." in s], said


def test_a_top5_chart_is_named_with_each_class_beside_its_value_the_best_first(url):
    """A screen reader read the top-5 chart as its SVG's loose words: the five percentages, the axis ticks,
    then the five classes, the worst first; no value stood beside its class. Its name now pairs them, the
    top bar first; known answer: the status line's top-1 (the server's words, not the chart's)."""
    with page_at(url + "?example=chelsea", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        settled(page)
        status = page.inner_text("#status").split("\n")[0]
        label, pct = re.search(r"top-1: (.+?) \(([\d.]+%)\)", status).groups()
        page.wait_for_function("() => (document.querySelector('#top5 svg.main-svg[role=img]')"
                               " ?.getAttribute('aria-label') || '').startsWith('Top-5 predictions:')")
        snap = page.locator("#top5").aria_snapshot()
        name = page.evaluate("document.querySelector('#top5 svg.main-svg').getAttribute('aria-label')")
        assert name.startswith(f"Top-5 predictions: {label} {pct}, "), (name, status)
        values = [float(v) for v in re.findall(r" ([\d.]+)%", name)]
        assert len(values) == 5 and values == sorted(values, reverse=True), name
        # One picture, that name (an img's drawn words are presentational); the title's own SVG is out of the tree.
        pictures = [line for line in snap.splitlines() if re.match(r"- '?img", line)]
        assert pictures[0] == f"- 'img \"{name}\"'", pictures  # no loose words of its own
        assert not [line for line in pictures if "Top-5" in line and "%" not in line], pictures


def test_a_wide_table_on_a_phone_keeps_its_numbers_whole_and_scrolls_by_keyboard(trained):
    """A phone (390 px), the trained ViT-Ti's Embeddings tab: the token norms table (13 depths) broke every number
    into one character a line ("1 / 5 / . / 4") and still ran past the screen, in a box that scrolled sideways
    but took no focus: the depths with the artifact tokens (l=8…12) were out of reach of the keys (axe:
    scrollable-region-focusable, serious). Now each number stays on one line, and the table is a Tab stop
    that the arrow keys scroll to its last column."""
    from appserver import running

    with running(trained) as u, page_at(u + "?example=chelsea&tab=embeddings", 390, 844) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        table = "#emb-cls-info table"
        page.wait_for_selector(f"{table} th:has-text('l=12')")
        settled(page)
        # One line per number: a cell no taller than its text's one line (and its padding).
        tall = page.evaluate(f"""() => [...document.querySelectorAll('{table} td')].filter((td) => /^[\\d.]+$/
            .test(td.innerText.trim())).filter((td) => {{ const r = document.createRange(); r.selectNodeContents(td);
            return r.getClientRects().length > 1; }}).map((td) => td.innerText.trim())""")
        assert not tall, f"numbers broken over lines: {tall[:5]}"
        page.get_by_role("tab", name="Embeddings").focus()
        tab_to(page, table, most=120)
        ring = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert ring != "none", "the focused table shows its focus"
        last = f"""() => {{ const th = [...document.querySelectorAll('{table} th')].at(-1),
            t = th.closest('table').getBoundingClientRect(), b = th.getBoundingClientRect();
            return th.innerText.trim() === 'l=12' && b.right <= Math.min(t.right, innerWidth) + 1; }}"""
        assert not page.evaluate(last), "the case: the last depth starts out of sight"
        for _ in range(30):
            page.keyboard.press("ArrowRight")
        page.wait_for_function(last, timeout=5_000)  # Chromium scrolls smoothly: the last steps land later


def test_a_slider_reached_by_tab_shows_its_focus(url):
    """A keyboard walk of the Attention tab: a slider (the layer) looked the same focused or not: Gradio sets
    `outline: none` on its range input and draws nothing else (WCAG 2.4.7). Measured: its outline when the
    Tab key lands on it, and that the arrow keys then move it."""
    with page_at(url + "?example=chelsea&tab=attention", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        settled(page)
        page.get_by_role("tab", name="Attention").focus()
        tab_to(page, "#attn-layer input[type=range]")
        ring = page.evaluate("() => { const s = getComputedStyle(document.activeElement);"
                             " return [s.outlineStyle, parseFloat(s.outlineWidth), s.outlineColor]; }")
        assert ring[0] != "none" and ring[1] >= 2, ring
        before = page.input_value("#attn-layer input[type=range]")
        page.keyboard.press("ArrowLeft")
        assert page.input_value("#attn-layer input[type=range]") == str(int(before) - 1)


# A picture's description (aria-describedby), as a screen reader reads it after the picture's name.
DESCRIPTION = """(sel) => { const b = document.querySelector(sel + ' .image-container button:not(.icon-button)');
  const ids = (b && b.getAttribute('aria-describedby')) || '';
  return ids.split(' ').map((i) => document.getElementById(i)).filter(Boolean).map((e) => e.innerText).join(' '); }"""


def test_a_picture_is_described_by_the_numbers_it_shows(url):
    """A screen reader on the Attention tab heard the map's name only ("Attention map (click a patch…"): nothing of
    what this photo's map says, which the readout under it gives in numbers (the query, the max and where). Each
    picture with such a readout is described by it; known answer: after a keyboard pick the description names the
    picked patch, and agrees with the readout shown."""
    with page_at(url + "?example=chelsea&tab=attention", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        page.wait_for_selector("#attn-main[class*='vv-cells-'] img", timeout=60_000)
        settled(page)
        page.get_by_role("tab", name="Attention").focus()
        tab_to(page, "#attn-main .image-container button:not(.icon-button)")
        for key in ("ArrowUp", "ArrowLeft", "Enter"):
            page.keyboard.press(key)
        page.wait_for_selector("#attn-readout:has-text('patch (row 6, col 6)')", timeout=30_000)
        said = page.evaluate(DESCRIPTION, "#attn-main")
        assert "patch (row 6, col 6)" in said and re.search(r"max\s+[\d.]+ at \(row \d+, col \d+\)", said), said
        assert said == page.inner_text("#attn-readout"), said
        page.get_by_role("tab", name="Patches").click()
        page.wait_for_selector("#patch-grid img")
        info = "document.querySelector('#patch-info').innerText"
        page.wait_for_function(f"() => ({DESCRIPTION})('#patch-grid') === {info} && {info} !== ''", timeout=10_000)


def _contrast_with_white(rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", rgb)[:3])
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 1.05 / (0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2] + 0.05)


# The focused control's strongest ring: [style, width, colour] of its own outline, else of its box's (a dropdown
# draws its frame on a wrapper).
RING = """() => { for (let e = document.activeElement, i = 0; e && i < 4; e = e.parentElement, i++) {
  const s = getComputedStyle(e); if (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0)
    return [s.outlineStyle, parseFloat(s.outlineWidth), s.outlineColor]; } return ['none', 0, '']; }"""


def test_a_dropdown_and_a_number_box_reached_by_tab_show_a_ring_of_3_to_1(url):
    """A keyboard walk, low vision: a focused dropdown (the Model list, Compare's model B, the colour map) showed
    only a 1 px light blue frame (#93c5fd, 1.8:1 on white) and a number box a 1 px orange inset (2.8:1); WCAG
    1.4.11 wants 3:1 for what shows the focus. Measured: the ring's width and contrast when Tab lands there."""
    with page_at(url + "?example=chelsea&tab=attention", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        settled(page)
        page.keyboard.press("Tab")
        tab_to(page, "#model input")
        for where in ("#model input", "#attn-layer input[type=number]"):
            if where != "#model input":
                page.get_by_role("tab", name="Attention").focus()
                tab_to(page, where)
            ring = page.evaluate(RING)
            assert ring[0] != "none" and ring[1] >= 2 and _contrast_with_white(ring[2]) >= 3, (where, ring)


def test_a_tables_chosen_cell_is_ringed_at_3_to_1(url):
    """A keyboard walk's leftover: a Dataframe's chosen cell (the Patches tab's numbers) was ringed in the theme's
    orange (2.8:1 on white), under WCAG 1.4.11's 3:1. Measured: the ring Gradio draws on the cell (its inset
    box-shadow), once a cell is chosen."""
    with page_at(url + "?example=chelsea", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        cell = page.locator("#numbers .body-cell").first
        cell.wait_for(timeout=60_000)
        cell.click()
        page.wait_for_selector("#numbers .body-cell.cell-selected")
        shadow = page.evaluate("getComputedStyle(document.querySelector('#numbers .cell-selected')).boxShadow")
        colours = re.findall(r"rgba?\([^)]*\)", shadow)
        assert colours and all(_contrast_with_white(c) >= 3 for c in colours), shadow


def test_focus_stays_in_the_photo_box_after_a_keyboard_upload_and_a_clear(url):
    """A keyboard and screen-reader walk: Space on the photo box, a file chosen, and the focus fell to the page's
    <body> (Gradio replaces the box's button by the file's row): a screen reader started again from the top. Now
    the focus is on the new file's row; Enter on Clear puts it on the empty box's upload button."""
    with page_at(url, 1366, 900) as page:
        settled(page)  # the page's first calls answered (the box's keys are wired once it has loaded)
        page.keyboard.press("Tab")  # the skip link
        page.keyboard.press("Tab")
        assert page.evaluate("!!document.activeElement.closest('#upload')"), "the photo box is the next Tab stop"
        # Space opens the browser's file chooser (seen here; in a long run of tests Chromium at times opened none):
        # the file goes into the box's input as the chooser puts it, the focus left on the box's button.
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        page.wait_for_selector("#status:has-text('top-1')")
        settled(page)
        where = ("() => { const e = document.activeElement;"
                 " return [e.tagName, !!e.closest('#upload'), e.innerText]; }")
        now = page.evaluate(where)
        assert now[1] and "chelsea" in now[2], now
        for _ in range(5):  # Clear sits above the row: Shift+Tab
            if page.evaluate("document.activeElement.getAttribute('aria-label') === 'Clear'"):
                break
            page.keyboard.press("Shift+Tab")
        page.keyboard.press("Enter")
        page.wait_for_selector("#upload button.upload-container")
        page.wait_for_timeout(300)
        now = page.evaluate(where)
        assert now[0] == "BUTTON" and now[1], now


def test_a_pictures_download_is_one_tab_stop_that_downloads_with_enter(url):
    """A keyboard walk: every picture's Download was two Tab stops, Gradio's link and the button inside it (a
    control in a control), so each picture cost five Tab presses to pass. One stop now, the link, named Download;
    Enter on it downloads the picture."""
    with page_at(url + "?example=chelsea", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        wait_image(page, "patch-grid")
        settled(page)
        page.get_by_role("tab", name="Patches").focus()
        tab_to(page, "#patch-grid")
        stops = []
        while page.evaluate("!!document.activeElement.closest('#patch-grid')") and len(stops) < 10:
            stops.append(page.evaluate("(e => [e.tagName, e.getAttribute('aria-label') || e.innerText.trim()])"
                                       "(document.activeElement)"))
            page.keyboard.press("Tab")
        downloads = [s for s in stops if "Download" in (s[1] or "") or s[0] == "A"]
        assert len(downloads) == 1, stops
        assert page.locator("#patch-grid a[download]").first.get_attribute("tabindex") != "-1"
        page.locator("#patch-grid a[download]").first.focus()
        with page.expect_download() as got:
            page.keyboard.press("Enter")
        assert got.value.suggested_filename


def test_the_photo_box_is_named_for_a_photo(url):
    """A screen reader on the photo box (the Tab stop after the skip link) heard "Click to upload or drop files":
    not that it takes a photo, nor which kinds (its visible label, "Upload a photo (JPEG, PNG, …)", was not tied
    to the button). Its name now starts with that label and keeps the visible words "Click to Upload" (WCAG 2.5.3)."""
    with page_at(url, 1366, 900) as page:
        settled(page)
        page.keyboard.press("Tab")  # the skip link
        page.keyboard.press("Tab")
        page.wait_for_function("() => /photo/.test(document.activeElement.getAttribute('aria-label') || '')",
                               timeout=5_000)
        name = page.evaluate("document.activeElement.getAttribute('aria-label')")
        label = page.inner_text("#upload [data-testid=block-label]").strip()
        assert name.startswith(label) and "Click to Upload" in name, (name, label)


def test_the_methods_link_opens_the_methods_on_this_page_and_keeps_the_photo(url):
    """A walk-through: a tab's "Methods and sources" link (href="#methods") under Gradio's <base href="./"> went to
    "/#methods": the page reloaded without its query, on the Patches tab, with no photo. Now it stays on this page,
    opens the methods and scrolls them up, with the focus on their heading."""
    with page_at(url + "?example=chelsea&tab=inside", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        left = []
        page.on("framenavigated", lambda f: left.append(f.url))
        page.locator("a[href='#methods']:visible").first.click()
        page.wait_for_function("() => (document.querySelector('#methods-text')?.innerText ?? '').includes('Methods')")
        page.wait_for_function("() => Math.abs(document.querySelector('#methods').getBoundingClientRect().top) < 50")
        assert left == [] and page.url.endswith("?example=chelsea&tab=inside"), (left, page.url)
        assert "top-1" in page.inner_text("#status")
        assert page.evaluate("() => !!document.activeElement.closest('#methods')"), "the focus stayed behind"


def test_a_skip_link_is_the_first_tab_stop_shown_on_focus_and_moves_the_focus_to_the_open_tab(url):
    """WCAG 2.4.1: a keyboard user reached a tab's content only past the upload box, the model list, the
    examples and the tab strip. The first Tab stop is a "Skip to main content" link, seen only while focused;
    Enter on it puts the focus in the open tab's panel (the next Tab goes into that tab's controls)."""
    with page_at(url + "?example=chelsea&tab=attention", 1366, 900) as page:  # no click: the first Tab is the page's
        wait_image(page, "attn-main")
        settled(page)
        unfocused = page.evaluate("""() => { const a = document.querySelector('a.vv-skip');
            const r = a && a.getBoundingClientRect();
            return a ? r.right <= 0 || r.bottom <= 0 || r.width <= 1 : null; }""")
        assert unfocused is not False, "the skip link is in sight before it has the focus"
        page.keyboard.press("Tab")
        link = page.evaluate("""() => { const a = document.activeElement, r = a.getBoundingClientRect();
            return {tag: a.tagName, text: a.innerText.trim(), w: r.width, h: r.height, top: r.top, left: r.left}; }""")
        assert link["tag"] == "A" and link["text"] == "Skip to main content", link
        assert link["w"] > 20 and link["h"] > 10 and link["top"] >= 0 and link["left"] >= 0, f"not seen: {link}"
        page.keyboard.press("Enter")
        where = page.evaluate("""() => { const a = document.activeElement, p = a.closest('[role=tabpanel]');
            return {panel: !!p, open: !!p && p.offsetParent !== null, id: a.id}; }""")
        assert where["panel"] and where["open"], f"the focus is not in the open tab's panel: {where}"
        page.keyboard.press("Tab")
        inside = page.evaluate("() => !!document.activeElement.closest('[role=tabpanel]')")
        assert inside, "the Tab after the skip link's target left the tab's panel"


# The open tab's Tab stops in Tab order (DOM order: no positive tabindex on the page), each with its box.
TAB_STOPS = """() => {
  const panel = [...document.querySelectorAll('#tabs [role=tabpanel]')].find((p) => p.offsetParent !== null);
  return [...panel.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]
    .filter((e) => e.tabIndex >= 0 && !e.disabled && e.offsetParent !== null && e.getBoundingClientRect().width > 0)
    .map((e) => { const r = e.getBoundingClientRect();
                  return [(e.closest('[id]') || {}).id + ' ' + (e.getAttribute('aria-label') || e.tagName).slice(0, 40),
                          r.top + scrollY, r.bottom + scrollY]; });
}"""


@pytest.mark.parametrize("query", ["", "&projector=1"])
def test_on_a_phone_the_patches_tabs_tab_order_follows_what_is_seen(url, query):
    """WCAG 2.4.3 and 1.3.2 at 390 px (a report: the grid's two boxes reached by Tab out of their place on screen):
    no Tab stop of the Patches tab lies wholly above the stop before it, and the boxes come after the grid they
    redraw, as they stand under it. (Found in order here before this test; it keeps it so.)"""
    with page_at(url + "?example=chelsea" + query, 390, 844) as page:
        wait_image(page, "patch-grid")
        settled(page)
        stops = page.evaluate(TAB_STOPS)
    names = [s[0] for s in stops]
    grid = next(i for i, n in enumerate(names) if n.startswith("patch-grid What the model sees"))
    boxes = [i for i, n in enumerate(names) if n.startswith(("patch-lines", "patch-indices"))]
    assert len(boxes) == 2 and all(i > grid for i in boxes), names
    assert all(stops[grid][2] <= stops[i][1] for i in boxes), "the boxes are not under the grid"
    back = [(a[0], b[0]) for a, b in zip(stops, stops[1:]) if b[2] <= a[1] - 4]
    assert not back, f"a Tab stop above the one before it: {back}"


# The focused element's block (a picture, a slider, a table): its page box's top and left, its id; in a panel?
FOCUSED = """() => { const e = document.activeElement, b = (e.closest('.block') || e).getBoundingClientRect();
    return [Math.round(b.top + scrollY), Math.round(b.left), (e.closest('[id]') || {}).id || e.tagName,
            !!e.closest('[role=tabpanel]')]; }"""


@pytest.mark.parametrize("tab, first", [("embeddings", "emb-pca"), ("experiments", "shift-view"),
                                        ("compare", "cmp-depth")])
def test_projector_modes_tab_order_follows_the_pictures_first_layout(url, tab, first):
    """WCAG 2.4.3: projector mode shows these tabs' pictures (Compare: its cursor) first with CSS order alone,
    so Tab went from the tab strip to the controls under the pictures (Experiments: dx at 721 px) and then
    jumped back up to the pictures (282 px). Tab now goes down the screen, and Shift+Tab back up the same way."""
    with page_at(url + f"?example=chelsea&tab={tab}&projector=1", 1366, 900) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        page.wait_for_selector(f"#{first}:visible")
        settled(page)
        page.get_by_role("tab", name=TABS[tab]).focus()
        walk = []
        for _ in range(12):
            page.keyboard.press("Tab")
            walk.append(page.evaluate(FOCUSED))
        assert walk[0][2].startswith(first), f"the first stop after the tab is {walk[0]}, not in #{first}"
        # Down the screen: no stop's block starts above a block already passed; along a row, left to right.
        lowest, last = 0, walk[0]
        for stop in walk:
            top, left, where, in_panel = stop
            assert in_panel and top >= lowest - 2, f"Tab went up to {where} at {top} px after {lowest} px: {walk}"
            assert not (top == last[0] and where != last[2] and left < last[1]), f"Tab went left to {where}: {walk}"
            lowest, last = max(lowest, top), stop
        back = []
        for _ in range(11):
            page.keyboard.press("Shift+Tab")
            back.append(page.evaluate(FOCUSED))
        assert back == walk[-2::-1], f"Shift+Tab took another way back: {back}"


def test_a_screen_reader_hears_when_the_shift_sweep_and_the_contest_are_done(url):
    """A keyboard walk at 390 px: Enter on "Run the shift sweep" and "Run the contest" showed a sighted user
    "Done: 33 of 33 shifted views", a chart and a table, and a screen reader heard nothing: neither line was
    said. Now each run's last line is heard once it is done, and no "Running… 8 of 33" step is."""
    with page_at(url + "?example=chelsea&tab=experiments", 390, 844, init_script=HEARD) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        settled(page)
        page.wait_for_timeout(1500)  # what the tab's opening says has been said
        heard(page)
        page.get_by_role("tab", name=TABS["experiments"]).focus()
        tab_to(page, "#sweep-run")
        page.keyboard.press("Enter")
        page.wait_for_function("() => window.__heard.some((t) => t.includes('Done: '))", timeout=120_000)
        said = heard(page)
        assert not [t for t in said if "Running" in t], said
        tab_to(page, "#curves-run")
        page.keyboard.press("Enter")
        page.wait_for_function("() => window.__heard.some((t) => t.startsWith('Tracking p('))", timeout=300_000)
        said = heard(page)
        assert not [t for t in said if "parts so far" in t], said


def test_a_screen_reader_hears_the_compare_verdict_after_the_cursor_moves(url):
    """A keyboard walk: the arrow keys on the Compare tab's depth cursor redrew both models' maps and the verdict
    under it ("position 11 of 12: A (layer 2/2) …"), and a screen reader heard nothing of it. Now the verdict's
    first line is said once the cursor stands still."""
    twin = "random:vit-tiny-patch16-224"  # tests/page/test_compare.py's model B (no download)
    with page_at(f"{url}?tab=compare&compare={twin}", 1366, 900, init_script=HEARD) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        try:
            page.wait_for_function("() => !!document.querySelector('#cmp-verdict')?.innerText"
                                   ".includes('position 12 of 12')", timeout=120_000)
        except Exception as e:  # once in the suite under load, with nothing owed: what the tab showed instead
            e.add_note("the tab: " + repr(page.evaluate("() => [document.querySelector('#cmp-verdict')?.innerText,"
                                                         " document.querySelector('#cmp-model input')?.value]")))
            raise
        settled(page)
        page.get_by_role("tab", name=TABS["compare"]).focus()
        tab_to(page, "#cmp-depth input[type=range]")
        heard(page)
        page.keyboard.press("ArrowLeft")
        # The server's verdict first (after a contest run by the test before, it waits its turn), then its saying.
        page.wait_for_function("() => document.querySelector('#cmp-verdict').innerText.includes('position 11 of 12')",
                               timeout=180_000)
        page.wait_for_function("() => window.__heard.some((t) => t.includes('position 11 of 12'))", timeout=10_000)


def test_a_screen_reader_hears_which_position_tile_was_picked(url):
    """A keyboard walk on the Positions tab: arrow keys and Enter on the grid drew the picked position's tile
    large ("Position (7, 9) …" over the chart), and a screen reader heard nothing (the chart is no readout).
    The chart's title is now said once it is drawn."""
    with page_at(url + "?example=chelsea&tab=positions", 1366, 900, init_script=HEARD) as page:
        page.wait_for_selector("#pos-grid[class*='vv-cells-'] img", timeout=60_000)
        settled(page)
        page.wait_for_timeout(1500)  # what the tab's opening says has been said
        heard(page)
        page.get_by_role("tab", name=TABS["positions"]).focus()
        tab_to(page, "#pos-grid .image-container button:not(.icon-button)")
        for key in ("ArrowRight", "ArrowRight", "Enter"):
            page.keyboard.press(key)
        page.wait_for_selector("#pos-tile .gtitle:has-text('Position (7, 9)')", timeout=30_000)
        page.wait_for_function("() => window.__heard.some((t) => t.includes('Position (7, 9)'))", timeout=10_000)


@pytest.mark.parametrize("width, height", [(1366, 900), (390, 844)], ids=["desktop", "phone"])
def test_axe_finds_nothing_on_the_experiments_tab_after_a_sweep_and_a_contest(url, width, height):
    """The state a keyboard walk leaves: the sweep's and the contest's charts and tables shown (the tab's own
    axe run above sees them empty). Not failing before; kept so: a table or chart added there is checked."""
    if not AXE.is_file():
        if os.environ.get("CI"):
            pytest.fail("axe-core not installed: scripts/setup --dev runs npm ci")
        pytest.skip("axe-core not installed (npm ci at the repo root)")
    with page_at(url + "?example=chelsea&tab=experiments", width, height) as page:
        page.wait_for_selector("#status:has-text('top-1')")
        page.click("#sweep-run")
        page.wait_for_function("() => /Done: /.test(document.querySelector('#sweep-text').innerText)", timeout=120_000)
        page.click("#curves-run")
        page.wait_for_function("() => /^Tracking p\\(/.test(document.querySelector('#curves-text').innerText)",
                               timeout=300_000)
        settled(page)
        page.add_script_tag(path=str(AXE))
        found = page.evaluate(RUN_AXE, [WCAG_AA, ["critical", "serious", "moderate", "minor"]])
        assert not found, "axe-core, WCAG 2.1 AA:\n" + _listing({"experiments": found})


def _ring_sides(page) -> dict[str, float]:
    """The share of the focus blue (#1d4ed8) in a 12-px band across each side of the focused element, read
    from a screenshot (what a sighted keyboard user sees)."""
    import io

    import numpy as np
    from PIL import Image

    page.evaluate("document.activeElement.scrollIntoView({block: 'center'})")
    left, top, right, bottom = (round(v) for v in page.evaluate(
        "(() => { const r = document.activeElement.getBoundingClientRect();"
        " return [r.left, r.top, r.right, r.bottom]; })()"))
    a = np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("RGB")).astype(int)
    blue = (np.abs(a - np.array([0x1D, 0x4E, 0xD8])) < 30).all(-1)

    def band(y0: int, y1: int, x0: int, x1: int) -> float:
        return float(blue[max(0, y0):y1, max(0, x0):x1].mean())

    across, down = (left + 10, right - 10), (top + 10, bottom - 10)
    return {"top": band(top - 6, top + 6, *across), "bottom": band(bottom - 6, bottom + 6, *across),
            "left": band(*down, left - 6, left + 6), "right": band(*down, right - 6, right + 6)}


@pytest.mark.parametrize("query, width, height, elem", [("&tab=experiments&projector=1", 1366, 900, "shift-view"),
                                                         ("&tab=patches", 390, 844, "patch-grid")],
                         ids=["projector", "phone"])
def test_a_focused_picture_shows_its_ring_on_all_four_sides(url, query, width, height, elem):
    """A keyboard walk: a focused picture's ring (3 px, outside the picture by 2 px) was clipped by the picture's
    box to a line along its top; left, right and bottom showed nothing (WCAG 2.4.7)."""
    with page_at(url + "?example=chelsea" + query, width, height) as page:
        page.wait_for_selector(f"#{elem} img")
        settled(page)
        tab = page.evaluate("document.querySelector('[role=tab][aria-selected=true]').innerText.trim()")
        page.get_by_role("tab", name=tab).focus()
        tab_to(page, f"#{elem} .image-container button:not(.icon-button)")
        sides = _ring_sides(page)
        assert all(v >= 0.15 for v in sides.values()), f"the focus ring's share of each side's band: {sides}"
