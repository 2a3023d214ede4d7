"""Abandoned costly calls: do they delay someone else? (issue 42) And a hall behind one address (issue 50).

Starts the app (this checkout's, or --repo's: run it once on the code before the change and once
after) on 127.0.0.1, then, over plain HTTP (Gradio's /gradio_api/call/<name> REST):
1. two callers each start /relevance with method "attention flow" on a new photo, read the stream for
   --abandon seconds, and close it without reading the answer;
2. a third caller runs /relevance (class relevance, one backward pass) and then /sweep, each on a new
   photo, and the seconds each takes to answer are printed (or "timed out" after --timeout);
3. meanwhile /stats is polled until no attention flow runs or waits: the seconds from the disconnects
   until then (the server's own stop latency, from a job's token set to its slot free, is in
   /stats' "recent" list as stop_s).

    python benchmarks/abandoned.py --model ../shared/models/vit-tiny-augreg
    python benchmarks/abandoned.py --model ../shared/models/vit-tiny-augreg --repo /work/main   # before
    python benchmarks/abandoned.py --distinct    # three addresses (X-Forwarded-For behind one trusted hop)
    python benchmarks/abandoned.py --never-read  # issue 50: the flows are POSTed and their streams never
                                                 # opened, from 127.0.0.2 and .3; the third is 127.0.0.4
    python benchmarks/abandoned.py --hall 6      # issue 50: six callers on 127.0.0.5 start /sweep at once
                                                 # on the same photo (each its own REST call)

Callers on 127.0.0.x bind that source address (httpx's local_address; Linux answers all of 127/8 on
loopback), so the server sees a real peer address, with no proxy and no header.

On a 2-core machine shared with others the seconds vary by load: compare runs made back to back.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_photo(folder: Path, seed: int) -> Path:
    """A photo no run has seen (so nothing is cached): an example, cropped and tinted by `seed`."""
    rng = np.random.default_rng(seed)
    img = np.asarray(Image.open(ROOT / "assets/examples/chelsea.jpg").convert("RGB"), dtype=np.float32)
    h, w, _ = img.shape
    y, x = rng.integers(0, h // 5), rng.integers(0, w // 5)
    out = np.clip(img[y:y + 4 * h // 5, x:x + 4 * w // 5] * rng.uniform(0.8, 1.2, 3), 0, 255).astype(np.uint8)
    path = folder / f"photo-{seed}.png"
    Image.fromarray(out).save(path)
    return path


class Rest:
    """Gradio's REST API as any HTTP client sees it: upload, POST /call/<name>, GET its stream."""

    def __init__(self, url: str, forwarded_for: str | None = None, local_address: str | None = None):
        self.url = url.rstrip("/")
        self.headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
        # local_address: the source address of every connection (a caller on 127.0.0.2 is another
        # address to the server than one on 127.0.0.1).
        self.http = httpx.Client(transport=httpx.HTTPTransport(local_address=local_address) if local_address else None)

    def upload(self, path: Path) -> dict:
        with open(path, "rb") as f:
            r = self.http.post(f"{self.url}/gradio_api/upload", files={"files": (path.name, f, "image/png")},
                               headers=self.headers, timeout=60)
        r.raise_for_status()
        return {"path": r.json()[0], "meta": {"_type": "gradio.FileData"}}

    def start(self, name: str, data: list) -> str:
        r = self.http.post(f"{self.url}/gradio_api/call/{name}", json={"data": data}, headers=self.headers, timeout=60)
        r.raise_for_status()
        return r.json()["event_id"]

    def answer(self, name: str, event_id: str, timeout: float) -> tuple[str, object]:
        """Read the stream to its end: ("complete" | "error", data), or ("timed out", None) once
        `timeout` seconds have passed (seen at the next line: heartbeats come every 15 s)."""
        kind = None
        deadline = time.perf_counter() + timeout
        with self.http.stream("GET", f"{self.url}/gradio_api/call/{name}/{event_id}", headers=self.headers,
                          timeout=httpx.Timeout(timeout)) as r:
            for line in r.iter_lines():
                if time.perf_counter() > deadline:
                    return "timed out", None
                if line.startswith("event:"):
                    kind = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and kind in ("complete", "error"):
                    return kind, json.loads(line[5:])
        return "closed", None

    def abandon(self, name: str, event_id: str, after: float) -> None:
        """Open the answer's stream, then drop the connection after `after` seconds unread."""
        try:
            with self.http.stream("GET", f"{self.url}/gradio_api/call/{name}/{event_id}", headers=self.headers,
                              timeout=httpx.Timeout(after)) as r:
                for _ in r.iter_lines():
                    pass
        except httpx.TimeoutException:
            pass

    def call(self, name: str, data: list, timeout: float) -> tuple[str, object, float]:
        """(outcome, data, seconds): 'complete', 'error' or 'timed out' after `timeout` s."""
        t0 = time.perf_counter()
        try:
            kind, out = self.answer(name, self.start(name, data), timeout)
        except httpx.TimeoutException:
            kind, out = "timed out", None
        return kind, out, time.perf_counter() - t0

    def stats(self) -> dict:
        _, out, _ = self.call("stats", [], 30)
        return out[0] if isinstance(out, list) and out else {}


def flows_running(stats: dict) -> int | None:
    """Attention-flow jobs running or waiting, per /stats (None: this version's /stats does not say)."""
    c = stats.get("costly")
    return None if c is None else sum(j["job"] == "attention flow" for j in (*c["running"], *c["waiting"]))


def flows_seen(stats: dict) -> int:
    """Attention-flow jobs running, waiting or ended, per /stats."""
    c = stats.get("costly") or {}
    return sum(j["job"] == "attention flow" for k in ("running", "waiting", "recent") for j in c.get(k, ()))


def watch_flows(rest: Rest, since: float, settle_s: float, out: dict) -> None:
    """Poll /stats from the disconnects until no flow runs or waits: out["flows_gone_after_s"]."""
    out["flows_gone_after_s"] = None
    while time.perf_counter() - since < settle_s:
        n = flows_running(rest.stats())
        if n is None:
            return
        if n == 0:
            out["flows_gone_after_s"] = round(time.perf_counter() - since, 2)
            return
        time.sleep(0.1)


def serve(repo: Path, model: str, port: int, log: Path, env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "app.py", "--model", str(Path(model).resolve()), "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=repo, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + "/gradio_api/info", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"the server exited; see {log}")
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not start in 300 s")


def run(url: str, model_name: str, folder: Path, abandon_s: float, timeout: float,
        distinct: bool = False, settle_s: float = 60.0) -> dict:
    """The scenario against a running server; returns the numbers. distinct: each caller sends its
    own X-Forwarded-For (for a server started with VIZVIT_PROXY_HOPS=1), else all are 127.0.0.1."""
    gone = [Rest(url, "198.51.100.1" if distinct else None), Rest(url, "198.51.100.2" if distinct else None)]
    third = Rest(url, "198.51.100.3" if distinct else None)
    events = []
    for i, c in enumerate(gone):
        photo = c.upload(new_photo(folder, 100 + i))
        events.append((c, c.start("relevance", [photo, model_name, -1, "attention flow", ""])))
    threads = [threading.Thread(target=c.abandon, args=("relevance", e, abandon_s)) for c, e in events]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t_gone = time.perf_counter()
    out: dict = {"abandon_s": abandon_s}
    # Another caller watches /stats from the disconnects, while the third caller makes its calls.
    watcher = threading.Thread(target=watch_flows, args=(Rest(url, "198.51.100.4" if distinct else None), t_gone,
                                                          settle_s, out))
    watcher.start()
    photo = third.upload(new_photo(folder, 200))
    kind, data, s = third.call("relevance", [photo, model_name, -1, "class relevance", ""], timeout)
    out["relevance"] = {"outcome": kind, "seconds": round(s, 2)}
    kind, data, s = third.call("sweep", [third.upload(new_photo(folder, 201)), model_name, ""], timeout)
    out["sweep"] = {"outcome": kind, "seconds": round(s, 2),
                    "error": data if kind == "error" else None}
    watcher.join()
    final = third.stats()
    out["stats"] = final.get("costly")
    return out


def never_read(url: str, model_name: str, folder: Path, timeout: float, settle_s: float = 60.0) -> dict:
    """Issue 50: two attention flows POSTed from 127.0.0.2 and 127.0.0.3, their streams never opened;
    then a third address (127.0.0.4) runs /sweep on a new photo: its outcome and seconds, and the
    seconds from the POSTs until /stats shows no flow running or waiting."""
    gone = [Rest(url, local_address="127.0.0.2"), Rest(url, local_address="127.0.0.3")]
    for i, c in enumerate(gone):
        c.start("relevance", [c.upload(new_photo(folder, 300 + i)), model_name, -1, "attention flow", ""])
    t_posted = time.perf_counter()
    out: dict = {}
    # As in the issue, the third caller comes once both flows have reached the costly jobs (a flow
    # first runs the photo's forward to check its size, seconds on a loaded server).
    looker = Rest(url, local_address="127.0.0.6")
    while time.perf_counter() - t_posted < settle_s and flows_seen(looker.stats()) < len(gone):
        time.sleep(0.1)
    out["flows_in_jobs_after_s"] = round(time.perf_counter() - t_posted, 2)
    watcher = threading.Thread(target=watch_flows, args=(looker, t_posted, settle_s, out))
    watcher.start()
    third = Rest(url, local_address="127.0.0.4")
    kind, data, s = third.call("sweep", [third.upload(new_photo(folder, 301 + len(gone))), model_name, ""], timeout)
    out["sweep"] = {"outcome": kind, "seconds": round(s, 2), "since_posts_s": round(time.perf_counter() - t_posted, 2),
                    "error": data if kind == "error" else None}
    watcher.join()
    out["stats"] = third.stats().get("costly")
    return out


def hall(url: str, model_name: str, folder: Path, n: int, timeout: float, address: str = "127.0.0.5",
         same_photo: bool = True) -> dict:
    """Issue 50: n callers on one address start /sweep at once on the same photo (each uploads it and
    makes its own REST call: its own session), or each on its own (same_photo=False: n sweeps to
    compute, not one). Each one's outcome and seconds."""
    photos = [new_photo(folder, 400 + (0 if same_photo else i)) for i in range(n)]
    callers = [Rest(url, local_address=address) for _ in range(n)]
    files = [c.upload(p) for c, p in zip(callers, photos)]
    results: list = [None] * n
    go = threading.Barrier(n)

    def one(i: int) -> None:
        go.wait()
        kind, data, s = callers[i].call("sweep", [files[i], model_name, ""], timeout)
        results[i] = {"outcome": kind, "seconds": round(s, 2), "error": data if kind == "error" else None}

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"callers": n, "complete": sum(r["outcome"] == "complete" for r in results), "each": results}


def load() -> list[float]:
    """The load average (1, 5, 15 min), for the report: a loaded shared machine's seconds vary."""
    return [round(x, 1) for x in os.getloadavg()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=str(ROOT.parent / "shared/models/vit-tiny-augreg"))
    ap.add_argument("--repo", default=str(ROOT), help="the checkout whose app.py to run (e.g. the code before)")
    ap.add_argument("--abandon", type=float, default=5.0, help="seconds each flow's caller stays")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds the third caller waits per call")
    ap.add_argument("--distinct", action="store_true",
                    help="each caller its own address (X-Forwarded-For, the server trusting one proxy hop)")
    ap.add_argument("--never-read", action="store_true",
                    help="issue 50: the flows' streams are never opened; callers on 127.0.0.2-.4")
    ap.add_argument("--hall", type=int, default=0, help="issue 50: this many callers on one address run /sweep")
    ap.add_argument("--own-photos", action="store_true", help="with --hall: each caller its own photo (n sweeps)")
    args = ap.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        proc = serve(Path(args.repo), args.model, port, folder / "server.log",
                     {"VIZVIT_PROXY_HOPS": "1"} if args.distinct else None)
        try:
            url, name = f"http://127.0.0.1:{port}", Path(args.model).name
            load_before = load()
            if args.hall:
                res = hall(url, name, folder, args.hall, args.timeout, same_photo=not args.own_photos)
            elif args.never_read:
                res = never_read(url, name, folder, args.timeout)
            else:
                res = run(url, name, folder, args.abandon, args.timeout, args.distinct)
            res["load_avg"] = {"before": load_before, "after": load()}
        finally:
            proc.kill()
            proc.wait()
    print(json.dumps({"repo": args.repo, "model": args.model, **res}, indent=1))


if __name__ == "__main__":
    main()
