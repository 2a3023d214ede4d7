"""Experiments tab speed, as ratios to ONE forward pass of random:vit-base-patch16-224.

    python benchmarks/bench_experiments.py [--device cpu|cuda] [--chunk 8]

Measures: the shift sweep (2P+1 = 33 views) batched vs one analyze() per view; the
deletion/insertion curves (3 maps, 10 steps, batched); and the server-side work of the
interactive events: a mask toggle and a shift whose view is already cached (no forward),
and a mask toggle that needs its one forward.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import median_s  # noqa: E402

import vizvit  # noqa: E402  (sets the thread policy before torch loads)
from vizvit.model.images import View  # noqa: E402
from vizvit.readings import methods, perturb  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402
from vizvit.views import experiments  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--chunk", type=int, default=perturb.DEFAULT_CHUNK)
    args = ap.parse_args()
    wb = Workbench(cache_bytes=2 << 30, device=args.device)
    model_id = "random:vit-base-patch16-224"
    vm = wb.model(model_id)
    key = PhotoKey(model_id, wb.add_photo(ROOT / "assets" / "examples" / "chelsea.jpg"))
    image = wb.photo(key.sha1)
    base = wb.analysis(key)
    view = base.input_view
    vizvit.analyze(vm, image)  # warm-up
    one = median_s(lambda: vizvit.analyze(vm, view, View(dx=1)), 5)
    print(f"device {vm.device} · one forward (analyze) {one * 1000:.0f} ms")

    n = 2 * vm.geometry.patch_size + 1
    perturb.shift_sweep(vm, view, chunk=args.chunk)  # warm-up of the batched path
    batched = median_s(lambda: perturb.shift_sweep(vm, view, chunk=args.chunk), 2)
    single = median_s(lambda: [vizvit.analyze(vm, view, View(dx=k)) for k in range(n)], 1)
    print(f"shift sweep, {n} views: batched {batched:.2f} s ({batched / one:.1f}× a forward) · "
          f"one by one {single:.2f} s ({single / one:.1f}×) · batched / one-by-one = {batched / single:.2f}")

    maps = methods.ranking_maps(vm, base, names=("rollout", "last-layer [CLS] attention", "random"))
    t_curves = median_s(lambda: perturb.faithfulness_curves(vm, view, maps, steps=10, chunk=args.chunk), 1)
    c = perturb.faithfulness_curves(vm, view, maps, steps=10, chunk=args.chunk)
    print(f"deletion + insertion curves, {len(maps)} maps × 11 steps = {c.forwards} distinct views: "
          f"{t_curves:.2f} s ({t_curves / one:.1f}× a forward, {t_curves / c.forwards / one:.2f}× per view)")

    mask = (3, 17, 40)
    experiments.mask_panel(wb.handle(key), mask, "drop")  # the toggle's forward, now cached
    t_mask = median_s(lambda: experiments.mask_panel(wb.handle(key), mask, "drop"), 5)
    experiments.shift_panel(wb.handle(key), 5, 0, "edge")
    t_shift = median_s(lambda: experiments.shift_panel(wb.handle(key), 5, 0, "edge"), 5)
    t_click = median_s(lambda: experiments.toggle_at(wb.handle(key), mask, 100.0, 100.0), 5)
    fresh = iter(range(100, 200))
    t_mask_new = median_s(lambda: experiments.mask_panel(wb.handle(key), (next(fresh),), "drop"), 3)
    print(f"mask click (toggle) {t_click * 1000:.2f} ms ({t_click / one:.4f}×) · "
          f"mask panel, cached view {t_mask * 1000:.1f} ms ({t_mask / one:.3f}×) · "
          f"shift panel, cached view {t_shift * 1000:.1f} ms ({t_shift / one:.3f}×) · "
          f"mask panel, new view (one forward) {t_mask_new * 1000:.0f} ms ({t_mask_new / one:.2f}×)")


if __name__ == "__main__":
    main()
