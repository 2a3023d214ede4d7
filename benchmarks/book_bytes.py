"""What the Attention tab sends the page per photo, in bytes: the MapBook (book_for_page: every
layer × (head, fusion) of the main map) and the matrix behind the shown map (matrix_for_page),
as the JSON strings Gradio sends, for a few looks.

    python benchmarks/book_bytes.py                 # random:vit-base-patch16-224
    python benchmarks/book_bytes.py --model random:vit-small-patch16-224
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vizvit.service.threads import configure_threads  # noqa: E402

configure_threads()

from vizvit import vocab  # noqa: E402
from vizvit.readings import attention as ra  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402
from vizvit.views import books  # noqa: E402

EXAMPLE = ROOT / "assets" / "examples" / "chelsea.jpg"

LOOKS = {
    "default ([CLS], raw, mean)": ra.AttnParams(layer=12),
    "a clicked patch, rolled out, tau 0.5": ra.AttnParams(layer=12, query=(3, 4), mode="rolled out", tau=0.5),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="random:vit-base-patch16-224")
    args = parser.parse_args(argv)
    wb = Workbench(device="cpu")
    vm = wb.model(args.model)
    ph = wb.handle(PhotoKey(vm.id, wb.add_photo(EXAMPLE)))
    g = vm.geometry
    print(f"{args.model}: {g.num_layers} layers × ({g.num_heads} heads + {len(vocab.FUSIONS)} fusions), "
          f"grid {g.grid[0]}×{g.grid[1]}, N = {g.seq_len}")
    print(f"{'look':<40} {'book bytes':>11} {'matrix bytes':>13}")
    for name, p in LOOKS.items():
        book, matrix = books.page_book(ph, p), books.page_matrix(ph, p)
        print(f"{name:<40} {len(book or ''):>11,} {len(matrix or ''):>13,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
