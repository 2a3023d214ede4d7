"""Load test: the real app on 127.0.0.1, many sessions at once, a burst past the queue,
and memory after many distinct uploads.

    python benchmarks/load_test.py                     # tiny local ViT, 6 clients, 20 s
    python benchmarks/load_test.py --model random:vit-base-patch16-224 --clients 8 --seconds 60

Prints p50/p95 per event kind, errors, the burst's outcome, and RSS before and after.
Exits 1 on any error in the steady phase, any burst answer other than success or
"queue full", an unhealthy server afterwards, or RSS over budget + margin.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fakes import free_port, photo  # noqa: E402


def start_server(model: str, port: int, cache_mb: int, photo_mb: int, queue: int, conc: int) -> subprocess.Popen:
    """app.py as a subprocess with these budgets (hall.py starts it; its stderr goes to a file)."""
    from hall import start_server as start_app

    return start_app(model, port, queue, conc, ["--cache-mb", str(cache_mb), "--photo-mb", str(photo_mb)])


def rss_mb(proc: subprocess.Popen) -> float:
    return psutil.Process(proc.pid).memory_info().rss / 2**20


def steady(url: str, model: str, clients: int, seconds: float, folder: Path) -> tuple[dict, list[str]]:
    """Each client: its own session; upload a photo, then move controls, until time is up."""
    from gradio_client import Client, handle_file

    times: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.time() + seconds

    def one(i: int) -> None:
        rnd = random.Random(i)
        try:
            c = Client(url, verbose=False)
        except Exception as e:  # noqa: BLE001 - a load test records every failure
            with lock:
                errors.append(f"client {i} connect: {e!r}")
            return
        n = 0
        while time.time() < stop:
            n += 1
            mine = handle_file(photo(i * 10_000 + n, folder))
            calls = [("upload", lambda mine=mine: c.predict(mine, model, api_name="/analyze"))]
            # Controls on the cached analysis (no forward): the attention map of another head.
            calls += [("attention", lambda mine=mine: c.predict(mine, model, layer=1, head=rnd.choice([1, 2, "mean"]),
                                                                 api_name="/attention"))] * 4
            for kind, call in calls:
                t0 = time.perf_counter()
                try:
                    call()
                except Exception as e:  # noqa: BLE001
                    with lock:
                        errors.append(f"{kind}: {e!r}"[:300])
                    continue
                with lock:
                    times[kind].append(time.perf_counter() - t0)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = {k: {"n": len(v), "p50_ms": 1000 * statistics.median(v),
                 "p95_ms": 1000 * float(np.percentile(v, 95))} for k, v in times.items()}
    return stats, errors


def burst(url: str, model: str, n: int, folder: Path) -> dict:
    """n submissions at the same instant from n sessions: each must succeed or be told
    'queue full' (never a 5xx or a hang)."""
    from gradio_client import Client, handle_file

    clients = [Client(url, verbose=False) for _ in range(n)]
    files = [handle_file(photo(900_000 + i, folder)) for i in range(n)]
    outcome: dict[str, int] = defaultdict(int)
    other: list[str] = []
    lock = threading.Lock()
    go = threading.Barrier(n)

    def one(i: int) -> None:
        go.wait()
        try:
            clients[i].predict(files[i], model, api_name="/analyze")
            kind = "ok"
        except Exception as e:  # noqa: BLE001
            msg = str(e)
            kind = "queue_full" if "queue is full" in msg.lower() or "queue full" in msg.lower() else "other"
            if kind == "other":
                with lock:
                    other.append(msg[:200])
        with lock:
            outcome[kind] += 1

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {**outcome, "other_messages": other[:5]}


def uploads(url: str, model: str, n: int, folder: Path) -> float:
    from gradio_client import Client, handle_file

    c = Client(url, verbose=False)
    t0 = time.perf_counter()
    for i in range(n):
        c.predict(handle_file(photo(500_000 + i, folder)), model, api_name="/analyze")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="", help="default: a tiny ViT built here")
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--burst", type=int, default=40)
    ap.add_argument("--queue-size", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--uploads", type=int, default=200)
    ap.add_argument("--cache-mb", type=int, default=64)
    ap.add_argument("--photo-mb", type=int, default=64)
    ap.add_argument("--margin-mb", type=int, default=700, help="allowed RSS above the budgets")
    args = ap.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="vizvit-load-"))
    model = args.model
    if not model:
        from tiny import make_tiny_vit

        model = str(make_tiny_vit(folder / "tiny", 224, 16))
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = start_server(model, port, args.cache_mb, args.photo_mb, args.queue_size, args.concurrency)
    from vizvit.model.catalog import Catalog

    model = Catalog(model).public(model)  # the name the page lists it under (a local folder: its name)
    report: dict = {"model": model}
    try:
        report["rss_start_mb"] = rss_mb(proc)
        report["steady"], errors = steady(url, model, args.clients, args.seconds, folder)
        report["steady_errors"] = len(errors)
        report["steady_error_samples"] = errors[:5]
        report["burst"] = burst(url, model, args.burst, folder)
        from gradio_client import Client, handle_file

        Client(url, verbose=False).predict(handle_file(photo(1, folder)), model, api_name="/analyze")
        report["healthy_after_burst"] = True
        report["rss_before_uploads_mb"] = rss_mb(proc)
        report["uploads_seconds"] = uploads(url, model, args.uploads, folder)
        report["rss_after_uploads_mb"] = rss_mb(proc)
        report["budget_mb"] = args.cache_mb + args.photo_mb
        report["rss_limit_mb"] = report["rss_start_mb"] + args.cache_mb + args.photo_mb + args.margin_mb
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(json.dumps(report, indent=2))
    ok = (report["steady_errors"] == 0 and report["burst"].get("other", 0) == 0
          and report.get("healthy_after_burst") and report["rss_after_uploads_mb"] <= report["rss_limit_mb"])
    print("load test:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
