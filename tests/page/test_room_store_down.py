"""The room store (Redis) down for a moment is not a closed room (a review): the long poll answered
{"closed": true} with status 200, so a host page forgot its room's key (its way back) and a student page
read its room as gone; a reopened student's page was told it had no answers and forgot its own. Now every
room route answers 503 while the store is down (the pages ask again), and hello leaves the answers out."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from appserver import running, serving
from browser import page_at
from fastapi import FastAPI
from redisserver import need_redis, redis_server
from roompage import open_room, student_page
from roomstores import QS
from starlette.testclient import TestClient

import page.room as pr
from vizvit.classroom.room import META_TTL_S, VIEW_TTL_S, Rooms
from vizvit.classroom.roomstore import SQLiteStore, StoreDown
from vizvit.classroom.roomstore_redis import STORE_DOWN, RedisStore
from vizvit.session import Workbench

STUDENT = "student-0123456789"


@pytest.fixture
def redis_then_down():
    """(client, code, key) over a real Redis store, and a function that stops the Redis server."""
    binary = need_redis()
    server = redis_server(binary)
    url = server.__enter__()
    rooms = Rooms(RedisStore(url))
    code, key = rooms.open("m", None, QS)
    app = FastAPI()
    app.router.routes.extend([pr.wait_route(rooms), *pr.presence_routes(rooms), *pr.lesson_routes(rooms, Workbench()),
                              *pr.answer_routes(rooms), *pr.page_routes(rooms)])
    stopped = []

    def stop():
        server.__exit__(None, None, None)
        stopped.append(True)

    try:
        yield TestClient(app), code, key, stop
    finally:
        if not stopped:
            server.__exit__(None, None, None)


def test_a_store_down_is_503_to_ask_again_never_a_closed_room(redis_then_down):
    client, code, key, stop = redis_then_down
    assert client.post(f"/vizvit_room/{code}/hello", json={"student": STUDENT}).json()["accepted"] is True
    up = client.get(f"/vizvit_room/{code}")
    assert up.status_code == 200 and not up.json().get("closed")
    stop()
    time.sleep(max(VIEW_TTL_S, META_TTL_S) + 0.1)  # the room's view and meta, kept that long, are read again
    view = client.get(f"/vizvit_room/{code}?v=-2")
    assert view.status_code == 503 and view.json() == {"error": STORE_DOWN}, view.text
    for path, body in (("host", {"host_key": key}), ("lock", {"host_key": key, "locked": True})):
        r = client.post(f"/vizvit_room/{code}/{path}", json=body)
        assert r.status_code == 503 and r.json() == {"error": STORE_DOWN}, (path, r.text)
    lesson = client.get(f"/vizvit_room/{code}/lesson")
    assert lesson.status_code == 503, lesson.text
    # a second review: hello and an answer were refused with status 200 (the student's page stopped asking)
    hello = client.post(f"/vizvit_room/{code}/hello", json={"student": STUDENT})
    assert hello.status_code == 503 and "answers" not in hello.json(), hello.text
    answer = client.post(f"/vizvit_room/{code}/answer", json={"student": STUDENT, "step": 1, "answer": "a"})
    assert answer.status_code == 503 and answer.json() == {"error": STORE_DOWN}, answer.text
    assert client.get(f"/vizvit_room/{code}/picture/1").status_code == 503


class Watched(SQLiteStore):
    """A SQLite store that says when a student's hello reaches it: the test waits on the server's own state."""

    def __init__(self, path):
        super().__init__(path)
        self.joining = threading.Event()

    def join(self, *args):
        self.joining.set()
        return super().join(*args)


# Another process (a second server, `python -m vizvit`, a backup) holding the rooms file's write lock until
# it reads a line
HOLD = """import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.readline()
db.execute("ROLLBACK")
"""


def test_a_rooms_file_another_process_holds_stalls_no_other_request(tiny16, tmp_path):
    """The SQLite store is called in the event loop (fast), and waited there up to its busy timeout (10 s)
    for a file another process held: every request of the server (the page's /config, each Gradio call)
    waited with it, and the hello itself failed with 503 at the timeout. Now an unrelated request answers
    while the file is held and the hello is waiting, and the hello is accepted once the file is let go."""
    path = tmp_path / "rooms.sqlite3"
    store = Watched(path)
    rooms = Rooms(store)
    with serving(tiny16, rooms=rooms) as (url, wb):
        code, _ = rooms.open(wb.catalog.ids[0], None, QS)
        holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        hello: dict = {}
        asking = threading.Thread(target=lambda: hello.update(r=httpx.post(
            url + f"vizvit_room/{code}/hello", json={"student": STUDENT}, timeout=60)))
        try:
            assert holder.stdout.readline().strip() == "held"
            asking.start()
            assert store.joining.wait(60), "the hello never reached the store"
            config = httpx.get(url + "config", timeout=60)
            assert config.status_code == 200
            assert "r" not in hello, f"/config waited for the hello, which then answered {hello['r'].text}"
        finally:
            holder.communicate("\n", timeout=60)  # the other process lets go
        asking.join(60)
        assert hello["r"].status_code == 200 and hello["r"].json()["accepted"] is True, hello["r"].text
        assert rooms.state(code).joined == 1


class Flaky(SQLiteStore):
    """A room store that is down while `down` is set: every store call raises StoreDown, as RedisStore's do
    when Redis does not answer (the constructed outage a browser test can end at will)."""

    down = False

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        if callable(attr) and not name.startswith("_") and object.__getattribute__(self, "down"):
            def fail(*args, **kwargs):
                raise StoreDown(STORE_DOWN)
            return fail
        return attr


@contextlib.contextmanager
def host_and_student(tiny16) -> Iterator[tuple[Flaky, Any, Any, str]]:
    """A server on a store that can be made to fail, its room opened on a host page, and a student's page
    in it: (the store, the host page, the student's page, the room's code)."""
    store = Flaky(None)
    with running(tiny16, rooms=Rooms(store, max_per_owner=10_000)) as url:
        with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
            code = open_room(host)
            yield store, host, student_page(host, url, code), code


def test_the_pages_say_reconnecting_through_an_outage_and_a_close_keeps_the_room(tiny16):
    """A second review: while the store was down a student's hello and answer were refused (the page then
    stopped asking for good), the host page said nothing, and Close forgot a room that stayed open with
    every answer. Now both pages say they are reconnecting and come back; the room is kept, with its key."""
    with host_and_student(tiny16) as (store, host, s, code):
        store.down = True
        s.wait_for_selector("#student-err:has-text('reconnecting')", timeout=15_000)
        host.wait_for_selector("#host-err:has-text('reconnecting')", timeout=15_000)
        host.click("#close")
        host.click("#close-yes")
        host.wait_for_selector("text=The room is still open", timeout=30_000)
        kept = host.evaluate("localStorage.getItem('vizvit-hosted')") or ""
        assert code in kept, "a close that did not happen forgot the room's key"
        store.down = False
        s.wait_for_function("document.getElementById('student-err').textContent === ''", timeout=15_000)
        s.fill("#num", "196")
        s.keyboard.press("Enter")
        s.wait_for_selector("text=Your answer is in", timeout=15_000)
        host.wait_for_selector("#room-code", timeout=30_000)
        s.close()


def test_a_move_pressed_while_the_server_is_out_of_reach_is_made_once_it_answers(tiny16):
    """A walk-through: Next pressed while the store was down was dropped ("reconnecting…") and the lecturer
    had to press it again. The move is asked again until the server answers, and the room moves once."""
    store = Flaky(None)
    with running(tiny16, rooms=Rooms(store, max_per_owner=10_000)) as url:
        with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
            code = open_room(host)
            host.wait_for_selector("text=Step 1 of", timeout=30_000)
            asked = []
            host.on("request", lambda r: asked.append(r.url) if r.url.endswith("/step") else None)
            store.down = True
            host.click("#next")
            host.wait_for_selector("#host-err:has-text('reconnecting')", timeout=15_000)
            deadline = time.monotonic() + 15
            while len(asked) < 2 and time.monotonic() < deadline:  # asked again while the store is down
                host.wait_for_timeout(100)
            assert len(asked) >= 2, asked
            store.down = False
            host.wait_for_selector("text=Step 2 of", timeout=30_000)
            view = host.evaluate(f"fetch('vizvit_room/{code}').then((r) => r.json())")
            assert view["step"] == 2, view


class ViewDown(SQLiteStore):
    """A store whose room view cannot be read while `down` is set (its students' count: StoreDown), while a
    hello is still answered: a student refused by a locked room checks the view next, in the outage."""

    down = False

    def joined(self, code):
        if self.down:
            raise StoreDown(STORE_DOWN)
        return super().joined(code)


def test_a_refused_student_page_keeps_asking_when_the_room_cannot_be_read_for_a_moment(tiny16):
    """A student refused (a locked room) reads the room's view to learn whether it is still open, and asks
    again if so. The view's 503 (the store down) was read as a room gone: the page stopped asking for good,
    and a lecturer's unlock never reached that phone (a dropped connection there is read as open already)."""
    store = ViewDown(None)
    with running(tiny16, rooms=Rooms(store, max_per_owner=10_000)) as url:
        with page_at(url + "room?host=1", width=1366, height=900, wait_for="#ex") as host:
            code = open_room(host)
            host.click("#lock")
            host.wait_for_selector("#lock:has-text('Unlock')", timeout=15_000)
            s = host.context.browser.new_page(viewport={"width": 390, "height": 844})
            s.clock.install()  # the student page's waits run fast (its fetches stay real)
            s.goto(url + f"room?code={code}")
            s.wait_for_selector("#refused", timeout=30_000)
            s.wait_for_selector("text=asks again by itself in 10 seconds", timeout=15_000)
            store.down = True  # the next hello is refused again (locked), and the view then is a 503
            s.clock.run_for(10_100)  # the page's sleep was begun as it drew that line
            s.wait_for_selector("text=asks again by itself in 20 seconds", timeout=30_000)
            store.down = False
            host.click("#lock")  # the lecturer unlocks: the page that kept asking comes in
            host.wait_for_selector("#lock:text-matches('^Lock')", timeout=15_000)  # unlocked in the store
            s.clock.run_for(20_100)
            s.wait_for_selector("#num", timeout=60_000)
            s.close()


def test_a_students_poll_answered_200_without_a_room_waits_before_asking_again(tiny16):
    """A poll answered 200 with no room in it (a proxy's or a captive portal's page: not JSON) set the
    page's version to -2, which the next poll sends, and the answer came back at once, again and again: a
    phone asked hundreds of times a second for as long as it lasted. It is a server out of reach now."""
    from vizvit.classroom.room import questions_of
    from vizvit.readings import lesson as rl

    rooms = Rooms(max_per_owner=10_000)
    with serving(tiny16, rooms=rooms) as (url, wb):
        code, _ = rooms.open(wb.catalog.ids[0], None, questions_of(rl.steps()))  # the page's name of the model
        with page_at(url + f"room?code={code}", width=390, height=844, wait_for="#num") as s:
            polls = []

            def portal(route):
                polls.append(route.request.url)
                route.fulfill(status=200, content_type="text/html", body="<html>Sign in to the Wi-Fi</html>")

            s.route(lambda u: f"/vizvit_room/{code}?v=" in u, portal)
            s.wait_for_timeout(4_000)  # the poll in flight (a 20-s long poll) is answered by the server: v moves on
            # a change: the long poll in flight ends, and the next is the portal's
            rooms.lock(code, rooms.store.meta(code)["host_key"], True)
            s.wait_for_function(f"performance.getEntriesByType('resource').some((e) => e.name.includes('{code}?v='))")
            s.wait_for_timeout(1_000)
            n = len(polls)
            s.wait_for_timeout(4_000)
            assert 0 < len(polls) - n <= 4, f"{len(polls) - n} polls in 4 s: the page hammers the server"
            assert "reconnecting" in s.inner_text("#student-err"), "the page says nothing while the server is away"


def test_a_hung_store_never_stalls_the_server_for_everyone(tmp_path):
    """A Redis that hangs (paused, or behind a network that drops its packets) is not one that refuses: each
    store call waits for its socket timeout (5 s). The room routes called the store in the event loop, so
    three heartbeats stalled every request of the server, Gradio's pages and the room's other phones, for
    15 s (a hall's hundred phones: minutes). Now the room's store calls run in threads of their own."""
    import os
    import signal
    import subprocess
    import threading

    import httpx
    import uvicorn
    from redisserver import _free_port
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from page.guard import Guard

    port = _free_port()
    proc = subprocess.Popen([need_redis(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp_path),
                             "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = None
    try:
        url = f"redis://127.0.0.1:{port}/0"
        for _ in range(100):
            try:
                rooms = Rooms(RedisStore(url))
                code, key = rooms.open("m", None, QS)
                break
            except StoreDown:
                time.sleep(0.1)

        async def ping(request):
            return PlainTextResponse("pong")

        app = FastAPI(routes=[*Guard(rooms).routes(pr.room_routes(rooms, Workbench(), lambda: (None, None))),
                              Route("/ping", ping)])
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=_free_port(), log_level="error"))
        threading.Thread(target=server.run, daemon=True).start()
        while not server.started:
            time.sleep(0.05)
        base = f"http://127.0.0.1:{server.config.port}"
        assert httpx.get(f"{base}/vizvit_room/{code}?v=-2").status_code == 200
        os.kill(proc.pid, signal.SIGSTOP)  # hung: its connections are accepted, nothing is answered
        time.sleep(max(VIEW_TTL_S, META_TTL_S) + 0.1)  # the room's view and meta, kept that long, are read again
        got = []

        def call(method, path, **kw):
            got.append(httpx.request(method, base + path, timeout=60, **kw).status_code)

        beat = ("POST", f"/vizvit_room/{code}/host")
        calls = [threading.Thread(target=call, args=beat, kwargs={"json": {"host_key": key}}) for _ in range(2)]
        calls.append(threading.Thread(target=call, args=("GET", f"/vizvit_room/{code}?v=-2")))
        for t in calls:
            t.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        assert httpx.get(f"{base}/ping", timeout=60).text == "pong"
        waited = time.monotonic() - t0
        for t in calls:
            t.join()
        assert waited < 1.0, f"a request that never touches the rooms waited {waited:.1f} s behind the hung store"
        assert got == [503, 503, 503], got
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=10)
        if server is not None:
            server.should_exit = True


def test_a_screen_reader_hears_the_server_back_after_reconnecting(tiny16):
    """A lecture's restart (kill -9, started again): a student's live region said "The server cannot be
    reached: reconnecting…" and, the server back, said nothing more: the page cleared its visible line, but a
    blind student had heard only that the server was gone, and the region still read so at the page's end."""
    with host_and_student(tiny16) as (store, host, s, code):
        store.down = True
        s.wait_for_selector("#said:has-text('reconnecting')", timeout=15_000)
        store.down = False
        s.wait_for_function("document.getElementById('student-err').textContent === ''", timeout=15_000)
        s.wait_for_function("!document.getElementById('said').textContent.includes('reconnecting')",
                            timeout=15_000)
        assert "again" in s.inner_text("#said"), s.inner_text("#said")
        s.close()
