"""Memory under many new photos (issue 42): the real app, N distinct photos through the public API
from T threads, the server's RSS every K photos, then while it sits idle.

    python benchmarks/memory.py                                   # trained ViT-Ti, 1,000 photos, 4 threads
    python benchmarks/memory.py --model random:vit-base-patch16-224 --photos 1000
    python benchmarks/memory.py --cache-mb 256 --photo-mb 64 --photos 400 --json /tmp/mem.json
    python benchmarks/memory.py --env MALLOC_ARENA_MAX=8           # try an allocator setting

The server is `python app.py --model M --device cpu --cache-mb C --photo-mb P` in a subprocess (the
same start as hall.py and load_test.py). Each thread is its own gradio_client session and calls
/analyze on a fresh generated 640×480 photo (load_test.photo: distinct per seed), so every call is a
new upload, a new decoded photo and a new forward. The line every RSS reading is held to:

    start + cache-mb + photo-mb + overhead

where start is the RSS once the server answers (the model and the examples loaded) and overhead
the fixed allowance (--overhead-mb; docs/memory.md says what it covers and how it was measured).
Prints a markdown table (photos, RSS, RSS - start, the line) and exits 1 when any reading, or the
reading after --idle seconds, is over the line; --json writes the whole report.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]

from fakes import free_port, photo  # noqa: E402
from hall import server_log, start_server, student, tree_rss  # noqa: E402

TRAINED = os.environ.get("VIZVIT_TRAINED") or str(ROOT.parent / "shared" / "models" / "vit-tiny-augreg")
OVERHEAD_MB = 300  # the fixed allowance above start + budgets (docs/memory.md: what it is, measured)


def mb(n: int) -> float:
    return n / 2**20


def run(model: str, photos: int = 1000, threads: int = 4, every: int = 50, cache_mb: int = 1024,
        photo_mb: int = 256, overhead_mb: int = OVERHEAD_MB, idle_s: float = 30.0,
        env: Sequence[str] = (), log: Any = print, url: str = "", pid: int = 0,
        new_sessions: bool = False, stop_over: bool = False) -> dict[str, Any]:
    """Start the server (or use the one at `url`, process `pid`), send `photos` new photos from
    `threads` sessions, read RSS every `every` photos and after `idle_s` idle seconds. new_sessions:
    each photo from a new session (a lecture hall: every student a new visitor), else each thread is
    one session. stop_over: send no more photos once a reading is over the line (a test: the answer
    is known). Returns the report (see the module's docstring)."""
    from vizvit.model.catalog import Catalog

    extra_env = dict(e.split("=", 1) for e in env)
    saved = {k: os.environ.get(k) for k in extra_env}
    os.environ.update(extra_env)  # start_server passes os.environ on to the server
    folder = Path(tempfile.mkdtemp(prefix="vizvit-memory-"))
    if url:  # a server started elsewhere (e.g. under a profiler): its pid for RSS, nothing to stop
        proc = psutil.Process(pid)
    else:
        port = free_port()
        url = f"http://127.0.0.1:{port}/"
        try:
            proc = start_server(model, port, None, None, ["--cache-mb", str(cache_mb), "--photo-mb", str(photo_mb)])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    public = Catalog(model).public(model)
    report: dict[str, Any] = {"model": public, "photos": photos, "threads": threads, "cache_mb": cache_mb,
                              "photo_mb": photo_mb, "new_sessions": new_sessions, "overhead_mb": overhead_mb,
                              "env": extra_env, "rows": [], "errors": []}
    try:
        clients = [student(url) for _ in range(threads)]
        start = mb(tree_rss(proc.pid))
        line = start + cache_mb + photo_mb + overhead_mb
        report.update(rss_start_mb=round(start), line_mb=round(line))
        log(f"{public}: start {start:.0f} MB, line {line:.0f} MB (start + {cache_mb} + {photo_mb} + {overhead_mb})")
        lock = threading.Lock()
        done = [0]
        nxt = [0]
        peak = [start]
        t0 = time.perf_counter()

        def reading() -> None:
            rss = mb(tree_rss(proc.pid))
            peak[0] = max(peak[0], rss)
            row = {"photos": done[0], "rss_mb": round(rss), "over_start_mb": round(rss - start),
                   "seconds": round(time.perf_counter() - t0, 1)}
            report["rows"].append(row)
            if stop_over and rss > line:
                nxt[0] = photos  # called under `lock`: the workers take no new photo
            log(f"  {row['photos']:5d} photos  RSS {rss:7.0f} MB  (+{rss - start:.0f})  {row['seconds']} s")

        def worker(i: int) -> None:
            from gradio_client import handle_file

            c = clients[i]
            while True:
                with lock:
                    if nxt[0] >= photos:
                        return
                    seed = 7_000_000 + nxt[0]
                    nxt[0] += 1
                path = photo(seed, folder)
                try:
                    if new_sessions:  # a new visitor: a new session (connecting is part of the call)
                        c = student(url)
                    c.predict(handle_file(path), public, api_name="/analyze")
                except Exception as e:  # noqa: BLE001 - a measurement records every failure
                    with lock:
                        report["errors"].append(f"{seed}: {e!r}"[:300])
                finally:
                    os.unlink(path)
                with lock:
                    done[0] += 1
                    if done[0] % every == 0 or done[0] == photos:
                        reading()

        workers = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        while any(w.is_alive() for w in workers):  # peak between the readings too
            peak[0] = max(peak[0], mb(tree_rss(proc.pid)))
            time.sleep(0.2)
        for w in workers:
            w.join()
        report["seconds"] = round(time.perf_counter() - t0, 1)
        if idle_s > 0:
            time.sleep(idle_s)
            idle = mb(tree_rss(proc.pid))
            report["rss_idle_mb"] = round(idle)
            log(f"  after {idle_s:.0f} s idle: RSS {idle:.0f} MB (+{idle - start:.0f})")
        report["rss_peak_mb"] = round(peak[0])
        report["over_line"] = [r for r in report["rows"] if r["rss_mb"] > line]
        # Memory only: a call that timed out on a loaded machine is reported (errors), not a memory failure.
        report["ok"] = not report["over_line"] and peak[0] <= line and report.get("rss_idle_mb", 0) <= line
    except Exception:
        if not pid:
            log(server_log(proc))
        raise
    finally:
        if not pid:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except Exception:  # noqa: BLE001
                proc.kill()
    return report


def table(report: dict[str, Any]) -> str:
    """The report's readings as a markdown table."""
    start = report["rss_start_mb"]
    per_photo = ", a new session per photo" if report.get("new_sessions") else ""
    out = [f"{report['model']}, --cache-mb {report['cache_mb']} --photo-mb {report['photo_mb']}, "
           f"{report['threads']} threads{per_photo}; "
           f"line = start {start} + {report['cache_mb']} + {report['photo_mb']} + {report['overhead_mb']} "
           f"= {report['line_mb']} MB",
           "", "| photos | RSS (MB) | over start (MB) | seconds |", "|---:|---:|---:|---:|",
           f"| 0 | {start} | 0 | 0 |"]
    out += [f"| {r['photos']} | {r['rss_mb']} | {r['over_start_mb']} | {r['seconds']} |" for r in report["rows"]]
    if "rss_idle_mb" in report:
        out.append(f"| idle | {report['rss_idle_mb']} | {report['rss_idle_mb'] - start} | |")
    out.append(f"\npeak {report['rss_peak_mb']} MB (+{report['rss_peak_mb'] - start}); errors "
               f"{len(report['errors'])}; RSS {'within the line' if report['ok'] else 'OVER THE LINE'}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=TRAINED, help="default: the trained ViT-Ti ($VIZVIT_TRAINED)")
    ap.add_argument("--photos", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--every", type=int, default=50, help="read RSS every this many photos")
    ap.add_argument("--cache-mb", type=int, default=1024)
    ap.add_argument("--photo-mb", type=int, default=256)
    ap.add_argument("--overhead-mb", type=int, default=OVERHEAD_MB)
    ap.add_argument("--idle", type=float, default=30.0, help="seconds idle before the last reading")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server (repeatable)")
    ap.add_argument("--json", default="", help="write the report here")
    ap.add_argument("--new-sessions", action="store_true", help="each photo from a new session (a hall)")
    ap.add_argument("--url", default="", help="a server already running (with --pid): measure it, start none")
    ap.add_argument("--pid", type=int, default=0, help="that server's process id, for its RSS")
    args = ap.parse_args(argv)
    report = run(args.model, args.photos, args.threads, args.every, args.cache_mb, args.photo_mb, args.overhead_mb,
                 args.idle, args.env, url=args.url, pid=args.pid,
                 new_sessions=args.new_sessions)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    print(table(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
