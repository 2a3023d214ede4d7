"""page/queue_wake.py: Gradio's queue starts a job when it is pushed or when a worker frees up,
not on a 1 ms poll. Each test sets the safety net's poll to 60 s, so a wake-up that did not happen
would hold its call a minute (the assertions allow 20 s); and the idle loops are counted."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import gradio as gr
import pytest
from appserver import free_port
from gradio.queueing import Queue
from gradio_client import Client

from page import queue_wake

NET_S = 60.0  # the safety net's poll in these tests: a missed wake-up costs a call this long
STARTED: list[tuple[float, float]] = []  # (x, when) of each /slow call as it began


@pytest.fixture
def served(monkeypatch) -> Iterator[tuple[str, threading.Event, list[float]]]:
    """(url, the gate that holds /slow, the time of each look the queue took at its length: the job
    loop looks once a turn, Gradio's own and this one)."""
    monkeypatch.setattr(queue_wake, "MISSED_WAKE_S", NET_S)
    looks: list[float] = []
    length = Queue.__len__

    def counted(self):
        looks.append(time.monotonic())
        return length(self)

    monkeypatch.setattr(Queue, "__len__", counted)
    queue_wake.install()
    gate = threading.Event()
    demo = blocks(gate)
    try:
        yield launched(demo), gate, looks
    finally:
        gate.set()
        demo.close()


def blocks(gate: threading.Event) -> gr.Blocks:
    """/slow waits for the gate (one at a time), /double answers at once."""

    def slow(x: float) -> float:
        STARTED.append((x, time.monotonic()))
        assert gate.wait(30), "the test never opened the gate"
        return x + 1

    def halfway(x: float, progress=gr.Progress()) -> float:  # noqa: B008 - Gradio's own idiom
        progress(0.5, desc="halfway")
        assert gate.wait(30), "the test never opened the gate"
        return x

    with gr.Blocks() as demo:
        n, out = gr.Number(), gr.Number()
        gr.Button().click(slow, n, out, api_name="slow", concurrency_limit=1)
        gr.Button().click(lambda x: x * 2, n, out, api_name="double", concurrency_limit=1)
        gr.Button().click(halfway, n, out, api_name="halfway")
    demo.queue(max_size=20)
    return demo


def began(n: int) -> None:
    """Until n /slow calls have begun (20 s at most)."""
    deadline = time.monotonic() + 20
    while len(STARTED) < n:
        assert time.monotonic() < deadline, f"{len(STARTED)} of {n} /slow calls began"
        time.sleep(0.01)


@contextmanager
def one_behind_another(url: str) -> Iterator[tuple[Future, Future]]:
    """/slow(1) from one client holding /slow's only slot, and /slow(10) from another queued behind it."""
    STARTED.clear()
    clients = [Client(url, verbose=False) for _ in range(2)]
    try:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(clients[0].predict, 1, api_name="/slow")
            began(1)
            second = pool.submit(clients[1].predict, 10, api_name="/slow")
            time.sleep(0.5)  # the second is queued behind the first
            yield first, second
    finally:
        for c in clients:
            c.close()


def launched(demo: gr.Blocks) -> str:
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    return f"http://127.0.0.1:{port}/"


def test_a_pushed_call_starts_at_once_and_an_idle_queue_sleeps(served):
    url, _, looks = served
    client = Client(url, verbose=False)
    t = time.monotonic()
    assert client.predict(3, api_name="/double") == 6
    assert time.monotonic() - t < 20, "the call waited for the safety net's poll: its push did not wake the queue"
    before = len(looks)
    time.sleep(1.0)  # idle: Gradio's own loop would have looked ~1,000 times
    assert len(looks) - before <= 2, f"{len(looks) - before} looks in 1 s of an idle queue"
    client.close()


def test_a_call_queued_behind_a_full_slot_starts_when_the_slot_frees(served):
    url, gate, _ = served
    with one_behind_another(url) as (first, second):
        assert not first.done() and not second.done()
        gate.set()
        assert first.result(timeout=20) == 2
        assert second.result(timeout=20) == 11, "the second never started"


def test_a_blocks_launched_again_runs_its_queue_on_the_new_loop(monkeypatch):
    """The same Blocks closed and launched again (tests/appserver.py does, when a launch fails) serves
    from another event loop: its queue's wake-ups are made anew there, so its calls still start."""
    monkeypatch.setattr(queue_wake, "MISSED_WAKE_S", NET_S)
    queue_wake.install()
    demo = blocks(threading.Event())
    try:
        for _ in range(2):
            client = Client(launched(demo), verbose=False)
            t = time.monotonic()
            assert client.predict(4, api_name="/double") == 8
            assert time.monotonic() - t < 20, "the call waited for the safety net: no wake-up on this loop"
            client.close()
            demo.close()
    finally:
        demo.close()


def test_a_worker_given_back_starts_the_next_job_before_its_last_jobs_clean_up_ends(served, monkeypatch):
    """Gradio gives a job's worker back at the start of its clean-up (then resets the job's iterators
    and counts analytics on a worker thread): the queued job starts then, not after the clean-up.
    Here the clean-up takes 3 s."""
    url, gate, _ = served
    tidy = Queue.reset_iterators

    async def slow_tidy(self, event_id):
        await asyncio.sleep(3.0)
        await tidy(self, event_id)

    monkeypatch.setattr(Queue, "reset_iterators", slow_tidy)
    with one_behind_another(url) as (first, second):
        opened = time.monotonic()
        gate.set()
        assert first.result(timeout=30) == 2 and second.result(timeout=30) == 11
    _, (x2, t2) = STARTED
    assert x2 == 10 and t2 - opened < 1.5, f"the second began {t2 - opened:.2f} s after the first was let go"


def test_a_jobs_progress_reaches_its_caller_while_it_runs(served):
    """The progress loop sleeps while no job runs; a job's start wakes it (with the 60 s net, a missed
    wake-up would hold the message a minute)."""
    url, gate, _ = served
    client = Client(url, verbose=False)
    job = client.submit(5, api_name="/halfway")
    deadline = time.monotonic() + 20
    while not job.status().progress_data:
        assert time.monotonic() < deadline, "no progress message while the job ran"
        time.sleep(0.05)
    assert job.status().progress_data[0].desc == "halfway"
    gate.set()
    assert job.result(timeout=20) == 5
    client.close()
