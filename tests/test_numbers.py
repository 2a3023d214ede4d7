"""The numbers panel and the attention-cost calculator, against numbers worked out by hand."""

from __future__ import annotations

import pytest

import vizvit
from vizvit.numbers import attention_cost, attention_cost_table, human_bytes, model_numbers


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
    assert c.pixel_tokens == 50_176 and c.pixel_weights == 2_517_630_976
    assert c.patch_tokens == 197 and c.patch_weights == 38_809 and c.patch_bytes == 155_236
    assert int(c.ratio) == 64_872
    assert human_bytes(c.pixel_bytes) == "10.1 GB" and human_bytes(c.patch_bytes) == "155 kB"
    table = attention_cost_table(c)
    assert table[4][1] == "64,872×"  # 2,517,630,976 / 38,809 = 64,872.35


def test_calculator_other_sizes_and_bad_input():
    c = attention_cost(384, 384, 32)
    assert c.patch_tokens == 1 + 12 * 12 and c.uncovered == (0, 0)
    # Not a multiple of P: ⌊224/15⌋ = 14 patches a side, 224 − 14·15 = 14 px unread.
    c = attention_cost(224, 224, 15)
    assert c.patch_tokens == 1 + 14 * 14 and c.uncovered == (14, 14)
    # P = 1: one token per pixel plus [CLS], a little MORE than pixels alone.
    c = attention_cost(224, 224, 1)
    assert c.patch_tokens == 50_177 and c.ratio < 1
    with pytest.raises(ValueError):
        attention_cost(224, 224, 300)
    with pytest.raises(ValueError):
        attention_cost(224, 224, 0)


def test_calculator_text_says_no_saving_at_p1_and_names_unread_pixels():
    from vizvit.views.lecture import attention_cost_panel

    assert "no saving" in attention_cost_panel(224, 1)[1]
    text = attention_cost_panel(100, 16)[1]
    assert "6×6 patches" in text and "last 4 px" in text and "38 tokens" not in text
    assert "37 tokens" in text  # 1 + 6·6
    table, text = attention_cost_panel(16, 64)  # a patch larger than the image: said, no table
    assert table == [] and "does not fit" in text


def test_charts_html_is_standalone_and_keeps_the_data():
    import plotly.graph_objects as go

    from vizvit.figures import charts_html

    fig = go.Figure(go.Bar(x=[0.25, 0.75], y=["cat", "dog"]))
    html = charts_html([("Top-5", fig.to_json()), ("again", fig.to_json())], "test")
    assert html.count("<h2>") == 2 and "0.75" in html and "dog" in html
    assert html.count("plotly.js v") <= 2 and len(html) > 1_000_000  # plotly.js embedded once
    import pytest

    with pytest.raises(ValueError, match="no charts"):
        charts_html([])


def test_zero_gpu_wraps_model_calls_only_when_spaces_is_installed(monkeypatch):
    import importlib
    import sys
    import types

    import vizvit.gpu as gpu

    assert gpu.on_gpu(len) is len  # no `spaces` here: functions stay as they are
    wrapped = []
    fake = types.ModuleType("spaces")
    fake.GPU = lambda fn: wrapped.append(fn) or (lambda *a, **k: ("on gpu", fn(*a, **k)))
    monkeypatch.setitem(sys.modules, "spaces", fake)
    try:
        importlib.reload(gpu)
        assert gpu.on_gpu(len)([1, 2]) == ("on gpu", 2) and wrapped == [len]
    finally:
        monkeypatch.delitem(sys.modules, "spaces")
        importlib.reload(gpu)


def test_patches_explanation_uses_the_model_numbers():
    from vizvit.views.patches import patches_explanation

    text = patches_explanation(vizvit.load_model("random:vit-base-patch16-224", device="cpu"))
    assert "14×14 = **196 patches**" in text and "**768 numbers**" in text and "**197 tokens**" in text
    assert "38,809-weight" in text


def test_status_warns_about_strongly_squashed_or_enlarged_photos(tiny16):
    from vizvit.views.common import resize_note

    assert "squashed" not in resize_note(tiny16, (300, 280)) and "⚠️" not in resize_note(tiny16, (300, 280))
    note = resize_note(tiny16, (451, 300))
    assert "squashed to a square" in note and "⚠️" not in note  # 1.5:1, usual for photos
    assert "Squashed 12:1" in resize_note(tiny16, (4800, 400))
    assert "Squashed 3:1" in resize_note(tiny16, (300, 900)), "a 3:1 portrait is warned about like a 4:1 one"
    assert "Squashed 4:1" in resize_note(tiny16, (1600, 400))
    assert "Enlarged 45×" in resize_note(tiny16, (5, 5))
    assert "Enlarged" not in resize_note(tiny16, (100, 100))  # 2.24×: fine


def test_squash_note_knows_the_orientation_of_a_non_square_input(tiny16):
    from dataclasses import replace

    from vizvit.views.common import resize_note

    wide = replace(tiny16, geometry=replace(tiny16.geometry, image_size=(224, 448)))  # H=224, W=448
    assert "squashed" not in resize_note(wide, (896, 448))  # 2:1 photo into a 2:1 input
    assert "Squashed 4:1" in resize_note(wide, (224, 448))  # a 1:2 portrait into a 2:1 input


def test_status_says_how_much_of_the_photo_a_centre_crop_keeps(tiny16):
    """ViT-Ti AugReg's processor: shortest side to 248, centre 224×224. A 451×300 photo (chelsea)
    becomes 372×248 (transformers truncates 372.8), of which 224×224 is kept: 50176 / 92256."""
    import re
    from dataclasses import replace

    from vizvit.models import Preprocess
    from vizvit.views.common import resize_note

    augreg = replace(tiny16, preprocess=Preprocess(resize=248, crop=(224, 224), resample=3,
                                                   mean=(0.5,) * 3, std=(0.5,) * 3))
    note = re.sub(r"<[^>]+>", "", resize_note(augreg, (451, 300)))  # as shown, without its markup
    assert "scaled to 372×248, centre 224×224 kept: 54% of the photo's area (its edges are cut off)" in note, note
    assert "squashed" not in note, "a crop keeps the shape"
    # A portrait: 300×600 -> 248×496, 224×224 kept of it = 50176 / 123008
    assert "scaled to 248×496, centre 224×224 kept: 41%" in re.sub(r"<[^>]+>", "", resize_note(augreg, (300, 600)))
    # Exactly the crop's size after scaling: all of it kept, nothing said to be cut
    square = re.sub(r"<[^>]+>", "", resize_note(replace(augreg, preprocess=replace(augreg.preprocess, resize=224)),
                                                (448, 448)))  # the text as shown, without its markup
    assert "kept: 100% of the photo's area;" in square and "cut off" not in square
    # No crop (tiny16's processor resizes to 224×224): no crop named
    assert "kept" not in resize_note(tiny16, (451, 300))
