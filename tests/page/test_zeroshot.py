"""CLIP and SigLIP in a real browser: type labels, and the top-5 and the patch-label map change to them."""

from __future__ import annotations

import pytest
from appserver import running
from browser import page_at, shot, upload_and_open, wait_image
from tiny import EXAMPLES, make_tiny_tower

import vizvit


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_type_labels_and_the_top5_changes_to_them(tmp_path, kind):
    vm = vizvit.load_model(str(make_tiny_tower(tmp_path / kind, kind, 16)), device="cpu")
    with running(vm) as url, page_at(url, height=1600) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Patches")
        page.wait_for_selector("#top5 .js-plotly-plot")
        page.wait_for_selector("#zs-rule:has-text('softmax')" if kind == "clip" else "#zs-rule:has-text('sigmoid')")
        old = wait_image(page, "label-map")
        box = page.locator("#zs-labels textarea, #zs-labels input").first
        box.fill("a fish, a teapot, a bird")
        box.press("Enter")
        page.wait_for_function("() => document.querySelector('#top5').innerText.includes('a fish')")
        text = page.inner_text("#top5")
        assert "a fish" in text and "a teapot" in text and "a bird" in text and "a cat" not in text
        wait_image(page, "label-map", old)
        page.wait_for_selector("#zs-rule:has-text('(3)')")
        shot(page, f"zeroshot_{kind}_patches", full_page=True)
        # the relevance of a typed label on the Attention tab
        page.get_by_role("tab", name="Attention").click()
        page.wait_for_selector("#attn-main img", timeout=60_000)
        shot(page, f"zeroshot_{kind}_attention", full_page=False)


def test_the_zero_shot_boxes_show_only_for_an_image_text_model_also_after_a_model_change(tmp_path, tiny16):
    """A plain ViT has its own classes: no labels box, no template box, no patch-label map.
    Picking a CLIP model shows them; picking the plain ViT again hides them."""
    from appserver import page_name

    from vizvit.model.catalog import Catalog

    clip_dir = make_tiny_tower(tmp_path / "clip", "clip", 16)
    boxes = ("#zs-box", "#zs-labels", "#zs-template", "#label-map-box")
    catalog = Catalog(tiny16.id, extra=(str(clip_dir),))
    with running(tiny16, catalog=catalog) as url, page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Patches")
        page.wait_for_selector("#status:has-text('top-1')")
        for sel in boxes:
            assert not page.locator(sel).first.is_visible(), f"{sel} shows on a plain ViT"
        for name, shown in (("local: clip", True), (f"local: {page_name(tiny16)}", False)):
            page.locator("#model input").click()
            page.get_by_role("option", name=name, exact=True).click()
            page.wait_for_selector(f"#status:has-text('{name.removeprefix('local: ')}')")
            page.wait_for_selector("#status:has-text('top-1')")
            page.wait_for_selector("#zs-labels", state="visible" if shown else "hidden")
            for sel in boxes:
                assert page.locator(sel).first.is_visible() == shown, (name, sel)
