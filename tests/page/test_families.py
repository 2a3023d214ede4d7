"""The page in a real browser for the other ViT families: DeiT's [DIST], DINOv2's registers,
BEiT's relative position bias."""

from __future__ import annotations

import pytest
from appserver import running
from browser import page_at, shot, upload_and_open, wait_image
from tiny import EXAMPLES


@pytest.mark.slow
def test_deit_distilled_offers_dist_and_reads_from_it(families):
    with running(families["deit"]) as url, page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Attention")
        main = wait_image(page, "attn-main")
        page.wait_for_selector("#attn-summary", state="visible")
        assert "[DIST]" in page.inner_text("#attn-summary")
        assert "mean patch→[DIST]" in page.inner_text("#attn-readout")
        page.locator("#attn-summary label", has_text="[DIST]").click()
        page.wait_for_function("() => document.querySelector('#attn-readout').innerText.includes('[DIST]→[DIST]')")
        wait_image(page, "attn-main", main)
        shot(page, "families_deit_attention_dist")


def test_dinov2_registers_are_named_tokens(families):
    with running(families["dinov2_reg"]) as url, page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Attention")
        wait_image(page, "attn-main")
        page.wait_for_function("() => document.querySelector('#attn-readout').innerText.includes('[REG4]')")
        assert page.locator("#attn-summary").is_hidden(), "one summary token: no control"
        page.get_by_role("tab", name="Embeddings").click()
        page.wait_for_function("() => document.querySelector('#emb-cls-info').innerText.includes('[REG4]')")
        assert "outlier" in page.inner_text("#emb-depth-info")
        shot(page, "families_dinov2_registers_embeddings")


def test_beit_positions_tab_shows_the_relative_bias_table(families):
    with running(families["beit"]) as url, page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Positions")
        wait_image(page, "pos-grid")
        page.wait_for_selector("#pos-tile .js-plotly-plot", timeout=60_000)
        assert "no position embeddings" in page.inner_text("#pos-text")
        page.wait_for_function(
            "() => document.querySelector('#pos-tile').textContent.includes('Relative position bias')")
        assert "Δ = (0, 0)" in page.inner_text("#pos-numbers")
        shot(page, "families_beit_positions")


def test_siglip_positions_tab_has_no_cls_chart(towers):
    # No [CLS] in SigLIP: the [CLS] chart was drawn empty (all NaN) with "+nan" in the text (an audit)
    with running(towers["siglip32"]) as url, page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Positions")
        wait_image(page, "pos-grid")
        page.wait_for_function("() => document.querySelector('#pos-text').innerText.includes('No [CLS] position')")
        assert page.locator("#pos-cls").is_hidden() and "nan" not in page.inner_text("#pos-text")
        shot(page, "families_siglip_positions")
