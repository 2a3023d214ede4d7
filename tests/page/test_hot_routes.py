"""page/hot_routes.py: the routes every call takes come first in Gradio's API router, and every
request still reaches the route it reached before. Checked on constructed route lists with known
answers and on Gradio's own app, against Starlette's rule (the first route whose pattern and methods
take the request)."""

from __future__ import annotations

import re

import gradio as gr
import httpx
from gradio.routes import App
from starlette.routing import Route

from page import hot_routes

hot_routes.install()


def ok(request):  # a Starlette endpoint; never called here
    return None


def first_taker(routes, path: str, method: str):
    """Starlette's choice: the first route whose pattern matches the path and whose methods hold it."""
    return next((r for r in routes if r.path_regex.match(path) and (not r.methods or method in r.methods)), None)


def samples(route) -> list[str]:
    """Concrete paths the route takes: each {param} filled with a value its converter reads."""
    return [re.sub(r"\{[^}]*\}", fill, route.path) for fill in ("1", "abc")]


def test_a_hot_route_moves_first_unless_a_route_before_it_takes_its_requests():
    a, b = Route("/api/a", ok, methods=["GET"]), Route("/api/{x}", ok, methods=["GET", "POST"])
    join, data = Route("/api/queue/join", ok, methods=["POST"]), Route("/api/queue/data", ok, methods=["GET"])
    beat = Route("/api/beat/{session}", ok, methods=["GET"])
    got = hot_routes.hot_first([a, b, join, data, beat], ("/api/queue/data", "/api/queue/join", "/api/beat/{session}"))
    # data: no route before it takes a GET of its path; join: /api/{x} takes POST /api/queue/join? no,
    # {x} is one segment; beat: /api/{x} is a pattern whose beginning /api/ begins /api/beat/: kept.
    assert got == [data, join, a, b, beat]
    catch_all = Route("/api/{rest:path}", ok, methods=["POST"])
    got = hot_routes.hot_first([catch_all, join, data], ("/api/queue/join", "/api/queue/data"))
    assert got == [data, catch_all, join]


def test_gradios_app_lists_the_hot_routes_first_and_every_request_reaches_the_same_route():
    with gr.Blocks() as demo:
        gr.Button().click(lambda: 1, None, gr.Number())
    demo.queue()
    now = App.create_app(demo).router.routes[-1].original_router.routes
    before = App.create_app.__wrapped__(demo).router.routes[-1].original_router.routes  # Gradio's own order
    assert [r.path for r in now[:len(hot_routes.HOT)]] == list(hot_routes.HOT)
    assert [r.path for r in before[:len(hot_routes.HOT)]] != list(hot_routes.HOT)

    def key(route):
        return None if route is None else (route.path, tuple(sorted(route.methods or ())))

    assert sorted(map(key, now)) == sorted(map(key, before))
    for route in before:
        for path in samples(route):
            for method in route.methods or {"GET"}:
                assert key(first_taker(now, path, method)) == key(first_taker(before, path, method)), (method, path)


def test_the_served_app_answers_on_each_hot_route():
    with gr.Blocks() as demo:
        gr.Button().click(lambda: 1, None, gr.Number(), api_name="one")
    demo.queue()
    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True, server_name="127.0.0.1")
    try:
        body = {"data": [], "fn_index": 0, "session_hash": "hot", "event_data": None, "trigger_id": None}
        assert httpx.post(f"{url}gradio_api/queue/join", json=body, timeout=30).status_code == 200
        with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": "hot"}, timeout=30) as r:
            text = "".join(r.iter_text())
        assert '"process_completed"' in text and '"data":[1]' in text.replace(" ", "")
        up = httpx.post(f"{url}gradio_api/upload", files={"files": ("a.txt", b"hi")}, timeout=30)
        assert up.status_code == 200 and up.json()[0].endswith("a.txt")
    finally:
        demo.close()


def _hops(app, path: str, monkeypatch) -> int:
    """How many dependencies FastAPI ran in a worker thread to answer GET `path` (its
    run_in_threadpool, as solve_dependencies calls it)."""
    from fastapi.dependencies import utils
    from starlette.testclient import TestClient

    hops = []
    real = utils.run_in_threadpool

    async def counted(fn, *args, **kwargs):
        hops.append(getattr(fn, "__name__", fn))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(utils, "run_in_threadpool", counted)
    TestClient(app).get(path)  # no lifespan: Gradio's starts its queue, which never returns here
    monkeypatch.setattr(utils, "run_in_threadpool", real)
    return len(hops)


def test_the_login_check_runs_on_the_event_loop_and_still_refuses_a_stranger(monkeypatch):
    """Gradio's login_check is a plain def, which FastAPI runs in a worker thread: on the served
    routes (an included router builds its own dependants from the declared Depends) it now runs on
    the event loop, with no hop, while Gradio's own app still hops (the reference). An app with a
    login still refuses a caller without one (HTTP 401) and lets a logged-in one through."""
    with gr.Blocks() as demo:
        gr.Button().click(lambda: 1, None, gr.Number(), api_name="one")
    demo.queue()
    for path in ("/gradio_api/file=nothing.txt", "/gradio_api/info", "/config"):
        assert _hops(App.create_app.__wrapped__(demo), path, monkeypatch) == 1, path  # Gradio's: the check's hop
        assert _hops(App.create_app(demo), path, monkeypatch) == 0, path

    _, url, _ = demo.launch(prevent_thread_lock=True, quiet=True, server_name="127.0.0.1", auth=("ann", "pw"))
    try:
        body = {"data": [], "fn_index": 0, "session_hash": "hot", "event_data": None, "trigger_id": None}
        assert httpx.post(f"{url}gradio_api/queue/join", json=body, timeout=30).status_code == 401
        assert httpx.get(f"{url}config", timeout=30).status_code == 401
        assert httpx.get(f"{url}gradio_api/file=x.txt", timeout=30).status_code == 401
        with httpx.Client(timeout=30) as client:
            assert client.post(f"{url}login", data={"username": "ann", "password": "pw"}).status_code == 200
            assert client.post(f"{url}gradio_api/queue/join", json=body).status_code == 200
            assert client.get(f"{url}config").status_code == 200
    finally:
        demo.close()
