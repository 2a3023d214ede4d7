"""The Experiments tab in a real browser: mask patches by clicking, shift, sweep, curves."""

from __future__ import annotations

import json
import re
import time

from appserver import held, page_name, photos_read_late, serving
from browser import (
    UPLOAD_FIRST_SEEN,
    click_image_at,
    drop_photo,
    image_src,
    page_at,
    set_slider,
    shot,
    upload_and_open,
    wait_image,
)
from settle import settled
from tiny import EXAMPLES

from page.tabs import experiments as experiments_tab
from vizvit.model.images import image_sha1, load_image
from vizvit.session import PhotoKey
from vizvit.views import experiments


def plot_text(page, elem_id: str) -> str:
    loc = page.locator(f"#{elem_id} .js-plotly-plot")
    return loc.first.inner_text() if loc.count() else ""


def test_click_patches_to_mask_them_and_predictions_update(url):
    with page_at(url, height=1400) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Experiments")
        wait_image(page, "shift-view")
        grid = wait_image(page, "mask-grid")
        page.wait_for_selector("#mask-top5 .js-plotly-plot")
        assert "0 of 196" in page.inner_text("#mask-info")
        before_plot = plot_text(page, "mask-top5")
        before_masked = image_src(page, "masked-view")
        page.locator("#mask-grid").scroll_into_view_if_needed()  # mouse clicks need it on screen
        # Mask patches (row 6, col 6) and (row 7, col 7) of the 14×14 grid.
        click_image_at(page, "mask-grid", 6.5 / 14, 6.5 / 14)
        page.wait_for_function("() => document.querySelector('#mask-info').innerText.includes('1 of 196')")
        grid = wait_image(page, "mask-grid", grid)
        click_image_at(page, "mask-grid", 7.5 / 14, 7.5 / 14)
        page.wait_for_function("() => document.querySelector('#mask-info').innerText.includes('2 of 196')")
        wait_image(page, "mask-grid", grid)
        info = page.inner_text("#mask-info")
        assert "195 tokens" in info and "Δ" in info  # drop mode: [CLS] + 194 patches
        page.wait_for_function(
            "([old]) => { const p = document.querySelector('#mask-top5 .js-plotly-plot');"
            " return p && p.innerText !== old; }", arg=[before_plot])
        # each bar's Δ, written at the chart's right edge (plotly's minus is U+2212): "+1.2 pp", a small one with
        # its size ("-0.03 pp", "+<0.0001 pp"), none "0 pp"
        assert len(re.findall(r"[+\u2212-]<?\d+\.\d+ pp|(?<![\d.])0 pp", plot_text(page, "mask-top5"))) == 5
        wait_image(page, "masked-view", before_masked)
        shot(page, "experiments_masks", full_page=False)
        # Pixel fill: the model now gets all tokens, the pixels are black.
        page.locator("#mask-mode").get_by_text("black").click()
        page.wait_for_function("() => document.querySelector('#mask-info').innerText.includes('(black)')")
        # A preset: top 25 % by rollout.
        page.locator("#mask-top").click()
        page.wait_for_function("() => document.querySelector('#mask-info').innerText.includes('49 of 196')")
        wait_image(page, "masked-view")
        shot(page, "experiments_masks_top25_black", full_page=False)


def test_shift_sweep_and_curves(url):
    with page_at(url, height=1400) as page:
        upload_and_open(page, str(EXAMPLES / "coffee.jpg"), "Experiments")
        old = wait_image(page, "shift-cos")
        set_slider(page, "shift-dx", 16)
        page.wait_for_function("() => document.querySelector('#shift-info').innerText.includes('dx = 16')")
        wait_image(page, "shift-cos", old)
        assert "mean cos 1.000" in page.inner_text("#shift-info")
        page.locator("#shift-view").scroll_into_view_if_needed()
        shot(page, "experiments_shift", full_page=False)
        old = wait_image(page, "shift-cos")
        set_slider(page, "shift-dy", -3)
        page.wait_for_function("() => document.querySelector('#shift-info').innerText.includes('dy = -3')")
        wait_image(page, "shift-cos", old)
        assert "(1, 0) whole patches" in page.inner_text("#shift-info")  # -3/16 rounded toward 0
        shot(page, "experiments_shift_partial", full_page=False)
        page.locator("#sweep-run").click()
        page.wait_for_function("() => document.querySelector('#sweep-text').innerText.includes('Done')")
        page.wait_for_selector("#sweep-plot .js-plotly-plot")
        page.locator("#curves-run").click()
        page.wait_for_function(
            "() => { const t = document.querySelector('#curves-text').innerText;"
            "        return t.includes('views in all, batched') && !t.includes('so far'); }")
        page.wait_for_selector("#deletion-plot .js-plotly-plot")
        assert "del " in plot_text(page, "deletion-plot") and "ins " in plot_text(page, "deletion-plot")
        # The contest's ranking (issue 32): every map ranked, random order as the baseline, what it means.
        text = page.inner_text("#curves-text")
        assert "Ranking:" in text and "random (baseline)" in text and "What it does not" in text
        table = page.inner_text("#auc-table")
        assert "Grad-CAM" in table and "LeGrad" in table and "insertion − deletion" in table
        shot(page, "experiments_full")


def test_a_sweep_waiting_for_a_slot_shows_its_place_in_line_in_the_page(url, monkeypatch):
    """Issue 50: every slot taken by another address, the page's sweep says where it is in line
    (page.jobs.waiting_text), then runs once the slot frees."""
    import threading
    from types import SimpleNamespace

    from page import jobs

    monkeypatch.setattr(jobs.JOBS.jobs, "slots", 1)
    holding, release = threading.Event(), threading.Event()

    def other() -> None:  # another address's job holds the only slot
        with jobs.JOBS.hold(SimpleNamespace(client=SimpleNamespace(host="192.0.2.99"), session_hash="x", headers={}),
                           "deletion curves"):
            holding.set()
            release.wait(60)

    t = threading.Thread(target=other, daemon=True)
    t.start()
    assert holding.wait(10)
    try:
        with page_at(url, height=1400) as page:
            upload_and_open(page, str(EXAMPLES / "coffee.jpg"), "Experiments")
            page.locator("#sweep-run").click()
            page.wait_for_function("() => document.querySelector('#sweep-text').innerText"
                                   ".includes('your shift sweep is next in line')")
            shot(page, "experiments_sweep_waiting", full_page=False)
            release.set()
            page.wait_for_function("() => document.querySelector('#sweep-text').innerText.includes('Done')")
    finally:
        release.set()
        t.join(10)


def test_a_shift_moved_while_the_opens_charts_are_computed_keeps_its_own_chart(tiny16, monkeypatch):
    """The review's race (page/follow_up.py): the tab's follow-up reads dx = 0 and is sent; dx moves
    to 8 just after; the follow-up is the slow one (held 1.5 s here), so the shift's own answer ends
    first. The top-5 chart must stay dx = 8's: before the fix, dx = 0's landed last, beside dx = 8's
    picture. Checked against the server's own chart for each shift."""
    sent, done = held(monkeypatch, experiments_tab, "show_charts", 1.5)
    photo = str(EXAMPLES / "chelsea.jpg")
    with serving(tiny16) as (url, wb), page_at(url, height=1400) as page:
        upload_and_open(page, photo, "Experiments")
        wait_image(page, "mask-grid")
        deadline = time.monotonic() + 60
        while not sent.is_set() and time.monotonic() < deadline:
            page.wait_for_timeout(20)
        assert sent.is_set(), "the tab's charts were never asked for"
        set_slider(page, "shift-dx", 8)
        ph = wb.handle(PhotoKey(page_name(tiny16), image_sha1(load_image(photo))))
        bars = {dx: json.loads(experiments.shift_panel(ph, dx, 0, "edge").top5.to_json())["data"][0]["x"]
                for dx in (0, 8)}
        assert bars[0] != bars[8]
        shows = """([bars]) => { const gd = document.querySelector('#shift-top5 .js-plotly-plot');
            return gd && gd.data && JSON.stringify(Array.from(gd.data[0].x)) === JSON.stringify(bars); }"""
        page.wait_for_function(shows, arg=[bars[8]], timeout=30000)
        assert done.wait(30), "the follow-up never ended"
        settled(page)  # every answer in, the follow-up's too
        assert page.evaluate(shows, [bars[8]]), "the open's chart for dx = 0 landed over dx = 8's"


def run_contest(page, steps: int | None = None) -> None:
    """Press Run the contest (its steps slider set first, if given) and wait for its verdict. The photo's
    analysis first: a link's example is still on its way on a loaded machine, and a click then met no photo
    ("Upload a photo first.": a full suite's run waited 300 s for a verdict that was never asked for)."""
    page.wait_for_selector("#status:has-text('top-1')", timeout=120_000)
    if steps is not None:
        set_slider(page, "curves-steps", steps)
    page.click("#curves-run")
    page.wait_for_selector("#curves-text:has-text('Verdict')", timeout=300_000)


def test_run_clicked_on_a_deep_link_before_its_photo_is_in_runs_once_it_is(tiny16):
    """A walk-through: ?example=chelsea&tab=experiments opened and Run clicked at once, the example still being
    read: the page said "Upload a photo first." with the photo in its box. Now the click waits (web/run_waits.js),
    says so, and runs once the photo's key is in; the status line says the example is being read. The server reads
    each photo 3 s late here (a loaded machine)."""
    with serving(tiny16) as (url, wb):
        photos_read_late(wb)
        with page_at(url + "?example=chelsea&tab=experiments", wait_for="#curves-run",
                     init_script=UPLOAD_FIRST_SEEN) as page:
            page.click("#curves-run")
            page.wait_for_selector(".vv-run-wait, .toast-body", timeout=10_000)
            assert page.evaluate("window.__seen") == [], "said 'Upload a photo first' with the photo on its way"
            assert "still being read" in page.inner_text(".vv-run-wait")
            assert "top-1" not in page.inner_text("#status")  # it was clicked before the photo was in
            # The status line says what is happening (it said "Upload a photo or pick an example to begin.").
            page.wait_for_selector("#status:has-text('Reading the example chelsea.jpg')", timeout=10_000)
            page.wait_for_selector("#curves-text:has-text('Verdict')", timeout=300_000)
            assert page.locator(".vv-run-wait").count() == 0
            assert page.evaluate("window.__seen") == []
        # A link whose example does not exist: no photo comes, the held click goes through and is answered truly.
        with page_at(url + "?example=no-such-photo&tab=experiments", wait_for="#curves-run") as page:
            page.click("#curves-run")
            page.wait_for_selector(".toast-body:has-text('Upload a photo first')", timeout=60_000)
            assert page.locator(".vv-run-wait").count() == 0


def test_on_a_phone_the_charts_legend_sits_below_the_axis_title_and_the_title_fits(url):
    """A walk-through at 390 px: the sweep's and the contest's legends (placed a quarter of the plot's height
    below it) sat on the x axis's title, and their one-line titles were cut at the chart's edge. Measured in
    the browser: the legend starts below the axis title, and every title line ends inside the chart."""
    with page_at(url + "?example=chelsea&tab=experiments", width=390, height=844, wait_for="#sweep-run") as page:
        page.wait_for_selector("#status:has-text('top-1')", timeout=120_000)  # the link's photo analysed
        page.click("#sweep-run")
        page.wait_for_function("() => /33 of 33|33\\/33/.test(document.querySelector('#sweep-plot')?.innerText)",
                               timeout=120_000)
        run_contest(page)
        for plot in ("sweep-plot", "deletion-plot"):
            page.wait_for_selector(f"#{plot} .js-plotly-plot .legend")
            box = page.evaluate("""(id) => {
                const gd = document.querySelector('#' + id + ' .js-plotly-plot');
                const r = (s) => gd.querySelector(s).getBoundingClientRect();
                const lines = [...gd.querySelectorAll('.gtitle, .gtitle tspan')]
                    .map((e) => e.getBoundingClientRect().right);
                const bottoms = [...gd.querySelectorAll('.gtitle, .gtitle tspan')]
                    .map((e) => e.getBoundingClientRect().bottom);
                return { legend: r('.legend').top, xtitle: r('.g-xtitle').bottom,
                         right: gd.getBoundingClientRect().right, title: Math.max(...lines),
                         titleBottom: Math.max(...bottoms), plotTop: r('.nsewdrag').top,
                         plot: r('.nsewdrag').height };
            }""", plot)
            assert box["legend"] >= box["xtitle"], (plot, box)
            assert box["title"] <= box["right"] + 1, (plot, box)
            assert box["titleBottom"] <= box["plotTop"], (plot, box)  # a wrapped title stays above the plot
            assert box["plot"] > 150, (plot, box)  # the plot itself is not squeezed by the legend


def test_a_contest_shown_says_it_is_for_the_old_settings_once_they_change_until_run_again(url):
    """The contest's chart, table and verdict stayed up as if current after its steps or its fill changed (a
    walk-through): they now carry a line that says which settings they are for, until the contest is run
    again; back to the settings it ran with, the line goes. A new photo shows its own contest (or none)."""
    note = "#curves-stale"
    says = "() => (document.querySelector('#curves-stale')?.innerText || '').trim()"
    with page_at(url + "?example=chelsea&tab=experiments", height=1400, wait_for="#curves-run") as page:
        run_contest(page, steps=3)
        settled(page)
        assert page.evaluate(says) == "", "a contest just run is said to be old"
        set_slider(page, "curves-steps", 5)
        page.wait_for_function(f"() => ({says})().includes('3 steps')", timeout=10_000)
        text = page.evaluate(says)
        assert "5 steps" in text and experiments.CONTEST_BUTTON.split(" (")[0] in text, text
        assert page.locator(note).is_visible()
        # and a screen reader hears it (web/a11y.js's polite region), as it hears a readout's answer
        page.wait_for_function("() => (document.querySelector('#vv-said')?.textContent || '').includes('3 steps')",
                               timeout=10_000)
        set_slider(page, "curves-steps", 3)  # back to the settings it ran with
        page.wait_for_function(f"() => ({says})() === ''", timeout=10_000)
        page.locator("#curves-mode").get_by_text("blur").click()
        page.wait_for_function(f"() => ({says})().includes('blur')", timeout=10_000)
        page.locator("#curves-mode").get_by_text("black").click()
        page.wait_for_function(f"() => ({says})() === ''", timeout=10_000)
        # another photo: the tab shows that photo's own contest, none yet, and no old one with a line over it
        drop_photo(page, str(EXAMPLES / "coffee.jpg"))
        page.wait_for_selector("#curves-text:has-text('has not been run on this photo')", timeout=60_000)
        assert page.evaluate(says) == ""
        set_slider(page, "curves-steps", 5)  # nothing on show: nothing to call old
        settled(page)
        assert page.evaluate(says) == ""
        run_contest(page, steps=3)
        page.wait_for_function(f"() => ({says})() === ''", timeout=10_000)


def test_attention_flow_computed_after_the_contest_ran_puts_a_line_over_it(url):
    """Attention flow computed on the Attention tab joins the contest's maps (the button counts it), but the
    contest on show, run before, ranked the others and nothing said so. The line comes as the flow lands, seen
    when the Experiments tab is opened again, with the contest still on show; the contest run again clears it."""
    says = "() => (document.querySelector('#curves-stale')?.textContent || '').trim()"
    ranked = "() => document.querySelector('#auc-table')?.innerText || ''"
    with page_at(url + "?example=astronaut&tab=experiments", height=1400, wait_for="#curves-run") as page:
        run_contest(page, steps=3)
        settled(page)
        assert page.evaluate(says) == "" and "attention flow" not in page.evaluate(ranked)
        page.get_by_role("tab", name="Attention").click()
        page.locator("#attn-method input").click()
        page.get_by_role("option", name="attention flow", exact=True).click()
        page.wait_for_selector("#attn-relevance-text:has-text('attention flow from the summary')", timeout=120_000)
        # said as the flow lands, while the Experiments tab is closed (it was said on no event before)
        page.wait_for_function(f"() => ({says})().includes('attention flow')", timeout=30_000)
        page.get_by_role("tab", name="Experiments").click()
        settled(page)
        line = page.evaluate(says)
        assert "Not every map" in line and "attention flow" in line, line
        assert page.locator("#curves-stale").is_visible()
        assert "rollout" in page.evaluate(ranked) and "attention flow" not in page.evaluate(ranked)
        page.locator("#curves-stale").scroll_into_view_if_needed()
        shot(page, "experiments_contest_before_flow", full_page=False)
        page.click("#curves-run")
        page.wait_for_function(f"() => ({ranked})().includes('attention flow')", timeout=300_000)
        page.wait_for_function(f"() => ({says})() === ''", timeout=10_000)


def test_drop_picked_with_every_patch_masked_puts_the_radio_back_on_the_readouts_mode(url):
    """The walk-through: every patch masked in black, then drop picked: a toast said why, and the radio stayed on
    drop beside the black readout ("196 of 196 patches masked (black)"). Now it goes back to black."""
    with page_at(url, height=1400) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Experiments")
        wait_image(page, "mask-grid")
        page.locator("#mask-mode").get_by_text("black").click()
        page.wait_for_function("() => document.querySelector('#mask-info').innerText.includes('(black)')")
        page.locator("#mask-invert").click()  # the empty mask inverted: every patch
        page.wait_for_function("() => document.querySelector('#mask-info').innerText.includes('196 of 196')")
        page.locator("#mask-mode").get_by_text("drop").click()
        page.wait_for_selector(".toast-body:has-text('Every patch is masked')", timeout=60_000)
        page.wait_for_function("() => document.querySelector('#mask-mode input:checked')?.value === 'black'",
                               timeout=30_000)
        settled(page)
        assert page.locator("#mask-mode input:checked").get_attribute("value") == "black"
        assert "196 of 196 patches masked (black)" in page.inner_text("#mask-info")


def test_a_sweep_shown_says_it_is_for_the_old_fill_once_the_fill_changes(url):
    """Trained ViT-Ti, chelsea: the edge sweep's chart and table stayed up, its text "edge fill", under the fill
    control's wrap. As the contest does when its settings move, a line now says the sweep is for the old fill
    until it is run again; back to the fill it ran with, the line goes."""
    says = "() => (document.querySelector('#sweep-stale')?.innerText || '').trim()"
    with page_at(url + "?example=chelsea&tab=experiments", height=1400, wait_for="#sweep-run") as page:
        wait_image(page, "shift-view")
        page.locator("#sweep-run").click()
        page.wait_for_function("() => document.querySelector('#sweep-text').innerText.includes('Done')")
        settled(page)
        assert page.evaluate(says) == "", "a sweep just run is said to be old"
        page.locator("#shift-fill").get_by_text("wrap").click()
        page.wait_for_function(f"() => ({says})().includes('wrap fill')", timeout=10_000)
        text = page.evaluate(says)
        assert "run with the edge fill" in text and experiments.SWEEP_BUTTON in text, text
        assert page.locator("#sweep-stale").is_visible()
        # and a screen reader hears it (web/a11y.js's polite region), as it hears the contest's line
        page.wait_for_function("() => (document.querySelector('#vv-said')?.textContent || '')"
                               ".includes('Not for the fill now')", timeout=10_000)
        page.locator("#sweep-stale").scroll_into_view_if_needed()
        shot(page, "experiments_sweep_old_fill", full_page=False)
        page.locator("#shift-fill").get_by_text("edge").click()  # back to the fill it ran with
        page.wait_for_function(f"() => ({says})() === ''", timeout=10_000)
        page.locator("#shift-fill").get_by_text("constant").click()
        page.wait_for_function(f"() => ({says})().includes('constant fill')", timeout=10_000)
        page.locator("#sweep-run").click()  # run again under constant: the line goes
        page.wait_for_function("() => document.querySelector('#sweep-text').innerText.includes('Done: 33 of 33 "
                               "shifted views, constant fill')", timeout=120_000)
        page.wait_for_function(f"() => ({says})() === ''", timeout=10_000)
