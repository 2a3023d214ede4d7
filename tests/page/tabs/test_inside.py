"""page/tabs/inside.py's handlers, called alone (no browser, no server) on a tiny ViT: each answers
what the Inside views answer, under the page's names; a click on the grid or typed heads switch
exactly those heads off (a new session key), and a clicked lens row sets its depth."""

from __future__ import annotations

import json

import gradio as gr
import numpy as np
import pytest
from built_page import same

from page.tabs import inside as tab
from vizvit.errors import UserError
from vizvit.model.ablation import Ablation
from vizvit.readings import heads
from vizvit.views import inside as iv


@pytest.fixture(scope="module")
def ui() -> dict:
    with gr.Blocks():
        return tab._layout()  # the tab's own components: the books name their elem ids


def select(x: float, y: float) -> gr.SelectData:
    return gr.SelectData(None, {"index": [x, y], "value": None})


def test_opening_the_tab_shows_the_views_page_and_the_depth_slider_fits_the_model(photo, ui, tiny16):
    wb, key = photo
    got = tab.show(wb, ui, key, 99)
    assert set(got) == set(tab.OPENED)
    want = iv.show(wb.handle(key), iv.InsideParams(depth=99))
    for n in tab.SHOWN:
        assert same(got[n], getattr(want, n)), f"{n} differs from the view's own answer"
    assert got["importance_text"] == want.importance_text  # the photo's own run or none (the last photo's stayed)
    L = tiny16.geometry.num_layers
    assert (got["depth"].maximum, got["depth"].value) == (L, L), "the depth clipped to the model"
    book = json.loads(got["lens_book"])
    assert book["pages"] == {} and book["controls"] == ["lens-depth"], "no pages on open: fill_lens brings them"
    charts = tab.show_charts(wb, key, 1)
    assert set(charts) == set(tab.CHARTS)
    one = iv.show(wb.handle(key), iv.InsideParams(depth=1))
    assert all(same(charts[n], getattr(one, n)) for n in tab.CHARTS)
    assert tab.show(wb, ui, None, 3) == {n: gr.skip() for n in tab.OPENED}
    assert tab.show_charts(wb, None, 3) == {n: gr.skip() for n in tab.CHARTS}


def test_the_lens_book_holds_one_readout_per_depth_on_the_top5_chart(photo, ui, tiny16):
    wb, key = photo
    book = json.loads(tab.fill_lens(wb, ui, key)["lens_book"])
    assert len(book["pages"]) == tiny16.geometry.num_layers + 1
    assert all(list(p) == ["lens-top5"] for p in book["pages"].values()) and book["rows"] == "lens-table"
    assert tab.fill_lens(wb, ui, None) == {"lens_book": gr.skip()}


def test_a_click_on_a_grid_cell_switches_that_head_off_and_typing_the_head_does_the_same(photo, tiny16):
    wb, key = photo
    g = tiny16.geometry
    lay, hd = g.num_layers - 1, g.num_heads - 1  # 0-based: the last cell, bottom right
    x, y = iv.LEFT + (hd + 0.5) * iv.CELL, iv.TOP + (lay + 0.5) * iv.CELL
    got = tab.click(wb, key, select(x, y))
    assert got["key"].ablation == Ablation(((lay, hd),)) and got["key"].sha1 == key.sha1
    assert got["status"] == iv.ablate(wb.handle(key), Ablation(((lay, hd),))).status
    assert tab.typed(wb, key, f"{lay + 1}.{hd + 1}", "zero")["key"] == got["key"]
    # The row's label switches the whole layer; off the grid, nothing changes.
    assert tab.click(wb, key, select(1, y))["key"].ablation.heads == tuple((lay, h) for h in range(g.num_heads))
    assert tab.click(wb, key, select(x, 1)) == {"key": gr.skip(), "status": gr.skip()}
    assert tab.click(wb, None, select(x, y)) == {"key": gr.skip(), "status": gr.skip()}
    assert tab.typed(wb, got["key"], "", "zero")["key"].ablation == Ablation(), "all heads on again"
    with pytest.raises(UserError):
        tab.typed(wb, None, "3.2", "zero")


def test_the_depth_slider_and_a_lens_row_answer_the_readout_at_that_depth(photo):
    wb, key = photo
    assert same(tab.depth(wb, key, 2.0)["depth_top5"], iv.depth_top5(wb.handle(key), 2))
    assert tab.depth(wb, None, 2.0) == {"depth_top5": gr.skip()}
    assert tab.clicked_depth(select(4, 0)) == {"depth": 4}, "row k of the table is depth k"


def test_which_heads_matter_streams_the_grid_and_ends_with_every_head_counted(photo, ui, tiny16):
    wb, key = photo
    steps = list(tab.importance(wb, key))
    g = tiny16.geometry
    assert steps and all(set(s) == {"grid", "importance_text"} for s in steps)
    imp = heads.head_importance(wb.handle(key))
    assert np.array_equal(steps[-1]["grid"]["value"], iv.ablation_grid(g, key.ablation, imp))
    # The grid is far above the button (a phone: ~1,500 px): its label says it now shows each head's importance,
    # from the first streamed cells on, and still does when the tab opens again on this photo.
    assert all(s["grid"]["label"] == "Layers × heads: each head's importance (top-1 drop) · click to switch heads "
               "off" for s in steps)
    assert tab.show(wb, ui, key, None)["grid"]["label"] == iv.GRID_LABEL_IMPORTANCE
    # the streamed run's last text is the one the tab shows on reopening (the intact top-1 sets its bar)
    assert steps[-1]["importance_text"] == iv.shown_importance(wb.handle(key))
    with pytest.raises(UserError):
        next(tab.importance(wb, None))


def test_which_heads_matter_on_a_weak_prediction_ends_with_the_quarter_bar(tiny16):
    """A flat grey photo: the tiny ViT's top-1 is under 20 %, so a head matters past a quarter of it, not 0.05.
    The streamed run's last text said the old 0.05 (page/tabs/inside.py dropped the intact top-1) while the tab,
    reopened, said the quarter."""
    from PIL import Image

    from vizvit.session import PhotoKey, Workbench

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    key = PhotoKey(tiny16.id, wb.add_photo(Image.new("RGB", (224, 224), (128, 128, 128))))
    p0 = float(wb.analysis(key).probs.max())
    assert p0 < 0.2, p0  # the case under test: a weak prediction
    last = list(tab.importance(wb, key))[-1]["importance_text"]
    assert f"more than {0.25 * p0:.{iv.SHOWN_DIGITS + 1}f} (a quarter of the intact top-1 probability" in last, last


def test_which_heads_matter_switches_heads_off_the_way_the_radio_says(photo, tiny16):
    """The radio on "mean" (the session key's mode): the run sets each head to its mean, and says so (it zeroed
    them and said "zeroed" whatever the radio said)."""
    wb, key = photo
    mean = iv.with_ablation(key, Ablation((), "mean"))
    steps = list(tab.importance(wb, mean))
    imp = heads.cached_importance(wb.handle(mean), "mean")
    assert imp is not None and not np.allclose(imp, heads.head_importance(wb.handle(key))), "not the zero run"
    assert np.array_equal(steps[-1]["grid"]["value"], iv.ablation_grid(tiny16.geometry, mean.ablation, imp))
    assert "when that head alone is set to its mean over the photo's tokens" in steps[-1]["importance_text"]
