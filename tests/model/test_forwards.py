"""The forward worker (vizvit/model/forwards.py) and batched analyses (engine.analyze_batch): batched
results equal single forwards, requests that wait share one forward, and a cached answer never
waits behind a forward."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from forwards_kit import HeldForwards
from tiny import EXAMPLES

import vizvit
from vizvit.model import engine
from vizvit.model.ablation import Ablation
from vizvit.model.engine import Request
from vizvit.model.forwards import ForwardQueue
from vizvit.model.images import View
from vizvit.session import PhotoKey, Workbench

PHOTOS = [vizvit.load_image(EXAMPLES / n) for n in ("chelsea.jpg", "coffee.jpg", "astronaut.jpg")]


def assert_same_analysis(got: engine.Analysis, want: engine.Analysis, atol: float = 1e-5) -> None:
    """Equal up to float32 summation order: a (B·N, D) matmul is tiled differently for another
    batch size B, so sums change in their last bits (≤ 1e-5 on these tensors)."""
    assert [p.label for p in got.top5] == [p.label for p in want.top5]
    for name in ("logits", "probs", "attentions", "hidden_states", "patch_embeddings", "image_embeds"):
        g, w = getattr(got, name), getattr(want, name)
        assert (g is None) == (w is None), name
        if g is not None:
            torch.testing.assert_close(g, w, rtol=0, atol=atol, msg=name)
    assert np.array_equal(got.input_view, want.input_view)
    assert torch.equal(got.pixel_values, want.pixel_values)
    assert got.view == want.view and got.ablation == want.ablation


def test_a_batch_equals_each_photo_alone_for_every_family(fam):
    alone = [vizvit.analyze(fam, p) for p in PHOTOS]
    batch = engine.analyze_batch(fam, [Request(p) for p in PHOTOS])
    assert len(batch) == len(PHOTOS)
    for got, want in zip(batch, alone):
        assert_same_analysis(got, want)


def test_a_batch_with_a_mask_and_heads_off_equals_alone(tiny16):
    off = Ablation(((0, 1),))
    view = View(mask=(0, 5, 17), mask_mode="drop")
    alone = [vizvit.analyze(tiny16, p, view, ablation=off) for p in PHOTOS]
    for got, want in zip(engine.analyze_batch(tiny16, [Request(p, view, off) for p in PHOTOS]), alone):
        assert_same_analysis(got, want)


def test_requests_that_cannot_share_a_forward_are_refused_together(tiny16):
    a, b = Request(PHOTOS[0]), Request(PHOTOS[1], View(mask=(3,), mask_mode="drop"))
    assert not engine.batchable(tiny16, a, b)
    assert not engine.batchable(tiny16, a, Request(PHOTOS[1], ablation=Ablation(((1, 0),))))
    assert engine.batchable(tiny16, a, Request(PHOTOS[1], View(dx=3)))  # a shift keeps every token
    with pytest.raises(ValueError):
        engine.analyze_batch(tiny16, [a, b])


def test_requests_that_arrive_while_a_forward_runs_share_the_next_one(tiny16):
    held = HeldForwards()
    q = ForwardQueue(max_batch=4, run_batch=held)
    first = q.submit(tiny16, Request(PHOTOS[0]))
    assert held.started.wait(30)
    later = [q.submit(tiny16, Request(PHOTOS[i % 3], View(dx=i))) for i in range(6)]
    assert q.waiting() == 6
    # Where each photo stands: the one forward running, then the queue in order.
    assert (q.ahead(PHOTOS[0]), q.ahead(PHOTOS[2]), q.ahead(object())) == (1, 3, None)
    held.release.set()
    results = [first.result(30)] + [f.result(30) for f in later]
    assert held.batches == [1, 4, 2]  # the first alone, then the six waiting, four at a time
    assert q.stats().forwards == 3 and q.stats().images == 7 and q.stats().largest_batch == 4
    for i, got in enumerate(results[1:]):
        assert_same_analysis(got, vizvit.analyze(tiny16, PHOTOS[i % 3], View(dx=i)))


def test_a_request_that_fails_fails_alone(tiny16):
    held = HeldForwards()
    q = ForwardQueue(run_batch=held)
    q.submit(tiny16, Request(PHOTOS[0]))
    assert held.started.wait(30)
    bad = q.submit(tiny16, Request(np.zeros((5, 5, 3), np.uint8)))  # not a model-input view
    good = q.submit(tiny16, Request(PHOTOS[1]))
    held.release.set()
    assert_same_analysis(good.result(30), vizvit.analyze(tiny16, PHOTOS[1]))
    with pytest.raises(RuntimeError):  # torch's: a 5×5 picture is smaller than one patch
        bad.result(30)


def test_each_forward_runs_on_the_thread_count_its_policy_gives_and_no_other_thread_changes(tiny16):
    """A forward runs on as many threads as `threads` says then; the count of every other thread, and
    of every thread started after (torch's process-wide default), stays as it was; a policy that
    fails or gives no count runs the forward as before."""
    seen = []

    def run_batch(vm, requests):
        seen.append(torch.get_num_threads())  # on the thread that runs the forward, as it runs
        return engine.analyze_batch(vm, requests)

    main = torch.get_num_threads()
    other = 1 if main != 1 else 2
    q = ForwardQueue(run_batch=run_batch)
    counts = iter([other, main, other])
    q.threads = lambda: next(counts)
    for photo in PHOTOS[:3]:
        q.run(tiny16, Request(photo))
    assert seen == [other, main, other]

    def broken() -> int:
        raise RuntimeError("no policy")

    for policy in (broken, lambda: 0, lambda: "2", lambda: 1.5):
        q.threads = policy
        assert_same_analysis(q.run(tiny16, Request(PHOTOS[0])), vizvit.analyze(tiny16, PHOTOS[0]))
        assert seen[-1] == main  # on the worker's own count
    later = []
    started = threading.Thread(target=lambda: later.append(torch.get_num_threads()))
    started.start()
    started.join()
    assert torch.get_num_threads() == main and later == [main]  # nothing leaked to other threads


def test_a_cached_photo_is_answered_while_another_photo_waits_for_its_forward(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    held = HeldForwards()
    cached = PhotoKey(tiny16.id, wb.add_photo(PHOTOS[0]))
    want = wb.analysis(cached)  # in the cache now
    wb.forwards = ForwardQueue(run_batch=held)
    new = PhotoKey(tiny16.id, wb.add_photo(PHOTOS[1]))
    waiting = threading.Thread(target=wb.analysis, args=(new,))
    waiting.start()
    assert held.started.wait(30)  # the new photo's forward is running (held)
    assert wb.analysis(cached) is want  # answered while it is held: no wait behind it
    held.release.set()
    waiting.join(30)
    assert not waiting.is_alive()


def test_students_at_once_get_what_they_get_alone_in_fewer_forwards(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    keys = [PhotoKey(tiny16.id, wb.add_photo(p)) for p in PHOTOS] * 3  # three students per photo
    out: dict[int, engine.Analysis] = {}
    go = threading.Barrier(len(keys))

    def student(i: int) -> None:
        go.wait()
        out[i] = wb.analysis(keys[i])

    threads = [threading.Thread(target=student, args=(i,)) for i in range(len(keys))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i in range(len(keys)):
        assert_same_analysis(out[i], vizvit.analyze(tiny16, PHOTOS[i % 3]))
    assert wb.forwards.stats().images == len(PHOTOS)  # one analysis per photo: the cache shares it


def test_a_request_with_a_bad_mask_gets_its_error_and_the_worker_keeps_serving(tiny16):
    held = HeldForwards()
    q = ForwardQueue(run_batch=held)
    q.submit(tiny16, Request(PHOTOS[0]))
    assert held.started.wait(30)
    bad = q.submit(tiny16, Request(PHOTOS[1], View(mask=tuple(range(196)), mask_mode="drop")))  # every patch
    also_bad = q.submit(tiny16, Request(PHOTOS[2], View(mask=tuple(range(196)), mask_mode="drop")))
    held.release.set()
    for f in (bad, also_bad):
        with pytest.raises(Exception, match="at least one patch|every patch|patch") as e:
            f.result(30)
        assert not isinstance(e.value, TimeoutError)  # its own error, not a worker that died
    later = q.submit(tiny16, Request(PHOTOS[2]))
    assert_same_analysis(later.result(30), vizvit.analyze(tiny16, PHOTOS[2]))


def test_ready_views_that_wait_behind_one_that_cannot_share_are_batched_and_the_worker_lives_on(tiny16):
    """The hostile caller's crash: rooms opened at once queue ready (224, 224, 3) views; taking the second
    of two that share a forward past one that cannot compared the jobs with == and so their arrays,
    numpy raised, and the one forward thread died: no photo was analysed again."""
    from vizvit.model.images import model_input_view

    held = HeldForwards()
    q = ForwardQueue(max_batch=4, run_batch=held)
    q.submit(tiny16, Request(PHOTOS[0]))
    assert held.started.wait(30)
    views = [model_input_view(p, tiny16.preprocess) for p in PHOTOS]
    a = q.submit(tiny16, Request(views[0]))
    apart = q.submit(tiny16, Request(views[1], ablation=Ablation(((0, 1),))))  # cannot share a's forward
    b = q.submit(tiny16, Request(views[2]))  # can: taken past `apart`
    held.release.set()
    off = Ablation(((0, 1),))
    for fut, view, heads in ((a, views[0], Ablation()), (apart, views[1], off), (b, views[2], Ablation())):
        assert_same_analysis(fut.result(30), vizvit.analyze(tiny16, view, ablation=heads))
    assert held.batches == [1, 2, 1]
    assert_same_analysis(q.submit(tiny16, Request(PHOTOS[1])).result(30), vizvit.analyze(tiny16, PHOTOS[1]))


def test_a_request_whose_caller_cancelled_it_leaves_the_others_answered(tiny16):
    held = HeldForwards()
    q = ForwardQueue(max_batch=4, run_batch=held)
    q.submit(tiny16, Request(PHOTOS[0]))
    assert held.started.wait(30)
    gone = q.submit(tiny16, Request(PHOTOS[1]))
    kept = q.submit(tiny16, Request(PHOTOS[2]))
    assert gone.cancel()
    held.release.set()
    assert_same_analysis(kept.result(30), vizvit.analyze(tiny16, PHOTOS[2]))
    assert_same_analysis(q.submit(tiny16, Request(PHOTOS[1])).result(30), vizvit.analyze(tiny16, PHOTOS[1]))


def test_callers_take_turns_and_one_callers_pile_waits_behind_anothers_one_photo(tiny16):
    """The hostile caller's flood: forty forwards from one address, then another address's one photo
    waited behind all forty (19–47 s). Now the worker serves callers in turns: the other's photo goes
    next, and each caller's own requests keep their order. ahead() counts as the worker will serve."""
    held = HeldForwards()
    q = ForwardQueue(max_batch=1, run_batch=held)
    who = threading.local()
    q.caller = lambda: getattr(who, "name", None)
    order: list[str] = []

    def ask(name: str, photo, view=View()):
        who.name = name
        fut = q.submit(tiny16, Request(photo, view))
        fut.add_done_callback(lambda f: order.append(f"{name}{view.dx}"))
        return fut

    first = ask("flood", PHOTOS[0])
    assert held.started.wait(30)
    pile = [ask("flood", PHOTOS[0], View(dx=i)) for i in range(1, 6)]
    mine = ask("me", PHOTOS[1])
    later = ask("me", PHOTOS[2], View(dx=1))
    # One forward runs; then "me" (served longest ago: never) goes first, then turns alternate.
    assert q.ahead(PHOTOS[1]) == 1 and q.ahead(PHOTOS[2]) == 3
    held.release.set()
    for f in [first, mine, later, *pile]:
        f.result(30)
    assert order == ["flood0", "me0", "flood1", "me1", "flood2", "flood3", "flood4", "flood5"]
    assert_same_analysis(mine.result(), vizvit.analyze(tiny16, PHOTOS[1]))


def test_without_callers_the_worker_serves_in_order(tiny16):
    held = HeldForwards()
    q = ForwardQueue(max_batch=1, run_batch=held)
    order: list[int] = []
    q.submit(tiny16, Request(PHOTOS[0]))
    assert held.started.wait(30)
    futs = [q.submit(tiny16, Request(PHOTOS[i % 3], View(dx=i))) for i in range(5)]
    for i, f in enumerate(futs):
        f.add_done_callback(lambda _, i=i: order.append(i))
    assert q.ahead(PHOTOS[2]) == 3  # the running one, then dx=0 and dx=1 before the first with PHOTOS[2]
    held.release.set()
    for f in futs:
        f.result(30)
    assert order == [0, 1, 2, 3, 4]


def test_a_shared_forward_is_filled_by_turns_too_not_by_one_callers_pile(tiny16):
    """The turns pick who starts a forward; the requests that share it were taken in the order they came, so
    one caller's pile filled every batch beside another's one photo, and a third caller's photo waited a whole
    forward more (three of the pile's pictures in it). A forward's other places now go by the same turns:
    each waiting caller's oldest request first, then a second of each."""
    seen: list[list[str]] = []
    names = {id(PHOTOS[0]): "flood", id(PHOTOS[1]): "me", id(PHOTOS[2]): "you"}
    held = HeldForwards()

    def run(vm, requests):
        seen.append([names[id(r.image)] for r in requests])
        return held(vm, requests)

    q = ForwardQueue(max_batch=4, run_batch=run)
    who = threading.local()
    q.caller = lambda: getattr(who, "name", None)

    def ask(name: str, photo, view=View()):
        who.name = name
        return q.submit(tiny16, Request(photo, view))

    first = ask("flood", PHOTOS[0])
    assert held.started.wait(30)
    pile = [ask("flood", PHOTOS[0], View(dx=i)) for i in range(1, 7)]
    mine, yours = ask("me", PHOTOS[1]), ask("you", PHOTOS[2])
    held.release.set()
    for f in [first, *pile, mine, yours]:
        f.result(30)
    assert seen[0] == ["flood"] and sorted(seen[1]) == ["flood", "flood", "me", "you"], seen
    assert sum(len(b) for b in seen) == 9 and all(len(b) <= 4 for b in seen)
    assert_same_analysis(yours.result(), vizvit.analyze(tiny16, PHOTOS[2]))
