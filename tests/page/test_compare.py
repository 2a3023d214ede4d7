"""The Compare tab in a real browser: a deep link opens two models on the example cat; the one depth
cursor moves both sides' maps at once (drawn by the page from its flipbook, then confirmed by the
server's verdict), over relative depth: the tiny model's 2 layers against the 12 of a random ViT-Ti."""

from __future__ import annotations

from browser import FLIPPED_JS, page_at, set_slider, shot, upload, wait_flip_pages, wait_image
from settle import settled
from tiny import EXAMPLES

# The random twin of the listed WinKawaks/vit-tiny-patch16-224 (the gate takes it: no download).
TWIN = "random:vit-tiny-patch16-224"
MAPS = ["cmp-attn-a", "cmp-attn-b", "cmp-roll-a", "cmp-roll-b"]


def _srcs(page) -> list[str]:
    return [src for src, _ in page.evaluate(FLIPPED_JS, MAPS)]


def _move(page, position: int) -> list[tuple[str, bool]]:
    """Set the cursor and wait for the server's verdict at that position; the maps as shown then."""
    set_slider(page, "cmp-depth", position)
    page.wait_for_function(f"() => document.querySelector('#cmp-verdict').innerText"
                           f".includes('position {position} of 12')")
    return page.evaluate(FLIPPED_JS, MAPS)


def test_the_shared_cursor_moves_both_models_maps_over_relative_depth(url):
    # The link opens the tab with model B; the photo is uploaded as a user does (no example= here: under
    # a heavy load the example's file was once refused, "The file could not be read", a page matter).
    with page_at(f"{url}?tab=compare&compare={TWIN}", height=1400) as page:
        page.wait_for_function(f"() => {{ const i = document.querySelector('#cmp-model input');"
                               f" return i && i.value.includes('{TWIN}'); }}")
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        for m in MAPS:  # lazy pictures: loaded once in view
            page.locator(f"#{m}").scroll_into_view_if_needed()
            wait_image(page, m, timeout_ms=120_000)
        page.wait_for_function("() => document.querySelector('#cmp-verdict').innerText.includes('position 12 of 12')")
        assert "untrained random weights" in page.inner_text("#cmp-title-b")
        assert "12 layers × 3 heads" in page.inner_text("#cmp-title-b")
        assert "2 layers × 2 heads" in page.inner_text("#cmp-title-a")
        wait_flip_pages(page, "cmp-depth", 12)
        at_12 = _srcs(page)
        page.wait_for_selector("#cmp-distance .js-plotly-plot", timeout=60_000)
        shown = {i: page.locator(f"#{i}").is_visible() for i in EMPTY_BEFORE_B}
        assert all(shown.values()), f"with model B every picture and chart is shown: {shown}"

        # Position 3 of 12: layer ceil(3·2/12) = 1 of A, layer 3 of B. Every map changes, put there by
        # the page from its book (the server's own pictures for that position).
        got = _move(page, 3)
        assert all(src != old for (src, _), old in zip(got, at_12)), (got, at_12)
        assert all(flipped for _, flipped in got), got
        verdict = page.inner_text("#cmp-verdict")
        assert "A (layer 1/2)" in verdict and "B (layer 3/12)" in verdict, verdict
        shot(page, "compare_tab_position_3", full_page=False)

        # Each its own colour range: A's pictures depend on A's layer alone. Position 5 is still
        # layer 1 of A (ceil(10/12) = 1) and layer 5 of B: A's maps stay, B's change.
        page.locator("#cmp-shared input").uncheck()
        page.wait_for_function("() => { const b = window.__vizvitFlip && window.__vizvitFlip.books['cmp-depth'];"
                               " return b && b.look.endsWith('|False') && Object.keys(b.pages).length >= 12; }",
                               timeout=60_000)
        own_3 = [src for src, _ in _move(page, 3)]
        got = _move(page, 5)
        assert [src for src, _ in got][0::2] == own_3[0::2], "A's maps moved although A's layer did not"
        assert all(src != old for (src, _), old in zip(got[1::2], own_3[1::2])), "B's maps did not move"
        verdict = page.inner_text("#cmp-verdict")
        assert "A (layer 1/2)" in verdict and "B (layer 5/12)" in verdict, verdict
        shot(page, "compare_tab_own_ranges", full_page=False)


def test_on_a_phone_each_sides_map_takes_the_width_a_under_b(url):
    # Side by side at half a 390-px phone, a map's burnt-in caption and colour-bar numbers were ~6 px
    # (issue 51); one under the other they get the phone's width (~12 px). Measured with both models' maps in:
    # an empty map is not shown (test_before_model_b_no_empty_picture_takes_the_projectors_screen).
    with page_at(f"{url}?tab=compare&compare={TWIN}", 390, 844) as page:
        page.wait_for_function(f"() => {{ const i = document.querySelector('#cmp-model input');"
                               f" return i && i.value.includes('{TWIN}'); }}")
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        page.wait_for_function("(ids) => ids.every((m) => document.querySelector('#' + m + ' img'))", arg=MAPS,
                               timeout=120_000)
        boxes = {m: page.evaluate(f"() => {{ const r = document.querySelector('#{m}').getBoundingClientRect();"
                                  f" return [r.left, r.top, r.width]; }}") for m in MAPS}
        # The tab's text says where model B's box and the teaching pairs are: they are above it, phone or not
        # (it said "open a teaching pair below").
        text = page.locator("#tabs .prose", has_text="Two models, one photo").first
        said = text.inner_text()
        above = page.evaluate("""(el) => ['#cmp-model', '#cmp-pairs'].every(s =>
            document.querySelector(s).getBoundingClientRect().bottom <= el.getBoundingClientRect().top)""",
                              text.element_handle())
        # The sides' titles stack as the maps do, and model B's long name ends before the dropdown's arrow.
        titles = [page.locator(f"#cmp-title-{s}").bounding_box() for s in "ab"]
        name_end = page.evaluate("""() => {
            const i = document.querySelector('#cmp-model input'), s = getComputedStyle(i);
            return [i.getBoundingClientRect().right - parseFloat(s.paddingRight),
                    i.parentElement.querySelector('.icon-wrap').getBoundingClientRect().left]; }""")
    assert above and "below" not in said and "at the top of this tab" in said, said
    assert titles[0]["y"] + titles[0]["height"] <= titles[1]["y"] and titles[1]["width"] >= 0.8 * 390, titles
    assert name_end[0] <= name_end[1], f"model B's text ends at {name_end[0]}, the arrow starts at {name_end[1]}"
    for m, (_, _, width) in boxes.items():
        assert width >= 0.8 * 390, (m, boxes)
    assert boxes["cmp-attn-a"][1] < boxes["cmp-attn-b"][1] and boxes["cmp-roll-a"][1] < boxes["cmp-roll-b"][1], boxes


# Shown only once its picture or chart is in (page/web/style.css).
EMPTY_BEFORE_B = ["cmp-row-attention", "cmp-row-rollout", "cmp-row-positions", "cmp-top5-b", "cmp-distance"]


def test_before_model_b_no_empty_picture_takes_the_projectors_screen(url):
    """?projector=1 at 1366x900, before model B is picked: four empty picture frames (the maps' two rows) filled
    the screen under the cursor, and B's top-5, the position grids and the distance chart were empty frames
    further down (a walk-through). None shows until it has something in it; the line under the teaching pairs
    says to pick model B, and A's top-5 is shown."""
    with page_at(f"{url}?projector=1&tab=compare", 1366, 900) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        page.wait_for_selector("#cmp-verdict:has-text('Pick model B')", timeout=120_000)
        page.wait_for_selector("#cmp-top5-a .js-plotly-plot", timeout=60_000)
        settled(page)
        shown = {i: page.locator(f"#{i}").is_visible() for i in EMPTY_BEFORE_B}
        assert not any(shown.values()), shown
        assert page.locator("#cmp-top5-a").is_visible()
        shot(page, "compare_projector_before_b", full_page=False)
        # On a phone the two charts stack: B's empty frame takes no room under A's (hidden, it kept 238 px blank)
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.locator("#cmp-top5-b").bounding_box() is None, page.locator("#cmp-top5-b").bounding_box()
        page.set_viewport_size({"width": 1366, "height": 900})
        # Model B picked by hand: A's top-5, drawn while B's frame was hidden, kept that full row's width once B's
        # chart came beside it, its first bar and its label cut off at the column's edge (a reviewer, 1366 px).
        page.locator("#cmp-model input").first.click()
        page.get_by_role("option").filter(has_text="untrained twin").filter(has_text="tiny").first.click()
        page.wait_for_selector("#cmp-top5-b .js-plotly-plot", timeout=120_000)
        settled(page)
        fit = page.evaluate("""() => ['a', 'b'].map(s => {
            const box = document.querySelector(`#cmp-top5-${s}`).getBoundingClientRect();
            const svg = document.querySelector(`#cmp-top5-${s} .main-svg`).getBoundingClientRect();
            return [s, Math.round(svg.width), Math.round(box.width)]; })""")
        assert all(svg <= box + 1 for _, svg, box in fit), f"each top-5 within its column (chart, column px): {fit}"
        shot(page, "compare_projector_after_b", full_page=False)


def test_a_links_head_sets_the_compare_head_and_its_copied_link_keeps_it(url):
    """The copied link of the Compare tab lost its head. Head 3 is model B's (3 heads) beyond A's 2: the
    link's head runs over the pair's larger head count, as the tab's list does."""
    with page_at(f"{url}?example=chelsea&tab=compare&compare={TWIN}&layer=5&head=3", height=1400) as page:
        page.wait_for_function("() => (document.querySelector('#cmp-verdict')?.innerText || '')"
                               ".includes('position 5 of 12')", timeout=120_000)
        assert page.locator("#cmp-head input").input_value() == "3"
        assert not page.locator("#notice").is_visible()
        wait_image(page, "cmp-attn-b", timeout_ms=120_000)
        page.locator("#copy-link").click()
        page.wait_for_function("() => document.querySelector('#link-box textarea').value.includes('tab=compare')")
        copied = page.locator("#link-box textarea").input_value()
        assert copied.endswith(f"tab=compare&compare={TWIN}&layer=5&head=3"), copied
    with page_at(f"{url}?example=chelsea&tab=compare&compare={TWIN}&head=4") as page:
        page.wait_for_selector("#notice:has-text('About this link')")
        assert "Head 4 does not exist (1–3)" in page.inner_text("#notice")


def _cursor_click(page, position: int) -> None:
    """A click on the cursor's track at `position` of 1..12, as a user's mouse."""
    box = page.locator("#cmp-depth input[type=range]").bounding_box()
    page.mouse.click(box["x"] + box["width"] * (position - 1) / 11, box["y"] + box["height"] / 2)


def test_a_cursor_move_with_the_heads_list_open_stays(url):
    """A walk-through: with the heads' list open, a click on the depth cursor snapped back to 12. Gradio's
    dropdown sends its .input on blur, picked or not, and that event carried the cursor's old place: its
    answer set the cursor back. The heads now answer a pick (.select); a pick still shows that head."""
    with page_at(f"{url}?tab=compare&compare={TWIN}", height=1400) as page:
        page.wait_for_function(f"() => {{ const i = document.querySelector('#cmp-model input');"
                               f" return i && i.value.includes('{TWIN}'); }}")
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        page.locator("#cmp-attn-a").scroll_into_view_if_needed()
        wait_image(page, "cmp-attn-a", timeout_ms=120_000)
        page.wait_for_function("() => document.querySelector('#cmp-verdict').innerText.includes('position 12 of 12')")
        wait_flip_pages(page, "cmp-depth", 12)  # a move is drawn from the book, its event held until painted
        page.locator("#cmp-head input").first.click()  # the list opens
        page.get_by_role("option").first.wait_for()
        _cursor_click(page, 6)  # the list closes (blur) and the cursor moves
        page.wait_for_function("() => document.querySelector('#cmp-verdict').innerText.includes('position 6 of 12')")
        settled(page)
        assert page.locator("#cmp-depth input[type=number]").input_value() == "6"
        assert "position 6 of 12" in page.inner_text("#cmp-verdict")
        # A pick from the list still redraws both sides with that head, at the cursor's place.
        # (this pair's verdict names no head: neither side has artifact tokens; the maps change)
        before = [page.locator(f"#{m} img").first.get_attribute("src") for m in ("cmp-attn-a", "cmp-attn-b")]
        page.locator("#cmp-head input").first.click()
        page.get_by_role("option", name="2", exact=True).click()
        for m, old in zip(("cmp-attn-a", "cmp-attn-b"), before):
            wait_image(page, m, old)
        settled(page)
        assert page.locator("#cmp-head input").first.input_value() == "2"
        assert page.locator("#cmp-depth input[type=number]").input_value() == "6"
        assert "position 6 of 12" in page.inner_text("#cmp-verdict")
        # Model B's list opened and left by Tab, the cursor moved at once: Gradio's dropdown sends .input on the
        # blur, picked or not, with the cursor's place as it was (a walk-through: the cursor went back to 6).
        # Model B as shown: no answer comes for it.
        page.locator("#cmp-model input").first.click()
        page.get_by_role("option").first.wait_for()
        page.keyboard.press("Tab")
        _cursor_click(page, 4)
        page.wait_for_function("() => document.querySelector('#cmp-verdict').innerText.includes('position 4 of 12')")
        settled(page)
        assert page.locator("#cmp-depth input[type=number]").input_value() == "4"
        assert "position 4 of 12" in page.inner_text("#cmp-verdict")
