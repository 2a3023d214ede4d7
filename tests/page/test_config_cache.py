"""page/config_cache.py: the page's HTML and /config are Gradio's own answers, built once per root and
sent compressed. Against Gradio itself in the same server (a request the cache passes through: /config/
and /?page= reach the same Gradio handlers), and on a constructed inner app that counts its calls."""

from __future__ import annotations

import asyncio
import gzip
import threading
from typing import Any

import brotli
import gradio as gr
import httpx
import pytest
from appserver import free_port

import app
from page import config_cache


@pytest.fixture(scope="module")
def url() -> Any:
    with gr.Blocks() as demo:
        n, out = gr.Number(label="n"), gr.Image(label="a picture")
        gr.Button("go").click(lambda x: None, n, out, api_name="go")
    demo.queue()
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                **app.launch_kwargs())  # the app's own middleware, the cache among it
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        demo.close()


def get(url: str, path: str, encoding: str = "identity", **headers: str) -> httpx.Response:
    return httpx.get(url + path, headers={"Accept-Encoding": encoding, **headers}, timeout=30)


def test_the_html_and_config_are_gradios_own_every_time_and_in_every_encoding(url):
    gradio_html = get(url, "/?page=").content  # passed through: Gradio's main page, built now
    gradio_config = get(url, "/config/").content
    assert b"window.gradio_config" in gradio_html and b'"components"' in gradio_config
    for _ in range(3):
        plain = get(url, "/")
        assert plain.content == gradio_html and "content-encoding" not in plain.headers
        assert get(url, "/config").content == gradio_config
    br = get(url, "/", "gzip, deflate, br, zstd")
    assert br.headers["content-encoding"] == "br" and br.headers["vary"] == "Accept-Encoding"
    assert int(br.headers["content-length"]) < len(gradio_html) / 3  # what a phone on campus Wi-Fi downloads
    assert br.content == gradio_html  # httpx decodes it: the same bytes
    with httpx.stream("GET", url + "/config", headers={"Accept-Encoding": "gzip"}, timeout=30) as gz:
        raw = b"".join(gz.iter_raw())  # the bytes on the wire
    assert gz.headers["content-encoding"] == "gzip" and gzip.decompress(raw) == gradio_config


@pytest.mark.parametrize("proxied,root", [({"X-Forwarded-Host": "example.org"}, "http://example.org"),
                                          ({"X-Forwarded-Host": "e.org", "X-Forwarded-Proto": "https"}, "https://e.org")])
def test_a_root_behind_a_proxy_is_its_own_and_never_leaks_to_another_caller(url, proxied, root):
    ours = get(url, "/config").json()["root"]
    assert get(url, "/config", **proxied).json()["root"] == root
    assert get(url, "/config", **proxied).content == get(url, "/config/", **proxied).content
    assert get(url, "/", **proxied).content == get(url, "/?page=", **proxied).content
    assert get(url, "/config").json()["root"] == ours == url
    assert root.encode() not in get(url, "/").content


def test_a_header_that_moves_gradios_root_stays_with_its_caller(url):
    """X-Gradio-Server moves the root Gradio writes (route_utils.get_request_origin) when no proxy host is
    given: one caller's value must never be what the next caller's page points at."""
    evil = {"X-Gradio-Server": "http://evil.example"}
    assert get(url, "/config", **evil).content == get(url, "/config/", **evil).content
    assert get(url, "/config").json()["root"] == url
    assert b"evil.example" not in get(url, "/").content and b"evil.example" not in get(url, "/config").content


# ------------------------------------------------------------------ on a constructed inner app
class Inner:
    """An ASGI app that answers like Gradio's routes, counting its calls; `blocks` as get_blocks gives."""

    def __init__(self, headers: list[tuple[bytes, bytes]] | None = None, status: int = 200,
                 auth: object = None) -> None:
        self.calls = 0
        self.headers = headers or [(b"content-type", b"text/html; charset=utf-8")]
        self.status = status
        self.blocks = type("Blocks", (), {"auth": auth, "config": {"components": []}})()
        self.auth_dependency = None

    def get_blocks(self) -> Any:
        return self.blocks

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        self.calls += 1
        body = f"answer {self.calls} for {dict(scope['headers']).get(b'host', b'').decode()}".encode()
        await send({"type": "http.response.start", "status": self.status,
                    "headers": [*self.headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def call(cache: config_cache.ConfigCache, inner: Inner, path: str = "/", query: bytes = b"",
         host: bytes = b"h", encoding: bytes = b"", method: str = "GET",
         headers: tuple[tuple[bytes, bytes], ...] = ()) -> tuple[dict, bytes]:
    """One request through the cache, as Starlette hands it to a middleware (the app in the scope)."""
    sent: list[dict] = []
    scope = {"type": "http", "method": method, "path": path, "query_string": query, "scheme": "http",
             "server": ("127.0.0.1", 80), "root_path": "", "app": inner,
             "headers": [(b"host", host), (b"accept-encoding", encoding), *headers]}

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b""}

    # On a thread of its own: a test before may have left this thread's event loop marked running.
    done = threading.Thread(target=lambda: asyncio.run(cache(scope, receive, send)))
    done.start()
    done.join(30)
    start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    return start, body


def test_gradio_builds_each_answer_once_per_root_and_keeps_a_bounded_few():
    inner = Inner()
    cache = config_cache.ConfigCache(inner)
    assert [call(cache, inner)[1] for _ in range(4)] == [b"answer 1 for h"] * 4 and inner.calls == 1
    assert call(cache, inner, "/config")[1] == b"answer 2 for h" and inner.calls == 2
    _, br = call(cache, inner, encoding=b"gzip, br")
    assert brotli.decompress(br) == b"answer 1 for h" and inner.calls == 2  # compressed from the kept answer
    assert call(cache, inner, host=b"other")[1] == b"answer 3 for other"  # another root: its own answer
    # Behind nginx each client has its own X-Forwarded-For, which Gradio never reads: one entry for all.
    for ip in (b"10.0.0.1", b"10.0.0.2"):
        assert call(cache, inner, headers=((b"x-forwarded-for", ip),))[1] == b"answer 1 for h"
    for header in (b"x-forwarded-host", b"x-forwarded-proto", b"x-gradio-server"):  # what moves the root
        before = inner.calls
        call(cache, inner, headers=((header, b"v"),))
        assert inner.calls == before + 1, header
    for i in range(config_cache.MAX_ENTRIES - 1):  # the least recently used goes first: h, just used, stays
        call(cache, inner, host=f"y{i}".encode())
        call(cache, inner)
    calls = inner.calls
    assert call(cache, inner)[1] == b"answer 1 for h" and inner.calls == calls
    for i in range(3 * config_cache.MAX_ENTRIES):  # a caller inventing hosts
        call(cache, inner, host=f"x{i}".encode())
    assert len(cache.pages.entries) == config_cache.MAX_ENTRIES
    calls = inner.calls
    assert call(cache, inner)[1] == f"answer {calls + 1} for h".encode()  # pushed out: built again


@pytest.mark.parametrize("case", ["page", "deep_link", "all_endpoints", "head", "other path", "login", "cookie",
                                  "error"])
def test_what_may_differ_between_callers_is_never_kept(case):
    inner = Inner(headers=[(b"content-type", b"text/html"), (b"set-cookie", b"s=1")] if case == "cookie" else None,
                  status=500 if case == "error" else 200, auth=[("u", "p")] if case == "login" else None)
    cache = config_cache.ConfigCache(inner)
    kw: dict[str, Any] = {"page": {"query": b"page="}, "deep_link": {"query": b"deep_link=abc"},
                          "all_endpoints": {"query": b"photo=x&all_endpoints=true"},
                          "head": {"method": "HEAD"}, "other path": {"path": "/gradio_api/info"}}.get(case, {})
    for n in (1, 2):
        start, body = call(cache, inner, **kw)
        assert body == f"answer {n} for h".encode() and inner.calls == n  # Gradio's, built again
        assert start["status"] == inner.status
    assert not cache.pages.entries and not cache.assets.entries


@pytest.mark.parametrize("accept,chosen", [("gzip, deflate, br, zstd", "br"), ("gzip", "gzip"), ("", ""),
                                           ("br;q=0, gzip", "gzip"), ("gzip;q=0", ""), ("BR;q=0.5", "br"),
                                           ("identity", ""), ("br;q=x, gzip;q=1.0", "gzip")])
def test_an_encoding_the_client_refuses_is_never_sent(accept, chosen):
    assert config_cache.encoding_for({"headers": [(b"accept-encoding", accept.encode())]}) == chosen


# ------------------------------------------------------------------ Gradio's frontend files
def _frontend_files(url: str) -> list[str]:
    """The /assets/ files the page's HTML names (its scripts and styles)."""
    import re
    return sorted(set(re.findall(r'/assets/[\w.-]+\.(?:js|css)', get(url, "/").text)))


def _cache_of(url: str) -> config_cache.ConfigCache:
    """The served app's ConfigCache (the middleware stack Starlette built for it)."""
    import gc
    caches = [o for o in gc.get_objects() if type(o) is config_cache.ConfigCache]  # type(): no attribute read
    return next(c for c in caches if any(k[1] in get(url, "/").text for k in c.assets.entries))


def test_a_frontend_file_is_gradios_own_file_every_time_and_in_every_encoding(url):
    files = _frontend_files(url)
    assert len(files) >= 2, files
    for path in files:
        gradio = get(url, path + "?passed")  # a query: passed through to Gradio's own route
        assert gradio.status_code == 200 and gradio.content
        for encoding in ("identity", "gzip", "gzip, deflate, br, zstd", "identity"):
            ours = get(url, path, encoding)
            assert ours.content == gradio.content, (path, encoding)  # httpx decodes: the same bytes
            for h in ("content-type", "etag", "last-modified"):
                assert ours.headers[h] == gradio.headers[h], (path, h)
        assert ours.headers.get("content-encoding") is None
    kept = _cache_of(url).assets.entries
    assert {("asset", p) for p in files} <= set(kept)  # kept: not Gradio's answer every time
    assert not any("passed" in k[1] for k in kept)


def test_a_frontend_file_may_be_reused_for_a_day_without_asking_again(url):
    """Gradio sends its files with no Cache-Control, so a browser opening the page again asked for all ~90
    again; the kept answer lets it keep them a day (the files are named by their content)."""
    for path in _frontend_files(url):
        assert "cache-control" not in get(url, path + "?passed").headers  # Gradio's own answer
        for encoding in ("identity", "br"):
            assert get(url, path, encoding).headers["cache-control"] == "public, max-age=86400", (path, encoding)
    assert "cache-control" not in get(url, "/").headers  # the page itself is asked for each time


def test_a_part_of_a_file_or_another_spelling_of_its_path_is_asked_of_gradio(url):
    path = _frontend_files(url)[0]
    whole = get(url, path).content
    part = get(url, path, Range="bytes=0-9")
    assert part.content == get(url, path + "?p", Range="bytes=0-9").content
    assert part.status_code in (200, 206) and part.content == whole[:len(part.content)]
    assert get(url, "/assets/no-such-file.js").status_code == 404
    name = path.removeprefix("/assets/")
    for spelling in (f"/assets/./{name}", f"/assets/x/../{name}"):  # Gradio reads both as the file
        assert get(url, spelling).content == whole
    kept = _cache_of(url).assets.entries
    assert not any(k[1].endswith(name) and k[1] != path for k in kept)  # one key a file, not one a spelling


class Cut(Inner):
    """A file sent in two parts that stops after the first (a client gone: Starlette's FileResponse
    returns without an error), or whose one part is shorter than its Content-Length."""

    def __init__(self, parts: bool) -> None:
        super().__init__(headers=[(b"content-type", b"text/javascript")])
        self.parts = parts

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        self.calls += 1
        await send({"type": "http.response.start", "status": 200,
                    "headers": [*self.headers, (b"content-length", b"100")]})
        await send({"type": "http.response.body", "body": b"x" * 10, "more_body": self.parts})


@pytest.mark.parametrize("parts", [True, False])
def test_a_cut_file_is_never_kept(parts):
    inner = Cut(parts)
    cache = config_cache.ConfigCache(inner)
    for n in (1, 2):
        start, body = call(cache, inner, "/assets/a.js")
        assert body == b"x" * 10 and inner.calls == n  # sent as it came, asked for again next time
    assert not cache.assets.entries


def test_frontend_files_are_read_once_and_kept_within_their_bytes():
    inner = Inner(headers=[(b"content-type", b"text/javascript")], auth=[("u", "p")])  # served without a login
    size = config_cache.Entry([], b"answer 1 for h").size
    cache = config_cache.ConfigCache(inner, max_asset_bytes=3 * size)
    assert [call(cache, inner, "/assets/a.js")[1] for _ in range(3)] == [b"answer 1 for h"] * 3 and inner.calls == 1
    _, br = call(cache, inner, "/assets/a.js", encoding=b"br")
    assert brotli.decompress(br) == b"answer 1 for h" and inner.calls == 1
    for name in "bcd":  # three more: the least recently sent (a) goes
        call(cache, inner, f"/assets/{name}.js")
    assert len(cache.assets.entries) == 3 and inner.calls == 4 and cache.assets.bytes == 3 * size
    assert call(cache, inner, "/assets/a.js")[1] == b"answer 5 for h"  # read again
    for kw in ({"query": b"v=2"}, {"method": "HEAD"}, {"headers": ((b"Range", b"bytes=0-3"),)},
               {"headers": ((b"if-none-match", b'"x"'),)}, {"headers": ((b"if-modified-since", b"Mon"),)}):
        before = inner.calls
        call(cache, inner, "/assets/a.js", **kw)
        assert inner.calls == before + 1, kw  # Gradio's answer, not the kept one
    for spelling in ("/assets/./a.js", "/assets/x/../a.js", "/assets//a.js", "/assets/.a.js", "/assets/"):
        before = inner.calls
        call(cache, inner, spelling)
        assert inner.calls == before + 1 and ("asset", spelling) not in cache.assets.entries, spelling
    missing = Inner(status=404)
    cache = config_cache.ConfigCache(missing)
    assert [call(cache, missing, "/assets/x.js")[0]["status"] for _ in range(2)] == [404, 404] and missing.calls == 2
    assert not cache.assets.entries


def test_many_small_files_are_bounded_by_count_and_dropped_one_at_a_time():
    store = config_cache.Store(config_cache.MAX_ASSET_ENTRIES, 1 << 30)
    small = config_cache.Entry([], b"")
    for i in range(3 * config_cache.MAX_ASSET_ENTRIES):
        store.put(("asset", f"/assets/{i}.js"), small)
    assert len(store.entries) == config_cache.MAX_ASSET_ENTRIES and store.bytes == len(store.entries) * small.size
    big = config_cache.Entry([], b"x" * (1 << 20))
    store = config_cache.Store(10 ** 6, big.size)
    for i in range(100):
        store.put(("asset", f"/assets/{i}.js"), small)
    store.put(("asset", "/assets/big.js"), big)  # pushes out every small one, each once
    assert list(store.entries) == [("asset", "/assets/big.js")] and store.bytes == big.size
