"""page/body_limit.py: a body over its route's limit is refused with 413 before the route reads it, by its
Content-Length unread, or (chunked) as soon as it passes the limit; one within is handed on whole, and other
routes pass untouched. The middleware is driven with hand-built ASGI messages (what it read is counted);
then once on the served page (the production launch settings), both ways, on a room route and Gradio's join."""

from __future__ import annotations

import json

import httpx
from loops import run_apart

import app
from page.body_limit import GRADIO_BYTES, LIMITS, ROOM_BYTES, BodyLimit, Limit, limit_of, too_big

SMALL = (Limit("/vizvit_room/", 4096, "error"), Limit("/gradio_api/queue/join", 10_000, "detail"))


class Inner:
    """The app behind the middleware: records whether it ran and the body it read through `receive`."""

    def __init__(self) -> None:
        self.called, self.body, self.after = False, b"", None

    async def __call__(self, scope, receive, send) -> None:
        self.called = True
        while True:
            m = await receive()
            self.body += m.get("body", b"")
            if not m.get("more_body"):
                break
        self.after = (await receive())["type"]  # what a route's disconnect check then hears
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def run(path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]], limits=SMALL, root: str = ""):
    """One request through BodyLimit -> (status, JSON or text answered, chunks the middleware or app read, inner)."""
    inner = Inner()
    queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    read = [0]

    async def receive():
        if read[0] < len(queue):
            read[0] += 1
            return queue[read[0] - 1]
        return {"type": "http.disconnect"}

    sent: list[dict] = []

    async def send(m):
        sent.append(m)

    scope = {"type": "http", "method": "POST", "path": root + path, "root_path": root, "headers": headers}
    run_apart(BodyLimit(inner, limits)(scope, receive, send))
    status = sent[0]["status"]
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, (json.loads(body) if status == 413 else body), read[0], inner


def length(n: int) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(n).encode())]


CHUNKED = [(b"content-type", b"application/json"), (b"transfer-encoding", b"chunked")]


def test_each_route_has_its_limit_and_others_none():
    assert limit_of("/vizvit_room/ABCDEFGH/hello").max_bytes == ROOM_BYTES == 4096
    assert limit_of("/vizvit_room/ABCDEFGH/answers.csv").key == "error"
    for path in ("/gradio_api/queue/join", "/gradio_api/call/room_answer", "/gradio_api/run/predict",
                 "/gradio_api/call/v2/analyze"):
        assert limit_of(path).max_bytes == GRADIO_BYTES == 4 << 20 and limit_of(path).key == "detail"
    for path in ("/gradio_api/upload", "/vizvit_camera/frame", "/", "/room", "/gradio_api/queue/data"):
        assert limit_of(path) is None, path
    assert limit_of("/vizvit_room/X/hello", ()) is None and len(LIMITS) > 1


def test_a_body_declared_too_big_is_refused_unread():
    status, said, read, inner = run("/vizvit_room/ABCDEFGH/hello", [b"x" * 5000], length(5000))
    assert (status, said, read, inner.called) == (413, {"error": too_big(SMALL[0])}, 0, False)
    assert too_big(SMALL[0]) == "This request is too big: its body must be at most 4 KB."
    status, said, _, _ = run("/gradio_api/queue/join", [b"{}"], length(10_001))
    assert (status, said) == (413, {"detail": "This request is too big: its body must be at most 9 KB."})


def test_a_body_within_its_declared_limit_reaches_the_route_whole_and_untouched():
    body = b'{"student": "' + b"a" * (4096 - 15) + b'"}'
    assert len(body) == 4096
    status, said, read, inner = run("/vizvit_room/ABCDEFGH/hello", [body[:1000], body[1000:]], length(4096))
    assert (status, said, inner.body, read, inner.after) == (200, b"ok", body, 2, "http.disconnect")


def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit():
    chunks = [b"y" * 1000] * 1000  # 1 MB in 1 KB chunks, no Content-Length
    status, said, read, inner = run("/vizvit_room/ABCDEFGH/answer", chunks, CHUNKED)
    assert (status, said, inner.called) == (413, {"error": too_big(SMALL[0])}, False)
    assert read == 5  # 5,000 bytes read: past 4,096, and not a chunk more


def test_a_chunked_body_within_the_limit_is_handed_on_whole_then_the_servers_messages():
    chunks = [b'{"a": 1', b", ", b'"b": 2}']
    status, said, read, inner = run("/vizvit_room/ABCDEFGH/host", chunks, CHUNKED)
    assert (status, said, inner.body, inner.after) == (200, b"ok", b'{"a": 1, "b": 2}', "http.disconnect")


def test_other_routes_pass_untouched_and_the_apps_root_is_not_part_of_the_route():
    status, _, read, inner = run("/gradio_api/upload", [b"z" * 20_000], length(20_000))
    assert (status, inner.body) == (200, b"z" * 20_000)
    status, said, _, _ = run("/vizvit_room/ABCDEFGH/hello", [b"x" * 5000], length(5000), root="/space")
    assert status == 413


def test_the_served_page_refuses_big_bodies_both_ways(url):
    """The production launch settings (app.launch_kwargs) put it before every route: a room route (whose
    guard would read the body first) and Gradio's join, by Content-Length and chunked."""
    def chunked(total: int):
        for _ in range(total // 65536):
            yield b" " * 65536

    JSON = {"content-type": "application/json"}
    room_said = {"error": "This request is too big: its body must be at most 4 KB."}
    join_said = {"detail": "This request is too big: its body must be at most 4 MB."}
    with httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("vizvit_room/ABCDEFGH/hello", content=b" " * 5000, headers=JSON)
        assert (r.status_code, r.json()) == (413, room_said)
        r = c.post("vizvit_room/ABCDEFGH/hello", content=chunked(64 << 20), headers=JSON)
        assert (r.status_code, r.json()) == (413, room_said)
        r = c.post("gradio_api/queue/join", content=chunked(64 << 20), headers=JSON)
        assert (r.status_code, r.json()) == (413, join_said)
        r = c.post("gradio_api/call/room_answer", content=b" " * (5 << 20), headers=JSON)
        assert (r.status_code, r.json()) == (413, join_said)
        r = c.post("vizvit_room/ABCDEFGH/hello", json={"student": "a" * 64})  # within: the route answers it
        assert r.status_code == 200 and r.json()["accepted"] is False
    assert app.launch_kwargs()["app_kwargs"]["middleware"][0].cls is BodyLimit  # first: ahead of ConfigCache's
