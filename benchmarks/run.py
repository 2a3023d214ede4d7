"""vizvit speed and memory, as ratios to one bare forward measured in the same run.

    python benchmarks/run.py                 # ViT-B/16 architecture (random weights), CPU
    python benchmarks/run.py --device cuda   # on a GPU
    python benchmarks/run.py --quick         # fewer repeats, skip ViT-L/16@384 and cold start

Machines here are shared and noisy, so absolute seconds mean little; ratios measured in
one run do. Every figure: median and spread (min–max) over repeats, and median / bare
forward. Budgets (issue 8) are checked at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from vizvit.service.threads import configure_threads  # noqa: E402

configure_threads()

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from timing import times_s  # noqa: E402

import vizvit  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402
from vizvit.views import patches as panels  # noqa: E402

EXAMPLE = ROOT / "assets" / "examples" / "chelsea.jpg"


def encode(img: np.ndarray, fmt: str = "JPEG") -> bytes:
    """What Gradio does with every returned image (gr.Image format="jpeg" for photos)."""
    buf = io.BytesIO()
    pic = Image.fromarray(img)
    # A picture with an alpha channel (the Positions tiles) cannot be a JPEG: Gradio sends it as PNG.
    pic.save(buf, "PNG" if pic.mode == "RGBA" and fmt == "JPEG" else fmt)
    return buf.getvalue()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


class Bench:
    def __init__(self, repeat: int):
        self.repeat = repeat
        self.rows: list[tuple[str, list[float]]] = []
        self.forward = float("nan")
        self.speedups: dict[str, float] = {}

    def add(self, name: str, fn: Callable[[], object], repeat: int | None = None, warmup: int = 1) -> float:
        ts = times_s(fn, repeat or self.repeat, warmup)
        self.rows.append((name, ts))
        return statistics.median(ts)

    def report(self) -> list[dict]:
        out = []
        for name, ts in self.rows:
            med = statistics.median(ts)
            out.append({"what": name, "median_ms": 1000 * med, "min_ms": 1000 * min(ts), "max_ms": 1000 * max(ts),
                        "ratio": med / self.forward, "n": len(ts)})
        return out


def event_benchmarks(b: Bench, wb: Workbench, key: PhotoKey) -> None:
    """Every interactive event kind, through the panel functions the handlers call, with
    the returned images encoded as Gradio does (JPEG for photo overlays). Derived caches
    (rollout stacks, PCA, position grids) are warmed first: their one-off cost per photo
    is reported separately as "first open"."""
    from dataclasses import replace

    from vizvit import vocab
    from vizvit.readings import attention as ra, embeddings as emb
    from vizvit.views import attention as ap, embeddings as ep, experiments, positions as positions_panel

    vm = wb.model(key.model_id)
    a = wb.analysis(key)
    g = vm.geometry
    cache = functools.partial(wb.derived, key)
    base = ra.AttnParams(layer=g.num_layers)

    b.add("first open: Attention tab (rollout stack, distances)",
          lambda: ship(ap.attention_page(vm, a, base, cache)), repeat=1, warmup=0)
    b.add("first open: Embeddings tab (PCA per depth, filters)",
          lambda: wb.derived(key, "embeddings", lambda: emb.prepare(vm, a)), repeat=1, warmup=0)
    b.add("first open: Positions tab (per model)",
          lambda: ship(positions_panel.positions_panel(wb.handle(key))), repeat=1, warmup=0)
    ap.attention_view(vm, a, replace(base, mode="rolled out", discard=0.5), cache)  # warm the rolled stacks

    b.add("event: grid lines / patch numbers toggle / patch click",
          lambda: encode(panels.patch_grid(vm, a, True, True, (3, 4))))
    layers = iter(range(10**6))
    b.add("event: attention layer slider",
          lambda: ship(ap.attention_view(vm, a, replace(base, layer=next(layers) % g.num_layers + 1), cache)))
    one_head = replace(base, show=vocab.ONE_HEAD, head=2)
    b.add("event: attention head", lambda: ship(ap.attention_view(vm, a, one_head, cache)))
    b.add("event: attention fusion (max)", lambda: ship(ap.attention_view(vm, a, replace(base, show="max"), cache)))
    b.add("event: rollout discard ratio (cached)",
          lambda: ship(ap.attention_view(vm, a, replace(base, mode="rolled out", discard=0.5), cache)))
    b.add("event: query-patch click", lambda: ship(ap.attention_view(vm, a, replace(base, query=(3, 4)), cache)))
    d = wb.derived(key, "embeddings", lambda: emb.prepare(vm, a))
    depths = iter(range(10**6))

    # The page answers a depth move in two events: the pictures first, then the scatter.
    b.add("event: embeddings depth slider, pictures", lambda: ship(
        ep.depth_panel(vm, a, d, l_ := next(depths) % (g.num_layers + 1), (3, 4)),
        ep.similarity_panel(vm, a, d, l_, (3, 4))))
    b.add("event: embeddings depth slider, then the scatter",
          lambda: ship(ep.scatter_figure(vm, d, next(depths) % (g.num_layers + 1), "row")))
    mp = positions_panel.cached_model_positions(wb.handle(key))
    tile = g.grid[1] * mp.cell + positions_panel.SEP
    b.add("event: position-tile click",
          lambda: ship(positions_panel.click_tile(wb.handle(key), 5 * tile + 3, 2 * tile + 3)))
    mask = (3, 17, 40)
    experiments.mask_panel(wb.handle(key), mask, "drop")
    b.add("event: mask toggle (view cached)",
          lambda: (experiments.toggle_at(wb.handle(key), mask, 100.0, 100.0),
                   ship(experiments.mask_panel(wb.handle(key), mask, "drop"))))
    experiments.shift_panel(wb.handle(key), 5, 0, "edge")
    b.add("event: shift that hits the cache", lambda: ship(experiments.shift_panel(wb.handle(key), 5, 0, "edge")))


def ship(*outs: object) -> None:
    """Encode what a handler returns, as Gradio would: arrays as JPEG, figures as JSON."""
    for o in outs:
        if isinstance(o, np.ndarray) and o.ndim == 3:
            encode(o)
        elif hasattr(o, "to_json"):
            o.to_json()
        elif dataclasses.is_dataclass(o):
            ship(*(getattr(o, f.name) for f in dataclasses.fields(o)))
        elif isinstance(o, (tuple, list)):
            ship(*o)


def sweep_benchmarks(b: Bench, wb: Workbench, key: PhotoKey) -> None:
    """The shift sweep batched (as the page streams it) vs one analyze() per shift, and
    the position grid vs the per-pair cosine loop."""
    from bench_positions import grid_ours, sim_pair_loop

    from vizvit.readings import perturb

    vm = wb.model(key.model_id)
    view = wb.analysis(key).input_view
    n = 2 * vm.geometry.patch_size + 1
    batched = b.add(f"shift sweep, {n} views, batched (progressive)", lambda: perturb.shift_sweep(vm, view),
                    repeat=1)
    single = b.add(f"shift sweep, {n} views, one analyze() each",
                   lambda: [vizvit.analyze(vm, view, vizvit.View(dx=k)) for k in range(n)], repeat=1, warmup=0)
    b.speedups["shift sweep: batched vs one by one"] = single / batched
    ours = b.add("position grid: one matmul + one image", lambda: grid_ours(vm))
    loop = b.add("position grid: per-pair cosine loop (tutorial)", lambda: sim_pair_loop(vm), repeat=1, warmup=0)
    b.speedups["position grid vs per-pair loop (goal >= 100x)"] = loop / ours


def cold_start(model: str) -> float:
    """Process start -> the page answers, for `python app.py --model MODEL`."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--model", model, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
                return time.perf_counter() - t0
            except OSError:
                if proc.poll() is not None or time.perf_counter() - t0 > 300:
                    return float("nan")
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


LARGE_SNIPPET = """
import resource, sys, time
sys.path.insert(0, {root!r})
import vizvit
vm = vizvit.load_model("random:vit-large-patch16-384", device={device!r})
img = vizvit.load_image({example!r})
vizvit.analyze(vm, img)
t0 = time.perf_counter(); a = vizvit.analyze(vm, img); dt = time.perf_counter() - t0
print(dt, a.attentions.dtype, a.nbytes, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def large_model(device: str) -> dict:
    """ViT-L/16 at 384 px in a fresh process: forward time and peak RSS."""
    code = LARGE_SNIPPET.format(root=str(ROOT), device=device, example=str(EXAMPLE))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if r.returncode != 0:
        return {"error": r.stderr[-500:]}
    dt, dtype, nbytes, maxrss = r.stdout.split()[-4:]
    return {"forward_s": float(dt), "attention_dtype": dtype, "analysis_mb": int(nbytes) / 2**20,
            "peak_rss_gb": int(maxrss) / 2**20}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="random:vit-base-patch16-224")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--browser", action="store_true",
                    help="also time the real page in Chromium "
                         "(benchmarks/browser_latency.py: action -> picture painted)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    repeat = 3 if args.quick else args.repeat

    wb = Workbench(device=args.device)
    vm = wb.model(args.model)
    dev = vm.device
    image = vizvit.load_image(EXAMPLE)
    photo_bytes = EXAMPLE.read_bytes()
    pixels = vizvit.model.images.to_pixel_values(vizvit.model_input_view(image, vm.preprocess), vm.preprocess).to(dev)
    b = Bench(repeat)

    def bare() -> None:
        with torch.inference_mode():
            vm.model(pixels, output_attentions=True, output_hidden_states=True)
        sync(dev)

    b.forward = b.add("bare forward (eager, attentions + hidden states)", bare, warmup=2)

    def upload() -> None:
        wb.cache.clear()
        sha1 = wb.add_photo(photo_bytes)
        k = PhotoKey(vm.id, sha1)
        a = wb.analysis(k)
        p = panels.patches_panel(vm, a)
        encode(p.grid), encode(p.strip), p.top5.to_json() if p.top5 else None

    b.add("upload -> first tab (decode, forward, panels, image + plot encoding)", upload)
    key = PhotoKey(vm.id, wb.add_photo(photo_bytes))
    wb.analysis(key)
    event_benchmarks(b, wb, key)
    if not args.quick:
        sweep_benchmarks(b, wb, key)

    shifts = iter(range(1, 10_000))
    b.add("shift that misses the cache (one forward)",
          lambda: wb.analysis(key, vizvit.View(dx=next(shifts) % 32 - 16 or 1)), warmup=0)
    results = {"model": vm.id, "device": str(dev), "threads": torch.get_num_threads(), "rows": b.report(),
               "speedups": b.speedups}
    if not args.quick:
        try:
            import gradio  # noqa: F401  (the page; absent on a bare GPU box)

            results["cold_start_s"] = cold_start(args.model)
        except ImportError:
            pass
        results["large"] = large_model(args.device)
    results["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    results["cache_mb"] = wb.cache.nbytes / 2**20

    print(f"{'what':<72} {'median ms':>10} {'min–max ms':>16} {'× forward':>10}")
    for r in results["rows"]:
        print(f"{r['what']:<72} {r['median_ms']:>10.1f} {r['min_ms']:>7.1f}–{r['max_ms']:<8.1f} {r['ratio']:>10.3f}")
    for k in ("cold_start_s", "large", "peak_rss_gb", "cache_mb", "device", "threads"):
        if k in results:
            print(f"{k}: {results[k]}")
    print(budgets(results))
    if args.browser:
        import browser_latency

        print("\nin the browser (action -> new picture painted; its own bare forward, same process):")
        results["browser"] = browser_latency.run(argparse.Namespace(
            model=args.model, app=str(ROOT / "app.py"), repeat=repeat, forward_repeat=5, skip_minimal=False))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


def budgets(results: dict) -> str:
    """Issue 8's budgets, as PASS/MISS lines."""
    rows = {r["what"]: r for r in results["rows"]}
    lines = ["budgets:"]
    up = next(r for k, r in rows.items() if k.startswith("upload"))
    verdict = "PASS" if up["ratio"] <= 1.3 else "MISS"
    lines.append(f"  upload -> first tab {up['ratio']:.2f}x forward (<= 1.3): {verdict}")
    events = [r for k, r in rows.items() if k.startswith("event:")]  # none of these runs a forward
    worst = max(events, key=lambda r: r["ratio"])
    lines.append(f"  events without a forward: worst {worst['ratio']:.3f}x ({worst['what']}) (<= 0.05): "
                 f"{'PASS' if worst['ratio'] <= 0.05 else 'MISS'}")
    for k, v in results["speedups"].items():
        lines.append(f"  {k}: {v:.1f}x")
    if "large" in results and "peak_rss_gb" in results["large"]:
        gb = results["large"]["peak_rss_gb"]
        lines.append(f"  ViT-L/16@384 peak RSS {gb:.2f} GB (<= 3): {'PASS' if gb <= 3 else 'MISS'}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
