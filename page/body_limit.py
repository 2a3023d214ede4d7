"""Request bodies bounded before anything reads them.

Starlette reads a whole body into memory before a route parses it, and nothing bounded its size: one
400 MB JSON body POSTed to a room's /hello raised the server's RSS from 1.1 to 2.6 GB (1.9 GB after),
three 300 MB bodies at once to 3.5 GB, and 400 MB to /gradio_api/call/room_answer to 3.0 GB (an audit).
The room's routes also parsed theirs on the event loop, every other page waiting.

BodyLimit, an ASGI middleware ahead of every route (app.launch_kwargs lists it first), refuses a body over
its route's limit with HTTP 413 and a sentence: by its Content-Length at once, unread; a body without one
(chunked) is read here up to the limit, refused as soon as it passes it, else handed on whole. A request
to any other route passes through untouched: Gradio bounds its uploads itself (launch's max_file_size),
and the camera's frames have their own limit (vizvit.service.camera.MAX_FRAME_BYTES).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass(frozen=True)
class Limit:
    prefix: str  # the routes' path begins so
    max_bytes: int
    key: str  # the JSON field the refusal's sentence goes in: the one those routes' callers read


# A room's largest body is a lecturer's {"host_key", "network", "trust"} or a student's {"student", "step",
# "answer"}: under 300 bytes (an id is at most 64 characters, an answer 24, even each written \uXXXX).
ROOM_BYTES = 4 << 10
# Gradio's JSON routes: an event's inputs, a public call's arguments (photos come through /upload). The
# page's largest, measured in Chromium, is its charts' save button sending the Embeddings scatter back
# with a thumbnail per patch: 210 KB on a 196-patch model; by the same ~1.1 KB a point, ~0.6 MB at 576
# patches (384 px, patch 16), ~1.5 MB for a 1,369-patch checkpoint of one's own. A body costs the server
# about 4x its size as it is parsed (the audit's 400 MB: +1.5 GB), so 4 MB costs ~16 MB at most.
GRADIO_BYTES = 4 << 20
GRADIO_JSON = ("/gradio_api/queue/join", "/gradio_api/call/", "/gradio_api/run/", "/gradio_api/api/",
               "/gradio_api/stream/", "/gradio_api/cancel", "/gradio_api/reset")
LIMITS: tuple[Limit, ...] = (Limit("/vizvit_room/", ROOM_BYTES, "error"),
                             *(Limit(p, GRADIO_BYTES, "detail") for p in GRADIO_JSON))  # "detail": FastAPI's


def limit_of(path: str, limits: tuple[Limit, ...] = LIMITS) -> Limit | None:
    """The limit on bodies sent to `path` (the route's path, without the app's root), or None: unbounded here."""
    return next((lim for lim in limits if path.startswith(lim.prefix)), None)


def size_text(n: int) -> str:
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB"


def too_big(limit: Limit) -> str:
    return f"This request is too big: its body must be at most {size_text(limit.max_bytes)}."


def declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The Content-Length, or None when there is none (or it is no number: the server refuses that itself)."""
    for name, value in headers:
        if name.lower() == b"content-length":
            return int(value) if value.strip().isdigit() else None
    return None


def _chunked(headers: list[tuple[bytes, bytes]]) -> bool:
    # HTTP/1.1 (RFC 9112 6.3): without a Content-Length, a request has a body only by its Transfer-Encoding
    return any(name.lower() == b"transfer-encoding" for name, _ in headers)


def route_path(scope: Scope) -> str:
    """The request's path without the root the app is served under (ASGI's path includes root_path)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


async def refuse(send: Send, limit: Limit) -> None:
    body = json.dumps({limit.key: too_big(limit)}).encode()
    # the rest of the body is never read: the server closes the connection after this answer
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    def __init__(self, app: ASGIApp, limits: tuple[Limit, ...] = LIMITS) -> None:
        self.app, self.limits = app, limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = limit_of(route_path(scope), self.limits) if scope["type"] == "http" else None
        if limit is None:
            return await self.app(scope, receive, send)
        headers = scope.get("headers") or []
        length = declared_length(headers)
        if length is not None and length > limit.max_bytes:
            return await refuse(send, limit)
        if length is not None or not _chunked(headers):
            return await self.app(scope, receive, send)  # the server hands on no more than Content-Length
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client left mid-body: nobody to answer
            body += message.get("body", b"")
            if len(body) > limit.max_bytes:
                return await refuse(send, limit)
            if not message.get("more_body", False):
                break
        whole: list[Message] = [{"type": "http.request", "body": bytes(body), "more_body": False}]

        async def replay() -> Message:
            return whole.pop() if whole else await receive()  # then the server's own (a disconnect)

        await self.app(scope, replay, send)
