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
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from vizvit.threads import configure_threads

configure_threads()  # OMP_WAIT_POLICY=PASSIVE and the thread count, before torch loads

import gradio as gr  # noqa: E402

import vizvit  # noqa: E402
from vizvit import attention_panels, panels  # noqa: E402
from vizvit.models import DEFAULT_MODEL, RANDOM_PREFIX  # noqa: E402
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


@dataclass(frozen=True)
class Ctx:
    """What every tab needs: the backend and the shared components."""

    wb: Workbench
    key: gr.State  # PhotoKey | None: the session's photo, never tensors
    tab: gr.State  # id of the visible tab, so hidden tabs don't compute

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


def safe(fn: Callable) -> Callable:
    """Turn a ValueError into a message in the page; hide anything else's details."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except ValueError as e:
            raise gr.Error(str(e)) from None
        except Exception:
            log.exception("handler %s failed", fn.__name__)
            raise gr.Error("Something went wrong on the server with this request. "
                           "Please try again or upload another photo.") from None

    return wrapper


# ---------------------------------------------------------------- Patches tab
def patches_tab(ctx: Ctx) -> None:
    with gr.Row():
        with gr.Column(scale=3):
            grid_img = gr.Image(label="What the model sees: the patch grid (click a patch)",
                                interactive=False, format="png", elem_id="patch-grid")
            with gr.Row():
                lines = gr.Checkbox(value=True, label="grid lines")
                indices = gr.Checkbox(value=False, label="patch numbers")
            patch_info = gr.Markdown(elem_id="patch-info")
        with gr.Column(scale=2):
            top5 = gr.Plot(label="Top-5 predictions", elem_id="top5")
            numbers = gr.Dataframe(headers=["what", "value"], label="Numbers", interactive=False,
                                   elem_id="numbers", wrap=True)
    strip = gr.Image(label="The sequence it becomes: [CLS], then patches 0, 1, 2, … row by row",
                     interactive=False, format="png", elem_id="sequence-strip")
    gr.Markdown(panels.PATCHES_TEXT)
    clicked = gr.State(None)  # (row, col)

    @safe
    def show(key: PhotoKey | None, lines_on: bool, idx_on: bool, rc: tuple[int, int] | None):
        if key is None:
            return None, None, None, None, ""
        a = ctx.wb.analysis(key)
        vm = ctx.wb.model(key.model_id)
        p = panels.patches_panel(vm, a, lines_on, idx_on, rc)
        return p.grid, p.strip, p.top5, p.numbers, p.patch_text

    @safe
    def click(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return None
        return panels.clicked_patch(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])

    outs = [grid_img, strip, top5, numbers, patch_info]
    ins = [ctx.key, lines, indices, clicked]
    ctx.key.change(show, ins, outs)
    lines.change(show, ins, outs, show_progress="hidden")
    indices.change(show, ins, outs, show_progress="hidden")
    grid_img.select(click, [ctx.key], clicked).then(show, ins, outs, show_progress="hidden")


# ---------------------------------------------------------------- Embeddings tab
def embeddings_tab(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown("*(being built: issue 4)*")


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
            discard = gr.Slider(0, 0.95, value=0, step=0.05, label="rollout: discard the lowest fraction per row")
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
            gr.Markdown(ap.DISTANCE_TEXT)
        with gr.Column():
            with gr.Row():
                cls = gr.Dropdown([], label="class (top-5)", elem_id="attn-class")
                rel_btn = gr.Button("Compute class relevance", elem_id="attn-relevance-btn")
            rel_img = gr.Image(label="Class-specific relevance", interactive=False, format="jpeg",
                               elem_id="attn-relevance")
            rel_text = gr.Markdown()
            gr.Markdown(ap.RELEVANCE_TEXT)
    query = gr.State(None)  # (row, col) or None for [CLS]
    controls = [layer, head, show, mode, query, direction, discard, alpha, cmap, tau, shared]

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
    def click_main(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return gr.skip()
        return ap.clicked_query(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])

    @safe
    def click_grid(key: PhotoKey | None, evt: gr.SelectData):
        if key is None:
            return gr.skip(), gr.skip(), gr.skip()
        lay, hd = ap.grid_cell_at(ctx.wb.model(key.model_id).geometry, evt.index[0], evt.index[1])
        return lay, hd, ap.ONE_HEAD

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
    for c in (layer, head, show, mode, direction, discard, alpha, cmap, tau, shared):
        c.input(redraw, ins, view_outs, show_progress="hidden")
    main_img.select(click_main, [ctx.key], query).then(redraw, ins, view_outs, show_progress="hidden")
    to_cls.click(lambda: None, None, query).then(redraw, ins, view_outs, show_progress="hidden")
    grid.select(click_grid, [ctx.key], [layer, head, show]).then(redraw, ins, view_outs, show_progress="hidden")
    pick.input(pick_head, [pick], [layer, head, show]).then(redraw, ins, view_outs, show_progress="hidden")
    rel_btn.click(relevance, [ctx.key, cls, *controls], [rel_img, rel_text])


# ---------------------------------------------------------------- Positions tab
def positions_tab(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown("*(being built: issue 5)*")


# ---------------------------------------------------------------- Experiments tab
def experiments_tab(ctx: Ctx, tab: gr.Tab) -> None:
    gr.Markdown("*(being built: issue 6)*")


# ---------------------------------------------------------------- the page
def build_demo(wb: Workbench, default_model: str = DEFAULT_MODEL, notice: str = "",
               extra_models: tuple[str, ...] = ()) -> gr.Blocks:
    """The whole page. `wb` must already hold (or be able to load) `default_model`."""
    choices = list(dict.fromkeys([*extra_models, default_model, *CURATED_MODELS]))
    with gr.Blocks(title="vizvit: watch a Vision Transformer read your photo") as demo:
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
                model = gr.Dropdown(choices, value=default_model, label="Model", elem_id="model")
                status = gr.Markdown(elem_id="status")
            with gr.Column(scale=3):
                gr.Examples(EXAMPLES, inputs=[upload], label="Examples (CC0 / public domain)")
        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Patches", id="patches") as t_patches:
                patches_tab(ctx)
            with gr.Tab("Embeddings", id="embeddings") as t_embeddings:
                embeddings_tab(ctx, t_embeddings)
            with gr.Tab("Attention", id="attention") as t_attention:
                attention_tab(ctx, t_attention)
            with gr.Tab("Positions", id="positions") as t_positions:
                positions_tab(ctx, t_positions)
            with gr.Tab("Experiments", id="experiments") as t_experiments:
                experiments_tab(ctx, t_experiments)
        for t in (t_patches, t_embeddings, t_attention, t_positions, t_experiments):
            t.select(functools.partial(lambda tid: tid, t.id), None, tab, queue=False)

        @safe
        def new_photo(path: str | None, model_id: str):
            if path is None:
                return gr.skip(), gr.skip()
            sha1 = wb.add_photo(path)
            k = PhotoKey(model_id, sha1)
            a = wb.analysis(k)
            return k, panels.status_line(wb.model(model_id), a)

        @safe
        def new_model(model_id: str, k: PhotoKey | None):
            wb.model(model_id)  # load (or fail with a message) before anything else
            if k is None:
                return gr.skip(), panels.model_line(wb.model(model_id))
            k = PhotoKey(model_id, k.sha1)
            return k, panels.status_line(wb.model(model_id), wb.analysis(k))

        upload.change(new_photo, [upload, model], [key, status], api_name="upload")
        model.change(new_model, [model, key], [key, status], api_name="model")
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
    parser.add_argument("--cache-mb", type=int, default=int(os.environ.get("VIZVIT_CACHE_MB", 1024)))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    wb = Workbench(cache_bytes=args.cache_mb << 20, device=args.device)
    model_id, notice = start_model(wb, args.model)
    extra = (args.model,) if args.model not in CURATED_MODELS and model_id == args.model else ()
    demo = configure_queue(build_demo(wb, model_id, notice, extra_models=extra))
    demo.launch(server_name=args.host, server_port=args.port, share=args.share, **launch_kwargs())


if __name__ == "__main__":
    main()
