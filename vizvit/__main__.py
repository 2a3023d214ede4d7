"""Command line: ``python -m vizvit export IMAGE [--model M] [--device D] --out DIR``."""

from __future__ import annotations

import argparse
import json
import sys
import time

# The thread policy is set by vizvit/__init__.py, which runs before this file.
from vizvit.vocab import ABLATE_MODES, HEADS_EXAMPLE, MASK_MODES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vizvit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="write figures (PNG), arrays.npz and summary.json for one photo")
    ex.add_argument("image")
    ex.add_argument("--model", default="google/vit-base-patch16-224",
                    help="hub id, local save_pretrained directory, or random:vit-base-patch16-224")
    ex.add_argument("--device", default="auto", help="auto (cuda, mps, cpu), cpu, cuda, ...")
    ex.add_argument("--out", required=True, help="output directory")
    ex.add_argument("--mask", default="", help="0-based row-major patch indices, e.g. 3,17,40")
    ex.add_argument("--mask-mode", default="drop", choices=MASK_MODES)
    ex.add_argument("--ablate", default="",
                    help=f"heads to switch off, layer.head counted from 1, e.g. {HEADS_EXAMPLE} "
                         "(7 = every head of layer 7): adds ablated_probs")
    ex.add_argument("--ablate-mode", default="zero", choices=ABLATE_MODES)
    ex.add_argument("--labels", default="", help='CLIP / SigLIP: zero-shot labels, e.g. "a cat,a dog" '
                                                 "(adds zero_shot_probs and label_names)")
    ex.add_argument("--template", default="a photo of {}", help="CLIP / SigLIP: the prompt, {} = the label")
    ex.add_argument("--no-png", action="store_true",
                    help="charts only in charts.html, not as PNG (kaleido starts a browser: seconds)")
    ex.add_argument("--quiet", action="store_true",
                    help="no progress bars (they go to stderr; the JSON to stdout)")
    args = parser.parse_args(argv)

    from vizvit.export import export
    from vizvit.model.ablation import Ablation, parse_heads
    from vizvit.model.engine import load_model
    from vizvit.model.images import View

    try:
        mask = tuple(int(i) for i in args.mask.split(",") if i.strip())
        t0 = time.perf_counter()
        vm = load_model(args.model, args.device)
        loaded = time.perf_counter() - t0
        ablation = Ablation(parse_heads(args.ablate, vm.geometry), args.ablate_mode)
        summary = export(args.image, args.out, model=vm, view=View(mask=mask, mask_mode=args.mask_mode),
                         ablation=ablation, labels=args.labels, template=args.template,
                         progress=not args.quiet, charts_png=not args.no_png, load_seconds=loaded)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: summary[k] for k in ("model", "top5", "timings_s", "figures")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
