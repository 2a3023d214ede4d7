"""Screenshots for the README: the real page, ViT-B/16 architecture, the example cat.

    python docs/make_screenshots.py [--model random:vit-base-patch16-224]

Writes docs/screenshot.png (Patches tab), docs/attention.png (Attention tab), and, for
lecture halls and phones, docs/projector.png (Attention, projector mode at 1366×900) and
docs/phone.png (390×844).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from appserver import running  # noqa: E402
from browser import page_at, upload, wait_image  # noqa: E402

import vizvit  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="random:vit-base-patch16-224")
    args = ap.parse_args()
    vm = vizvit.load_model(args.model, device="cpu")
    with running(vm) as url, page_at(url, width=1280, height=1000) as page:
        upload(page, str(ROOT / "assets" / "examples" / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        page.wait_for_selector("#top5 .js-plotly-plot")
        page.screenshot(path=str(ROOT / "docs" / "screenshot.png"))
        page.get_by_role("tab", name="Attention").click()
        wait_image(page, "attn-grid")
        page.locator("#attn-main").scroll_into_view_if_needed()
        page.screenshot(path=str(ROOT / "docs" / "attention.png"))
    with running(vm) as url:
        with page_at(url + "?projector=1&tab=attention", width=1366, height=900) as page:
            upload(page, str(ROOT / "assets" / "examples" / "chelsea.jpg"))
            wait_image(page, "attn-main")
            page.screenshot(path=str(ROOT / "docs" / "projector.png"))
        with page_at(url, width=390, height=844) as page:
            upload(page, str(ROOT / "assets" / "examples" / "chelsea.jpg"))
            wait_image(page, "patch-grid")
            page.locator("#tabs").scroll_into_view_if_needed()
            page.screenshot(path=str(ROOT / "docs" / "phone.png"))


if __name__ == "__main__":
    main()
