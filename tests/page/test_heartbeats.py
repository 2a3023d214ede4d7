"""page/heartbeats.py through a real server: a session's answer stream whose client hangs up mid-way
leaves no heartbeat task behind (Gradio 6.31's stream left one, waking every 15 s for the life of the
process, for 27 of 30 such streams), and no ERROR line in the log."""

from __future__ import annotations

import gc
import logging
import time
import types

import gradio as gr
import httpx
from appserver import free_port
from starlette.middleware import Middleware

from page import stream_grace

API = "gradio_api"


def _beating() -> int:
    """Heartbeat coroutines not finished, anywhere in this process."""
    gc.collect()
    return sum(1 for o in gc.get_objects()
               if isinstance(o, types.CoroutineType) and o.__name__ == "heartbeat" and o.cr_frame is not None)


def test_a_stream_hung_up_on_mid_way_takes_its_heartbeat_with_it(caplog):
    caplog.set_level(logging.ERROR)
    with gr.Blocks() as demo:
        n, out = gr.Number(), gr.Number()
        gr.Button().click(lambda x: x, n, out, api_name="echo")
    demo.queue()
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": [Middleware(stream_grace.StreamGrace)]})
    url = f"http://127.0.0.1:{port}/"
    try:
        before = _beating()
        for i in range(12):
            session = f"hangup{i:05d}"
            body = {"data": [i], "fn_index": 0, "session_hash": session, "event_data": None, "trigger_id": None}
            httpx.post(f"{url}{API}/queue/join", json=body, timeout=30).raise_for_status()
            with httpx.stream("GET", f"{url}{API}/queue/data", params={"session_hash": session}, timeout=30) as r:
                next(r.iter_lines())  # the first message, then hang up (the answer follows at once)
        deadline = time.monotonic() + 20
        while _beating() > before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _beating() == before
    finally:
        demo.close()
    gc.collect()
    assert not [r for r in caplog.records if "GeneratorExit" in r.getMessage()
                or (r.exc_info and "GeneratorExit" in str(r.exc_info[1]))]
