"""page/kit.py without a browser: kit.in_line (the one place a tab's view events are put in the
order the page sent them) and kit.answer (a named handler's {name: value} as Gradio's answer);
then who a caller is (address, session), the fair line's wait shown, and who stops a job
(merged from tests/test_costly.py)."""

from __future__ import annotations

import inspect
import threading
import time

import gradio as gr
import numpy as np
import pytest

from page import kit
from page.ordered import AnswerOrder
from vizvit.errors import UserError
from vizvit.service.jobs import Jobs
from vizvit.session import PhotoKey

KEY = PhotoKey("m", "sha1")


def _ui() -> tuple[AnswerOrder, dict]:
    with gr.Blocks():
        return AnswerOrder("t"), {n: gr.Textbox(elem_id=n) for n in ("layer", "show", "pic")}


def test_a_line_event_older_than_one_answered_changes_nothing_and_a_set_control_is_read_as_set():
    order, ui = _ui()
    seen = []

    def fn(wb, key, c):
        seen.append((wb, key, c))
        return {"layer": c["layer"] + 1, "pic": f"layer {c['layer']}"}

    handler = kit.in_line(order, ["layer", "show"], fn, ui, ["layer", "pic"], "WB", sets=("layer",))
    assert handler("p:1:0", KEY, 3, "mean") == {ui["layer"]: 4, ui["pic"]: "layer 3", order.stamp: "p:1:0"}
    assert seen == [("WB", KEY, {"layer": 3, "show": "mean"})], "the controls by name, the Workbench bound"
    # Sent before that answer landed: its layer is read as that answer set it (4), not as sent (9).
    assert handler("p:2:0", KEY, 9, "max")[ui["pic"]] == "layer 4"
    stale = handler("p:1:0", KEY, 5, "mean")  # older than p:2, answered after it
    assert stale == {ui["layer"]: gr.skip(), ui["pic"]: gr.skip(), order.stamp: gr.skip()}
    assert handler("p:3:2", None, 5, "mean")[ui["pic"]] == gr.skip(), "no photo: nothing to draw"
    assert len(seen) == 2
    # No stamp (an API call): answered as sent, the stamp box left alone.
    assert handler("", KEY, 7, "mean") == {ui["layer"]: 8, ui["pic"]: "layer 7", order.stamp: gr.skip()}


def test_a_select_line_event_passes_the_clicked_pixel_and_gradio_sees_select_data():
    order, ui = _ui()
    handler = kit.in_line(order, ["layer"], lambda wb, key, c, xy: {"pic": xy}, ui, ["pic"], None, select=True)
    params = list(inspect.signature(handler).parameters)
    assert params[:3] == ["evt", "stamp", "key"]
    evt = gr.SelectData(None, {"index": [12, 30], "value": None})
    assert handler(evt, "q:1:0", KEY, 2)[ui["pic"]] == (12, 30)


def test_a_line_handler_error_is_a_message_in_the_page():
    order, ui = _ui()

    def broken(wb, key, c):
        raise kit.UserError("Choose a head")

    with pytest.raises(gr.Error, match="Choose a head"):
        kit.in_line(order, ["layer"], broken, ui, ["pic"], None)("", KEY, 1)


def test_answer_names_components_binds_the_lead_and_keeps_request_and_generators():
    _, ui = _ui()

    def plain(wb, key, n: int, request: gr.Request = None) -> dict:
        """doc"""
        return {"pic": (wb, key, n), "layer": 1}

    def stream(wb, n: int):
        for i in range(n):
            yield {"pic": (wb, i)}

    h = kit.answer(plain, ui, "WB")
    assert h("k", 2) == {ui["pic"]: ("WB", "k", 2), ui["layer"]: 1}
    assert list(inspect.signature(h).parameters) == ["key", "n", "request"], "Gradio counts the inputs from this"
    assert gr.utils.get_type_hints(h)["request"] is gr.Request, "so Gradio passes the request"
    assert h.__name__ == "plain" and h.__doc__ == "doc"
    s = kit.answer(stream, ui, "WB")
    assert inspect.isgeneratorfunction(s)
    assert list(s(2)) == [{ui["pic"]: ("WB", 0)}, {ui["pic"]: ("WB", 1)}]
    assert kit.answer(lambda: kit.skip(["pic"]), ui)() == {ui["pic"]: gr.skip()}
    other = gr.Textbox()  # a component another part answers for (a tab's preview), merged in as it is
    assert kit.answer(lambda: {"pic": 1, other: 2}, ui)() == {ui["pic"]: 1, other: 2}


# ---- From tests/test_costly.py (merged, issue 44) ----------------------------------------------
# Who a caller is (page/kit.py, issue 42): its network address, X-Forwarded-For only behind trusted
# proxies, the session only where there is no address; one costly job per caller across sessions.


def request(host: str | None, session: str, forwarded: str | None = None) -> gr.Request:
    headers = {"x-forwarded-for": forwarded} if forwarded else {}
    return gr.Request(session_hash=session, client={"host": host, "port": 1234}, headers=headers)


def test_a_caller_is_its_address_whatever_its_session():
    assert kit.caller_of(request("192.0.2.7", "s1"), hops=0) == kit.caller_of(request("192.0.2.7", "s2"), hops=0) \
        == "address 192.0.2.7"
    assert kit.caller_of(request("192.0.2.8", "s1"), hops=0) == "address 192.0.2.8"
    assert kit.caller_of(request(None, "s9"), hops=0) == "session s9"  # no address: the session
    assert kit.caller_of(None) is None


def test_x_forwarded_for_counts_only_behind_a_trusted_proxy_and_only_the_entry_it_wrote():
    # No trusted proxy: a header anyone can send changes nothing.
    assert kit.caller_of(request("192.0.2.7", "s1", "203.0.113.5"), hops=0) == "address 192.0.2.7"
    # One proxy (a Space, deploy/'s nginx): the entry it appended, not what the client wrote before it.
    assert kit.caller_of(request("10.0.0.2", "s1", "198.51.100.9, 203.0.113.5"), hops=1) == "address 203.0.113.5"
    assert kit.caller_of(request("10.0.0.2", "s1", "198.51.100.9, 203.0.113.5"), hops=2) == "address 198.51.100.9"
    # Behind the proxy without the header (no client address known): the session, never the proxy's.
    assert kit.caller_of(request("10.0.0.2", "s1"), hops=1) == "session s1"


def test_proxy_hops_trusts_a_space_or_the_flag(monkeypatch):
    monkeypatch.delenv(kit.PROXY_HOPS_ENV, raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    assert kit.proxy_hops() == 0
    monkeypatch.setenv("SPACE_ID", "someone/vizvit")
    assert kit.proxy_hops() == 1
    monkeypatch.setenv(kit.PROXY_HOPS_ENV, "2")
    assert kit.proxy_hops() == 2
    monkeypatch.setenv(kit.PROXY_HOPS_ENV, "yes")
    assert kit.proxy_hops() == 0  # not a number: trust no proxy (logged)


def test_same_address_two_sessions_both_get_their_costly_job_in_turn(monkeypatch):
    """Issue 50: a caller is (address, session); a new session from one address waits its turn (its
    place in line shown), never refused because the address's other session runs a job."""
    monkeypatch.delenv(kit.PROXY_HOPS_ENV, raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    jobs = kit.CostlyJobs(Jobs(slots=1))
    started, release = threading.Event(), threading.Event()

    def first() -> None:
        with jobs.hold(request("192.0.2.7", "page-session"), "attention flow") as c:
            started.set()
            while not release.is_set():
                c.check()
                time.sleep(0.01)

    t = threading.Thread(target=first, daemon=True)
    t.start()
    assert started.wait(10)
    threading.Timer(0.3, release.set).start()
    with jobs.line(request("192.0.2.7", "new-rest-session"), "shift sweep") as ticket:
        shown = [kit.waiting_text("shift sweep", ahead) for ahead in ticket.waiting()]
        assert ticket.started and ticket.cancel.limit_s == jobs.jobs.limit_of("shift sweep")
    assert shown[0] == "Waiting for a free slot: your shift sweep is next in line.", shown
    t.join(10)
    with jobs.hold(None, "shift sweep") as c:  # a direct call (no request): not counted, still limited
        assert c.limit_s == jobs.jobs.limit_of("shift sweep") and jobs.jobs.stats().running == []


def test_a_closed_page_stops_its_job_waiting_in_line_and_running():
    jobs = kit.CostlyJobs(Jobs(slots=1))
    running, out = threading.Event(), {}

    def job(session: str) -> None:
        try:
            with jobs.hold(request("192.0.2.7", session), "shift sweep") as c:
                running.set()
                while True:
                    c.check()
                    time.sleep(0.01)
        except UserError as e:
            out[session] = str(e)

    first = threading.Thread(target=job, args=("open-page",), daemon=True)
    first.start()
    assert running.wait(10)
    second = threading.Thread(target=job, args=("closed-page",), daemon=True)
    second.start()
    t0 = time.monotonic()
    while not jobs.jobs.stats().waiting:
        assert time.monotonic() - t0 < 10
        time.sleep(0.01)
    jobs.left(request("192.0.2.7", "closed-page"))  # the page's unload event
    second.join(10)
    assert "the page was closed" in out["closed-page"] and "open-page" not in out
    assert jobs.jobs.stats().recent[0]["outcome"] == "not started: the page was closed"
    jobs.left(request("192.0.2.7", "open-page"))
    first.join(10)
    assert jobs.jobs.stats().recent[0]["outcome"] == "stopped: the page was closed"


def test_a_job_whose_answer_nobody_reads_is_stopped_waiting_or_running_and_a_read_one_is_not(monkeypatch):
    """Gradio runs a REST call POSTed to /gradio_api/call/<name> whose stream is never opened to its
    end, and its event stays alive; the sign is its session's messages left unread. Here a real event
    loop holds two sessions' message queues (asyncio.Queue, as Gradio's): one read, one not."""
    import asyncio
    from types import SimpleNamespace

    monkeypatch.setattr(kit, "UNREAD_S", 0.3)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    pending = {"read": asyncio.Queue(), "unread": asyncio.Queue()}
    gradio_queue = SimpleNamespace(pending_messages_per_session=pending)

    async def reader() -> None:  # an open stream: takes each message as it comes
        while True:
            await pending["read"].get()

    reading = asyncio.run_coroutine_threadsafe(reader(), loop)
    jobs = kit.CostlyJobs(Jobs(slots=1))
    watched = {}
    for session in ("read", "unread"):
        event = SimpleNamespace(alive=True, session_hash=session)
        watched[session] = kit._Watched(kit.Cancel(what="shift sweep"), event, loop, f"id-{session}", gradio_queue)
        loop.call_soon_threadsafe(pending[session].put_nowait, f"process_starts {session}")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3.0 and not watched["unread"].cancel.is_set():
        jobs.look(list(watched.values()))
        time.sleep(0.05)
    assert watched["unread"].cancel.is_set() and watched["unread"].cancel.reason == "nobody reads its answer"
    assert not watched["read"].cancel.is_set(), watched["read"].cancel.reason
    watched["read"].event.alive = False  # its stream closed: the caller left
    jobs.look([watched["read"]])
    assert watched["read"].cancel.reason == "the caller left"

    # The page's Stop: Gradio cancels the event's task, which waits for the handler's thread to end
    # its step (it stays "cancelling"); the task is named '<session>_<fn><gradio-sep><event id>'.
    async def event_task() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(60)

    async def start_and_stop() -> None:
        task = asyncio.get_running_loop().create_task(event_task(), name="read_7<gradio-sep>id-stopped")
        await asyncio.sleep(0)  # it runs to its first await, as an event's task does
        task.cancel()

    asyncio.run_coroutine_threadsafe(start_and_stop(), loop).result(5)
    stopped = kit._Watched(kit.Cancel(what="shift sweep"), SimpleNamespace(alive=True, session_hash="read"), loop,
                           "id-stopped", gradio_queue)
    jobs.look([stopped, watched["unread"]])
    assert stopped.cancel.reason == "it was stopped"
    reading.cancel()
    time.sleep(0.05)
    loop.call_soon_threadsafe(loop.stop)


def _blank(v) -> bool:
    return v is None or (isinstance(v, str) and not v)


@pytest.mark.slow
def test_every_tabs_open_with_no_photo_yet_clears_nothing(tiny16):
    """A deep link clicks its tab open while the photo still loads: that show (no key yet) must not
    clear what the photo's own answer, which may land first, drew (CI: the Compare tab stayed blank).
    Setting a control to the model's range, or a text that is the same with a photo, is no clearing."""
    from starlette.requests import Request

    from page import shell
    from vizvit.session import Workbench

    wb = Workbench(cache_bytes=16 << 20, device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    link = gr.Request(Request({"type": "http", "method": "GET", "path": "/", "headers": [],
                               "query_string": b"example=chelsea&tab=lesson&lesson=1&step=2"}))
    tabs = {b._id: b for b in demo.blocks.values() if isinstance(b, gr.Tab)}
    opens = [fn for fn in demo.fns.values() if fn.fn is not None
             and any(t[0] in tabs and t[1] == "select" for t in fn.targets)]
    assert len(opens) >= 8, [tabs[t[0]].id for fn in opens for t in fn.targets]
    for fn in opens:
        if fn.inputs[:1] == [] or getattr(fn.inputs[0], "value", "x") is not None:
            continue  # not a show of the session's key (e.g. a tab with no photo view)
        args = [None if i == 0 else getattr(c, "value", None) for i, c in enumerate(fn.inputs)]
        takes_request = "request" in inspect.signature(fn.fn).parameters
        out = fn.fn(*args, **({"request": link} if takes_request else {}))
        vals = list(out.values()) if isinstance(out, dict) else list(out if isinstance(out, (list, tuple)) else [out])
        cleared = [v for v in vals if _blank(v) or (isinstance(v, dict) and "value" in v and _blank(v["value"]))]
        assert not cleared, (fn.name, [tabs[t[0]].id for t in fn.targets], cleared[:3])


def test_a_picture_of_cells_carries_its_layout_for_the_keys_and_nothing_else_changes():
    """kit.patch_cells / with_cells (issue 51: web/a11y.js reads the class): a 14×14 grid of 16-px
    patches shown 3× (render.display_scale for 224 px) steps 48 px from the corner; the heads grid
    starts past its labels; no picture (a skip, None) passes through untouched."""
    from vizvit.model.models import Geometry
    from vizvit.pictures import render

    g = Geometry(image_size=(224, 224), patch_size=16, grid=(14, 14), num_prefix_tokens=1, num_layers=12,
                 num_heads=3, hidden_size=8)
    assert render.display_scale(g) == 3
    pic = np.zeros((672, 760, 3), np.uint8)  # the map with its colour bar to the right
    assert kit.patch_cells(pic, g)["elem_classes"] == ["vv-cells-14x14-0-0-48-48"]
    assert kit.patch_cells(pic, g)["value"] is pic
    assert kit.with_cells(pic, 12, 3, (86, 86), (66, 30))["elem_classes"] == ["vv-cells-12x3-66-30-86-86"]
    skip = gr.skip()
    assert kit.with_cells(skip, 2, 2) is skip and kit.with_cells(None, 2, 2) is None
