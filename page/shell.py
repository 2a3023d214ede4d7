"""The whole page: the header (photo, model, zero-shot labels), the tabs in vizvit.vocab.TABS'
order (each built by page/tabs/<id>.py), the methods, projector mode and deep links."""

from __future__ import annotations

import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

import gradio_patch
from vizvit import deeplink, views
from vizvit.classroom.room import Rooms
from vizvit.deeplink import DeepLink
from vizvit.errors import UserError
from vizvit.launch import Start
from vizvit.model.ablation import format_heads
from vizvit.model.catalog import SIZES_INFO, Catalog
from vizvit.model.images import image_sha1, load_image
from vizvit.model.models import DEFAULT_MODEL, Geometry
from vizvit.model.zeroshot import DEFAULT_LABELS, DEFAULT_TEMPLATE
from vizvit.readings.lesson import steps as lesson_steps
from vizvit.session import PhotoKey, Workbench
from vizvit.views import common as panels, compare as compare_view, header, patches

from . import (
    core_chunk,
    events,
    file_walk,
    follow_up,
    hot_routes,
    ids,
    jobs,
    kit,
    lean_config,
    pending_ids,
    queue_share,
    queue_wake,
    room,
    sessions,
    web,
)
from .endpoints import PUBLIC_ENDPOINTS, private_except, public_api
from .guard import Guard
from .kit import Ctx, charts_download
from .tabs import PAGES, TABS, camera as camera_tab

HERE = Path(__file__).resolve().parent.parent
METHODS_TEXT = (HERE / "docs" / "methods.md").read_text(encoding="utf-8")
METHODS_LINK = ("How each map here is computed, from which paper, and how other code differs: "
                "[Methods and sources](#methods) (bottom of the page).")
SKIP_TEXT = "Skip to main content"  # the skip link's words (WCAG 2.4.1)
EXAMPLES = sorted(str(p) for p in (HERE / "assets" / "examples").glob("*.jpg"))
# What the page says it takes, and only that: Gradio's own refusal of another file ("Only .jpg, ...
# allowed") lists these, and listed HEIC/AVIF/SVG read as allowed (issue 51). An API caller's HEIC
# still reaches images.load_image, which says why it is refused.
UPLOAD_TYPES = [".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff"]
SESSION_TTL_S = 3600
# A new photo's analysis runs on this pool while its upload event says every QUEUE_POLL_S where
# the photo is in the model's queue (the threads only wait: the forward worker computes).
QUEUE_POLL_S = 0.5
background = ThreadPoolExecutor(max_workers=64, thread_name_prefix="vizvit-upload")
# System fonts only: the default theme fetches web fonts, which stalls the page offline
# (a lecture hall without internet) and in tests.
# Contrast (WCAG AA, 4.5:1 for text; issue 51, tests/page/test_a11y.py): the default's subdued text
# (info lines, slider limits, the footer's links) was neutral-400 on white, 1.9:1; neutral-600 is 7.7:1.
# White on the default orange-500 button was 2.8:1; on orange-700, 5.2:1.
THEME = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                          font_mono=["ui-monospace", "monospace"]).set(
    body_text_color_subdued="*neutral_600",
    button_primary_background_fill="*primary_700", button_primary_background_fill_hover="*primary_800",
    button_primary_background_fill_dark="*primary_700", button_primary_background_fill_hover_dark="*primary_800")

gradio_patch.install()  # atomic writes of cached output images (see gradio_patch.py)
queue_wake.install()  # Gradio's queue sleeps until it has work, instead of polling every 1 ms
pending_ids.install()  # the ids of answers nobody will read forgotten (a REST call never read left one for good)
sessions.install()  # a page's load event joining the queue is told to Pages (refuse_lost_sessions)
queue_share.install()  # no one address fills Gradio's queue for everyone (checked before the line above)
file_walk.install()  # no walk for files through an event's values that cannot hold one
hot_routes.install()  # the routes every call takes tried first, their login check inline


@functools.cache
def _examples_by_sha1() -> dict[str, str]:
    """Each example's photo hash -> its path: decoded once, on the first link copied (not when the page is built)."""
    return {image_sha1(load_image(p)): p for p in EXAMPLES}


def example_of(sha1: str) -> str | None:
    """The example this photo is, if it is one (a link names it)."""
    return _examples_by_sha1().get(sha1)


@dataclass(frozen=True)
class Server:
    """What the page's header handlers read besides their events' values: the backend and how it started."""

    wb: Workbench
    catalog: Catalog  # the page's model list, the Workbench's gate
    default_model: str  # the model the page opens with (its public name)
    offline: bool = False
    failed: tuple[str | None, str] = (None, "")  # the start model default_model stands in for, and why it failed
    tab_ids: tuple[str, ...] = ()  # the page's tabs, in order
    # The open tab's preview of a new photo: (open tab, key, preview values) -> {component: value} (Ctx.preview).
    preview: Callable[[str, PhotoKey, tuple], dict] = lambda current, key, values: {}


PHOTO_OUTS = ["key", "status", "upload", "shown_file"]  # new_photo's own outputs (the tabs' previews follow)


# -- handlers: explicit values in, {name: value} out (the names build_demo's `ui` gives the components) --
def new_labels(s: Server, k: PhotoKey | None, model_id: str, labels_text: str, template: str) -> dict:
    """New zero-shot labels or template (Enter): the rule under them, and a new key for the photo shown."""
    c = header.new_labels(s.wb, k, model_id, labels_text, template)
    return {"zs_rule": c.rule} if c.key is None else {"key": c.key, "zs_rule": c.rule, "status": c.status}


def zero_shot_visible(vm_or_flag: Any) -> dict:
    """The labels box and ctx.zero_shot_only: shown for CLIP / SigLIP, hidden for a plain ViT
    (by the page's CSS, from zs_on: see kit.ZERO_SHOT_ONLY)."""
    on = vm_or_flag if isinstance(vm_or_flag, bool) else vm_or_flag.is_zero_shot
    return {"zs_on": "on" if on else "off"}


def loading(s: Server, model_id: str) -> str:
    """The status line at once, before a chosen model loads (a model off the list: refused here)."""
    s.catalog.check(model_id)
    return s.catalog.loading_text(model_id)


def new_model(s: Server, model_id: str, k: PhotoKey | None, labels_text: str = "",
              template: str = DEFAULT_TEMPLATE) -> dict:
    c = header.new_model(s.wb, s.catalog.check(model_id), k, labels_text, template, s.default_model, s.offline)
    if not c.loaded:
        # New choices, not just the old value: Gradio drops an update equal to the value
        # it last sent, which left the failed name in the box on a second try.
        return {"status": c.status, "model": gr.Dropdown(choices=s.catalog.choices(), value=c.model)}
    return {**({"key": c.key} if c.key is not None else {}), "status": c.status,
            "banner": gr.Markdown(c.banner, visible=bool(c.banner)), "zs_rule": c.rule,
            **zero_shot_visible(c.zero_shot)}


def _shown_file(k: PhotoKey | None, shown_path: str | None) -> str | None:
    """The file the upload box goes back to: the photo the tabs still show (none where Gradio's
    cache cleaning removed that file since: the box is then emptied)."""
    return shown_path if k is not None and shown_path and Path(shown_path).is_file() else None


def new_photo(s: Server, path: str | None, model_id: str, k: PhotoKey | None, heads: str, ablate_mode: str,
              labels_text: str = "", template: str = DEFAULT_TEMPLATE, shown_path: str | None = None,
              current: str = "patches", *preview_values: Any):
    """A generator: its first message carries the new key (and the open tab's preview), so
    the key's event starts at once and finds this forward already running (the cache runs
    it once for both); its last one, the status line with the forward's result."""
    wb = s.wb
    if path is None:  # cleared by the user (see upload.clear) or by a refused file below
        yield kit.skip(PHOTO_OUTS)
        return
    try:
        sha1 = wb.add_photo(path)
    except UserError as e:
        # A toast, the same words kept in the status line, and the refused file's name
        # out of the box: it must not look as if that file were shown.
        gr.Warning(str(e))
        # The box names the photo the tabs still show (its change finds that photo shown: below).
        yield {"status": panels.upload_refused(str(e), had_photo=k is not None), "upload": _shown_file(k, shown_path)}
        return
    new = header.photo_key(wb, model_id, sha1, heads, ablate_mode, labels_text, template)
    if new == k and path == shown_path:  # the file the tabs show, put back after a refused one
        yield kit.skip(PHOTO_OUTS)
        return
    vm = wb.model(model_id)
    yield {"key": new, "status": panels.running_line(vm), "shown_file": path,
           **s.preview(current, new, preview_values)}
    answer, photo, shown = background.submit(wb.analysis, new), wb.photo(sha1), 0
    while True:  # where this photo is in the model's queue, until its forward is done
        try:
            a = answer.result(timeout=QUEUE_POLL_S)
            break
        except TimeoutError:
            ahead = wb.forwards.ahead(photo) or 0
            if ahead != shown:
                shown = ahead
                yield {"status": panels.running_line(vm, ahead, wb.forwards.stats().image_s)}
        except Exception:
            # the tabs and the box: back to the photo shown
            yield {"key": k, "shown_file": shown_path, "upload": _shown_file(k, shown_path)}
            raise
    yield {"status": panels.status_line(vm, a, photo.size) + panels.frames_note(photo)}


def link_controls(k: DeepLink, g: Geometry, show: str | None) -> dict[str, Any]:
    """The view controls a link sets, by deeplink.VIEW_CONTROLS' names (gr.skip(): left as they are).
    show: the plan's fusion or one head, where the link names one. On the Compare tab layer= and head= may
    be model B's (deeper, more heads): the Attention tab's sliders take them clamped to model A's."""
    return dict(layer=gr.Slider(maximum=g.num_layers, value=min(k.layer or g.num_layers, g.num_layers)),
                head=gr.Slider(maximum=g.num_heads, value=min(k.head, g.num_heads) if isinstance(k.head, int) else 1),
                show=show or gr.skip(), query=k.query if k.query else gr.skip(),
                direction=k.direction or gr.skip(), mode=k.mode or gr.skip(), dx=k.dx, dy=k.dy,
                fill=k.fill or gr.skip(), mask=k.mask, mask_mode=k.mask_mode or gr.skip(),
                ablate=format_heads(k.ablate), ablate_mode=k.ablate_mode or "zero",
                compare=k.compare or gr.skip(),
                depth=gr.Slider(maximum=g.num_layers, value=k.depth) if k.depth is not None else gr.skip())


def compare_cursor(k: DeepLink, g: Geometry, b: Geometry | None) -> dict[str, Any]:
    """The Compare tab's depth cursor and head, where a link opens that tab and names them (layer=, head=).
    b: model B's geometry: the head list runs over the pair's larger head count until the tab's open sets it."""
    if k.tab != deeplink.COMPARE_TAB:
        return dict(cmp_depth=gr.skip(), cmp_head=gr.skip())
    heads = compare_view.head_list(max(g.num_heads, b.num_heads if b is not None else 0))
    head = str(k.head) if k.head is not None else None
    return dict(cmp_depth=k.layer or gr.skip(), cmp_head=gr.Dropdown(choices=heads, value=head) if head else gr.skip())


def _geometry_b(s: Server, model_b: str | None) -> Geometry | None:
    """Model B's geometry (the Compare tab's), or None: none named, or it cannot be loaded here."""
    if not model_b:
        return None
    try:
        return s.wb.model(model_b).geometry
    except ValueError:
        return None


def open_link(s: Server, request: gr.Request) -> dict:
    """The page opened: what its link (?example=...&tab=...) asks for, with a notice for what it could not."""
    wb = s.wb
    p = deeplink.plan(dict(request.query_params), EXAMPLES, s.catalog.ids, list(s.tab_ids), s.default_model,
                      lambda m: wb.model(m).geometry, compare_models=[*s.catalog.ids, *s.catalog.twins()],
                      n_steps=len(lesson_steps()))
    k = p.link
    vm = wb.model(p.model)
    b = panels.banner(vm, s.offline, *(s.failed if p.model == s.default_model else (None, "")))
    shared: dict = {}  # the key and status line of a link's uploaded photo
    notices = p.notice_text
    if k.photo and not k.example:  # a lecturer's uploaded photo, by its key: the server must still hold it
        try:
            shared_key = header.photo_key(wb, p.model, k.photo, format_heads(k.ablate), k.ablate_mode or "zero",
                                          "", DEFAULT_TEMPLATE)
            shared = {"key": shared_key, "status": header.status_of(wb, shared_key)}  # with its file's notes
        except UserError:
            notices = (notices + "\n" if notices else "") + ("- The photo of this link is no longer on the "
                                                            "server: upload it again or pick an example.")
    # Choices too: this visitor sees the list as it is now, without models that failed for others.
    # The example goes in the upload box by a second step (_wire: .then), once the model box holds the
    # link's model: set in this same answer, the upload's change read the box's old value (seen:
    # ?model=random:... drew the start model's top-5 under the random model's name and banner).
    # A link's example is read by the upload that follows this answer: until then the line says so.
    reading = {"status": panels.reading_example(Path(k.example).name)} if k.example and not shared else {}
    return {**shared, **reading, "link_example": k.example,
            "model": gr.Dropdown(choices=s.catalog.choices(), value=p.model),
            "banner": gr.Markdown(b, visible=bool(b)), "link_tab": k.tab or gr.skip(), "tab": k.tab or gr.skip(),
            "notice_md": gr.Markdown("**About this link:**\n" + notices, visible=True) if notices else gr.skip(),
            **link_controls(k, vm.geometry, p.show), "projector": k.projector, **zero_shot_visible(vm),
            **compare_cursor(k, vm.geometry, _geometry_b(s, k.compare) if k.tab == deeplink.COMPARE_TAB else None)}


def copy_link(s: Server, request: gr.Request, key_: PhotoKey | None, model_id: str, tab_id: str, proj: bool,
              cmp_depth: float, cmp_head: str | None, *parts: Any) -> str:
    """"Copy link to this view": the page's address with the view's controls (parts: in VIEW_CONTROLS order)."""
    c = dict(zip(deeplink.VIEW_CONTROLS, parts))
    # On the Compare tab its cursor is the link's layer and head, over both models' ranges.
    b = _geometry_b(s, c["compare"]) if tab_id == deeplink.COMPARE_TAB else None
    # The ablation is the photo key's (the heads the forward ran without), not the boxes' text.
    view = {n: v for n, v in c.items() if n not in ("ablate", "ablate_mode")}
    # An example by its name; an upload (or a frozen camera frame) by its key, which ?photo= reopens.
    link = deeplink.of_view(example=example_of(key_.sha1) if key_ else None, photo=key_.sha1 if key_ else None,
                            model=model_id, tab=tab_id, projector=proj, ablation=key_.ablation if key_ else None,
                            cursor=(cmp_depth, cmp_head), **view)
    page = (request.headers.get("referer") or str(request.url)).split("?")[0]
    return page + deeplink.to_query(deeplink.fit(link, s.wb.model(model_id).geometry, b)[0])


# -- the page: components, then wiring ------------------------------------------------------------------
def _header(wb: Workbench, catalog: Catalog, default_model: str, start_banner: str) -> dict:
    """The header: the skip link, the banner, the upload, the model and the zero-shot labels, the examples."""
    # WCAG 2.4.1: the first Tab stop, seen once focused (style.css); a11y.js (part 8) puts the focus in the open tab.
    gr.HTML(f'<a class="vv-skip" href="#{ids.TABS}">{SKIP_TEXT}</a>', elem_id=ids.SKIP, container=False, padding=False,
            js_on_load=None)  # no click event of its own (Gradio's default js_on_load)
    gr.Markdown(panels.HEADER_TEXT, elem_id="header")
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
            # Shown by CSS while the page's model is an image-text one (see kit.ZERO_SHOT_ONLY).
            with gr.Group(elem_id="zs-box", elem_classes=[kit.ZERO_SHOT_ONLY]):
                zs_labels = gr.Textbox(", ".join(DEFAULT_LABELS), label="Zero-shot labels, comma-separated "
                                       "(CLIP / SigLIP; Enter to apply)", elem_id="zs-labels", lines=1)
                zs_template = gr.Textbox(DEFAULT_TEMPLATE, label="Prompt template ({} = the label)",
                                         elem_id="zs-template", lines=1)
                zs_rule = gr.Markdown(patches.label_rule_text(wb.model(default_model)), elem_id="zs-rule")
        with gr.Column(scale=3):
            gr.Examples(EXAMPLES, inputs=[upload], label="Examples (CC0 / public domain)")
    return dict(banner=banner, notice_md=notice_md, upload=upload, model=model, status=status, zs_labels=zs_labels,
                zs_template=zs_template, zs_rule=zs_rule)


def _tabs(ctx: Ctx) -> list[gr.Tab]:
    """Every tab, in vizvit.vocab.TABS' order; a new key computes only the open one's views."""
    all_tabs = []
    # wrap: on a phone every tab stays one tap away (the default hides some behind a "⋯" menu).
    with gr.Tabs(elem_id="tabs", overflow_behavior="wrap"):
        for tab_id, label in TABS.items():
            with gr.Tab(label, id=tab_id) as t:
                PAGES[tab_id].build(ctx, t)
                gr.Markdown(METHODS_LINK)
                charts_download(t)
            all_tabs.append(t)
    ahead = ctx.show_visible()
    cancel_ahead = [ahead] if ahead is not None else None  # its answer is for a page left since
    if ahead is not None:
        ctx.key.change(None, None, None, cancels=cancel_ahead, queue=False)
    for t in all_tabs:
        t.select(functools.partial(lambda tid: tid, t.id), None, ctx.tab, queue=False, cancels=cancel_ahead)
    return all_tabs


def _footer() -> dict:
    """The methods and sources, projector mode and "Copy link to this view"."""
    with gr.Accordion("Methods and sources: every computation, its paper, and how other code differs",
                      open=False, elem_id="methods") as methods:
        methods_text = gr.Markdown(elem_id="methods-text")
    # The text (docs/methods.md, ~53 KB) comes when the panel opens, not in the page's config: the
    # page loads without it (issue 52). Sent again at each opening: the same text changes nothing.
    methods.expand(lambda: METHODS_TEXT, None, methods_text, queue=False, show_progress="hidden")
    with gr.Row():
        projector = gr.Checkbox(False, label="Projector mode (large text, high contrast)", elem_id="projector")
        link_btn = gr.Button("Copy link to this view", size="sm", elem_id="copy-link")
        link_box = gr.Textbox(label="Link to this view", buttons=["copy"], interactive=False,
                              elem_id="link-box", scale=3)
    projector.change(None, projector, None, js=web.projector_checkbox_js())
    return dict(projector=projector, link_btn=link_btn, link_box=link_box)


def build_demo(wb: Workbench, default_model: str = DEFAULT_MODEL, catalog: Catalog | None = None,
               offline: bool = False, start: Start | None = None, rooms: Rooms | None = None) -> gr.Blocks:
    """The whole page. `wb` must already hold (or be able to load) `default_model`. The catalog
    (the page's model list) becomes the Workbench's gate: no request loads a model off the list.
    start: how the server's model was had (vizvit.launch.start): a stand-in's banner names the
    model that failed, and why. rooms: the live rooms over the server's store (app.py: --rooms-db,
    --redis-url); None: rooms in memory, for this page only (tests)."""
    catalog = catalog or Catalog(default_model)
    wb.catalog = catalog
    views.attach(wb)  # the tabs' preparation: at warm-up and after each photo's forward
    default_model = catalog.public(default_model)  # a local directory: its short name, never the path
    # delete_cache: uploads and rendered outputs older than an hour are removed every
    # 10 minutes, so a public server's disk does not fill up.
    with gr.Blocks(title="vizvit: watch a Vision Transformer read your photo",
                   delete_cache=(600, 3600)) as demo:
        before = len(demo.children)
        rooms = rooms if rooms is not None else Rooms()  # the API and the students' route share them
        guard = Guard(rooms)  # issue 50: the room's routes and API endpoints count one caller's tries together
        public_api(wb, default_model, rooms, guard)  # first, so page events named alike (sweep) cannot take its names
        # gr.api makes a placeholder component per argument and result (35 of the page's 301): they
        # draw nothing, yet the page's script built each one at load, like any component. They stay
        # registered in the Blocks (the API's schema and calls read them), out of the page's layout,
        # and invisible: the page waits for every visible component to mount before it is ready.
        gradio_patch.unlaid(demo, demo.children[before:])
        wb.forwards.caller = jobs.current_caller  # the model takes callers (addresses) in turns
        ui: dict[str, Any] = dict(key=gr.State(None, time_to_live=SESSION_TTL_S), tab=gr.State("patches"))
        # What a deep link or a model change asks of the page's containers (the tab to open, the
        # zero-shot boxes shown), as hidden leaves whose change runs page JS (see
        # events.NO_CONTAINER_OUTPUTS). Not gr.State: page JS cannot read a State's value.
        ui["link_tab"] = gr.Textbox("", visible=False, elem_id="link-tab")
        ui["zs_on"] = gr.Textbox("", visible=False, elem_id="zs-on")  # "on" / "off"
        # The model asked for at start, when default_model stands in for it: (its name, why it failed).
        failed = (start.failed, start.reason) if start is not None and start.model == default_model else (None, "")
        ui.update(_header(wb, catalog, default_model, panels.banner(wb.model(default_model), offline, *failed)))
        ctx = Ctx(wb=wb, key=ui["key"], tab=ui["tab"], status=ui["status"], default_model=default_model,
                  example_of=example_of, header=dict(model=ui["model"], labels=ui["zs_labels"],
                                                     template=ui["zs_template"], upload=ui["upload"]), rooms=rooms,
                  room_opening=guard.open)
        all_tabs = _tabs(ctx)
        ui.update(_footer())
        server = Server(wb, catalog, default_model, offline, failed, tuple(t.id for t in all_tabs), ctx.preview)
        _wire(demo, ctx, ui, server)
    # The live camera on a page of its own (page/tabs/camera.py says why); no navigation bar: the
    # Camera tab opens it and Freeze comes back.
    with demo.route("Live camera", camera_tab.PATH, show_in_navbar=False):
        routes = camera_tab.live_page(demo, wb, default_model)
    # Plain HTTP routes beside Gradio's (the camera's frames): app.launch_kwargs(demo) hands them
    # to the app Gradio builds at launch.
    # The room's: where the server listens and its --share link are known once launched.
    room_routes = room.room_routes(rooms, wb, lambda: (getattr(demo, "server_name", None),
                                                       getattr(demo, "share_url", None)))
    # And Gradio's core chunk, patched: a cheaper page load (page/core_chunk.py).
    demo.vizvit_routes = [*routes, *ctx.routes, *guard.routes(room_routes),  # type: ignore[attr-defined]
                          *core_chunk.routes()]
    events.check_no_container_outputs(demo)
    events.few_progress_targets(demo)  # every event registered by now, the camera page's too
    follow_up.guard(demo, ctx.follow_ups, ctx.unguarded)  # a tab's follow-up never lands over a newer answer
    # A session from a replica that died: "reload the page".
    sessions.refuse_lost_sessions(demo, ui["key"], fresh=(ui["upload"],))
    private_except(demo, PUBLIC_ENDPOINTS)  # last: every event above is registered by now
    lean_config.install(demo)  # its config without the API schemas no caller reads (page/lean_config.py)
    return demo


def _wire(demo: gr.Blocks, ctx: Ctx, ui: dict, server: Server) -> None:
    """The header's and the footer's events: labels, a new photo, a new model, deep links."""
    key, status, upload, model = ui["key"], ui["status"], ui["upload"], ui["model"]
    relabel = kit.answer(new_labels, ui, server)
    for box in (ui["zs_labels"], ui["zs_template"]):
        box.submit(relabel, [key, model, ui["zs_labels"], ui["zs_template"]], [key, ui["zs_rule"], status])
    preview_ins, preview_outs = ctx.preview_io()
    L = ctx.links
    if tuple(sorted(L)) != tuple(sorted(deeplink.VIEW_CONTROLS)):
        raise ValueError(f"the tabs register link controls {sorted(L)}, not deeplink.VIEW_CONTROLS")
    ui.update(L)  # the view controls by their deep-link names (open_link sets them)
    link_parts = [L[n] for n in deeplink.VIEW_CONTROLS]
    # The Compare tab's cursor is its layer and head: a link's layer= and head= set them there, and a
    # copied link reads them.
    ui["cmp_depth"], ui["cmp_head"] = ctx.controls["compare"]["depth"], ctx.controls["compare"]["head"]
    ui["shown_file"] = gr.State(None)  # the file the tabs show: a refused file leaves it in the box
    ui["link_example"] = gr.State(None)  # the example a link names: put in the upload box after the model
    photo_outs = [ui[n] for n in PHOTO_OUTS] + preview_outs
    upload.change(kit.answer(new_photo, ui, server), [upload, model, key, L["ablate"], L["ablate_mode"],
                                                      ui["zs_labels"], ui["zs_template"], ui["shown_file"], ui["tab"],
                                                      *preview_ins],
                  photo_outs, api_name="upload", show_progress="minimal",
                  cancels=ctx.long_work).failure(
        lambda k: panels.upload_status(had_photo=k is not None, failed=True), key, status)
    upload.clear(lambda k: panels.upload_status(had_photo=k is not None, failed=False), key, status,
                 queue=False)
    # Feedback at once (no queue), then the load, which may take a download's time.
    model.input(kit.answer(loading, ui, server), model, status, queue=False).success(
        kit.answer(new_model, ui, server), [model, key, ui["zs_labels"], ui["zs_template"]],
        [key, status, model, ui["banner"], ui["zs_rule"], ui["zs_on"]],
        api_name="model")
    # hidden: a first visit saw grey loading blocks over the header while the link was read
    demo.load(kit.answer(open_link, ui, server), None,
              [ui["link_example"], model, ui["banner"], ui["link_tab"], ui["tab"], ui["notice_md"], *link_parts,
               ui["projector"], ui["zs_on"], key, status, ui["cmp_depth"], ui["cmp_head"]],
              show_progress="hidden").then(
        lambda example: example or gr.skip(), ui["link_example"], upload, queue=False, show_progress="hidden").then(
        None, None, None, js=web.asset("link_read.js"))
    # A Run clicked while the first photo is read waits for its key (web/run_waits.js), not "Upload a photo first."
    demo.load(None, None, None, js=web.run_waits())
    key.change(None, None, None, js=web.asset("photo_in.js"))
    # JS only (no round trip): a click on the tab's button opens it as a person would.
    ui["link_tab"].change(None, ui["link_tab"], None, js=web.asset("select_tab.js"))
    ui["zs_on"].change(None, ui["zs_on"], None, js=web.asset("zero_shot_on.js"))
    for fn in ctx.unloads:
        demo.unload(fn)
    demo.unload(jobs.JOBS.left)  # a closed page's costly jobs stop
    demo.load(None, None, None, js=web.asset("upload_replace.js"))  # drop, paste or choose: one step
    ui["link_btn"].click(kit.answer(copy_link, ui, server),
                         [key, model, ui["tab"], ui["projector"], ui["cmp_depth"], ui["cmp_head"], *link_parts],
                         ui["link_box"]).then(
        None, ui["link_box"], None, js=web.asset("copy_link.js"))
