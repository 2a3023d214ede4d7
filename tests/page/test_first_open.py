"""Issue 27, a tab's first open: no layout container is an event output (Gradio then re-reads every
component inside it on every status message), and a tab's slow part follows its first picture."""

from __future__ import annotations

import threading

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from browser import page_at, upload_and_open, wait_image
from page import kit, shell
from vizvit import engine
from vizvit.session import Workbench


def test_the_built_page_has_no_container_among_any_events_outputs(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)  # build_demo runs the check itself; and again here
    kit.check_no_container_outputs(demo)
    outs = [o for fn in demo.fns.values() for o in fn.outputs]
    assert outs and not any(isinstance(o, kit.NO_CONTAINER_OUTPUTS) for o in outs)


def test_every_event_of_the_built_page_keeps_at_most_one_progress_status(tiny16):
    """Gradio writes every kept loading status back on every status message of every event: the
    page's events keep none where they show no progress, else one (kit.few_progress_targets)."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    deps = demo.get_config_file()["dependencies"]
    assert len(deps) > 100 and all(d["show_progress_on"] is not None and len(d["show_progress_on"]) <= 1
                                   for d in deps), [d for d in deps if not d["show_progress_on"] or len(d["show_progress_on"]) > 1][:3]
    for d in deps:
        if d["show_progress"] == "hidden" or not d["outputs"]:
            assert d["show_progress_on"] == [], d
    kept = {i for d in deps for i in d["show_progress_on"]}
    assert len(kept) < 0.2 * len({i for d in deps for i in d["outputs"]}), len(kept)


def test_progress_shows_on_an_events_first_picture_else_its_first_output():
    with gr.Blocks() as demo:
        md, img, plot, box = gr.Markdown(), gr.Image(), gr.Plot(), gr.Textbox()
        b = gr.Button()
        b.click(lambda: None, None, [md, img], show_progress="hidden")
        b.click(lambda: None, None, [md, plot, img], show_progress="minimal")
        b.click(lambda: None, None, [box, md])
        b.click(lambda: None, None, [md, img], show_progress_on=md)
        b.click(lambda: None, None, None)
    assert kit.few_progress_targets(demo) == 4
    assert [fn.show_progress_on for fn in demo.fns.values()] == [[], [plot], [box], [md], []]


@pytest.mark.parametrize("container", [gr.Tabs, gr.Group, gr.Accordion])
def test_the_check_refuses_a_container_output(container):
    with gr.Blocks() as demo:
        with container() as box:
            with (gr.Tab("x") if container is gr.Tabs else gr.Column()):
                md = gr.Markdown()
        gr.Button().click(lambda: None, None, [md, box])
    with pytest.raises(ValueError, match="containers"):
        kit.check_no_container_outputs(demo)


@pytest.mark.parametrize("tab_id, first_pic, later", [
    ("positions", "pos-grid", {"pos-res-grid", "pos-res-top5", "pos-res-text"}),
    ("embeddings", "emb-pca", {"emb-scatter", "emb-cls", "emb-filters", "emb-tokens"}),  # tokens: the clicked-token book
    ("experiments", "mask-grid", {"shift-top5", "mask-top5"}),
    ("attention", "attn-main", {"attn-distance", "attn-pick"}),
    ("inside", "ablate-grid", {"lens-plot", "lens-top5", "ablate-top5"}),
])
def test_a_tabs_slow_part_is_a_follow_up_not_in_its_first_answer(tiny16, tab_id, first_pic, later):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    with gr.Blocks():
        ctx = kit.Ctx(wb=wb, key=gr.State(None), tab=gr.State("patches"), status=gr.Markdown(),
                      default_model=tiny16.id)
        with gr.Tabs():
            with gr.Tab(tab_id, id=tab_id) as t:
                shell.PAGES[tab_id].build(ctx, t)
    (_, _, _, first), = [s for s in ctx.shows if s[0] == tab_id]
    (_, _, _, rest), = [s for s in ctx.thens if s[0] == tab_id]
    ids = lambda cs: {c.elem_id for c in cs}  # noqa: E731
    assert first_pic in ids(first) and not ids(first) & later
    assert ids(rest) == later


def test_the_positions_grid_paints_while_the_forward_at_another_size_still_runs(tmp_path, tiny16, monkeypatch):
    """The forward at 384 px is held until the grid is on screen: the grid must not wait for it."""
    from appserver import running

    release, started = threading.Event(), threading.Event()
    real = engine.predict_at_size

    def held(*a, **k):
        started.set()
        release.wait(60)
        return real(*a, **k)

    monkeypatch.setattr(engine, "predict_at_size", held)
    photo = tmp_path / "new.png"  # a photo no other test has cached
    Image.fromarray(np.random.default_rng(3).integers(0, 255, (240, 260, 3), dtype=np.uint8)).save(photo)
    with running(tiny16) as url, page_at(url) as page:
        try:
            upload_and_open(page, str(photo), "Positions")
            wait_image(page, "pos-grid")
            page.wait_for_selector("#pos-tile .js-plotly-plot")
            assert started.wait(30), "the follow-up never asked for the forward at 384 px"
            assert "At 384" not in page.inner_text("#pos-res-text")
        finally:
            release.set()
        page.wait_for_function("() => document.querySelector('#pos-res-text').innerText.includes('At 384')")
        page.locator("#pos-res-grid").scroll_into_view_if_needed()  # a lazy <img>: loaded once in view
        wait_image(page, "pos-res-grid")


def test_a_new_photos_follow_up_starts_the_other_tabs_preparation(tiny16, monkeypatch):
    """The key's follow-up event (sent once the open tab's answer is painted) hands the photo to
    Workbench.prepare_later; the open tab's own event does not wait for it."""
    from vizvit.session import PhotoKey

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    asked = []
    monkeypatch.setattr(wb, "prepare_later", asked.append)
    demo = shell.build_demo(wb, tiny16.id)
    fns = {getattr(f.fn, "__name__", ""): f for f in demo.fns.values()}
    key = PhotoKey(wb.catalog.public(tiny16.id), wb.add_photo(str(shell.EXAMPLES[0])))

    def call(name: str) -> None:  # the event's function on its inputs' values, the session key set
        f = fns[name]
        f.fn("patches", *[key if getattr(c, "time_to_live", None) == shell.SESSION_TTL_S else c.value
                          for c in f.inputs[1:]])

    call("dispatch")
    assert asked == [], "the open tab's own answer started the preparation (it competes with its encoding)"
    call("dispatch_then")
    assert asked == [key]
