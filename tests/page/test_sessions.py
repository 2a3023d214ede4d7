"""page/sessions.py: idle sessions forgotten, on a constructed holder shaped like Gradio's
StateHolder (its lock, session_data, time_last_used): who is dropped at which cutoff is written by
hand; and an event of a session this process never served answers "reload the page", on a small
Blocks whose events are called as Gradio calls them. No browser: this file does not use the page's
server. The server's bound over hundreds of photos is tests/system/test_memory.py; a replica killed
behind nginx, tests/system/test_deploy.py."""

from __future__ import annotations

import datetime
import threading
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
