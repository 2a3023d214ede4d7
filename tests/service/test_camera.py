"""The live camera's backend (vizvit/service/camera.py, and the camera lane of vizvit/model/forwards.py):
drop-to-newest never queues more than one frame and always reads the newest; camera frames wait
behind uploads; pages and streams are bounded. The live picture and freeze (vizvit/views/camera.py)
are tests/views/test_camera.py."""

from __future__ import annotations

import io
import threading
import time

import fake_camera
import pytest
from PIL import Image

from vizvit.model import engine
from vizvit.model.engine import Request
from vizvit.model.forwards import ForwardQueue
from vizvit.service import camera
from vizvit.session import PhotoKey, Workbench
from vizvit.views import camera as view


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


# ------------------------------------------------------------------ drop to newest
def test_the_slot_holds_one_frame_and_the_newest_wins():
    s: camera.NewestSlot[int] = camera.NewestSlot()
    assert s.take() is None and len(s) == 0
    for i in range(5):
        s.put(i)
        assert len(s) == 1
    assert s.take() == (5, 4)  # the newest (5th put) is what waits; the four before it were dropped
    assert s.dropped == 4 and s.put_count == 5 and s.take() is None


def test_a_busy_feed_never_queues_more_than_one_frame_and_reads_the_newest():
    """Eight cameras' worth of frames offered from many threads while the model is slow: at no
    moment does more than one frame wait, every frame is either read or dropped (never both), the
    frames read go forward in time, and the last frame offered is always read."""
    feed = camera.Feed()
    read, waiting, lock = [], [], threading.Lock()

    def work(frame: camera.Frame) -> int:
        waiting.append(len(feed.slot))  # what waits while this one is read: 0 or 1
        time.sleep(0.01)  # a slow model
        with lock:
            read.append(frame.rgb)
        return frame.rgb

    results: dict[int, int | None] = {}
    counter = iter(range(10_000))
    order_lock = threading.Lock()

    def camera_thread() -> None:
        for _ in range(25):
            with order_lock:  # frame numbers in the order they reach the feed
                i = next(counter)
                t = threading.Thread(target=lambda i=i: results.__setitem__(i, feed.step(i, work)))
                t.start()
            threads.append(t)
            time.sleep(0.001)

    threads: list[threading.Thread] = []
    cams = [threading.Thread(target=camera_thread) for _ in range(8)]
    for c in cams:
        c.start()
    for c in cams:
        c.join()
    for t in threads:
        t.join()
    offered = len(results)
    assert offered == 200
    assert max(waiting) <= 1 and len(feed.slot) == 0
    # A caller answers with the picture of the newest frame when its turn comes (its own or a newer
    # one); a caller whose frame was read by an earlier caller answers nothing.
    shown = [r for r in results.values() if r is not None]
    assert sorted(shown) == sorted(read) and all(r >= i for i, r in results.items() if r is not None)
    assert read == sorted(read), "a frame older than one already shown was read"
    assert max(results) in read, "the newest frame was dropped"
    assert len(read) < offered / 2, f"{len(read)} of {offered} read: the slow model should drop most frames"
    assert feed.slot.dropped == offered - len(read) and feed.last.rgb == read[-1] and feed.done == len(read)


def test_what_a_frame_brings_travels_with_it_and_a_newer_frame_brings_its_own():
    """step(rgb, work, view): the work reads the view offered with the frame it reads; when a newer
    frame took a waiting one's place, its own view comes with it."""
    feed = camera.Feed()
    started, release = threading.Event(), threading.Event()

    def slow(frame: camera.Frame) -> object:
        started.set()
        release.wait(5)
        return frame.view

    first = threading.Thread(target=lambda: feed.step("a", slow, "view of a"))
    first.start()
    assert started.wait(5)
    got: list[object] = []
    second = threading.Thread(target=lambda: got.append(feed.step("b", lambda f: (f.rgb, f.view), "view of b")))
    second.start()
    deadline = time.monotonic() + 5
    while not feed._waiter.locked():  # until b is the caller waiting for a's work (a let go of it when it began)
        assert time.monotonic() < deadline, "b never came to wait"
        time.sleep(0.001)
    got.append(feed.step("c", lambda f: (f.rgb, f.view), "view of c"))  # leaves c in the slot for b's caller
    release.set()
    first.join(5)
    second.join(5)
    assert got == [None, ("c", "view of c")]  # c returned at once (b waits); b's caller read c


def test_a_client_sending_many_frames_at_once_holds_two_callers_not_one_each():
    """20 more frames of one camera while the model works on one: that caller works,
    one waits (and then reads the newest frame), and the other 19 return at once with nothing to
    draw, without waiting for the model (each caller is a server thread)."""
    feed = camera.Feed()
    working, go = threading.Event(), threading.Event()

    def work(frame: camera.Frame) -> int:
        working.set()
        go.wait(5)
        return frame.rgb

    first = threading.Thread(target=lambda: feed.step(-1, work))
    first.start()
    assert working.wait(5)
    done: list[tuple[int, object]] = []
    callers = [threading.Thread(target=lambda i=i: done.append((i, feed.step(i, lambda f: f.rgb))))
               for i in range(20)]
    for c in callers:
        c.start()
        time.sleep(0.002)
    time.sleep(0.2)
    early = list(done)  # returned while the model still works on the first frame
    go.set()
    first.join()
    for c in callers:
        c.join()
    assert len(early) == 19 and all(r is None for _, r in early), early
    shown = [r for _, r in done if r is not None]
    assert shown == [19], f"the waiting caller shows the newest frame: {shown}"


def test_each_frame_says_how_long_it_waited_for_the_work_before_it_or_how_long_the_feed_stood_idle():
    """The page times its next frame by these (camera_live.js): a frame that arrives while the
    previous frame's work runs waited until that work ended; one that arrives after it ended found
    the feed idle since then. Constructed on a clock: work 1 runs 0.05-0.13 s; frame 2 arrives at 0.10
    (waits 0.03 s), frame 3 at 0.30, 0.07 s after work 2 ended at 0.23."""
    clock = Clock()
    feed = camera.Feed(clock=clock)
    seen: list[camera.Frame] = []
    working, go = threading.Event(), threading.Event()

    def slow(frame: camera.Frame) -> None:  # work 1: held until frame 2 waits, then ends at 0.13
        seen.append(frame)
        working.set()
        assert go.wait(5)
        clock.t = 0.13

    def work(frame: camera.Frame) -> None:  # 0.10 s of work
        seen.append(frame)
        clock.t += 0.10

    clock.t = 0.05
    first = threading.Thread(target=lambda: feed.step(1, slow))
    first.start()
    assert working.wait(5)
    clock.t = 0.10
    second = threading.Thread(target=lambda: feed.step(2, work))
    second.start()
    deadline = time.time() + 5
    while len(feed.slot) == 0 and time.time() < deadline:  # frame 2 waits in the slot
        time.sleep(0.001)
    go.set()
    first.join()
    second.join()
    clock.t = 0.30
    feed.step(3, work)
    got = [(f.rgb, round(f.waited, 6), round(f.idle, 6)) for f in seen]
    assert got == [(1, 0.0, 0.0), (2, 0.03, 0.0), (3, 0.0, 0.07)], got


def test_feeds_forget_a_session_when_it_closes_idles_or_is_pushed_out():
    clock = Clock()
    feeds = camera.Feeds(idle_s=10, max_feeds=2, clock=clock)
    a = feeds.feed("a")
    assert feeds.feed("a") is a and feeds.get("b") is None
    feeds.feed("b")
    feeds.feed("c")  # a third session pushes out the oldest
    assert feeds.get("a") is None and len(feeds) == 2
    clock.t = 11  # no frame for longer than idle_s
    assert feeds.get("b") is None and len(feeds) == 0
    feeds.feed("d")
    feeds.close("d")
    assert feeds.get("d") is None


def test_a_camera_page_streams_only_with_its_token_within_the_time_and_stream_limits():
    """Feeds.admit: a token the server never gave is refused; at most `streams` sessions stream
    at once (a frame within ACTIVE_S), a fifth is told to wait, and gets in once one stops; a run
    ends at its time limit and Start (restart) begins a new one; a closed page's feeds are gone."""
    clock = Clock()
    feeds = camera.Feeds(time_limit_s=120, streams=2, clock=clock)
    with pytest.raises(ValueError, match="reload the page"):
        feeds.admit("not-a-token")
    a, b, c = (feeds.open(owner, key=owner) for owner in "abc")
    assert len({a, b, c}) == 3 and min(map(len, (a, b, c))) >= 16  # unguessable, one per page
    assert feeds.admit(a, restart=True).key == "a"
    feeds.admit(b, restart=True)
    with pytest.raises(ValueError, match="2 visitors are using the camera now"):
        feeds.admit(c, restart=True)
    for t in (1.0, 2.0, 3.0, 4.0):
        clock.t = t
        feeds.admit(a)  # a streaming session goes on whoever waits
    assert clock.t > camera.ACTIVE_S  # b sent nothing for longer than ACTIVE_S: it stopped
    assert feeds.admit(c, restart=True).key == "c"
    while clock.t < 119:  # a streams on, a frame a second...
        clock.t += 1
        feeds.admit(a)
        feeds.admit(c)
    with pytest.raises(ValueError, match="reached its 120 s"):
        for _ in range(3):  # restart on every frame does not stretch a run
            clock.t += 1
            feeds.admit(a, restart=True)
    assert clock.t > 120
    clock.t += 1
    with pytest.raises(ValueError, match="reached its 120 s: press Start"):
        feeds.admit(a)  # ...and after the limit, no frame without Start
    feeds.admit(c)
    assert feeds.admit(a, restart=True).started == clock.t  # Start again: a new run
    feeds.close_owner("a")
    with pytest.raises(ValueError, match="expired"):
        feeds.admit(a)
    assert feeds.get(c) is not None


def test_opening_pages_never_cuts_off_a_stream_and_one_session_keeps_its_last_pages():
    clock = Clock()
    feeds = camera.Feeds(max_feeds=3, clock=clock)
    live = feeds.open("x", key="live")
    feeds.admit(live, restart=True)
    for i in range(10):  # another visitor opens page after page
        feeds.open("flood", key=i)
    assert feeds.admit(live).key == "live"  # still streaming
    assert len(feeds) == 3
    for i in range(6):
        feeds.open("one", key=i)
    assert sum(1 for i in range(6) if any(f.key == i for f in feeds._feeds.values() if f.owner == "one")) \
        <= camera.MAX_PER_OWNER


def test_a_frame_that_is_not_a_picture_or_too_big_is_refused_with_a_message(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    feeds = camera.Feeds()
    token = feeds.open("x", PhotoKey(tiny16.id, ""))
    with pytest.raises(ValueError, match="must be a JPEG"):
        view.live_frame(wb, feeds, token, b"hello", {})
    png = io.BytesIO()
    Image.new("RGB", (64, 48)).save(png, "PNG")
    with pytest.raises(ValueError, match="must be a JPEG"):
        view.live_frame(wb, feeds, token, png.getvalue(), {})
    with pytest.raises(ValueError, match="under 4 MB"):
        view.live_frame(wb, feeds, token, b"\xff\xd8\xff" + bytes(5 << 20), {})
    big = io.BytesIO()
    Image.new("RGB", (2000, 2000)).save(big, "JPEG")  # 4 Mpx, over an HD frame: refused on its header
    with pytest.raises(ValueError, match="too large"):
        view.live_frame(wb, feeds, token, big.getvalue(), {})
    hd = io.BytesIO()
    Image.fromarray(fake_camera.frame_rgb(3, 10)).resize((1280, 960)).save(hd, "JPEG")
    feed = feeds.get(token)
    step = view.live_frame(wb, feeds, token, hd.getvalue(), {"layer": "²", "heads": "head 7", "mode": "?"})
    assert step is not None and step.frame == 1
    assert min(feed.last.rgb.shape[:2]) == view.frame_side(tiny16)  # kept at the size the model reads
    # Values that fit no control fall back to the defaults: the last layer, mean of heads, rollout.
    want = view.CameraParams(layer=tiny16.geometry.num_layers)
    assert view.CameraParams.from_link({"layer": "²", "heads": "head 7", "mode": "?"}, tiny16.geometry) == want
    assert view.CameraParams.from_link({"layer": "9" * 5000}, tiny16.geometry) == want


def test_the_meter_counts_pictures_per_second_over_its_window():
    clock = Clock()
    m = camera.RateMeter(window_s=2.0, clock=clock)
    assert m.rate() == 0 and m.forward_s() == 0
    for i in range(30):  # 10 pictures a second for 3 s, forwards of 40..69 ms
        clock.t = i / 10
        m.record(0.040 + i / 1000)
    assert m.rate() == pytest.approx(10.0)
    assert m.count() == 21  # the last 2 s: 21 pictures, 20 intervals
    assert m.forward_s() == pytest.approx(0.059)  # median of the window's 49..69 ms


# ------------------------------------------------------------------ fair to uploads
def test_camera_frames_wait_behind_every_upload_and_batch_only_with_frames(tiny16):
    order, release, started = [], threading.Event(), threading.Event()

    def run_batch(vm, requests):
        order.append([r.view.dx for r in requests])
        started.set()
        release.wait(30)
        return engine.analyze_batch(vm, requests)

    from vizvit.model.images import View

    photo = Image.fromarray(fake_camera.frame_rgb(3, 10))
    q = ForwardQueue(max_batch=4, run_batch=run_batch)
    running = q.submit(tiny16, Request(photo, View(dx=100)), live=True)  # a camera frame runs
    assert started.wait(30)
    frames = [q.submit(tiny16, Request(photo, View(dx=200 + i)), live=True) for i in range(2)]
    uploads = [q.submit(tiny16, Request(photo, View(dx=i))) for i in range(2)]
    assert q.waiting() == 4
    release.set()
    for f in [running, *frames, *uploads]:
        f.result(30)
    assert order == [[100], [0, 1], [200, 201]], order  # the uploads first, then the frames together


def test_a_frame_that_reaches_the_feed_after_a_newer_one_is_dropped_never_drawn_after_it():
    """Two frames in flight are decoded on two server threads: the page's frame 5 can reach step before
    its frame 4. Frame 4 is then dropped at once (None, no work), so no picture steps back a frame;
    a new run (Start again: a higher run number) begins again from its frame 1."""
    feed = camera.Feed()
    ran: list[object] = []

    def work(frame: camera.Frame) -> object:
        ran.append(frame.rgb)
        return frame.rgb

    assert feed.step("f3", work, order=(1, 3)) == "f3"
    assert feed.step("f5", work, order=(1, 5)) == "f5"
    assert feed.step("f4", work, order=(1, 4)) is None  # came after 5
    assert feed.step("f5 again", work, order=(1, 5)) is None  # the same number twice: not newer
    assert feed.step("run 2, f1", work, order=(2, 1)) == "run 2, f1"
    assert feed.step("no order", work) == "no order"  # a caller that sends none streams as before
    assert ran == ["f3", "f5", "run 2, f1", "no order"] and feed.late == 2


def test_a_visitor_refused_the_camera_gets_the_next_stream_that_ends():
    """An audit: four pages of one machine pressed Start again at each time limit and kept every stream
    for 400 s while another visitor, trying every 100 s, was refused each time. A refused page now goes
    before any other new run, for one run's length: the stranger's restart at 121 s is refused, the
    student's next try (150 s) streams; the stranger's page gets the stream after."""
    clock = Clock()
    feeds = camera.Feeds(time_limit_s=120, streams=4, clock=clock)
    mine = [feeds.open(f"stranger-{i}", None) for i in range(4)]
    for tok in mine:
        feeds.admit(tok, restart=True)
    student = feeds.open("student", None)
    admitted_at, refused = None, []
    for step in range(400):
        clock.t = float(step)
        for tok in mine:
            try:
                feeds.admit(tok)
            except ValueError:
                try:
                    feeds.admit(tok, restart=True)  # "press Start to go on", at once
                except ValueError as e:
                    refused.append(str(e))
        if admitted_at is None and step % 100 == 50:
            try:
                feeds.admit(student, restart=True)
                admitted_at = step
            except ValueError as e:
                assert "you are in line for the next one free" in str(e)
    assert admitted_at == 150, admitted_at
    assert refused and "visitors who were waiting before you" in refused[0]


def test_a_page_that_gave_up_holds_no_stream_back():
    """A review: four pages refused once and never back kept the free streams from a newcomer for 120 s.
    The line holds back only a page that has had its run, never a newcomer."""
    clock = Clock()
    feeds = camera.Feeds(time_limit_s=120, streams=2, clock=clock)
    busy = [feeds.open(f"b{i}", None) for i in range(2)]
    for tok in busy:
        feeds.admit(tok, restart=True)
    quitters = [feeds.open(f"q{i}", None) for i in range(2)]
    for tok in quitters:
        with pytest.raises(ValueError, match="you are in line"):
            feeds.admit(tok, restart=True)
    clock.t = 10.0  # the two streams stop (no frame since 0 s); the quitters never come back
    newcomer = feeds.open("new", None)
    assert feeds.admit(newcomer, restart=True).started == clock.t  # the quitters' places hold no newcomer back
    with pytest.raises(ValueError, match="waiting before you"):
        feeds.admit(busy[0], restart=True)  # but a page that had its run waits behind them
