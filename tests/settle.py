"""Wait until a page has had every answer it asked for, instead of a fixed sleep (issue 52: CI in 20
minutes; a sleep long enough under load is far too long on a quiet machine, and still a guess).

settled(page) returns once, for `quiet_ms` on end:
- no request of the page to its server is open: Gradio's queue (an event's join, and the session's
  stream of answers, which the server closes once no event of the session is pending), uploads,
  the pictures' files and the page's own routes (flipbooks, rooms); the heartbeat stays open for
  the page's whole life and is not counted;
- and no js= of an event is still waiting before it sends it (page/web/after_paint.js and
  after_quiet.js keep `data-vizvit-waiting` on <body>, the count of those waiting).
The quiet window covers the moment between an answer and the event chained after it (Gradio sends
it when the answer lands, and a slider's event held back while its last one ran).

One stream of answers may stay open with nothing pending (seen once in ~250 waits; probably a stream opened as
the last answer came on the one before; the server closes a stream only after an answer): a stream
open alone, STREAM_ALONE_S after the page last sent an event, counts as settled. That is never weaker
than the fixed sleeps this replaced (at most 6 s after the action).

browser.page_at watches each page from before it loads (watch): a request sent before the watch
began would not be seen."""

from __future__ import annotations

import re
import time
import weakref

_WATCHED = re.compile(r"/gradio_api/(queue/|upload|file=)|/vizvit")
_WAITING_JS = "() => Number(document.body.dataset.vizvitWaiting || 0)"
STREAM_ALONE_S = 6.0


class _Open:
    """The page's watched requests still open, kept from Playwright's request events."""

    def __init__(self, page) -> None:
        self.requests: set = set()
        self.last_join = 0.0  # time.monotonic() of the page's last event sent (a queue join)
        self.errors: list[str] = []  # the page's last console errors and failed requests (a failure's report)
        page.on("request", self._sent)
        page.on("console", lambda m: m.type == "error" and self._note(f"console: {m.text}"))
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)
        page.on("response", self._answered)

    def _sent(self, request) -> None:
        if _WATCHED.search(request.url):
            self.requests.add(request)
            if "/queue/join" in request.url:
                self.last_join = time.monotonic()

    def _ended(self, request) -> None:
        self.requests.discard(request)
        failure = request.failure
        if failure:
            self._note(f"failed: {request.url} ({failure})")

    def _answered(self, response) -> None:
        # A refused request named (the console says only "status of 422"), with the start of what it sent: which
        # event (fn_index) a refused join was for.
        if response.status >= 400:
            try:  # an upload's body is not text
                sent = (response.request.post_data or "")[:150]
            except (UnicodeDecodeError, ValueError):
                sent = "(not text)"
            self._note(f"HTTP {response.status}: {response.request.method} {response.url} {sent}")

    def _note(self, text: str) -> None:
        self.errors = [*self.errors[-9:], text[:300]]


def report(page) -> str:
    """What a timed-out wait should say: the page's open requests, last errors and status line."""
    watched = _open.get(page)
    status, tab = page.evaluate("() => [document.querySelector('#status')?.innerText.slice(0, 300) ?? null,"
                                " document.querySelector('[role=tab][aria-selected=true]')?.innerText ?? null]")
    if watched is None:
        return f"status: {status!r}; tab: {tab!r}"
    return (f"status: {status!r}; tab: {tab!r}; open: {sorted(r.url for r in watched.requests)}; "
            f"errors: {watched.errors}")


_open: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def watch(page) -> None:
    """Start watching `page`'s requests (page_at does, before the page loads)."""
    if page not in _open:
        _open[page] = _Open(page)


def settled(page, quiet_ms: int = 200, timeout_ms: int = 60_000) -> None:
    """Wait until every answer the page asked for is in (see the module's docstring)."""
    watch(page)
    watched = _open[page]
    requests = watched.requests
    start = time.monotonic()
    quiet_since = None
    while True:
        page.wait_for_timeout(25)  # a poll: Playwright hands over the page's request events meanwhile
        now = time.monotonic()
        streams_only = all("/queue/data" in r.url for r in requests)
        stale = streams_only and now - watched.last_join > STREAM_ALONE_S
        busy = (bool(requests) and not stale) or page.evaluate(_WAITING_JS) > 0
        quiet_since = None if busy else (quiet_since or now)
        if quiet_since is not None and now - quiet_since >= quiet_ms / 1000:
            return
        if now - start > timeout_ms / 1000:
            raise TimeoutError(f"the page still waits after {timeout_ms} ms: open {sorted(r.url for r in requests)}")
