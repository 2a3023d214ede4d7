"""page/sessions.py: idle sessions forgotten, on a constructed holder shaped like Gradio's
StateHolder (its lock, session_data, time_last_used): who is dropped at which cutoff is written by
hand; and an event of a session this process never served answers "reload the page", on a small
Blocks whose events are called as Gradio calls them. No browser: this file does not use the page's
server. The server's bound over hundreds of photos is tests/system/test_memory.py; a replica killed
behind nginx, tests/system/test_deploy.py."""

from __future__ import annotations

import datetime
import threading
import time
import types

import gradio as gr
import pytest
from gradio.context import LocalContext

from page import sessions

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)


def holder(last_used_s_ago: dict[str, float], data: tuple[str, ...]) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        lock=threading.Lock(), session_data={s: object() for s in data},
        time_last_used={s: NOW - datetime.timedelta(seconds=ago) for s, ago in last_used_s_ago.items()})


def test_only_sessions_idle_longer_than_the_bound_are_dropped():
    h = holder({"old": 3601, "edge": 3600, "fresh": 5}, ("old", "edge", "fresh", "being-made"))
    assert sessions.forget_idle(h, 3600, NOW) == 1
    assert set(h.session_data) == {"edge", "fresh", "being-made"}  # no last use yet: being created, kept
    assert set(h.time_last_used) == {"edge", "fresh"}


def test_a_last_use_without_data_is_cleared_but_not_counted():
    h = holder({"gone": 7200, "old": 7200}, ("old",))
    assert sessions.forget_idle(h, 60, NOW) == 1 and h.time_last_used == {} and h.session_data == {}


def test_callers_lately_are_the_sessions_used_within_the_window():
    h = holder({"now": 0, "edge": 10, "old": 10.5, "long gone": 4000}, ())
    assert sessions.callers_within(types.SimpleNamespace(state_holder=h), 10, NOW) == 2
    assert sessions.callers_within(types.SimpleNamespace(), 10, NOW) == 0  # before the app exists


def test_each_api_client_of_a_running_app_counts_as_a_caller():
    """What the forwards' thread count follows (vizvit.service.threads.follow_crowd): Gradio notes a
    session's use as its event runs, an API client's as much as a page's."""
    from appserver import free_port
    from gradio_client import Client

    with gr.Blocks() as demo:
        n, out = gr.Number(), gr.Number()
        gr.Button().click(lambda x: x * 2, n, out, api_name="double")
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        assert sessions.callers_within(demo, 60) == 0
        first = Client(f"http://127.0.0.1:{port}/", verbose=False)
        assert first.predict(2, api_name="/double") == 4 and first.predict(3, api_name="/double") == 6
        assert sessions.callers_within(demo, 60) == 1  # one client, one caller
        assert Client(f"http://127.0.0.1:{port}/", verbose=False).predict(1, api_name="/double") == 2
        assert sessions.callers_within(demo, 60) == 2
    finally:
        demo.close()


def test_the_sweep_waits_for_the_apps_holder_then_forgets(monkeypatch):
    demo = types.SimpleNamespace()  # no state_holder until the app is created
    h = holder({"old": 10_000}, ("old",))
    t = sessions.start_forgetting(demo, idle_s=60, every_s=0.05)
    assert t.daemon and t.name == "vizvit-forget-sessions"
    demo.state_holder = h
    deadline = threading.Event()
    for _ in range(3000):  # liveness bound: 30 s
        if not h.session_data:
            break
        deadline.wait(0.01)
    assert h.session_data == {}


# -- a page whose replica died (moved from tests/system/test_deploy.py with the code) --
def test_an_event_from_a_session_this_process_never_served_says_reload(monkeypatch):
    """A student whose replica died reaches another with their old page: its events that read the
    photo key answer "reload the page" instead of computing on a key that is not there; a page
    loaded here, or a new photo, starts afresh; the public API reads no key and is untouched."""
    with gr.Blocks() as demo:
        key = gr.State(None)
        photo = gr.File()
        out = gr.Textbox()
        demo.load(lambda: None, None, None)
        photo.change(lambda f, k: "new photo", [photo, key], out)
        out.change(lambda k: f"key {k}", key, out)
        def echo(x: int) -> int:
            return x

        gr.api(echo, api_name="echo")
    pages = sessions.Pages()
    monkeypatch.setattr(sessions, "LOAD_WAIT_S", 0.5)
    assert sessions.refuse_lost_sessions(demo, key, fresh=(photo,), pages=pages) == 1
    fns = {}
    for f in demo.fns.values():
        kind = "api" if f.api_name == "echo" else f.targets[0][1] if f.targets[0][0] != photo._id else "photo"
        fns[kind] = f.fn

    def as_session(session: str | None, fn, *args):
        token = LocalContext.request.set(types.SimpleNamespace(session_hash=session) if session else None)
        try:
            return fn(*args)
        finally:
            LocalContext.request.reset(token)

    with pytest.raises(gr.Error, match="This server was restarted: reload the page to reconnect"):
        as_session("from-a-dead-replica", fns["change"], None)
    assert as_session(None, fns["change"], None) == "key None"  # no session: a direct call
    as_session("loaded-here", fns["load"])
    assert as_session("loaded-here", fns["change"], None) == "key None"
    assert as_session("from-a-dead-replica", fns["photo"], "f", None) == "new photo"  # a new upload works
    assert as_session("from-a-dead-replica", fns["change"], None) == "key None"  # and then everything
    assert as_session("never-loaded", fns["api"], 3) == 3
    # A tab clicked as the page opens: its event may run before the page's load event; it waits
    # for the load instead of telling a fresh visitor that the server restarted.
    threading.Timer(0.2, lambda: as_session("opening", fns["load"])).start()
    assert as_session("opening", fns["change"], None) == "key None"


def test_a_session_never_heard_of_is_refused_soon_and_an_opening_page_waits_for_its_load():
    """The hostile caller's flood: events with made-up sessions each waited LOAD_WAIT_S (10 s) for a load
    event that never comes, holding a worker thread and a queue place; ten a second kept the queue full
    (503 for everyone). Now only a session whose load event has joined the queue waits that long."""
    pages = sessions.Pages()
    t0 = time.monotonic()
    assert not pages.knows_within("made-up", timeout=5.0, unheard=0.2)
    assert 0.15 < time.monotonic() - t0 < 1.5
    pages.opening("opening")  # its load event joined the queue: it runs later than the grace
    threading.Timer(0.6, lambda: pages.saw("opening")).start()
    t0 = time.monotonic()
    assert pages.knows_within("opening", timeout=5.0, unheard=0.2)
    assert 0.5 < time.monotonic() - t0 < 3
    pages.opening("stuck")  # joined, never ran: refused at the timeout
    assert not pages.knows_within("stuck", timeout=0.4, unheard=0.2)
    threading.Timer(0.1, lambda: pages.opening("racing")).start()  # the load's join came second
    threading.Timer(0.5, lambda: pages.saw("racing")).start()
    assert pages.knows_within("racing", timeout=5.0, unheard=0.3)


def test_a_load_event_joining_the_queue_marks_its_page_opening(url):
    """Through the real queue: a page's load event joined under a new session makes that session's
    next event wait for it; a made-up session's event is answered "reload" within UNHEARD_S."""
    import httpx

    config = httpx.get(url + "config", timeout=60).json()
    # a load event the server runs (a page script's own load, js only, never reaches the queue)
    load = next(d["id"] for d in config["dependencies"]
                if d.get("backend_fn") and any(t[1] == "load" for t in d["targets"]))
    session = "opening1234"
    assert not sessions.PAGES.heard(session)
    r = httpx.post(url + "gradio_api/queue/join", json={"data": [], "fn_index": load, "session_hash": session,
                                                         "event_data": None, "trigger_id": None}, timeout=60)
    assert r.status_code == 200, r.text
    assert sessions.PAGES.heard(session)
    t0 = time.monotonic()
    assert not sessions.PAGES.knows_within("never-opened", timeout=30)
    assert time.monotonic() - t0 < sessions.UNHEARD_S + 1


def lru(pages_: list[str], others: list[str], capacity: int) -> types.SimpleNamespace:
    from collections import OrderedDict
    return types.SimpleNamespace(lock=threading.Lock(), capacity=capacity, time_last_used={},
                                 session_data=OrderedDict((s, object()) for s in [*pages_, *others]))


def test_sessions_that_are_no_page_go_first_and_never_push_out_a_page():
    """An audit: 310 REST calls (each a new session) pushed every student's page out of Gradio's LRU. Who
    goes is written by hand: the oldest non-page first; a page only for a page over capacity."""
    pages = sessions.Pages()
    for p in ("p1", "p2", "p3"):
        pages.saw(p)
    h = lru(["p1", "p2", "p3"], [], capacity=3)
    for k in range(5):  # REST calls arriving at a full holder of pages
        h.session_data[f"api{k}"] = object()
        sessions.pages_first(h, f"api{k}", pages)
        assert list(h.session_data) == ["p1", "p2", "p3", f"api{k}"]  # over by one, every page kept
    pages.saw("p4")
    h.session_data["p4"] = object()
    sessions.pages_first(h, "p4", pages)
    assert list(h.session_data) == ["p2", "p3", "p4"]  # the non-page first, then pages over capacity: the oldest
    pages.saw("a")
    mixed = lru(["a"], ["x", "y"], capacity=2)
    sessions.pages_first(mixed, "a", pages)  # the page a used again: moved to the end, the oldest non-page out
    assert list(mixed.session_data) == ["y", "a"]


def test_a_network_making_many_pages_loses_its_own_first():
    """A review: a page is any session a load event named, and anyone can send one; four forged loads
    pushed a real student out. Past the bound the biggest network's oldest session goes."""
    pages = sessions.Pages()
    pages.saw("student")
    pages.note_address("student", "address school")
    h = lru(["student"], [], capacity=4)
    for k in range(6):
        pages.saw(f"forged{k}")
        pages.note_address(f"forged{k}", "address stranger")
        h.session_data[f"forged{k}"] = object()
        sessions.pages_first(h, f"forged{k}", pages)
    assert list(h.session_data) == ["student", "forged3", "forged4", "forged5"]
    pages.saw("teacher")
    pages.note_address("teacher", "address school")
    h.session_data["teacher"] = object()
    sessions.pages_first(h, "teacher", pages)
    assert list(h.session_data) == ["student", "forged4", "forged5", "teacher"]  # the stranger's (3), not the school's


def test_rest_calls_on_a_running_app_leave_its_pages_sessions(monkeypatch):
    """Through Gradio's own StateHolder and routes (capacity 3): a page's session survives 8 REST
    clients, and the holder stays within capacity + 1."""
    import httpx
    from appserver import free_port
    from gradio_client import Client

    sessions.install()
    monkeypatch.setattr(sessions, "PAGES", sessions.Pages())
    with gr.Blocks() as demo:
        key = gr.State()
        n, out = gr.Number(), gr.Number()
        demo.load(lambda: "k", None, key)
        gr.Button().click(lambda x: x * 2, n, out, api_name="double")
    sessions.refuse_lost_sessions(demo, key, pages=sessions.PAGES)
    port = free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        state_session_capacity=3)
    try:
        url = f"http://127.0.0.1:{port}/"
        load = next(i for i, d in demo.fns.items() if any(t[1] == "load" for t in d.targets))
        r = httpx.post(url + "gradio_api/queue/join", json={"data": [], "fn_index": load, "session_hash": "page-1",
                                                             "event_data": None, "trigger_id": None}, timeout=60)
        assert r.status_code == 200, r.text
        assert sessions.PAGES.knows_within("page-1", timeout=30)
        for k in range(8):
            assert Client(url, verbose=False).predict(k, api_name="/double") == 2 * k
        held = demo.state_holder.session_data
        assert "page-1" in held, "a REST caller pushed the page's session out"
        assert len(held) <= 4
    finally:
        demo.close()
