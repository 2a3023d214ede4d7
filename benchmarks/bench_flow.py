"""Exact attention flow's full map, timed (issue 52): the graph, all N max-flows (scipy's Dinic in C),
the whole run; optionally networkx's pure-Python max-flow (vizvit's path before issue 52, kept as the
tests' reference) on a few tokens, extrapolated to all. Prints the load average with each number: the
machine is shared, and wall time swings with the others' load (docs/methods.md, docs/speed.md).

    python benchmarks/bench_flow.py [--model PATH|random:vit-base-patch16-224] [--networkx-tokens 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import vizvit  # noqa: E402
from vizvit.methods import flow as explain  # noqa: E402


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=str(ROOT.parent / "shared" / "models" / "vit-tiny-augreg"))
    ap.add_argument("--image", default=str(ROOT / "assets" / "examples" / "chelsea.jpg"))
    ap.add_argument("--networkx-tokens", type=int, default=0, help="also time networkx on this many tokens")
    args = ap.parse_args()
    vm = vizvit.load_model(args.model, device="cpu")
    a = vizvit.analyze(vm, vizvit.load_image(args.image))
    shape = tuple(a.attentions.shape)
    print(f"{vm.id}: attentions {shape}, {explain.flow_edges(shape):,} edges; estimate before the run "
          f"{explain.FLOW_SPEED.estimate(shape):.1f} s; {load()}")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    steps = list(explain.attention_flow_steps(a.attentions, a.summary_weights))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    sp = explain.FLOW_SPEED
    build = sp.build_s_per_edge * explain.flow_edges(shape)
    print(f"C (scipy Dinic + the cut's float value): full map of {steps[-1].total} max-flows in {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU (graph {build:.2f} s, {(wall - build) / steps[-1].total * 1000:.0f} ms per max-flow); "
          f"estimate after it {sp.estimate(shape):.1f} s; {load()}")
    if args.networkx_tokens:
        from methods.test_flow import networkx_flow_values  # the tests' reference

        t0 = time.perf_counter()
        networkx_flow_values(a.attentions, [1])  # the graph, its residual network and one max-flow
        one = time.perf_counter() - t0
        k = args.networkx_tokens
        t0 = time.perf_counter()
        networkx_flow_values(a.attentions, list(range(1, 2 + k)))  # the same and k more
        per = (time.perf_counter() - t0 - one) / k
        print(f"networkx (preflow-push on one residual network): graph + 1 max-flow {one:.1f} s, then {per:.2f} s "
              f"per max-flow ({k} timed): all {shape[-1]} ≈ {one + per * (shape[-1] - 1):.0f} s; {load()}")

if __name__ == "__main__":
    main()
