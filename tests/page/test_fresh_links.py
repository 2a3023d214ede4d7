"""Issue 43, item 1: every tab opened from a fresh link (?example=chelsea&tab=X) on the trained ViT-Ti,
as a student's first click on a lecturer's link: no error toast in the page, no traceback in the
server's log. The Compare tab raised "Slider minimum must be less than maximum." here (no model B:
a 1..1 depth slider) and its toast stayed on screen in every other tab."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from appserver import running
from browser import page_at
from settle import settled

from vizvit.vocab import TAB_IDS, TABS


@pytest.fixture(scope="module")
def trained_url(trained):
    with running(trained) as u:
        yield u


def _errors(page) -> list[str]:
    """The text of every error toast on the page (Gradio's toasts: a title, then the message)."""
    return [t for t in page.locator(".toast-body").all_inner_texts() if t.strip().lower().startswith("error")]


@pytest.mark.parametrize("tab", TAB_IDS)
def test_every_tab_opens_from_a_fresh_link_without_an_error(trained_url, tab, capfd, caplog):
    caplog.set_level(logging.ERROR)
    with page_at(f"{trained_url}?example=chelsea&tab={tab}") as page:
        page.wait_for_selector("#status:has-text('top-1')", timeout=180_000)  # the forward is done
        page.wait_for_function("t => [...document.querySelectorAll('[role=tab][aria-selected=true]')]"
                               ".some(b => b.innerText.trim() === t)", arg=TABS[tab])  # the link's tab is open
        settled(page)  # the open tab's own events and their follow-ups (an error toast comes with its answer)
        errors = _errors(page)
    log = capfd.readouterr()
    assert not errors, f"tab {tab}: error toast(s) {errors}"
    assert "Traceback" not in log.err + log.out, f"tab {tab}: a traceback in the server log:\n{log.err[-3000:]}"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], \
        f"tab {tab}: {[r.getMessage() for r in caplog.records]}"


def test_a_compare_links_layer_sets_the_depth_cursor_and_a_copied_link_keeps_it(trained_url):
    """layer= on the Compare tab is its depth cursor's position (12 layers against the random twin's 12)."""
    twin = "random:vit-tiny-patch16-224"
    with page_at(f"{trained_url}?example=chelsea&tab=compare&compare={twin}&layer=5", height=1400) as page:
        page.wait_for_function("() => (document.querySelector('#cmp-verdict')?.innerText || '').includes('position ')",
                               timeout=180_000)
        verdict = page.inner_text("#cmp-verdict")
        assert "position 5 of 12" in verdict and "A (layer 5/12)" in verdict, verdict
        assert not _errors(page)
        page.locator("#copy-link").click()
        page.wait_for_function("() => document.querySelector('#link-box textarea').value.includes('tab=compare')")
        copied = page.locator("#link-box textarea").input_value()
        assert "layer=5" in copied and f"compare={twin}" in copied, copied


TWIN = "random:vit-base-patch16-224"  # listed on every server (the tiny twin is listed offline only)


def _top1_by_transformers(path) -> str:
    """The trained ViT-Ti's top-1 on the example cat, by transformers' own processor and model."""
    import torch
    from PIL import Image
    from tiny import EXAMPLES
    from transformers import AutoImageProcessor, ViTForImageClassification

    model = ViTForImageClassification.from_pretrained(path).eval()
    photo = Image.open(EXAMPLES / "chelsea.jpg").convert("RGB")
    x = AutoImageProcessor.from_pretrained(path)(photo, return_tensors="pt")
    with torch.inference_mode():
        return model.config.id2label[int(model(**x).logits.argmax())]


def _twin_top1() -> str:
    """The random twin's top-1 on the example cat, in a fresh Python, apart from this process's server
    (built here while the server loaded a checkpoint, the twin once kept uninitialised weights:
    transformers' no-op init is process-wide; vizvit.model.models now builds under one lock)."""
    import subprocess
    import sys

    code = ("from PIL import Image; from vizvit.model import engine; from tiny import EXAMPLES; "
            f"vm = engine.load_model({TWIN!r}, device='cpu'); "
            "print(engine.analyze(vm, Image.open(EXAMPLES / 'chelsea.jpg').convert('RGB')).top5[0].label)")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=600,
                         cwd=root, env={**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'tests'}"})
    return out.stdout.strip().splitlines()[-1]


def _shown_model(page) -> tuple[str, str, str]:
    """(status line, banner, model box) once the link's photo is analysed."""
    page.wait_for_selector("#status:has-text('top-1')", timeout=180_000)
    banner = page.inner_text("#banner") if page.locator("#banner").is_visible() else ""
    return page.inner_text("#status"), banner, page.locator("#model input").input_value()


@pytest.mark.slow
def test_a_links_model_is_the_model_every_part_of_the_page_shows(trained_url, trained):
    """Issue 51: ?model=random:... showed the random model's name and banner over the start model's
    header and top-5. Each model link, and a teaching pair (model=A&compare=B), shows that model alone:
    the status line names it and gives its own top-1, the banner says untrained for the twin only."""
    from tiny import trained_dir

    twin_top1 = _twin_top1()
    trained_top1 = _top1_by_transformers(trained_dir())
    assert twin_top1 != trained_top1  # else the test could not tell them apart
    listed = Path(trained.id).name  # a local model is listed by its folder's name, never its path
    for link, name, top1, untrained in [
            (f"model={TWIN}&tab=patches", TWIN, twin_top1, True),
            (f"model={listed}&tab=patches", listed, trained_top1, False),
            (f"model={TWIN}&tab=compare&compare={listed}", TWIN, twin_top1, True)]:  # a teaching pair's shape
        with page_at(f"{trained_url}?example=chelsea&{link}") as page:
            status, banner, box = _shown_model(page)
            assert status.startswith(name) and f"top-1: {top1.split(',')[0]} (" in status, (link, status[:200])
            assert box.startswith(name) or box.startswith(f"local: {name}"), (link, box)
            assert ("untrained" in banner.lower()) == untrained, (link, banner)
            if "tab=compare" in link:
                page.wait_for_function("n => (document.querySelector('#cmp-title-a')?.innerText || '').includes(n)",
                                       arg=name, timeout=120_000)
            assert not _errors(page)
