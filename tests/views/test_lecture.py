"""The Lecture tab's view (vizvit/views/lecture.py): the attention-cost panel's table and sentence
against counts worked out by hand, and the tab's text."""

from __future__ import annotations


def test_calculator_text_says_no_saving_at_p1_and_names_unread_pixels():
    from vizvit.views.lecture import attention_cost_panel

    assert "no saving" in attention_cost_panel(224, 1)[1]
    text = attention_cost_panel(100, 16)[1]
    assert "6×6 patches" in text and "last 4 px" in text and "38 tokens" not in text
    assert "37 tokens" in text  # 1 + 6·6
    table, text = attention_cost_panel(16, 64)  # a patch larger than the image: said, no table
    assert table == [] and "does not fit" in text


def test_the_lecture_tab_no_longer_promises_maps_on_the_object():
    from vizvit.views.lecture import LECTURE_TEXT

    assert "relevance on the object" not in LECTURE_TEXT and "artifact tokens" in LECTURE_TEXT


def test_the_lecture_texts_claims_are_what_the_page_does():
    """h18's review on the trained ViT-Ti: a link's wrong value did not always fall back to the default (step=99
    opened the last step, layer=13 the last layer); `mask` alone did not say where it counts from (0, where layer,
    head and ablate count from 1); and "layer 1 heads look near, late heads look far" beside a layer-1 head at
    95 px, farther than every head of layers 2 to 6."""
    from vizvit.views.lecture import LECTURE_TEXT

    text = " ".join(LECTURE_TEXT.split())
    assert "`mask` (patch numbers counted from 0" in text
    assert "by the default or by the nearest that exists (past the last layer or step: the last one)" in text
    assert "falls back to the default" not in text and "layer 1 heads look near" not in text
