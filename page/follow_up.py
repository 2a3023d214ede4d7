"""A tab's follow-up never lands over a newer answer (review of issue 52: the follow-up's race).

A tab's follow-up (kit.Ctx.on_show's `then`, and the open tab's after a new photo) draws its slow
part, the charts, once the tab's pictures are painted and the person pauses. It reads the controls as
they are when it is sent. A control moved just after that has its own event, which answers the same
chart for the new value; when that event ends first (the follow-up is the slower one, and runs in
another concurrency group), the follow-up's chart for the old value landed last: the Experiments
tab's top-5 for dx = 0 beside the picture for dx = 1.

So, per session, each output a follow-up writes keeps when the newest event that wrote it (a value,
not gr.skip() or an update without one) joined Gradio's queue: the order the page sent them in, not
the order they started (each event waits in its own concurrency group, and Gradio picks among the
groups at random: under a hall's load a follow-up can start after a move sent later). A follow-up
that ends after such a write by an event sent after it leaves that output alone: the newer event
has shown it already, for the controls the page shows now. An event sent after the follow-up that
has not yet answered lands after it anyway. Left open: a newer answer sent in the few milliseconds
between the follow-up's check and Gradio's sending of its answer.

Outputs named `exempt` are not guarded: the Embeddings tab's token book, whose follow-up copy
carries the picture its clicks are drawn on and a depth move's copy does not (page/tabs/embeddings.py).

Applied once the page is built (page/shell.py: build_demo), to the handlers Gradio holds: each event
writing a follow-up's output is wrapped to record its writes, each follow-up to drop stale outputs.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

import gradio as gr
from gradio.blocks import Block, convert_component_dict_to_list
from gradio.context import LocalContext

from .sessions import current_session

KEEP = 10_000  # sessions remembered (least recently written dropped first)


def sent_at() -> float:
    """When the running event joined Gradio's queue (time.monotonic(), as Gradio stamps it); now
    where it did not come through the queue (a direct call)."""
    blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    queue = getattr(blocks, "_queue", None)
    event = queue.event_ids_to_events.get(event_id) if queue is not None and event_id else None
    return event.enqueue_time if event is not None else time.monotonic()


def writes(value: Any) -> bool:
    """Whether an answer's value for an output sets it: gr.skip() and an update without a value don't."""
    return not (isinstance(value, dict) and value.get("__type__") == "update" and "value" not in value)


def _keyed(result: Any) -> bool:
    """Whether an answer is Gradio's dict keyed by component (as Gradio reads one: not empty)."""
    return isinstance(result, dict) and bool(result) and all(isinstance(k, Block) for k in result)


def _values(result: Any, outputs: list) -> list[Any]:
    """An answer as one value per output, in `outputs` order (Gradio's three forms: a dict keyed by
    component, a list or tuple, or the one output's value); a component the dict leaves out: skipped."""
    if _keyed(result):
        return convert_component_dict_to_list(outputs, result)  # type: ignore[return-value]
    if len(outputs) == 1:
        return [result]
    return list(result) if isinstance(result, (list, tuple)) else [result] * len(outputs)


def _without(result: Any, outputs: list, stale: set[int]) -> Any:
    """The answer with gr.skip() for the outputs at positions `stale`, in the answer's own form."""
    if _keyed(result):
        return {o: (gr.skip() if i in stale else result[o]) for i, o in enumerate(outputs) if o in result}
    if len(outputs) == 1:
        return gr.skip()
    return [gr.skip() if i in stale else v for i, v in enumerate(_values(result, outputs))]


class Writes:
    """Per session: for each watched output (a component id), when the newest event that wrote it was
    sent (sent_at)."""

    def __init__(self, keep: int = KEEP) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._at: OrderedDict[str, dict[int, float]] = OrderedDict()

    def wrote(self, session: str | None, started: float, ids: Iterable[int]) -> None:
        """The event sent at `started` set these outputs."""
        if session is None:
            return
        with self._lock:
            at = self._at.setdefault(session, {})
            self._at.move_to_end(session)
            for i in ids:
                at[i] = max(at.get(i, 0), started)
            while len(self._at) > self.keep:
                self._at.popitem(last=False)

    def newer(self, session: str | None, started: float, ids: Iterable[int]) -> set[int]:
        """Of `ids`, those set by an event sent after `started`."""
        if session is None:
            return set()
        with self._lock:
            at = self._at.get(session, {})
            return {i for i in ids if at.get(i, 0) > started}


def _wrap(fn: Callable, after: Callable[[float, Any], Any], role: str) -> Callable:
    """fn with after(when it was sent, answer) -> answer applied to each answer (a generator's each
    yield). Gradio reads the signature (through __wrapped__) and whether fn is a generator. `role`
    ("follow-up" or "writer") stays on the wrapper as vizvit_role (the tests read it)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args: Any, **kwargs: Any) -> Any:
            started = sent_at()
            for res in fn(*args, **kwargs):
                yield after(started, res)

        wrapped = stream
    else:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            started = sent_at()
            return after(started, fn(*args, **kwargs))

        wrapped = call
    wrapped.vizvit_role = role  # type: ignore[attr-defined]
    return wrapped


BOOK = Writes()


def guard(demo: gr.Blocks, follow_ups: list[int], exempt: Iterable[Block] = ()) -> int:
    """Wrap `demo`'s handlers: each follow-up (by event id) drops outputs a newer event has written,
    and each other event writing one of their outputs records its writes; outputs in `exempt` are
    neither. Returns how many handlers it wrapped. An async handler among the writers is refused."""
    fns = demo.fns
    free = {b._id for b in exempt}
    watched = {o._id for i in follow_ups for o in fns[i].outputs} - free
    wrapped = 0
    for i, block_fn in fns.items():
        if block_fn.fn is None or not any(o._id in watched for o in block_fn.outputs):
            continue
        if inspect.iscoroutinefunction(block_fn.fn) or inspect.isasyncgenfunction(block_fn.fn):
            raise TypeError(f"event {i} ({block_fn.name}) writes a follow-up's output from an async handler")
        outs = list(block_fn.outputs)
        block_fn.fn = (_wrap(block_fn.fn, _follow_up(outs, watched), "follow-up") if i in follow_ups
                       else _wrap(block_fn.fn, _writer(outs, watched), "writer"))
        wrapped += 1
    return wrapped


def _record(session: str | None, started: float, outputs: list, res: Any, watched: set[int]) -> Any:
    """Note the watched outputs that answer `res` (of an event sent at `started`) sets; returns `res`."""
    BOOK.wrote(session, started, (o._id for o, v in zip(outputs, _values(res, outputs))
                                  if o._id in watched and writes(v)))
    return res


def _writer(outputs: list, watched: set[int]) -> Callable[[float, Any], Any]:
    return lambda started, res: _record(current_session(), started, outputs, res, watched)


def _follow_up(outputs: list, watched: set[int]) -> Callable[[float, Any], Any]:
    def after(started: float, res: Any) -> Any:
        session = current_session()
        newer = BOOK.newer(session, started, (o._id for o in outputs if o._id in watched))
        if newer:
            res = _without(res, outputs, {k for k, o in enumerate(outputs) if o._id in newer})
        return _record(session, started, outputs, res, watched)

    return after
