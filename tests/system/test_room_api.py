"""The live room's public API over a loopback server (issue 45): open, step, answer, tally, close;
the students' long poll route; refusals in one plain sentence. Expected values written by hand."""

from __future__ import annotations

import io
import re
import threading
import time

import httpx
import pytest
from appserver import page_name, serving
from gradio_client import Client, handle_file
from PIL import Image
from tiny import EXAMPLES

from vizvit.classroom.room import BAD_CODE, CLOSED_BY_HOST, LOCKED, NO_NETWORK, UNKNOWN_ROOM, WRONG_KEY

PHOTO = EXAMPLES / "chelsea.jpg"


@pytest.fixture(scope="module")
def server(tiny16):
    with serving(tiny16) as (url, wb):
        yield url, page_name(tiny16)


def test_a_room_from_open_to_close(server):
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    code, key, n = opened["code"], opened["host_key"], opened["steps"]
    assert len(code) == 8 and n >= 5
    # three students answer step 1 (a number: the input side); one changes its mind
    for student, answer in (("stud-aaaa", 224), ("stud-bbbb", "196"), ("stud-cccc", 224), ("stud-bbbb", 32)):
        assert c.predict(code, 1, answer, student, api_name="/room_answer") == {"accepted": True, "reason": "",
                                                                                "answer": str(answer)}
    ahead = c.predict(code, 2, "b", "stud-aaaa", api_name="/room_answer")
    assert ahead["accepted"] is False and "not open yet" in ahead["reason"]
    assert c.predict(code, key, 1, api_name="/room_tally") == {
        "step": 1, "answers": {"224": 2, "32": 1}, "total": 3, "bars": [["224", 2], ["32", 1]], "others": 0}
    shown = c.predict(code, key, 1, True, api_name="/room_step")
    assert shown["step"] == 1 and shown["revealed"] == [1]
    assert shown["truth"] == "224"  # tiny16 reads a 224-pixel square (tests/tiny.py)
    assert shown["tally"]["total"] == 3 and "photo" not in shown
    moved = c.predict(code, key, 2, api_name="/room_step")
    assert moved["step"] == 2 and "truth" not in moved
    assert c.predict(code, 2, "b", "stud-aaaa", api_name="/room_answer")["accepted"] is True
    late = c.predict(code, 1, 5, "stud-dddd", api_name="/room_answer")
    assert late["accepted"] is False and "closed" in late["reason"]
    assert c.predict(code, key, api_name="/room_close") == {"closed": True}
    gone = c.predict(code, 2, "b", "stud-aaaa", api_name="/room_answer")
    assert gone == {"accepted": False, "reason": CLOSED_BY_HOST}
    assert c.predict("ABCD2345", 2, "b", "stud-aaaa", api_name="/room_answer") == {"accepted": False,
                                                                                 "reason": UNKNOWN_ROOM}


def test_wrong_key_and_unknown_code_are_refused_plainly(server):
    url, model = server
    c = Client(url, verbose=False)
    code = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")["code"]
    for endpoint, args in (("/room_step", (code, "wrong", 2)), ("/room_tally", (code, "wrong", 1)),
                           ("/room_close", (code, "wrong"))):
        with pytest.raises(Exception) as e:
            c.predict(*args, api_name=endpoint)
        assert WRONG_KEY in str(e.value), str(e.value)
    with pytest.raises(Exception) as e:
        c.predict("ABCD2345", "k", 1, api_name="/room_tally")  # well-formed, no such room
    assert UNKNOWN_ROOM in str(e.value)
    with pytest.raises(Exception) as e:
        c.predict("NOPE9", "k", 1, api_name="/room_tally")  # not a code at all: refused before anything else
    assert BAD_CODE in str(e.value)


def test_a_waiting_student_page_hears_the_step_at_once(server):
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    code, key = opened["code"], opened["host_key"]
    first = httpx.get(f"{url}vizvit_room/{code}", timeout=60).json()  # no version: the state at once
    assert first["step"] == 1 and first["closed"] is False and "photo" not in first
    got = {}

    def wait() -> None:
        t = time.monotonic()
        got["state"] = httpx.get(f"{url}vizvit_room/{code}?v={first['version']}", timeout=60).json()
        got["s"] = time.monotonic() - t

    th = threading.Thread(target=wait)
    th.start()
    time.sleep(1.0)
    assert th.is_alive(), "a long poll waits while nothing changes"
    c.predict(code, key, 3, api_name="/room_step")
    th.join(timeout=30)
    assert got["state"]["step"] == 3 and got["state"]["version"] == first["version"] + 1
    c.predict(code, key, api_name="/room_close")
    closed = httpx.get(f"{url}vizvit_room/{code}?v={first['version']}", timeout=60).json()
    assert closed["closed"] is True and closed["error"] == CLOSED_BY_HOST  # why, not "no such room"
    unknown = httpx.get(f"{url}vizvit_room/ABCD2345?v=3", timeout=60).json()
    assert unknown["closed"] is True and unknown["error"] == UNKNOWN_ROOM


def test_the_reveal_needs_no_file_on_disk(tiny16, tmp_path):
    """Gradio's cache cleaner may remove an upload during a lecture: the room keeps its photo."""
    import shutil

    from vizvit.api import PublicApi
    from vizvit.session import Workbench

    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(tiny16)
    api = PublicApi(wb)
    path = tmp_path / "cat.jpg"
    shutil.copy(PHOTO, path)
    opened = api.room_open(str(path), tiny16.id)
    path.unlink()
    wb._photos.clear()  # and the Workbench's photo store evicted it
    shown = api.room_step(opened["code"], opened["host_key"], 1, True)
    assert shown["truth"] == "224"


def test_a_reveal_not_measured_ahead_reaches_the_pages_with_its_truth(tiny16, monkeypatch):
    """A step not measured ahead (the server restarted before its background measure got there): every
    page woken by the reveal reads its truth. Before, the room moved first and measured after: the phones
    drew the revealed bars without a truth for the seconds the measure took."""
    from vizvit.api import PublicApi, UserError
    from vizvit.classroom.room import Rooms
    from vizvit.session import Workbench

    monkeypatch.setattr(PublicApi, "room_prepare", lambda self, code: None)  # as after a restart
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(tiny16)
    api = PublicApi(wb)
    opened = api.room_open(str(PHOTO), tiny16.id)
    code, key = opened["code"], opened["host_key"]
    woken = []
    move = Rooms.move

    def watched(self, *a, **k):  # what a page reads the instant the reveal wakes it
        st = move(self, *a, **k)
        woken.append(self.view(code)["shown"].get("1", {}).get("truth"))
        return st

    monkeypatch.setattr(Rooms, "move", watched)
    with pytest.raises(UserError, match=re.escape(WRONG_KEY)):  # a stranger costs no measure
        api.room_step(code, "wrong", 1, True)
    assert api.room_step(code, key, 1, True)["truth"] == "224"
    assert woken == ["224"]


def test_the_host_pages_plain_step_route_moves_reveals_and_serves_the_pictures(server):
    """POST vizvit_room/{code}/step (the host page's move, outside Gradio's queue): the same checks as
    /room_step, the room's view back; the step's picture is the photo until its reveal, then its figure."""
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    code, key = opened["code"], opened["host_key"]
    step = f"{url}vizvit_room/{code}/step"
    wrong = httpx.post(step, json={"host_key": "wrong", "step": 2}, timeout=60)
    assert wrong.status_code == 400 and wrong.json() == {"error": WRONG_KEY}
    bad = httpx.post(step, json={"host_key": key, "step": 99}, timeout=60)
    assert bad.status_code == 400 and "step must be a whole number" in bad.json()["error"]
    assert httpx.post(step, content=b"not json", timeout=60).status_code == 400
    photo = httpx.get(f"{url}vizvit_room/{code}/picture/0", timeout=60)
    assert photo.status_code == 200 and photo.headers["content-type"] == "image/jpeg"
    assert Image.open(io.BytesIO(photo.content)).size == (224, 224)  # what tiny16 reads (tests/tiny.py)
    assert httpx.get(f"{url}vizvit_room/{code}/picture/2", timeout=60).content == photo.content  # not revealed
    c.predict(code, 2, "b", "stud-aaaa", api_name="/room_answer")  # refused: step 2 is not open yet
    moved = httpx.post(step, json={"host_key": key, "step": 2}, timeout=60).json()
    assert moved["step"] == 2 and moved["shown"] == {}
    assert c.predict(code, 2, "b", "stud-aaaa", api_name="/room_answer")["accepted"] is True
    shown = httpx.post(step, json={"host_key": key, "step": 2, "reveal": True}, timeout=60).json()
    assert shown["revealed"] == [2]
    two = shown["shown"]["2"]
    assert two["truth"] == "b" and "196 patches" in two["line"] and two["tally"] == {
        "step": 2, "answers": {"b": 1}, "total": 1}
    assert two["picture"] is True
    grid = httpx.get(f"{url}vizvit_room/{code}/picture/2?revealed=1", timeout=60)
    assert grid.status_code == 200 and grid.content != photo.content
    assert Image.open(io.BytesIO(grid.content)).size[0] > 224  # the Patches tab's grid, drawn larger
    assert httpx.get(f"{url}vizvit_room/ABCD2345/picture/1", timeout=60).json() == {"error": UNKNOWN_ROOM}
    malformed = httpx.get(f"{url}vizvit_room/NOPE9/picture/1", timeout=60)
    assert malformed.status_code == 400 and malformed.json() == {"error": BAD_CODE}
    assert c.predict(code, key, 2, True, api_name="/room_step")["truth"] == "b"  # the public API: the same
    c.predict(code, key, api_name="/room_close")


def test_the_room_pages_answer_and_tally_routes_count_like_the_public_api(server):
    """POST vizvit_room/{code}/answer and /tally (the page's, outside Gradio's queue): one answer per
    student per step, a change replaces, refusals in one sentence; the tally needs the host key."""
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    code, key = opened["code"], opened["host_key"]

    def answer(student, step, value):
        return httpx.post(f"{url}vizvit_room/{code}/answer", json={"student": student, "step": step, "answer": value},
                          timeout=60).json()

    assert answer("stud-aaaa", 1, "224") == {"accepted": True, "reason": "", "answer": "224"}
    assert answer("stud-bbbb", 1, 196) == {"accepted": True, "reason": "", "answer": "196"}
    assert answer("stud-bbbb", 1, "224,0") == {"accepted": True, "reason": "", "answer": "224"}  # changed: replaces
    assert c.predict(code, 1, 7, "stud-cccc", api_name="/room_answer")["accepted"] is True  # the API: same room
    assert answer("stud-aaaa", 2, "b")["accepted"] is False
    assert "must be a number" in answer("stud-dddd", 1, "many")["reason"]
    assert "random id" in answer("x", 1, 3)["reason"]
    tally = httpx.post(f"{url}vizvit_room/{code}/tally", json={"host_key": key, "step": 1}, timeout=60).json()
    assert tally == {"step": 1, "answers": {"224": 2, "7": 1}, "total": 3, "bars": [["224", 2], ["7", 1]], "others": 0}
    refused = httpx.post(f"{url}vizvit_room/{code}/tally", json={"host_key": "nope", "step": 1}, timeout=60)
    assert refused.status_code == 400 and refused.json() == {"error": WRONG_KEY}
    assert httpx.post(f"{url}vizvit_room/{code}/answer", content=b"[", timeout=60).json()["accepted"] is False
    c.predict(code, key, api_name="/room_close")
    assert answer("stud-aaaa", 1, "224") == {"accepted": False, "reason": CLOSED_BY_HOST}


def test_the_host_heartbeat_lock_and_hello_routes(server):
    """POST vizvit_room/{code}/host, /lock and /hello (issue 50): the view gains joined and locked; a
    locked room refuses a new student's hello and answer in one sentence, not one already in; any
    value to any route gets a sentence."""
    url, model = server
    c = Client(url, verbose=False)
    opened = c.predict(handle_file(str(PHOTO)), model, api_name="/room_open")
    code, key = opened["code"], opened["host_key"]
    room = f"{url}vizvit_room/{code}"

    def post(path, body, **kw):
        return httpx.post(f"{room}/{path}", timeout=60, **({"json": body} if body is not None else kw))

    assert post("hello", {"student": "stud-aaaa"}).json() == {"accepted": True, "reason": "", "answers": {}}
    seen = post("host", {"host_key": key}).json()
    assert seen["joined"] == 1 and seen["locked"] is False and seen["code"] == code
    assert post("host", {"host_key": "nope"}).json() == {"error": WRONG_KEY}
    locked = post("lock", {"host_key": key, "locked": True})
    assert locked.status_code == 200 and locked.json()["locked"] is True
    assert httpx.get(room, timeout=60).json()["locked"] is True  # the students' view shows it
    assert post("hello", {"student": "stud-bbbb"}).json() == {"accepted": False, "reason": LOCKED}
    assert post("answer", {"student": "stud-bbbb", "step": 1, "answer": 3}).json() == {"accepted": False,
                                                                                    "reason": LOCKED}
    assert post("answer", {"student": "stud-aaaa", "step": 1, "answer": 3}).json()["accepted"] is True
    for path, body in (("lock", {"host_key": key, "locked": "yes"}), ("lock", {"host_key": key}),
                       ("hello", {"student": 5}), ("host", {}), ("hello", ["x"]), ("turn_away", {}),
                       ("turn_away", {"host_key": ["x"]}), ("turn_away", "a string"),
                       ("let_in", {"host_key": key, "network": ["x"]}), ("let_in", {"host_key": key, "network": 5})):
        got = post(path, body)
        assert got.status_code in (200, 400) and (got.json().get("error") or got.json().get("reason")), (path, body)
    assert post("turn_away", {"host_key": key, "network": "0" * 16}).json() == {"error": NO_NETWORK}
    for path in ("host", "lock", "hello", "turn_away", "let_in"):
        got = post(path, None, content=b"\xff not json")
        assert got.status_code == 400 and "JSON" in str(got.json()), path
    assert post("lock", {"host_key": key, "locked": False}).json()["locked"] is False
    assert post("hello", {"student": "stud-bbbb"}).json()["accepted"] is True
    gone = httpx.post(f"{url}vizvit_room/ABCD2345/hello", json={"student": "stud-aaaa"}, timeout=60).json()
    assert gone == {"accepted": False, "reason": UNKNOWN_ROOM}
    c.predict(code, key, api_name="/room_close")
