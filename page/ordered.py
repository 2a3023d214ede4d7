"""Answers in the order the page sent their events (issue 27: stale answers never overwrite newer
ones).

A tab's view events each answer with the pictures and text for the controls they were sent with.
Two of them sent close together may reach the server in either order (each is its own request, and
Gradio holds a slider's event back while its last one runs, then sends it behind events made
since). And an answer may set controls (a grid click sets the layer and head): an event sent before
that answer landed carries the controls as they were, so its readout would name controls the page
no longer shows.

So each event of a line carries a stamp "page:n:acked", set in the page just before it is sent
(page/web/answer_order.js): n counts the events that page has sent, acked is the n of the last
answer it had taken in (every answer sets the line's hidden stamp box to its own stamp). The line's
events run one at a time (one concurrency id, limit 1), so they are answered in the order they reach
the server, and:
- an event whose n is lower than one already answered for its page is answered with gr.skip() for
  every output (State too: nothing moves);
- a control that an answer the event's page had not yet taken in has set (n_set > acked) is read
  as that answer set it, not as the event carried it: that answer lands first and shows it.
What lands last is then the answer to the last event sent, for the controls the page shows once
every answer is in (and the session's gr.State as the line left it).

How a tab uses it:

    order = AnswerOrder("mytab")                      # inside the Blocks (it makes a hidden box)
    ev(handler, [order.stamp, *inputs], [*outputs, order.stamp], **order.line())  # each view event

    def handler(stamp, key, *values):
        v = order.take(stamp, read(values))          # None: older than an answer already given
        if v is None:
            return kit.skip([*outputs, order.stamp])
        order.sets(stamp, layer=3)                   # only if this answer sets a control
        return {**answer_for(v), **order.answered(stamp)}
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from . import web

KEEP = 10_000  # pages remembered (least recently answered dropped first)


@dataclass
class _Page:
    newest: int = -1  # the n of the newest event answered
    set_by: dict[str, tuple[int, Any]] = field(default_factory=dict)  # control -> (n of the answer, value)


def _parse(stamp: str | None) -> tuple[str, int, int] | None:
    """"page:n:acked" -> (page, n, acked); None for no stamp (an API call, a script)."""
    parts = (stamp or "").split(":")
    if len(parts) != 3 or not parts[0] or not all(p.isdigit() for p in parts[1:]):
        return None
    return parts[0], int(parts[1]), int(parts[2])


class AnswerOrder:
    """One line of view events (one tab's): a hidden stamp box (input and output of each event), the
    js= that stamps each event, and the server's record per page."""

    def __init__(self, name: str, keep: int = KEEP) -> None:
        self.name = name
        self.stamp = gr.Textbox(visible="hidden", elem_id=f"{name}-stamp")
        self.keep = keep
        self._pages: OrderedDict[str, _Page] = OrderedDict()
        self._lock = threading.Lock()

    def line(self, **kwargs: Any) -> dict[str, Any]:
        """The event settings of the line: one at a time, in arrival order, each event stamped."""
        return dict(concurrency_id=f"{self.name}-view", concurrency_limit=1, js=web.asset("answer_order.js"),
                    **kwargs)

    def take(self, stamp: str | None, values: dict[str, Any]) -> dict[str, Any] | None:
        """The controls to answer the event stamped `stamp` for: `values` (as it carried them), with
        each control set by an answer its page had not taken in read as that answer set it. None: the
        event is older than one already answered (answer it with gr.skip()). No stamp: `values`."""
        parsed = _parse(stamp)
        if parsed is None:
            return dict(values)
        page, n, acked = parsed
        with self._lock:
            seen = self._pages.setdefault(page, _Page())
            self._pages.move_to_end(page)
            while len(self._pages) > self.keep:
                self._pages.popitem(last=False)
            if seen.newest > n:
                return None
            seen.newest = n
            return {**values, **{k: v for k, (at, v) in seen.set_by.items() if at > acked and k in values}}

    def fresh(self, stamp: str | None) -> bool:
        """take() for an event whose handler reads no controls here."""
        return self.take(stamp, {}) is not None

    def sets(self, stamp: str | None, **controls: Any) -> None:
        """Record that the answer to `stamp` sets these controls (by the names take() reads)."""
        parsed = _parse(stamp)
        if parsed is None:
            return
        page, n, _ = parsed
        with self._lock:
            self._pages.setdefault(page, _Page()).set_by.update({k: (n, v) for k, v in controls.items()})

    def answered(self, stamp: str | None) -> dict:
        """The stamp box's output: the page's next events then say they have taken this answer in."""
        return {self.stamp: stamp if _parse(stamp) else gr.skip()}
