"""The live room in Chromium (issue 45): one lecturer's page and three students' pages on one server.
The host opens a room on the example, the students join by the link, each answers step 1 (a number);
the host sees 3 answered, moves to step 2 and the students follow; each picks an option; the host
reveals and every student's page shows its own answer, the room's distribution and the truth.
Expected values written by hand: tiny16 reads a 224-pixel square in 16-pixel patches (tests/tiny.py)."""

from __future__ import annotations

import os
import re

import pytest
from browser import page_at, wait_image
from fastapi import FastAPI
from roompage import open_room, student_page
from starlette.testclient import TestClient
from tiny import EXAMPLES

from page import room
from page.guard import Guard
from vizvit.classroom.room import BARRED, Question, Rooms
from vizvit.session import Workbench

POSTS = ("answer", "hello", "host", "step", "tally", "lock", "answers.csv", "turn_away", "let_in")  # every POST


@pytest.fixture(scope="module")
def plain_routes():
    """The room's routes, guarded as build_demo serves them, over an in-memory store: no model, no server."""
    rooms = Rooms()
    code, _ = rooms.open("a model", None, [Question(())])  # an open room's code: the guard never slows it
    routes = Guard(rooms).routes(room.room_routes(rooms, Workbench(device="cpu"), lambda: (None, None)))
    with TestClient(FastAPI(routes=routes), raise_server_exceptions=False) as client:
        yield client, code


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("body", ["[" * 100_000 + "]" * 100_000, "[" * 2_000 + "]" * 2_000, '{"a": ' * 5_000 + "1"
                                  + "}" * 5_000, "not json", "[1, 2]"])
def test_a_body_that_is_no_json_object_is_one_sentence_even_nested_past_pythons_limit(plain_routes, path, body):
    """JSON nested deeper than the recursion limit made json.loads raise RecursionError, which the routes
    (and the guard, for hello and answer) did not catch: HTTP 500 and a traceback in the log."""
    client, code = plain_routes
    r = client.post(f"/vizvit_room/{code}/{path}", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, (r.status_code, r.text[:200])
    said = r.json()
    assert said.get("error", said.get("reason", "")).startswith("Send"), said


def test_a_strangers_csv_request_loads_no_model(plain_routes, monkeypatch):
    """A review: answers.csv loaded the room's model (seconds, after a restart; on the event loop) before it
    checked the host key. A wrong key now answers at once, with no model asked for."""
    client, code = plain_routes
    asked = []
    monkeypatch.setattr(Workbench, "model", lambda self, m: asked.append(m) or pytest.fail("a model was loaded"))
    r = client.post(f"/vizvit_room/{code}/answers.csv", json={"host_key": "not the key"})
    assert r.status_code == 400 and "key" in r.json()["error"].lower() and not asked, (r.status_code, r.text)


@pytest.mark.parametrize("typed", ["{}-", "{} ", "{:.4}\u2028{}", "{:.4}\u3000{}"])
def test_the_students_link_holds_the_rooms_own_code_whatever_path_reached_it(plain_routes, typed):
    """/join wrote the path's code as it came ("ABCD EFGH", a Unicode line separator in it) into the link
    and its QR code: the code the room parses, never the text sent."""
    client, code = plain_routes
    sent = typed.format(code, code[4:])
    r = client.get(f"/vizvit_room/{sent}/join")
    assert r.status_code == 200 and r.json()["url"].endswith(f"room?code={code}"), r.text[:200]
    # built from the request's Host header: no shared cache may keep it for the next caller
    assert r.headers.get("cache-control") == "no-store", r.headers


def test_a_step_past_a_floats_range_is_refused_with_a_sentence(plain_routes):
    """A 400-digit JSON int as the step: float() overflowed, an HTTP 500 and a traceback (the host's
    step and tally too: tests/classroom/test_room.py)."""
    client, code = plain_routes
    raw = '{"student": "student-0001", "answer": "3", "step": 1%s}' % ("0" * 400)
    r = client.post(f"/vizvit_room/{code}/answer", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 200 and "step must be a whole number" in r.json()["reason"], (r.status_code, r.text[:200])


def test_the_hosts_call_measures_ahead_what_a_restart_left_unmeasured(tiny16, monkeypatch):
    """A walk-through: a server killed while its thread measured a new room's steps ahead measured them no
    more once restarted, and every reveal after waited on its own measure (seconds each on a CPU; the shift
    sweep's step the most). The host page's call (every 5 s) now measures the rest ahead in the background."""
    import threading
    import time

    from vizvit.api import PublicApi
    from vizvit.errors import UserError

    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(tiny16)
    rooms = Rooms()
    with monkeypatch.context() as m:  # the server dies before its thread measured a step
        m.setattr(PublicApi, "_room_ready", lambda self, code, n: (_ for _ in ()).throw(UserError("killed")))
        opened = PublicApi(wb, None, rooms).room_open(str(EXAMPLES / "chelsea.jpg"), tiny16.id)
        code = opened["code"]
        for t in threading.enumerate():
            if t.name == f"room-{code}":
                t.join()
    steps = range(1, opened["steps"] + 1)
    assert not any(rooms.prepared(code, n) for n in steps)
    with TestClient(FastAPI(routes=room.room_routes(rooms, wb, lambda: (None, None)))) as client:
        r = client.post(f"/vizvit_room/{code}/host", json={"host_key": opened["host_key"]})
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 60
        while not all(rooms.prepared(code, n) for n in steps) and time.monotonic() < deadline:
            time.sleep(0.2)
    assert all(rooms.prepared(code, n) for n in steps), [n for n in steps if not rooms.prepared(code, n)]


def picture_size(page) -> tuple[int, int]:
    """The step picture's natural size once it has loaded (the page may be redrawing it)."""
    page.wait_for_function("() => { const i = document.getElementById('step-picture');"
                           " return i && i.complete && i.naturalWidth > 0; }")
    return tuple(page.evaluate("() => { const i = document.getElementById('step-picture');"
                               " return [i.naturalWidth, i.naturalHeight]; }"))


def test_one_host_and_three_students(url):
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
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
        for s, guess, kept in zip(students, ("224", "196", "224,0"), ("224", "196", "224")):  # a decimal comma
            s.fill("#num", guess)
            s.click("#send")
            s.wait_for_selector(f"text=Your answer: {kept}")  # as the room tallies it
        # the answers against the pages that joined (a walk-through read "4 answered" and "5 joined" apart)
        host.wait_for_selector("#total:text-is('3 of 3 answered')", timeout=30_000)
        assert host.inner_text("#joined") == "3 pages joined"  # page ids, not people: ids can be made up
        assert re.search(r"224\s+2", host.inner_text("#tally")) and re.search(r"196\s+1", host.inner_text("#tally"))
        students[0].click("#send")  # the same answer again: still one answer
        host.click("#next")
        for s in students:  # the students follow (within the long poll's answer, well under a second here)
            s.wait_for_selector("h1:has-text('step 2 of')", timeout=10_000)
            assert s.locator("#fwd").is_disabled()  # not ahead of the lecturer
        for s, key in zip(students, ("b", "b", "a")):
            s.click(f"button[data-k={key}]")
            s.wait_for_selector("button.chosen")
        host.wait_for_selector("#total:text-matches('^3 (of [0-9]+ )?answered$')", timeout=30_000)
        host.click("#reveal")
        host.wait_for_selector("text=The truth for this model", timeout=60_000)
        shown = host.inner_text("#host")
        assert "196 patches of 768 numbers" in shown and "on this photo" not in shown  # the model's own count
        assert "(224/16)² = 196 patches" in host.inner_text("#meaning") and "**" not in host.inner_text("#meaning")
        # the hide box, wanted before the next step's answers, is on the projector's screen after a reveal too
        # (under the tally it went below the fold)
        assert host.evaluate("document.getElementById('hide-bars').getBoundingClientRect().bottom") < 900
        # beside the floated picture too, a bar's length is its count's share: 1 answer draws half of 2
        fills = host.evaluate("() => Object.fromEntries([...document.querySelectorAll('#tally .bar')].map("
                              "b => [b.querySelector('.label').textContent.trim()[0],"
                              " b.querySelector('.fill').getBoundingClientRect().width]))")
        assert abs(fills["a"] / fills["b"] - 0.5) < 0.02, fills
        for s, key in zip(students, ("b", "b", "a")):
            s.wait_for_selector("text=The truth for this model", timeout=10_000)
            text = s.inner_text("body")
            assert "The room: 3 of 3 answered" in text
            # each bar carries its option's words ("b: ..."), the truth's a tick
            assert re.search(r"b: [^\n]*✓\s*(\(you\))?\s*2", text), text
            assert re.search(r"a: [^\n]*?(\(you\))?\s*1", text), text
            assert f"Your answer: {key}:" in text
            assert "like words in a sentence" in s.inner_text("#meaning")  # the step's meaning, as the Lesson tab's
            assert picture_size(s)[0] > 224  # the revealed step's figure: the Patches tab's grid on the photo
        students[2].click("#back")  # looking back at step 1: its reveal was never made, its question closed
        assert "step 1 of" in students[2].inner_text("h1") and "closed" in students[2].inner_text("body")
        host.click("#close")
        host.click("#close-yes")  # the page asks first: closing deletes every answer
        for s in students:
            s.wait_for_selector("text=The room is closed", timeout=10_000)


def test_many_numbers_a_student_typing_at_the_reveal_the_keyboard_and_closing_with_a_question(url):
    """25 different numbers keep the lecturer's buttons on a 1366x900 projector (five bars and "other
    numbers"); a student with a half-typed number sees the reveal; a control pressed by keyboard keeps
    the focus; a stranger's minted students are named and turned away (asked first); the reveal is said in
    the live region; Close asks first, and "Keep it open" keeps it."""
    import httpx

    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        for i in range(25):  # 25 students, 25 different numbers (each 200 + i), given over the plain route
            r = httpx.post(f"{url}vizvit_room/{code}/answer", json={"student": f"stud-{i:04d}", "step": 1,
                                                                     "answer": str(200 + i)}, timeout=30)
            assert r.json()["accepted"], r.text
        s = student_page(host, url, code)
        host.wait_for_selector("#total:text-matches('^25 (of [0-9]+ )?answered$')", timeout=30_000)
        labels = host.locator("#tally .bar .label").all_inner_texts()
        assert len(labels) == 6 and labels[-1].startswith("other numbers"), labels
        assert host.locator("#tally .bar .count").all_inner_texts()[-1] == "20"
        for b in ("#reveal", "#next", "#close", "#lock"):  # no scrolling in front of the class
            box = host.locator(b).bounding_box()
            assert box and box["y"] + box["height"] <= 900, (b, box)
        host.focus("#lock")  # the keyboard: a control pressed keeps the focus through the redraw
        host.keyboard.press("Enter")
        host.wait_for_selector("#lock:has-text('Unlock')")
        assert host.evaluate("document.activeElement.id") == "lock"
        host.keyboard.press("Enter")
        host.wait_for_selector("#lock:has-text('Lock:')")
        # a stranger on another address minting six students: the host page names them (its 5-s call)
        # and turns them away, asked first (Escape keeps them); their answers leave the tally
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.3"), timeout=30) as stranger:
            for i in range(6):
                r = stranger.post(f"{url}vizvit_room/{code}/answer", json={"student": f"minted-{i:04d}", "step": 1,
                                                                           "answer": "999"})
                assert r.json()["accepted"], r.text
        host.wait_for_selector("#crowd-text:has-text('6 of them from one network other than yours')", timeout=15_000)
        host.wait_for_function("() => /6 students joined from one network/"
                               ".test(document.getElementById('said').textContent)")
        host.wait_for_selector("#total:text-matches('^31 (of [0-9]+ )?answered$')", timeout=15_000)
        host.click("#turn-away")
        assert host.evaluate("document.activeElement.id") == "turn-no"
        host.keyboard.press("Escape")
        host.wait_for_selector("#crowd-q", state="detached")
        assert host.evaluate("document.activeElement.id") == "turn-away"
        # a student whose network this is (its hello answered here as the room answers it then) hears it
        # at the turn-away: its page says so instead of showing an answer that is gone
        s2 = host.context.browser.new_page(viewport={"width": 390, "height": 844})
        s2.set_default_timeout(60_000)
        s2.goto(url + f"room?code={code}")
        s2.wait_for_selector("#num")
        s2.fill("#num", "230")
        s2.keyboard.press("Enter")  # Enter sends, as the phone keyboard's Go key does
        s2.wait_for_selector("text=Your answer: 230")
        s2.route(f"**/vizvit_room/{code}/hello", lambda r: r.fulfill(json={"accepted": False, "reason": BARRED}))
        host.click("#turn-away")
        host.click("#turn-yes")
        s2.wait_for_selector("#refused", timeout=15_000)
        assert s2.inner_text("#refused") == BARRED and "Your answer" not in s2.inner_text("body")
        s2.close()
        host.wait_for_function("() => /6 students turned away/.test(document.getElementById('said').textContent)",
                               timeout=10_000)
        host.wait_for_selector("#total:text-matches('^26 (of [0-9]+ )?answered$')", timeout=15_000)
        assert host.locator("#crowd-text").count() == 0 and "999" not in host.inner_text("#tally")
        assert host.evaluate("document.activeElement.id") == "let-back" and "Turned away 6" in host.inner_text("#crowd")
        host.click("#let-back")  # undone: that network may join again
        host.wait_for_selector("#let-back", state="detached")
        s.fill("#num", "22")  # typing, the cursor in the box, as the lecturer reveals
        assert s.evaluate("document.activeElement.id") == "num"
        host.click("#reveal")
        s.wait_for_selector("text=The truth for this model", timeout=15_000)
        s.wait_for_function("() => /revealed/.test(document.getElementById('said').textContent)", timeout=10_000)
        assert "224 ✓" in host.inner_text("#tally")  # the truth has a bar of its own, at 0
        # the revealed page is taller than the projector: scrolled down to Close, the question drawn above
        # "Keep it open" must be in view too, not only the button the focus goes to
        host.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        host.click("#close")
        host.wait_for_selector("#close-ask")
        q = host.locator("#close-q").bounding_box()
        assert q and q["y"] >= 0, f"the close question is cut off at the top: {q}"
        assert host.evaluate("document.activeElement.id") == "close-no"
        host.keyboard.press("Escape")
        host.wait_for_selector("#close-ask", state="detached")
        assert host.locator("#room-code").is_visible() and "closed" not in s.inner_text("body")
        host.click("#close")
        host.click("#close-yes")
        s.wait_for_selector("text=The room is closed", timeout=10_000)
        host.wait_for_selector("#ex")


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
        page.locator("#projector input").check()  # on the projector: the room's QR code, not the step's beside it
        page.wait_for_selector("body.vizvit-projector")
        assert page.locator("#lesson-room-qr img").is_visible() and not page.locator("#lesson-qr").is_visible()
        host_link = page.get_attribute("#lesson-room-info a:has-text('Open the host view')", "href")
        assert f"room?host=1&code={code}#key=" in host_link
        page.goto(host_link)
        page.wait_for_selector("#room-code", timeout=60_000)
        assert page.inner_text("#room-code").strip() == code
        assert "#key=" not in page.url and "code=" not in page.url
        page.click("#next")  # the key works: the host moves the room
        page.wait_for_selector("text=Step 2 of", timeout=30_000)


def test_a_room_as_a_lecturer_runs_it_hidden_bars_every_option_no_answer_and_a_csv(url, tmp_path):
    """Issue 51: the host hides the live bars until the reveal; every option gets its bar, labelled with
    its words, 0 where nobody chose it; a student who did not answer step 9 (whose option is literally
    "none") reads that they did not answer, never "none"; the room's answers come as a CSV, read back."""
    import csv

    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        host.check("#hide-bars")
        students = [host.context.browser.new_page(viewport={"width": 390, "height": 844}) for _ in range(3)]
        for s in students:
            s.set_default_timeout(60_000)
            s.goto(url + f"room?code={code}")
            s.wait_for_selector("#num")
        for n in range(2, 10):  # to step 9, the one-pixel shift: options none / most / few / all
            host.click("#next")
            host.wait_for_selector(f"text=Step {n} of", timeout=30_000)
        for s in students:
            s.wait_for_selector("h1:has-text('step 9 of')", timeout=10_000)
        for s in students[:2]:
            s.click("button[data-k=few]")
            s.wait_for_selector("button.chosen")
        host.wait_for_selector("#total:text-matches('^2 (of [0-9]+ )?answered$')", timeout=30_000)
        assert host.locator("#bars-hidden").is_visible() and not host.locator("#tally .bar").count()
        host.click("#reveal")
        host.wait_for_selector("text=Truth on this photo", timeout=60_000)
        labels = host.locator("#tally .bar .label").all_inner_texts()
        counts = host.locator("#tally .bar .count").all_inner_texts()
        # every option, in order, by its words (a word key is not said twice: "none: None: …" read as two answers)
        words = ("None: every patch vector changes", "Most change, a few stay", "A few change, most stay",
                 "All of them, nearly")
        assert [t.startswith(w) for t, w in zip(labels, words)] == [True] * 4 and len(labels) == 4, labels
        assert counts == ["0", "0", "2", "0"], counts
        silent = students[2]
        silent.wait_for_selector("#no-answer", timeout=10_000)
        text = silent.inner_text("body")
        assert "You did not answer this step." in text and "Your answer:" not in text, text
        assert "Your answer: A few change, most stay" in students[0].inner_text("body")
        with host.expect_download() as got:
            host.click("#csv")
        path = tmp_path / "answers.csv"
        got.value.save_as(path)
        rows = list(csv.DictReader(path.open(encoding="utf-8")))
        step9 = [r for r in rows if r["step"] == "9"]
        assert sorted(r["answer"] for r in step9) == ["few", "few"] and all(r["revealed"] == "yes" for r in step9)
        assert {r["student"] for r in rows} and all(re.fullmatch(r"[A-Za-z0-9_-]{8,64}", r["student"]) for r in rows)
        assert rows and rows[0].keys() == {"step", "title", "student", "answer", "revealed", "truth", "right"}
        assert all(r["truth"] == "none" and r["right"] == "no" for r in step9), step9  # "few" against "none"
        for s in students:
            s.close()


def test_a_student_who_closes_the_tab_and_comes_back_sees_the_answer_the_room_counts(url):
    """A lecturer's walk-through: a student answered 196, closed the phone's tab, then opened the link
    again (localStorage keeps the page's student id; the tab's sessionStorage, where the page kept its own
    answers, is gone). The page asked the question as if unanswered and, after the reveal, said "You did
    not answer this step." beside "The room: 1 answered", the student's own 196 among the bars."""
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        phone = host.context.browser.new_context(viewport={"width": 390, "height": 844})
        s = phone.new_page()
        s.set_default_timeout(60_000)
        s.goto(url + f"room?code={code}")
        s.wait_for_selector("#num")
        s.fill("#num", "196")
        s.click("#send")
        s.wait_for_selector("text=Your answer: 196")
        s.close()  # the tab closed; the phone's browser (its localStorage) stays
        s = phone.new_page()
        s.set_default_timeout(60_000)
        s.goto(url + f"room?code={code}")
        s.wait_for_selector("#num")
        s.wait_for_selector("text=Your answer: 196", timeout=10_000)
        assert s.input_value("#num") == "196"
        host.wait_for_selector("#total:text-matches('^1 (of [0-9]+ )?answered$')", timeout=30_000)
        host.click("#reveal")
        s.wait_for_selector("text=The truth for this model", timeout=60_000)
        text = s.inner_text("body")
        assert "You did not answer" not in text and "Your answer: 196" in text, text
        assert re.search(r"196 \(you\)\s*1", text), text
        phone.close()


def test_a_lecturer_who_closes_the_host_tab_gets_back_to_the_room(url):
    """A lecturer's walk-through: the host key lived in the tab's sessionStorage only, so a projector tab
    closed by mistake lost the room (its answers, the students on it) until it closed itself 30 minutes
    later, holding one of the lecturer's 3 rooms. /room?host=1 in a new tab of the same browser now offers
    the way back to each room this browser opened that is still open, and none that is closed."""
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        ctx = host.context
        code = open_room(host)
        host.click("#next")
        host.wait_for_selector("text=Step 2 of", timeout=30_000)
        host.close()  # the projector's tab, closed by mistake
        again = ctx.new_page()
        again.set_default_timeout(60_000)
        again.goto(url + "room?host=1")
        back = again.locator(f"button[data-room='{code}']")
        back.wait_for(timeout=30_000)
        assert back.inner_text() == f"Back to your room {code} (step 2 of 13)"
        back.click()
        again.wait_for_selector("#room-code")
        assert again.inner_text("#room-code").strip() == code and "Step 2 of 13" in again.inner_text("#host")
        again.click("#close")
        again.click("#close-yes")
        again.wait_for_selector("#ex")
        assert again.locator("#hosted button").count() == 0  # a closed room is offered no more
        third = ctx.new_page()
        third.goto(url + "room?host=1")
        third.wait_for_selector("#ex")
        third.wait_for_timeout(1000)
        assert third.locator("#hosted button").count() == 0



def test_a_wide_revealed_figure_takes_the_host_pages_column(trained):
    """A lecturer's walk-through on a 1366x900 projector, trained ViT-Ti: the dropout step's figure (two
    panels side by side, 776x222) was floated at 42% of the column like the square photo, so its captions
    shrank to ~9 px. A figure at least twice as wide as tall takes the whole column; the square photo stays
    beside the question."""
    from appserver import running

    size = ("() => { const i = document.getElementById('step-picture'), c = i.parentElement;"
            " return [i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width,"
            " c.getBoundingClientRect().width]; }")
    with running(trained) as url, page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        host.click("#ex")
        host.wait_for_selector("#room-code", timeout=120_000)
        host.wait_for_function("() => { const i = document.getElementById('step-picture');"
                               " return i && i.complete && i.naturalWidth > 0; }")
        nw, nh, shown, column = host.evaluate(size)
        assert nw == nh and shown < 0.45 * column, (nw, nh, shown, column)  # the photo, floated beside the question
        for n in range(2, 8):  # step 7: dropout
            host.click("#next")
            host.wait_for_selector(f"text=Step {n} of", timeout=30_000)
        host.click("#reveal")
        # Its number is this photo at the paper's p, not what this checkpoint (dropout 0) does: never "for this model"
        host.wait_for_selector("text=Measured on this photo's tokens at the paper's p = 0.1:", timeout=120_000)
        assert host.locator("text=The truth for this model").count() == 0
        host.wait_for_function("() => { const i = document.getElementById('step-picture');"
                               " return i && i.complete && i.naturalWidth > 0 && i.src.includes('revealed'); }")
        host.wait_for_timeout(200)
        nw, nh, shown, column = host.evaluate(size)
        assert nw >= 2 * nh, (nw, nh)  # the constructed case: ViT-Ti's 192 numbers a token, two panels
        assert shown >= 0.95 * column, f"a {nw}x{nh} figure drawn {shown:.0f} px wide in a {column:.0f} px column"


def test_a_wrong_host_key_in_the_link_is_refused_not_drawn_as_the_lecturers_view(url):
    """A hostile student's walk-through: /room?host=1&code=<the room>#key=<a guess> drew the whole lecturer's
    view (the question, the moves, Close the room...) with no word that the key was wrong; each button then
    failed on its own. The page now says the key does not open the room, and keeps no such room."""
    from vizvit.classroom.room import WRONG_KEY

    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        guess = host.context.browser.new_context(viewport={"width": 390, "height": 844})
        s = guess.new_page()
        s.goto(url + f"room?host=1&code={code}#key=guessed-key-1234")
        s.wait_for_selector("#err:not(:empty)", timeout=30_000)
        assert s.inner_text("#err") == WRONG_KEY
        assert s.locator("#room-code").count() == 0 and s.locator("#close").count() == 0
        assert code not in (s.evaluate("localStorage.getItem('vizvit-hosted')") or "")
        guess.close()


def test_a_students_page_says_when_the_server_cannot_be_reached_and_clears_it_at_once(url):
    """A lecturer's walk-through of a server restart: the host page said "reconnecting…", the students'
    pages went on showing the open question as if all were well (an answer sent then was lost to a
    refusal). The student's page now says it too, and clears it with the first answer after, at once
    (its first poll asked to hear of the next change, up to 20 s later)."""
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        s = student_page(host, url, code)
        down = lambda route: route.abort()  # noqa: E731 - the server gone, as a phone sees it
        s.route(f"**/vizvit_room/{code}?v=*", down)
        host.click("#next")  # the poll in flight answers; the next one finds no server
        s.wait_for_selector("h1:has-text('step 2 of')", timeout=10_000)
        s.wait_for_selector("#student-err:has-text('The server cannot be reached: reconnecting')", timeout=10_000)
        s.unroute(f"**/vizvit_room/{code}?v=*", down)
        s.wait_for_function("document.getElementById('student-err').textContent === ''", timeout=8_000)
        s.close()


def test_a_refused_answers_sentence_ends_with_its_question(url):
    """A walk-through: a student's "abc" refused ("must be a number") kept its sentence under the reveal and on
    the next step, an option step, until an answer was taken. A reveal or a move ends it."""
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        s = student_page(host, url, code)
        s.fill("#num", "abc")
        s.keyboard.press("Enter")
        s.wait_for_selector("#student-err:has-text('must be a number')", timeout=10_000)
        host.click("#reveal")
        s.wait_for_selector("text=The truth for this model", timeout=15_000)
        assert s.inner_text("#student-err") == ""
        host.click("#next")
        s.wait_for_selector("h1:has-text('step 2 of')", timeout=10_000)
        assert s.inner_text("#student-err") == ""
        s.close()


def test_an_answer_lost_to_a_dropped_connection_is_sent_again_once_the_server_answers(url):
    """A walk-through on a flaky phone: an answer sent while the connection dropped said "try again", which the
    page cleared once the server answered again, the question shown as if the answer were in: the room never
    counted it. The page now sends it again by itself every few seconds (and at its poll's next answer) while
    the step is open."""
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        s = student_page(host, url, code)
        drop = lambda route: route.abort()  # noqa: E731 - the answer's request lost, as a phone's Wi-Fi drops it
        s.route(f"**/vizvit_room/{code}/answer", drop)
        s.fill("#num", "224")
        s.keyboard.press("Enter")
        s.wait_for_selector("#student-err:has-text('cannot be reached')", timeout=10_000)
        # the answer is said as not sent yet (a walk-through's phone read "Your prediction, before the lecturer
        # reveals." over the red line, as if nothing had been typed)
        assert s.inner_text("#unsent") == "Your answer (not sent yet): 224"
        s.unroute(f"**/vizvit_room/{code}/answer", drop)
        # no change in the room: the page's long poll does not answer, the page asks again by itself
        s.wait_for_selector("text=Your answer: 224", timeout=15_000)
        assert s.locator("#unsent").count() == 0
        host.wait_for_selector("#total:text-matches('^1 (of [0-9]+ )?answered$')", timeout=15_000)
        # an option step: the option pressed is marked (not as counted) and said not sent yet
        host.click("#next")
        s.wait_for_selector("h1:has-text('step 2 of')", timeout=15_000)
        s.route(f"**/vizvit_room/{code}/answer", drop)
        first = s.locator("button[data-k]").first
        key, words = first.get_attribute("data-k"), first.inner_text()
        first.click()
        s.wait_for_selector("#unsent", timeout=10_000)
        chosen = s.locator(f"button[data-k='{key}']")
        assert chosen.get_attribute("aria-pressed") == "true" and "unsent" in chosen.get_attribute("class")
        assert s.inner_text("#unsent") == f"Your answer (not sent yet): {words}"
        if shots := os.environ.get("VIZVIT_SHOT"):
            s.screenshot(path=f"{shots}/unsent_option.png")
        s.unroute(f"**/vizvit_room/{code}/answer", drop)
        s.wait_for_selector(f"button.chosen[data-k='{key}']:not(.unsent)", timeout=15_000)
        assert s.locator("#unsent").count() == 0
        s.close()


def test_a_student_joining_while_the_server_is_away_is_told_and_joins_when_it_is_back(url):
    """A walk-through's leftover: a phone whose hello found no server (a restart, a dropped connection) asked
    again every 2 s for as long as it took, with a blank page and no word. It now says "reconnecting…", and
    joins (the question shown) with the first hello that is answered."""
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        s = host.context.browser.new_page(viewport={"width": 390, "height": 844})
        down = lambda route: route.abort()  # noqa: E731 - the server gone, as a phone sees it
        s.route(f"**/vizvit_room/{code}/hello", down)
        s.goto(url + f"room?code={code}")
        s.wait_for_selector("#student-err:has-text('The server cannot be reached: reconnecting')", timeout=10_000)
        assert s.locator("#num").count() == 0
        s.unroute(f"**/vizvit_room/{code}/hello", down)
        s.wait_for_selector("#num", timeout=15_000)
        assert s.locator("#student-err").count() == 0 or "reconnecting" not in s.inner_text("#student-err")
        s.close()


def test_a_host_page_behind_a_captive_portal_keeps_its_room(url):
    """A review's leftover: a host page reloaded behind a captive portal (or a proxy's page: 200, HTML) read
    the lesson's answer as a room gone, and forgot the room's key, its only way back. It is now a server out of
    reach: "reconnecting…", the key kept, and the host view drawn once the room answers again."""
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        code = open_room(host)
        portal = lambda route: route.fulfill(status=200, content_type="text/html", body="<h1>Sign in to Wi-Fi</h1>")  # noqa: E731
        host.route(f"**/vizvit_room/{code}/lesson", portal)
        host.reload()
        host.wait_for_selector("#host-err:has-text('The server cannot be reached: reconnecting')", timeout=15_000)
        assert code in host.evaluate("sessionStorage.getItem('vizvit-host')")
        assert code in host.evaluate("localStorage.getItem('vizvit-hosted')")
        assert host.locator("text=Your room is gone").count() == 0
        host.unroute(f"**/vizvit_room/{code}/lesson", portal)
        host.wait_for_selector("#room-code", timeout=30_000)
        assert host.inner_text("#room-code").strip() == code


def test_a_room_is_offered_back_only_soon_after_its_host_view_ran(url):
    """A review: the rooms a browser opened stayed in its localStorage with their keys until they closed, so
    on a lecture hall's shared computer the next person at it was offered the last lecturer's room. A room
    is offered back only within page.room.HOSTED_FRESH_S of its host view's last heartbeat."""
    from page.room import HOSTED_FRESH_S

    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        ctx = host.context
        code = open_room(host)
        host.close()
        age = """([code, s]) => { const rooms = JSON.parse(localStorage.getItem('vizvit-hosted'));
            for (const r of rooms) if (r.code === code) r.seen = Date.now() - 1000 * s;
            localStorage.setItem('vizvit-hosted', JSON.stringify(rooms)); }"""
        for seconds_ago, offered in ((HOSTED_FRESH_S - 60, True), (HOSTED_FRESH_S + 60, False)):
            page = ctx.new_page()
            page.goto(url + "room?host=1")
            page.wait_for_selector("#ex")
            page.evaluate(age, [code, seconds_ago])
            page.reload()
            page.wait_for_selector("#ex")
            button = page.locator(f"button[data-room='{code}']")
            if offered:
                button.wait_for(timeout=30_000)
            else:
                page.wait_for_timeout(1500)
                assert button.count() == 0, f"offered {seconds_ago} s after its host view last ran"
            page.close()


def test_the_host_enlarges_the_steps_picture_by_click_or_keyboard(url):
    """A lecture on the trained ViT-Ti at 1366x900: the host page floats the step's figure at 42% of the column
    (380 px at most), where the positions step's panel titles and the shift step's 196 cosines were 8-10 px,
    unreadable from the hall. A click (or Enter, from the keyboard) enlarges it (1.5 times as wide at least: the
    square photo, 370 px floated, is as tall as the screen leaves above the moves); again, back."""
    size = ("() => { const i = document.getElementById('step-picture'), c = i.parentElement;"
            " return [i.getBoundingClientRect().width, c.getBoundingClientRect().width]; }")
    with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
        open_room(host)
        host.wait_for_function("() => { const i = document.getElementById('step-picture');"
                               " return i && i.complete && i.naturalWidth > 0; }")
        shown, column = host.evaluate(size)
        assert shown < 0.45 * column, (shown, column)
        host.click("#step-picture")
        host.wait_for_function(f"() => ({size})()[0] >= 1.5 * {shown}", timeout=10_000)
        host.click("#step-picture")
        host.wait_for_function(f"() => ({size})()[0] < 0.45 * ({size})()[1]", timeout=10_000)
        host.focus("#step-picture")
        host.keyboard.press("Enter")
        host.wait_for_function(f"() => ({size})()[0] >= 1.5 * {shown}", timeout=10_000)
        assert host.get_attribute("#step-picture", "aria-pressed") == "true"


# The host's buttons and the step's picture, as rects in the viewport (None: not on the page).
RECTS = ("() => Object.fromEntries(['step-picture', 'back', 'reveal', 'next', 'close', 'csv', 'lock'].map((id) => {"
         " const e = document.getElementById(id), b = e && e.getBoundingClientRect();"
         " return [id, b && [b.left, b.top, b.right, b.bottom]]; }))")


@pytest.mark.parametrize("width, height, kept", [(1366, 900, ("back", "reveal", "next", "close", "csv", "lock")),
                                                 (390, 844, ("back", "reveal", "next"))], ids=["projector", "phone"])
def test_the_enlarged_picture_keeps_the_hosts_buttons_on_screen(url, width, height, kept):
    """A walk-through on a 1366x900 projector: the enlarged photo of step 1 took the column's width, 881 px tall,
    and pushed back, Reveal and next to y=1041-1087 and Close to 1514: the lecturer scrolled in front of the class.
    Then capped to the screen's height, step 12's 12x3 head grid (730x1060) was enlarged only to 434x630, its layer
    labels ~12 px (another walk-through). Enlarged, the picture (the square photo; the positions step's tall figure
    once revealed) now takes the column's whole width under the moves, its top on the screen (it may run below the
    fold), and every button of the lecturer stays on the screen; on a phone's one column, the moves."""
    def check(what: str) -> None:
        r = host.evaluate(RECTS)
        out = {k: v for k, v in r.items() if k in kept
               and not (v and v[0] >= 0 and v[1] >= 0 and v[2] <= width and v[3] <= height)}
        scrolled = host.evaluate("scrollY")
        assert not out, f"{what} at {width}x{height}, enlarged: off the screen {out} (scrolled {scrolled})"
        pic, column = r["step-picture"], host.evaluate("document.getElementById('step-picture').parentElement"
                                                       ".getBoundingClientRect().width")
        assert 0 <= pic[1] < height - 100, f"{what}: its top at {pic[1]:.0f} px"
        assert pic[2] - pic[0] >= 0.95 * column, f"{what}: {pic[2] - pic[0]:.0f} px wide in a {column:.0f} px column"
        if shots := os.environ.get("VIZVIT_SHOT"):
            host.screenshot(path=f"{shots}/enlarged_{width}_{what.split()[1]}.png".replace("'", ""))

    def enlarge() -> list[float]:
        host.wait_for_function("() => { const i = document.getElementById('step-picture');"
                               " return i && i.complete && i.naturalWidth > 0; }")
        floated = host.evaluate(RECTS)["step-picture"]  # floated beside the question
        host.click("#step-picture")
        host.wait_for_function("() => document.getElementById('step-picture').getAttribute('aria-pressed') === 'true'")
        host.wait_for_timeout(200)  # laid out again
        return floated

    with page_at(url + "room?host=1", width=width, height=height, wait_for="#ex") as host:
        open_room(host)
        floated = enlarge()
        check("step 1's photo")
        big = host.evaluate(RECTS)["step-picture"]
        assert big[2] - big[0] >= 1.4 * (floated[2] - floated[0]), (floated, big)  # enlarged all the same
        for n in range(2, 6):  # step 5: the position embeddings, a figure taller than wide once revealed
            host.click("#next")
            host.wait_for_selector(f"text=Step {n} of", timeout=30_000)
        host.click("#reveal")
        host.wait_for_function("() => { const i = document.getElementById('step-picture');"
                               " return i && i.complete && i.src.includes('revealed') && i.naturalWidth > 0; }",
                               timeout=120_000)
        nw, nh = host.evaluate("() => { const i = document.getElementById('step-picture');"
                               " return [i.naturalWidth, i.naturalHeight]; }")
        assert nh > nw, (nw, nh)  # the constructed case: the tall figure
        floated = enlarge()
        check("step 5's revealed figure")
        big = host.evaluate(RECTS)["step-picture"]
        assert big[3] - big[1] >= floated[3] - floated[1], (floated, big)  # never smaller than floated
