"""The numbers panel and the attention-cost calculator, against numbers worked out by hand."""

from __future__ import annotations

import pytest

import vizvit
from vizvit.classroom.numbers import attention_cost, attention_cost_table, human_bytes, model_numbers


def test_numbers_panel_for_vit_b16():
    rows = dict(model_numbers(vizvit.load_model("random:vit-base-patch16-224", device="cpu")))
    assert rows["parameters"] == "86,567,656"
    assert rows["sequence length N"] == "197"
    assert rows["attention weights per head (N²)"] == "38,809"
    assert rows["attention weights in all (L·H·N²)"] == "5,588,496"  # 12·12·38,809
    assert rows["patches per side"] == "14 × 14"
    assert "UNTRAINED" in rows["model"]


def test_calculator_at_224_with_16px_patches():
    c = attention_cost(224, 224, 16)
    # [CLS] on both sides (a reviewer: 50,176 pixel tokens against 197 patch tokens counted it on one)
    assert c.pixel_tokens == 224 * 224 + 1 == 50_177 and c.pixel_weights == 50_177 ** 2 == 2_517_731_329
    assert c.patch_tokens == 197 and c.patch_weights == 38_809 and c.patch_bytes == 155_236
    assert abs(c.ratio - (50_177 / 197) ** 2) < 1e-6 and int(c.ratio) == 64_874
    assert human_bytes(c.pixel_bytes) == "10.1 GB" and human_bytes(c.patch_bytes) == "155 kB"
    table = attention_cost_table(c)
    assert table[4][1] == "64,875×"  # 2,517,731,329 / 38,809 = 64,874.9


def test_calculator_other_sizes_and_bad_input():
    c = attention_cost(384, 384, 32)
    assert c.patch_tokens == 1 + 12 * 12 and c.uncovered == (0, 0)
    # Not a multiple of P: ⌊224/15⌋ = 14 patches a side, 224 − 14·15 = 14 px unread.
    c = attention_cost(224, 224, 15)
    assert c.patch_tokens == 1 + 14 * 14 and c.uncovered == (14, 14)
    # P = 1: one token per pixel plus [CLS] on both sides: the same table.
    c = attention_cost(224, 224, 1)
    assert c.patch_tokens == c.pixel_tokens == 50_177 and c.ratio == 1
    with pytest.raises(ValueError):
        attention_cost(224, 224, 300)
    with pytest.raises(ValueError):
        attention_cost(224, 224, 0)
