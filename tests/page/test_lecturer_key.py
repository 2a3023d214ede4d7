"""A server started with a lecturer key (VIZVIT_LECTURER_KEY) opens rooms only for those who give it: a
stranger holding the page's link can no longer take the rooms a department's lectures need (a public Space's
rooms were open to anyone within the per-address shares). Refused before the photo is analysed, a wrong key
spends one of its address's tries (no guessing at speed), and both pages that open rooms ask for it."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from appserver import page_name, serving
from browser import page_at
from tiny import EXAMPLES

from page import guard
from vizvit.classroom.room import KEY_NEEDED, LECTURER_KEY_MAX, WRONG_LECTURER_KEY, Rooms

KEY = "correct horse battery staple"
PHOTO = EXAMPLES / "chelsea.jpg"


class Clock:
    """The guard's clock, frozen: no try comes back during the test."""

    t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def server(tiny16):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(guard, "CLOCK", Clock())
        with serving(tiny16, rooms=Rooms(lecturer_key=KEY)) as (url, _):
            yield url, page_name(tiny16)


def _open(client: httpx.Client, url: str, data: list) -> tuple[str, object]:
    """room_open over plain REST (a new session each call) -> ("", the room) or (the error, None)."""
    r = client.post(f"{url}gradio_api/call/room_open", json={"data": data})
    text = client.get(f"{url}gradio_api/call/room_open/{r.json()['event_id']}").text
    payload = json.loads(re.findall(r"^data: (.*)$", text, re.M)[-1])
    if "event: error" in text:
        return (payload or {}).get("error") or "?", None
    return "", payload[0]


def test_rooms_need_the_key_and_a_wrong_one_costs_a_try(server):
    url, model = server
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.21"), timeout=120) as c:
        path = c.post(url + "gradio_api/upload", files={"files": ("chelsea.jpg", PHOTO.read_bytes(),
                                                                  "image/jpeg")}).json()[0]
        photo = {"path": path, "meta": {"_type": "gradio.FileData"}}
        assert _open(c, url, [photo, model])[0].startswith("room_open takes 3 values")  # every value, in order
        assert _open(c, url, [photo, model, ""]) == (KEY_NEEDED, None)
        for hostile in ("", "   ", "correct horse", KEY + "!", KEY.upper(), "x" * 100_000, "ключ 🔑"):
            assert _open(c, url, [photo, model, hostile])[0] in (KEY_NEEDED, WRONG_LECTURER_KEY), hostile
        # a wrong key is refused before the photo is looked at: a stranger costs no analysis
        assert _open(c, url, [photo, "no/such-model", "guess"])[0] == WRONG_LECTURER_KEY
        err, opened = _open(c, url, [photo, model, KEY])
        assert err == "" and re.fullmatch(r"[A-Z2-9]{8}", opened["code"]), err
        assert _open(c, url, [photo, model, f"  {KEY} "])[0] == ""  # pasted with spaces around it
        # 9 refusals and 2 rooms spent 11 tries: the rest go to guesses, then the address is told to wait,
        # even with the right key
        spent = 11
        for i in range(int(guard.OPENS.burst) - spent):
            assert _open(c, url, [photo, model, f"guess {i}"])[0] == WRONG_LECTURER_KEY
        assert _open(c, url, [photo, model, KEY])[0].startswith("Too many rooms opened from this address")


def test_the_rooms_start_page_asks_for_the_key(server):
    url, _ = server
    with page_at(url + "room?host=1", width=390, height=844, wait_for="#ex") as host:
        box = host.locator("#lkey")
        assert box.get_attribute("type") == "password" and box.get_attribute("maxlength") == str(LECTURER_KEY_MAX)
        assert "Lecturer key" in host.inner_text("label[for=lkey]")
        box.fill("not the key")
        host.click("#ex")
        host.wait_for_selector(f"#err:has-text('{WRONG_LECTURER_KEY}')", timeout=60_000)
        box.fill(KEY)
        host.click("#ex")
        host.wait_for_selector("#room-code", timeout=120_000)
        # The lecturer closes the room and leaves a shared lecture-hall computer: the department's key was
        # kept in the tab (sessionStorage) and typed again in the start page's box for whoever sat down next.
        host.click("#close")
        host.click("#close-yes")
        host.wait_for_selector("#ex", timeout=60_000)
        assert host.locator("#lkey").input_value() == ""
        assert KEY not in json.dumps(host.evaluate("() => ({...sessionStorage, ...localStorage})"))


def test_the_lesson_tabs_button_asks_for_the_key(server):
    url, _ = server
    with page_at(url + "?lesson=1&step=1&example=chelsea") as page:
        page.wait_for_selector("#lesson-step:has-text('Step 1 of')", timeout=60_000)
        page.wait_for_selector("#upload:has-text('chelsea')")
        page.click("#lesson-room-open")
        page.wait_for_selector(f"text={KEY_NEEDED}", timeout=60_000)
        assert not page.locator("#lesson-room-info").is_visible()
        page.locator("#lesson-lecturer-key input").fill(KEY)
        page.click("#lesson-room-open")
        page.wait_for_selector("#lesson-room-info:has-text('is open')", timeout=60_000)
        # emptied once it opened the room: the next person at a shared computer does not hold the key
        page.wait_for_function("document.querySelector('#lesson-lecturer-key input').value === ''", timeout=10_000)


def test_the_room_page_is_told_this_servers_key_rule_and_room_share():
    """The room page's config comes from this server's Rooms: whether opening takes the key, and how many rooms
    one address may hold (the page offers back as many; it read the module's default, whatever the server's)."""
    from fastapi import FastAPI
    from starlette.testclient import TestClient

    import page.room as pr

    for rooms, needs, most in ((Rooms(), False, 12), (Rooms(lecturer_key=KEY, roomy_per_owner=5), True, 5)):
        app = FastAPI()
        app.router.routes.extend(pr.page_routes(rooms))
        html = TestClient(app).get("/room").text
        config = json.loads(re.search(r"window.VIZVIT_ROOM = (\{.*?\});", html).group(1))
        assert (config["needs_key"], config["hosted_max"]) == (needs, most)
