"""The page's choices (vizvit/vocab.py), defined once: each tuple is what its Literal allows, in the
order written here by hand; every URL spelling of a mode reads back to the mode it writes; the mask
modes split into token modes and pixel fills with nothing lost or doubled; every tab id has its
view module and page module (found by the id)."""

from __future__ import annotations

from pathlib import Path

from vizvit import vocab

ROOT = Path(__file__).resolve().parent.parent


def test_the_choices_are_the_literals_in_the_written_order():
    assert vocab.FUSIONS == ("mean", "max", "min")
    assert vocab.SHOW_CHOICES == ("one head", "mean", "max", "min")
    assert vocab.DIRECTIONS == ("row", "column") and vocab.MODES == ("raw", "rolled out")
    assert vocab.FILLS == ("edge", "wrap", "constant")
    assert vocab.MASK_MODES == ("drop", "mask", "black", "mean", "blur")
    assert vocab.MASK_ACTIONS == ("clear", "invert", "random", "top", "bottom")
    assert vocab.ABLATE_MODES == ("zero", "mean")
    assert vocab.DISCARD_MODES[0] == "per row" and vocab.DISTANCE_NORMS[0] == "renormalised"  # the defaults first
    assert vocab.ATTN_SCALES[0] == "0 to max"


def test_every_mode_round_trips_through_its_url_spelling():
    assert set(vocab.MODE_URL) == set(vocab.MODES)
    for mode, spelled in vocab.MODE_URL.items():
        assert vocab.MODE_FROM_URL[spelled] == mode and " " not in spelled  # a link needs no escape
    assert set(vocab.MODE_FROM_URL.values()) <= set(vocab.MODES)


def test_the_mask_modes_split_into_token_modes_and_pixel_fills():
    assert set(vocab.TOKEN_MODES) | set(vocab.PIXEL_FILLS) == set(vocab.MASK_MODES)
    assert not set(vocab.TOKEN_MODES) & set(vocab.PIXEL_FILLS)
    assert vocab.PIXEL_FILLS == ("black", "mean", "blur")
    assert vocab.CURVE_MODES == ("black", "mean", "blur", "drop") and "mask" not in vocab.CURVE_MODES
    assert set(vocab.MASK_MODE_LABELS) <= set(vocab.MASK_MODES)


def test_each_tab_id_names_its_view_and_its_page_module():
    assert vocab.TAB_IDS == tuple(vocab.TABS) and vocab.TAB_IDS[0] == "patches"
    assert len(set(vocab.TABS.values())) == len(vocab.TABS)  # titles tell tabs apart
    for tab in vocab.TAB_IDS:
        assert (ROOT / "vizvit" / "views" / f"{tab}.py").is_file(), tab
        assert (ROOT / "page" / "tabs" / f"{tab}.py").is_file(), tab
