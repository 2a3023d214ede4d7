"""Where a server process spends its CPU: py-spy samples it from outside, this module sums the samples.

    rec = Recorder(pid).start()      # py-spy record --pid P --nonblocking --format raw (collapsed stacks)
    ...                              # the work to profile
    top = summarize(rec.stop(), cpu_s=server_cpu_s)
    print(report(top))

py-spy (PyPI `py-spy`, a Rust binary) reads the process's memory without stopping it (--nonblocking)
and, by default, only samples threads the OS says are running: a thread parked on a lock or in
epoll is not counted, one waiting for a core is. Each sample is one thread's stack, so the shares
below are of "thread-seconds on a core or waiting for one", spread over the measured CPU seconds.
No py-spy: Recorder.available() is False and the caller says so instead of a profile.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# Leaves where a thread waits (a lock, a queue, epoll, a sleep): py-spy counts one as running while it
# is runnable, woken and waiting for a core, which on a loaded 2-core machine is often. Left out of the
# shares and reported apart ("waiting"): they are not the work that costs the CPU.
WAITS = ("Condition.wait (threading.py)", "Event.wait (threading.py)", "select (selectors.py)",
         "Blocks.block_thread (gradio/blocks.py)", "sleep (")
RATE_HZ = 100  # samples a second per thread: py-spy's own cost stays ~1 % of a core at this rate
_LINE = re.compile(r":\d+\)$")  # "f (file.py:12)" -> "f (file.py)": a function, not a line


def py_spy() -> str | None:
    """The py-spy executable: beside this Python (a venv's bin), else on PATH, else None."""
    here = Path(sys.executable).with_name("py-spy")
    return str(here) if here.exists() else shutil.which("py-spy")


@dataclass(frozen=True)
class Entry:
    """One function: its share of the samples and the CPU seconds that share stands for."""

    function: str  # "name (path/to/file.py)"
    share: float  # of all samples, 0..1
    cpu_s: float  # share × the measured CPU seconds


@dataclass(frozen=True)
class Profile:
    """The summed samples: top functions by self time (the leaf of a stack), by total time (anywhere on
    the stack; each function counted once per stack), and by the package of the leaf."""

    samples: int  # counted (the waiting ones left out)
    cpu_s: float
    waiting: float  # share of all samples whose leaf is a wait (WAITS), left out
    self_top: tuple[Entry, ...]
    total_top: tuple[Entry, ...]
    packages: tuple[Entry, ...]


def frames(line: str) -> tuple[list[str], int]:
    """One line of py-spy's raw (collapsed) output, "a (f.py:1);b (g.py:2) 7" -> (["a (f.py)", "b (g.py)"], 7)."""
    stack, _, count = line.rstrip().rpartition(" ")
    return [_LINE.sub(")", f) for f in stack.split(";") if f], int(count)


def package(frame: str) -> str:
    """The top package of a frame's file: "forward (torch/nn/modules/linear.py)" -> "torch"; a file of
    the repository (vizvit/, page/, app.py) keeps its folder; the standard library is "stdlib"."""
    m = re.search(r"\(([^()]*)\)$", frame)
    path = m.group(1) if m else ""
    if "site-packages/" in path:
        path = path.split("site-packages/")[-1]
    head = path.split("/")[0] if "/" in path else path
    if path.startswith("<") or head.endswith(".py") and head not in ("app.py", "gradio_patch.py"):
        return "stdlib"  # <frozen ...>, threading.py, selectors.py: py-spy names the stdlib's files bare
    return head.removesuffix(".py") or "?"


def summarize(raw: str, cpu_s: float, top: int = 15, skip: tuple[str, ...] = (),
              waits: tuple[str, ...] = WAITS) -> Profile:
    """Sum py-spy's raw output. Stacks holding any of `skip` (e.g. a warm-up's function) are left out,
    and those whose leaf is one of `waits` (counted apart as Profile.waiting)."""
    self_c: Counter[str] = Counter()
    total: Counter[str] = Counter()
    pkgs: Counter[str] = Counter()
    n = waited = 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        fr, c = frames(line)
        if not fr or any(s in f for s in skip for f in fr):
            continue
        if any(w in fr[-1] for w in waits):
            waited += c
            continue
        n += c
        self_c[fr[-1]] += c
        pkgs[package(fr[-1])] += c
        for f in set(fr):
            total[f] += c

    def entries(counter: Counter[str], k: int) -> tuple[Entry, ...]:
        return tuple(Entry(f, c / n, cpu_s * c / n) for f, c in counter.most_common(k)) if n else ()

    waited_share = waited / (n + waited) if n + waited else 0.0
    return Profile(n, cpu_s, waited_share, entries(self_c, top), entries(total, top * 3), entries(pkgs, 10))


def report(p: Profile, per: int = 1, per_name: str = "") -> str:
    """Three short tables; `per` > 1 adds each line's CPU seconds divided by it (e.g. a student)."""
    if not p.samples:
        return "no samples"
    unit = f" (s per {per_name})" if per > 1 else ""

    def rows(title: str, es: tuple[Entry, ...]) -> list[str]:
        out = [f"{title}: share, CPU s{unit}"]
        for e in es:
            extra = f" ({e.cpu_s / per:.4f})" if per > 1 else ""
            out.append(f"  {e.share:6.1%}  {e.cpu_s:6.2f}{extra}  {e.function}")
        return out

    return "\n".join([f"{p.samples} samples over {p.cpu_s:.2f} CPU s ({p.waiting:.0%} more were waits, left out)",
                      *rows("by package (of the running function)", p.packages),
                      *rows("by function, self", p.self_top),
                      *rows("by function, total (with what it calls)", p.total_top)])


class Recorder:
    """py-spy record on one process, from start() to stop(); stop() returns its raw output ("" if none)."""

    def __init__(self, pid: int, rate: int = RATE_HZ, exe: str | None = None):
        self.pid, self.rate, self.exe = pid, rate, exe or py_spy()
        self.proc: subprocess.Popen | None = None
        fd, out = tempfile.mkstemp(prefix="vizvit-spy-", suffix=".txt")
        os.close(fd)  # py-spy writes it
        self.out = Path(out)
        self.error = ""

    def available(self) -> bool:
        return self.exe is not None

    def start(self) -> Recorder:
        if self.exe is None:
            self.error = "py-spy not found (pip install py-spy)"
            return self
        cmd = [self.exe, "record", "--pid", str(self.pid), "--rate", str(self.rate), "--format", "raw",
               "--nonblocking", "--output", str(self.out)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)  # attached (or refused: no ptrace permission) before the work starts
        if self.proc.poll() is not None:
            self.error = f"py-spy could not attach: {self.proc.stderr.read().strip()[-300:]}"
        return self

    def stop(self, timeout: float = 30.0) -> str:
        """SIGINT (py-spy then writes its file) and read the file."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.error = "py-spy did not stop in time"
        try:
            return self.out.read_text()
        except OSError:
            return ""
        finally:
            try:
                os.unlink(self.out)
            except OSError:
                pass
