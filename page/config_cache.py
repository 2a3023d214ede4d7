"""The page's HTML and /config built once, and sent compressed (issue 52: server CPU a student, page load).

Gradio 6.31 builds the page's config again for every GET / (the HTML embeds it) and GET /config
(gradio_client reads it as it connects): a deep copy of the whole config, then a walk over it to put
the server's root URL into every file URL. On this page (~500 KB of config) that cost the server
40-72 ms of CPU a request, as much as all of a student's calls in the lecture-hall benchmark. And it
went out uncompressed: Gradio's Brotli middleware compresses only paths with a file extension.

Both answers are the same for every visitor: they depend only on the config, the request's root URL
(route_utils.get_root_url: the URL's scheme, host and root path, and the X-Forwarded-Host,
X-Forwarded-Proto and X-Gradio-Server headers) and Gradio's query parameters `page`, `deep_link` and
`all_endpoints` (vizvit's own link parameters, ?photo= and the rest, are read by the page itself).
ConfigCache, an ASGI middleware, keeps Gradio's answer under the root's parts and sends it again,
compressed with Brotli or gzip when the client takes it. A request with one of Gradio's parameters, an
app with a login, or an answer that is not a plain 200 passes through as before. Each caller's root is
its own: a header that moves the root is part of the key, so it never reaches another caller's page.
Headers Gradio does not read (X-Forwarded-For, which nginx sets per client) are not: a hall behind one
proxy shares one entry. At most MAX_ENTRIES answers are kept (a caller inventing hosts only pushes out
older ones, which are built again as they were before).

Gradio's frontend files (GET /assets/<file>: the page's ~90 scripts and styles, the patched core chunk
among them) are the same for every caller too, whatever its root. Gradio served each from disk and
Brotli-compressed it again for every request: 118 ms of server CPU for one page load's set, three
quarters of what a student's page load cost the server (issue 52; a hall of 40 opening the link is
40 such loads). They are kept the same way, compressed once, within MAX_ASSET_BYTES, and sent with a
day's Cache-Control (ASSET_CACHE_CONTROL) so a browser opening the page again does not ask again. A request that
asks for part of a file or only for a change (Range, If-None-Match, If-Modified-Since, ...), a query,
or an answer that is not a plain 200 (a file that is not there) passes through to Gradio as before.
"""

from __future__ import annotations

import asyncio
import gzip
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import brotli

PATHS = ("/", "/config")
MAX_ENTRIES = 8
# What Gradio reads of a request for these answers besides the URL (route_utils.get_request_origin,
# routes.main / get_config / get_api_info): the headers that move the root, the query's own parameters.
ROOT_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-gradio-server")
GRADIO_PARAMS = ("page", "deep_link", "all_endpoints")
BROTLI_QUALITY = 5  # 534 KB of HTML -> ~55 KB in ~15 ms, once per entry
GZIP_LEVEL = 6
# A frontend file's path as the page asks for it (Vite's chunk names): one name, no other spelling of
# it (Gradio reads /assets/./a.js and /assets/x/../a.js as a.js; each would be a key of its own).
ASSET = re.compile(r"/assets/[\w-][\w.-]*")
# Kept frontend files, as Entry.size counts them (one page load's set: ~1 MB raw, ~2 MB counted; Gradio's
# whole frontend folder, all a caller could ask for, 21 MB raw, Plotly's chunk 4.6 MB of it): least
# recently sent dropped beyond either bound.
MAX_ASSET_BYTES = 48 << 20
MAX_ASSET_ENTRIES = 1024  # the folder holds 919 files
# How long a browser may reuse a kept frontend file without asking again: Gradio sends them with no
# Cache-Control, so a page opened again (a reload, a second tab, the next exercise's link) asked for all
# ~90 again, each a conditional request Gradio answered from disk. Vite names each file by its content,
# and the patched core chunk's text changes only with vizvit's own code; a day covers a lecture.
ASSET_CACHE_CONTROL = b"public, max-age=86400"
# Request headers that ask for part of a file or only for a change: Gradio answers those itself.
PARTIAL = (b"range", b"if-range", b"if-match", b"if-none-match", b"if-modified-since", b"if-unmodified-since")


@dataclass
class Entry:
    """One kept answer (a 200): its headers (without length and encoding) and body, and its
    compressed bodies as they are first asked for."""

    headers: list[tuple[bytes, bytes]]
    body: bytes
    encoded: dict[str, bytes] = field(default_factory=dict)

    def body_for(self, encoding: str) -> bytes:
        if encoding not in self.encoded:
            self.encoded[encoding] = (brotli.compress(self.body, quality=BROTLI_QUALITY) if encoding == "br"
                                      else gzip.compress(self.body, GZIP_LEVEL, mtime=0))
        return self.encoded[encoding]

    @property
    def size(self) -> int:
        """The bytes it may come to hold: its body and its compressed copies (Brotli's and gzip's of text
        together under the body's size; a file already compressed, a few bytes more), and its key."""
        return 2 * len(self.body) + 256


def key_of(scope: dict, config: Any) -> tuple | None:
    """What Gradio's answer depends on; None when it must not be kept (not a plain GET of PATHS, a
    Gradio page or deep link asked for)."""
    if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] not in PATHS:
        return None
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    if any(p in query for p in GRADIO_PARAMS):
        return None
    root = tuple((k, v) for k, v in scope.get("headers", ()) if k in ROOT_HEADERS)
    return (id(config), scope["path"], scope.get("scheme"), scope.get("server"), scope.get("root_path", ""), root)


def asset_key(scope: dict) -> tuple | None:
    """A frontend file's key (its path: the same file for every root); None when it must pass through
    (not a plain GET of a path ASSET spells, a query, a partial or conditional request)."""
    if scope["type"] != "http" or scope["method"] != "GET" or not ASSET.fullmatch(scope["path"]):
        return None
    if scope.get("query_string") or any(k.lower() in PARTIAL for k, _ in scope.get("headers", ())):
        return None
    return ("asset", scope["path"])


def encoding_for(scope: dict) -> str:
    """The encoding to send: br, gzip, or "" (none), from the request's Accept-Encoding (one refused
    with q=0 is not taken)."""
    accept = b",".join(v for k, v in scope.get("headers", ()) if k == b"accept-encoding").decode("latin-1")
    taken = set()
    for part in accept.split(","):
        name, *params = (p.strip().lower() for p in part.split(";"))
        q = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            if float(q) > 0:
                taken.add(name)
        except ValueError:
            continue
    return "br" if "br" in taken else "gzip" if "gzip" in taken else ""


class Store:
    """Kept answers; the least recently sent dropped first beyond max_entries or max_bytes (Entry.size)."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.entries: OrderedDict[tuple, Entry] = OrderedDict()
        self.bytes = 0  # the kept entries' sizes

    def get(self, key: tuple) -> Entry | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        return entry

    def put(self, key: tuple, entry: Entry) -> None:
        if entry.size > self.max_bytes or key in self.entries:
            return
        self.entries[key] = entry
        self.bytes += entry.size
        while len(self.entries) > self.max_entries or self.bytes > self.max_bytes:
            self.bytes -= self.entries.popitem(last=False)[1].size


class ConfigCache:
    """ASGI middleware: GET / and GET /config, and Gradio's frontend files, answered from kept answers
    (see the module's note)."""

    def __init__(self, app: Any, max_asset_bytes: int = MAX_ASSET_BYTES) -> None:
        self.app = app
        self.pages = Store(MAX_ENTRIES, 1 << 62)
        self.assets = Store(MAX_ASSET_ENTRIES, max_asset_bytes)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        key, store = asset_key(scope), self.assets
        if key is None:  # the HTML or /config, for an app without a login
            gradio_app = scope.get("app")
            blocks = gradio_app.get_blocks() if gradio_app is not None and hasattr(gradio_app, "get_blocks") else None
            login = (blocks is None or blocks.auth is not None
                     or getattr(gradio_app, "auth_dependency", None) is not None)
            key, store = None if login else key_of(scope, blocks.config), self.pages
        if key is None:
            await self.app(scope, receive, send)
            return
        entry = store.get(key)
        if entry is None:
            entry = await self._build(scope, receive, send)
            if entry is None:  # not kept: already sent as Gradio made it
                return
            if store is self.assets and not any(k.lower() == b"cache-control" for k, _ in entry.headers):
                entry.headers.append((b"cache-control", ASSET_CACHE_CONTROL))
            store.put(key, entry)
        await self._send(entry, encoding_for(scope), send)

    async def _build(self, scope: dict, receive: Any, send: Any) -> Entry | None:
        """Gradio's answer, kept when it is a whole 200 without cookies; otherwise sent through as it
        comes (None). Whole: its last body message said so and it is as long as it said. (Starlette's
        FileResponse stops mid-file, without an error, when the client goes: a caller who hangs up
        would otherwise leave every later caller a cut file.)"""
        start: dict | None = None
        chunks: list[bytes] = []
        passing = ended = False

        async def capture(message: dict) -> None:
            nonlocal start, passing, ended
            if passing:
                await send(message)
            elif message["type"] == "http.response.start":
                start = message
                names = {k.lower() for k, _ in message.get("headers", ())}
                if message["status"] != 200 or b"set-cookie" in names or b"content-encoding" in names:
                    passing = True
                    await send(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                ended = not message.get("more_body", False)

        await self.app(scope, receive, capture)
        if passing or start is None:
            return None
        body = b"".join(chunks)
        length = dict((k.lower(), v) for k, v in start.get("headers", ())).get(b"content-length")
        if not ended or (length is not None and length != str(len(body)).encode()):
            await send(start)  # as it came, to a client most likely gone
            await send({"type": "http.response.body", "body": body})
            return None
        headers = [(k, v) for k, v in start.get("headers", ()) if k.lower() not in (b"content-length", b"vary")]
        return Entry(headers, body)

    @staticmethod
    async def _send(entry: Entry, encoding: str, send: Any) -> None:
        body = entry.body
        if encoding:  # an entry's first compression (~15 ms of Brotli for the HTML) off the event loop
            body = entry.encoded.get(encoding) or await asyncio.to_thread(entry.body_for, encoding)
        headers = [*entry.headers, (b"content-length", str(len(body)).encode()), (b"vary", b"Accept-Encoding")]
        if encoding:
            headers.append((b"content-encoding", encoding.encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
