"""vizvit web page: wiring only. Every computation lives in the `vizvit` package.

    python app.py                                  # google/vit-base-patch16-224, 127.0.0.1:7860
    python app.py --model random:vit-base-patch16-224   # offline, untrained weights
    python app.py --model ./my_checkpoint --device cuda

Each tab is one `*_tab(ctx)` function that builds its components and registers its
events. Handlers unpack inputs, call the backend, and return what components show.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from vizvit.threads import configure_malloc, configure_threads

configure_threads()  # OMP_WAIT_POLICY=PASSIVE and the thread count, before torch loads
configure_malloc()  # freed result tensors go back to the OS: RSS stays within the cache budget

import gradio as gr  # noqa: E402

import gradio_patch  # noqa: E402
from gradio.data_classes import FileData  # noqa: E402

from vizvit import deeplink, figures, hub, vocab, web  # noqa: E402
from vizvit.api import PublicApi  # noqa: E402
from vizvit.catalog import OFFLINE_FALLBACK, SIZES_INFO, Catalog  # noqa: E402
from vizvit.errors import UserError  # noqa: E402
from vizvit.images import image_sha1, load_image  # noqa: E402
from vizvit.launch import server_address  # noqa: E402
from vizvit.models import DEFAULT_MODEL, RANDOM_PREFIX  # noqa: E402
from vizvit.ablation import Ablation, format_heads  # noqa: E402
from vizvit.session import PhotoKey, Workbench  # noqa: E402
from vizvit.zeroshot import DEFAULT_LABELS, DEFAULT_TEMPLATE, check_template, parse_labels  # noqa: E402
from vizvit.views import attention as ap  # noqa: E402
from vizvit.views import common as panels  # noqa: E402
from vizvit.views import embeddings, experiments, inside, lecture, patches, positions  # noqa: E402

log = logging.getLogger("vizvit.app")
HERE = Path(__file__).resolve().parent
METHODS_TEXT = (HERE / "docs" / "methods.md").read_text(encoding="utf-8")
METHODS_LINK = "📐 How each map here is computed, from which paper, and how other code differs: [Methods and sources](#methods) (bottom of the page)."
EXAMPLES = sorted(str(p) for p in (HERE / "assets" / "examples").glob("*.jpg"))
UPLOAD_TYPES = [".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff",
                # accepted only so vizvit can say clearly why it refuses them
                ".heic", ".heif", ".avif", ".svg"]
MAX_FILE_SIZE = "20mb"
SESSION_TTL_S = 3600
# System fonts only: the default theme fetches web fonts, which stalls the page offline
# (a lecture hall without internet) and in tests.
THEME = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                          font_mono=["ui-monospace", "monospace"])


gradio_patch.install()  # atomic writes of cached output images (see gradio_patch.py)


@dataclass(frozen=True)
class Ctx:
    """What every tab needs: the backend and the shared components."""

    wb: Workbench
    key: gr.State  # PhotoKey | None: the session's photo, never tensors
    tab: gr.State  # id of the visible tab, so hidden tabs don't compute
    status: gr.Markdown  # the one-line status under the model box
    default_model: str  # the model the page opens with
    links: dict[str, gr.components.Component] = field(default_factory=dict)  # deep-link targets
    long_work: list = field(default_factory=list)  # events a new upload cancels (sweeps, curves)
    shows: list = field(default_factory=list)  # (tab id, fn, inputs, outputs) of every on_show
    previews: list = field(default_factory=list)  # (tab id, fn, inputs, outputs) of every on_preview
    # Shown only while the model is an image-text one (CLIP / SigLIP), hidden for a plain ViT;
    # the page sets them on a model change and when a link opens (see zero_shot_visible).
    zero_shot_only: list = field(default_factory=list)

    def on_show(self, tab: gr.Tab, fn: Callable, inputs: list, outputs: list) -> None:
        """Run fn(*inputs) -> outputs when the tab is opened, and when the photo or model
        changes while it is open (see show_visible). Hidden tabs compute nothing (lazy tabs)."""
        self.shows.append((tab.id, fn, inputs, outputs))
        tab.select(fn, inputs, outputs, show_progress="minimal")

    def on_preview(self, tab: gr.Tab, fn: Callable, inputs: list, outputs: list) -> None:
        """fn(new key, *inputs) -> outputs: what the tab shows of a new photo before its forward
        pass (e.g. the model-input view's grid), sent by the upload's event in the same message
        as the new key, while the forward runs (see new_photo). Drawn exactly as on_show's fn
        draws it afterwards, so the same pictures arrive twice and nothing flickers."""
        self.previews.append((tab.id, fn, inputs, outputs))

    def show_visible(self) -> None:
        """ONE event when the session's key changes (a photo, a model, heads switched off): it
        computes the open tab's views and skips every other output. One event per tab would cost
        a queue round trip each in the browser, for tabs nobody sees."""
        inputs, outputs = _io(self.shows)

        def dispatch(current: str, *values: Any) -> list:
            return _open_tab(self.shows, inputs, outputs, current, values)

        # js: sent once the upload's preview (the patch grid) is painted; Gradio's work for this
        # event would otherwise hold that first picture back (see web/after_paint.js).
        self.key.change(dispatch, [self.tab, *inputs], outputs, show_progress="minimal",
                        js=web.after_paint("#patch-grid img"))

    def preview_io(self) -> tuple[list, list]:
        """The inputs and outputs of every preview, each once (see preview)."""
        return _io(self.previews)

    def preview(self, current: str, key: PhotoKey, values: tuple) -> list:
        """The open tab's preview of `key` for preview_io()'s outputs (gr.skip() for the rest)."""
        inputs, outputs = self.preview_io()
        return _open_tab(self.previews, inputs, outputs, current, values, key)


def _io(entries: list) -> tuple[list, list]:
    """The union of the entries' inputs and of their outputs, each component once, in order."""
    return (list({id(c): c for _, _, ins, _ in entries for c in ins}.values()),
            list({id(c): c for _, _, _, outs in entries for c in outs}.values()))


def _open_tab(entries: list, inputs: list, outputs: list, current: str, values: tuple, *lead: Any) -> list:
    """Run the entries of tab `current` (fn(*lead, *its inputs)) on `values` of `inputs`; the
    values for `outputs`, gr.skip() where no entry of that tab writes."""
    given = {id(c): v for c, v in zip(inputs, values)}
    out = {id(c): gr.skip() for c in outputs}
    for tab_id, fn, ins, outs in entries:
        if tab_id == current:
            res = fn(*lead, *(given[id(c)] for c in ins))
            if isinstance(res, dict):  # component -> value, as Gradio takes it (the Attention tab's opened)
                out.update({id(c): v for c, v in res.items()})
            else:
                out.update(zip((id(c) for c in outs), res if len(outs) > 1 else (res,)))
    return [out[id(c)] for c in outputs]


def _user_error(fn: Callable, e: Exception) -> gr.Error:
    if isinstance(e, gr.Error):
        return e
    if isinstance(e, UserError):  # expected (a bad file, a wrong value): a message, no traceback
        return gr.Error(str(e), print_exception=False)
    log.exception("handler %s failed", fn.__name__)
    return gr.Error("Something went wrong on the server with this request. "
                    "Please try again or upload another photo.")


def safe(fn: Callable) -> Callable:
    """Turn a UserError into a message in the page; log anything else, show a generic message.
    Works for plain handlers and for generators (streamed progress)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - every failure becomes a message
                raise _user_error(fn, e) from None

        return stream

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            raise _user_error(fn, e) from None

    return wrapper


# ---------------------------------------------------------------- Patches tab
def patches_tab(ctx: Ctx, tab: gr.Tab) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            grid_img = gr.Image(label="What the model sees: the patch grid (click a patch)",
                                interactive=False, format="jpeg", elem_id="patch-grid")
            with gr.Row():
                lines = gr.Checkbox(value=True, label="grid lines")
                indices = gr.Checkbox(value=False, label="patch numbers (from 0)")
            patch_info = gr.Markdown(elem_id="patch-info")
        with gr.Column(scale=2):
            top5 = gr.Plot(label="Top-5 predictions", elem_id="top5")
            numbers = gr.Dataframe(headers=["what", "value"], label="Numbers", interactive=False,
                                   elem_id="numbers", wrap=True, column_widths=["45%", "55%"])
    with gr.Accordion("Which patches match this label (CLIP / SigLIP)", open=True, elem_id="label-map-box",
                      visible=ctx.wb.model(ctx.default_model).is_zero_shot) as label_box:
        ctx.zero_shot_only.append(label_box)
        with gr.Row():
            label_pick = gr.Dropdown([], label="label", elem_id="label-pick", scale=1)
            label_text = gr.Markdown(elem_id="label-map-text")
        label_img = gr.Image(label="cosine of each patch token with the label's text embedding", interactive=False,
                             format="jpeg", elem_id="label-map")
    strip = gr.Image(label="The sequence it becomes: token 0 is [CLS], then patch k is token k + 1, one grid "
                           "row per line (numbers: first token of the line)",
                     interactive=False, format="jpeg", elem_id="sequence-strip")
    gr.Markdown(patches.PATCHES_TEXT)
    explanation = gr.Markdown(elem_id="patches-numbers")
    clicked = gr.State(None)  # (row, col)

    @safe
    def show(key: PhotoKey | None, lines_on: bool, idx_on: bool, rc: tuple[int, int] | None):
        if key is None:
            return None, None, None, None, "", "", gr.Dropdown(choices=[], value=None), None, ""
        ph = ctx.wb.handle(key)
        p = patches.show(ph, lines_on, idx_on, rc)
        if ph.vm.zero_shot is None:
            lab = (gr.Dropdown(choices=[], value=None), None, patches.label_rule_text(ph.vm))
        else:
            img, text = patches.label_map(ph)
            lab = (gr.Dropdown(choices=patches.label_choices(ph.vm), value=ph.analysis().top5[0].label), img, text)
        return p.grid, p.strip, p.top5, p.numbers, p.patch_text, p.explanation, *lab

    @safe
    def show_label(key: PhotoKey | None, label: str | None):
        if key is None or not label:
            return gr.skip(), gr.skip()
        return patches.label_map(ctx.wb.handle(key), label)

    @safe
    def redraw(key: PhotoKey | None, lines_on: bool, idx_on: bool, rc: tuple[int, int] | None):
        if key is None:
            return gr.skip(), gr.skip(), gr.skip()
        return patches.change(ctx.wb.handle(key), lines_on, idx_on, rc)

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        return panels.clicked_patch(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])

    ins = [ctx.key, lines, indices, clicked]
    ctx.on_show(tab, show, ins, [grid_img, strip, top5, numbers, patch_info, explanation, label_pick, label_img,
                                 label_text])
    # The grid alone: one picture to encode, fetch and decode while the forward takes the CPU.
    ctx.on_preview(tab, lambda key, *v: patches.preview(ctx.wb.handle(key), *v), [lines, indices, clicked],
                   [grid_img])
    label_pick.input(show_label, [ctx.key, label_pick], [label_img, label_text], show_progress="hidden")
    # Controls redraw only the grid: no forward, no re-encoding of the other panels.
    redrawn = [grid_img, patch_info, strip]
    lines.change(redraw, ins, redrawn, show_progress="hidden", api_name="patches_view")
    indices.change(redraw, ins, redrawn, show_progress="hidden")
    grid_img.select(click, [ctx.key], clicked).then(redraw, ins, redrawn, show_progress="hidden")


# ---------------------------------------------------------------- Embeddings tab
def embeddings_tab(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown(embeddings.EMBED_TEXT)
    gr.Markdown("### 1 · The embedding stage on this photo")
    with gr.Row():
        with gr.Column(scale=3):
            steps = gr.Dataframe(headers=["step", "shape", "what happens"], label="Shapes, step by step",
                                 interactive=False, wrap=True, column_widths=["22%", "22%", "56%"],
                                 elem_id="emb-steps")
            check = gr.Markdown(elem_id="emb-check")
        with gr.Column(scale=2):
            params = gr.Dataframe(headers=["stage", "parameters", "share"], interactive=False, wrap=True,
                                  column_widths=["56%", "26%", "18%"],
                                  label="Parameters per stage and block", max_height=420,
                                  elem_id="emb-params")
            params_total = gr.Markdown(elem_id="emb-params-total")
    gr.Markdown("### 2 · Tokens at depth l")
    gr.Markdown(embeddings.DEPTH_TEXT)
    depth = gr.Slider(0, 12, value=0, step=1, elem_id="emb-depth",
                      label="depth l (0 = after the embedding stage; l = after block l)")
    depth_md = gr.Markdown(elem_id="emb-depth-info")
    with gr.Row(elem_id="emb-pictures"):  # first on the screen in projector mode (style.css)
        # JPEG (also for the maps below): these change on every slider move or click, and
        # PNG-encoding 672² px costs ~25 ms each, JPEG ~2 ms (benchmarks/bench_embeddings.py).
        pca_img = gr.Image(label="Patch-token PCA as RGB over the photo (click a patch)", interactive=False,
                           format="jpeg", elem_id="emb-pca")
        sim_img = gr.Image(label="Cosine similarity of the clicked token to every patch (click a patch)",
                           interactive=False, format="jpeg", elem_id="emb-sim")
    sim_md = gr.Markdown(elem_id="emb-sim-info")
    maps_img = gr.Image(label="PCA map alone | token norms", interactive=False, format="jpeg",
                        elem_id="emb-maps")
    with gr.Row():
        with gr.Column(scale=4):
            scatter = gr.Plot(label="Patch tokens, first two principal components", elem_id="emb-scatter")
        with gr.Column(scale=1):
            color_by = gr.Radio(list(vocab.COLOR_CHOICES), value="row", label="colour points by",
                                elem_id="emb-color")
    cls_md = gr.Markdown(elem_id="emb-cls-info")
    cls_img = gr.Image(label="cos([CLS], patch) at each depth", interactive=False, format="png",
                       elem_id="emb-cls")
    gr.Markdown("### 3 · Patch-embedding filters")
    gr.Markdown(embeddings.FILTERS_TEXT)
    filters_md = gr.Markdown(elem_id="emb-filters-info")
    filters_img = gr.Image(label="Principal components of the embedding filters", interactive=False,
                           format="png", elem_id="emb-filters")
    clicked = gr.State(None)  # (row, col)

    def data(key: PhotoKey):
        ph = ctx.wb.handle(key)
        return ph.vm, ph.analysis(), embeddings.data(ph)

    @safe
    def show_depth(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None):
        if key is None:
            return None, None, None, "", ""
        vm, a, d = data(key)
        p = embeddings.depth_panel(vm, a, d, depth_l, rc)
        s = embeddings.similarity_panel(vm, a, d, depth_l, rc)
        return p.pca_over_photo, p.maps, s.image, s.text, p.text

    @safe
    def show_all(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None, color: str):
        if key is None:
            return (None, None, None, "", "", None, None, "", "", "", None, "", None, None, gr.skip())
        pg = embeddings.show(ctx.wb.handle(key), depth_l, rc, color)
        p, s = pg.depth_panel, pg.similarity
        return (p.pca_over_photo, p.maps, s.image, s.text, p.text, pg.scatter, pg.stage.steps, pg.stage.check,
                pg.cls_text, pg.filters_text, pg.stage.params, pg.stage.total, pg.cls_image, pg.filters_image,
                gr.Slider(maximum=ctx.wb.model(key.model_id).geometry.num_layers, value=pg.depth))

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        r, c, _ = embeddings.clicked_token(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return r, c

    @safe
    def show_similarity(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None):
        if key is None:
            return None, None, ""
        vm, a, d = data(key)
        s = embeddings.similarity_panel(vm, a, d, depth_l, rc)
        return embeddings.pca_over_photo(vm, d, depth_l, rc), s.image, s.text

    @safe
    def show_scatter(key: PhotoKey | None, depth_l: int, color: str):
        if key is None:
            return None
        vm, _, d = data(key)
        return embeddings.scatter_figure(vm, d, depth_l, color)

    depth_outs = [pca_img, maps_img, sim_img, sim_md, depth_md]
    all_outs = [*depth_outs, scatter, steps, check, cls_md, filters_md, params, params_total, cls_img,
                filters_img, depth]
    ctx.on_show(tab, show_all, [ctx.key, depth, clicked, color_by], all_outs)
    # Pictures first, then the scatter (its figure is the slowest part of a slider move).
    depth.change(show_depth, [ctx.key, depth, clicked], depth_outs, show_progress="hidden").then(
        show_scatter, [ctx.key, depth, color_by], scatter, show_progress="hidden",
        js=web.after_paint("#emb-pictures img"))
    for img in (pca_img, sim_img):
        img.select(click, [ctx.key], clicked).then(show_similarity, [ctx.key, depth, clicked],
                                                    [pca_img, sim_img, sim_md], show_progress="hidden")
    color_by.change(show_scatter, [ctx.key, depth, color_by], scatter, show_progress="hidden")


# ---------------------------------------------------------------- Attention tab
def attention_tab(ctx: Ctx, tab: gr.Tab) -> None:
    with gr.Row():
        with gr.Column(scale=3, elem_id="attn-left"):  # wider in projector mode (style.css)
            # No download/fullscreen buttons: they would show the server's last picture, and the page
            # draws layer, head and fusion changes itself (right-click saves what is on screen).
            main_img = gr.Image(label="Attention map (click a patch to make it the query)", interactive=False,
                                format="jpeg", elem_id="attn-main", buttons=[])
            # Every layer × head (and fusion) of the main map, sent with each query or look change;
            # vizvit/views/attention_map.js draws layer, head and fusion changes from it with no round trip.
            book = gr.HTML(None, html_template="<span></span>", js_on_load=web.asset(ap.PAGE_SCRIPT),
                           visible="hidden", elem_id="attn-book", apply_default_css=False)
            # The matrix behind the shown map, with every picture: a click on the map is drawn at once.
            matrix = gr.HTML(None, html_template="<span></span>", js_on_load=web.asset("attn_matrix.js"),
                             visible="hidden", elem_id="attn-matrix", apply_default_css=False)
            with gr.Row():
                direction = gr.Radio(list(vocab.DIRECTIONS), value="row", elem_id="attn-direction",
                                     label="clicked patch: its row (what it attends to) or its column (what attends to it)")
                to_cls = gr.Button("Query: back to the summary token", size="sm", elem_id="attn-to-cls")
            # Families with more than one summary token (DeiT: [CLS] or [DIST]; BEiT: patch mean or [CLS]).
            summary = gr.Radio(["[CLS]"], value="[CLS]", label="read maps, rollout and relevance from",
                               visible=False, elem_id="attn-summary")
        with gr.Column(scale=2):
            # No reset button: it fires no .input (the page would draw a layer the server never hears of).
            layer = gr.Slider(1, 12, value=12, step=1, label=ap.layer_label("raw"), elem_id="attn-layer", buttons=[])
            show = gr.Radio(list(vocab.SHOW_CHOICES), value="mean", label="heads: one head, or fuse them",
                            elem_id="attn-show")
            head = gr.Slider(1, 12, value=1, step=1, label="head (for 'one head')", elem_id="attn-head", buttons=[])
            mode = gr.Radio(list(vocab.MODES), value="raw", label="attention", elem_id="attn-mode")
            scale = gr.Radio(list(vocab.ATTN_SCALES), value=vocab.ATTN_SCALES[0], elem_id="attn-scale",
                             label="colour scale of the map (blue line on the bar: uniform 1/N)")
            with gr.Row():
                discard = gr.Slider(0, 0.95, value=0, step=0.05, label="rollout: discard the lowest fraction (fused heads)",
                                    elem_id="attn-discard")
                discard_mode = gr.Radio(list(vocab.DISCARD_MODES), value=vocab.DISCARD_MODES[0],
                                        label="discard per row, or over the whole matrix as vit-explain does",
                                        elem_id="attn-discard-mode")
            with gr.Row():
                alpha = gr.Slider(0, 1, value=0.6, step=0.05, label="overlay opacity", elem_id="attn-alpha")
                cmap = gr.Dropdown(list(vocab.COLORMAPS), value="inferno", label="colour map")
            with gr.Row():
                tau = gr.Slider(0, 1, value=0, step=0.05, label="keep patches holding τ of the mass (0 = off)",
                                elem_id="attn-tau")
                shared = gr.Checkbox(value=False, label="one shared colour scale (grid and strip)",
                                     elem_id="attn-shared")
            artifacts_in = gr.Checkbox(value=False, label="artifact tokens in the colour range (cyan: see the note)",
                                       elem_id="attn-artifacts")
            readout = gr.Markdown(elem_id="attn-readout")
    gr.Markdown(ap.MAIN_TEXT)
    gr.Markdown("### Rollout after each layer (tile ≤l: through layer l)")
    strip = gr.Image(show_label=False, interactive=False, format="jpeg", elem_id="attn-strip")
    gr.Markdown(ap.ROLLOUT_TEXT)
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("### All layers × heads (click a cell to open it)")
            grid = gr.Image(show_label=False, interactive=False, format="jpeg", elem_id="attn-grid")
        with gr.Column(scale=2):
            gr.Markdown(ap.GRID_TEXT)
    with gr.Row():
        with gr.Column():
            dist = gr.Plot(label="Mean attention distance", elem_id="attn-distance")
            pick = gr.Dropdown([], label="open a head (nearest first)", elem_id="attn-pick")
            distance_norm = gr.Radio(list(vocab.DISTANCE_NORMS), value=vocab.DISTANCE_NORMS[0],
                                     label="distance: patch weights renormalised without [CLS], or raw as probing-vits",
                                     elem_id="attn-distance-norm")
            # Filled by the page script (vizvit/web/page.js) when a dot of the chart is clicked (a value set from
            # a script fires .change, not .input).
            dist_click = gr.Textbox(visible="hidden", elem_id="attn-distance-click")
            gr.Markdown(ap.DISTANCE_TEXT)
        with gr.Column():
            with gr.Row():
                cls = gr.Dropdown([], label="class (top-5)", elem_id="attn-class")
                rel_btn = gr.Button("Compute class relevance", elem_id="attn-relevance-btn")
            rel_img = gr.Image(label="Class-specific relevance", interactive=False, format="jpeg",
                               elem_id="attn-relevance")
            rel_text = gr.Markdown(elem_id="attn-relevance-text")
            gr.Markdown(ap.RELEVANCE_TEXT)
    query = gr.State(None)  # (row, col) or None for [CLS]
    # Every control by the AttnParams field it sets: handlers read them by name (no positional splices).
    named = dict(layer=layer, head=head, show=show, mode=mode, query=query, direction=direction, discard=discard,
                 alpha=alpha, cmap=cmap, tau=tau, shared_scale=shared, summary=summary, discard_mode=discard_mode,
                 distance_norm=distance_norm, scale=scale, artifacts_in_range=artifacts_in)
    controls = list(named.values())
    ctx.links.update(layer=layer, head=head, show=show, query=query, direction=direction, mode=mode)

    def params(v: tuple, **changed: Any) -> ap.AttnParams:
        """The controls' values (in `controls` order) as AttnParams, with `changed` fields replaced."""
        return ap.AttnParams.from_controls({**dict(zip(named, v)), **changed})

    @safe
    def opened(key: PhotoKey | None, *v: Any):
        if key is None:
            return {c: gr.skip() for c in opened_outs}
        ph = ctx.wb.handle(key)
        g = ph.vm.geometry
        values = dict(zip(named, v))
        p, page = ap.show(ph, params(v, summary=values["summary"] if values["summary"] in g.summaries else None))
        return {layer: gr.Slider(maximum=g.num_layers, value=p.layer), head: gr.Slider(maximum=g.num_heads, value=p.head),
                query: p.query, main_img: page.view.main, readout: page.view.readout, grid: page.view.grid,
                strip: page.view.strip, dist: page.distance,
                pick: gr.Dropdown(choices=page.distance_choices, value=ap.choice_value(p)),
                cls: gr.Dropdown(choices=page.classes, value=page.classes[0][1] if page.classes else None),
                rel_img: None, rel_text: "",
                summary: gr.Radio(list(g.summaries), value=p.who(g), visible=len(g.summaries) > 1),
                book: page_book(key, p), matrix: page_matrix(key, p)}

    def page_book(key: PhotoKey, p: ap.AttnParams) -> str | None:
        """The main map of every layer and head for the page to draw (None: too large, drawn here)."""
        ph = ctx.wb.handle(key)
        return ap.book_for_page(ap.map_book(ph.vm, ph.analysis(), p, ph.derived), ph.analysis().input_view,
                                ph.vm.geometry, photo=repr(key)) if ap.draws_in_page(ph.vm.geometry) else None

    def page_matrix(key: PhotoKey, p: ap.AttnParams) -> str | None:
        """The matrix behind the shown map, for a click drawn in the page (None: drawn here)."""
        ph = ctx.wb.handle(key)
        return ap.matrix_for_page(ph.analysis(), p, ph.derived, photo=repr(key)) \
            if ap.draws_in_page(ph.vm.geometry) else None

    def views(key: PhotoKey, p: ap.AttnParams, drawn_in_page: bool = False) -> tuple:
        """drawn_in_page: a layer, head or fusion change, which the page draws itself from its book."""
        view = ap.change(ctx.wb.handle(key), p)
        m = page_matrix(key, p)
        return gr.skip() if drawn_in_page and m is not None else view.main, view.readout, view.grid, view.strip, m

    @safe
    def redraw(key: PhotoKey | None, *v: Any):
        """A layer, fusion or shared-scale change: the page draws the main map."""
        return (gr.skip(),) * 5 if key is None else views(key, params(v), drawn_in_page=True)

    @safe
    def relook(key: PhotoKey | None, *v: Any):
        """Any other control: a new picture and a new book."""
        if key is None:
            return (gr.skip(),) * 6
        p = params(v)
        return (*views(key, p), page_book(key, p))

    @safe
    def redraw_one_head(key: PhotoKey | None, *v: Any):
        if key is None:
            return (gr.skip(),) * 6
        return (vocab.ONE_HEAD, *views(key, params(v, show=vocab.ONE_HEAD), drawn_in_page=True))

    # A click answers in ONE event (the new state and the pictures), not a state event and a
    # .then() redraw: each event is a queue round trip of ~100 ms in the browser.
    @safe
    def click_main(evt: gr.SelectData, key: PhotoKey | None, *v: Any):
        if key is None:
            return (gr.skip(),) * 7
        q = ap.clicked_query(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        p = params(v, query=q)
        return (q, *views(key, p), page_book(key, p))

    @safe
    def to_cls_view(key: PhotoKey | None, *v: Any):
        if key is None:
            return (gr.skip(),) * 7
        p = params(v, query=None)
        return (None, *views(key, p), page_book(key, p))

    @safe
    def click_grid(evt: gr.SelectData, key: PhotoKey | None, *v: Any):
        if key is None:
            return (gr.skip(),) * 8
        lay, hd = ap.grid_cell_at(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return (lay, hd, vocab.ONE_HEAD, *views(key, params(v, layer=lay, head=hd, show=vocab.ONE_HEAD),
                                                drawn_in_page=True))

    @safe
    def pick_head(choice: str | None):
        if not choice:
            return gr.skip(), gr.skip(), gr.skip()
        lay, hd = ap.parse_choice(choice)
        return lay, hd, vocab.ONE_HEAD

    @safe
    def redistance(key: PhotoKey | None, norm: str):
        if key is None:
            return gr.skip(), gr.skip()
        ph = ctx.wb.handle(key)
        fig, choices = ap.distance_view(ph.vm, ph.analysis(), norm, ph.derived)
        return fig, gr.Dropdown(choices=choices, value=None)

    @safe
    def relevance(key: PhotoKey | None, class_index: int | None, *v: Any):
        if key is None or class_index is None:
            raise gr.Error("Upload a photo first (relevance needs a model with a classifier).")
        return ap.relevance(ctx.wb.handle(key), int(class_index), params(v))

    view_outs = [main_img, readout, grid, strip, matrix]
    ins = [ctx.key, *controls]
    opened_outs = [layer, head, query, *view_outs, dist, pick, cls, rel_img, rel_text, summary, book]
    ctx.on_show(tab, opened, ins, opened_outs)
    mode.change(lambda m: gr.Slider(label=ap.layer_label(m)), mode, layer, queue=False, show_progress="hidden")
    # always_last: while a slider is dragged, the last value is always drawn.
    # One line for every event that shows a view: they run in the order they were sent. Each
    # carries the controls as they were when it was sent, so two at once (a head change, then a
    # click right after it) could otherwise finish in either order, the older view last.
    one_line = dict(show_progress="hidden", concurrency_id="attention-view", concurrency_limit=1)
    for c in (layer, show, shared):  # the page draws the main map (attention_map.js); here: readout, grid, strip
        c.input(redraw, ins, view_outs, trigger_mode="always_last", **one_line)
    for c in (mode, direction, discard, discard_mode, alpha, cmap, tau, summary, scale, artifacts_in):
        c.input(relook, ins, [*view_outs, book], trigger_mode="always_last", **one_line)
    # Moving the head slider means "show me that head": leave a fusion (mean/max/min), or the
    # slider would seem to do nothing. One event, so dragging coalesces like the other sliders.
    head.input(redraw_one_head, ins, [show, *view_outs], trigger_mode="always_last", **one_line)
    main_img.select(click_main, ins, [query, *view_outs, book], **one_line)
    to_cls.click(to_cls_view, ins, [query, *view_outs, book], **one_line)
    grid.select(click_grid, ins, [layer, head, show, *view_outs], **one_line)
    # The chart and the list sit below the main map: bring the opened head's map into view.
    for chooser, ev in ((pick, pick.input), (dist_click, dist_click.change)):
        ev(pick_head, [chooser], [layer, head, show]).then(redraw, ins, view_outs, **one_line).then(
            None, None, None, js=web.asset("scroll_to_main.js"))
    distance_norm.input(redistance, [ctx.key, distance_norm], [dist, pick], show_progress="hidden")
    for trigger in (rel_btn.click, cls.input):  # a new class is computed at once, never left stale
        trigger(relevance, [ctx.key, cls, *controls], [rel_img, rel_text])


# ---------------------------------------------------------------- Positions tab
def positions_tab(ctx: Ctx, tab: gr.Tab) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            # Short: a long label wraps under the image's toolbar and covers row 0.
            grid_img = gr.Image(label="Position-embedding cosine: tile (r, c) vs every patch (click a tile)",
                                interactive=False, format="png", elem_id="pos-grid")  # JPEG blurred the cells
        with gr.Column(scale=2):
            tile_plot = gr.Plot(label="The clicked tile, large (hover for values)", elem_id="pos-tile")
            cls_plot = gr.Plot(label="[CLS] position embedding vs patch positions", elem_id="pos-cls")
    text = gr.Markdown(elem_id="pos-text")
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Same scale, same grid:** learned vs 1-D sinusoidal vs 2-D sin-cos vs random init")
            compare = gr.Image(show_label=False, interactive=False, format="png", elem_id="pos-compare")
        with gr.Column(scale=2):
            numbers = gr.Dataframe(headers=positions.CONTRAST_HEADERS, label="Neighbour contrast",
                                   interactive=False, elem_id="pos-numbers", wrap=True)
    gr.Markdown("### Other resolutions")
    size = gr.Dropdown([int(s) for s in vocab.RESOLUTIONS], value=384, label="input size (px)",
                       elem_id="pos-size")
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Position similarity after `interpolate_pos_encoding`** (same layout and scale)")
            res_img = gr.Image(show_label=False, interactive=False, format="png", elem_id="pos-res-grid")
        with gr.Column(scale=2):
            res_top5 = gr.Plot(label="Predictions at that size", elem_id="pos-res-top5")
            res_text = gr.Markdown(elem_id="pos-res-text")

    @safe
    def show(key: PhotoKey | None, px: int):
        if key is None:
            return (None,) * 9
        p, r = positions.show(ctx.wb.handle(key), px)
        return p.grid_img, p.tile_fig, p.cls_fig, p.text, p.compare_img, p.numbers, r.grid_img, r.top5, r.text

    @safe
    def resize(key: PhotoKey | None, px: int):
        if key is None:
            return None, None, ""
        r = positions.resolution_panel(ctx.wb.handle(key), px)
        return r.grid_img, r.top5, r.text

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        hit = None if key is None else positions.click_tile(ctx.wb.handle(key), evt.index[0], evt.index[1])
        return (gr.skip(), gr.skip()) if hit is None else hit

    ctx.on_show(tab, show, [ctx.key, size],
                [grid_img, tile_plot, cls_plot, text, compare, numbers, res_img, res_top5, res_text])
    size.change(resize, [ctx.key, size], [res_img, res_top5, res_text])
    grid_img.select(click, [ctx.key], [grid_img, tile_plot], show_progress="hidden")


# ---------------------------------------------------------------- Experiments tab
def experiments_tab(ctx: Ctx, tab: gr.Tab) -> None:
    wb = ctx.wb
    gr.Markdown(experiments.EXPERIMENTS_TEXT)
    with gr.Row(elem_id="shift-controls"):
        dx = gr.Slider(-32, 32, value=0, step=1, label="dx: shift right (pixels)", elem_id="shift-dx")
        dy = gr.Slider(-32, 32, value=0, step=1, label="dy: shift down (pixels)", elem_id="shift-dy")
        fill = gr.Radio(list(vocab.FILLS), value="edge", label="what enters at the border",
                        elem_id="shift-fill")
    with gr.Row(elem_id="shift-pictures"):  # first on the screen in projector mode (style.css)
        shift_img = gr.Image(label="Shifted view, as the model sees it", interactive=False, format="jpeg",
                             elem_id="shift-view")
        cos_img = gr.Image(label="Patch cosine, original vs shifted",
                           interactive=False, format="jpeg", elem_id="shift-cos")
        shift_top5 = gr.Plot(label="Top-5, Δ from the unshifted photo", elem_id="shift-top5")
    shift_info = gr.Markdown(elem_id="shift-info")

    gr.Markdown("### Shift sweep: k = 0..2P pixels right, edge fill, batched")
    with gr.Row():
        sweep_btn = gr.Button("Run the shift sweep", variant="primary", elem_id="sweep-run")
        stop_btn = gr.Button("Stop", elem_id="sweep-stop")
    sweep_text = gr.Markdown(elem_id="sweep-text")
    sweep_plot = gr.Plot(label="Cosine and probability against the shift", elem_id="sweep-plot")
    sweep_table = gr.Dataframe(headers=experiments.SWEEP_HEADERS, interactive=False, elem_id="sweep-table")

    gr.Markdown("### Masks")
    gr.Markdown(experiments.MASKS_TEXT)
    with gr.Row():
        mode = gr.Radio(list(vocab.MASK_MODES), value="drop", label="mask mode", elem_id="mask-mode")
        percent = gr.Slider(0, 100, value=25, step=1, label="p % / k % for the buttons", elem_id="mask-percent")
    with gr.Row():
        b_clear = gr.Button("clear", size="sm", elem_id="mask-clear")
        b_invert = gr.Button("invert", size="sm", elem_id="mask-invert")
        b_random = gr.Button("random p %", size="sm", elem_id="mask-random")
        b_top = gr.Button("top k % by rollout", size="sm", elem_id="mask-top")
        b_bottom = gr.Button("bottom k % by rollout", size="sm", elem_id="mask-bottom")
    with gr.Row():
        mask_grid = gr.Image(label="Click patches to mask them", interactive=False, format="jpeg",
                             elem_id="mask-grid")
        masked_img = gr.Image(label="What the model gets (hatched = token dropped)", interactive=False,
                              format="jpeg", elem_id="masked-view")
        mask_top5 = gr.Plot(label="Top-5, Δ from the unmasked photo", elem_id="mask-top5")
    mask_info = gr.Markdown(elem_id="mask-info")
    mask = gr.State(())  # row-major patch ids
    ctx.links.update(dx=dx, dy=dy, mask=mask)
    seed = gr.State(0)  # random-mask draws, one more per click

    gr.Markdown("### Faithfulness: deletion and insertion curves")
    gr.Markdown(experiments.CURVES_TEXT)
    with gr.Row():
        steps = gr.Slider(2, 20, value=10, step=1, label="steps", elem_id="curves-steps")
        curve_mode = gr.Radio(list(vocab.CURVE_MODES), value="black", label="remove patches by",
                              elem_id="curves-mode")
        curves_btn = gr.Button("Compute the curves", variant="primary", elem_id="curves-run")
    curves_text = gr.Markdown(elem_id="curves-text")
    with gr.Row():
        del_plot = gr.Plot(label="Deletion", elem_id="deletion-plot")
        ins_plot = gr.Plot(label="Insertion", elem_id="insertion-plot")
    auc_table = gr.Dataframe(headers=experiments.CURVES_HEADERS, interactive=False, elem_id="auc-table")

    @safe
    def show_shift(key: PhotoKey | None, x: int, y: int, f: str):
        if key is None:
            return None, None, "", None
        p = experiments.shift_panel(wb.handle(key), int(x), int(y), f)
        return p.view, p.cosine, p.cosine_text, p.top5

    @safe
    def limits(key: PhotoKey | None):
        if key is None:
            return gr.skip(), gr.skip()
        lo, hi = experiments.shift_limits(wb.handle(key))
        return gr.update(minimum=lo, maximum=hi), gr.update(minimum=lo, maximum=hi)

    @safe
    def show_mask(key: PhotoKey | None, m: tuple[int, ...], md: str):
        if key is None:
            return None, None, "", None
        p = experiments.mask_panel(wb.handle(key), m, md)
        return p.grid, p.masked, p.text, p.top5

    # A toggle or a mask button answers in ONE event (the new mask and its views), not a state
    # event and a .then(): each event costs the page a queue round trip and Gradio's own work.
    @safe
    def click(key: PhotoKey | None, m: tuple[int, ...], md: str, evt: gr.SelectData):
        if key is None:
            return (gr.skip(),) * 5
        m = experiments.toggle_at(wb.handle(key), m, evt.index[0], evt.index[1])
        return (m, *show_mask(key, m, md))

    def action(name: str) -> Callable:
        @safe
        def run(key: PhotoKey | None, m: tuple[int, ...], pct: float, s: int, md: str):
            if key is None:
                return (gr.skip(),) * 6
            m = experiments.mask_action(wb.handle(key), m, name, pct, s)
            return (m, s + (name == "random"), *show_mask(key, m, md))

        return run

    @safe
    def sweep(key: PhotoKey | None):
        if key is None:
            raise UserError("Upload a photo first.")
        for p in experiments.sweep_progress(wb.handle(key)):
            yield p.figure, p.table, p.text

    @safe
    def curves(key: PhotoKey | None, n: int, md: str):
        if key is None:
            raise UserError("Upload a photo first.")
        for p in experiments.curves_progress(wb.handle(key), int(n), md):
            if p.deletion is None:  # only the news that work has started
                yield gr.skip(), gr.skip(), gr.skip(), p.text
            else:
                yield p.deletion, p.insertion, p.table, p.text

    shift_ins, shift_outs = [ctx.key, dx, dy, fill], [shift_img, cos_img, shift_info, shift_top5]
    ctx.on_show(tab, limits, [ctx.key], [dx, dy])
    ctx.on_show(tab, show_shift, shift_ins, shift_outs)
    # input (user moves or types), not change: on_show's range update must not re-run it.
    # always_last: while dragging, one forward in flight, then the latest value.
    for ev in (dx.input, dy.input, fill.input):
        ev(show_shift, shift_ins, shift_outs, show_progress="hidden", trigger_mode="always_last")

    mask_ins, mask_outs = [ctx.key, mask, mode], [mask_grid, masked_img, mask_info, mask_top5]
    ctx.on_show(tab, show_mask, mask_ins, mask_outs)
    mode.change(show_mask, mask_ins, mask_outs, show_progress="hidden")
    mask_grid.select(click, [ctx.key, mask, mode], [mask, *mask_outs], show_progress="hidden")
    for btn, name in ((b_clear, "clear"), (b_invert, "invert"), (b_random, "random"), (b_top, "top"),
                      (b_bottom, "bottom")):
        btn.click(action(name), [ctx.key, mask, percent, seed, mode], [mask, seed, *mask_outs],
                  show_progress="minimal")  # "top"/"bottom" may run the model

    running = sweep_btn.click(sweep, [ctx.key], [sweep_plot, sweep_table, sweep_text])
    curving = curves_btn.click(curves, [ctx.key, steps, curve_mode], [del_plot, ins_plot, auc_table, curves_text])
    stop_btn.click(None, None, None, cancels=[running, curving])
    ctx.long_work.extend([running, curving])


# ---------------------------------------------------------------- Inside the model
def inside_tab(ctx: Ctx, tab: gr.Tab) -> None:
    wb = ctx.wb
    gr.Markdown(inside.LENS_TEXT)
    with gr.Row():
        lens_table = gr.Dataframe(headers=inside.LENS_HEADERS, interactive=False, elem_id="lens-table", scale=3,
                                  wrap=True, max_height=inside.LENS_TABLE_PX)  # every depth, no scroll box
        depth_top5 = gr.Plot(label="Top-5 of the readout at the clicked depth", elem_id="lens-top5", scale=2)
    lens_text = gr.Markdown(elem_id="lens-text")
    lens_plot = gr.Plot(label="Logit lens: the final top-5 classes at each depth", elem_id="lens-plot")
    gr.Markdown(inside.ABLATE_TEXT)
    with gr.Row():
        grid = gr.Image(label="Layers × heads: click to switch heads off", interactive=False, format="png",
                        elem_id="ablate-grid")
        with gr.Column():
            with gr.Row():
                mode = gr.Radio(list(vocab.ABLATE_MODES), value="zero", label="a switched-off head's output is set to",
                                elem_id="ablate-mode")
                clear = gr.Button("all heads on", size="sm", elem_id="ablate-clear")
            heads = gr.Textbox(label="heads off, layer.head from 1 (Enter to apply)", placeholder="3.5, 7.1",
                               elem_id="ablate-heads")
            top5 = gr.Plot(label="Top-5 of the ablated model, Δ from the intact one", elem_id="ablate-top5")
            ablate_text = gr.Markdown(elem_id="ablate-text")
    gr.Markdown(inside.IMPORTANCE_TEXT)
    with gr.Row():
        run_btn = gr.Button("Which heads matter? (one forward per head)", variant="primary", elem_id="importance-run")
        stop_btn = gr.Button("Stop", elem_id="importance-stop")
    importance_text = gr.Markdown(elem_id="importance-text")
    ctx.links.update(ablate=heads, ablate_mode=mode)

    @safe
    def show(key: PhotoKey | None):
        if key is None:
            return [], None, "", None, None, None, "", gr.skip(), gr.skip()
        ph = wb.handle(key)
        lp, ap_ = inside.show(ph)
        lens_out = (lp.rows, lp.figure, lp.text) if lp else ([], None, inside.NO_LENS_TEXT)
        return (*lens_out, None, ap_.grid, ap_.top5, ap_.text, inside.format_heads(key.ablation.heads),
                key.ablation.mode)

    def ablated(key: PhotoKey, ab: Ablation):
        k = inside.with_ablation(key, ab)
        return k, panels.status_line(wb.model(k.model_id), wb.analysis(k), wb.photo(k.sha1).size)

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return gr.skip(), gr.skip()
        cells, _ = inside.cell_at(wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return ablated(key, inside.toggle(key.ablation, cells)) if cells else (gr.skip(), gr.skip())

    @safe
    def typed(key: PhotoKey | None, text: str, m: str):
        if key is None:
            raise UserError("Upload a photo first.")
        return ablated(key, inside.parse_ablation(text, m, wb.model(key.model_id).geometry))

    @safe
    def depth(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        return inside.depth_top5(wb.handle(key), int(evt.index[0]))

    @safe
    def importance(key: PhotoKey | None):
        if key is None:
            raise UserError("Upload a photo first.")
        ph = wb.handle(key)
        for imp, done, total in inside.importance_steps(ph):
            yield inside.ablation_grid(ph.vm.geometry, key.ablation, imp), inside.importance_text(ph.vm, done, total, imp)

    outs = [lens_table, lens_plot, lens_text, depth_top5, grid, top5, ablate_text, heads, mode]
    ctx.on_show(tab, show, [ctx.key], outs)
    # Each change makes a new session key (the ablation is part of it); key.change redraws
    # whichever tab is open, so every tab shows the ablated model.
    grid.select(click, [ctx.key], [ctx.key, ctx.status], show_progress="hidden")
    heads.submit(typed, [ctx.key, heads, mode], [ctx.key, ctx.status])
    mode.input(typed, [ctx.key, heads, mode], [ctx.key, ctx.status])
    clear.click(typed, [ctx.key, gr.State(""), mode], [ctx.key, ctx.status])
    lens_table.select(depth, [ctx.key], depth_top5, show_progress="hidden")
    running = run_btn.click(importance, [ctx.key], [grid, importance_text])
    stop_btn.click(None, None, None, cancels=[running])
    ctx.long_work.append(running)


# ---------------------------------------------------------------- For lecturers
def lecture_tab(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown(lecture.LECTURE_TEXT)
    with gr.Row():
        size = gr.Slider(16, 1024, value=224, step=1, label="image side (pixels)", elem_id="cost-size")
        patch = gr.Slider(1, 64, value=16, step=1, label="patch size P", elem_id="cost-patch")
    table, text = lecture.show(224, 16)
    cost = gr.Dataframe(table, headers=["", "pixels as tokens", "patches as tokens"], interactive=False,
                        elem_id="cost-table")
    cost_text = gr.Markdown(text, elem_id="cost-text")

    @safe
    def calculate(side: int, p: int):
        return lecture.show(side, p)

    for c in (size, patch):
        c.change(calculate, [size, patch], [cost, cost_text], show_progress="hidden")


def charts_download(tab: gr.Tab) -> None:
    """A button that saves every plotly chart of the tab as one standalone HTML file."""
    plots = [b for b in _descendants(tab) if isinstance(b, gr.Plot)]
    if not plots:
        return
    btn = gr.Button("Download this tab's charts (HTML)", size="sm", elem_id=f"charts-btn-{tab.id}")
    out = gr.File(label="charts (HTML)", visible=False, interactive=False, elem_id=f"charts-file-{tab.id}")
    names = [p.label or f"chart {i + 1}" for i, p in enumerate(plots)]

    @safe
    def save(*values: Any):
        charts = [(n, v.plot) for n, v in zip(names, values) if v is not None and v.type == "plotly"]
        path = figures.save_charts_html(charts, f"vizvit: {tab.label}", f"vizvit-{tab.id}-charts")
        return gr.File(str(path), visible=True)

    # Then start the download, so one click downloads (the file box stays, to download again):
    # wait until the box links the NEW file (each save has its own name), then click that link.
    btn.click(save, plots, out).success(None, None, None, js=web.click_new_file(f"#charts-file-{tab.id}"))


def _descendants(block: gr.blocks.BlockContext) -> list:
    out = []
    for child in getattr(block, "children", []):
        out.append(child)
        out.extend(_descendants(child))
    return out


# ---------------------------------------------------------------- the page
TABS = [("Patches", "patches", patches_tab), ("Embeddings", "embeddings", embeddings_tab),
        ("Attention", "attention", attention_tab), ("Positions", "positions", positions_tab),
        ("Experiments", "experiments", experiments_tab), ("Inside", "inside", inside_tab),
        ("For lecturers", "lecture", lecture_tab)]


def build_demo(wb: Workbench, default_model: str = DEFAULT_MODEL, catalog: Catalog | None = None,
               offline: bool = False) -> gr.Blocks:
    """The whole page. `wb` must already hold (or be able to load) `default_model`. The catalog
    (the page's model list) becomes the Workbench's gate: no request loads a model off the list."""
    catalog = catalog or Catalog(default_model)
    wb.catalog = catalog
    default_model = catalog.public(default_model)  # a local directory: its short name, never the path
    # delete_cache: uploads and rendered outputs older than an hour are removed every
    # 10 minutes, so a public server's disk does not fill up.
    with gr.Blocks(title="vizvit: watch a Vision Transformer read your photo",
                   delete_cache=(600, 3600)) as demo:
        before = len(demo.children)
        public_api(wb, default_model)  # first, so page events named alike (sweep) cannot take its names
        # gr.api makes a placeholder component per argument and result (35 of the page's 301): they
        # draw nothing, yet the page's script built each one at load, like any component. They stay
        # registered in the Blocks (the API's schema and calls read them), out of the page's layout,
        # and invisible: the page waits for every visible component to mount before it is ready.
        gradio_patch.unlaid(demo, demo.children[before:])
        key = gr.State(None, time_to_live=SESSION_TTL_S)
        tab = gr.State("patches")
        gr.Markdown(panels.HEADER_TEXT, elem_id="header")
        start_banner = panels.banner(wb.model(default_model), offline)
        banner = gr.Markdown(start_banner, elem_id="banner", visible=bool(start_banner))
        notice_md = gr.Markdown(elem_id="notice", visible=False)  # about a deep link; never the banner
        with gr.Row(elem_id="header-row"):
            with gr.Column(scale=2):
                upload = gr.File(label="Upload a photo (JPEG, PNG, WebP, GIF, BMP, TIFF)",
                                 file_types=UPLOAD_TYPES, type="filepath", elem_id="upload")
            with gr.Column(scale=2):
                # allow_custom_value: new_model checks the choice itself; Gradio's own check would
                # answer an API caller with the whole list, local paths included.
                model = gr.Dropdown(catalog.choices(), value=default_model, label="Model", elem_id="model",
                                    allow_custom_value=True, info=SIZES_INFO)
                status = gr.Markdown("👈 Upload a photo or pick an example to begin.", elem_id="status")
                # CLIP / SigLIP: the classes are the user's own text (Enter applies). Shown only for
                # those models, so the compact header stays compact for the others.
                with gr.Group(visible=wb.model(default_model).is_zero_shot, elem_id="zs-box") as zs_box:
                    zs_labels = gr.Textbox(", ".join(DEFAULT_LABELS), label="Zero-shot labels, comma-separated "
                                           "(CLIP / SigLIP; Enter to apply)", elem_id="zs-labels", lines=1)
                    zs_template = gr.Textbox(DEFAULT_TEMPLATE, label="Prompt template ({} = the label)",
                                             elem_id="zs-template", lines=1)
                    zs_rule = gr.Markdown(patches.label_rule_text(wb.model(default_model)), elem_id="zs-rule")
            with gr.Column(scale=3):
                gr.Examples(EXAMPLES, inputs=[upload], label="Examples (CC0 / public domain)")
        ctx = Ctx(wb=wb, key=key, tab=tab, status=status, default_model=default_model)
        all_tabs = []
        # wrap: on a phone every tab stays one tap away (the default hides some behind a "⋯" menu).
        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap") as tabs:
            for label, tab_id, build in TABS:
                with gr.Tab(label, id=tab_id) as t:
                    build(ctx, t)
                    gr.Markdown(METHODS_LINK)
                    charts_download(t)
                all_tabs.append(t)
        ctx.show_visible()
        for t in all_tabs:
            t.select(functools.partial(lambda tid: tid, t.id), None, tab, queue=False)
        with gr.Accordion("Methods and sources: every computation, its paper, and how other code differs",
                          open=False, elem_id="methods"):
            gr.Markdown(METHODS_TEXT)
        with gr.Row():
            projector = gr.Checkbox(False, label="Projector mode (large text, high contrast)", elem_id="projector")
            link_btn = gr.Button("Copy link to this view", size="sm", elem_id="copy-link")
            link_box = gr.Textbox(label="Link to this view", buttons=["copy"], interactive=False,
                                  elem_id="link-box", scale=3)
        projector.change(None, projector, None, js=web.asset("projector.js"))

        def labelled(k: PhotoKey, labels_text: str, template: str) -> PhotoKey:
            """The key with the typed labels, for a CLIP / SigLIP model (others: none)."""
            if not wb.model(k.model_id).is_zero_shot:
                return dataclasses.replace(k, labels=(), template="")
            labs = parse_labels(labels_text)
            if not labs:
                raise UserError("Type at least one label, e.g. a cat, a dog, a teapot.")
            return dataclasses.replace(k, labels=labs, template=check_template(template))

        @safe
        def new_labels(k: PhotoKey | None, model_id: str, labels_text: str, template: str):
            probe = labelled(k if k is not None else PhotoKey(model_id, ""), labels_text, template)
            rule = patches.label_rule_text(wb.labelled(probe))
            if k is None:
                return gr.skip(), rule, gr.skip()
            k = labelled(k, labels_text, template)
            return k, rule, panels.status_line(wb.model(k.model_id), wb.analysis(k), wb.photo(k.sha1).size)

        zs_labels.submit(new_labels, [key, model, zs_labels, zs_template], [key, zs_rule, status])
        zs_template.submit(new_labels, [key, model, zs_labels, zs_template], [key, zs_rule, status])

        preview_ins, preview_outs = ctx.preview_io()
        skip_previews = [gr.skip()] * len(preview_outs)

        @safe
        def new_photo(path: str | None, model_id: str, k: PhotoKey | None, heads: str, ablate_mode: str,
                      labels_text: str = "", template: str = DEFAULT_TEMPLATE, current: str = "patches",
                      *preview_values: Any):
            """A generator: its first message carries the new key (and the open tab's preview), so
            the key's event starts at once and finds this forward already running (the cache runs
            it once for both); its last one, the status line with the forward's result."""
            if path is None:  # cleared by the user (see upload.clear) or by a refused file below
                yield gr.skip(), gr.skip(), gr.skip(), *skip_previews
                return
            try:
                sha1 = wb.add_photo(path)
            except UserError as e:
                # A toast, the same words kept in the status line, and the refused file's name
                # out of the box: it must not look as if that file were shown.
                gr.Warning(str(e))
                yield gr.skip(), panels.upload_refused(str(e), had_photo=k is not None), None, *skip_previews
                return
            # The heads switched off (Inside tab, or a link's ablate=) stay off for the new photo.
            vm = wb.model(model_id)
            new = PhotoKey(model_id, sha1, inside.session_ablation(heads, ablate_mode, vm.geometry))
            new = labelled(new, labels_text, template)
            yield new, panels.running_line(vm), gr.skip(), *ctx.preview(current, new, preview_values)
            try:
                a = wb.analysis(new)
            except Exception:
                yield k, gr.skip(), gr.skip(), *skip_previews  # the tabs go back to the photo they showed
                raise
            photo = wb.photo(sha1)
            yield gr.skip(), panels.status_line(vm, a, photo.size) + panels.frames_note(photo), gr.skip(), \
                *skip_previews

        def zero_shot_visible(vm) -> list:
            """Updates for ctx.zero_shot_only: shown for CLIP / SigLIP, hidden for a plain ViT."""
            return [gr.update(visible=vm.is_zero_shot) for _ in ctx.zero_shot_only]

        @safe
        def loading(model_id: str):
            catalog.check(model_id)
            return catalog.loading_text(model_id)

        @safe
        def new_model(model_id: str, k: PhotoKey | None, labels_text: str = "", template: str = DEFAULT_TEMPLATE):
            catalog.check(model_id)
            try:
                vm = wb.model(model_id)  # a model that fails leaves the catalog (see Workbench.model)
            except ValueError:  # offline or broken: keep the current model, say why
                twin = catalog.twin(model_id)
                current = wb.model(k.model_id if k else default_model)
                text = panels.model_unavailable(model_id, current, twin)
                if k is not None:
                    text += "\n\n" + panels.status_line(current, wb.analysis(k), wb.photo(k.sha1).size)
                # New choices, not just the old value: Gradio drops an update equal to the value
                # it last sent, which left the failed name in the box on a second try.
                return (gr.skip(), text, gr.Dropdown(choices=catalog.choices(), value=current.id), gr.skip(), gr.skip(),
                        gr.skip(), *[gr.skip()] * len(ctx.zero_shot_only))
            b = panels.banner(vm, offline)
            shown = gr.Markdown(b, visible=bool(b))
            rule = patches.label_rule_text(wb.labelled(labelled(PhotoKey(model_id, ""), labels_text, template)))
            box = (gr.Group(visible=vm.is_zero_shot), *zero_shot_visible(vm))
            if k is None:
                return gr.skip(), panels.model_line(vm), gr.skip(), shown, rule, *box
            k = labelled(PhotoKey(model_id, k.sha1), labels_text, template)
            return k, panels.status_line(vm, wb.analysis(k), wb.photo(k.sha1).size), gr.skip(), shown, rule, *box

        tab_ids = [t.id for t in all_tabs]
        L = ctx.links

        @safe
        def open_link(request: gr.Request):
            p = deeplink.plan(dict(request.query_params), EXAMPLES, catalog.ids, tab_ids, default_model,
                              lambda m: wb.model(m).geometry)
            k = p.link
            vm = wb.model(p.model)
            g = vm.geometry
            b = panels.banner(vm, offline)
            # Choices too: this visitor sees the list as it is now, without models that failed for others.
            return (k.example or gr.skip(), gr.Dropdown(choices=catalog.choices(), value=p.model),
                    gr.Markdown(b, visible=bool(b)),
                    gr.Tabs(selected=k.tab) if k.tab else gr.skip(), k.tab or gr.skip(),
                    gr.Markdown("**About this link:**\n" + p.notice_text, visible=True) if p.notices else gr.skip(),
                    gr.Slider(maximum=g.num_layers, value=k.layer or g.num_layers),
                    gr.Slider(maximum=g.num_heads, value=k.head if isinstance(k.head, int) else 1),
                    p.show or gr.skip(), k.query if k.query else gr.skip(), k.direction or gr.skip(),
                    k.mode or gr.skip(), k.dx, k.dy, k.mask, format_heads(k.ablate), k.ablate_mode or "zero",
                    k.projector, gr.Group(visible=vm.is_zero_shot), *zero_shot_visible(vm))

        @safe
        def copy_link(key_: PhotoKey | None, model_id: str, tab_id: str, layer: int, head: int, show: str,
                      query: tuple[int, int] | None, direction: str, mode: str,
                      dx: int, dy: int, mask: tuple[int, ...], _heads: str, _mode: str, proj: bool,
                      request: gr.Request):
            link = deeplink.of_view(
                example=examples_by_sha1.get(key_.sha1) if key_ else None, model=model_id, tab=tab_id,
                layer=layer, head=head, show=show, query=query, direction=direction, mode=mode, dx=dx, dy=dy,
                mask=mask, projector=proj, ablation=key_.ablation if key_ else None)
            page = (request.headers.get("referer") or str(request.url)).split("?")[0]
            return page + deeplink.to_query(deeplink.fit(link, wb.model(model_id).geometry)[0])

        examples_by_sha1 = {image_sha1(load_image(p)): p for p in EXAMPLES}
        upload.change(new_photo, [upload, model, key, L["ablate"], L["ablate_mode"], zs_labels, zs_template, tab,
                                  *preview_ins],
                      [key, status, upload, *preview_outs],
                      api_name="upload", show_progress="minimal",
                      cancels=ctx.long_work).failure(
            lambda k: panels.upload_status(had_photo=k is not None, failed=True), key, status)
        upload.clear(lambda k: panels.upload_status(had_photo=k is not None, failed=False), key, status,
                     queue=False)
        # Feedback at once (no queue), then the load, which may take a download's time.
        model.input(loading, model, status, queue=False).success(
            new_model, [model, key, zs_labels, zs_template],
            [key, status, model, banner, zs_rule, zs_box, *ctx.zero_shot_only],
            api_name="model")
        link_parts = [L[n] for n in ("layer", "head", "show", "query", "direction", "mode", "dx", "dy", "mask",
                                     "ablate", "ablate_mode")]
        # hidden: a first visit saw grey loading blocks over the header while the link was read
        demo.load(open_link, None, [upload, model, banner, tabs, tab, notice_md, *link_parts, projector, zs_box,
                                    *ctx.zero_shot_only],
                  show_progress="hidden")
        link_btn.click(copy_link, [key, model, tab, *link_parts, projector], link_box).then(
            None, link_box, None, js=web.asset("copy_link.js"))
        private_except(demo, PUBLIC_ENDPOINTS)  # last: every event above is registered by now
    return demo


# ---------------------------------------------------------------- public API (gradio_client)
PUBLIC_ENDPOINTS = ("analyze", "attention", "rollout", "positions", "predict", "sweep", "relevance")


def public_api(wb: Workbench, default_model: str) -> None:
    """The documented endpoints. Each is one backend call; the photo is a file uploaded by the
    client (gradio_client's handle_file), the model one of the page's list. Maps are nested lists
    (patch rows × patch columns); layer and head count from 1, rows and columns from 0."""
    api = PublicApi(wb)

    def analyze(photo: FileData, model: str = default_model) -> dict:
        """Analyze a photo: top-5 predictions, the model's geometry, and the forward's time."""
        return api.analyze(photo["path"], model)

    def attention(photo: FileData, model: str = default_model, layer: int = 1, head: int | str = "mean",
                  mode: str = "raw", query_row: int = -1, query_col: int = -1) -> dict:
        """The attention map of one layer: head 1..H or a fusion (mean, max, min); mode raw or
        'rolled out'; from [CLS] (query -1, -1) or from the patch at (query_row, query_col)."""
        return api.attention(photo["path"], model, layer, head, mode, query_row, query_col)

    def rollout(photo: FileData, model: str = default_model, fusion: str = "mean", discard: float = 0.0) -> dict:
        """The attention rollout stack (Abnar & Zuidema 2020): [CLS]'s map after each layer, (L, gh, gw)."""
        return api.rollout(photo["path"], model, fusion, discard)

    def positions(model: str = default_model, row: int = 0, col: int = 0) -> dict:
        """Cosine similarity of the position embedding of patch (row, col) with every patch's."""
        return api.positions(model, row, col)

    def predict(photo: FileData, model: str = default_model, dx: int = 0, dy: int = 0, fill: str = "edge",
                mask: list[int] | None = None, mask_mode: str = "drop") -> dict:
        """Top-5 under a shift (dx, dy within ±2P pixels; fill edge, wrap or constant) and/or
        masked patches (0-based, row-major; mask_mode drop, black, mean or blur)."""
        return api.predict(photo["path"], model, dx, dy, fill, mask or [], mask_mode)

    def sweep(photo: FileData, model: str = default_model) -> dict:
        """Shift the photo k = 0..2P pixels right: cosine of patch embeddings and the top-1 per k."""
        return api.sweep(photo["path"], model)

    def relevance(photo: FileData, model: str = default_model, class_index: int = -1) -> dict:
        """Class relevance (Chefer et al. 2021b, generic attention) of a class (-1: the top-1)."""
        return api.relevance(photo["path"], model, class_index)

    for fn in (analyze, attention, rollout, positions, predict, sweep, relevance):
        gr.api(safe(fn), api_name=fn.__name__)


def private_except(demo: gr.Blocks, public: tuple[str, ...]) -> None:
    """Every page event stays callable by the page but hidden from /gradio_api/info and from
    named-endpoint clients; only the documented endpoints are public."""
    for fn in demo.fns.values():
        if fn.api_name not in public:
            fn.api_visibility = "private"


def launch_kwargs() -> dict[str, Any]:
    """Safe defaults shared by `python app.py` and the tests."""
    return dict(
        max_file_size=MAX_FILE_SIZE,
        ssr_mode=False,  # CVE-2026-134825 affects Gradio 6.27–6.31 with SSR on
        run_history=False,
        enable_monitoring=False,
        strict_cors=True,
        show_error=True,  # our gr.Error messages; never tracebacks (see `safe`)
        allowed_paths=[str(HERE / "assets" / "examples")],
        theme=THEME,
        css=web.asset("style.css"),
        js=web.asset("page.js"),
    )


def configure_queue(demo: gr.Blocks, max_size: int = 32, concurrency: int = 2) -> gr.Blocks:
    return demo.queue(max_size=max_size, default_concurrency_limit=concurrency)


def start_model(wb: Workbench, name: str) -> str:
    """Load the requested model; when it cannot be had (offline, say), fall back to the same
    architecture with random weights. The page's banner says so; the reason goes to the log."""
    try:
        wb.model(name)
        return name
    except ValueError as e:
        if name.startswith(RANDOM_PREFIX):
            raise
        log.warning("Could not load %s (%s): showing %s (untrained random weights) instead. "
                    "Run with --model PATH for a local checkpoint.", name, e, OFFLINE_FALLBACK)
        wb.model(OFFLINE_FALLBACK)
        return OFFLINE_FALLBACK


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="vizvit: watch a Vision Transformer read your photo")
    parser.add_argument("--model", default=os.environ.get("VIZVIT_MODEL", DEFAULT_MODEL),
                        help="hub id, local save_pretrained directory, or random:vit-base-patch16-224")
    parser.add_argument("--device", default="auto", help="auto (cuda, mps, cpu), cpu, cuda, mps")
    parser.add_argument("--host", default=None,
                        help="address to bind (default: $GRADIO_SERVER_NAME, else 127.0.0.1; 0.0.0.0 on a Space)")
    parser.add_argument("--port", type=int, default=None,
                        help="port (default: $GRADIO_SERVER_PORT, else 7860; 7860 on a Space)")
    parser.add_argument("--share", action="store_true")
    parser.add_argument("--cache-mb", type=int, default=int(os.environ.get("VIZVIT_CACHE_MB", 1024)),
                        help="memory budget of the analysis cache")
    parser.add_argument("--photo-mb", type=int, default=int(os.environ.get("VIZVIT_PHOTO_MB", 256)),
                        help="memory budget of decoded uploads kept for re-analysis")
    parser.add_argument("--cnn", default=os.environ.get("VIZVIT_CNN"),
                        help="a CNN classifier to show beside the ViT in the shift sweep, e.g. microsoft/resnet-50")
    parser.add_argument("--queue-size", type=int, default=32, help="requests waiting; more get 'queue full'")
    parser.add_argument("--concurrency", type=int, default=2, help="events computed at once")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    host, port = server_address(args.host, args.port, os.environ)
    online = hub.ensure_hub_or_offline()  # one short check, instead of the hub client's retry ladder per load
    try:
        wb = Workbench(cache_bytes=args.cache_mb << 20, photo_bytes=args.photo_mb << 20, device=args.device,
                       cnn=args.cnn)
    except ValueError as e:  # the CNN is optional: say so and go on without it
        log.warning("no CNN beside the ViT: %s", e)
        wb = Workbench(cache_bytes=args.cache_mb << 20, photo_bytes=args.photo_mb << 20, device=args.device)
    # The catalog first: it names a local directory by its folder (the page never shows the path),
    # and a model that fails to load leaves it, its twin taking its place.
    catalog = Catalog(args.model)
    wb.catalog = catalog
    model_id = start_model(wb, catalog.public(args.model))
    if not online:
        dropped = catalog.keep_cached_only(keep=model_id)
        if dropped:
            log.info("offline: not in the list (no local copy): %s", ", ".join(dropped))
    demo = configure_queue(build_demo(wb, model_id, catalog, offline=not online), args.queue_size,
                           args.concurrency)
    log.info("serving on http://%s:%d", host, port)
    demo.launch(server_name=host, server_port=port, share=args.share, **launch_kwargs())


if __name__ == "__main__":
    main()
