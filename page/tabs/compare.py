"""The Compare tab: two models side by side on the session's photo, one depth/head cursor (the
depth's pictures swapped in by the page from a flipbook, the verdict from the server)."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import gradio as gr

from vizvit import vocab
from vizvit.model.images import image_sha1, load_image
from vizvit.session import PhotoKey, Workbench
from vizvit.views import compare
from vizvit.views.flip import Flipbook

from .. import flip, ids, kit
from ..kit import Ctx

MAP_CLASS = "cmp-map"  # style.css: no room kept for a label these pictures do not have
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "assets" / "examples"
# The CompareParams fields the tab's controls set, in the order its events list them.
CONTROLS = ["model_b", "depth", "head", "shared_range"]
SIDES = ("a", "b")
# The Page fields a cursor move shows (the page names are the fields' names), then those the tab shows on opening.
SHOWN_DEPTH = [*(f"{kind}_{s}" for kind in ("attention", "rollout") for s in SIDES), "verdict"]
SHOWN = [*SHOWN_DEPTH, *(f"{kind}_{s}" for kind in ("title", "top5", "positions") for s in SIDES), "distance", "pairs"]
OPENED = [*SHOWN, "book", "depth", "head", "shown_b"]  # shown_b: (photo key, model B) the tab shows (a gr.State)
Ui = dict[str, gr.components.Component]


@functools.cache
def _example_stems() -> dict[str, str]:
    """Each example photo's hash -> its name in a link (decoded once, on the first open of the tab)."""
    return {image_sha1(load_image(p)): p.stem for p in sorted(EXAMPLES_DIR.glob("*.jpg"))}


def model_b_choices(ctx: Ctx) -> list[tuple[str, str]]:
    """The page's list, then the listed models' random twins (which the gate also takes)."""
    c = ctx.wb.catalog
    if c is None:
        return []
    return [*c.choices(), *((f"{c.label(t)} (untrained twin)", t) for t in c.twins())]


def _sides() -> dict[str, dict[str, gr.components.Component]]:
    """Side ("a", "b") -> kind -> its component: each kind's row, A left and B right."""
    # One row per kind, A left and B right, so the two of a kind line up whatever each title's length.
    # min_width 300: on a phone every row goes one under the other (A, then B): at half a phone's
    # width a map's caption and colour-bar numbers were ~6 px (issue 51); the pictures name their side.
    sides: dict[str, dict[str, gr.components.Component]] = {"a": {}, "b": {}}
    for kind, make in (
            ("title", lambda s: gr.Markdown(elem_id=f"cmp-title-{s}", min_width=300)),
            ("attention", lambda s: gr.Image(label=f"side {s.upper()}: attention map", show_label=False,
                                             interactive=False, format="jpeg", buttons=[], elem_id=f"cmp-attn-{s}",
                                             elem_classes=[MAP_CLASS], min_width=300)),
            ("rollout", lambda s: gr.Image(label=f"side {s.upper()}: rollout map", show_label=False,
                                           interactive=False, format="jpeg", buttons=[], elem_id=f"cmp-roll-{s}",
                                           elem_classes=[MAP_CLASS], min_width=300)),
            ("top5", lambda s: gr.Plot(label=f"side {s.upper()}: top-5", show_label=False, elem_id=f"cmp-top5-{s}",
                                       min_width=300)),
            # labelled with its side here, and with its model too once one is shown (show: a phone stacks the two)
            ("positions", lambda s: gr.Image(label=compare.positions_label(s.upper(), None), interactive=False,
                                             format="png", elem_id=f"cmp-pos-{s}", min_width=300))):
        with gr.Row(elem_id=f"cmp-row-{kind}"):
            for s in SIDES:
                sides[s][kind] = make(s)
    return sides


def params(v: tuple, **changed: Any) -> compare.CompareParams:
    """The controls' values (in CONTROLS order) as CompareParams, with `changed` fields added."""
    return compare.CompareParams.from_controls({**dict(zip(CONTROLS, v)), **changed})


def book_value(ui: Ui, b: Flipbook) -> str:
    """Both sides' maps at every cursor position, as the page reads them (page/web/flipbook.js)."""
    return flip.for_page("cmp-depth", b, {t: ui[t] for t in compare.DEPTH_TARGETS}, {n: ui[n] for n in CONTROLS})


# -- handlers: explicit values in, {name: value} out (page names: CONTROLS, OPENED, SHOWN_DEPTH) ---------------
def show(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """The tab opened, or model B, the heads or the colour range changed: both sides, the cursor's range.
    v: the controls (CONTROLS order); from model B's own event, then (photo key, model B) as the tab shows
    them. Gradio's dropdown sends its .input on a blur too, picked or not, with the cursor's place as it
    was: a click on the cursor right after a pick put the cursor back (a walk-through). That photo and B as
    shown: nothing to answer. The key too, not B alone: a new photo's answer that did not come (it failed)
    leaves the photo before on the tab, and model B's .input is then the way to draw it."""
    controls, shown = v[:len(CONTROLS)], v[len(CONTROLS):]
    p = params(controls)
    if key is None or (shown and shown[0] == (key, p.model_b)):
        return kit.skip(OPENED)
    example = _example_stems().get(key.sha1)  # an example by its name, an upload by its key (the pairs' links)
    page = compare.show(wb.handle(key), dataclasses.replace(p, example=example, photo=None if example else key.sha1))
    # A one-layer pair has no range to slide over (Gradio refuses a 1..1 slider): left as it is.
    # Each side's position picture with its label (its side and model): an update, which keeps the component's
    # own format (kit.with_cells), the label with it.
    named = {f"positions_{s}": gr.update(value=getattr(page, f"positions_{s}"),
                                         label=getattr(page, f"positions_label_{s}")) for s in SIDES}
    return {**kit.values(page, {n: n for n in SHOWN}), **named, "book": book_value(ui, page.book),
            "depth": gr.Slider(maximum=page.positions, value=page.depth) if page.positions > 1 else gr.skip(),
            "head": gr.Dropdown(choices=page.heads, value=page.head), "shown_b": (key, p.model_b)}


def show_depth(wb: Workbench, key: PhotoKey | None, *v: Any) -> dict:
    """The cursor moved: both sides' maps at that depth and the verdict."""
    p = params(v)
    if key is None or not p.model_b:
        return kit.skip(SHOWN_DEPTH)
    return kit.values(compare.change_depth(wb.handle(key), p), {n: n for n in SHOWN_DEPTH})


def fill_book(wb: Workbench, ui: Ui, key: PhotoKey | None, *v: Any) -> dict:
    """The book's pages: both sides' maps at every cursor position."""
    p = params(v)
    if key is None or not p.model_b:
        return kit.skip(["book"])
    return {"book": book_value(ui, compare.depth_book(wb.handle(key), p))}


# -- the page: components by name, then the wiring ---------------------------------------------------
def _layout(ctx: Ctx) -> Ui:
    """The tab's components by page name: model B and the cursor, both sides' rows, the distances."""
    with gr.Row():
        # allow_custom_value: the gate (Workbench.model) checks the choice; a link may name a twin. scale 3:
        # most of the row, or projector mode cut the name ("random:vit-tiny-patch16-224 (5.7": a walk-through).
        model_b = gr.Dropdown(model_b_choices(ctx), value=None, label="Model B (A: the model at the top)",
                              elem_id="cmp-model", allow_custom_value=True, scale=3)
        head = gr.Dropdown(list(vocab.FUSIONS), value="mean", elem_id="cmp-head",
                           label="heads: fused, or head k (each model's matching head)")
        shared = gr.Checkbox(True, label="one colour range for both sides", elem_id="cmp-shared")
    pairs = gr.Markdown(elem_id="cmp-pairs")
    # No reset button: it fires no .input (see the Attention tab's layer slider).
    depth = kit.ClampedSlider(1, 12, value=12, step=1, elem_id="cmp-depth", buttons=[],
                              label="depth cursor, relative (each picture names its model's layer)")
    verdict = gr.Markdown(elem_id=ids.CMP_VERDICT)  # said once the cursor stands (web/a11y.js)
    sides = _sides()
    distance = gr.Plot(label="Mean attention distance", elem_id="cmp-distance")
    gr.Markdown(compare.TEXT)
    book = flip.component("cmp-depth")  # both sides' maps at every cursor position (page/web/flipbook.js)
    return {"model_b": model_b, "head": head, "shared_range": shared, "pairs": pairs, "depth": depth,
            "verdict": verdict, **{f"{kind}_{s}": c for s in SIDES for kind, c in sides[s].items()},
            "distance": distance, "book": book, "shown_b": gr.State(None)}


def build(ctx: Ctx, tab: gr.Tab) -> None:
    ui = _layout(ctx)
    ctx.links.update(compare=ui["model_b"])
    ctx.controls[tab.id] = {n: ui[n] for n in CONTROLS}  # a link's layer= sets the depth cursor (page/shell.py)
    ins = [ctx.key, *(ui[n] for n in CONTROLS)]
    opened = [ui[n] for n in OPENED]
    show_ = kit.answer(show, ui, ctx.wb, ui)  # one handler object: the four events share its concurrency group
    ctx.on_show(tab, show_, ins, opened)
    # .input, not .change: a link sets model B while another tab is open; the tab's open computes it. Model B's
    # with the B shown: its .input comes on a blur too (see show).
    ui["model_b"].input(show_, [*ins, ui["shown_b"]], opened, show_progress="minimal")
    ui["shared_range"].input(show_, ins, opened, show_progress="minimal")
    # The heads: .select, a pick. Gradio's dropdown sends .input on blur too, picked or not: a click on the depth
    # cursor with the heads' list open sent the cursor's old place with it, and that answer put the cursor
    # back (a walk-through: every move to another depth snapped back to 12).
    ui["head"].select(show_, ins, opened, show_progress="minimal")
    ui["depth"].change(kit.answer(show_depth, ui, ctx.wb), ins, [ui[n] for n in SHOWN_DEPTH], show_progress="hidden")
    flip.filled_later(ui["book"], kit.answer(fill_book, ui, ctx.wb, ui), ins, [ui["book"]], after="#cmp-attn-a img")
