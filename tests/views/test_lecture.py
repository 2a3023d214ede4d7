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


def test_a_typed_number_is_read_against_the_sliders_range():
    """What the table is for and what the box shows, for numbers typed into the boxes (P: 1..64, side: 16..1024):
    above the range the top, set in the box at once; below it nothing while typing (3 may become 384), the bottom
    once the box is left; a fraction rounded; an empty box said."""
    from vizvit.views.lecture import PATCH, SIDE, Typed, read_typed, show_typed

    assert (PATCH, SIDE) == ((1, 64), (16, 1024))

    def p(raw):
        return read_typed(raw, PATCH, "P", "", "P = {}", False)

    def side(raw, committed=False):
        return read_typed(raw, SIDE, "the image side", " px", "{} px", committed)

    assert p(200) == Typed(64, 64, "P is at most 64: the table is for P = 64.")
    assert p(16) == Typed(16)  # in range: the box as typed
    assert p(10.6) == Typed(11, 11)
    assert side(3) == Typed(None, None, "The image side is at least 16 px: type 16 or more.")
    assert side(3, committed=True) == Typed(16, 16, "The image side is at least 16 px: the table is for 16 px.")
    assert side(None) == Typed(None, None, "Type the image side in pixels, a whole number from 16 to 1024.")
    # Anything else a caller's event may carry (the events take raw values): said, never an error.
    for bad in ("", "abc", "nan", "inf", "-inf", "1e400", [1], {"a": 1}, True):
        assert p(bad) == Typed(None, None, "Type P in pixels, a whole number from 1 to 64."), bad
    page = show_typed({"side": 5000, "patch": 32})  # 1024 px in 32-px patches: 32² + 1 = 1,025 tokens
    assert page.side == 1024 and page.patch is None
    assert page.cost_text.startswith("⚠️ The image side is at most 1024 px: the table is for 1024 px.")
    assert "At 1024×1024 px" in page.cost_text and "1,025 tokens (with [CLS])" in page.cost_text
    assert show_typed({"side": 224, "patch": 0}).cost == []  # P = 0: said, no table
