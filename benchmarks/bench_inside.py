"""Inside tab speed, as ratios to ONE bare forward of random:vit-base-patch16-224.

    python benchmarks/bench_inside.py [--device cpu|cuda] [--chunk 8] [--model random:...]

Measures: the logit lens from the cached analysis (no forward); an ablation toggle (one
analyze() with hooks: ONE forward); "which heads matter" batched (L·H forwards, `chunk` per
batch) against L·H single forwards one by one, and the ratio between them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
from timing import median_s, once_s  # noqa: E402

import vizvit  # noqa: E402  (sets the thread policy before torch loads)
from vizvit.model import engine  # noqa: E402
from vizvit.model.ablation import Ablation  # noqa: E402
from vizvit.model.images import to_pixel_values  # noqa: E402
from vizvit.readings import lens_maths as lens  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--chunk", type=int, default=engine.DEFAULT_CHUNK)
    ap.add_argument("--model", default="random:vit-base-patch16-224")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    wb = Workbench(cache_bytes=2 << 30, device=args.device)
    vm = wb.model(args.model)
    key = PhotoKey(vm.id, wb.add_photo(ROOT / "assets" / "examples" / "chelsea.jpg"))
    a = wb.analysis(key)
    pixels = to_pixel_values(a.input_view, vm.preprocess).to(vm.device)

    def bare() -> None:
        with torch.inference_mode():
            vm.model(pixels)
        if vm.device.type == "cuda":
            torch.cuda.synchronize()

    fwd = median_s(bare, args.repeat, warmup=1)
    g = vm.geometry
    t_lens = median_s(lambda: lens.logit_lens(vm, engine.readout(vm, a.hidden_states)), args.repeat)
    heads = [Ablation(((l, h),)) for l, h in [(3, 4), (6, 0), (9, 2), (11, 11), (0, 1)]][: args.repeat]
    t_toggle = sorted(once_s(lambda ab=ab: vizvit.analyze(vm, a.input_view, ablation=ab)) for ab in heads)
    cells = [(l, h) for l in range(g.num_layers) for h in range(g.num_heads)]
    t_batched = once_s(lambda: list(engine.zeroed_head_chunks(vm, a.input_view, cells, args.chunk)))
    t_single = once_s(lambda: list(engine.zeroed_head_chunks(vm, a.input_view, cells, 1)))
    n = len(cells)
    print(f"model {vm.id} on {vm.device}; one bare forward {fwd * 1000:.1f} ms (median of {args.repeat})")
    print(f"logit lens from the cached analysis: {t_lens * 1000:.2f} ms = {t_lens / fwd:.3f}× a forward")
    print(f"ablation toggle (one analyze with hooks, attentions and hidden states): median "
          f"{t_toggle[len(t_toggle) // 2] * 1000:.0f} ms = {t_toggle[len(t_toggle) // 2] / fwd:.2f}× a forward")
    print(f"which heads matter, {n} forwards: batched ({args.chunk} a batch) {t_batched:.2f} s = "
          f"{t_batched / fwd:.1f}× a forward; one by one {t_single:.2f} s = {t_single / fwd:.1f}×; "
          f"batched/one-by-one = {t_batched / t_single:.2f}")


if __name__ == "__main__":
    main()
