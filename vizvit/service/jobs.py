"""Costly jobs, fairly shared: a few slots for everyone, taken in turn by address, then by session.

A costly job (attention flow, the shift sweep, the deletion curves, head importance) runs dozens of
forwards or minutes of max-flows. Jobs share `slots` slots. A caller is (address, session): one
address may be a whole lecture hall behind a NAT, so the address alone must not mean "one job";
and every REST call is a new session, so the session alone would let one machine take every slot.
So the waiting line is served round-robin: the address served least recently first, and within it
the session served least recently first, each session's jobs in the order they came. An address
holds at most its fair share of the slots (slots / addresses wanting one, at least one) while
another address waits, and every free slot when nobody else waits; a running job is never
preempted. Each waiting job knows its place in that line (`Ticket.ahead`). The line is bounded
per address and overall: past either bound a job is refused at once with a sentence that says so.

A session's second job waits behind its first (its session's turn comes once per round): the
page's costly buttons are different work the student asked for (the sweep, then the curves), and
Gradio already ignores a second click of a button whose event is pending; replacing the first would
throw away work nobody asked to stop. A job of the same kind from the same session is another matter
where the caller says so (`replace=True`, the page's tabs): attention flow starts on a choice of the
method and again on Compute, two events Gradio does not merge, and the newer request is the one the
student wants; the older one stops (its token says REPLACED) and frees its slot.

Each job gets a Cancel token carrying its wall-time limit; whoever runs the job passes the token to
the loops (vizvit.cancel), and sets it when the caller leaves or nobody reads the answer, while the
job waits as well as while it runs. Plain threading, no server: page/jobs.py decides who a caller is
and when one has left.

    jobs = Jobs(slots=2)
    with jobs.hold(Caller("address 203.0.113.7", "session-1"), "shift sweep") as cancel:
        sweep.full_sweep(ph, cancel)

    with jobs.line(caller, "shift sweep") as ticket:      # to show the wait
        for ahead in ticket.waiting():
            show(f"{ahead} ahead of you")
        sweep.full_sweep(ph, ticket.cancel)
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from vizvit.cancel import Cancel, Cancelled
from vizvit.errors import UserError

COSTLY_SLOTS = 2  # jobs running at once, over all callers: a 2-core server keeps a core for everyone else
# Seconds a job may run (not counting its wait for a slot), by job name: none by default. The page's
# jobs take the costly methods' own (vizvit.readings.methods.JOB_LIMITS, page.jobs); the batched jobs
# take seconds to a minute, within DEFAULT_LIMIT_S.
LIMITS: Mapping[str, float] = {}
DEFAULT_LIMIT_S = 300.0
# Jobs waiting at once from one address: a lecture hall behind one NAT (50 students: 2 running, 48
# waiting) all get in line; past it a stuffing machine is refused, and the overall bound still has
# room for strangers (16 places). At 32 an audit's hall of 40, each sweeping their own photo, had 6 refused.
LINE_PER_ADDRESS = 48
LINE_TOTAL = 64  # waiting over all callers (the page gives each waiting job a thread: page.jobs.COSTLY_THREADS)
RECENT = 20  # ended jobs kept for stats()
REMEMBERED = 4096  # addresses and sessions whose last turn is remembered (older ones count as never served)
REPLACED = "a newer request of the same kind from the same page replaced it"  # Cancel.reason (replace=True)
WAIT_TICK_S = 5.0  # how often Ticket.waiting() says the place again when it has not changed (a liveness sign)


@dataclass(frozen=True)
class Caller:
    """Who asked: `address` decides the share (an address: page/jobs.py's caller_of), `session` the
    turn within it (a page's session, or a REST call's own event)."""

    address: str
    session: str = ""


@dataclass
class _Job:
    id: int
    caller: Caller
    what: str
    cancel: Cancel
    queued: float  # monotonic
    started: float | None = None
    ended: float | None = None
    outcome: str = ""


@dataclass(frozen=True)
class JobsStats:
    """What the jobs are doing now, for /stats (no caller's address: the stats are public)."""

    slots: int
    limits: dict[str, float]
    default_limit_s: float
    running: list[dict] = field(default_factory=list)  # {job, seconds, limit_s, stopping}
    waiting: list[dict] = field(default_factory=list)  # {job, seconds, ahead}, in the line's order
    recent: list[dict] = field(default_factory=list)  # ended: {job, seconds, outcome, stop_s}
    line_per_address: int = LINE_PER_ADDRESS
    line_total: int = LINE_TOTAL

    def as_json(self) -> dict:
        return {"slots": self.slots, "limits_s": {**self.limits, "other": self.default_limit_s},
                "line_bounds": {"per_address": self.line_per_address, "total": self.line_total},
                "running": self.running, "waiting": self.waiting, "recent": self.recent}


class Ticket:
    """One job's place: in line until it starts, then running (see Jobs.line)."""

    def __init__(self, jobs: Jobs, job: _Job) -> None:
        self._jobs, self._job = jobs, job
        self.cancel = job.cancel

    @property
    def started(self) -> bool:
        return self._job.started is not None

    def ahead(self) -> int | None:
        """Jobs that start before this one if nobody else joins (None once it runs)."""
        return self._jobs._ahead(self._job)

    def waiting(self, tick_s: float = WAIT_TICK_S) -> Iterator[int]:
        """Yield the number ahead at once, then whenever it changes (or every tick_s), until the job
        starts. Raises Cancelled once the token is set while it waits."""
        last: int | None = None
        last_t = 0.0
        while True:
            with self._jobs._cond:
                self._jobs._start_what_may()
                if self.started:
                    return
                self.cancel.check()
                ahead = self._jobs._ahead_locked(self._job)
            now = time.monotonic()
            if ahead != last or now - last_t >= tick_s:
                last, last_t = ahead, now
                yield ahead if ahead is not None else 0
            with self._jobs._cond:
                if not self.started:
                    # woken by any change (a job ends, joins or leaves); the timeout sees a token set
                    # elsewhere (the page's watcher) without waking every waiter too often
                    self._jobs._cond.wait(0.25)

    def wait(self) -> None:
        """Block until the job starts (Cancelled once its token is set)."""
        for _ in self.waiting(tick_s=3600.0):
            pass


class Jobs:
    """The slots, the fair line and the limits of costly jobs (thread-safe)."""

    def __init__(self, slots: int = COSTLY_SLOTS, limits: Mapping[str, float] = LIMITS,
                 default_limit_s: float = DEFAULT_LIMIT_S, line_per_address: int = LINE_PER_ADDRESS,
                 line_total: int = LINE_TOTAL) -> None:
        if slots < 1:
            raise ValueError("Costly jobs need at least one slot.")
        self.slots = slots
        self.limits = dict(limits)
        self.default_limit_s = default_limit_s
        self.line_per_address = line_per_address
        self.line_total = line_total
        self._cond = threading.Condition()
        self._running: list[_Job] = []
        self._waiting: list[_Job] = []  # in arrival order; _order() gives the line's
        self._recent: deque[_Job] = deque(maxlen=RECENT)
        self._ids = itertools.count(1)
        self._turns = itertools.count(1)
        # The turn (a count) each address and (address, session) last started a job: least recent first.
        self._served: OrderedDict[object, int] = OrderedDict()

    def limit_of(self, what: str) -> float:
        return self.limits.get(what, self.default_limit_s)

    @contextlib.contextmanager
    def hold(self, caller: Caller | str, what: str, cancel: Cancel | None = None) -> Iterator[Cancel]:
        """Run one job: wait for its turn, then yield its token, whose limit is the job's
        (limit_of(what)) counted from the start. Cancelled while waiting once `cancel` is set (the
        caller left); a UserError at once when the line is full. The slot is free again when the
        block ends, however it ends."""
        with self.line(caller, what, cancel) as ticket:
            ticket.wait()
            yield ticket.cancel

    @contextlib.contextmanager
    def line(self, caller: Caller | str, what: str, cancel: Cancel | None = None,
             replace: bool = False) -> Iterator[Ticket]:
        """Join the line and yield the Ticket: run the job once ticket.waiting() (or wait()) returns.
        replace: first stop every job of this caller's session (not empty) and kind, waiting or running
        (their tokens' reason is REPLACED)."""
        who = caller if isinstance(caller, Caller) else Caller(caller)
        token = cancel if cancel is not None else Cancel(what=what)
        token.what = what
        job = _Job(next(self._ids), who, what, token, time.monotonic())
        with self._cond:
            older = [j for j in (*self._running, *self._waiting)
                     if replace and who.session and j.caller == who and j.what == what]
            try:
                self._join(job, leaving=older)
            except UserError as e:
                job.ended, job.outcome = time.monotonic(), f"refused: {e}"
                self._recent.append(job)
                raise
            for j in older:  # only once the newer one is in line: a refused one replaces nothing
                j.cancel.set(REPLACED)
        ticket = Ticket(self, job)
        try:
            yield ticket
            job.outcome = "done" if job.started is not None else "it left the line"
        except Cancelled as e:
            job.outcome = f"stopped: {token.reason or e}"
            raise
        except BaseException as e:  # GeneratorExit (a page's Stop) included
            job.outcome = ("stopped: " + token.reason) if token.is_set() else f"ended: {type(e).__name__}"
            raise
        finally:
            with self._cond:
                if job.started is None:
                    self._waiting.remove(job)
                    job.outcome = "not started: " + (token.reason if token.is_set() else job.outcome)
                else:
                    self._running.remove(job)
                job.ended = time.monotonic()
                self._recent.append(job)
                self._start_what_may()
                self._cond.notify_all()

    def _join(self, job: _Job, leaving: Sequence[_Job] = ()) -> None:
        """Put `job` in line (holding self._cond), or refuse it when the line is full. Jobs leaving the line
        (their token set, or in `leaving`: the ones `job` replaces) take no place in it."""
        waiting = [j for j in self._waiting if not j.cancel.is_set() and all(j is not o for o in leaving)]
        mine = sum(j.caller.address == job.caller.address for j in waiting)
        if mine >= self.line_per_address:
            raise UserError(f"Too many costly jobs from your network are waiting ({mine}): try the {job.what} "
                            "again when one of them has finished.")
        if len(waiting) >= self.line_total:
            raise UserError(f"The server's line for costly jobs is full ({len(waiting)} waiting): try the "
                            f"{job.what} again in a minute.")
        self._waiting.append(job)
        self._start_what_may()
        self._cond.notify_all()

    def _order(self) -> list[_Job]:
        """The waiting jobs in the order they would start if nobody else joined (holding self._cond):
        round-robin over addresses (least recently served first, then first come), and within an
        address over its sessions likewise; each session's jobs first come, first served."""
        sim: dict[object, int] = {}  # turns given in this simulation, over the real ones

        def served(k: object) -> int:
            return sim.get(k, self._served.get(k, 0))

        by_addr: dict[str, dict[str, deque[_Job]]] = {}
        first: dict[object, int] = {}  # the earliest waiting job of each address and session: ties
        for j in self._waiting:
            if j.cancel.is_set():
                continue  # leaving: it takes nobody's turn
            by_addr.setdefault(j.caller.address, {}).setdefault(j.caller.session, deque()).append(j)
            first.setdefault(j.caller.address, j.id)
            first.setdefault(j.caller, j.id)
        order: list[_Job] = []
        turns = itertools.count(next(reversed(self._served.values()), 0) + 1)  # after every real turn
        while by_addr:
            addr = min(by_addr, key=lambda a: (served(a), first[a]))
            sessions = by_addr[addr]
            sess = min(sessions, key=lambda s: (served(Caller(addr, s)), first[Caller(addr, s)]))
            job = sessions[sess].popleft()
            order.append(job)
            sim[addr] = sim[Caller(addr, sess)] = next(turns)
            if not sessions[sess]:
                del sessions[sess]
            if not sessions:
                del by_addr[addr]
        return order

    def _next(self, order: list[_Job]) -> _Job | None:
        """The job to start in a free slot (holding self._cond): the first in line whose address is
        below its fair share of the slots (slots // addresses wanting one, at least 1); else the
        first below the share rounded up (the slots that do not divide evenly); else, when no other
        address waits, the first in line (an address alone may use every free slot)."""
        if not order:
            return None
        running: dict[str, int] = {}
        for j in self._running:
            running[j.caller.address] = running.get(j.caller.address, 0) + 1
        wanting = len({*running, *(j.caller.address for j in order)})
        for share in (max(1, self.slots // wanting), -(-self.slots // wanting)):
            job = next((j for j in order if running.get(j.caller.address, 0) < share), None)
            if job is not None:
                return job
        alone = len({j.caller.address for j in order}) == 1
        return order[0] if alone else None

    def _start_what_may(self) -> None:
        """Start waiting jobs while slots are free (holding self._cond), by _next's rule."""
        while len(self._running) < self.slots:
            job = self._next(self._order())
            if job is None:
                return
            self._waiting.remove(job)
            self._running.append(job)
            job.started = time.monotonic()
            job.cancel.started, job.cancel.limit_s = job.started, self.limit_of(job.what)  # the limit counts from here
            turn = next(self._turns)
            for k in (job.caller.address, job.caller):
                self._served[k] = turn
                self._served.move_to_end(k)
            while len(self._served) > REMEMBERED:
                self._served.popitem(last=False)
            self._cond.notify_all()

    def _ahead_locked(self, job: _Job) -> int | None:
        if job.started is not None:
            return None
        order = self._order()
        return next((i for i, j in enumerate(order) if j is job), len(order))

    def _ahead(self, job: _Job) -> int | None:
        with self._cond:
            return self._ahead_locked(job)

    def stop_caller(self, caller: Caller | str, reason: str = "the caller left") -> int:
        """Set the token of every job (running or waiting) of `caller` (a Caller: that session; an
        address: all its sessions); returns how many."""
        with self._cond:
            jobs = [j for j in (*self._running, *self._waiting)
                    if (j.caller == caller if isinstance(caller, Caller) else j.caller.address == caller)]
            for j in jobs:
                j.cancel.set(reason)
            self._cond.notify_all()
        return len(jobs)

    def stats(self) -> JobsStats:
        now = time.monotonic()
        with self._cond:
            running = [{"job": j.what, "seconds": round(now - (j.started or now), 2), "limit_s": j.cancel.limit_s,
                        "stopping": j.cancel.reason if j.cancel.is_set() else None} for j in self._running]
            order = self._order()
            waiting = [{"job": j.what, "seconds": round(now - j.queued, 2), "ahead": i} for i, j in enumerate(order)]
            waiting += [{"job": j.what, "seconds": round(now - j.queued, 2), "ahead": None,
                         "stopping": j.cancel.reason} for j in self._waiting if j not in order]
            recent = [{"job": j.what, "seconds": round((j.ended or now) - (j.started or j.queued), 2),
                       "outcome": j.outcome,
                       # from the token's set() (the caller gone, Stop, the limit) to the slot freed
                       "stop_s": None if j.cancel.stopped_at is None or j.ended is None
                       else round(max(0.0, j.ended - j.cancel.stopped_at), 3)}
                      for j in reversed(self._recent)]
        return JobsStats(self.slots, dict(self.limits), self.default_limit_s, running, waiting, recent,
                         self.line_per_address, self.line_total)
