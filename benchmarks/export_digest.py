"""SHA-256 of every array `python -m vizvit export` writes, key by key, for a refactor's before/after.

    python benchmarks/export_digest.py OUT.json [--model DIR] ...

Runs export for the trained ViT-Ti and for random DeiT, DINOv2+registers, BEiT, CLIP and SigLIP
towers on the example cat (chelsea.jpg) (plus a mask and an ablation), and writes {run: {key: sha256}}.
Compare two files with --compare A.json B.json: prints every key that differs (none: exit 0).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent
CAT = HERE / "assets" / "examples" / "chelsea.jpg"
TRAINED = os.environ.get("VIZVIT_TRAINED", str(HERE.parent / "shared" / "models" / "vit-tiny-augreg"))
RUNS = {
    "trained": dict(model=TRAINED),
    "trained-mask-ablate": dict(model=TRAINED, mask="3,17,40", ablate="3.2,7"),
    "deit": dict(model="random:deit-base-distilled-patch16-224"),
    "dinov2-reg": dict(model="random:dinov2-with-registers-small"),
    "beit": dict(model="random:beit-base-patch16-224"),
    "clip": dict(model="random:clip-vit-base-patch32", labels="a cat,a dog"),
    "siglip": dict(model="random:siglip-base-patch16-224", labels="a cat,a dog"),
}


def digest(out: Path) -> dict[str, str]:
    with np.load(out / "arrays.npz", allow_pickle=False) as z:
        return {k: hashlib.sha256(np.ascontiguousarray(z[k]).tobytes() + str(z[k].dtype).encode()
                                  + str(z[k].shape).encode()).hexdigest() for k in sorted(z.files)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--compare", nargs=2)
    a = ap.parse_args()
    if a.compare:
        x, y = (json.loads(Path(p).read_text()) for p in a.compare)
        bad = [(r, k) for r in sorted(set(x) | set(y)) for k in sorted(set(x.get(r, {})) | set(y.get(r, {})))
               if x.get(r, {}).get(k) != y.get(r, {}).get(k)]
        for r, k in bad:
            print(f"differs: {r} {k}")
        n = sum(len(v) for v in x.values())
        print(f"{n} arrays compared, {len(bad)} differ")
        return 1 if bad else 0
    sys.path.insert(0, str(HERE))
    import torch
    torch.manual_seed(0)
    from vizvit.__main__ import main as cli
    res = {}
    for name, kw in RUNS.items():
        with tempfile.TemporaryDirectory() as d:
            argv = ["export", str(CAT), "--out", d, "--device", "cpu"]
            for k, v in kw.items():
                argv += [f"--{k}", v]
            if cli(argv) != 0:
                raise SystemExit(f"export failed: {name}")
            res[name] = digest(Path(d))
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(f"wrote {sum(len(v) for v in res.values())} digests to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
