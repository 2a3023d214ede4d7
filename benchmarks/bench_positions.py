"""Positions tab speed on random:vit-base-patch16-224, as ratios.

    python benchmarks/bench_positions.py [--model random:vit-base-patch16-224] [--skip-matplotlib]

1. The (P, P) similarity grid (one normalised matmul + one composed image) against
   - the per-pair double loop of cosine calls of the well-known tutorial snippet
     (F.cosine_similarity per pair, P² = 38 416 calls for ViT-B/16), goal >= 100×;
   - a matplotlib figure of P subplots (imshow per tile, saved as PNG).
2. Event times against one forward pass of the model: a tile click (cached per model),
   opening the tab with a warm cache, and the first (uncached) open.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vizvit.service.threads import configure_threads  # noqa: E402

configure_threads()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from timing import median_s  # noqa: E402

from vizvit import analyze, load_image, load_model  # noqa: E402
from vizvit.model import engine, positional  # noqa: E402
from vizvit.pictures import render  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402
from vizvit.views import positions as positions_panel  # noqa: E402


def grid_ours(vm) -> None:
    _, patches = positional.position_embeddings(engine.position_tables(vm))
    sim = positional.cosine_similarity_matrix(patches).numpy()
    cell = positions_panel.tile_cell(vm.geometry.grid)
    render.with_colorbar(positions_panel.similarity_grid(sim, vm.geometry.grid, cell))


def sim_pair_loop(vm) -> torch.Tensor:
    """The tutorial way: one cosine call per pair of positions."""
    pos = vm.vit.embeddings.position_embeddings.detach()[0, vm.geometry.num_prefix_tokens:]
    P = pos.shape[0]
    out = torch.empty(P, P)
    for i in range(P):
        for j in range(P):
            out[i, j] = F.cosine_similarity(pos[i], pos[j], dim=0)
    return out


def matplotlib_figure(vm) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, patches = positional.position_embeddings(engine.position_tables(vm))
    sim = positional.cosine_similarity_matrix(patches).numpy()
    gh, gw = vm.geometry.grid
    fig, axes = plt.subplots(gh, gw, figsize=(8, 8))
    for k, ax in enumerate(axes.flat):
        ax.imshow(sim[k].reshape(gh, gw), cmap="RdBu_r", vmin=-1, vmax=1)
        ax.set_axis_off()
    fig.savefig(io.BytesIO(), format="png", dpi=80)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="random:vit-base-patch16-224")
    ap.add_argument("--skip-matplotlib", action="store_true")
    args = ap.parse_args()
    vm = load_model(args.model, "cpu")
    cat = load_image(ROOT / "assets" / "examples" / "chelsea.jpg")
    analyze(vm, cat)  # warm-up
    t_fwd = median_s(lambda: analyze(vm, cat), 3)
    print(f"model {vm.id}: grid {vm.geometry.grid}, one forward {t_fwd * 1000:.0f} ms, "
          f"threads {torch.get_num_threads()}")

    t_ours = median_s(lambda: grid_ours(vm), 7)
    t0 = time.perf_counter()
    looped = sim_pair_loop(vm)
    t_loop = time.perf_counter() - t0
    table = positional.position_embeddings(engine.position_tables(vm))[1]
    ok = torch.allclose(positional.cosine_similarity_matrix(table), looped, atol=1e-5)
    print(f"grid (one matmul + one image):   {t_ours * 1000:8.1f} ms")
    print(f"per-pair cosine loop (sim only):  {t_loop * 1000:8.1f} ms   -> ours is {t_loop / t_ours:6.0f}x faster"
          f" (goal >= 100x; same numbers: {ok})")
    if not args.skip_matplotlib:
        t_mpl = median_s(lambda: matplotlib_figure(vm), 1)
        print(f"matplotlib, {vm.geometry.num_patches} subplots:      {t_mpl * 1000:8.1f} ms"
              f"   -> ours is {t_mpl / t_ours:6.0f}x faster")

    wb = Workbench(device="cpu")
    wb.add_model(vm)
    key = PhotoKey(vm.id, wb.add_photo(cat))
    wb.analysis(key)
    t0 = time.perf_counter()
    positions_panel.positions_panel(wb.handle(key))
    t_first = time.perf_counter() - t0
    t_open = median_s(lambda: positions_panel.positions_panel(wb.handle(key)), 5)
    mp = positions_panel.cached_model_positions(wb.handle(key))
    tile = vm.geometry.grid[0] * mp.cell + positions_panel.SEP
    t_click = median_s(lambda: positions_panel.click_tile(wb.handle(key), 5 * tile + 3, 2 * tile + 3), 20)
    t0 = time.perf_counter()
    positions_panel.resolution_panel(wb.handle(key), 384)
    t_res = time.perf_counter() - t0
    t_res_warm = median_s(lambda: positions_panel.resolution_panel(wb.handle(key), 384), 5)
    print("event (server time)                       ms   x forward")
    for name, t in [("tile click", t_click), ("open tab, cache warm", t_open),
                    ("open tab, first time for this model", t_first),
                    ("384 px: first (forward at 384 px)", t_res), ("384 px: cached", t_res_warm)]:
        print(f"  {name:38s} {t * 1000:7.1f}  {t / t_fwd:6.3f}")


if __name__ == "__main__":
    main()
