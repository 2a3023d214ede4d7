"""The measured effects quoted in docs/methods.md: how far vizvit's conventions move a
result away from a peer's, on one photo and one model (default: the random-weights ViT-B/16,
offline). Uses the peer ports of tests/system/test_methods.py.

    python benchmarks/methods_effects.py [--model google/vit-base-patch16-224]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "system")]

import test_methods as ports  # noqa: E402

import vizvit  # noqa: E402
from vizvit.methods import maths as A  # noqa: E402
from vizvit.model import engine, positional  # noqa: E402


def r(a: np.ndarray | torch.Tensor, b: np.ndarray | torch.Tensor) -> float:
    return float(np.corrcoef(np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel())[0, 1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="random:vit-base-patch16-224")
    ap.add_argument("--image", default=str(ROOT / "assets/examples/chelsea.jpg"))
    args = ap.parse_args()
    vm = vizvit.load_model(args.model, device="cpu")
    a = vizvit.analyze(vm, vizvit.load_image(args.image))
    g, att = vm.geometry, a.attentions.float()
    print(f"model {args.model}, photo {Path(args.image).name}, grid {g.grid}")

    renorm, raw = A.attention_distance(att, g), A.attention_distance(att, g, "raw (probing-vits)")
    rel = (renorm - raw) / renorm
    cls_w = att[..., g.num_prefix_tokens:, 0].mean(-1)
    print(f"distance: renormalised / raw − 1: max {float((renorm / raw - 1).max()):.2%}, "
          f"median {float((renorm / raw - 1).median()):.2%}; "
          f"(renorm − raw)/renorm max {float(rel.max()):.2%}; "
          f"mean patch→[CLS] weight max {float(cls_w.max()):.3f}")

    for fusion, d in (("max", 0.9), ("mean", 0.9)):
        per_row = A.rollout_maps(att, g, fusion, d)[-1]
        glob = A.rollout_maps(att, g, fusion, d, "global (vit-explain)")[-1]
        published = ports.vit_explain_rollout(ports._layers(att), d, fusion, keepdim=False)
        print(f"rollout {fusion}, discard {d}: r(per row, global) = {r(per_row, glob):.3f}; "
              f"r(global, vit-explain as published, no keepdim) = {r(glob, published):.3f}")

    _, patches = positional.position_embeddings(engine.position_tables(vm))
    table = vm.vit.embeddings.position_embeddings.detach().float()
    for size in (96, 160, 384, 480):
        new = positional.grid_at(g, size)
        ours = positional.interpolate_patch_positions(patches, g.grid, new)
        timm = ports.timm_resample_abs_pos_embed(table, list(new))[0, 1:]
        dino = ports.dino_interpolate_pos_encoding(table, g.patch_size, size, size)[0, 1:]
        sim = positional.cosine_similarity_matrix
        print(f"interpolation {size} px {new}: r(table) HF vs timm antialias {r(ours, timm):.3f}, "
              f"HF vs DINO {r(ours, dino):.3f}; r(similarity) HF vs timm {r(sim(ours), sim(timm)):.3f}, "
              f"HF vs DINO {r(sim(ours), sim(dino)):.3f}")


if __name__ == "__main__":
    main()
