"""The live room in Chromium (issue 45): one lecturer's page and three students' pages on one server.
The host opens a room on the example, the students join by the link, each answers step 1 (a number);
the host sees 3 answered, moves to step 2 and the students follow; each picks an option; the host
reveals and every student's page shows its own answer, the room's distribution and the truth.
Expected values written by hand: tiny16 reads a 224-pixel square in 16-pixel patches (tests/tiny.py)."""

from __future__ import annotations

import re

from browser import page_at, wait_image


def picture_size(page) -> tuple[int, int]:
    """The step picture's natural size once it has loaded (the page may be redrawing it)."""
    page.wait_for_function("() => { const i = document.getElementById('step-picture');"
                           " return i && i.complete && i.naturalWidth > 0; }")
    return tuple(page.evaluate("() => { const i = document.getElementById('step-picture');"
                               " return [i.naturalWidth, i.naturalHeight]; }"))


def test_one_host_and_three_students(url):
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        host.click("#ex")
        host.wait_for_selector("#room-code", timeout=120_000)
        code = host.inner_text("#room-code").strip()
        assert re.fullmatch(r"[A-Z2-9]{8}", code)
        assert f"room?code={code}" in host.inner_text("#host")
        assert "no phone can open this QR code" in host.inner_text("#host")  # 127.0.0.1: honest
        ctx = host.context
        students = [ctx.browser.new_page(viewport={"width": 390, "height": 844}) for _ in range(3)]
        for s in students:
            s.set_default_timeout(60_000)
            s.goto(url + f"room?code={code}")
            s.wait_for_selector("#num")
            assert "step 1 of" in s.inner_text("h1")
            assert picture_size(s) == (224, 224)  # the question's picture: the photo as tiny16 sees it
        for s, guess in zip(students, ("224", "196", "224")):
            s.fill("#num", guess)
            s.click("#send")
            s.wait_for_selector(f"text=Your answer: {guess}")
        host.wait_for_selector("#total:has-text('3 answered')", timeout=30_000)
        assert re.search(r"224\s+2", host.inner_text("#tally")) and re.search(r"196\s+1", host.inner_text("#tally"))
        students[0].click("#send")  # the same answer again: still one answer
        host.click("#next")
        for s in students:  # the students follow (within the long poll's answer, well under a second here)
            s.wait_for_selector("h1:has-text('step 2 of')", timeout=10_000)
            assert s.locator("#fwd").is_disabled()  # not ahead of the lecturer
        for s, key in zip(students, ("b", "b", "a")):
            s.click(f"button[data-k={key}]")
            s.wait_for_selector("button.chosen")
        host.wait_for_selector("#total:has-text('3 answered')", timeout=30_000)
        host.click("#reveal")
        host.wait_for_selector("text=Truth on this photo", timeout=60_000)
        assert "196 patches of 768 numbers" in host.inner_text("#host")
        # beside the floated picture too, a bar's length is its count's share: 1 answer draws half of 2
        fills = host.evaluate("() => Object.fromEntries([...document.querySelectorAll('#tally .bar')].map("
                              "b => [b.querySelector('.label').textContent.trim()[0],"
                              " b.querySelector('.fill').getBoundingClientRect().width]))")
        assert abs(fills["a"] / fills["b"] - 0.5) < 0.02, fills
        for s, key in zip(students, ("b", "b", "a")):
            s.wait_for_selector("text=The truth on this photo", timeout=10_000)
            text = s.inner_text("body")
            assert "The room: 3 answered" in text
            assert re.search(r"b ✓\s*(\(you\))?\s*2", text) and re.search(r"a\s*(\(you\))?\s*1", text), text
            assert f"Your answer: {key}:" in text
            assert picture_size(s)[0] > 224  # the revealed step's figure: the Patches tab's grid on the photo
        students[2].click("#back")  # looking back at step 1: its reveal was never made, its question closed
        assert "step 1 of" in students[2].inner_text("h1") and "closed" in students[2].inner_text("body")
        host.click("#close")
        for s in students:
            s.wait_for_selector("text=The room is closed", timeout=10_000)


def test_the_lesson_tab_opens_a_room_for_this_class(url):
    """The main page's Lesson tab, on an example: 'Open a room for this class' shows the code, the
    students' link and its QR code; the host view's link opens that room as its host, and the key
    leaves the address bar."""
    with page_at(url + "?lesson=1&step=1&example=chelsea") as page:
        page.wait_for_selector("#lesson-step:has-text('Step 1 of')", timeout=60_000)
        page.wait_for_selector("#upload:has-text('chelsea')")
        page.click("#lesson-room-open")
        page.wait_for_selector("#lesson-room-info:has-text('is open')", timeout=60_000)
        wait_image(page, "lesson-room-qr")
        info = page.inner_text("#lesson-room-info")
        code = re.search(r"Room ([A-Z2-9]{8})", info).group(1)
        assert f"room?code={code}" in info and "no phone can open this QR code" in info  # 127.0.0.1: honest
        host_link = page.get_attribute("#lesson-room-info a:has-text('Open the host view')", "href")
        assert f"room?host=1&code={code}#key=" in host_link
        page.goto(host_link)
        page.wait_for_selector("#room-code", timeout=60_000)
        assert page.inner_text("#room-code").strip() == code
        assert "#key=" not in page.url and "code=" not in page.url
        page.click("#next")  # the key works: the host moves the room
        page.wait_for_selector("text=Step 2 of", timeout=30_000)
