"""Screenshots for the README: the real page, the trained ViT-Ti/16 (--model's default), the example cat.

    python docs/make_screenshots.py [--model ../shared/models/vit-tiny-augreg] [--tour DIR]

Writes docs/screenshot.png (Patches tab), docs/attention.png (Attention tab), and, for
lecture halls and phones, docs/projector.png (Attention, projector mode at 1366×900) and
docs/phone.png (390×844). --tour DIR instead writes every tab at desktop (1366×900), projector
(1366×900, ?projector=1) and phone (390×844) sizes into DIR, full page, to look at each one, with the
Compare tab against the model's random twin and a live room's two pages (a lecturer, one student).
--lesson DIR writes lesson steps (question, then reveal) at desktop and phone sizes, the reveal's
Open on the real tab, and the presenter view (projector mode, the step's QR code) into DIR.
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
from vizvit.vocab import TABS  # noqa: E402

LAYOUTS = {"desktop": ("", 1366, 900), "projector": ("?projector=1", 1366, 900), "phone": ("", 390, 844)}


def tour(vm: vizvit.VitModel, out: Path) -> None:
    """Every tab in every layout, after the cat's forward, each as one full-page PNG."""
    out.mkdir(parents=True, exist_ok=True)
    with running(vm) as url:
        for layout, (query, w, h) in LAYOUTS.items():
            with page_at(url + query, width=w, height=h) as page:
                upload(page, str(ROOT / "assets" / "examples" / "chelsea.jpg"))
                wait_image(page, "patch-grid")
                page.wait_for_selector("#status:has-text('top-1')")
                for tab_id, label in TABS.items():
                    page.get_by_role("tab", name=label).click()
                    page.wait_for_timeout(4000)  # the tab's first pictures and charts
                    for y in range(0, 20000, h):  # pictures below the fold load once scrolled to (lazy)
                        page.evaluate(f"window.scrollTo(0, {y})")
                        page.wait_for_timeout(150)
                    page.wait_for_timeout(1000)
                    page.evaluate("window.scrollTo(0, 0)")
                    page.screenshot(path=str(out / f"{layout}_{tab_id}.png"), full_page=True)
                    page.screenshot(path=str(out / f"{layout}_{tab_id}_first_screen.png"))
                    print(out / f"{layout}_{tab_id}.png")
            compare_with_twin(url + query, w, h, out / f"{layout}_compare_with_b.png")
            room_pages(url + query, w, h, out, layout)


def compare_with_twin(url: str, w: int, h: int, path: Path) -> None:
    """The Compare tab with model B the shown model's random twin (its "UNTRAINED" top-5 title)."""
    twin = "random:vit-tiny-patch16-224"
    sep = "&" if "?" in url else "?"
    with page_at(f"{url}{sep}tab=compare&compare={twin}", width=w, height=h) as page:
        page.wait_for_function(f"() => (document.querySelector('#cmp-model input') || {{}}).value?.includes('{twin}')")
        upload(page, str(ROOT / "assets" / "examples" / "chelsea.jpg"))
        for y in range(0, 12000, h):  # lazy pictures: loaded once in view
            page.evaluate(f"window.scrollTo(0, {y})")
            page.wait_for_timeout(400)
        page.wait_for_timeout(4000)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(path), full_page=True)
        print(path)


def room_pages(url: str, w: int, h: int, out: Path, layout: str) -> None:
    """A live room at this size: the lecturer's page after a student answered step 2, the student's."""
    base = url.split("?")[0]
    with page_at(base + "room?host=1" + ("&projector=1" if "projector" in url else ""), width=w, height=h,
                 wait_for="#ex") as host:
        host.click("#ex")
        host.wait_for_selector("#room-code", timeout=120_000)
        code = host.inner_text("#room-code").strip()
        student = host.context.browser.new_page(viewport={"width": w, "height": h})
        student.goto(base + f"room?code={code}")
        host.click("#next")
        host.wait_for_selector("text=Step 2 of", timeout=30_000)
        student.wait_for_selector("button[data-k]", timeout=60_000)
        student.locator("button[data-k]").first.click()
        host.wait_for_selector("#total:has-text('1 answered')", timeout=30_000)
        host.wait_for_timeout(1000)
        host.screenshot(path=str(out / f"{layout}_room_host.png"), full_page=True)
        student.screenshot(path=str(out / f"{layout}_room_student.png"), full_page=True)
        host.click("#reveal")
        student.wait_for_selector("text=The truth for this model", timeout=60_000)
        student.wait_for_timeout(1000)
        host.screenshot(path=str(out / f"{layout}_room_host_revealed.png"), full_page=True)
        student.screenshot(path=str(out / f"{layout}_room_student_revealed.png"), full_page=True)
        student.close()
        print(out / f"{layout}_room_host.png")


LESSON_SHOTS = {"patches": ("desktop", 1280, 1000), "shift1": ("phone", 390, 844), "mask": ("desktop", 1280, 1000)}


def lesson_shots(vm: vizvit.VitModel, out: Path) -> None:
    """Three steps (question, then reveal), one step's Open, and the presenter view with its QR code."""
    from vizvit.readings import lesson

    out.mkdir(parents=True, exist_ok=True)
    ids = [s.id for s in lesson.steps()]
    with running(vm) as url:
        for step_id, (layout, w, h) in LESSON_SHOTS.items():
            n = ids.index(step_id) + 1
            with page_at(url + f"?lesson=1&step={n}&example=chelsea", width=w, height=h) as page:
                page.wait_for_selector(f"#lesson-step:has-text('Step {n} of')")
                page.wait_for_selector("#status:has-text('top-1')")
                page.wait_for_timeout(800)
                page.screenshot(path=str(out / f"{layout}_{step_id}_1_question.png"), full_page=True)
                page.locator("#lesson-choice label, #lesson-number input").first.click()
                page.click("#lesson-reveal")
                page.wait_for_selector("#lesson-picture img")
                page.wait_for_timeout(800)
                page.screenshot(path=str(out / f"{layout}_{step_id}_2_reveal.png"), full_page=True)
                if step_id == "mask":
                    page.click("#lesson-open")
                    page.wait_for_selector("#mask-info:has-text('[MASK] token')")
                    page.locator("#mask-grid").scroll_into_view_if_needed()
                    page.wait_for_timeout(1500)
                    page.screenshot(path=str(out / f"{layout}_{step_id}_3_open_experiments.png"))
                print(out, step_id)
        n = ids.index("shift16") + 1
        with page_at(url + f"?lesson=1&step={n}&example=chelsea&projector=1", width=1366, height=900) as page:
            page.wait_for_selector("#lesson-qr img")
            wait_image(page, "lesson-qr")
            page.wait_for_timeout(800)
            page.screenshot(path=str(out / "projector_presenter_qr.png"))
            page.click("#lesson-reveal")
            page.wait_for_selector("#lesson-picture img")
            page.wait_for_timeout(800)
            page.screenshot(path=str(out / "projector_presenter_reveal.png"), full_page=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(ROOT.parent / "shared" / "models" / "vit-tiny-augreg"))
    ap.add_argument("--tour", type=Path, help="write every tab × layout here instead of the README's pictures")
    ap.add_argument("--lesson", type=Path, help="write the lesson's steps and presenter view here instead")
    args = ap.parse_args()
    vm = vizvit.load_model(args.model, device="cpu")
    if args.lesson:
        return lesson_shots(vm, args.lesson)
    if args.tour:
        return tour(vm, args.tour)
    with running(vm) as url, page_at(url, width=1280, height=1000) as page:
        upload(page, str(ROOT / "assets" / "examples" / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        page.wait_for_selector("#top5 .js-plotly-plot")
        page.screenshot(path=str(ROOT / "docs" / "screenshot.png"))
        page.get_by_role("tab", name="Attention").click()
        page.locator("#attn-grid").scroll_into_view_if_needed()  # below the fold: loads once in view
        wait_image(page, "attn-grid")
        page.locator("#attn-main").scroll_into_view_if_needed()
        wait_image(page, "attn-main")
        page.wait_for_timeout(500)
        page.screenshot(path=str(ROOT / "docs" / "attention.png"))
    with running(vm) as url:
        with page_at(url + "?projector=1&tab=attention", width=1366, height=900) as page:
            upload(page, str(ROOT / "assets" / "examples" / "chelsea.jpg"))
            wait_image(page, "attn-main")
            page.screenshot(path=str(ROOT / "docs" / "projector.png"))
        with page_at(url, width=390, height=844) as page:
            upload(page, str(ROOT / "assets" / "examples" / "chelsea.jpg"))
            wait_image(page, "patch-grid")
            page.wait_for_selector("#status:has-text('top-1')")
            page.locator("#tabs").scroll_into_view_if_needed()
            page.wait_for_selector("#top5 .js-plotly-plot")
            page.wait_for_timeout(1500)  # the patch grid's second picture (after the forward) and the chart
            page.screenshot(path=str(ROOT / "docs" / "phone.png"))


if __name__ == "__main__":
    main()
