"""On a CUDA machine: the same results as on the CPU, and the speed of each device.

    python benchmarks/gpu_check.py

Prints the largest |CUDA - CPU| difference of every Analysis field for a few views, the
batched predictions, and median timings of analyze(), the shift sweep (batched and one by
one) and the faithfulness curves, on both devices.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import vizvit  # noqa: E402
from vizvit.model import engine  # noqa: E402
from vizvit.model.ablation import Ablation  # noqa: E402
from vizvit.model.images import View  # noqa: E402
from vizvit.readings import lens_maths as lens, methods, perturb  # noqa: E402

TOL = {"probs": 1e-4, "attentions": 1e-4, "hidden_states": 2e-3, "patch_embeddings": 1e-3}


def median_s(fn, n: int, device: torch.device) -> float:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def print_sweep_timings(vm, base) -> None:
    """One analyze against the 33-view shift sweep, batched and one by one, and the faithfulness curves."""
    dev = vm.device
    one = median_s(lambda: vizvit.analyze(vm, base), 9, dev)
    batched = median_s(lambda: perturb.shift_sweep(vm, base), 3, dev)
    single = median_s(lambda: [vizvit.analyze(vm, base, View(dx=k)) for k in range(33)], 1, dev)
    names = ("rollout", "last-layer [CLS] attention", "random")
    maps = methods.ranking_maps(vm, vizvit.analyze(vm, base), names=names)
    curves = median_s(lambda: perturb.faithfulness_curves(vm, base, maps, steps=10), 1, dev)
    print(f"{dev.type}: analyze {one * 1000:.1f} ms · sweep of 33 batched {batched * 1000:.0f} ms "
          f"({batched / one:.1f}× one analyze) · one by one {single * 1000:.0f} ms ({single / one:.1f}×) "
          f"· batched is {single / batched:.1f}× faster · curves {curves * 1000:.0f} ms")


def print_inside_timings(vm, base, ab: Ablation, cells: list[tuple[int, int]]) -> None:
    """An ablation toggle, and "which heads matter" (one forward per head) in batches of several sizes."""
    dev = vm.device
    one = median_s(lambda: vizvit.analyze(vm, base), 5, dev)
    toggle = median_s(lambda: vizvit.analyze(vm, base, ablation=ab), 5, dev)
    for chunk in (8, 16, 48):
        batched = median_s(lambda chunk=chunk: list(engine.zeroed_head_chunks(vm, base, cells, chunk)), 1, dev)
        print(f"{dev.type}: which heads matter, {len(cells)} forwards in batches of {chunk}: "
              f"{batched * 1000:.0f} ms ({batched / one:.1f}× one analyze)")
    singles = median_s(lambda: list(engine.zeroed_head_chunks(vm, base, cells, 1)), 1, dev)
    print(f"{dev.type}: ablation toggle {toggle * 1000:.1f} ms ({toggle / one:.2f}× one analyze) · "
          f"{len(cells)} single forwards one by one {singles * 1000:.0f} ms")


def main() -> int:
    assert torch.cuda.is_available(), "no CUDA here"
    print("torch", torch.__version__, "·", torch.cuda.get_device_name(0))
    name = sys.argv[1] if len(sys.argv) > 1 else "random:vit-base-patch16-224"
    cat = vizvit.load_image(ROOT / "assets" / "examples" / "chelsea.jpg")
    cpu, gpu = vizvit.load_model(name, "cpu"), vizvit.load_model(name, "cuda")
    assert vizvit.model.models.pick_device("auto").type == "cuda"
    ok = True
    for view in (View(), View(dx=5, dy=-3), View(mask=(3, 17, 40), mask_mode="drop"),
                 View(mask=(3, 17, 40), mask_mode="blur")):
        a, b = vizvit.analyze(cpu, cat, view), vizvit.analyze(gpu, cat, view)
        diffs = {f: float((getattr(a, f).float() - getattr(b, f).float()).abs().max()) for f in TOL}
        same_top = [p.index for p in a.top5] == [p.index for p in b.top5]
        good = all(diffs[f] <= TOL[f] for f in TOL)
        ok &= good
        print(f"view {view}: max|cuda-cpu| " + ", ".join(f"{f} {d:.2e}" for f, d in diffs.items())
              + f" · same top-5 order {same_top} · {'OK' if good else 'OVER TOLERANCE'}")
    base = vizvit.analyze(cpu, cat).input_view
    views = [vizvit.model.images.shift_view(base, k, 0, "edge") for k in range(33)]
    pc, pg = engine.predict_batch(cpu, views), engine.predict_batch(gpu, views)
    d = float((pc.probs - pg.probs).abs().max())
    ok &= d <= 1e-4
    print(f"batched predictions (33 shifted views): max|cuda-cpu| probs {d:.2e}")

    for vm in (cpu, gpu):
        print_sweep_timings(vm, base)
    # Inside the model: an ablated forward, the logit lens, and which heads matter (L·H forwards).
    ab = Ablation(((3, 4), (7, 0)), "mean")
    a, b = vizvit.analyze(cpu, base, ablation=ab), vizvit.analyze(gpu, base, ablation=ab)
    d_ab = float((a.probs - b.probs).abs().max())
    lens_cpu = lens.logit_lens(cpu, engine.readout(cpu, a.hidden_states)).probs
    lens_gpu = lens.logit_lens(gpu, engine.readout(gpu, b.hidden_states)).probs
    d_lens = float(abs(lens_cpu - lens_gpu).max())
    g = cpu.geometry
    cells = [(l, h) for l in range(g.num_layers) for h in range(g.num_heads)]
    ic = torch.cat([p for _, p in engine.zeroed_head_chunks(cpu, base, cells, 16)])
    ig = torch.cat([p for _, p in engine.zeroed_head_chunks(gpu, base, cells, 16)])
    d_imp = float((ic - ig).abs().max())
    ok &= max(d_ab, d_lens, d_imp) <= 1e-4
    print(f"inside: max|cuda-cpu| ablated probs {d_ab:.2e} · logit lens {d_lens:.2e} · "
          f"{len(cells)} single-head ablations {d_imp:.2e}")
    for vm in (cpu, gpu):
        print_inside_timings(vm, base, ab, cells)
    print("RESULT:", "CUDA matches CPU within tolerance" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
