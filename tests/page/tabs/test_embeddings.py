"""page/tabs/embeddings.py's handlers, called alone (no browser, no server) on a tiny ViT: each
answers what the Embeddings views answer for the controls it was sent, under the page's names; a
click (the server's select at a pixel, or the page's drawn "row,col,n") answers for the patch under
it; and the two pictures' clicks share one handler, as the depth's scatter and the colour's do."""

from __future__ import annotations

import json
from types import SimpleNamespace

import gradio as gr
import pytest
from built_page import same

from page.kit import Ctx
from page.tabs import embeddings as tab
from vizvit import vocab
from vizvit.pictures import render
from vizvit.views import embeddings


@pytest.fixture(scope="module")
def ui() -> dict:
    with gr.Blocks():
        return tab._layout()


def controls(**changed) -> tuple:
    """The tab's control values as its events send them (CONTROLS order)."""
    c = {**dict(depth=1, clicked=None, color_by="row", dropout=vocab.DEFAULT_DROPOUT), **changed}
    assert list(c) == tab.CONTROLS
    return tuple(c.values())


def params(**changed) -> embeddings.EmbeddingsParams:
    return embeddings.EmbeddingsParams.from_controls(dict(zip(tab.CONTROLS, controls(**changed))))


def assert_shows(answer: dict, want, names: list[str]) -> None:
    for n in names:
        assert same(answer[n], getattr(want, n)), f"{n} differs from the view's own answer"


def test_opening_shows_the_views_page_and_sets_the_depth_slider_to_the_model(photo, ui, tiny16):
    wb, key = photo
    got = tab.show(wb, ui, key, *controls(depth=99))
    assert set(got) == set(tab.OPENED)
    want = embeddings.show(wb.handle(key), params(depth=99))
    assert_shows(got, want, tab.SHOWN)
    L = tiny16.geometry.num_layers
    assert (got["depth"].maximum, got["depth"].value) == (L, L), "clipped to the model's depth"
    book = json.loads(got["book"])
    assert book["name"] == "emb-depth" and book["pages"] == {}, "the depth book comes empty (filled later)"
    assert book["controls"] == ["emb-depth"]
    blank = tab.show(wb, ui, None, *controls())
    assert blank == {n: gr.skip() for n in tab.OPENED}, "no photo yet: nothing cleared (kit.skip says why)"


def test_a_depth_move_and_the_rest_answer_what_the_views_do(photo, ui):
    wb, key = photo
    ph = wb.handle(key)
    moved = tab.show_depth(wb, ui, key, *controls(depth=2))
    assert_shows(moved, embeddings.change_depth(ph, params(depth=2)), tab.SHOWN_DEPTH)
    assert moved["tokens"] == embeddings.token_book(ph, params(depth=2), with_view=False)
    rest = tab.show_rest(wb, ui, key, *controls(depth=99))
    assert_shows(rest, embeddings.rest(ph, params(depth=99)), tab.SHOWN_REST)
    assert rest["tokens"] == embeddings.token_book(ph, params(depth=ph.vm.geometry.num_layers)), "depth clipped"
    scat = tab.show_scatter(wb, ui, key, *controls(color_by="column"))
    assert same(scat["scatter"], embeddings.scatter(ph, params(color_by="column")).scatter)
    assert json.loads(scat["colors"])["name"] == "emb-color"
    filled = tab.fill_book(wb, ui, key, *controls(depth=2))
    pages = json.loads(filled["book"])["pages"]
    assert len(pages) == ph.vm.geometry.num_layers + 1, "a page at every depth, 0..L"
    drop = tab.show_dropout(wb, ui, key, *controls(dropout=0.5))
    want = embeddings.dropout_panel(ph.vm, ph.analysis(), 0.5)
    assert same(drop["dropout_image"], want.image) and drop["dropout_text"] == want.text
    for fn, names in ((tab.show_depth, [*tab.SHOWN_DEPTH, "tokens"]), (tab.show_rest, [*tab.SHOWN_REST, "tokens"]),
                      (tab.show_dropout, list(tab.DROPOUT.values()))):
        assert fn(wb, ui, None, *controls()) == {n: gr.skip() for n in names}, fn.__name__
    assert tab.show_scatter(wb, ui, None, *controls()) == {"scatter": gr.skip(), "colors": gr.skip()}
    assert tab.fill_book(wb, ui, None, *controls()) == {"book": gr.skip(), "colors": gr.skip()}


def test_a_click_answers_for_the_patch_under_the_pixel_and_a_drawn_click_for_its_cell(photo, ui, tiny16):
    wb, key = photo
    g = tiny16.geometry
    s, pw = render.display_scale(g), g.patch_size
    r, c = 3, 5
    evt = SimpleNamespace(index=[(c + 0.5) * pw * s, (r + 0.5) * pw * s])  # the centre of patch (r, c)
    got = tab.click(wb, ui, key, *controls(), evt)
    assert got["clicked"] == (r, c)
    want = embeddings.change_click(wb.handle(key), params(clicked=(r, c)))
    assert_shows(got, want, tab.SHOWN_CLICK)
    drawn = tab.picked(wb, ui, key, *controls(), f"{r},{c},7")
    assert drawn["clicked"] == (r, c) and same(drawn["similarity"], want.similarity)
    assert tab.click(wb, ui, None, *controls(), evt) == {n: gr.skip() for n in tab.CLICKED}


def test_a_drawn_click_outside_the_grid_is_a_message_in_the_page(photo):
    wb, key = photo
    with gr.Blocks() as demo:
        ctx = Ctx(wb, gr.State(), gr.State(), gr.Markdown(), key.model_id)
        with gr.Tab("Embeddings", id="embeddings") as t:
            tab.build(ctx, t)
    picked = [f for f in demo.fns.values() if f.fn is not None and f.fn.__name__ == "picked"]
    assert len(picked) == 1
    with pytest.raises(gr.Error, match="outside"):
        picked[0].fn(key, *controls(), "99,0,1")


def test_events_that_share_a_handler_share_its_concurrency_group(photo):
    wb, key = photo
    with gr.Blocks() as demo:
        ctx = Ctx(wb, gr.State(), gr.State(), gr.Markdown(), key.model_id)
        with gr.Tab("Embeddings", id="embeddings") as t:
            tab.build(ctx, t)
    by = {}
    for f in demo.fns.values():
        if f.fn is not None:
            by.setdefault(f.fn.__name__, []).append(f)
    assert len(by["click"]) == 2 and len(by["show_scatter"]) == 2, "both pictures' selects; depth's then, colour's"
    for name in ("click", "show_scatter"):
        assert len({f.concurrency_id for f in by[name]}) == 1, f"{name}: one queue group, as one handler"
    # The controls a lesson step sets, by EmbeddingsParams field (page/tabs/lesson.py).
    registered = ctx.controls["embeddings"]
    assert list(registered) == tab.CONTROLS
    assert [getattr(c, "elem_id", None) for c in registered.values()] == ["emb-depth", None, "emb-color", "emb-dropout"]


def test_the_depth_pictures_carry_the_titles_the_text_names_them_by(ui):
    """The depth text names each picture by its title (a phone stacks them: no "left"): that title is the one
    the picture's own label shows."""
    for name, said in (("pca", "PCA as RGB over the photo"), ("similarity", "Cosine similarity of the clicked")):
        title = ui[name].label.split(" (click")[0]
        assert said in title and f"*{title}*" in embeddings.DEPTH_TEXT, (ui[name].label, embeddings.DEPTH_TEXT)
