"""The live room's page against hostile links, in Chromium (issue 50). Seen on the real server: a code
such as '"><IFRAME SRC=JAVASCRIPT:...>' followed by a real room code ran script in the student's and
the lecturer's page. Each link here is built on a real open room's code; each payload, if it ran, sets
window.__pwned, changes the title or opens a dialog, and makes an element the page never makes
(iframe, svg, h1#pwn, an img on a page that shows none). None may happen: the page says the code is
not valid instead. And the join form says what a code is when it is empty or malformed.
Screenshots of the student's and the host's page (joined count, lock button) at 1366 and 390 px."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from appserver import page_name
from browser import page_at, shot
from gradio_client import Client, handle_file
from tiny import EXAMPLES

from vizvit.classroom.room import ADDRESS_SHARE, BAD_CODE, BARRED, CLOSED_BY_HOST, NO_CODE, share_full

TITLE = "vizvit · live room"
RUN = "window.top.__pwned=1;document.title='PWNED';alert(1)"
PAYLOADS = [  # {c}: the real room's code; each is sent as the link's raw query text. With "/../" before the
    # code, an address built from the raw text still reaches the real room (the path's dot-segment drops the
    # markup part), so a page that put it into markup would draw the payload around a working room.
    "%22%3E%3CIMG%20SRC=X%20ONERROR=" + quote(RUN, safe="") + "%3E/../{c}",
    '"><IFRAME SRC=JAVASCRIPT:' + quote(RUN, safe="") + '><H1 ID=pwn>PWNED/../{c}',
    "%22%3E%3CSVG%20ONLOAD=" + quote(RUN, safe="") + "%3E%3CH1%20ID=pwn%3EX/../{c}",
    "{c}%22%3E%3Csvg%20onload=" + quote(RUN, safe="") + "%3E",
    "../../gradio_api/info%3F/{c}",
    "{c}/../../room%3Fhost=1",
    "%3Cscript%3E" + quote(RUN, safe="") + "%3C/script%3E{c}",
]
IDS = ["img-onerror", "iframe-javascript", "svg-onload", "code-then-svg", "path-up-to-api", "code-then-path-up",
       "script-tag"]
# What the page may hold on a refused link: its two scripts (the config, room.js), one h1, no picture.
PICTURE_SHOWN = ("() => { const i = document.getElementById('step-picture');"
                 " return i && i.complete && i.naturalWidth > 0; }")
DAMAGE_JS = """() => ({ pwned: window.__pwned === undefined ? null : String(window.__pwned), title: document.title,
  iframes: document.querySelectorAll('iframe').length, svgs: document.querySelectorAll('svg').length,
  pwn: document.querySelectorAll('#pwn').length, imgs: document.querySelectorAll('img').length,
  scripts: document.querySelectorAll('script').length,
  h1s: [...document.querySelectorAll('h1')].map((h) => h.textContent) })"""


@pytest.fixture(scope="module")
def room(url, tiny16):
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(EXAMPLES / "chelsea.jpg")), page_name(tiny16), api_name="/room_open")
    yield opened
    c.close()


def untouched(page, dialogs: list, h1: str) -> None:
    page.wait_for_function("() => !document.getElementById('app').textContent.includes('Loading')")  # drawn
    page.wait_for_timeout(500)  # an img's onerror or an iframe's load runs after the first paint
    got = page.evaluate(DAMAGE_JS)
    assert got["pwned"] is None and got["title"] == TITLE and not dialogs, (got, dialogs)
    assert got["iframes"] == got["svgs"] == got["pwn"] == got["imgs"] == 0, got
    assert got["scripts"] == 2 and got["h1s"] == [h1], got


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_a_hostile_student_link_runs_nothing_and_says_the_code_is_not_valid(url, room, payload):
    link = url + "room?code=" + payload.format(c=room["code"])
    with page_at(link, width=390, height=844, wait_for="#app") as page:
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        untouched(page, dialogs, "Join a live room")
        page.wait_for_selector(f"#join-error:has-text('{BAD_CODE}')", timeout=5_000)


@pytest.mark.parametrize("payload", PAYLOADS, ids=IDS)
def test_a_hostile_host_link_runs_nothing_and_says_the_code_is_not_valid(url, room, payload):
    key = quote(room["host_key"], safe="")
    link = url + "room?host=1&code=" + payload.format(c=room["code"]) + "#key=" + key
    with page_at(link, width=1366, height=900, wait_for="#app") as page:
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        untouched(page, dialogs, "Open a live room")
        page.wait_for_selector(f"#err:has-text('{BAD_CODE}')", timeout=5_000)
        assert "#key=" not in page.url  # the key left the address bar, even on a refused link


def test_a_hostile_key_on_a_real_code_runs_nothing(url, room):
    """The key is never shown nor put in markup: it travels in JSON bodies only. It is refused before any
    lecturer's view is drawn (tests/page/test_room.py: a wrong key is refused, not drawn)."""
    link = url + f"room?host=1&code={room['code']}#key=" + quote(f'"><img src=x onerror="{RUN}">', safe="")
    with page_at(link, width=1366, height=900, wait_for="#app") as page:
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.wait_for_selector("#err:has-text('host key does not open this room')")
        got = page.evaluate(DAMAGE_JS)
        assert got["pwned"] is None and got["title"] == TITLE and not dialogs and got["iframes"] == 0, got


def test_the_code_as_a_student_types_it_still_joins(url, room):
    """Lower case, a dash and spaces are the same code (vizvit.classroom.room.parse_code's rule, in the page too)."""
    code = room["code"]
    typed = f" {code[:4].lower()}-{code[4:].lower()} "
    with page_at(url + "room?code=" + quote(typed), width=390, height=844, wait_for="#num") as page:
        assert page.inner_text("h1").startswith(f"Room {code} · step 1 of")


def test_the_join_form_says_what_a_code_is(url, room):
    with page_at(url + "room", width=390, height=844, wait_for="#code") as page:
        page.click("#join")
        page.wait_for_selector(f"#join-error:has-text('{NO_CODE}')")
        page.fill("#code", "ABC")
        page.click("#join")
        page.wait_for_selector(f"#join-error:has-text('{BAD_CODE}')")
        page.fill("#code", '"><img src=x onerror=alert(1)>')
        page.click("#join")
        page.wait_for_selector(f"#join-error:has-text('{BAD_CODE}')")
        assert page.evaluate("() => document.querySelectorAll('img').length") == 0
        shot(page, "room_join_bad_code_390")
        page.fill("#code", room["code"].lower())
        page.click("#join")
        page.wait_for_selector("#num")
        assert page.url.endswith(f"room?code={room['code']}")
    with page_at(url + "room?code=", width=390, height=844, wait_for="#join-error") as page:
        page.wait_for_selector(f"#join-error:has-text('{NO_CODE}')")  # an empty code in a link: a sentence too


def _answer_with_contract(page, url: str, code: str) -> None:
    """Answer the room's view with the contract's fields added (27 joined, locked as last set)."""
    state = {"locked": False}

    def with_contract(route):
        view = route.fetch().json()
        route.fulfill(json={**view, "joined": 27, "locked": state["locked"]})

    def lock(route):
        state["locked"] = route.request.post_data_json["locked"]
        view = page.context.request.get(url + f"vizvit_room/{code}").json()
        route.fulfill(json={**view, "joined": 27, "locked": state["locked"]})

    page.route(f"**/vizvit_room/{code}", with_contract)
    page.route(f"**/vizvit_room/{code}/host", with_contract)  # the host page's call every 5 s: its view too
    page.route(f"**/vizvit_room/{code}/lock", lock)


def test_screenshots_of_the_student_and_the_host_page(url, room):
    """The host's page with the h/store contract's view fields (joined, locked) as that server answers
    them: the view is answered here with both added, so the page's side is seen before the server's."""
    code, key = room["code"], room["host_key"]
    for width, height in ((1366, 900), (390, 844)):
        with page_at(url + f"room?code={code}", width=width, height=height, wait_for="#num") as page:
            page.wait_for_function(PICTURE_SHOWN)
            shot(page, f"room_student_{width}")
        with page_at(url + "room", width=width, height=height, wait_for="#code") as page:
            _answer_with_contract(page, url, code)
            page.goto(url + f"room?host=1&code={code}#key={quote(key, safe='')}")
            page.wait_for_selector("#joined:text-is('27 pages joined')")
            page.wait_for_function(PICTURE_SHOWN)
            assert page.inner_text("#lock").startswith("Lock")
            shot(page, f"room_host_{width}")
            page.click("#lock")
            page.wait_for_selector("#joined:text-is('27 pages joined · locked')")
            assert page.inner_text("#lock").startswith("Unlock")
            if width == 1366:
                shot(page, "room_host_locked_1366")


def test_the_host_page_says_its_room_is_gone_and_why(url, tiny16):
    """The room closed elsewhere (the API, a restart that lost it, the idle limit): the lecturer's page
    says so with the server's reason and offers a new room; before, it went back to "Open a live room"
    without a word."""
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(EXAMPLES / "chelsea.jpg")), page_name(tiny16), api_name="/room_open")
    link = url + f"room?host=1&code={opened['code']}#key={quote(opened['host_key'], safe='')}"
    with page_at(link, width=1366, height=900, wait_for="#room-code") as page:
        c.predict(opened["code"], opened["host_key"], api_name="/room_close")
        page.wait_for_selector("#gone", timeout=30_000)
        text = page.inner_text("#gone")
        assert text.startswith(f"Room {opened['code']} is no longer open: ") and CLOSED_BY_HOST in text, text
        shot(page, "room_host_gone_1366")
        page.click("#new-room")
        page.wait_for_selector("#ex")
        page.reload()  # the gone room's key was forgotten: a reload does not try it again
        page.wait_for_selector("#ex")
    c.close()


def test_the_host_page_rides_out_a_server_that_is_away(url, tiny16):
    """The server away (a restart): the host page, reloaded meanwhile, says it is reconnecting and, once
    the server answers again, carries on with the host key it kept for the tab (sessionStorage)."""
    import httpx

    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(EXAMPLES / "chelsea.jpg")), page_name(tiny16), api_name="/room_open")
    code = opened["code"]
    link = url + f"room?host=1&code={code}#key={quote(opened['host_key'], safe='')}"
    with page_at(link, width=1366, height=900, wait_for="#room-code") as page:
        away = lambda route: route.abort()  # noqa: E731 - the server unreachable, as during a restart
        page.route("**/vizvit_room/**", away)
        page.reload()  # the address is now plain ?host=1: only the tab's sessionStorage knows the room
        page.wait_for_selector("#host-err:has-text('reconnecting')", timeout=30_000)
        page.unroute("**/vizvit_room/**", away)
        page.wait_for_selector("#room-code", timeout=30_000)
        assert page.inner_text("#room-code").strip() == code
        r = httpx.post(f"{url}vizvit_room/{code}/answer", json={"student": "stud-back", "step": 1, "answer": 224},
                       timeout=60)
        assert r.json()["accepted"] is True
        # the live tally goes on
        page.wait_for_selector("#total:text-matches('^1 (of [0-9]+ )?answered$')", timeout=30_000)
        page.click("#next")
        page.wait_for_selector("text=Step 2 of", timeout=30_000)  # and the key still moves the room
    c.close()


def _refusing(reason: str, hellos: list[int]):
    """A route handler answering each hello as the room refuses it, counted in hellos."""

    def refuse(route) -> None:
        hellos.append(1)
        route.fulfill(json={"accepted": False, "reason": reason})

    return refuse


def test_a_student_turned_away_asks_once_a_minute_and_one_over_the_share_sooner(url, room):
    """The room's refusals as a student's page meets them (the hello answered here as the server does),
    on the page's own clock run fast: a network turned away is told so and the page asks again only once
    a minute (the lecturer may let it back in); one over its network's share is told to ask the lecturer,
    and the page asks again by itself, after 10 s, then 20 s, then every 30 s."""
    code = room["code"]
    for reason in (BARRED, share_full(ADDRESS_SHARE)):
        hellos: list[int] = []
        with page_at(url + "room", width=390, height=844, wait_for="#code") as page:
            page.clock.install()
            page.route(f"**/vizvit_room/{code}/hello", _refusing(reason, hellos))
            page.goto(url + f"room?code={code}")
            page.wait_for_selector("#refused")
            assert page.inner_text("#refused") == reason
            page.wait_for_function("(r) => document.getElementById('said').textContent.includes(r)", arg=reason)
            again = "() => /asks again by itself in (\\d+) seconds/.exec(document.body.innerText)?.[1] || null"
            for k, wait in enumerate((60, 60) if reason == BARRED else (10, 20, 30, 30)):
                for _ in range(100):  # the k+1-th hello answered (real time: the page's fetches are real)
                    if len(hellos) == k + 1:
                        break
                    page.wait_for_timeout(100)
                page.wait_for_timeout(300)  # its view read and the refusal drawn, the page's sleep begun
                assert len(hellos) == k + 1 and page.evaluate(again) == str(wait), (k, len(hellos))
                page.clock.run_for(wait * 1000 + 100)


def test_a_code_of_no_open_room_stays_in_the_box_to_be_mended(url):
    """A well-formed code of no room: the join form says so and keeps the code typed (the box came back
    empty, and the student could not see what was wrong); a malformed one says what a code is."""
    with page_at(url + "room?code=abcd-2345", width=390, height=844, wait_for="#code") as page:
        page.wait_for_selector("#join-error:has-text('no open room')")
        assert page.input_value("#code") == "ABCD2345"
        page.fill("#code", "WRONGCOD")
        page.click("#join")
        page.wait_for_selector(f"#join-error:has-text('{BAD_CODE}')")
        assert "never O, 0, I or 1" in BAD_CODE
