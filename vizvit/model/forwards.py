"""One forward worker for the whole process: every analysis the cache misses waits here, and the
requests that pile up while a forward runs go in ONE batched forward (engine.analyze_batch).

Why one worker: the model runs under one lock anyway (engine.Hooked), so a request that needs a
forward can only wait. Waiting here instead of in the page's event queue lets every answer that
needs no forward (a cached photo, a control, the API on a cached analysis) be served at once by
the page's other threads, and lets the waiting forwards share one pass over the weights.

Live camera frames (vizvit/service/camera.py) wait in a second lane that the worker serves only when no
other request waits: a photo uploaded during a camera session waits at most for the one camera
forward that runs, never behind a stream of frames. Frames batch only with frames.

Each lane is served in turns by caller (`caller`, set by the page: a request's address): the next
forward starts with the oldest request of the caller served longest ago, so one caller's pile of
forwards (forty ViT-L analyses) waits behind everyone else's turn, not in front of it (another
address's one ViT-Ti analysis waited 19–47 s). Requests from one caller (or with none) keep their order.

Plain Python (no gradio). Nothing here holds a photo after its forward.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import torch

from vizvit.model.engine import Analysis, Request, analyze_batch, batchable
from vizvit.model.models import VitModel

# Images per batched forward, measured here (2 CPU cores, attentions and hidden states kept): per
# image, a batch of 4 costs 0.86× a single ViT-B/16 forward and 0.68× a ViT-Ti/16 one, a batch of
# 8 0.83× and 0.62×. But every photo in a batch waits for the whole batch: in the hall benchmark
# (40 students in 10 s, ViT-B/16) batches of 8 gave an own-photo p95 of 6.7 s, batches of 4 5.1 s.
# A GPU gains far more per image; raise it there (Workbench(max_batch=...)).
MAX_BATCH = 4
MAX_CALLERS_KEPT = 4096  # callers whose last turn is remembered (then those with nothing waiting are dropped)


@dataclass(frozen=True)
class ForwardStats:
    """What the worker has done: forwards (batches) run, images analysed, the largest batch, and
    the requests waiting now."""

    forwards: int
    images: int
    largest_batch: int
    waiting: int
    image_s: float  # the last forward's seconds per image (0 before the first)


# eq=False: a job is itself, not its fields. deque.remove compared jobs with ==, and so their requests'
# images: two ready (H, W, 3) views compared as arrays, numpy raised, and the worker thread died.
@dataclass(eq=False)
class _Job:
    vm: VitModel
    request: Request
    future: Future
    caller: str | None = None  # who asked (ForwardQueue.caller): whose turn it takes


def _shares(a: _Job, b: _Job) -> bool:
    """Whether b can join a's forward. A request batchable cannot judge (a bad mask) runs alone,
    where its own error reaches its caller: the worker itself never raises."""
    try:
        return batchable(a.vm, a.request, b.request)
    except Exception:  # noqa: BLE001
        return False


def _set_own_threads(n: int) -> None:
    """This thread's intra-op count, for good: torch gives each thread the process-wide default on its
    first use (get_num_threads is one), which would undo a count set before it."""
    torch.get_num_threads()
    torch.set_num_threads(n)


class ForwardQueue:
    """Runs analyses one batch at a time on one daemon thread.

    run(vm, request) blocks its caller until the analysis is done. A batch takes the oldest
    waiting request and every other waiting one that can share its forward (same model, same
    heads off, same kept tokens), up to max_batch; wait_s: how long to wait for more after the
    first (0: none; requests that arrive while a forward runs are batched anyway)."""

    def __init__(self, max_batch: int = MAX_BATCH, wait_s: float = 0.0,
                 run_batch: Callable[[VitModel, Sequence[Request]], list[Analysis]] = analyze_batch):
        self.max_batch = max(1, int(max_batch))
        self.wait_s = float(wait_s)
        self._run_batch = run_batch
        self._jobs: deque[_Job] = deque()
        self._live: deque[_Job] = deque()  # camera frames: served when _jobs is empty
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._forwards = self._images = self._largest = 0
        self._image_s = 0.0
        self._running = 0  # images in the forward that runs now
        # The intra-op threads of each forward, asked before it runs (None: torch's setting). A count
        # other than the worker's own runs on a thread of its own, set once to that count: switching one
        # thread's count for each forward would also move torch's process-wide default, which every
        # thread started later (Gradio's workers, a job's) takes for good.
        self.threads: Callable[[], int] | None = None
        self._runners: dict[int, ThreadPoolExecutor] = {}
        # Who asks, read in the asking thread (the page: the Gradio event's address); None: one turn for all.
        self.caller: Callable[[], str | None] | None = None
        self._served: dict[str | None, int] = {}  # caller -> the turn it was last served at
        self._turn = 0

    # -- callers ---------------------------------------------------------------
    def run(self, vm: VitModel, request: Request, live: bool = False) -> Analysis:
        """The analysis of `request` under `vm`, from a (possibly shared) batched forward."""
        return self.submit(vm, request, live).result()

    def submit(self, vm: VitModel, request: Request, live: bool = False) -> Future:
        """live: a camera frame, run only when no other request waits (see the module's note)."""
        job = _Job(vm, request, Future(), self._who())
        with self._cond:
            (self._live if live else self._jobs).append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="vizvit-forwards", daemon=True)
                self._thread.start()
            self._cond.notify()
        return job.future

    def _who(self) -> str | None:
        try:
            return self.caller() if self.caller is not None else None
        except Exception:  # noqa: BLE001 - a caller's name is never worth a lost forward
            return None

    def waiting(self) -> int:
        """Requests waiting for a forward now (not counting the batch that runs; camera frames included)."""
        with self._cond:
            return len(self._jobs) + len(self._live)

    def ahead(self, image: object) -> int | None:
        """How many images the model will analyse before the first waiting request for `image`: the
        batch running now, and the waiting requests the callers' turns take before it (as _take would,
        if nothing new came); None when none waits (its forward runs, or it is done)."""
        with self._cond:
            lane = deque(self._jobs)
            served, n = dict(self._served), self._running
            while lane:
                job = self._next(lane, served)
                if job.request.image is image:
                    return n
                lane.remove(job)
                served[job.caller] = self._turn + n + 1  # later than every stamp given so far
                n += 1
            return None

    def stats(self) -> ForwardStats:
        with self._cond:
            return ForwardStats(self._forwards, self._images, self._largest,
                                len(self._jobs) + len(self._live), self._image_s)

    # -- the worker ------------------------------------------------------------
    def _take(self) -> list[_Job]:
        """The next batch: the job whose turn it is (_next) and the waiting jobs that can share its forward,
        by turns too (_fill); camera frames only when no other job waits, and only with other frames."""
        with self._cond:
            while not self._jobs and not self._live:
                self._cond.wait()
            lane = self._jobs if self._jobs else self._live
            first = self._next(lane)
            lane.remove(first)
            batch = [first]
            deadline = time.monotonic() + self.wait_s
            while len(batch) < self.max_batch:
                self._fill(batch, lane)
                left = deadline - time.monotonic()
                if len(batch) >= self.max_batch or left <= 0:
                    break
                self._cond.wait(left)
            self._turn += 1
            for job in batch:
                self._served[job.caller] = self._turn
            if len(self._served) > MAX_CALLERS_KEPT:  # bounded: a caller with nothing waiting starts afresh
                waiting = {job.caller for job in (*self._jobs, *self._live)}
                self._served = {c: t for c, t in self._served.items() if c in waiting or t == self._turn}
            return batch

    def _fill(self, batch: list[_Job], lane: deque[_Job]) -> None:
        """Move the waiting jobs that can share batch[0]'s forward into the batch, up to max_batch, by turns
        as _next takes them: the caller with the fewest jobs in the batch first, then the one served longest
        ago, then the oldest job. Taken in the order they came, one caller's pile filled every forward beside
        another's one photo, and a third caller's photo waited a whole forward more."""
        first = batch[0]
        age = {id(j): i for i, j in enumerate(lane)}
        pool = [j for j in lane if j.vm is first.vm and _shares(first, j)]
        while pool and len(batch) < self.max_batch:
            taken = Counter(j.caller for j in batch)
            job = min(pool, key=lambda j: (taken[j.caller], self._served.get(j.caller, -1), age[id(j)]))
            pool.remove(job)
            lane.remove(job)
            batch.append(job)

    def _next(self, lane: deque[_Job], served: dict[str | None, int] | None = None) -> _Job:
        """The oldest job of the caller served longest ago (a caller with nothing served while it
        waited: first). served: the callers' turns (default: the queue's own)."""
        turns = self._served if served is None else served
        return min(enumerate(lane), key=lambda ij: (turns.get(ij[1].caller, -1), ij[0]))[1]

    def _runner(self) -> ThreadPoolExecutor | None:
        """Where the next forward runs: None (this worker thread) or the thread kept for the count
        `threads` gives now. A failing or odd policy runs it here."""
        own = torch.get_num_threads()
        try:
            n = self.threads() if self.threads is not None else None
            if not isinstance(n, int) or n < 1 or n == own:
                return None
            if n not in self._runners:
                runner = ThreadPoolExecutor(1, f"vizvit-forward-{n}", _set_own_threads, (n,))
                try:
                    runner.submit(lambda: None).result()  # its count set, which also set torch's default...
                finally:
                    torch.set_num_threads(own)  # ...back to what every other thread starts with
                self._runners[n] = runner
            return self._runners[n]
        except Exception:  # noqa: BLE001 - a thread count is never worth a lost forward
            return None

    def _call(self, runner: ThreadPoolExecutor | None, vm: VitModel, requests: list[Request]) -> list[Analysis]:
        if runner is None:
            return self._run_batch(vm, requests)
        return runner.submit(self._run_batch, vm, requests).result()

    def _work(self) -> None:
        while True:
            batch = self._take()
            try:
                self._serve(batch)
            except BaseException as e:  # noqa: BLE001 - the one forward thread outlives any batch: every
                # photo after it would wait for ever (its callers get the error instead)
                with self._cond:
                    self._running = 0
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(e)

    def _serve(self, batch: list[_Job]) -> None:
        """Run one batch and answer each of its jobs."""
        with self._cond:
            self._running = len(batch)
        runner = self._runner()
        t0 = time.perf_counter()
        try:
            results: Sequence[Analysis | BaseException] = self._call(runner, batch[0].vm,
                                                                     [j.request for j in batch])
        except BaseException as e:  # noqa: BLE001 - a bad request must not fail the others: run each alone
            if len(batch) == 1:
                with self._cond:
                    self._running = 0
                if not batch[0].future.cancelled():
                    batch[0].future.set_exception(e)
                return
            results = []  # one answer or one error per request
            for job in batch:
                try:
                    results.append(self._call(runner, job.vm, [job.request])[0])
                except BaseException as one:  # noqa: BLE001
                    results.append(one)
        with self._cond:
            self._forwards += 1
            self._images += len(batch)
            self._largest = max(self._largest, len(batch))
            self._image_s = (time.perf_counter() - t0) / len(batch)
            self._running = 0
        for job, res in zip(batch, results):
            if job.future.cancelled():  # its caller gave up: set_* would raise, and the others wait
                continue
            if isinstance(res, BaseException):
                job.future.set_exception(res)
            else:
                job.future.set_result(res)
