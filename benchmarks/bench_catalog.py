"""The model list's sizes and forward times (vizvit/model/catalog.py MEASURED): one `analyze` of a photo
(the page's forward: attentions and hidden states kept), median of 10 after 2 warm-ups, on CPU.

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/bench_catalog.py [--trained ../shared/models/vit-tiny-augreg]

Speed depends on the shape of a network, not on its weights, so a model without a local copy is
timed on its random-weights twin (same config): ViT-S/16 and ViT-B/16 here.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import median_s

from vizvit import analyze, load_image, load_model

HERE = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trained", default=str(HERE.parent / "shared" / "models" / "vit-tiny-augreg"),
                    help="a local ViT-Ti/16 (WinKawaks/vit-tiny-patch16-224's weights)")
    args = ap.parse_args()
    photo = load_image(HERE / "assets" / "examples" / "chelsea.jpg")
    rows = [("WinKawaks/vit-tiny-patch16-224", args.trained if os.path.isdir(args.trained)
             else "random:vit-tiny-patch16-224"),
            ("WinKawaks/vit-small-patch16-224", "random:vit-small-patch16-224"),
            ("google/vit-base-patch16-224", "random:vit-base-patch16-224")]
    import torch

    print(f"# {platform.node()} · {os.cpu_count()} CPUs · torch {torch.__version__} · "
          f"{torch.get_num_threads()} threads")
    print("| catalog id | timed on | parameters | forward ms (median) |")
    for hub_id, source in rows:
        vm = load_model(source, "cpu")
        ms = 1000 * median_s(lambda vm=vm: analyze(vm, photo), repeat=10, warmup=2)
        print(f"| {hub_id} | {Path(source).name if os.path.isdir(source) else source} | "
              f"{vm.num_parameters:,} | {ms:.0f} |")


if __name__ == "__main__":
    main()
