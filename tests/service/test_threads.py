"""The process's thread and memory policy (vizvit/service/threads.py): the thread count (the environment
wins), a thread's lowered priority, glibc's free-heap reading and trim, and the trimmer that trims
only above its bound. The server's memory over hundreds of photos is tests/system/test_memory.py."""

from __future__ import annotations

import os
import threading
import time

import pytest
import torch

from vizvit.service import threads

glibc = pytest.mark.skipif(threads.malloc_free_bytes() is None, reason="not glibc >= 2.33")


def test_the_environment_wins_over_the_argument_and_torch_follows(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    try:
        monkeypatch.setenv("VIZVIT_THREADS", "1")
        assert threads.configure_threads(3) == 1 and torch.get_num_threads() == 1
        monkeypatch.delenv("VIZVIT_THREADS")
        assert threads.configure_threads(2) == 2 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_lowered_thread_runs_at_the_asked_niceness_and_others_keep_theirs():
    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    nice = max(main, 0) + 3  # above where we are: allowed without privileges
    seen = {}

    def work() -> None:
        threads.lower_priority(nice)
        seen["after"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert seen["after"] == nice  # Linux: a thread's id is a process id for setpriority
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main  # the caller only


@glibc
def test_free_heap_bytes_are_counted_and_a_trim_gives_pages_back():
    assert threads.malloc_free_bytes() >= 0 and threads.trim_malloc() in (True, False)
    blocks = [bytearray(64 << 10) for _ in range(2000)]  # 128 MB of blocks below any mmap threshold
    del blocks[::2]  # every other block freed: free holes inside the heap, not only at its top
    holes = threads.malloc_free_bytes()
    assert holes >= 50 << 20, holes  # ~64 MB freed into the heap and still held there
    threads.trim_malloc()
    assert abs(threads.malloc_free_bytes() - holes) < 4 << 20  # trim returns pages; the bytes stay free for reuse
    del blocks


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # its planned SystemExit
def test_the_trimmer_trims_only_above_its_bound(monkeypatch):
    if threads._libc() is None:
        pytest.skip("not glibc")
    free = {"bytes": 10}
    trims = []

    def reading() -> int:
        if free["bytes"] is None:
            raise SystemExit  # ends the daemon thread quietly: it must not trim for the rest of the run
        return free["bytes"]

    monkeypatch.setattr(threads, "malloc_free_bytes", reading)
    monkeypatch.setattr(threads, "trim_malloc", lambda: trims.append(free["bytes"]) or True)
    t = threads.start_trimming(every_s=0.01, above=100)
    assert t.daemon and t.name == "vizvit-malloc-trim"
    time.sleep(0.2)
    assert trims == []  # 10 bytes free: below the bound, never trimmed
    free["bytes"] = 500
    deadline = time.monotonic() + 30
    while not trims and time.monotonic() < deadline:
        time.sleep(0.01)
    assert trims and trims[0] == 500
    free["bytes"] = None
    t.join(30)
    assert not t.is_alive()


def test_one_caller_gets_every_core_and_a_crowd_one_thread_each_forward(monkeypatch):
    assert [threads.forward_threads(n, 2) for n in (0, 1, 2, 40)] == [2, 2, 1, 1]
    assert [threads.forward_threads(n, 16) for n in (1, 40)] == [16, 15]  # a crowd leaves one core to the rest
    assert threads.forward_threads(1, 0) == threads.forward_threads(9, 1) == 1  # never no thread at all
    callers = [1]
    monkeypatch.delenv("VIZVIT_THREADS", raising=False)
    policy = threads.follow_crowd(lambda: callers[0])
    cores = torch.get_num_threads()
    assert policy() == cores
    callers[0] = 3
    assert policy() == 1
    monkeypatch.setenv("VIZVIT_THREADS", "2")  # a count fixed by hand is kept
    assert threads.follow_crowd(lambda: 3) is None
