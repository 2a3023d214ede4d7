"""Attention tab: server time of each event, as a ratio to one forward pass measured in
the same run (machines here are shared and noisy; ratios are what to read).

    python benchmarks/bench_attention.py                  # random:vit-base-patch16-224, CPU
    python benchmarks/bench_attention.py --device cuda

"cold" = first time after a new photo (builds a cached stack), "warm" = what moving a
control costs afterwards. Image encoding (what Gradio does with each returned image)
is listed separately.
"""

from __future__ import annotations

import argparse
import io
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vizvit.service.threads import configure_threads  # noqa: E402

configure_threads()

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402
from timing import median_s, once_s  # noqa: E402

from vizvit import vocab  # noqa: E402
from vizvit.model.engine import analyze  # noqa: E402
from vizvit.readings import attention as ra  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402
from vizvit.views import attention as ap, layout  # noqa: E402

EXAMPLE = ROOT / "assets" / "examples" / "chelsea.jpg"


def encode_s(img: np.ndarray, fmt: str, repeat: int) -> float:
    def enc() -> bytes:
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, fmt)
        return buf.getvalue()
    return median_s(enc, repeat, warmup=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="random:vit-base-patch16-224")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    wb = Workbench(device=args.device)
    vm = wb.model(args.model)
    key = PhotoKey(vm.id, wb.add_photo(EXAMPLE))
    image = wb.photo(key.sha1)
    fwd = median_s(lambda: analyze(vm, image), args.repeat, warmup=1)
    a = wb.analysis(key)
    cache = lambda name, f: wb.derived(key, name, f)  # noqa: E731
    g = vm.geometry
    base = ra.AttnParams(layer=g.num_layers)
    rows: list[tuple[str, float]] = []

    rows.append(("open tab, cold (distances, rollout stack)", once_s(lambda: ap.attention_page(vm, a, base, cache))))
    rows.append(("open tab, warm", median_s(lambda: ap.attention_page(vm, a, base, cache), args.repeat, warmup=1)))
    events = {
        "layer slider (raw, mean)": replace(base, layer=5),
        "one head": replace(base, show=vocab.ONE_HEAD, head=4),
        "fusion max": replace(base, show="max"),
        "query patch click (row)": replace(base, query=(3, 4)),
        "query column": replace(base, query=(3, 4), direction="column"),
        "opacity / colour map": replace(base, alpha=0.4, cmap="viridis"),
        "mass threshold tau=0.6": replace(base, tau=0.6),
        "per-map colour scale": replace(base, shared_scale=False),
    }
    for name, p in events.items():
        rows.append((name, median_s(lambda p=p: ap.attention_view(vm, a, p, cache), args.repeat, warmup=1)))
    rolled = replace(base, mode="rolled out", show=vocab.ONE_HEAD, head=3)
    rows.append(("rolled out per head, cold (L×H rollout stack)",
                 once_s(lambda: ap.attention_view(vm, a, rolled, cache))))
    rows.append(("rolled out per head, warm",
                 median_s(lambda: ap.attention_view(vm, a, rolled, cache), args.repeat, warmup=1)))
    disc = replace(base, mode="rolled out", discard=0.7)
    rows.append(("discard ratio, cold (new rollout stack)", once_s(lambda: ap.attention_view(vm, a, disc, cache))))
    rows.append(("discard ratio, warm", median_s(lambda: ap.attention_view(vm, a, disc, cache), args.repeat, warmup=1)))
    tile = layout.grid_tile(g)

    def grid_click() -> None:
        layer = layout.grid_cell_at(g, layout.GRID_LEFT + tile, layout.GRID_TOP + 5)[0]
        ap.attention_view(vm, a, replace(base, layer=layer), cache)

    rows.append(("grid cell click (cell lookup + redraw)", median_s(grid_click, args.repeat)))
    if a.top5:
        top1 = a.top5[0].index
        rows.append(("class relevance, cold (forward + backward)",
                     once_s(lambda: ap.relevance_panel(vm, a, top1, base, cache))))
        rows.append(("class relevance, warm",
                     median_s(lambda: ap.relevance_panel(vm, a, top1, base, cache), args.repeat, warmup=1)))
    v = ap.attention_view(vm, a, base, cache)
    for name, img in (("main map", v.main), ("grid", v.grid), ("strip", v.strip)):
        for fmt in ("PNG", "JPEG"):
            rows.append((f"encode {name} {img.shape[1]}x{img.shape[0]} {fmt}", encode_s(img, fmt, args.repeat)))

    print(f"model {vm.id} on {vm.device}; one forward (analyze) = {fwd * 1000:.0f} ms (median of {args.repeat})")
    print(f"{'event':58s} {'ms':>8s} {'x forward':>10s}")
    for name, s in rows:
        print(f"{name:58s} {s * 1000:8.1f} {s / fwd:10.3f}")


if __name__ == "__main__":
    main()
