"""The Camera tab: the webcam's frames through the model, live. One composed picture per frame:
the model-input view with its patch grid, beside the Attention tab's main map of the chosen layer
and head (raw or rolled out: the same drawing, colour map and colour range, artifact tokens
outlined and left out of the range), and below them the top-5 (the typed labels for CLIP /
SigLIP), the pictures per second and the model's forward time.

No gradio here: page/tabs/camera.py wires it. Frames come in as (H, W, 3) uint8 arrays; they go
through the forward worker's camera lane (forwards.py: after every waiting upload) and are never
cached: nothing of a frame is kept but the feed's last frame (camera.py), for Freeze.
"""

from __future__ import annotations

import base64
import html
import json
import threading
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

import cv2
import numpy as np
import torch
from PIL import Image

from vizvit.errors import UserError
from vizvit.methods import maths as att_mod
from vizvit.model.ablation import format_heads
from vizvit.model.catalog import CURATED, MEASURED, arch_of
from vizvit.model.engine import Analysis, Request, with_zero_shot
from vizvit.model.images import load_image, model_input_view
from vizvit.model.models import VitModel, short_name
from vizvit.pictures import figures, render
from vizvit.readings import attention as ra
from vizvit.service.camera import CONCURRENT_STREAMS, IDLE_S, RECENT, TIME_LIMIT_S, Feed, Feeds, Frame
from vizvit.session import Photo, PhotoKey, Workbench
from vizvit.views import books
from vizvit.views.layout import UNIFORM_MARK, map_image
from vizvit.vocab import FUSIONS, MODE_URL, MODES, ONE_HEAD, Mode

SCALE = 2  # the live picture's enlargement of the model-input view (the Attention tab's is 3: fewer bytes a frame)
GAP = 8  # white px between the parts
TEXT_PX = render.TEXT_PX
ROW = 38  # px per text row of the band under the pictures
BAND_ROWS = 5  # the top-5 on the left, the speed on the right
JPEG_QUALITY = 80  # the tab's picture of a photo (show)
VIEW_QUALITY = 90  # the model-input view in a live book: ~15 kB a frame
PROB_COLOR = (198, 219, 239)  # a top-5 row's probability bar
# Below this many pictures a second a camera view stops looking live: the panel says the model
# is too slow, with its measured forward time, and on a CPU names the fastest model of the list.
LIVE_FPS = 4.0
# The page's loop (web/camera_live.js) sends frames as the server can read them (IN_FLIGHT
# below), so a frame never waits long for the model to finish an older one, and the browser
# captures no frame the server would drop. Gradio's webcam stream sent a
# frame every 66 ms whatever the server did: a frame waited ~half a step for the model, and the
# browser's extra captures slowed the forward (it shares this machine's two cores): 7.1 pictures/s
# at 222 ms from capture to paint (3.4 bare forwards) on the trained ViT-Ti (benchmarks/camera.py).
MIN_INTERVAL_S = 1 / 30  # no faster than a webcam's frames (a GPU answers in ~10 ms)
# Frames on their way at once from one page. With one, the server stood idle while the answer
# travelled back, was drawn and painted and the next frame was captured and sent (~25 ms of a ~100 ms
# cycle on the trained ViT-Ti here). With two, the page sends the next frame while the server runs
# the last one's forward, timed by the server's own account (LiveStep.timing: how long a frame
# waited for the forward before it, or how long the server stood idle before it came) to arrive as
# that forward ends: the server reads one frame after another and a frame waits little. Never more:
# a third would only wait, or be dropped (Feed.step keeps one waiting frame).
# But a frame sent ahead waits for the forward before it: its picture comes about a forward later
# (capture -> paint 3.0-3.3 bare forwards on the trained ViT-Ti here, against 2.0-2.1 with one). So
# the page sends one at a time while that still paints SMOOTH_FPS pictures a second, and two only
# once it would not and the server's own work on a frame would (web/camera_live.js measures the
# pictures a second it paints, and reads the server's account of its work; while two are on their
# way it tries one again now and then): on a fast forward the newest frame; where HTTP and drawing
# hold the pace back, the most pictures; where the forward itself does, one (a second frame would
# only wait for it).
IN_FLIGHT = 2
# Pictures a second that look smooth (issue 52's goal for the trained ViT-Ti); None: IN_FLIGHT always.
SMOOTH_FPS: float | None = 15.0
# The live top-1 is said to a screen reader (a polite live region: web/camera_live.js) when its class changes,
# at most once in this many seconds: a top-1 that flickers between two classes at every frame is not a flood.
SAY_TOP1_S = 3.0
RETRY_ONE_S = 3.0  # while two are on their way, one is tried again after this, then twice that, up to 10x
# What the page asks the camera for: the model reads 224 px (384 at most), so a small frame is
# enough, and the page's capture and its upload cost less.
CONSTRAINTS = {"video": {"width": {"ideal": 320}, "height": {"ideal": 240}}}
FRAME_QUALITY = 0.8  # the page's JPEG of a frame
MAX_FRAME_BYTES = 4 << 20  # a frame's JPEG; bigger is refused unread
MAX_FRAME_PIXELS = 1920 * 1080  # a webcam's HD frame; checked on the header, before decoding
# Frames decoded at once, for every camera together (the page sends one at a time; a client that
# sends many at once gets "busy" for the rest, instead of holding a thread and ~6 MB each).
DECODES = threading.BoundedSemaphore(2 * CONCURRENT_STREAMS)
FRAME_PATH = "vizvit/camera/frame"  # the frames' route, beside the page (POST, a JPEG in, a JPEG out)

# On the tab, before INTRO: why the camera opens a page of its own.
TAB_LEAD = ("**The live camera runs on a page of its own**: a light page keeps up with the camera, and this one "
            "has every tab's controls. The button opens it with this tab's model, heads and map. ")
INTRO = ("**Live camera.** Press **Start** (your browser asks for the camera) and hold something up to "
         "it: every frame goes through the model, and the picture shows what the model sees (its patch grid), the "
         "Attention tab's map over it and the top-5. When the model is busy, a newer frame replaces the waiting one: "
         "a slow model shows fewer pictures, never older ones. **Freeze** keeps the frame you see as a photo and "
         "opens it in every tab here (as an upload would). A camera run lasts at most {limit} s (press Start "
         "again), and {streams} visitors can stream at once; photos uploaded meanwhile reach the model first.")
PRIVACY = ("**Privacy:** frames are decoded in the server's memory and never written to disk (the picture comes "
           "back as the answer to its frame, never as a file). The server keeps only the frames of the last {recent} "
           "pictures, in memory, for Freeze, and forgets them when you close the page or after {idle} min without a "
           "frame. A frozen frame "
           "becomes a photo like an upload: kept in memory, and its link opens it while the server holds it.")


# ------------------------------------------------------------------ params
HEAD_CHOICES: tuple[str, ...] = tuple(f"{f} of heads" for f in FUSIONS)  # then "head 1", "head 2", ...


def head_choices(num_heads: int) -> list[str]:
    return [*HEAD_CHOICES, *(f"head {h}" for h in range(1, num_heads + 1))]


@dataclass(frozen=True)
class CameraParams:
    """Everything a control on the tab sets. layer is 1-based; 0 means the last layer."""

    layer: int = 0
    heads: str = HEAD_CHOICES[0]  # "mean of heads" ... or "head 3"
    mode: Mode = "rolled out"  # the fused rollout through the layer: the classic "where it looks"

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> CameraParams:
        return cls(layer=int(v["layer"] or 0), heads=str(v["heads"]), mode=v["mode"])

    @classmethod
    def from_link(cls, params: dict[str, str], g: Any) -> CameraParams:
        """The camera page's link (camera_query's parameters) -> params fitted to the model: a value
        that is not one of its choices falls back to the default."""
        layer = params.get("layer", "")
        heads = params.get("heads", "")
        whole = layer.isascii() and layer.isdigit() and len(layer) < 4  # not "²", not 5000 digits
        return cls(layer=min(int(layer), g.num_layers) if whole and int(layer) >= 1 else g.num_layers,
                   heads=heads if heads in head_choices(g.num_heads) else HEAD_CHOICES[0],
                   mode=next((m for m in MODES if m == params.get("mode")), "rolled out"))

    def attn(self, vm: VitModel) -> ra.AttnParams:
        """The Attention tab's params for this map (checked against the model: a layer or head
        past its end is the last one)."""
        g = vm.geometry
        if self.mode not in MODES:
            raise UserError("Mode must be raw or rolled out.")
        layer = g.num_layers if self.layer <= 0 else min(int(self.layer), g.num_layers)
        if self.heads in HEAD_CHOICES:
            show, head = self.heads.split(" ")[0], 1
        elif self.heads.startswith("head ") and self.heads[5:].isdigit():
            show, head = ONE_HEAD, min(max(1, int(self.heads[5:])), g.num_heads)
        else:
            raise UserError(f"Heads: one of {', '.join(HEAD_CHOICES)} or 'head N'.")
        return ra.AttnParams(layer=layer, head=head, show=show, mode=self.mode).checked(g)


# ------------------------------------------------------------------ the composed picture
@dataclass(frozen=True)
class Layout:
    """Where the parts of a live picture lie (px): the model-input view and the map, each
    side × side at the top, the band of text rows under them."""

    side: int  # the enlarged model-input view's height and width
    map_x: int  # the map's left edge
    width: int
    height: int


def layout(vm: VitModel) -> Layout:
    return _layout(vm.geometry)


@lru_cache(maxsize=16)
def _layout(g: Any) -> Layout:
    side = SCALE * g.image_size[0]
    bar = map_image(np.zeros((*g.image_size, 3), np.uint8), np.zeros(g.grid, np.float32), g,
                    ra.AttnParams(), lo_hi=(0, 1), marks={UNIFORM_MARK: 0.5}, scale=SCALE).shape[1]
    return Layout(side, side + GAP, side + GAP + bar, side + ROW + BAND_ROWS * ROW + GAP)


@lru_cache(maxsize=1024)  # a frame's texts repeat from frame to frame: ~2 ms of measuring a frame
def _fit(text: str, width: int) -> str:
    """text cut (with …) to `width` px at TEXT_PX."""
    if render.text_size(text, TEXT_PX)[0] <= width:
        return text
    while text and render.text_size(text + "...", TEXT_PX)[0] > width:
        text = text[:-1]
    return text + "..."


@dataclass(frozen=True)
class Parts:
    """A live picture besides its two pictures (the model-input view with its grid, at (0, 0), and
    the map, at (map_x, 0)): its texts and its probability bars, where compose and the page's
    drawing (camera_draw.js) both put them."""

    texts: list[tuple[str, int, int, int]]  # (text cut to fit, x, baseline y, the width it must fit)
    bars: list[tuple[int, int, int, int]]  # (x, y, width, height) of each probability bar, PROB_COLOR


def parts(lay: Layout, caption: str, caption_left: str, rows: list[tuple[str, float | None]],
          right: list[str]) -> Parts:
    """The captions under the two pictures, and the band under them: `rows` (text, probability
    0..1 or None) on the left, `right` on the right."""
    cap = render.text_size("0", TEXT_PX)[1]
    mid = lambda y: y + (ROW + cap) // 2  # noqa: E731 - a row's text baseline
    texts = [(caption_left, 4, mid(lay.side), lay.side - 8),
             (caption, lay.map_x + 4, mid(lay.side), lay.width - lay.map_x - 8)]
    half, top, bars = lay.width // 2, lay.side + ROW + GAP, []
    for i, (text, prob) in enumerate(rows):
        y = top + i * ROW
        if prob is not None:
            bars.append((4, y + 4, int(round((half - 16) * max(0.0, min(1.0, prob)))), ROW - 8))
        texts.append((text, 8, mid(y), half - 12))
    texts += [(text, half + 8, mid(top + i * ROW), lay.width - half - 12) for i, text in enumerate(right)]
    return Parts([(_fit(t, w), x, y, w) for t, x, y, w in texts], bars)


def caption(ap: ra.AttnParams, vm: VitModel) -> str:
    g = vm.geometry
    who = "head " + str(ap.head) if ap.show == ONE_HEAD else f"{ap.show} of {g.num_heads} heads"
    kind = "rollout" if ap.mode != "raw" else "attention"
    return f"{ap.who(g)} {kind}, layer {ap.layer}, {who}"


def top5_rows(vm: VitModel, a: Analysis) -> list[tuple[str, float | None]]:
    """The band's top-5 rows, written as every other tab's top-5 writes them (figures.percents, a label's first
    name): "{p * 100:5.1f}%" wrote chelsea's hare (0.015 %) "0.0%" where the Patches chart says "0.015%", and
    "tabby, tabby cat" in full where the other tabs say "tabby"."""
    if not a.top5:
        return [("no classifier: no top-5", None)]
    head: list[tuple[str, float | None]] = [] if vm.is_pretrained else [("UNTRAINED weights: meaningless", None)]
    shown = figures.percents([p.prob for p in a.top5])
    return head + [(f"{s}  {first_name(p.label)}", p.prob) for p, s in zip(a.top5, shown)][: 5 - len(head)]


def first_name(label: str) -> str:
    """A class's first name, as the other tabs write it ("tabby" for "tabby, tabby cat")."""
    return label.split(",")[0]


def top1_of(vm: VitModel, a: Analysis) -> tuple[str, str] | None:
    """A frame's top-1 for a screen reader: (its class, what is said), the page saying it again only once the
    class has changed (not at each percent); None without a classifier. Its percent is the picture's (top5_rows):
    "{:.0%}" said "81%" beside a drawn "80.6%"."""
    if not a.top5:
        return None
    p = a.top5[0]
    untrained = "" if vm.is_pretrained else " (untrained weights: meaningless)"
    shown = figures.percents([q.prob for q in a.top5])[0]
    return p.label, f"Top-1: {first_name(p.label)}, {shown}{untrained}"


def picture_parts(vm: VitModel, a: Analysis, ap: ra.AttnParams, lines: list[str]) -> Parts:
    g = vm.geometry
    return parts(layout(vm), caption(ap, vm), f"model input, {g.grid[0]}x{g.grid[1]} patches", top5_rows(vm, a), lines)


def compose(vm: VitModel, a: Analysis, ap: ra.AttnParams, lines: list[str]) -> np.ndarray:
    """(H, W, 3) uint8: the model-input view with the patch grid | the Attention tab's main map
    (same colours, range and artifact outlines, at SCALE) ; below, the top-5 and `lines`. The
    picture the page draws from live_book."""
    g = vm.geometry
    left = render.draw_grid(render.enlarge(a.input_view, SCALE), g, lines=True)
    mm = live_map(a, ap)
    right = map_image(a.input_view, mm.values, g, ap, lo_hi=mm.lo_hi, marks={UNIFORM_MARK: ra.uniform_level(g)},
                           artifacts=mm.artifacts, scale=SCALE)
    lay = layout(vm)
    img = np.full((lay.height, lay.width, 3), 255, np.uint8)
    img[:lay.side, :lay.side] = left
    img[:right.shape[0], lay.map_x:lay.map_x + right.shape[1]] = right
    pp = picture_parts(vm, a, ap, lines)
    for x, y, w, h in pp.bars:
        img[y:y + h, x:x + w] = PROB_COLOR
    for text, x, y, _ in pp.texts:
        render.put_text(img, text, (x, y), TEXT_PX)
    return img


def live_map(a: Analysis, ap: ra.AttnParams) -> ra.MainMap:
    """The Attention tab's main map for these params (main_panel's), a rolled-out one computed as its
    one row (a frame's analysis is never asked for another)."""
    return ra.main_map(a, ap.checked(a.geometry), one_row=True)


def live_book(vm: VitModel, a: Analysis, ap: ra.AttnParams, lines: list[str], frame: int,
              view_format: str = ".jpg") -> str:
    """compose's picture as the camera page draws it (camera_draw.js, with map_draw.js's map): one
    JSON string with the model-input view (view_format: JPEG, ~15 kB, or PNG for an exact copy),
    the map as its colour-table rows and range, the colour bar's labels, the artifact tokens, where
    the texts and probability bars go, and the map's drawing constants (books.page_drawing). The
    server draws nothing: the page has it on screen ~20 ms sooner than a decoded JPEG of the
    whole picture, and the server's step is shorter by the drawing."""
    g = vm.geometry
    lay = layout(vm)
    mm = live_map(a, ap)
    lo, hi = mm.lo_hi
    keep = att_mod.mass_threshold(torch.from_numpy(mm.values), ap.tau).numpy() if ap.tau > 0 else None
    ok, enc = cv2.imencode(view_format, cv2.cvtColor(a.input_view, cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, VIEW_QUALITY] if view_format == ".jpg" else [])
    if not ok:
        raise RuntimeError("encoding the model-input view failed")
    mime = "jpeg" if view_format == ".jpg" else view_format.strip(".")
    pp = picture_parts(vm, a, ap, lines)
    return json.dumps({
        **books.page_drawing(g, ap, SCALE),
        "frame": frame,
        "view": f"data:image/{mime};base64," + base64.b64encode(enc.tobytes()).decode("ascii"),
        "map": {"index": _b64(render.color_index(mm.values, lo, hi)), "lo": lo, "hi": hi,
                "keep": None if keep is None else _b64(keep.astype(np.uint8)),
                "bars": render.colorbar_labels(lay.side, lo, hi, marks={UNIFORM_MARK: ra.uniform_level(g)}),
                "art": np.flatnonzero(mm.artifacts).tolist()},
        "layout": {"side": lay.side, "map_x": lay.map_x, "width": lay.width, "height": lay.height},
        "grid_lines": render.grid_lines_style(), "bar_color": list(PROB_COLOR),
        "texts": pp.texts, "bars": pp.bars, "top1": top1_of(vm, a),
    }, separators=(",", ":"))


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def jpeg(img: np.ndarray) -> bytes:
    """(H, W, 3) uint8 RGB -> JPEG bytes (JPEG_QUALITY)."""
    ok, jpg = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return jpg.tobytes()


def as_html(img: np.ndarray, frame: int = 0, side: int = 0) -> str:
    """The picture inside the page (a data: URL), never a file in Gradio's cache: a frame is not
    written to disk. data-frame: the picture's number in this session; data-side: the model-input
    view's side in it, px from the top-left corner (tests and the benchmark read both)."""
    src = "data:image/jpeg;base64," + base64.b64encode(jpeg(img)).decode("ascii")
    return (f'<img class="vv-live" src="{src}" data-frame="{frame}" data-side="{side}" width="{img.shape[1]}" '
            f'height="{img.shape[0]}" '
            f'alt="the live camera picture: model input with patch grid, attention map, top-5" '
            f'style="width:100%;height:auto;max-width:{img.shape[1]}px">')


def live_markup() -> str:
    """The camera page's camera: the preview (mirrored, as a mirror shows you), Start and Stop, a
    status line, and where the live picture goes. Start is enabled once the page's loop is wired
    (it needs the page's camera token). data-config: what web/camera_live.js reads (the
    frames' route, the camera constraints, the frame JPEG's quality, the fastest pace, the frames
    on their way at most, the pace below which the page sends a second one ahead, when it tries
    one again, and how often at most the live top-1 is said)."""
    config = {"path": FRAME_PATH, "constraints": CONSTRAINTS, "quality": FRAME_QUALITY,
              "min_interval_ms": round(MIN_INTERVAL_S * 1000), "in_flight": IN_FLIGHT,
              "smooth_fps": SMOOTH_FPS, "retry_ms": round(RETRY_ONE_S * 1000), "say_ms": round(SAY_TOP1_S * 1000)}
    return (f"<div id=\"cam-live\" data-config='{html.escape(json.dumps(config), quote=True)}'>"
            "<video id=\"cam-video\" autoplay muted playsinline></video>"
            "<div class=\"vv-cam-bar\"><button id=\"cam-start\" class=\"lg primary\" disabled>▶ Start</button>"
            "<button id=\"cam-stop\" class=\"lg secondary\" disabled>■ Stop</button>"
            "<span id=\"cam-status\" role=\"status\"></span></div>"
            # the live top-1, said (camera_live.js): heard, not seen (style.css)
            "<div id=\"cam-said\" class=\"vv-sr-only\" aria-live=\"polite\" aria-atomic=\"true\"></div></div>")


# ------------------------------------------------------------------ speed
def fastest_listed(wb: Workbench) -> str | None:
    """The listed model with the shortest measured CPU forward (catalog.MEASURED), if any."""
    ids = wb.catalog.ids if wb.catalog is not None else list(CURATED)
    timed = [(MEASURED[arch_of(m)][1], m) for m in ids if arch_of(m) in MEASURED]
    return min(timed)[1] if timed else None


def speed_note(wb: Workbench, vm: VitModel, forward_s: float, frames: int) -> str:
    """What the panel says about speed: too slow for live use (with the measured time and, on a
    CPU, the fastest model of the list), said from the first picture on; or fast enough, once a
    few pictures give a forward time. The pictures a second the page shows are the picture's own line
    (rate_lines), new with every picture: the note said them too, read at another picture, so two readings
    differed on screen (16.4 and 16.6), and a note with a number in it changed with nearly every picture,
    each change a Gradio event (the note's refresh) the camera page exists to avoid."""
    if frames < 1 or forward_s <= 0:
        return ""
    most = 1.0 / forward_s
    if most >= LIVE_FPS:
        if frames < 3:
            return ""
        return (f"✓ **{short_name(vm.id)}** is fast enough for live use: one forward takes under "
                f"{1000 / LIVE_FPS:.0f} ms here (live needs {LIVE_FPS:.0f} pictures a second). The picture's lines "
                "say how many pictures a second this page shows now and how long a forward takes (drawing, "
                "sending and this computer's other work take the rest of each picture's time).")
    text = (f"⚠️ **{short_name(vm.id)} is too slow for live use here**: one forward takes "
            f"**{forward_s * 1000:.0f} ms**, so at most {most:.1f} pictures a second (live needs {LIVE_FPS:.0f}). "
            "Frames that come meanwhile are dropped, never queued, so the picture is late by one forward, not more.")
    small = fastest_listed(wb)
    if vm.device.type == "cpu" and small is not None:
        listed_ms = MEASURED[arch_of(small)][1]
        own = measured_ms(vm)
        if own is not None and own <= listed_ms:  # already the smallest: the computer is busy
            text += (f" This is already the fastest model of the list (~{own} ms a forward on a free 2-core "
                     "machine): this computer is busy now.")
        else:
            text += (f" On this CPU pick a small model from the list, e.g. **{short_name(small)}** "
                     f"(~{listed_ms} ms a forward).")
    return text


def measured_ms(vm: VitModel) -> int | None:
    """The catalog's measured forward time of this model's architecture, found by its parameter
    count (a local copy of a listed architecture counts too); None when it was not measured."""
    n = sum(p.numel() for p in vm.model.parameters())
    return next((ms for params, ms in MEASURED.values() if params == n), None)


def rate_lines(feed: Feed, forward_s: float) -> list[str]:
    return [f"{feed.meter.rate():.1f} pictures/s",
            f"forward {forward_s * 1000:.0f} ms",
            f"picture {feed.done + 1}"]


# ------------------------------------------------------------------ entry points
@dataclass(frozen=True)
class CameraPage:
    """What the tab shows, each field named like its component."""

    picture: str  # the composed picture as an <img> (data: URL), or '' before the first frame
    note: str  # intro, privacy and speed (markdown)


def intro() -> str:
    return (INTRO.format(limit=f"{TIME_LIMIT_S:.0f}", streams=CONCURRENT_STREAMS) + "\n\n"
            + PRIVACY.format(idle=int(IDLE_S // 60), recent=RECENT))


def show(ph: Photo | None, p: CameraParams) -> CameraPage:
    """On open: the session's photo (e.g. the frozen frame) drawn as a live picture would be."""
    if ph is None:
        return CameraPage("", TAB_LEAD + intro())
    vm = ph.vm
    a = ph.analysis()
    return CameraPage(as_html(compose(vm, a, p.attn(vm), ["your photo (not live)"]), 0, layout(vm).side),
                      TAB_LEAD + intro())


@dataclass(frozen=True)
class LiveStep:
    """One frame's answer: the picture, and the speed note (None: unchanged since the last)."""

    book: str  # the picture as the page draws it (live_book's JSON)
    note: str | None
    analysis_s: float  # the model's forward for this frame
    frame: int  # the picture's number in this camera session (1, 2, ...)
    side: int  # the model-input view's side in the picture, px from its top-left corner
    # Where the server's time went (ms), as the route's Server-Timing header: decode (the frame's
    # JPEG), wait (for this session's previous frame), idle (the session before this frame came),
    # forward (the worker's whole run: its queue, the model input, the forward, the results),
    # model (the forward alone), book (live_book). The page times its next frame by wait and idle.
    timing: tuple[tuple[str, float], ...] = ()

    def server_timing(self) -> str:
        """The Server-Timing header's value, e.g. 'decode;dur=0.6, wait;dur=2.1, ...'."""
        return ", ".join(f"{k};dur={v:.1f}" for k, v in self.timing)


def frame_side(vm: VitModel) -> int:
    """The short side (px) a frame needs: the processor's resize target, so nothing the model reads
    is lost, and the page captures, encodes and sends no more (a 640x480 webcam frame is 3.6x
    the pixels of a 299x224 one)."""
    r = vm.preprocess.resize
    return int(r) if isinstance(r, int) else int(max(r))


def frame_rgb(data: bytes, short_side: int | None = None) -> np.ndarray:
    """A frame as the page sends it (a JPEG) -> (H, W, 3) uint8, decoded in memory and, when its
    short side is longer than `short_side`, scaled down to it (what is kept for Freeze is then
    small too). Refuses, with a message, what is not a JPEG or is too big (checked before decoding),
    and a frame while DECODES frames are being decoded."""
    if len(data) > MAX_FRAME_BYTES:
        raise UserError(f"A camera frame must be under {MAX_FRAME_BYTES >> 20} MB.")
    if not data.startswith(b"\xff\xd8\xff"):
        raise UserError("A camera frame must be a JPEG picture.")
    if not DECODES.acquire(blocking=False):
        raise UserError("The server is busy with other camera frames: send one frame at a time.")
    try:
        rgb = np.asarray(load_image(data, max_pixels=MAX_FRAME_PIXELS))
    finally:
        DECODES.release()
    k = short_side / min(rgb.shape[:2]) if short_side else 1.0
    if k < 1:
        size = (max(1, round(rgb.shape[1] * k)), max(1, round(rgb.shape[0] * k)))
        rgb = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
    return rgb


def frame_image(rgb: np.ndarray) -> Image.Image:
    """A frame as the photo the model reads (RGB, any size: the processor resizes it)."""
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4) or arr.dtype != np.uint8:
        raise UserError("A camera frame must be an RGB picture.")
    return Image.fromarray(np.ascontiguousarray(arr[..., :3]))


@dataclass(frozen=True)
class _Forward:
    """What a frame's turn on the model gives (Feed.step's work): its analysis and what the picture
    says of the feed then."""

    a: Analysis
    frame: Frame  # the frame read (the newest waiting one), with its wait and idle
    forward_s: float  # the worker's whole run (its queue, the forward, the results)
    lines: list[str]  # rate_lines
    note: str | None  # the speed note, None when unchanged
    number: int  # the picture's number in the session


def live_step(wb: Workbench, feed: Feed, key: PhotoKey, rgb: np.ndarray, p: CameraParams,
              order: tuple[int, int] | None = None) -> LiveStep | None:
    """One camera frame: offered to the session's feed; None when a newer frame took its place (or
    came before it: order, the page's (run, number) of the frame, Feed.step).
    key: the model, the heads switched off and the typed labels (its sha1 is not read).

    Only the forward waits for the session's previous frame: the model-input view is made before
    (it travels with the frame in the feed's slot), the book after (beside the next frame's
    forward), so two frames in flight keep the model busy with forwards alone."""
    vm = wb.labelled(key)
    ap = p.attn(vm)

    def forward(frame: Frame) -> _Forward:
        t0 = time.perf_counter()
        a = wb.forwards.run(wb.model(key.model_id), Request(np.asarray(frame.view), ablation=key.ablation), live=True)
        a = with_zero_shot(a, vm) if vm.is_zero_shot else a
        took = time.perf_counter() - t0
        feed.meter.record(a.seconds)
        fwd = feed.meter.forward_s()
        note = speed_note(wb, vm, fwd, feed.meter.count())
        changed, feed.note = note != feed.note, note
        return _Forward(a, frame, took, rate_lines(feed, fwd), note if changed else None, feed.done + 1)

    got = feed.step(rgb, forward, model_input_view(frame_image(rgb), vm.preprocess), order)
    if got is None:
        return None
    t1 = time.perf_counter()
    book = live_book(vm, got.a, ap, got.lines, got.number)
    ms = lambda s: round(1000 * s, 1)  # noqa: E731
    timing = (("wait", ms(got.frame.waited)), ("idle", ms(got.frame.idle)), ("forward", ms(got.forward_s)),
              ("model", ms(got.a.seconds)), ("book", ms(time.perf_counter() - t1)))
    return LiveStep(book, got.note, got.a.seconds, got.number, layout(vm).side, timing)


def live_frame(wb: Workbench, feeds: Feeds, token: str, data: bytes, params: dict[str, str],
               restart: bool = False) -> LiveStep | None:
    """One frame from the camera page: its token's feed (time and concurrency limits: Feeds.admit),
    the frame decoded, the map's controls as the page has them now (params: layer, heads, mode,
    as in the page's link; a value that fits the model falls back to its default; run and n: the
    frame's place in the page's runs, frame_order), one step.
    None: a newer frame of the same camera took its place, or came first."""
    feed = feeds.admit(token, restart)
    key = feed.key
    if not isinstance(key, PhotoKey):
        raise UserError("This camera page is still opening: wait a moment, then press Start.")
    vm = wb.model(key.model_id)
    t0 = time.perf_counter()
    rgb = frame_rgb(data, frame_side(vm))
    decode = ("decode", round(1000 * (time.perf_counter() - t0), 1))
    step = live_step(wb, feed, key, rgb, CameraParams.from_link(params, vm.geometry), frame_order(params))
    return None if step is None else replace(step, timing=(decode, *step.timing))


ORDER_MAX = 2**31  # a run or frame number the page could send: it counts from 1, a run at a time


def frame_order(params: dict[str, str]) -> tuple[int, int] | None:
    """The page's (run, frame number) of a frame, from its query's run and n; None (no order kept)
    when either is missing or not a whole number in [0, ORDER_MAX): a caller without them still
    streams, as before."""
    try:
        run, n = int(params["run"]), int(params["n"])
    except (KeyError, ValueError):
        return None
    return (run, n) if 0 <= run < ORDER_MAX and 0 <= n < ORDER_MAX else None


def page_query(params: dict[str, Any]) -> str:
    """The camera page's relative link, e.g. 'camera?model=...&layer=12&heads=mean+of+heads&mode=raw'
    (the tab's model, heads off and map controls; None and '' left out)."""
    return "camera?" + urlencode({k: v for k, v in params.items() if v not in (None, "")})


def frozen_query(wb: Workbench, key: PhotoKey | None, sha1: str, params: CameraParams | None = None) -> str:
    """After Freeze: the main page's relative link on the frozen frame (its key, the live map's model
    and heads off), on the Attention tab, with the live map's layer, heads and map (raw or rolled out:
    the frozen photo opens as the live page showed it, in the link's spelling, deeplink.parse)."""
    if key is None:
        raise UserError("The camera page is still opening: wait a moment, then Freeze.")
    catalog = wb.catalog
    model = catalog.public(key.model_id) if catalog is not None else key.model_id
    q = {"photo": sha1, "model": model, "tab": "attention"}
    if params is not None:
        a = params.attn(wb.model(key.model_id))  # checked against the model, layer 0 = the last
        q |= {"layer": str(a.layer), "head": str(a.head) if a.show == ONE_HEAD else a.show,
              "mode": MODE_URL[a.mode]}
    if key.ablation.heads:
        q |= {"ablate": format_heads(key.ablation.heads), "ablate_mode": key.ablation.mode}
    return "./?" + urlencode(q)


def title(vm: VitModel, key: PhotoKey, notices: str = "") -> str:
    """The camera page's model line: which model, its heads off, where to change them."""
    off = f" · heads off: {format_heads(key.ablation.heads)}" if key.ablation.heads else ""
    untrained = " · ⚠ untrained random weights" if not vm.is_pretrained else ""
    labels = " · labels: the default list" if vm.is_zero_shot else ""
    line = (f"**{vm.display_name}**{untrained}{off}{labels}. To change the model or switch heads off, do it on "
            "the main page's Camera tab and open the camera from there.")
    return line + ("\n\n**About this link:**\n" + notices if notices else "")


def freeze(wb: Workbench, feed: Feed | None, picture: int | None = None) -> str:
    """The frame of the picture the page shows (its number, `picture`; else the last made) as a
    photo (its sha1): the same photo store as an upload."""
    if feed is None or feed.last is None:
        raise UserError("No camera frame yet: press Start first, then Freeze.")
    frame = feed.recent.get(picture, feed.last) if picture is not None else feed.last
    return wb.add_photo(frame_image(frame.rgb))  # type: ignore[arg-type]


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    return {}  # a live view: nothing to export from a photo


def export_figures(ph: Photo) -> dict[str, np.ndarray]:
    return {}

