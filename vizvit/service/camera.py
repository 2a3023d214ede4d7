"""Live camera sessions, in plain Python (no gradio, no model): the drop-to-newest slot that keeps
a camera from falling behind, each session's feed (its slot, its rate meter, the last frame it
showed, for Freeze) and the process's bounded registry of feeds.

Why a slot and not a queue: a camera makes frames faster than a slow model reads them. A queue
would grow, and every picture would show an older moment than the last. The slot holds ONE
waiting frame; a newer frame replaces it, and the caller whose frame was replaced gets nothing
to draw (its frame is dropped). So the picture painted is always of the newest frame that could
be read, and a slow model shows fewer pictures, never later ones.

Privacy: frames live in memory only, in the feed's slot (one frame) and `recent` (the frames of its
last RECENT pictures, for Freeze), and a feed
is forgotten when its session closes, when its stream stops for longer than IDLE_S, or when
MAX_FEEDS newer sessions push it out.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from vizvit.errors import UserError

T = TypeVar("T")
R = TypeVar("R")


class NewestSlot(Generic[T]):
    """One waiting item at most: put() replaces what waits (newest wins), take() empties it.

    Thread-safe. Counts what was put and what was replaced unread (dropped)."""

    def __init__(self) -> None:
        self._item: tuple[int, T] | None = None  # (sequence number, item)
        self._lock = threading.Lock()
        self._seq = 0
        self.put_count = 0
        self.dropped = 0

    def put(self, item: T) -> int:
        """Offer an item; returns its sequence number (1, 2, ...). A waiting item is dropped."""
        with self._lock:
            self._seq += 1
            self.put_count += 1
            if self._item is not None:
                self.dropped += 1
            self._item = (self._seq, item)
            return self._seq

    def take(self) -> tuple[int, T] | None:
        """(sequence number, item) of the waiting item, or None when nothing waits."""
        with self._lock:
            item, self._item = self._item, None
            return item

    def __len__(self) -> int:
        with self._lock:
            return 0 if self._item is None else 1


# Frames kept per session for Freeze: those of the last RECENT pictures (see Feed.recent).
RECENT = 4
# The meter's window: pictures per second over the last RATE_WINDOW_S seconds.
RATE_WINDOW_S = 2.0


class RateMeter:
    """Pictures per second and the model's forward time over the last few seconds."""

    def __init__(self, window_s: float = RATE_WINDOW_S, clock: Callable[[], float] = time.monotonic):
        self.window_s = window_s
        self._clock = clock
        self._done: deque[tuple[float, float]] = deque()  # (time done, forward seconds)
        self._lock = threading.Lock()

    def record(self, forward_s: float) -> None:
        with self._lock:
            now = self._clock()
            self._done.append((now, float(forward_s)))
            while self._done and self._done[0][0] < now - self.window_s:
                self._done.popleft()

    def rate(self) -> float:
        """Pictures per second over the window (0 before two pictures)."""
        with self._lock:
            if len(self._done) < 2:
                return 0.0
            span = self._done[-1][0] - self._done[0][0]
            return (len(self._done) - 1) / span if span > 0 else 0.0

    def forward_s(self) -> float:
        """Median forward seconds over the window (0 before the first picture)."""
        with self._lock:
            f = sorted(s for _, s in self._done)
        return f[len(f) // 2] if f else 0.0

    def count(self) -> int:
        with self._lock:
            return len(self._done)


@dataclass(frozen=True)
class Frame:
    """One camera frame as it arrived: the RGB pixels and when it arrived (monotonic seconds).
    As its work begins (Feed.step), how long it waited for the session's previous work (waited) or
    how long the session stood idle before it came (idle): a page that sends its next frame while
    the last one's forward runs times it by these (web/camera_live.js)."""

    rgb: object  # (H, W, 3) uint8 numpy array
    arrived: float
    view: object = None  # what the caller made of it before its work (views/camera: the model-input view)
    waited: float = 0.0  # seconds from arriving to its work's start
    idle: float = 0.0  # seconds from the session's previous work's end to this frame's arrival


class Feed:
    """One camera session: its slot, its meter, and the last frame it showed (for Freeze).

    step(frame, work) offers the frame and, one caller at a time, runs work on the NEWEST waiting
    frame. A caller whose frame was replaced while it waited returns None (dropped)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, owner: str = "", key: object = None) -> None:
        self.owner = owner  # the browser session that opened it (its page's unload forgets it)
        self.key = key  # what the page opened it with (the live map's model and heads off: a PhotoKey)
        self.started: float | None = None  # when this run of the camera began (its first frame)
        self.expired = False  # this run reached the time limit: only a Start (restart) begins another
        self.slot: NewestSlot[Frame] = NewestSlot()
        self.meter = RateMeter(clock=clock)
        self._clock = clock
        self._busy = threading.Lock()  # one forward per camera session at a time
        self._waiter = threading.Lock()  # held by the one caller waiting for _busy (see step)
        # The page's (run, number) of the newest frame offered: two frames in flight are decoded on two
        # server threads, and the later one can reach step first; the earlier is then dropped, never
        # drawn after it (the live picture would step back a frame).
        self.newest: tuple[int, int] | None = None
        self.late = 0  # frames dropped for arriving after a newer one
        self._order = threading.Lock()
        self.last: Frame | None = None  # the frame of the last picture made
        # The frames of the last RECENT pictures, by picture number: Freeze keeps the one the page
        # shows, which may be a picture or two behind the last one made (its answer still on the way).
        self.recent: OrderedDict[int, Frame] = OrderedDict()
        self.seen = clock()  # when the last frame arrived
        self.ended: float | None = None  # when the last work ended
        self.done = 0  # pictures made
        self.note = ""  # what the panel last said about speed (sent again only when it changes)

    def step(self, rgb: object, work: Callable[[Frame], R], view: object = None,
             order: tuple[int, int] | None = None) -> R | None:
        """Offer `rgb` (and `view`, made of it: it travels with the frame), then run work(newest
        frame) once this session's previous work is done; None when a newer frame took this one's
        place (it is dropped, never queued). Only work runs one at a time: what a caller does with
        its result runs beside the next frame's work. order: the page's (run, number) of the frame;
        a frame not newer than one already offered is dropped at once (None).

        At most two callers per session are inside at once, one working and one waiting: a caller
        that finds another waiting leaves its frame in the slot for that one and returns None at
        once, so a client sending many frames at a time holds two server threads, not one each."""
        if order is not None:
            with self._order:
                if self.newest is not None and order <= self.newest:
                    self.late += 1
                    return None
                self.newest = order
        now = self._clock()
        self.seen = now
        self.slot.put(Frame(rgb, now, view))
        if not self._waiter.acquire(blocking=False):  # the waiting caller will read this newest frame
            return None
        try:
            self._busy.acquire()
        finally:
            self._waiter.release()
        try:
            got = self.slot.take()
            if got is None:  # a newer frame came in and an earlier caller took it: nothing to draw
                return None
            _, frame = got
            start = self._clock()
            frame = replace(frame, waited=start - frame.arrived,
                            idle=max(0.0, frame.arrived - self.ended) if self.ended is not None else 0.0)
            try:
                out = work(frame)
            finally:
                self.ended = self._clock()
            self.seen = self.ended  # a long forward (behind uploads) is not a pause of the stream
            self.last = frame
            self.done += 1
            self.recent[self.done] = frame
            while len(self.recent) > RECENT:
                self.recent.popitem(last=False)
            return out
        finally:
            self._busy.release()


# A camera session leaves the registry when its session closes (the page's unload), when no frame
# came for IDLE_S, or when MAX_FEEDS newer sessions came after it: a frame is never kept longer.
IDLE_S = 600.0
MAX_FEEDS = 64
# Fair to other visitors: one run of the camera lasts at most TIME_LIMIT_S (Start again for
# another), and at most CONCURRENT_STREAMS sessions stream at once (a frame in the last ACTIVE_S).
# Their frames also wait behind every upload in the forward worker (forwards.py).
TIME_LIMIT_S = 120.0
EXPIRED = "This camera page has expired (or the server restarted): reload the page."
CONCURRENT_STREAMS = 4
ACTIVE_S = 3.0
MAX_PER_OWNER = 4  # camera pages kept per browser session (its newest); others are forgotten


class Feeds:
    """Every camera session of the process, by its token (an unguessable id the page gets when it
    opens: open()). Bounded; admit() applies the time and concurrency limits."""

    def __init__(self, idle_s: float = IDLE_S, max_feeds: int = MAX_FEEDS, time_limit_s: float = TIME_LIMIT_S,
                 streams: int = CONCURRENT_STREAMS, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s = idle_s
        self.max_feeds = max_feeds
        self.time_limit_s = time_limit_s
        self.streams = streams
        self._clock = clock
        self._feeds: OrderedDict[str, Feed] = OrderedDict()
        # Pages told "the camera is busy" (token -> its last refused try, in line order). They go before the
        # restart of a page that has had its run, for one run's length from their last try: a visitor who
        # restarts at each time limit cannot keep every stream (an audit: four pages of one machine did, for
        # 400 s). A page that never streamed is not held back: one refused once and gone keeps no free stream
        # from a newcomer (a review: with every new run held back, four such pages did for 120 s).
        self._waiting: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def feed(self, session: str, owner: str = "", key: object = None) -> Feed:
        """The session's feed (a new one for a new session); forgets idle and surplus feeds."""
        with self._lock:
            self._forget_idle()
            f = self._feeds.get(session)
            if f is None:
                f = self._feeds[session] = Feed(self._clock, owner, key)
            self._feeds.move_to_end(session)
            now = self._clock()
            mine = [t for t, o in self._feeds.items() if o.owner == owner and owner and not self._streaming(o, now)]
            for t in mine[:-MAX_PER_OWNER]:  # one browser session's pages beyond its last few
                del self._feeds[t]
            # Oldest first, but never a session streaming now: opening pages cannot cut one off.
            for t in [t for t, o in self._feeds.items() if not self._streaming(o, now)]:
                if len(self._feeds) <= self.max_feeds:
                    break
                del self._feeds[t]
            return f

    @staticmethod
    def _streaming(f: Feed, now: float) -> bool:
        return f.started is not None and not f.expired and now - f.seen <= ACTIVE_S

    def open(self, owner: str, key: object) -> str:
        """A new camera session for the page of browser session `owner`; returns its token."""
        token = secrets.token_urlsafe(16)
        self.feed(token, owner, key)
        return token

    def admit(self, token: str, restart: bool = False) -> Feed:
        """The feed a frame with this token goes to, if it may stream now. restart: the first frame
        of a run (the page's Start). A run ends at the time limit, and after that only a restart
        begins another; while a run streams, restart changes nothing (it cannot stretch the run).
        A stream that paused (no frame for ACTIVE_S) begins a new run when it comes back; a new
        run is refused while `streams` others stream.

        Raises UserError (with what to do) for a token this server never gave (or forgot), a run
        past its time limit, or a new run while `streams` others stream."""
        with self._lock:
            self._forget_idle()
            f = self._feeds.get(token)
            if f is None:
                raise UserError(EXPIRED)
            now = self._clock()
            if f.expired and not restart:
                raise UserError(self._limit_text())
            if not self._streaming(f, now):  # a new run
                busy = sum(1 for o in self._feeds.values() if o is not f and self._streaming(o, now))
                # Pages refused lately go before a page that has had a run (its restart at the limit, or
                # back from a pause); a page that never streamed is not held back by them, so a page that
                # was refused and gave up keeps no free stream from a newcomer.
                ahead = [t for t in self._waiting if t != token] if f.started is not None else []
                if busy + len(ahead) >= self.streams:
                    self._waiting[token] = now  # its place kept from its first refusal, its last try noted
                    raise UserError(
                        f"{busy} visitors are using the camera now, the most at once on this server: you are "
                        "in line for the next one free, try again in a minute." if busy >= self.streams else
                        "The camera's free streams go to visitors who were waiting before you: try again in a "
                        "minute.")
                self._waiting.pop(token, None)
                f.started, f.expired = now, False
            elif f.started is not None and now - f.started > self.time_limit_s:  # streaming: it has started
                f.expired = True
                raise UserError(self._limit_text())
            f.seen = now
            self._feeds.move_to_end(token)
            return f

    def _limit_text(self) -> str:
        return f"This camera run reached its {self.time_limit_s:.0f} s: press Start to go on."

    def close_owner(self, owner: str) -> None:
        """The browser session `owner` ended (its page closed): its camera sessions are forgotten."""
        with self._lock:
            for t in [t for t, f in self._feeds.items() if f.owner == owner]:
                del self._feeds[t]

    def get(self, session: str) -> Feed | None:
        with self._lock:
            self._forget_idle()
            return self._feeds.get(session)

    def close(self, session: str) -> None:
        """The session ended: its frames are forgotten."""
        with self._lock:
            self._feeds.pop(session, None)

    def _forget_idle(self) -> None:
        now = self._clock()
        for s in [s for s, f in self._feeds.items() if now - f.seen > self.idle_s]:
            del self._feeds[s]
        # A page waits at most one run's length, or until it is gone
        for t in [t for t, at in self._waiting.items() if now - at > self.time_limit_s or t not in self._feeds]:
            del self._waiting[t]

    def __len__(self) -> int:
        with self._lock:
            return len(self._feeds)
