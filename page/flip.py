"""A view's Flipbook (vizvit/views/flip.py) in the page: one hidden component per book, whose
script (page/web/flipbook.js) swaps the server's pictures (and charts) in as the controls move.

Each picture is saved exactly as its gr.Image saves an output (the same encoder, format and
content-hash path in Gradio's cache), so a page's URL is the very URL the server's own answer
for that position brings: the answer then changes nothing on screen.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import gradio as gr
import numpy as np
import plotly.io
from fastapi import Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from vizvit.errors import UserError
from vizvit.session import Photo, PhotoKey, Workbench
from vizvit.views.flip import Chart, Flipbook, Marks, set_key

from . import web
from .kit import safe, skip

log = logging.getLogger("vizvit.flip")


def component(name: str) -> gr.HTML:
    """The hidden carrier of the book `name` (its value: for_page's JSON)."""
    return gr.HTML(None, html_template="<span></span>", js_on_load=web.on_load(web.HAND_ON, web.FLIPBOOK),
                   visible="hidden", elem_id=f"flip-{name}", apply_default_css=False)


def _page_value(target: gr.components.Component, value: np.ndarray | Chart) -> Any:
    """A picture: its path in Gradio's cache; a chart: the figure as gr.Plot sends it (plotly's own
    JSON), or the restyle in plotly's JSON encoding (numpy arrays as its figures carry them)."""
    if not isinstance(value, Chart):
        return target.postprocess(value).path
    if value.figure is not None:
        return {"figure": value.figure.to_json(), "show_label": target.show_label}
    return {"restyle": json.loads(plotly.io.json.to_json_plotly(dict(value.restyle))), "trace": value.trace}


def for_page(name: str, book: Flipbook, targets: dict[str, gr.components.Component],
             controls: dict[str, gr.components.Component], fetch: str | None = None) -> str:
    """The book as the page script reads it: the controls' and targets' elem ids (from the page's
    field -> component maps) and each picture's path in Gradio's cache. fetch: the URL (from the
    app's root) the page asks for a page it does not hold (Fetcher)."""
    missing = ([c for c in book.controls if c not in controls] + [t for t in book.targets if t not in targets]
               + [r for r in [book.rows, *((book.toggle.target, book.toggle.box) if book.toggle else ())]
                  if r is not None and r not in {**targets, **controls}])
    if missing:
        raise KeyError(f"flipbook {name!r}: no component for {missing}")
    pages = {key: {targets[t].elem_id: _page_value(targets[t], pic) for t, pic in page.items()}
             for key, page in book.pages.items()}
    every = {**targets, **controls}
    rows = None if book.rows is None else every[book.rows].elem_id
    tg = book.toggle
    toggle = None if tg is None else {
        "target": every[tg.target].elem_id, "cell": tg.cell, "cells": list(tg.cells),
        "state": None if tg.state is None else set_key(tg.state),
        "box": None if tg.box is None else every[tg.box].elem_id, "prefix": tg.prefix}
    return json.dumps({"name": name, "look": book.look, "merge": book.merge, "rows": rows, "toggle": toggle,
                       "controls": [controls[c].elem_id for c in book.controls], "pages": pages, "fetch": fetch})


FETCH_PATH = "vizvit/flip"  # GET FETCH_PATH/<book name>?t=<photo token>&key=<page key>


class Fetcher:
    """A book whose missing pages the page asks for over plain HTTP (GET FETCH_PATH/<name>), not
    through a Gradio event: a new shift or mask (one forward) is then drawn about one forward after
    the move. Gradio's handling of one event on this page costs the browser 250-450 ms (issue 27),
    more than the forward of a small model. The event still goes to Gradio once the page has
    drawn, for the texts and charts; its answer brings the same pictures, now from the cache.

    build(photo, key) -> a Flipbook holding the page for `key` (the view decides and checks the
    key: any caller's text). The photo is named by a token this class hands out (`value`), so a
    caller can ask only for photos this server has shown a page. At most one answer per token is
    computed at a time (the page waits for one before it asks again); another is refused (429).
    At most `at_once` pages are computed at once over all photos: each waits in a server thread for
    its forward, and a lecture hall's worth of them must not hold every thread the app has; a page
    refused so is still drawn, by Gradio's queued event that follows."""

    def __init__(self, name: str, wb: Workbench, build: Callable[[Photo, str], Flipbook],
                 targets: dict[str, gr.components.Component], controls: dict[str, gr.components.Component],
                 size: int = 4096, at_once: int = 4):
        self.name, self.wb, self.build, self.targets, self.controls = name, wb, build, targets, controls
        self.size = size
        self._slots = threading.BoundedSemaphore(at_once)
        self._lock = threading.Lock()
        self._keys: OrderedDict[str, PhotoKey] = OrderedDict()  # token -> photo, least recent first
        self._tokens: dict[PhotoKey, str] = {}
        self._busy: set[str] = set()

    @property
    def path(self) -> str:
        return f"{FETCH_PATH}/{self.name}"

    def token(self, key: PhotoKey) -> str:
        """The photo's token (the same one while it is remembered; the oldest are forgotten)."""
        with self._lock:
            t = self._tokens.get(key)
            if t is None:
                t = self._tokens[key] = secrets.token_urlsafe(12)
                self._keys[t] = key
                while len(self._keys) > self.size:
                    self._tokens.pop(self._keys.popitem(last=False)[1], None)
            self._keys.move_to_end(t)
            return t

    def value(self, book: Flipbook, key: PhotoKey) -> str:
        """The book's value for its hidden component, with the URL its missing pages come from."""
        return for_page(self.name, book, self.targets, self.controls, fetch=f"{self.path}?t={self.token(key)}")

    def answer(self, token: str, page_key: str) -> tuple[int, str]:
        """(HTTP status, JSON): the book with the page for page_key (200), or {"error": ...}: 404
        an unknown token, 409 the view refused the key (its message), 429 one is being computed."""
        with self._lock:
            key = self._keys.get(token)
            if key is None:
                return 404, json.dumps({"error": "This page is out of date: reload it."})
            if token in self._busy:
                return 429, json.dumps({"error": "One page at a time."})
            if not self._slots.acquire(blocking=False):
                return 429, json.dumps({"error": "The server is busy: the page's own event will draw this view."})
            self._busy.add(token)
        try:
            return 200, for_page(self.name, self.build(self.wb.handle(key), page_key), self.targets, self.controls)
        except UserError as e:
            return 409, json.dumps({"error": str(e)})
        finally:
            with self._lock:
                self._busy.discard(token)
                self._slots.release()

    def route(self) -> APIRoute:
        async def fetch(request: Request) -> Response:
            q = request.query_params
            try:
                status, body = await run_in_threadpool(self.answer, q.get("t", ""), q.get("key", ""))
            except Exception:
                log.exception("flipbook %s: page %r failed", self.name, q.get("key"))
                return JSONResponse({"error": "Something went wrong with this view."}, status_code=500)
            return Response(body, status_code=status, media_type="application/json",
                            headers={"Cache-Control": "no-store"})

        return APIRoute("/" + self.path, fetch, methods=["GET"])


def marks_for_page(name: str, marks: Marks, target: gr.Image) -> str:
    """Marks as the page script reads them: the target's elem id, the two pictures' paths (saved as
    the target saves its outputs: a PNG target keeps the mark's clear pixels clear)."""
    return json.dumps({"name": name, "kind": "marks", "look": marks.look, "target": target.elem_id,
                       "base": target.postprocess(marks.base).path, "mark": target.postprocess(marks.mark).path,
                       "offset": list(marks.offset), "step": list(marks.step), "cells": list(marks.cells),
                       "at": list(marks.at) if marks.at else None})


def _book_held(held: Any) -> dict | None:
    """The book a page's box holds (its JSON text), or None: none, or a value no page sends (any text
    or type a caller writes to the hidden box: json.loads failing on it was "Something went wrong")."""
    if not isinstance(held, str) or not held:
        return None
    try:
        book = json.loads(held)
    except (ValueError, RecursionError):  # RecursionError: "[[[[…" nested past the parser's depth
        return None
    return book if isinstance(book, dict) else None


def filled_later(book: gr.HTML, fill: Callable[..., dict], inputs: list, outputs: list,
                 after: str | None = None) -> None:
    """A book that comes with no pages (a new look: its first answer stays fast) is filled by
    fill(*inputs) -> {output: value} once, after the pictures under CSS `after` are painted."""
    @safe
    def run(held: str | None, *values: Any) -> dict:
        book = _book_held(held)
        if book is None or book.get("pages"):
            return skip(outputs)  # filled already (this very answer), or no book
        return fill(*values)

    book.change(run, [book, *inputs], outputs, show_progress="hidden", js=web.after_paint(after) if after else None)
