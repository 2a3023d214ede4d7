"""Issue 27, a tab's first open: a tab's slow part follows its first picture, and each closed tab's
first picture is drawn ahead. That no layout container is an event output: tests/page/test_events.py."""

from __future__ import annotations

import json
import threading

import gradio as gr
import numpy as np
import pytest
from browser import image_src, page_at, served_path, set_slider, upload, upload_and_open, wait_image
from built_page import picture
from PIL import Image
from settle import settled
from tiny import EXAMPLES

from page import kit, shell, web
from vizvit.model import engine
from vizvit.session import Workbench


@pytest.mark.parametrize("tab_id, first_pic, later", [
    ("positions", "pos-grid", {"pos-res-grid", "pos-res-top5", "pos-res-text"}),
    # tokens: the clicked-token book
    ("embeddings", "emb-pca", {"emb-scatter", "emb-cls", "emb-filters", "emb-tokens"}),
    ("experiments", "mask-grid", {"shift-top5", "mask-top5"}),
    ("attention", "attn-main", {"attn-distance", "attn-pick"}),
    ("inside", "ablate-grid", {"lens-plot", "lens-top5", "ablate-top5"}),
])
def test_a_tabs_slow_part_is_a_follow_up_not_in_its_first_answer(tiny16, tab_id, first_pic, later):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    with gr.Blocks():
        ctx = kit.Ctx(wb=wb, key=gr.State(None), tab=gr.State("patches"), status=gr.Markdown(),
                      default_model=tiny16.id)
        with gr.Tabs():
            with gr.Tab(tab_id, id=tab_id) as t:
                shell.PAGES[tab_id].build(ctx, t)
    (_, _, _, first), = [s for s in ctx.shows if s[0] == tab_id]
    (_, _, _, rest), = [s for s in ctx.thens if s[0] == tab_id]
    ids = lambda cs: {c.elem_id for c in cs}  # noqa: E731
    assert first_pic in ids(first) and not ids(first) & later
    assert ids(rest) == later


def test_the_positions_grid_paints_while_the_forward_at_another_size_still_runs(tmp_path, tiny16, monkeypatch):
    """The forward at 384 px is held until the grid is on screen: the grid must not wait for it."""
    from appserver import running

    release, started = threading.Event(), threading.Event()
    real = engine.predict_at_size

    def held(*a, **k):
        started.set()
        release.wait(60)
        return real(*a, **k)

    monkeypatch.setattr(engine, "predict_at_size", held)
    photo = tmp_path / "new.png"  # a photo no other test has cached
    Image.fromarray(np.random.default_rng(3).integers(0, 255, (240, 260, 3), dtype=np.uint8)).save(photo)
    with running(tiny16) as url, page_at(url) as page:
        try:
            upload_and_open(page, str(photo), "Positions")
            wait_image(page, "pos-grid")
            page.wait_for_selector("#pos-tile .js-plotly-plot")
            assert started.wait(30), "the follow-up never asked for the forward at 384 px"
            assert "At 384" not in page.inner_text("#pos-res-text")
        finally:
            release.set()
        page.wait_for_function("() => document.querySelector('#pos-res-text').innerText.includes('At 384')")
        page.locator("#pos-res-grid").scroll_into_view_if_needed()  # a lazy <img>: loaded once in view
        wait_image(page, "pos-res-grid")


def test_a_new_photos_follow_up_starts_the_other_tabs_preparation(tiny16, monkeypatch):
    """The key's follow-up event (sent once the open tab's answer is painted) hands the photo to
    Workbench.prepare_later; the open tab's own event does not wait for it."""
    from vizvit.session import PhotoKey

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    asked = []
    monkeypatch.setattr(wb, "prepare_later", asked.append)
    demo = shell.build_demo(wb, tiny16.id)
    fns = {getattr(f.fn, "__name__", ""): f for f in demo.fns.values()}
    key = PhotoKey(wb.catalog.public(tiny16.id), wb.add_photo(str(shell.EXAMPLES[0])))

    def call(name: str) -> None:  # the event's function on its inputs' values, the session key set
        f = fns[name]
        f.fn("patches", *[key if getattr(c, "time_to_live", None) == shell.SESSION_TTL_S else c.value
                          for c in f.inputs[1:]])

    call("dispatch")
    assert asked == [], "the open tab's own answer started the preparation (it competes with its encoding)"
    call("dispatch_then")
    assert asked == [key]


# Each closed tab's first picture, drawn ahead for a new photo (kit.Ctx.show_visible): the tab opens
# with it in place, before (and without) its own select event's answer.
FIRSTS = {"patches": "patch-grid", "embeddings": "emb-pca", "attention": "attn-main", "positions": "pos-grid",
          "experiments": "mask-grid", "inside": "ablate-grid"}
AHEAD_OUTS = [*FIRSTS.values(), "attn-book"]  # the Attention tab's map book is sent with its map


def _event_values(f, key, tab: str) -> list:
    """An event's inputs as a fresh page sends them: the session key set, `tab` the open tab (the
    work ahead's first input too: the open tab as the page shows it)."""
    lead = 2 if getattr(f.fn, "__name__", "") == "ahead" else 1
    return [key if getattr(c, "time_to_live", None) == shell.SESSION_TTL_S else tab if i < lead else c.value
            for i, c in enumerate(f.inputs)]


def test_the_work_ahead_brings_each_closed_tabs_first_picture_as_its_own_select_draws_it(tiny16):
    from vizvit.session import PhotoKey

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    ahead, = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "ahead"]
    assert sorted(c.elem_id for c in ahead.outputs) == sorted(AHEAD_OUTS)
    key = PhotoKey(wb.catalog.public(tiny16.id), wb.add_photo(str(shell.EXAMPLES[0])))
    got = dict(zip((c.elem_id for c in ahead.outputs), ahead.fn(*_event_values(ahead, key, "attention"))))
    assert isinstance(got.pop("attn-main"), type(gr.skip())), "the open tab is its own event's: none ahead"
    assert isinstance(got.pop("attn-book"), type(gr.skip()))
    by_tab = {t._id: t.id for t in demo.blocks.values() if isinstance(t, gr.Tab)}
    for f in demo.fns.values():  # each tab's select event (its on_show), on the same inputs
        tab = next((by_tab[b] for b, ev in f.targets if ev == "select" and b in by_tab), None)
        outs = {c.elem_id: i for i, c in enumerate(f.outputs)}
        if tab not in FIRSTS or FIRSTS[tab] not in outs or tab == "attention":
            continue
        res = f.fn(*_event_values(f, key, tab))
        own = next(v for c, v in res.items() if c.elem_id == FIRSTS[tab])
        ours = got.pop(FIRSTS[tab])
        if isinstance(own, dict):  # an update carrying the picture (Patches: the grid's cells as its class)
            assert isinstance(ours, dict) and ours.get("elem_classes") == own.get("elem_classes"), tab
            ours, own = ours.get("value"), own.get("value")
        assert isinstance(ours, np.ndarray) and np.array_equal(ours, own), tab
    assert not got, f"no select event draws {sorted(got)}"


def test_the_work_ahead_skips_a_tab_whose_view_fails_and_yields_to_another_visitors(tiny16, monkeypatch):
    from vizvit.session import PhotoKey

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    ahead, = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "ahead"]
    key = PhotoKey(wb.catalog.public(tiny16.id), wb.add_photo(str(shell.EXAMPLES[0])))
    from vizvit.views import positions

    def broken(*a, **k):
        raise RuntimeError("a view that fails")

    monkeypatch.setattr(positions, "show", broken)
    got = dict(zip((c.elem_id for c in ahead.outputs), ahead.fn(*_event_values(ahead, key, "patches"))))
    assert isinstance(got["pos-grid"], type(gr.skip())) and isinstance(picture(got["attn-main"]), np.ndarray)
    # The new photo's map book with the new map (the page would draw the old photo's maps, and a
    # layer moved as the tab opens waited for the tab's own answer): the one its select brings.
    book = json.loads(got["attn-book"])
    assert key.sha1 in book["photo"] and book["index"], "not this photo's book"
    def opens_attention(f) -> bool:
        return any(ev == "select" and getattr(demo.blocks.get(b), "id", None) == "attention" for b, ev in f.targets)

    select, = [f for f in demo.fns.values() if "attn-book" in {c.elem_id for c in f.outputs} and opens_attention(f)]
    own = select.fn(*_event_values(select, key, "attention"))
    assert got["attn-book"] == next(v for c, v in own.items() if c.elem_id == "attn-book")
    # The tab open in the page as the event is sent (open_tab.js) wins over the session's tab state,
    # which may not have heard of it yet: that tab is not drawn ahead over.
    vals = _event_values(ahead, key, "patches")
    vals[0] = "attention"
    got = dict(zip((c.elem_id for c in ahead.outputs), ahead.fn(*vals)))
    assert isinstance(got["attn-main"], type(gr.skip())) and isinstance(got["attn-book"], type(gr.skip()))
    assert isinstance(got["patch-grid"]["value"], np.ndarray)  # an update carrying the grid and its cells
    assert kit._AHEAD.acquire(blocking=False)  # another visitor's work ahead is running
    try:
        assert all(isinstance(v, type(gr.skip())) for v in ahead.fn(*_event_values(ahead, key, "patches")))
    finally:
        kit._AHEAD.release()


# In the browser: the join requests of chosen events held back (Playwright routes), by fn index.
DEPS = """(firsts) => { const c = window.gradio_config, id = (e) => c.components.find((x) => x.props.elem_id === e).id;
  const tab = (name) => c.components.find((x) => x.type === 'tabitem' && x.props.label === name).id;
  const att = tab('Attention'), main = id('attn-main'), ids = firsts.map(id).sort().join();
  const ahead = c.dependencies.filter((d) => [...d.outputs].sort().join() === ids);
  const open = c.dependencies.filter((d) => d.targets.some(([t, e]) => t === att && e === 'select')
    && d.outputs.includes(main));
  return [ahead.map((d) => d.id), open.map((d) => [d.id, d.outputs.length])]; }"""


def _hold(page, fn_ids: set[int]) -> list:
    """Hold back the queue join of each event in fn_ids (until each held route is continued)."""
    held = []

    def route(r):
        body = r.request.post_data_json or {}
        if body.get("fn_index") in fn_ids:
            held.append(r)
        else:
            r.continue_()
    page.route("**/gradio_api/queue/join*", route)
    return held


def test_a_closed_tab_opens_with_its_picture_before_its_own_answer(tmp_path, tiny16):
    from appserver import running

    photo = tmp_path / "ahead.png"
    Image.fromarray(np.random.default_rng(5).integers(0, 255, (230, 250, 3), dtype=np.uint8)).save(photo)
    with running(tiny16) as url, page_at(url) as page:
        (ahead,), ((opened, _),) = page.evaluate(DEPS, AHEAD_OUTS)
        held = _hold(page, {opened})
        upload(page, str(photo))
        wait_image(page, "patch-grid")
        # The closed tabs' pictures drawn ahead are in the page (web/preload.js has them): a tab
        # opened before then would cancel them.
        page.wait_for_function("() => (window.__vizvitPreloaded || []).length >= 5", timeout=60_000)
        page.get_by_role("tab", name="Attention").click()
        src = wait_image(page, "attn-main", timeout_ms=30_000)  # the tab's own event is still held
        assert held and page.inner_text("#attn-readout").strip() == "", "the tab's own answer came already"
        for r in held:
            r.continue_()
        page.wait_for_function("() => document.querySelector('#attn-readout').innerText.trim() !== ''")
        settled(page)
        assert image_src(page, "attn-main") == src, "the tab's own answer brought another picture"


def test_a_reopened_attention_tab_keeps_the_new_photos_map_until_its_answer(tmp_path, tiny16):
    """The Attention tab, opened for one photo, then again for the next: the map drawn ahead shows,
    and the page never draws the photo before's maps over it (its map book is cleared with it)."""
    from appserver import running

    photos = []
    for seed in (8, 9):
        photos.append(tmp_path / f"p{seed}.png")
        Image.fromarray(np.random.default_rng(seed).integers(0, 255, (230, 250, 3), dtype=np.uint8)).save(photos[-1])
    with running(tiny16) as url, page_at(url) as page:
        _, ((opened, _),) = page.evaluate(DEPS, AHEAD_OUTS)
        upload_and_open(page, str(photos[0]), "Attention")
        before = wait_image(page, "attn-main")
        page.wait_for_function("() => document.querySelector('#attn-readout').innerText.trim() !== ''")
        page.get_by_role("tab", name="Patches").click()
        grid = image_src(page, "patch-grid")
        page.locator("#upload button[aria-label='Clear']").first.click()
        page.wait_for_selector("#upload input[type=file]", state="attached")
        held = _hold(page, {opened})
        upload(page, str(photos[1]))
        wait_image(page, "patch-grid", old=grid)
        drawn = wait_image(page, "attn-main", old=before)  # in the closed tab: drawn ahead
        assert not drawn.startswith("data:")
        readout = page.inner_text("#attn-readout")
        page.get_by_role("tab", name="Attention").click()
        page.wait_for_timeout(800)  # the map script redraws within 100 ms of a change it did not make
        assert held and image_src(page, "attn-main") == drawn, "the photo before's maps were drawn over the new map"
        for r in held:
            r.continue_()
        page.wait_for_function("(t) => document.querySelector('#attn-readout').innerText !== t", arg=readout)
        settled(page)
        assert image_src(page, "attn-main") == drawn


def test_a_reopened_tab_never_shows_the_photo_before_while_its_own_answer_comes(trained):
    """On the trained ViT-Ti, the Attention tab opened for one example, then reopened for the next
    once its map is drawn ahead, its own event not held: from the click until its answer and
    follow-ups are in, the tab shows only the new map, never the photo before's."""
    from appserver import running
    from tiny import EXAMPLES

    photos = [EXAMPLES / "astronaut.jpg", EXAMPLES / "chelsea.jpg"]
    with running(trained) as url, page_at(url) as page:
        upload_and_open(page, str(photos[0]), "Attention")
        before = wait_image(page, "attn-main")
        settled(page)  # the tab's follow-ups are in
        page.get_by_role("tab", name="Patches").click()
        grid = image_src(page, "patch-grid")
        page.locator("#upload button[aria-label='Clear']").first.click()
        page.wait_for_selector("#upload input[type=file]", state="attached")
        page.evaluate("""() => { const seen = window.__seen = []; new MutationObserver(() => {
            const s = document.querySelector('#attn-main img')?.getAttribute('src'); if (s) seen.push(s); })
            .observe(document.body, {subtree: true, childList: true, attributes: true}); }""")
        page.evaluate("() => { window.__pre0 = window.__vizvitPreloaded; }")
        upload(page, str(photos[1]))
        wait_image(page, "patch-grid", old=grid)
        page.wait_for_function("() => window.__vizvitPreloaded && window.__vizvitPreloaded !== window.__pre0",
                               timeout=60_000)
        drawn = wait_image(page, "attn-main", old=before)  # in the closed tab: drawn ahead
        page.evaluate("() => { window.__seen.length = 0; }")
        page.get_by_role("tab", name="Attention").click()
        settled(page)  # the tab's own answer and its follow-ups
        seen = set(page.evaluate("() => window.__seen"))
        assert before not in seen and image_src(page, "attn-main") == drawn, "the photo before's map came back"


def test_a_reopened_tabs_flipbook_of_the_photo_before_never_draws_over_the_new_picture(tmp_path, tiny16):
    """The Embeddings tab opened for one photo, then again for the next: a depth moved before the
    tab's own answer is not drawn from the photo before's depth book (flipbook.js) over the PCA drawn
    ahead; the event goes to the server, which draws it for the new photo."""
    from appserver import running
    from browser import wait_flip_pages

    photos = []
    for seed in (10, 11):
        photos.append(tmp_path / f"p{seed}.png")
        Image.fromarray(np.random.default_rng(seed).integers(0, 255, (230, 250, 3), dtype=np.uint8)).save(photos[-1])
    with running(tiny16) as url, page_at(url) as page:
        tab_id = page.evaluate("() => gradio_config.components.find((x) => x.type === 'tabitem'"
                               " && x.props.label === 'Embeddings').id")
        opened = page.evaluate("""(t) => gradio_config.dependencies
            .filter((d) => d.targets.some(([i, e]) => i === t && e === 'select') && d.outputs.length > 3)
            .map((d) => d.id)""", tab_id)
        upload_and_open(page, str(photos[0]), "Embeddings")
        before = wait_image(page, "emb-pca")
        wait_flip_pages(page, "emb-depth", 3)
        old_pages = page.evaluate("() => [...window.__vizvitFlip.books['emb-depth'].urls]")
        page.get_by_role("tab", name="Patches").click()
        grid = image_src(page, "patch-grid")
        page.locator("#upload button[aria-label='Clear']").first.click()
        page.wait_for_selector("#upload input[type=file]", state="attached")
        held = _hold(page, set(opened))
        upload(page, str(photos[1]))
        wait_image(page, "patch-grid", old=grid)
        drawn = wait_image(page, "emb-pca", old=before)  # in the closed tab: drawn ahead
        # The pictures drawn ahead are on the page before web/preload.js lists them (an event later):
        # the book must see it is behind without that list (CI once moved the depth in between).
        page.evaluate("() => { window.__vizvitPreloaded = []; }")
        page.evaluate("""() => { const seen = window.__seen = []; new MutationObserver(() => {
            const s = document.querySelector('#emb-pca img')?.getAttribute('src');
            if (s && s !== seen.at(-1)) seen.push(s); })
            .observe(document.body, {subtree: true, childList: true, attributes: true}); }""")
        page.get_by_role("tab", name="Embeddings").click()
        page.wait_for_timeout(300)
        assert held and image_src(page, "emb-pca") == drawn
        set_slider(page, "emb-depth", 2)
        moved = wait_image(page, "emb-pca", old=drawn)  # the server's depth 2 for the new photo
        page.wait_for_timeout(300)
        seen = page.evaluate("() => window.__seen")
        assert old_pages and not set(seen) & set(old_pages), "the photo before's depth page was drawn over the new PCA"
        assert moved not in old_pages
        for r in held:
            r.continue_()


def test_a_new_photos_page_never_shows_the_work_ahead_for_the_photo_before(tmp_path, tiny16, monkeypatch):
    """A new photo cancels the work ahead still running for the one before: its answer would put
    the old photo's map in the closed Attention tab."""
    from appserver import running

    photos = []
    for seed in (6, 7):
        photos.append(tmp_path / f"p{seed}.png")
        Image.fromarray(np.random.default_rng(seed).integers(0, 255, (230, 250, 3), dtype=np.uint8)).save(photos[-1])
    real, started, release, answers = kit._ahead, threading.Event(), threading.Event(), []

    def held(*a, **k):  # the first photo's work ahead waits until the second photo is in
        out = real(*a, **k)
        if not answers:
            started.set()
            release.wait(60)
        answers.append({c.elem_id: v for c, v in zip([c for _, f, cl in a[1] for c in (f, *cl)], out)})
        return out

    monkeypatch.setattr(kit, "_ahead", held)
    with running(tiny16) as url, page_at(url) as page:
        page.evaluate("""() => { const seen = window.__seen = new Set(); new MutationObserver(() => {
            const i = document.querySelector('#attn-main img');
            if (i && i.getAttribute('src')) seen.add(i.getAttribute('src')); })
            .observe(document.body, {subtree: true, childList: true, attributes: true}); }""")
        upload(page, str(photos[0]))
        grid = wait_image(page, "patch-grid")
        for _ in range(300):
            if started.is_set():
                break
            page.wait_for_timeout(100)
        assert started.is_set(), "the first photo's work ahead never ran"
        page.locator("#upload button[aria-label='Clear']").first.click()
        page.wait_for_selector("#upload input[type=file]", state="attached")
        upload(page, str(photos[1]))
        wait_image(page, "patch-grid", old=grid)
        page.wait_for_timeout(1000)  # the new photo's events are in
        release.set()
        settled(page)  # its answer would be in the page now
        page.get_by_role("tab", name="Attention").click()
        shown = wait_image(page, "attn-main")
        settled(page)
        old = answers[0]["attn-main"]
        assert not any(served_path(old) in s for s in page.evaluate("() => [...window.__seen]")), \
            "the first photo's map was put in the new photo's Attention tab"
        assert served_path(old) not in shown


def test_a_lesson_step_opens_its_tab_without_the_picture_drawn_ahead_for_other_controls(tiny16):
    """A step sets its tab's controls, then opens it: the picture drawn ahead (for the controls as
    they were) is cleared, so the tab never shows it under the step's controls."""
    from vizvit.readings import lesson
    from vizvit.session import PhotoKey

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    do_open, = [f for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "do_open"]
    assert set(FIRSTS.values()) <= {c.elem_id for c in do_open.outputs}
    key = PhotoKey(wb.catalog.public(tiny16.id), wb.add_photo(str(shell.EXAMPLES[0])))
    views = set()
    for n, step in enumerate(lesson.steps(), 1):
        res = {c.elem_id: v for c, v in do_open.fn(key, n, "").items()}
        if step.view in FIRSTS:
            views.add(step.view)
            assert res[FIRSTS[step.view]] is None, (n, step.view)
        assert not {e for e in FIRSTS.values() if e in res} - {FIRSTS.get(step.view)}, n  # only its own tab's
    assert len(views) >= 3, views


def test_a_tabs_follow_up_waits_until_the_person_pauses(monkeypatch):
    """on_show's `then` (the tab's charts) is sent once the person has not touched the page for
    web.QUIET_MS (input_clock.js marks each trusted input), at most web.QUIET_LIMIT_MS: its answer
    held back a control moved right after the tab's first open (issue 52). Run on a blank page, with
    the pause and the limit made long, so a busy machine's delays stay well inside the margins."""
    from browser import blank_page

    monkeypatch.setattr(web, "QUIET_MS", 2000)
    monkeypatch.setattr(web, "QUIET_LIMIT_MS", 5000)

    with blank_page("<input id='box'>") as page:
        page.evaluate(web.asset("input_clock.js"))
        held = ("async (v) => { const t0 = performance.now(); const r = await (%s)(v); "
                "return [performance.now() - t0, r, performance.now() - window.__vizvitInputAt]; }")
        follow_up = held % web.after_quiet("#none img")
        ms, value, _ = page.evaluate(follow_up, 7)
        assert value == 7 and ms < web.QUIET_MS / 2, "no input yet: sent at once"
        page.press("#box", "a")  # a trusted key press, just now
        ms, _, since = page.evaluate(follow_up, 7)
        assert since >= web.QUIET_MS and ms < web.QUIET_LIMIT_MS, f"sent {since:.0f} ms after a key press"
        page.evaluate("() => { window.__vizvitInputAt = performance.now();"
                      " window.__keep = setInterval(() => { window.__vizvitInputAt = performance.now(); }, 50); }")
        ms, _, _ = page.evaluate(follow_up, 7)  # a person who never pauses: at most the limit
        assert web.QUIET_LIMIT_MS - 50 <= ms < web.QUIET_LIMIT_MS + 2000, f"sent after {ms:.0f} ms"


def test_a_deep_linked_tabs_charts_follow_its_map_once_not_its_empty_open(tiny16, monkeypatch):
    """?example=...&tab=attention opens the tab before its photo comes: that open draws nothing, and its
    follow-up, sent once the photo's key was in, computed the distance chart ahead of the map (a chart
    beside a blank map box under load) and again after it (the new photo's own follow-up). The open
    is held here until the key is in, as a busy page did. Now the chart is computed once, after the map."""
    import functools
    import time

    from appserver import page_name, running

    from page.tabs import attention

    calls: list[tuple[str, float, float]] = []  # (which, start, end) of the calls with a photo

    def recorded(name: str, hold_empty_s: float = 0.0):
        fn = getattr(attention, name)

        @functools.wraps(fn)
        def call(wb, key, *v):
            if key is None:
                time.sleep(hold_empty_s)  # the empty open answers after the photo's key is in
                return fn(wb, key, *v)
            t0 = time.monotonic()
            try:
                return fn(wb, key, *v)
            finally:
                calls.append((name, t0, time.monotonic()))

        monkeypatch.setattr(attention, name, call)

    recorded("opened", hold_empty_s=3.0)
    recorded("opened_chart")
    with running(tiny16) as url, page_at(f"{url}?example=chelsea&tab=attention&model={page_name(tiny16)}") as page:
        page.wait_for_selector("#attn-distance .js-plotly-plot", timeout=60_000)
        settled(page)
    maps = [c for c in calls if c[0] == "opened"]
    charts = [c for c in calls if c[0] == "opened_chart"]
    assert maps and len(charts) == 1, calls
    assert charts[0][1] >= maps[0][2], "the chart after the map"


# At the start of the new key's wait for the patch grid's paint (after_paint.js counts it on <body>), once the test
# arms it: the Compare cursor moves to 3, as a person's move (or a deep link's answer) made while the photo paints.
MOVE_IN_THE_WAIT = """document.addEventListener('DOMContentLoaded', () => {
  new MutationObserver(() => {
    if (!window.__armed || window.__moved || !Number(document.body.dataset.vizvitWaiting || 0)) return;
    window.__moved = true;
    const r = document.querySelector('#cmp-depth input[type=range]');
    r.value = '3';
    for (const kind of ['input', 'change']) r.dispatchEvent(new Event(kind, {bubbles: true}));
  }).observe(document.body, {attributes: true, attributeFilter: ['data-vizvit-waiting']});
});"""


def test_a_control_set_while_a_new_photo_paints_is_the_one_its_tab_is_drawn_for(url):
    """The new key's dispatch waits for the patch grid's paint (after_paint.js) before it is sent. Its controls were
    gathered before that wait (the wait was the dispatch's own js=), so one set meanwhile was drawn by its own event,
    then overwritten by the dispatch's answer for the old value: here the Compare cursor moved to 3 snapped back to
    12. Under load the same wait took a deep link's model B, answered just after a photo put in at once: the tab
    said "Pick model B" under the link's B, or moved its cursor to A's 2 layers (tests/page/test_a11y.py's
    screen-reader test, 1 of 10 loaded runs). The dispatch now gathers them after the wait."""
    twin = "random:vit-tiny-patch16-224"  # tests/page/test_compare.py's model B (no download)
    with page_at(f"{url}?tab=compare&compare={twin}", 1366, 900, init_script=MOVE_IN_THE_WAIT) as page:
        page.wait_for_function(f"() => document.querySelector('#cmp-model input')?.value.includes('{twin}')")
        settled(page)
        page.evaluate("window.__armed = true")
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        page.wait_for_selector("#status:has-text('top-1')", timeout=120_000)
        settled(page)
        moved, depth, verdict = page.evaluate("() => [window.__moved, document.querySelector('#cmp-depth "
                                              "input[type=range]').value, document.querySelector('#cmp-verdict')"
                                              ".innerText]")
    assert moved, "the cursor was never moved in the wait"
    assert depth == "3" and "position 3 of 12" in verdict, (depth, verdict[:60])


def test_a_tab_opened_while_the_tab_before_still_answers_gets_its_charts(tiny16, monkeypatch):
    """Attention opened, then Experiments 0.3 s later while Attention's open still computes: held here
    until Experiments' open has answered, so it lands while Experiments' follow-up waits for the person
    to pause (as on a busy server). Each tab keeps its own record of what it drew, so Attention's late
    answer cannot make Experiments' follow-up skip (a review found its charts never came with one
    record shared by every tab)."""
    import functools

    from appserver import page_name, running

    from page.tabs import attention, experiments

    slow, shown, charts = threading.Event(), threading.Event(), []
    real_open, real_show, real_charts = attention.opened, experiments.show, experiments.show_charts

    @functools.wraps(real_open)
    def opened(wb, key, *v):
        if key is not None and slow.is_set():
            shown.wait(30)  # Experiments' open has answered
        return real_open(wb, key, *v)

    @functools.wraps(real_show)
    def show(*a, **k):
        try:
            return real_show(*a, **k)
        finally:
            if slow.is_set() and a[2] is not None:  # (wb, fetch, key, ...)
                shown.set()

    @functools.wraps(real_charts)
    def show_charts(wb, key, *v):
        charts.append(key)
        return real_charts(wb, key, *v)

    monkeypatch.setattr(attention, "opened", opened)
    monkeypatch.setattr(experiments, "show", show)
    monkeypatch.setattr(experiments, "show_charts", show_charts)
    with running(tiny16) as url, page_at(f"{url}?example=chelsea&model={page_name(tiny16)}") as page:
        wait_image(page, "patch-grid")
        settled(page)
        slow.set()
        charts.clear()
        page.get_by_role("tab", name="Attention").click()
        page.wait_for_timeout(300)
        page.get_by_role("tab", name="Experiments").click()
        assert shown.wait(30)
        settled(page)
        assert [k for k in charts if k is not None], "Experiments' charts never came"
