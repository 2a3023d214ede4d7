"""vizvit web page: wiring only. Every computation lives in the `vizvit` package.

    python app.py                                  # google/vit-base-patch16-224, 127.0.0.1:7860
    python app.py --model random:vit-base-patch16-224   # offline, untrained weights
    python app.py --model ./my_checkpoint --device cuda

Each tab is one `*_tab(ctx)` function that builds its components and registers its
events. Handlers unpack inputs, call the backend, and return what components show.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from vizvit.threads import configure_malloc, configure_threads

configure_threads()  # OMP_WAIT_POLICY=PASSIVE and the thread count, before torch loads
configure_malloc()  # freed result tensors go back to the OS: RSS stays within the cache budget

import gradio as gr  # noqa: E402
from gradio import processing_utils  # noqa: E402

from vizvit import attention_panels, deeplink, embed_panels, experiments, figures, panels, positions_panel  # noqa: E402
from vizvit.errors import UserError  # noqa: E402
from vizvit.images import image_sha1, load_image  # noqa: E402
from vizvit.models import DEFAULT_MODEL, RANDOM_PREFIX, short_name  # noqa: E402
from vizvit.workbench import PhotoKey, Workbench  # noqa: E402

log = logging.getLogger("vizvit.app")
HERE = Path(__file__).resolve().parent
EXAMPLES = sorted(str(p) for p in (HERE / "assets" / "examples").glob("*.jpg"))
OFFLINE_FALLBACK = RANDOM_PREFIX + "vit-base-patch16-224"
# Hub ids a visitor may pick. Arbitrary ids or paths come only from the command line.
CURATED_MODELS = [
    "google/vit-base-patch16-224",
    "google/vit-base-patch32-384",
    "google/vit-large-patch16-224",
    "facebook/deit-base-patch16-224",
    "facebook/dino-vitb16",
    OFFLINE_FALLBACK,
]
UPLOAD_TYPES = [".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff",
                # accepted only so vizvit can say clearly why it refuses them
                ".heic", ".heif", ".avif", ".svg"]
MAX_FILE_SIZE = "20mb"
SESSION_TTL_S = 3600
# System fonts only: the default theme fetches web fonts, which stalls the page offline
# (a lecture hall without internet) and in tests.
THEME = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                          font_mono=["ui-monospace", "monospace"])


def _atomic_save_pil_to_cache(img: Any, cache_dir: str, name: str = "image", format: str = "webp") -> str:
    """Gradio 6.31 writes a cached output image in place, at a path named by its content
    hash: two sessions producing the same picture at once could serve a half-written
    file. Write under a temporary name and rename, as Gradio already does for files."""
    data = processing_utils.encode_pil_to_bytes(img, format)
    folder = Path(cache_dir) / processing_utils.hash_bytes(data)
    folder.mkdir(exist_ok=True, parents=True)
    target = (folder / f"{name}.{format}").resolve()
    if not target.exists():
        fd, staging = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(staging, target)
    return str(target)


processing_utils.save_pil_to_cache = _atomic_save_pil_to_cache


@dataclass(frozen=True)
class Ctx:
    """What every tab needs: the backend and the shared components."""

    wb: Workbench
    key: gr.State  # PhotoKey | None: the session's photo, never tensors
    tab: gr.State  # id of the visible tab, so hidden tabs don't compute
    links: dict[str, gr.components.Component] = field(default_factory=dict)  # deep-link targets
    long_work: list = field(default_factory=list)  # events a new upload cancels (sweeps, curves)

    def on_show(self, tab: gr.Tab, fn: Callable, inputs: list, outputs: list) -> None:
        """Run fn(*inputs) -> outputs when the tab is opened, and when the photo or model
        changes while it is open. Hidden tabs compute nothing on upload (lazy tabs)."""
        tab_id = tab.id

        def if_visible(current: str, *args: Any) -> Any:
            if current != tab_id:
                return tuple(gr.skip() for _ in outputs) if len(outputs) > 1 else gr.skip()
            return fn(*args)

        self.key.change(if_visible, [self.tab, *inputs], outputs, show_progress="minimal")
        tab.select(fn, inputs, outputs, show_progress="minimal")


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
                indices = gr.Checkbox(value=False, label="patch numbers")
            patch_info = gr.Markdown(elem_id="patch-info")
        with gr.Column(scale=2):
            top5 = gr.Plot(label="Top-5 predictions", elem_id="top5")
            numbers = gr.Dataframe(headers=["what", "value"], label="Numbers", interactive=False,
                                   elem_id="numbers", wrap=True, column_widths=["45%", "55%"])
    strip = gr.Image(label="The sequence it becomes: token 0 is [CLS], token 1 + k is patch k, row by row "
                           "(numbers are token indices)",
                     interactive=False, format="jpeg", elem_id="sequence-strip")
    gr.Markdown(panels.PATCHES_TEXT)
    explanation = gr.Markdown(elem_id="patches-numbers")
    clicked = gr.State(None)  # (row, col)

    @safe
    def show(key: PhotoKey | None, lines_on: bool, idx_on: bool, rc: tuple[int, int] | None):
        if key is None:
            return None, None, None, None, "", ""
        p = panels.patches_panel(ctx.wb.model(key.model_id), ctx.wb.analysis(key), lines_on, idx_on, rc)
        return p.grid, p.strip, p.top5, p.numbers, p.patch_text, p.explanation

    @safe
    def redraw(key: PhotoKey | None, lines_on: bool, idx_on: bool, rc: tuple[int, int] | None):
        if key is None:
            return gr.skip(), gr.skip()
        vm = ctx.wb.model(key.model_id)
        return panels.patch_grid(vm, ctx.wb.analysis(key), lines_on, idx_on, rc), \
            panels.patch_text(vm.geometry, rc)

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        return panels.clicked_patch(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])

    ins = [ctx.key, lines, indices, clicked]
    ctx.key.change(show, ins, [grid_img, strip, top5, numbers, patch_info, explanation])
    # Controls redraw only the grid: no forward, no re-encoding of the other panels.
    lines.change(redraw, ins, [grid_img, patch_info], show_progress="hidden", api_name="patches_view")
    indices.change(redraw, ins, [grid_img, patch_info], show_progress="hidden")
    grid_img.select(click, [ctx.key], clicked).then(redraw, ins, [grid_img, patch_info], show_progress="hidden")


# ---------------------------------------------------------------- Embeddings tab
def embeddings_tab(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown(embed_panels.EMBED_TEXT)
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
    gr.Markdown(embed_panels.DEPTH_TEXT)
    depth = gr.Slider(0, 12, value=0, step=1, elem_id="emb-depth",
                      label="depth l (0 = after the embedding stage; l = after block l)")
    depth_md = gr.Markdown(elem_id="emb-depth-info")
    with gr.Row():
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
            color_by = gr.Radio(list(embed_panels.COLOR_CHOICES), value="row", label="colour points by",
                                elem_id="emb-color")
    cls_md = gr.Markdown(elem_id="emb-cls-info")
    cls_img = gr.Image(label="cos([CLS], patch) at each depth", interactive=False, format="png",
                       elem_id="emb-cls")
    gr.Markdown("### 3 · Patch-embedding filters")
    gr.Markdown(embed_panels.FILTERS_TEXT)
    filters_md = gr.Markdown(elem_id="emb-filters-info")
    filters_img = gr.Image(label="Principal components of the embedding filters", interactive=False,
                           format="png", elem_id="emb-filters")
    clicked = gr.State(None)  # (row, col)

    def data(key: PhotoKey):
        vm = ctx.wb.model(key.model_id)
        a = ctx.wb.analysis(key)
        return vm, a, ctx.wb.derived(key, "embeddings", lambda: embed_panels.prepare(vm, a))

    @safe
    def show_depth(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None):
        if key is None:
            return None, None, None, "", ""
        vm, a, d = data(key)
        p = embed_panels.depth_panel(vm, a, d, depth_l, rc)
        s = embed_panels.similarity_panel(vm, a, d, depth_l, rc)
        return p.pca_over_photo, p.maps, s.image, s.text, p.text

    @safe
    def show_all(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None, color: str):
        if key is None:
            return (None, None, None, "", "", None, None, "", "", "", None, "", None, None, gr.skip())
        vm, a, d = data(key)
        st = embed_panels.stage_panel(vm, d)
        top = vm.geometry.num_layers
        depth_l = min(int(depth_l), top)
        return (*show_depth(key, depth_l, rc), show_scatter(key, depth_l, color), st.steps, st.check,
                embed_panels.cls_similarity_text(vm, d), embed_panels.filters_text(vm, d),
                st.params, st.total,
                embed_panels.cls_similarity_image(vm, d), embed_panels.filters_image(d),
                gr.Slider(maximum=top, value=depth_l))

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        r, c, _ = embed_panels.clicked_token(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return r, c

    @safe
    def show_similarity(key: PhotoKey | None, depth_l: int, rc: tuple[int, int] | None):
        if key is None:
            return None, None, ""
        vm, a, d = data(key)
        s = embed_panels.similarity_panel(vm, a, d, depth_l, rc)
        return embed_panels.pca_over_photo(vm, d, depth_l, rc), s.image, s.text

    @safe
    def show_scatter(key: PhotoKey | None, depth_l: int, color: str):
        if key is None:
            return None
        vm, _, d = data(key)
        return embed_panels.scatter_figure(vm, d, depth_l, color)

    depth_outs = [pca_img, maps_img, sim_img, sim_md, depth_md]
    all_outs = [*depth_outs, scatter, steps, check, cls_md, filters_md, params, params_total, cls_img,
                filters_img, depth]
    ctx.on_show(tab, show_all, [ctx.key, depth, clicked, color_by], all_outs)
    # Pictures first, then the scatter (its figure is the slowest part of a slider move).
    depth.change(show_depth, [ctx.key, depth, clicked], depth_outs, show_progress="hidden").then(
        show_scatter, [ctx.key, depth, color_by], scatter, show_progress="hidden")
    for img in (pca_img, sim_img):
        img.select(click, [ctx.key], clicked).then(show_similarity, [ctx.key, depth, clicked],
                                                    [pca_img, sim_img, sim_md], show_progress="hidden")
    color_by.change(show_scatter, [ctx.key, depth, color_by], scatter, show_progress="hidden")


# ---------------------------------------------------------------- Attention tab
def attention_tab(ctx: Ctx, tab: gr.Tab) -> None:
    ap = attention_panels
    with gr.Row():
        with gr.Column(scale=3):
            main_img = gr.Image(label="Attention map (click a patch to make it the query)", interactive=False,
                                format="jpeg", elem_id="attn-main")
            with gr.Row():
                direction = gr.Radio(["row", "column"], value="row", elem_id="attn-direction",
                                     label="clicked patch: its row (what it attends to) or its column (what attends to it)")
                to_cls = gr.Button("Query: back to [CLS]", size="sm", elem_id="attn-to-cls")
        with gr.Column(scale=2):
            layer = gr.Slider(1, 12, value=12, step=1, label="layer (rolled out: up to this layer)",
                              elem_id="attn-layer")
            show = gr.Radio(list(ap.SHOW_CHOICES), value="mean", label="heads: one head, or fuse them",
                            elem_id="attn-show")
            head = gr.Slider(1, 12, value=1, step=1, label="head (for 'one head')", elem_id="attn-head")
            mode = gr.Radio(list(ap.MODES), value="raw", label="attention", elem_id="attn-mode")
            discard = gr.Slider(0, 0.95, value=0, step=0.05, label="rollout: discard the lowest fraction per row (fused heads)")
            with gr.Row():
                alpha = gr.Slider(0, 1, value=0.6, step=0.05, label="overlay opacity")
                cmap = gr.Dropdown(list(ap.COLORMAPS), value="inferno", label="colour map")
            with gr.Row():
                tau = gr.Slider(0, 1, value=0, step=0.05, label="keep patches holding τ of the mass (0 = off)")
                shared = gr.Checkbox(value=True, label="one shared colour scale (grid and strip)")
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
            # Filled by ap.DISTANCE_CLICK_JS when a dot of the chart is clicked (a value set from
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
    controls = [layer, head, show, mode, query, direction, discard, alpha, cmap, tau, shared]
    ctx.links.update(layer=layer, head=head, show=show, query=query, direction=direction, mode=mode)

    def params(*v: Any) -> attention_panels.AttnParams:
        return ap.AttnParams(layer=int(v[0]), head=int(v[1]), show=v[2], mode=v[3], query=v[4], direction=v[5],
                             discard=float(v[6]), alpha=float(v[7]), cmap=v[8], tau=float(v[9]),
                             shared_scale=bool(v[10]))

    @safe
    def opened(key: PhotoKey | None, *v: Any):
        if key is None:
            return (gr.skip(),) * 12
        vm = ctx.wb.model(key.model_id)
        g = vm.geometry
        p = ap.clip_params(params(*v), g)
        page = ap.attention_page(vm, ctx.wb.analysis(key), p, functools.partial(ctx.wb.derived, key))
        cls_val = page.classes[0][1] if page.classes else None
        return (gr.Slider(maximum=g.num_layers, value=p.layer), gr.Slider(maximum=g.num_heads, value=p.head),
                p.query, page.view.main, page.view.readout, page.view.grid, page.view.strip, page.distance,
                gr.Dropdown(choices=page.distance_choices, value=None),
                gr.Dropdown(choices=page.classes, value=cls_val), None, "")

    @safe
    def redraw(key: PhotoKey | None, *v: Any):
        if key is None:
            return (gr.skip(),) * 4
        vm = ctx.wb.model(key.model_id)
        view = ap.attention_view(vm, ctx.wb.analysis(key), params(*v), functools.partial(ctx.wb.derived, key))
        return view.main, view.readout, view.grid, view.strip

    @safe
    def redraw_one_head(key: PhotoKey | None, *v: Any):
        v = (*v[:2], ap.ONE_HEAD, *v[3:])  # controls: layer, head, show, ...
        return (ap.ONE_HEAD, *redraw(key, *v))

    # A click answers in ONE event (the new state and the pictures), not a state event and a
    # .then() redraw: each event is a queue round trip of ~100 ms in the browser (issue 16).
    @safe
    def click_main(evt: gr.SelectData, key: PhotoKey | None, *v: Any):
        if key is None:
            return (gr.skip(),) * 5
        q = ap.clicked_query(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return (q, *redraw(key, *v[:4], q, *v[5:]))  # controls: layer, head, show, mode, query, ...

    @safe
    def to_cls_view(key: PhotoKey | None, *v: Any):
        return (None, *redraw(key, *v[:4], None, *v[5:]))

    @safe
    def click_grid(evt: gr.SelectData, key: PhotoKey | None, *v: Any):
        if key is None:
            return (gr.skip(),) * 7
        lay, hd = ap.grid_cell_at(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return (lay, hd, ap.ONE_HEAD, *redraw(key, lay, hd, ap.ONE_HEAD, *v[3:]))

    @safe
    def pick_head(choice: str | None):
        if not choice:
            return gr.skip(), gr.skip(), gr.skip()
        lay, hd = ap.parse_choice(choice)
        return lay, hd, ap.ONE_HEAD

    @safe
    def relevance(key: PhotoKey | None, class_index: int | None, *v: Any):
        if key is None or class_index is None:
            raise gr.Error("Upload a photo first (relevance needs a model with a classifier).")
        vm = ctx.wb.model(key.model_id)
        return ap.relevance_panel(vm, ctx.wb.analysis(key), int(class_index), params(*v),
                                  functools.partial(ctx.wb.derived, key))

    view_outs = [main_img, readout, grid, strip]
    ins = [ctx.key, *controls]
    ctx.on_show(tab, opened, ins, [layer, head, query, *view_outs, dist, pick, cls, rel_img, rel_text])
    for c in (layer, show, mode, direction, discard, alpha, cmap, tau, shared):
        # always_last: while a slider is dragged, the last value is always drawn.
        c.input(redraw, ins, view_outs, show_progress="hidden", trigger_mode="always_last")
    # Moving the head slider means "show me that head": leave a fusion (mean/max/min), or the
    # slider would seem to do nothing. One event, so dragging coalesces like the other sliders.
    head.input(redraw_one_head, ins, [show, *view_outs], show_progress="hidden", trigger_mode="always_last")
    main_img.select(click_main, ins, [query, *view_outs], show_progress="hidden")
    to_cls.click(to_cls_view, ins, [query, *view_outs], show_progress="hidden")
    grid.select(click_grid, ins, [layer, head, show, *view_outs], show_progress="hidden")
    # The chart and the list sit below the main map: bring the opened head's map into view.
    for chooser, ev in ((pick, pick.input), (dist_click, dist_click.change)):
        ev(pick_head, [chooser], [layer, head, show]).then(redraw, ins, view_outs, show_progress="hidden").then(
            None, None, None, js="() => document.querySelector('#attn-main').scrollIntoView({block: 'center'})")
    for trigger in (rel_btn.click, cls.input):  # a new class is computed at once, never left stale
        trigger(relevance, [ctx.key, cls, *controls], [rel_img, rel_text])


# ---------------------------------------------------------------- Positions tab
def positions_tab(ctx: Ctx, tab: gr.Tab) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            # Short: a long label wraps under the image's toolbar and covers row 0.
            grid_img = gr.Image(label="Position-embedding cosine: tile (r, c) vs every patch (click a tile)",
                                interactive=False, format="jpeg", elem_id="pos-grid")
        with gr.Column(scale=2):
            tile_plot = gr.Plot(label="The clicked tile, large (hover for values)", elem_id="pos-tile")
            cls_plot = gr.Plot(label="[CLS] position embedding vs patch positions", elem_id="pos-cls")
    text = gr.Markdown(elem_id="pos-text")
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown("**Same scale, same grid:** learned vs 1-D sinusoidal vs 2-D sin-cos vs random init")
            compare = gr.Image(show_label=False, interactive=False, format="png", elem_id="pos-compare")
        with gr.Column(scale=2):
            numbers = gr.Dataframe(headers=positions_panel.CONTRAST_HEADERS, label="Neighbour contrast",
                                   interactive=False, elem_id="pos-numbers", wrap=True)
    gr.Markdown("### Other resolutions")
    size = gr.Dropdown([int(s) for s in positions_panel.RESOLUTIONS], value=384, label="input size (px)",
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
        p = positions_panel.positions_panel(ctx.wb, key)
        r = positions_panel.resolution_panel(ctx.wb, key, px)
        return p.grid_img, p.tile_fig, p.cls_fig, p.text, p.compare_img, p.numbers, r.grid_img, r.top5, r.text

    @safe
    def resize(key: PhotoKey | None, px: int):
        if key is None:
            return None, None, ""
        r = positions_panel.resolution_panel(ctx.wb, key, px)
        return r.grid_img, r.top5, r.text

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        hit = None if key is None else positions_panel.click_tile(ctx.wb, key, evt.index[0], evt.index[1])
        return (gr.skip(), gr.skip()) if hit is None else hit

    ctx.on_show(tab, show, [ctx.key, size],
                [grid_img, tile_plot, cls_plot, text, compare, numbers, res_img, res_top5, res_text])
    size.change(resize, [ctx.key, size], [res_img, res_top5, res_text])
    grid_img.select(click, [ctx.key], [grid_img, tile_plot], show_progress="hidden")


# ---------------------------------------------------------------- Experiments tab
def experiments_tab(ctx: Ctx, tab: gr.Tab) -> None:
    wb = ctx.wb
    gr.Markdown(experiments.EXPERIMENTS_TEXT)
    with gr.Row():
        dx = gr.Slider(-32, 32, value=0, step=1, label="dx: shift right (pixels)", elem_id="shift-dx")
        dy = gr.Slider(-32, 32, value=0, step=1, label="dy: shift down (pixels)", elem_id="shift-dy")
        fill = gr.Radio(["edge", "wrap", "constant"], value="edge", label="what enters at the border",
                        elem_id="shift-fill")
    with gr.Row():
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
        mode = gr.Radio(["drop", "black", "mean", "blur"], value="drop", label="mask mode", elem_id="mask-mode")
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
        curve_mode = gr.Radio(["black", "mean", "blur", "drop"], value="black", label="remove patches by",
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
        p = experiments.shift_panel(wb, key, int(x), int(y), f)
        return p.view, p.cosine, p.cosine_text, p.top5

    @safe
    def limits(key: PhotoKey | None):
        if key is None:
            return gr.skip(), gr.skip()
        lo, hi = experiments.shift_limits(wb, key)
        return gr.update(minimum=lo, maximum=hi), gr.update(minimum=lo, maximum=hi)

    @safe
    def show_mask(key: PhotoKey | None, m: tuple[int, ...], md: str):
        if key is None:
            return None, None, "", None
        p = experiments.mask_panel(wb, key, m, md)
        return p.grid, p.masked, p.text, p.top5

    @safe
    def click(key: PhotoKey | None, m: tuple[int, ...], evt: gr.SelectData):
        if key is None:
            return m
        return experiments.toggle_at(wb, key, m, evt.index[0], evt.index[1])

    def action(name: str) -> Callable:
        @safe
        def run(key: PhotoKey | None, m: tuple[int, ...], pct: float, s: int):
            if key is None:
                return m, s
            return experiments.mask_action(wb, key, m, name, pct, s), s + (name == "random")

        return run

    @safe
    def sweep(key: PhotoKey | None):
        if key is None:
            raise UserError("Upload a photo first.")
        for p in experiments.sweep_progress(wb, key):
            yield p.figure, p.table, p.text

    @safe
    def curves(key: PhotoKey | None, n: int, md: str):
        if key is None:
            raise UserError("Upload a photo first.")
        for p in experiments.curves_progress(wb, key, int(n), md):
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
    mask_grid.select(click, [ctx.key, mask], mask).then(show_mask, mask_ins, mask_outs, show_progress="hidden")
    for btn, name in ((b_clear, "clear"), (b_invert, "invert"), (b_random, "random"), (b_top, "top"),
                      (b_bottom, "bottom")):
        btn.click(action(name), [ctx.key, mask, percent, seed], [mask, seed]).then(
            show_mask, mask_ins, mask_outs, show_progress="hidden")

    running = sweep_btn.click(sweep, [ctx.key], [sweep_plot, sweep_table, sweep_text])
    curving = curves_btn.click(curves, [ctx.key, steps, curve_mode], [del_plot, ins_plot, auc_table, curves_text])
    stop_btn.click(None, None, None, cancels=[running, curving])
    ctx.long_work.extend([running, curving])


# ---------------------------------------------------------------- For lecturers
def lecture_tab(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown(panels.LECTURE_TEXT)
    with gr.Row():
        size = gr.Slider(16, 1024, value=224, step=1, label="image side (pixels)", elem_id="cost-size")
        patch = gr.Slider(1, 64, value=16, step=1, label="patch size P", elem_id="cost-patch")
    table, text = panels.attention_cost_panel(224, 16)
    cost = gr.Dataframe(table, headers=["", "pixels as tokens", "patches as tokens"], interactive=False,
                        elem_id="cost-table")
    cost_text = gr.Markdown(text, elem_id="cost-text")

    @safe
    def calculate(side: int, p: int):
        return panels.attention_cost_panel(int(side), int(p))

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
    btn.click(save, plots, out).success(None, None, None, js=CLICK_NEW_FILE_JS.replace("BOX", f"#charts-file-{tab.id}"))


def _descendants(block: gr.blocks.BlockContext) -> list:
    out = []
    for child in getattr(block, "children", []):
        out.append(child)
        out.extend(_descendants(child))
    return out


# Gradio 6.31 maps a click on a picture through img.naturalWidth, which Chromium resets to 0
# while the next picture loads (src just changed): such a click was dropped without a word
# (issue 16's lost click, e.g. right after a layer change). Hold it until the picture is
# decoded, then hand the same click on.
HOLD_CLICK_JS = """() => {
  const held = new WeakSet();
  document.addEventListener('click', (e) => {
    if (held.has(e) || !(e.target instanceof Element)) return;
    const img = e.target.closest('.image-container button')?.querySelector('img');
    if (!img || img.naturalWidth > 0 || !img.getAttribute('src')) return;
    e.stopImmediatePropagation();
    e.preventDefault();
    const again = () => {
      const ev = new MouseEvent('click', { clientX: e.clientX, clientY: e.clientY, bubbles: true, cancelable: true });
      held.add(ev);
      img.dispatchEvent(ev);
    };
    img.decode().then(again, again);
  }, true);
}"""
# Chart glue installed once per page (not on a tab's select: a deep link opens a tab without one).
PAGE_JS = (f"() => {{ ({figures.ON_PLOT_JS})(); ({embed_panels.SCATTER_HOVER_JS})(); "
           f"({attention_panels.DISTANCE_CLICK_JS})(); ({HOLD_CLICK_JS})(); }}")
CLICK_NEW_FILE_JS = """() => {
  const last = (window.__vizvitLastFile = window.__vizvitLastFile || {});
  let tries = 0;
  const timer = setInterval(() => {
    const a = document.querySelector('BOX a');
    if (a && a.href && a.href !== last['BOX']) { clearInterval(timer); last['BOX'] = a.href; a.click(); }
    else if (++tries > 100) clearInterval(timer);
  }, 100);
}"""
PROJECTOR_JS = "(on) => { document.body.classList.toggle('vizvit-projector', on); }"
COPY_JS = "(url) => { if (url && navigator.clipboard) { navigator.clipboard.writeText(url).catch(() => {}); } }"
# Image labels and the download/fullscreen buttons float over the top of a gr.Image and
# would hide its first row of patches (and the [CLS] tile): start pictures below them.
# Projector mode: bigger type and pure black on white, through Gradio's theme variables.
CSS = """
.gradio-container .image-container { padding-top: 34px; }
.vizvit-projector .gradio-container { --text-xs: 16px; --text-sm: 18px; --text-md: 22px; --text-lg: 26px;
  --text-xl: 30px; --text-xxl: 36px; --body-text-color: #000; --body-text-color-subdued: #111;
  --block-label-text-color: #000; --block-title-text-color: #000; --background-fill-primary: #fff;
  --border-color-primary: #000; --block-label-text-size: 18px; --block-title-text-size: 20px;
  --block-info-text-size: 18px; --input-text-size: 20px; --button-large-text-size: 22px;
  --button-small-text-size: 18px; --section-header-text-size: 22px; }
.vizvit-projector .gradio-container button[role=tab] { font-size: 22px; }
.vizvit-projector .gradio-container .prose { font-size: 22px; line-height: 1.45; color: #000; }
.vizvit-projector .js-plotly-plot .main-svg text { font-size: 15px !important; }
.vizvit-projector .js-plotly-plot .main-svg text:not(.bartext) { fill: #000 !important; }
.vizvit-projector .js-plotly-plot .main-svg .gtitle { font-size: 20px !important; }
"""


# ---------------------------------------------------------------- the page
TABS = [("Patches", "patches", patches_tab), ("Embeddings", "embeddings", embeddings_tab),
        ("Attention", "attention", attention_tab), ("Positions", "positions", positions_tab),
        ("Experiments", "experiments", experiments_tab), ("For lecturers", "lecture", lecture_tab)]


def build_demo(wb: Workbench, default_model: str = DEFAULT_MODEL, notice: str = "",
               extra_models: tuple[str, ...] = ()) -> gr.Blocks:
    """The whole page. `wb` must already hold (or be able to load) `default_model`."""
    ids = list(dict.fromkeys([*extra_models, default_model, *CURATED_MODELS]))
    choices = [(short_name(m), m) for m in ids]
    # delete_cache: uploads and rendered outputs older than an hour are removed every
    # 10 minutes, so a public server's disk does not fill up.
    with gr.Blocks(title="vizvit: watch a Vision Transformer read your photo",
                   delete_cache=(600, 3600)) as demo:
        key = gr.State(None, time_to_live=SESSION_TTL_S)
        tab = gr.State("patches")
        ctx = Ctx(wb=wb, key=key, tab=tab)
        gr.Markdown(panels.HEADER_TEXT)
        notice_md = gr.Markdown(notice, elem_id="notice", visible=bool(notice))
        with gr.Row():
            with gr.Column(scale=2):
                upload = gr.File(label="Upload a photo (JPEG, PNG, WebP, GIF, BMP, TIFF)",
                                 file_types=UPLOAD_TYPES, type="filepath", elem_id="upload")
            with gr.Column(scale=2):
                # allow_custom_value: new_model checks the choice itself; Gradio's own check would
                # answer an API caller with the whole list, local paths included.
                model = gr.Dropdown(choices, value=default_model, label="Model", elem_id="model",
                                    allow_custom_value=True)
                status = gr.Markdown("👈 Upload a photo or pick an example to begin.", elem_id="status")
            with gr.Column(scale=3):
                gr.Examples(EXAMPLES, inputs=[upload], label="Examples (CC0 / public domain)")
        all_tabs = []
        with gr.Tabs(elem_id="tabs") as tabs:
            for label, tab_id, build in TABS:
                with gr.Tab(label, id=tab_id) as t:
                    build(ctx, t)
                    charts_download(t)
                all_tabs.append(t)
        for t in all_tabs:
            t.select(functools.partial(lambda tid: tid, t.id), None, tab, queue=False)
        with gr.Row():
            projector = gr.Checkbox(False, label="Projector mode (large text, high contrast)", elem_id="projector")
            link_btn = gr.Button("Copy link to this view", size="sm", elem_id="copy-link")
            link_box = gr.Textbox(label="Link to this view", buttons=["copy"], interactive=False,
                                  elem_id="link-box", scale=3)
        projector.change(None, projector, None, js=PROJECTOR_JS)

        @safe
        def new_photo(path: str | None, model_id: str, k: PhotoKey | None):
            if path is None:  # the upload box was cleared
                return gr.skip(), panels.upload_status(had_photo=k is not None, failed=False)
            sha1 = wb.add_photo(path)
            k = PhotoKey(model_id, sha1)
            a = wb.analysis(k)
            return k, panels.status_line(wb.model(model_id), a, wb.photo(sha1).size)

        unavailable: set[str] = set()  # failed to load here (offline): taken off every later list

        @safe
        def new_model(model_id: str, k: PhotoKey | None):
            if model_id not in ids:
                raise UserError("Choose a model from the list.")
            try:
                vm = wb.model(model_id)
            except ValueError as e:  # offline or unknown: keep the current model, say why
                log.warning("model %s: %s", model_id, e)
                unavailable.add(model_id)
                alt = panels.random_twin(model_id)
                if alt and alt not in ids:
                    ids.append(alt)
                current = wb.model(k.model_id if k else default_model)
                text = panels.model_unavailable(model_id, current, alt)
                if k is not None:
                    text += "\n\n" + panels.status_line(current, wb.analysis(k), wb.photo(k.sha1).size)
                # New choices, not just the old value: Gradio drops an update equal to the value
                # it last sent, which left the failed name in the box on a second try.
                return gr.skip(), text, gr.Dropdown(
                    choices=[(short_name(m), m) for m in ids if m not in unavailable], value=current.id)
            if k is None:
                return gr.skip(), panels.model_line(vm), gr.skip()
            k = PhotoKey(model_id, k.sha1)
            return k, panels.status_line(vm, wb.analysis(k), wb.photo(k.sha1).size), gr.skip()

        tab_ids = [t.id for t in all_tabs]
        L = ctx.links

        @safe
        def open_link(request: gr.Request):
            p = deeplink.plan(dict(request.query_params), EXAMPLES, ids, tab_ids, default_model,
                              lambda m: wb.model(m).geometry)
            k = p.link
            g = wb.model(p.model).geometry
            return (k.example or gr.skip(), p.model,
                    gr.Tabs(selected=k.tab) if k.tab else gr.skip(), k.tab or gr.skip(),
                    gr.Markdown("**About this link:**\n" + p.notice_text, visible=True) if p.notices else gr.skip(),
                    gr.Slider(maximum=g.num_layers, value=k.layer or g.num_layers),
                    gr.Slider(maximum=g.num_heads, value=k.head if isinstance(k.head, int) else 1),
                    p.show or gr.skip(), k.query if k.query else gr.skip(), k.direction or gr.skip(),
                    k.mode or gr.skip(), k.dx, k.dy, k.mask, k.projector)

        @safe
        def copy_link(key_: PhotoKey | None, model_id: str, tab_id: str, layer: int, head: int, show: str,
                      query: tuple[int, int] | None, direction: str, mode: str,
                      dx: int, dy: int, mask: tuple[int, ...], proj: bool, request: gr.Request):
            link = deeplink.DeepLink(
                example=examples_by_sha1.get(key_.sha1) if key_ else None, model=model_id,
                tab=tab_id, layer=int(layer), head=int(head) if show == deeplink.ONE_HEAD else show,
                query=tuple(query) if query else None, direction=direction, mode=mode,
                dx=int(dx), dy=int(dy), mask=tuple(mask), projector=bool(proj))
            # Controls can still hold another model's values (a query on a bigger grid): the
            # link carries only what exists on this model.
            link, _ = deeplink.fit(link, wb.model(model_id).geometry)
            page = (request.headers.get("referer") or str(request.url)).split("?")[0]
            return page + deeplink.to_query(link)

        examples_by_sha1 = {image_sha1(load_image(p)): p for p in EXAMPLES}
        upload.change(new_photo, [upload, model, key], [key, status], api_name="upload",
                      cancels=ctx.long_work).failure(
            lambda k: panels.upload_status(had_photo=k is not None, failed=True), key, status)
        model.input(new_model, [model, key], [key, status, model], api_name="model")
        link_parts = [L[n] for n in ("layer", "head", "show", "query", "direction", "mode", "dx", "dy", "mask")]
        demo.load(open_link, None, [upload, model, tabs, tab, notice_md, *link_parts, projector])
        link_btn.click(copy_link, [key, model, tab, *link_parts, projector], link_box).then(
            None, link_box, None, js=COPY_JS)
    return demo


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
        css=CSS,
        js=PAGE_JS,
    )


def configure_queue(demo: gr.Blocks, max_size: int = 32, concurrency: int = 2) -> gr.Blocks:
    return demo.queue(max_size=max_size, default_concurrency_limit=concurrency)


def start_model(wb: Workbench, name: str) -> tuple[str, str]:
    """Load the requested model; offline or failing, fall back to random weights and say so."""
    try:
        wb.model(name)
        return name, ""
    except ValueError as e:
        if name.startswith(RANDOM_PREFIX):
            raise
        msg = (f"⚠️ Could not load **{name}** ({e}). Showing **{OFFLINE_FALLBACK}** instead: the same "
               "architecture with UNTRAINED random weights, so predictions are meaningless.")
        log.warning(msg)
        wb.model(OFFLINE_FALLBACK)
        return OFFLINE_FALLBACK, msg


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="vizvit: watch a Vision Transformer read your photo")
    parser.add_argument("--model", default=os.environ.get("VIZVIT_MODEL", DEFAULT_MODEL),
                        help="hub id, local save_pretrained directory, or random:vit-base-patch16-224")
    parser.add_argument("--device", default="auto", help="auto (cuda, mps, cpu), cpu, cuda, mps")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7860)
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
    try:
        wb = Workbench(cache_bytes=args.cache_mb << 20, photo_bytes=args.photo_mb << 20, device=args.device,
                       cnn=args.cnn)
    except ValueError as e:  # the CNN is optional: say so and go on without it
        log.warning("no CNN beside the ViT: %s", e)
        wb = Workbench(cache_bytes=args.cache_mb << 20, photo_bytes=args.photo_mb << 20, device=args.device)
    model_id, notice = start_model(wb, args.model)
    extra = (args.model,) if args.model not in CURATED_MODELS and model_id == args.model else ()
    demo = configure_queue(build_demo(wb, model_id, notice, extra_models=extra), args.queue_size, args.concurrency)
    demo.launch(server_name=args.host, server_port=args.port, share=args.share, **launch_kwargs())


if __name__ == "__main__":
    main()
