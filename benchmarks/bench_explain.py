"""What the explanation methods of issue 32 cost, as ratios to one bare forward measured in the same
run (docs/methods.md and the contest's button quote them):

- each gradient method (class relevance, gradient rollout, LeGrad, Grad-CAM): its forwards and
  autograd calls, and its median CPU seconds / a bare forward's and / a plain forward + full backward's
  (CPU time of this process: the machine is shared, and wall time swings with the others' load);
- exact attention flow: seconds to build the graph and per max-flow, and the whole run;
- the faithfulness contest on one photo: its maps, its forwards (views) and seconds.

    python benchmarks/bench_explain.py [--model PATH] [--flow-tokens 20] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from timing import median_s  # noqa: E402

import vizvit  # noqa: E402
from vizvit.cancel import NEVER  # noqa: E402
from vizvit.methods import flow as explain, maps  # noqa: E402
from vizvit.methods.relevance import relevance_parts  # noqa: E402
from vizvit.readings import contest as readings_contest, methods as registry  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402
from vizvit.views import experiments  # noqa: E402


def cpu_median(fn, repeat: int, warmup: int = 1) -> float:
    """Median CPU seconds of this process (all its threads) per call: on a machine shared with
    others, wall time swings with their load and CPU time much less."""
    return median_s(fn, repeat, warmup, clock=time.process_time)
from tiny import trained_dir  # noqa: E402


class Counts:
    """Forwards of the model (a hook on its patch embedding) and autograd.grad calls, while active."""

    def __init__(self, vm: vizvit.VitModel):
        self.vm, self.forwards, self.grads = vm, 0, 0

    def __enter__(self) -> Counts:
        self._h = self.vm.family.patch_embedding(self.vm.vit).register_forward_hook(self._fwd)
        self._grad = torch.autograd.grad

        def counted(*a, **k):
            self.grads += 1
            return self._grad(*a, **k)

        torch.autograd.grad = counted
        return self

    def _fwd(self, *_):
        self.forwards += 1

    def __exit__(self, *_):
        self._h.remove()
        torch.autograd.grad = self._grad


def main() -> None:
    ap = argparse.ArgumentParser()
    default = trained_dir()
    ap.add_argument("--model", default=str(default) if default else "random:vit-tiny-patch16-224")
    ap.add_argument("--image", default=str(ROOT / "assets/examples/chelsea.jpg"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--flow-tokens", type=int, default=20, help="max-flows timed (0: all of them)")
    ap.add_argument("--only-contest", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    vm = vizvit.load_model(args.model, device="cpu")
    photo = vizvit.load_image(args.image)
    a = vizvit.analyze(vm, photo)
    c = a.top5[0].index
    g = vm.geometry
    print(f"model {args.model}, {g.num_layers} layers, N = {g.seq_len}, photo {Path(args.image).name}, "
          f"{torch.get_num_threads()} threads")

    pixels = a.pixel_values

    def bare() -> None:
        with torch.inference_mode():
            vm.model(pixels)

    def fwd_bwd() -> None:
        x = pixels.clone().requires_grad_(True)
        with torch.enable_grad():
            out = vm.model(x)
            out.logits[0, c].backward()

    if args.only_contest:
        return contest(vm, args.image, 0.0)
    methods = {"class relevance": lambda: relevance_parts(vm, a, c),
               **{m.name: (lambda m=m: m.compute(vm, a, c, maps.no_cache, 0, NEVER))  # uncached
                  for m in registry.EXPORTED if m is not registry.RELEVANCE}}
    counts = {}
    for name, fn in methods.items():
        with Counts(vm) as k:
            fn()
        counts[name] = (k.forwards, k.grads)
    # The machine is shared and noisy: each round times a bare forward next to every method, and
    # the ratios are the medians over rounds of each round's own ratio.
    ratios: dict[str, list[float]] = {n: [] for n in ("forward + full backward", *methods)}
    fwds = []
    for _ in range(args.rounds):
        t_fwd = cpu_median(bare, args.repeat)
        fwds.append(t_fwd)
        ratios["forward + full backward"].append(cpu_median(fwd_bwd, args.repeat) / t_fwd)
        for name, fn in methods.items():
            ratios[name].append(cpu_median(fn, args.repeat) / t_fwd)
    t_fwd = statistics.median(fwds)
    fb = statistics.median(ratios["forward + full backward"])
    print(f"bare forward {t_fwd * 1000:.1f} ms of CPU time (median of {args.rounds} rounds); forward + full backward "
          f"{fb:.2f}× a forward")
    for name in methods:
        q = statistics.median(ratios[name])
        rounds = ", ".join(f"{x:.2f}" for x in ratios[name])
        print(f"{name}: {counts[name][0]} forward, {counts[name][1]} autograd.grad call(s); {q:.2f}× a bare "
              f"forward = {q / fb:.2f}× forward + full backward (rounds: {rounds})")

    n = g.seq_len if args.flow_tokens <= 0 else min(args.flow_tokens, g.seq_len)
    t0 = time.perf_counter()
    steps = explain.attention_flow_steps(a.attentions, a.summary_weights)
    first = next(steps)
    for s in steps:
        if s.done >= n:
            break
    build = first.seconds  # includes the first max-flow
    per = (s.seconds - first.seconds) / max(1, s.done - 1)
    print(f"attention flow: {explain.flow_edges(tuple(a.attentions.shape)):,} edges; graph + first max-flow "
          f"{build:.1f} s, then {per:.2f} s per max-flow ({s.done} timed); all {g.seq_len}: "
          f"{'measured' if s.done == g.seq_len else 'estimated'} {build + per * (g.seq_len - 1):.0f} s "
          f"({time.perf_counter() - t0:.1f} s spent here)")

    contest(vm, args.image, t_fwd)


def contest(vm: vizvit.VitModel, image: str, t_fwd: float) -> None:
    """The faithfulness contest as the page's button runs it, on a fresh cache; t_fwd: a bare
    forward's CPU seconds (0: not measured)."""
    wb = Workbench(device="cpu")
    wb.add_model(vm)
    ph = wb.handle(PhotoKey(vm.id, wb.add_photo(image)))
    ph.analysis()
    with Counts(vm) as k:
        t0 = time.perf_counter()
        m = readings_contest.curve_maps(ph)
        t_maps = time.perf_counter() - t0
        f_maps, g_maps = k.forwards, k.grads
        panel = list(experiments.curves_progress(ph))[-1]  # as the page's button runs it: map by map
        t_all = time.perf_counter() - t0
    views = panel.text.split(" views in all")[0].rsplit("· ", 1)[-1]
    print(f"contest: {len(m)} maps; maps {f_maps} forwards + {g_maps} autograd calls in {t_maps:.1f} s; curves "
          f"{views} views in {k.forwards - f_maps} batched forwards, {t_all - t_maps:.1f} s; total {t_all:.1f} s "
          + (f"= {t_all / t_fwd:.0f} bare forwards' CPU time" if t_fwd else ""))
    print("ranking:", " > ".join(str(r[1]) for r in panel.table))
    for row in panel.table:
        print("   ", row)


if __name__ == "__main__":
    main()
