"""Gradio's queue woken by its work instead of polling for it.

Gradio 6.31's Queue looks for work every 1 ms (start_processing: `sleep(0.001)` while the queue is
empty or every worker is busy) and for progress every 10 ms (start_progress_updates), whether or
not anything happens: an idle vizvit server spent 4.4 % of a core on it, and a hall of
students pays for the same ~1,100 wake-ups a second on top of its own work (issue 52: server CPU a
student). Here both loops sleep until what they wait for can have changed:
  - an event pushed, or a worker given back (a job's end, its concurrency slot with it): the loop
    that starts jobs looks again;
  - a job started: the progress loop runs at Gradio's own 10 ms cadence until no job is active.
A wake-up that is somehow missed costs at most MISSED_WAKE_S of a job's wait, never the job.

install() replaces Queue.start_processing and Queue.start_progress_updates with the same loops
(Gradio's code, with its sleeps replaced by waits); Queue.active_jobs becomes a list that wakes the
job loop when a worker is given back (_Slots), and Queue.push and Queue.process_events wake it when
they return (process_events also for a job run without a worker: routes.py's queue join).
Idempotent."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from typing import Any

from gradio.queueing import Queue
from gradio.utils import run_coro_in_background, set_task_name

MISSED_WAKE_S = 0.25  # the longest a job would wait if a wake-up were ever missed (the safety net's poll)
PROGRESS_EVERY_S = 0.01  # Gradio's own cadence for progress messages while a job runs


def _signal(queue: Any, name: str, new: bool = False) -> asyncio.Event:
    """The queue's asyncio.Event `name`, made on first use or when new (a loop starting: the queue of
    a Blocks launched again runs on another event loop, and an Event once waited on is bound to its
    loop)."""
    event = queue.__dict__.get(name)
    if event is None or new:
        event = queue.__dict__[name] = asyncio.Event()
    return event


async def sleep_until(event: asyncio.Event, most_s: float) -> None:
    """Until event is set (it is cleared by the caller before it looks at the state), at most most_s.
    (asyncio.timeout, not wait_for: on 3.11 wait_for returns normally when the event is set just
    before a cancellation, and the loop would outlive its server's shutdown.)"""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(most_s):
            await event.wait()


class _Slots(list):
    """Queue.active_jobs: a worker given back (None written in its place, by process_events' finally)
    wakes the job loop at once, not when process_events returns after its clean-up (iterators reset,
    analytics on a worker thread)."""

    def __init__(self, slots: list, queue: Queue) -> None:
        super().__init__(slots)
        self.queue = queue

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        if value is None:
            _signal(self.queue, "_vizvit_work").set()


async def start_processing(self: Queue) -> None:
    """Gradio's Queue.start_processing (6.31), its 1 ms polls replaced by a wait for work."""
    work = _signal(self, "_vizvit_work", new=True)
    self.active_jobs = _Slots(self.active_jobs, self)
    try:
        while not self.stopped:
            work.clear()  # before looking: a push or a finished job from here on wakes the wait below
            if len(self) == 0 or None not in self.active_jobs:
                await sleep_until(work, MISSED_WAKE_S)
                continue
            async with self.delete_lock:
                event_batch = self.get_events()
            if not event_batch:  # queued, but each event's concurrency group is full
                await sleep_until(work, MISSED_WAKE_S)
                continue
            _start(self, *event_batch)
    finally:
        self.stopped = True
        self._cancel_asyncio_tasks()


def _start(self: Queue, events: list, batch: bool, concurrency_id: str) -> None:
    """Start one batch of events on a free worker: Gradio's own steps, then the progress loop woken."""
    self.active_jobs[self.active_jobs.index(None)] = events
    event_queue = self.event_queue_per_concurrency_id[concurrency_id]
    event_queue.current_concurrency += 1
    start_time = time.time()
    fn = events[0].fn
    event_queue.start_times_per_fn[fn].add(start_time)
    for event in events:
        if (a := self.event_analytics.get(event._id)) is not None:
            a["status"] = "processing"
    task = run_coro_in_background(self.process_events, events, batch, start_time, fn)
    set_task_name(task, events[0].session_hash, fn._id, events[0]._id, batch)
    self._asyncio_tasks.add(task)
    task.add_done_callback(self._asyncio_tasks.discard)
    if self.live_updates:
        self.broadcast_estimations(concurrency_id)
    _signal(self, "_vizvit_jobs").set()


async def start_progress_updates(self: Queue) -> None:
    """Gradio's Queue.start_progress_updates (6.31): every 10 ms while a job is active, asleep otherwise."""
    jobs = _signal(self, "_vizvit_jobs", new=True)
    while not self.stopped:
        jobs.clear()
        events = [evt for job in self.active_jobs if job is not None for evt in job]
        if not events:
            await sleep_until(jobs, MISSED_WAKE_S)  # no job to report on: a started one wakes this
            continue
        for event in events:
            if event.progress_pending and event.progress:
                event.progress_pending = False
                self.send_message(event, event.progress)
        await asyncio.sleep(PROGRESS_EVERY_S)


def _waking(original: Any) -> Any:
    """An async Queue method that wakes the job loop when it returns (pushed; or finished, after
    _Slots woke it when the worker was given back)."""

    @functools.wraps(original)
    async def wrapper(self: Queue, *args: Any, **kwargs: Any) -> Any:
        try:
            return await original(self, *args, **kwargs)
        finally:
            _signal(self, "_vizvit_work").set()

    wrapper.vizvit_wakes = True  # type: ignore[attr-defined]
    return wrapper


def install() -> None:
    """Gradio's queue loops replaced with waking ones (idempotent)."""
    if getattr(Queue.push, "vizvit_wakes", False):
        return
    Queue.push = _waking(Queue.push)  # type: ignore[method-assign]
    Queue.process_events = _waking(Queue.process_events)  # type: ignore[method-assign]
    Queue.start_processing = start_processing  # type: ignore[method-assign]
    Queue.start_progress_updates = start_progress_updates  # type: ignore[method-assign]
