"""Rooms no stranger can break (issue 50), over a loopback server whose guard's clock is frozen: callers on
distinct 127.0.0.x
addresses (Linux answers the whole 127/8 on loopback; the server listens on 127.0.0.1 only).
A burst of wrong codes from one address is answered as guesses about 20 times, then "Too many tries"
on every surface that takes a code; another address is unaffected, and an open room's own code is
never slowed. New students per address are limited too. Expected numbers from page/guard.py's
rates as the issue states them (at most 60 guesses of 300, a class of 300 within a minute)."""

from __future__ import annotations

import json
import os
import re

import httpx
import pytest
from appserver import page_name, serving
from gradio_client import Client, handle_file
from tiny import EXAMPLES

from page import guard
from vizvit.classroom import room as room_mod
from vizvit.classroom.room import BAD_CODE, CLOSED_BY_HOST, UNKNOWN_ROOM

PHOTO = EXAMPLES / "chelsea.jpg"
TOO_MANY = re.compile(r"^Too many tries: wait \d+ s\.$")
WRONG = [f"ABCD{a}{b}{c}{d}" for a in "2345" for b in "6789" for c in "2345" for d in "6789"]  # 256 well-formed codes


class Clock:
    """The guard's clock, frozen: no bucket refills unless a test moves it (no timing in these tests)."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(scope="module")
def clock():
    return Clock()


@pytest.fixture(scope="module")
def server(tiny16, clock):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(guard, "CLOCK", clock)
        with serving(tiny16) as (url, wb):
            yield url, page_name(tiny16)


@pytest.fixture(scope="module")
def room(server):
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    yield opened
    c.close()


def client_at(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=60)


def rest_error(http: httpx.Client, url: str, endpoint: str, data: list) -> str:
    """The error sentence of one public API call over REST (Gradio's SSE answer), '' when it succeeded."""
    r = http.post(f"{url}gradio_api/call/{endpoint}", json={"data": data})
    assert r.status_code == 200, r.text
    text = http.get(f"{url}gradio_api/call/{endpoint}/{r.json()['event_id']}").text
    if "event: error" not in text:
        return ""
    return (json.loads(re.findall(r"^data: (.*)$", text, re.M)[-1]) or {}).get("error") or "?"


def test_a_burst_of_wrong_codes_is_slowed_and_another_address_is_not(server, room, clock):
    url, _ = server
    surfaces = ["{}", "{}/lesson", "{}/picture/0", "{}/join", "{}?v=3"]  # every GET route that takes a code
    answers: list[tuple[int, str]] = []
    with client_at("127.0.0.2") as guesser:
        for i in range(300):
            code = WRONG[i % len(WRONG)] if i % 10 else "NOPE9"  # mostly well-formed, some malformed
            r = guesser.get(url + "vizvit_room/" + surfaces[i % len(surfaces)].format(code))
            answers.append((r.status_code, r.json()["error"]))
        guesses = [a for a in answers if a[1] in (UNKNOWN_ROOM, BAD_CODE)]
        slowed = [a for a in answers if TOO_MANY.match(a[1])]
        assert len(guesses) == 20, "a burst of 20 wrong codes is answered (a student's typos), then none"
        assert len(guesses) <= 60, f"{len(guesses)} of 300 wrong codes answered as guesses"  # the bound
        assert len(guesses) + len(slowed) == 300, [a for a in answers if a not in guesses + slowed][:3]
        assert all(status == 429 for status, _ in slowed)
        # the POST routes and the public API refuse this address too, in the same sentence
        r = guesser.post(f"{url}vizvit_room/{WRONG[7]}/answer", json={"student": "stud-aaaa", "step": 1, "answer": 3})
        assert r.status_code == 429 and TOO_MANY.match(r.json()["error"])
        assert TOO_MANY.match(rest_error(guesser, url, "room_tally", [WRONG[8], "key", 1]))
        assert TOO_MANY.match(rest_error(guesser, url, "room_answer", ["NOPE9", 1, 3, "stud-aaaa"]))
        # an open room's code costs nothing: the guesser's own class still works
        ok = guesser.post(f"{url}vizvit_room/{room['code']}/answer",
                          json={"student": "stud-gggg", "step": 1, "answer": 3})
        assert ok.json() == {"accepted": True, "reason": "", "answer": "3"}
        assert guesser.get(f"{url}vizvit_room/{room['code']}").json()["step"] == 1
    with client_at("127.0.0.3") as other:  # another address is unaffected
        r = other.get(f"{url}vizvit_room/{WRONG[0]}")
        assert r.status_code == 200 and r.json()["error"] == UNKNOWN_ROOM
        r = other.get(f"{url}vizvit_room/not-a-code/lesson")
        assert r.status_code == 400 and r.json() == {"error": BAD_CODE}
        assert UNKNOWN_ROOM in rest_error(other, url, "room_tally", [WRONG[1], "key", 1])
    with client_at("127.0.0.2") as guesser:  # a second later: one more guess (a token a second)
        clock.t += 1.0
        assert guesser.get(f"{url}vizvit_room/{WRONG[9]}").json()["error"] == UNKNOWN_ROOM
        assert TOO_MANY.match(guesser.get(f"{url}vizvit_room/{WRONG[10]}").json()["error"])


def test_a_closed_rooms_pages_hear_it_at_no_cost(server):
    """A class's 300 pages asking after their room closed, from one NAT address: each hears "closed",
    none "Too many tries" (the code was open: no guess)."""
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    with client_at("127.0.0.4") as hall:
        assert hall.get(f"{url}vizvit_room/{opened['code']}").json()["closed"] is False
        c.predict(opened["code"], opened["host_key"], api_name="/room_close")
        for _ in range(60):
            r = hall.get(f"{url}vizvit_room/{opened['code']}?v=0")
            assert r.status_code == 200 and r.json()["closed"] is True and r.json()["error"] == CLOSED_BY_HOST
    c.close()


def test_new_students_per_address_are_limited_known_ones_never(server, room):
    """A class of 300 behind one NAT joins at once; beyond, new students from that address wait
    (two rooms: the join count is the address's, whatever the room). The lecturer's page calls from the
    hall's network (its laptop is there), so that address has no share of the rooms."""
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    second = opened["code"]
    c.close()
    with client_at("127.0.0.5") as nat:
        for code, key in ((room["code"], room["host_key"]), (second, opened["host_key"])):
            assert nat.post(f"{url}vizvit_room/{code}/host", json={"host_key": key}).status_code == 200
        got = [nat.post(f"{url}vizvit_room/{code}/answer", json={"student": f"stuffed-{i:04d}", "step": 1, "answer": 5})
               for code, i in [(room["code"], i) for i in range(200)] + [(second, i) for i in range(200, 380)]]
        accepted = sum(r.status_code == 200 and r.json()["accepted"] for r in got)
        refused = [r for r in got if r.status_code == 429]
        assert accepted == 300, "a class of 300 behind one NAT joins at once, then no one more"
        assert refused and accepted + len(refused) == 380
        too_many = "Too many new students from this network at once: wait "
        assert all(r.json()["error"].startswith(too_many) for r in refused)
        again = nat.post(f"{url}vizvit_room/{room['code']}/answer",
                         json={"student": "stuffed-0000", "step": 1, "answer": 6})
        assert again.json() == {"accepted": True, "reason": "", "answer": "6"}, "a student who joined changes freely"
        # the public API counts the same bucket
        assert rest_error(nat, url, "room_answer", [second, 1, 5, "stuffed-api-1"]).startswith("Too many new students")
    with client_at("127.0.0.6") as other:
        r = other.post(f"{url}vizvit_room/{room['code']}/answer",
                       json={"student": "other-0001", "step": 1, "answer": 5})
        assert r.json() == {"accepted": True, "reason": "", "answer": "5"}


@pytest.mark.slow
def test_rooms_opened_per_address_are_limited(server, clock):
    """OPENS.burst rooms from one address (each closed again: the server's own limit is not the one
    seen here), then "Too many rooms"; a refused photo costs no try; a minute later, one more."""
    url, model = server
    with client_at("127.0.0.7") as opener:
        # bytes of its own after the JPEG's end (ignored by decoders): Gradio files an upload under its
        # content's hash in a temp folder other servers on this machine share, and clean on closing
        data = PHOTO.read_bytes() + os.urandom(16)
        path = opener.post(url + "gradio_api/upload", files={"files": ("chelsea.jpg", data, "image/jpeg")}).json()[0]
        photo = {"path": path, "meta": {"_type": "gradio.FileData"}}
        assert "uploaded file" in rest_error(opener, url, "room_open", [{"path": "/etc/hostname"}, model, ""])

        def open_and_close() -> str:
            r = opener.post(f"{url}gradio_api/call/room_open", json={"data": [photo, model, ""]})
            text = opener.get(f"{url}gradio_api/call/room_open/{r.json()['event_id']}").text
            payload = json.loads(re.findall(r"^data: (.*)$", text, re.M)[-1])
            if "event: error" in text:
                return (payload or {}).get("error") or "?"
            assert rest_error(opener, url, "room_close", [payload[0]["code"], payload[0]["host_key"]]) == ""
            return ""

        errors = [open_and_close() for _ in range(int(guard.OPENS.burst) + 1)]
        assert errors[:-1] == [""] * int(guard.OPENS.burst), errors
        assert errors[-1].startswith("Too many rooms opened from this address: wait "), errors
        clock.t += 1 / guard.OPENS.per_s
        assert open_and_close() == ""


def test_a_stranger_minting_students_gets_one_share_and_the_lecturer_turns_it_away(server):
    """Over the plain routes: one address other than the lecturer's fills its share of a room, then is
    refused with the reason; the host page's call hears how many it brought, turns them away (their
    answers go), and the address joins no more until let in. The lecturer's hall is unaffected."""
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    c.close()
    code, key = opened["code"], opened["host_key"]
    share = room_mod.ADDRESS_SHARE
    with client_at("127.0.0.8") as stranger, client_at("127.0.0.9") as hall:
        assert hall.post(f"{url}vizvit_room/{code}/host", json={"host_key": key}).json()["crowd"] == {"others": 0}
        got = [stranger.post(f"{url}vizvit_room/{code}/answer",
                             json={"student": f"minted-{i:04d}", "step": 1, "answer": 999}).json()
               for i in range(share + 3)]
        assert [g["accepted"] for g in got] == [True] * share + [False] * 3
        assert got[-1]["reason"] == room_mod.share_full(share)
        for i in range(4):
            r = hall.post(f"{url}vizvit_room/{code}/answer", json={"student": f"hall-{i:04d}", "step": 1,
                                                                   "answer": 196})
            assert r.json()["accepted"] is True
        seen = hall.post(f"{url}vizvit_room/{code}/host", json={"host_key": key}).json()
        assert seen["joined"] == share + 4 and seen["crowd"]["students"] == share
        assert "127.0.0" not in json.dumps(seen), "no address reaches the host page"
        tally = hall.post(f"{url}vizvit_room/{code}/tally", json={"host_key": key, "step": 1}).json()
        assert tally["answers"] == {"999": share, "196": 4}

        network = seen["crowd"]["network"]
        guessed = stranger.post(f"{url}vizvit_room/{code}/turn_away", json={"host_key": "guessed", "network": network})
        assert guessed.json() == {"error": room_mod.WRONG_KEY}
        out = hall.post(f"{url}vizvit_room/{code}/turn_away", json={"host_key": key, "network": network}).json()
        assert (out["turned_away"], out["joined"], out["crowd"]) == (share, 4, {"others": 0})
        again = hall.post(f"{url}vizvit_room/{code}/turn_away", json={"host_key": key, "network": network}).json()
        assert (again["turned_away"], again["joined"]) == (0, 4), "a second click turns nobody else away"
        bogus = hall.post(f"{url}vizvit_room/{code}/turn_away", json={"host_key": key, "network": "f" * 16}).json()
        assert bogus == {"error": room_mod.NO_NETWORK}
        tally = hall.post(f"{url}vizvit_room/{code}/tally", json={"host_key": key, "step": 1}).json()
        assert tally["answers"] == {"196": 4}
        refused = stranger.post(f"{url}vizvit_room/{code}/hello", json={"student": "minted-9999"}).json()
        assert refused == {"accepted": False, "reason": room_mod.BARRED}
        assert hall.post(f"{url}vizvit_room/{code}/hello", json={"student": "hall-late-1"}).json()["accepted"] is True
        back = hall.post(f"{url}vizvit_room/{code}/let_in", json={"host_key": key, "network": network,
                                                                   "trust": False}).json()
        assert back["joined"] == 5  # undone: it may join again, with its share
        got = [stranger.post(f"{url}vizvit_room/{code}/hello", json={"student": f"again-{i:04d}"}).json()["accepted"]
               for i in range(share + 1)]
        assert got == [True] * share + [False]
