"""The API's edge (issue 42): every public endpoint, sent every kind of bad value over plain REST
(and a representative set through gradio_client: CLIENT_PHOTOS), answers with a message a caller
can act on, that shows nothing of the server (no path, no object repr, no traceback), and leaves no
traceback in the server's log; Gradio's own file route and upload route too. The expectations are
written by hand, per case: nothing here calls the code under test to decide what is right."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from appserver import page_name, serving
from gradio_client import Client
from tiny import EXAMPLES

from page import guard
from page.endpoints import PUBLIC_ENDPOINTS

PHOTO = EXAMPLES / "chelsea.jpg"
NOT_UPLOADED = "photo must be an uploaded file (gradio_client: handle_file(path))"
GENERIC = "Something went wrong"  # kit.safe's words for an unexpected exception: a bug, not a refusal
HERE = Path(__file__).resolve().parents[2]
FILE_META = {"_type": "gradio.FileData"}

# A photo argument that is not an uploaded file. With FileData's meta, Gradio checks it itself
# (before the handler); without it, only the handler can.
BAD_PHOTOS = {
    "float": 1.5, "list": [1, 2], "string": "chelsea.jpg", "None": None, "dict without path": {"name": "x.jpg"},
    "bare server path": {"path": str(HERE / "assets" / "examples" / "chelsea.jpg")},
    "server path with meta": {"path": str(HERE / "app.py"), "meta": FILE_META},
    "relative path with meta": {"path": "../../etc/hostname", "meta": FILE_META},
    "empty path": {"path": "", "meta": FILE_META},
    "URL with meta": {"path": "http://127.0.0.1:9/cat.jpg", "meta": FILE_META},  # never fetched by the server
}
# Wrong types for every other argument: each is refused with a message, or (None for a list, say)
# taken as the default; never a traceback.
BAD_VALUES = {"float": 1.5, "huge": 10 ** 30, "string": "x", "None": None, "list": [1],
              "dict with a path": {"path": "/etc/passwd"}}


def shows_nothing_of_the_server(message: str) -> None:
    """A message a caller can read: words, no absolute path, no repr, no traceback, no generic failure."""
    assert message and message.strip(), "an empty message says nothing"
    assert "Traceback" not in message and 'File "' not in message
    assert not re.search(r"0x[0-9a-fA-F]{6,}|object at", message), message
    assert not re.search(r"(?<![\w.])/[\w.@-]+/", message), f"a path: {message}"  # /x/..., not "a/b"
    for secret in (str(HERE), tempfile.gettempdir() + "/", "site-packages", os.path.expanduser("~")):
        assert secret not in message, f"{secret} in {message}"
    assert GENERIC not in message, f"an unexpected exception, not a refusal: {message}"


# How far the room guard's clock runs ahead of time.monotonic: a test that sends many bad room codes
# moves it an hour on first, so every caller's tokens are whole (page/guard.py: WRONG_CODES, 20 at once).
# Each endpoint's bad codes fit in one burst; the module's endpoints together do not, and whether the
# bucket refilled between them was up to the machine's speed ("Too many tries: wait 1 s.", once here).
GUARD_AHEAD_S = [0.0]


@pytest.fixture(scope="module")
def server(tiny16):
    clock = guard.CLOCK  # read by the Guard the page builds: set before serving builds it
    guard.CLOCK = lambda: clock() + GUARD_AHEAD_S[0]
    try:
        with serving(tiny16) as (url, wb):
            yield url, page_name(tiny16)
    finally:
        guard.CLOCK = clock


@pytest.fixture(scope="module")
def client(server) -> Iterator[Client]:
    """One gradio_client for the module (connecting reads the config and the API info: seconds)."""
    c = Client(server[0], verbose=False)
    yield c
    c.close()


@pytest.fixture
def log_has_no_traceback(caplog, capfd):
    """After the test: no log record carries an exception, and nothing printed one (queueing.py's
    traceback.print_exc writes to stderr)."""
    caplog.set_level(logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request: noise
    yield
    err = capfd.readouterr().err
    assert "Traceback" not in err, err[-3000:]
    with_exc = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not with_exc, [r.getMessage() for r in with_exc]


def uploaded(url: str) -> dict:
    with open(PHOTO, "rb") as f:
        r = httpx.post(url + "gradio_api/upload", files={"files": ("chelsea.jpg", f, "image/jpeg")}, timeout=60)
    r.raise_for_status()
    return {"path": r.json()[0], "meta": FILE_META}


def rest(url: str, endpoint: str, data: list) -> tuple[bool, str]:
    """(succeeded, the answer's text or error message) of one call over Gradio's REST API."""
    r = httpx.post(f"{url}gradio_api/call/{endpoint}", json={"data": data}, timeout=60)
    if r.status_code != 200:
        detail = r.json().get("detail")
        return False, detail if isinstance(detail, str) else json.dumps(detail)
    event = r.json()["event_id"]
    text = httpx.get(f"{url}gradio_api/call/{endpoint}/{event}", timeout=300).text
    kind = re.findall(r"^event: (\w+)", text, re.M)[-1]
    data_line = re.findall(r"^data: (.*)$", text, re.M)[-1]
    if kind == "complete":
        return True, data_line
    payload = json.loads(data_line)
    return False, (payload or {}).get("error") or ""


_ROOMS: dict[str, dict] = {}  # url -> the room these tests share while it stays open


def _open_room(url: str, model: str) -> dict:
    """A room open on this server, opened again only once a test closed it: one caller may hold 3 open
    rooms (vizvit.classroom.room.MAX_ROOMS_PER_OWNER), and every test here calls from 127.0.0.1."""
    kept = _ROOMS.get(url)
    if kept is None or httpx.get(f"{url}vizvit_room/{kept['code']}", timeout=60).json().get("closed"):
        ok, text = rest(url, "room_open", [uploaded(url), model, ""])
        assert ok, text
        kept = _ROOMS[url] = {**json.loads(text)[0], "student": "edge-student",
                              "answer": 224}  # step 1's question: a number
    return dict(kept)


def defaults(url: str, endpoint: str, model: str) -> list:
    """A good call's arguments, in order, from /gradio_api/info (the photo: an uploaded file)."""
    params = httpx.get(url + "gradio_api/info", timeout=60).json()["named_endpoints"][f"/{endpoint}"]["parameters"]
    room = {}
    if any(p["parameter_name"] == "code" for p in params):  # the room endpoints: a room open on this server
        room = _open_room(url, model)
    out = []
    for p in params:
        name = p["parameter_name"]
        out.append(uploaded(url) if name == "photo" else model if name.startswith("model") else
                   room[name] if name in room else p["parameter_default"])
    return out


PHOTO_ENDPOINTS = [e for e in PUBLIC_ENDPOINTS if e not in ("positions", "stats") and
                   (e == "room_open" or not e.startswith("room_"))]


def test_there_are_eight_photo_endpoints():
    assert len(PHOTO_ENDPOINTS) == 8  # the 7 and room_open (issue 45); a new one joins every test below


# gradio_client sends a value as it is, through the same queue and handler as REST: every bad photo
# goes to every photo endpoint over REST, and through gradio_client every kind goes to analyze and
# two kinds (a plain value, a dict that is no file) to each other endpoint: 20 client calls where
# all to all were 48, each repeating what the REST call before it checked.
CLIENT_ENDPOINT = "analyze"
CLIENT_PHOTOS = ("string", "dict without path")


@pytest.mark.parametrize("endpoint", PHOTO_ENDPOINTS)
def test_a_photo_that_is_not_an_uploaded_file_gets_one_plain_message(server, client, endpoint, log_has_no_traceback):
    url, model = server
    good = defaults(url, endpoint, model)
    ok, text = rest(url, endpoint, good)
    assert ok, f"the good call answers: {text}"
    for name, bad in BAD_PHOTOS.items():
        ok, message = rest(url, endpoint, [bad, *good[1:]])
        assert not ok and NOT_UPLOADED in message, (name, message)
        shows_nothing_of_the_server(message)
        if isinstance(bad, dict) and "meta" in bad:
            continue  # to gradio_client, a file of the CLIENT's machine: it uploads it (handle_file's way)
        if endpoint != CLIENT_ENDPOINT and name not in CLIENT_PHOTOS:
            continue  # the same check as over REST, through the same queue: a representative set (CLIENT_PHOTOS)
        with pytest.raises(Exception) as e:  # gradio_client sends the value as it is
            client.predict(bad, *good[1:], api_name=f"/{endpoint}")
        assert NOT_UPLOADED in str(e.value), (name, str(e.value))
        shows_nothing_of_the_server(str(e.value))


def test_a_photo_cleaned_away_since_its_upload_is_refused_plainly(server, log_has_no_traceback):
    url, model = server
    photo = uploaded(url)
    Path(photo["path"]).unlink()
    ok, message = rest(url, "analyze", [photo, model])
    assert not ok and "upload it again" in message
    shows_nothing_of_the_server(message)


# Issue 52: a photo named by the key /analyze answered ("photo_sha1", the last argument of these).
KEY_ENDPOINTS = ("attention", "rollout", "compare", "predict", "sweep", "relevance")
BAD_KEYS = {"short": "abc", "not hex": "g" * 40, "one too many": "0" * 41, "a room's model view": "view-" + "0" * 40,
            "a path": "../../etc/passwd", "number": 42, "float": 1.5, "list": ["0" * 40],
            "dict": {"path": "/etc/passwd"}}


def test_the_key_endpoints_are_every_photo_endpoint_but_analyze_and_room_open():
    assert set(KEY_ENDPOINTS) == set(PHOTO_ENDPOINTS) - {"analyze", "room_open"}


@pytest.mark.parametrize("endpoint", KEY_ENDPOINTS)
def test_a_photo_key_that_names_no_kept_photo_gets_one_plain_message(server, endpoint, log_has_no_traceback):
    """Over REST: a key of the wrong shape says what a key is; a well-formed key of no photo this server
    keeps says to send the photo again; the key with the file too, or neither, says which to send."""
    url, model = server
    params = httpx.get(url + "gradio_api/info", timeout=60).json()["named_endpoints"][f"/{endpoint}"]["parameters"]
    names = [p["parameter_name"] for p in params]
    assert names[0] == "photo" and names[-1] == "photo_sha1", names
    good = defaults(url, endpoint, model)
    ok, text = rest(url, endpoint, [None, *good[1:-1], json.loads(rest(url, "analyze", good[:2])[1])[0]["photo_sha1"]])
    assert ok, f"the good call by key answers: {text}"
    cases = {name: ([None, *good[1:-1], bad], "photo_sha1 must be the 40 hex digits") for name, bad in BAD_KEYS.items()}
    cases |= {"never kept": ([None, *good[1:-1], "0" * 40], "holds no photo with that photo_sha1"),
              "both": ([*good[:-1], "0" * 40], "either photo or photo_sha1, not both"),
              "neither": ([None, *good[1:-1], ""], NOT_UPLOADED + ", or photo_sha1")}
    for name, (data, expected) in cases.items():
        ok, message = rest(url, endpoint, data)
        assert not ok and expected in message, (name, message)
        shows_nothing_of_the_server(message)


@pytest.mark.parametrize("endpoint", PUBLIC_ENDPOINTS)
def test_too_few_values_say_how_many_and_which(server, endpoint, log_has_no_traceback):
    url, model = server
    good = defaults(url, endpoint, model)
    if not good:
        pytest.skip("stats takes no values")
    for n in range(len(good)):
        ok, message = rest(url, endpoint, good[:n])
        assert not ok and f"{endpoint} takes {len(good)} values" in message and f"got {n}" in message, message
        shows_nothing_of_the_server(message)
    ok, _ = rest(url, endpoint, [*good, "one too many"])  # Gradio ignores extra values
    assert ok


@pytest.mark.parametrize("endpoint", PUBLIC_ENDPOINTS)
def test_wrong_types_for_every_other_argument_are_refused_plainly(server, endpoint, log_has_no_traceback):
    url, model = server
    GUARD_AHEAD_S[0] += 3600  # whole buckets: this endpoint's bad codes are refused for what they are
    good = defaults(url, endpoint, model)
    params = httpx.get(url + "gradio_api/info", timeout=60).json()["named_endpoints"][f"/{endpoint}"]["parameters"]
    cases = [(p["parameter_name"], name, [*good[:i], bad, *good[i + 1:]])
             for i, p in enumerate(params) if p["parameter_name"] != "photo" for name, bad in BAD_VALUES.items()]
    with ThreadPoolExecutor(8) as pool:  # the server answers several at once, as for several visitors
        answers = list(pool.map(lambda case: rest(url, endpoint, case[2]), cases))
    if endpoint == "room_answer":  # a refused answer is an answer: {"accepted": false, "reason": ...}
        answers = [(json.loads(m)[0]["accepted"], json.loads(m)[0]["reason"]) if ok else (ok, m) for ok, m in answers]
    names = [p["parameter_name"].replace("_", " ") for p in params] + [p["parameter_name"] for p in params]
    for (param, name, _), (ok, message) in zip(cases, answers):
        if not ok:
            shows_nothing_of_the_server(message)
            # it names an argument (query_row=True alone: query_col), or the model list to choose from
            assert any(n in message for n in names) or "page's list" in message, (param, name, message)
    assert not cases or not all(ok for ok, _ in answers)


def test_a_body_that_is_not_json_data_gets_a_plain_422(server):
    url, _ = server
    for body in ({"data": "x"}, {"data": {"path": "/etc/passwd"}}, {"nothing": 1}):
        r = httpx.post(f"{url}gradio_api/call/analyze", json=body, timeout=60)
        assert r.status_code == 422
        shows_nothing_of_the_server(r.json()["detail"])
        assert "/etc/passwd" not in r.text


@pytest.mark.parametrize("path", ["app.py", str(HERE / "app.py"), "/etc/passwd", "../../../etc/passwd",
                                  tempfile.gettempdir() + "/x/../../etc/passwd"])
def test_the_file_route_refuses_without_naming_the_path(server, path):
    url, _ = server
    r = httpx.get(f"{url}gradio_api/file={path}", timeout=60)
    assert r.status_code in (403, 404)
    assert "root:" not in r.text and "import" not in r.text
    detail = r.json()["detail"]
    shows_nothing_of_the_server(detail)
    assert "passwd" not in detail and "app.py" not in detail


def upload_folder_files() -> set[Path]:
    from gradio.utils import get_upload_folder

    return {p for p in Path(get_upload_folder()).rglob("*") if p.is_file()}


def test_a_client_dropped_mid_upload_leaves_no_partial_file(server, log_has_no_traceback):
    """Half a multipart body (4 MB of a declared 8 MB file), then the socket closes: the temp folder
    holds no new file afterwards (Gradio writes the part to a NamedTemporaryFile as it arrives)."""
    url, _ = server
    host, port = httpx.URL(url).host, httpx.URL(url).port
    from gradio.utils import get_upload_folder

    root = Path(get_upload_folder())
    before = upload_folder_files()
    boundary = "vizvitboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"half.jpg\"\r\n"
            "Content-Type: image/jpeg\r\n\r\n").encode()
    size = 8 << 20
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall((f"POST /gradio_api/upload HTTP/1.1\r\nHost: {host}:{port}\r\n"
                   f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
                   f"Content-Length: {len(head) + size + 64}\r\n\r\n").encode() + head)
        chunk = b"\xff" * (1 << 16)
        for _ in range((4 << 20) // len(chunk)):
            s.sendall(chunk)
        # the part is on disk now, half written: Gradio's NamedTemporaryFile, tmp*, at the folder's top
        # (a finished upload moves into a <sha256>/ folder). Other servers on this machine may upload
        # into the same folder meanwhile: only this part is followed.
        deadline = time.monotonic() + 60
        partial: list[Path] = []
        while time.monotonic() < deadline and not partial:
            partial = [p for p in upload_folder_files() - before if p.name.startswith("tmp")
                       and p.parent == root and p.stat().st_size >= 1 << 20]
            time.sleep(0.1)
        assert partial, "the server writes the part as it arrives (else this tests nothing)"
    deadline = time.monotonic() + 60  # the server notices the closed socket: a liveness wait, not a timing
    while time.monotonic() < deadline and any(p.exists() for p in partial):
        time.sleep(0.2)
    assert not any(p.exists() for p in partial), "a partial upload was left behind"
    assert uploaded(url)["path"]  # and the server still takes uploads


def test_a_made_up_event_index_is_refused_in_a_sentence(server, log_has_no_traceback):
    """queue/join with an fn_index that names no event (issue 50): Gradio read fns[fn_index] unchecked,
    a KeyError, a 500 and its traceback in the log. Now a 4xx with a sentence, nothing in the log."""
    url, _ = server
    for fn_index, status in ((99_999, 404), (-1, 404), ("x", 422), (1.5, 422), (None, 400)):
        r = httpx.post(f"{url}gradio_api/queue/join",
                       json={"data": [], "fn_index": fn_index, "session_hash": "edge1234"}, timeout=60)
        assert r.status_code == status, (fn_index, r.status_code, r.text)
        detail = r.json()["detail"]
        assert isinstance(detail, str) and detail.endswith("."), detail
        shows_nothing_of_the_server(detail)
    r = httpx.post(f"{url}gradio_api/queue/join",
                   json={"data": [], "fn_index": 99_999, "session_hash": "edge1234"}, timeout=60)
    assert "no event with that fn_index" in r.json()["detail"]


def _event_answer(url: str, fn_index: int, n_inputs: int, session: str) -> str:
    """queue/join one page event with None for every value and no event data, as no page sends it;
    the message its stream ends with ("" where it succeeded)."""
    r = httpx.post(f"{url}gradio_api/queue/join", json={"data": [None] * n_inputs, "fn_index": fn_index,
                                                        "session_hash": session, "event_data": None,
                                                        "trigger_id": None}, timeout=60)
    if r.status_code != 200:
        return r.json().get("detail", r.text)
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}, timeout=60) as s:
        for line in s.iter_lines():
            if '"process_completed"' in line:
                msg = json.loads(line.removeprefix("data: "))
                return "" if msg.get("success") else str(msg.get("output", {}).get("error") or "")
    return ""


def test_page_events_sent_without_their_event_data_are_refused_in_a_sentence(server, log_has_no_traceback):
    """The hostile caller's catch: a select handler sent without its event data answered "'NoneType'
    object is not subscriptable", an example's load "cannot unpack non-iterable NoneType object" (Gradio's
    own code, before the app's handler), each with a traceback in the log."""
    url, _ = server
    config = httpx.get(url + "config", timeout=60).json()
    picked = [d for d in config["dependencies"]
              if any(t[1] in ("select", "click") for t in d["targets"]) and d.get("backend_fn")]
    assert len(picked) >= 5
    with ThreadPoolExecutor(8) as pool:  # an event of a session never heard of waits UNHEARD_S (2 s) to say so
        answers = pool.map(lambda d: (d["id"], _event_answer(url, d["id"], len(d["inputs"]), f"edge{d['id']:07d}")),
                           picked)
    for fn_index, msg in answers:
        if msg:
            shows_nothing_of_the_server(msg)
            assert not re.search(r"NoneType|subscriptable|unpack|object has no", msg), (fn_index, msg)
