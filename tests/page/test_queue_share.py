"""page/queue_share.py: no one address fills Gradio's queue. The rule on constructed lines (who waits,
from where, a page or not: the answers written by hand), then through a running Gradio app whose one
worker is held: a script's calls past API_SHARE are refused with the sentence, a page of the same
address still gets in."""

from __future__ import annotations

import threading

import gradio as gr
import httpx
import pytest

from page import queue_share, sessions


def test_a_script_may_keep_a_few_calls_waiting_a_page_all_but_the_reserve():
    script = [("address A", False)] * queue_share.API_SHARE
    assert "wait for their answers" in queue_share.refusal(script, "address A", False, 64)
    assert queue_share.refusal(script, "address B", False, 64) is None  # another network: its own share
    assert queue_share.refusal(script, "address A", True, 64) is None  # a page of that network still joins
    hall = [("address campus", True)] * (64 - queue_share.RESERVE)
    assert "full of requests from your network (48 waiting)" in queue_share.refusal(hall, "address campus", True, 64)
    assert queue_share.refusal(hall, "address elsewhere", True, 64) is None  # the reserve is theirs
    assert queue_share.refusal(hall[:-1], "address campus", True, 64) is None
    assert queue_share.refusal(script, None, False, 64) is None  # in-process: nobody to count
    assert queue_share.refusal([("address A", True)] * 2, "address A", True, 4) is None  # a queue of 4: 3 each
    assert queue_share.refusal([("address A", True)] * 3, "address A", True, 4) is not None
    # a review: A's 48 and B's 16 filled all 64; with the reserve's own rule B gets 4 of them, C its own
    two = hall + [("address B", True)] * 4
    assert "nearly full" in queue_share.refusal(two, "address B", True, 64)
    assert queue_share.refusal(two, "address C", True, 64) is None


@pytest.fixture
def held_app(monkeypatch):
    """A small app with one worker held until released; its load event marks pages (refuse_lost_sessions)."""
    from appserver import free_port

    sessions.install()
    queue_share.install()
    monkeypatch.setattr(sessions, "PAGES", sessions.Pages())
    release = threading.Event()

    def slow(x):
        release.wait(30)
        return x

    with gr.Blocks() as demo:
        key = gr.State()
        n, out = gr.Number(), gr.Number()
        demo.load(lambda: "k", None, key)
        gr.Button().click(slow, n, out, api_name="slow", concurrency_limit=1)
    sessions.refuse_lost_sessions(demo, key, pages=sessions.PAGES)
    port = free_port()
    demo.queue(max_size=64).launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield demo, f"http://127.0.0.1:{port}/", release
    finally:
        release.set()
        demo.close()


def join(url: str, fn_index: int, session: str) -> httpx.Response:
    return httpx.post(url + "gradio_api/queue/join", timeout=30,
                      json={"data": [1], "fn_index": fn_index, "session_hash": session, "event_data": None,
                            "trigger_id": None})


def test_one_scripts_calls_cannot_fill_the_queue(held_app):
    demo, url, release = held_app
    slow = next(i for i, d in demo.fns.items() if d.api_name == "slow")
    load = next(i for i, d in demo.fns.items() if any(t[1] == "load" for t in d.targets))
    answers = [join(url, slow, f"rest{k}") for k in range(1 + queue_share.API_SHARE + 4)]  # one runs, the rest wait
    refused = [r for r in answers if r.status_code == 503]
    assert len(refused) >= 3, [r.status_code for r in answers]
    assert "wait for their answers" in refused[0].json()["detail"]
    assert join(url, load, "page-1").status_code == 200  # a page of the same address opens
    assert sessions.PAGES.knows_within("page-1", timeout=30)
    assert join(url, slow, "page-1").status_code == 200  # and its events join
    release.set()
