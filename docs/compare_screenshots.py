"""Screenshots of the Compare tab, two pairs, each at desktop (1280×900), projector (1366×900,
?projector=1) and phone (390×844), full page and first screen:

    python docs/compare_screenshots.py OUT_DIR

1. the trained ViT-Ti/16 (../shared/models/vit-tiny-augreg) against its random twin
   (random:vit-tiny-patch16-224), opened by a deep link (compare=);
2. a tiny DINOv2 against a tiny DINOv2 with registers (tests/tiny.py: random weights, built here),
   model B listed by the command line (Catalog extra), as `python app.py` lists its --model.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from appserver import page_name, serving  # noqa: E402
from browser import page_at, wait_image  # noqa: E402
from tiny import make_tiny_family, trained_dir  # noqa: E402

import vizvit  # noqa: E402
from vizvit.model.catalog import Catalog  # noqa: E402

LAYOUTS = {"desktop": ("&projector=0", 1280, 900), "projector": ("&projector=1", 1366, 900),
           "phone": ("&projector=0", 390, 844)}


def shoot(url: str, query: str, out: Path, name: str) -> None:
    for layout, (extra, w, h) in LAYOUTS.items():
        with page_at(url + query + extra, width=w, height=h) as page:
            for side in ("attn-a", "attn-b", "roll-a", "roll-b"):  # lazy pictures: loaded once in view
                page.locator(f"#cmp-{side}").scroll_into_view_if_needed()
                try:
                    wait_image(page, f"cmp-{side}", timeout_ms=60_000)
                except Exception:
                    page.screenshot(path=str(out / f"FAILED_{name}_{layout}.png"), full_page=True)
                    print("FAILED", name, layout, side, page.inner_text("#cmp-verdict"))
                    raise
            page.wait_for_selector("#cmp-verdict:has-text('Verdict')")
            for y in range(0, 12000, h):  # pictures below the fold load once scrolled to (lazy)
                page.evaluate(f"window.scrollTo(0, {y})")
                page.wait_for_timeout(200)
            page.wait_for_timeout(1500)
            page.evaluate("window.scrollTo(0, 0)")
            page.locator("#cmp-depth").scroll_into_view_if_needed()
            page.screenshot(path=str(out / f"{name}_{layout}_first_screen.png"))
            page.screenshot(path=str(out / f"{name}_{layout}.png"), full_page=True)
            print(out / f"{name}_{layout}.png")


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    trained = trained_dir()
    if trained is not None:
        vm = vizvit.load_model(str(trained), device="cpu")
        with serving(vm) as (url, _):
            shoot(url, "?example=chelsea&tab=compare&compare=random:vit-tiny-patch16-224", out, "trained_vs_twin")
    with tempfile.TemporaryDirectory() as tmp:
        a = make_tiny_family(Path(tmp) / "dinov2", "dinov2")
        b = make_tiny_family(Path(tmp) / "dinov2-reg", "dinov2_reg")
        vm = vizvit.load_model(str(a), device="cpu")
        with serving(vm, catalog=Catalog(vm.id, extra=(str(b),))) as (url, _):
            shoot(url, f"?example=chelsea&tab=compare&compare={page_name(vizvit.load_model(str(b), 'cpu'))}", out,
                  "dinov2_vs_registers")


if __name__ == "__main__":
    main()
