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
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlencode

import cv2
import numpy as np
from PIL import Image

from .. import render
from ..ablation import format_heads
from ..camera import IDLE_S, Feed, Frame
from ..catalog import CURATED, MEASURED, arch_of
from ..engine import Analysis, Request, with_zero_shot
from ..errors import UserError
from ..models import VitModel, short_name
from ..session import Photo, PhotoKey, Workbench
from ..vocab import FUSIONS, MODES, ONE_HEAD, Mode
from . import attention as attn

SCALE = 2  # the live picture's enlargement of the model-input view (the Attention tab's is 3: fewer bytes a frame)
GAP = 8  # white px between the parts
TEXT_PX = render.TEXT_PX
ROW = 38  # px per text row of the band under the pictures
BAND_ROWS = 5  # the top-5 on the left, the speed on the right
JPEG_QUALITY = 80
# Below this many pictures a second a camera view stops looking live: the panel says the model
# is too slow, with its measured forward time, and on a CPU names the fastest model of the list.
LIVE_FPS = 4.0
# Gradio's stream: the page sends a frame every STREAM_EVERY_S; a frame that comes while the
# model is busy replaces the waiting one (there and in the feed's slot: camera.NewestSlot).
STREAM_EVERY_S = 0.066  # 15 a second: a frame per step of the server (a ViT-Ti forward + the picture, ~65 ms);
# every 33 ms (a webcam's own rate) the browser spent the cores on frames the server then dropped:
# 6.0 against 6.6 pictures a second on this 2-core machine with the browser on it (benchmarks/camera.py)
# What the page asks the camera for: the model reads 224 px (384 at most), so a small frame is
# enough, and the page's capture (a JPEG every STREAM_EVERY_S) and its upload cost less.
CONSTRAINTS = {"video": {"width": {"ideal": 320}, "height": {"ideal": 240}}}
TIME_LIMIT_S = 120  # one camera session's length; press record again for another
CONCURRENT_STREAMS = 4  # camera sessions at once, for all visitors together

# On the tab, before INTRO: why the camera opens a page of its own.
TAB_LEAD = ("**The live camera runs on a page of its own**: a light page keeps up with the camera, and this one "
            "has every tab's controls. The button opens it with this tab's model, heads and map. ")
INTRO = ("**Live camera.** Press **Record** (your browser asks for the camera) and hold something up to "
         "it: every frame goes through the model, and the picture shows what the model sees (its patch grid), the "
         "Attention tab's map over it and the top-5. When the model is busy, a newer frame replaces the waiting one: "
         "a slow model shows fewer pictures, never older ones. **Freeze** keeps the frame you see as a photo and "
         "opens it in every tab here (as an upload would). A camera session lasts at most {limit} s (press Record "
         "again), and {streams} visitors can stream at once; photos uploaded meanwhile reach the model first.")
PRIVACY = ("**Privacy:** frames are decoded in the server's memory and never written to disk (the picture comes "
           "back inside the page, not as a file). The server keeps only the last frame shown, in memory, for "
           "Freeze, and forgets it when you close the page or after {idle} min without a frame. A frozen frame "
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
    def from_controls(cls, v: dict[str, Any]) -> "CameraParams":
        return cls(layer=int(v["layer"] or 0), heads=str(v["heads"]), mode=v["mode"])

    @classmethod
    def from_link(cls, params: dict[str, str], g: Any) -> "CameraParams":
        """The camera page's link (camera_query's parameters) -> params fitted to the model: a value
        that is not one of its choices falls back to the default."""
        layer = params.get("layer", "")
        heads = params.get("heads", "")
        return cls(layer=min(int(layer), g.num_layers) if layer.isdigit() and int(layer) >= 1 else g.num_layers,
                   heads=heads if heads in head_choices(g.num_heads) else HEAD_CHOICES[0],
                   mode=params.get("mode") if params.get("mode") in MODES else "rolled out")

    def attn(self, vm: VitModel) -> attn.AttnParams:
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
        return attn.AttnParams(layer=layer, head=head, show=show, mode=self.mode).checked(g)


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
    bar = attn.map_image(np.zeros((*g.image_size, 3), np.uint8), np.zeros(g.grid, np.float32), g,
                         attn.AttnParams(), lo_hi=(0, 1), marks={attn.UNIFORM_MARK: 0.5}, scale=SCALE).shape[1]
    return Layout(side, side + GAP, side + GAP + bar, side + ROW + BAND_ROWS * ROW + GAP)


def _band(width: int, rows: list[tuple[str, float | None]], right: list[str]) -> np.ndarray:
    """White band: the left rows (text, probability bar 0..1 or None), the right rows of text."""
    band = np.full((BAND_ROWS * ROW + GAP, width, 3), 255, np.uint8)
    half = width // 2
    cap = render.text_size("0", TEXT_PX)[1]
    for i, (text, prob) in enumerate(rows):
        y = GAP + i * ROW
        if prob is not None:
            band[y + 4:y + ROW - 4, 4:4 + int(round((half - 16) * max(0.0, min(1.0, prob))))] = (198, 219, 239)
        render.put_text(band, _fit(text, half - 12), (8, y + (ROW + cap) // 2), TEXT_PX)
    for i, text in enumerate(right):
        y = GAP + i * ROW
        render.put_text(band, _fit(text, width - half - 12), (half + 8, y + (ROW + cap) // 2), TEXT_PX)
    return band


def _fit(text: str, width: int) -> str:
    """text cut (with …) to `width` px at TEXT_PX."""
    if render.text_size(text, TEXT_PX)[0] <= width:
        return text
    while text and render.text_size(text + "...", TEXT_PX)[0] > width:
        text = text[:-1]
    return text + "..."


def caption(ap: attn.AttnParams, vm: VitModel) -> str:
    g = vm.geometry
    who = "head " + str(ap.head) if ap.show == ONE_HEAD else f"{ap.show} of {g.num_heads} heads"
    kind = "rollout" if ap.mode != "raw" else "attention"
    return f"{ap.who(g)} {kind}, layer {ap.layer}, {who}"


def top5_rows(vm: VitModel, a: Analysis) -> list[tuple[str, float | None]]:
    if not a.top5:
        return [("no classifier: no top-5", None)]
    head = [] if vm.is_pretrained else [("UNTRAINED weights: meaningless", None)]
    return head + [(f"{p.prob * 100:5.1f}%  {p.label}", p.prob) for p in a.top5][: 5 - len(head)]


def compose(vm: VitModel, a: Analysis, ap: attn.AttnParams, lines: list[str]) -> np.ndarray:
    """(H, W, 3) uint8: the model-input view with the patch grid | the Attention tab's main map
    (same colours, range and artifact outlines, at SCALE) ; below, the top-5 and `lines`."""
    g = vm.geometry
    left = render.draw_grid(render.enlarge(a.input_view, SCALE), g, lines=True)
    right = attn.main_panel(vm, a, ap, scale=SCALE).image
    lay = layout(vm)
    top = np.full((lay.side + ROW, lay.width, 3), 255, np.uint8)
    top[:lay.side, :lay.side] = left
    top[:right.shape[0], lay.map_x:lay.map_x + right.shape[1]] = right
    cap = render.text_size("0", TEXT_PX)[1]
    render.put_text(top, _fit(f"model input, {g.grid[0]}x{g.grid[1]} patches", lay.side - 8),
                    (4, lay.side + (ROW + cap) // 2), TEXT_PX)
    render.put_text(top, _fit(caption(ap, vm), lay.width - lay.map_x - 8), (lay.map_x + 4, lay.side + (ROW + cap) // 2),
                    TEXT_PX)
    return np.concatenate([top, _band(lay.width, top5_rows(vm, a), lines)], axis=0)


def as_html(img: np.ndarray, frame: int = 0, side: int = 0) -> str:
    """The picture inside the page (a data: URL), never a file in Gradio's cache: a frame is not
    written to disk. data-frame: the picture's number in this session; data-side: the model-input
    view's side in it, px from the top-left corner (tests and the benchmark read both)."""
    ok, jpg = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    src = "data:image/jpeg;base64," + base64.b64encode(jpg.tobytes()).decode("ascii")
    return (f'<img class="vv-live" src="{src}" data-frame="{frame}" data-side="{side}" width="{img.shape[1]}" height="{img.shape[0]}" '
            f'alt="the live camera picture: model input with patch grid, attention map, top-5" '
            f'style="width:100%;height:auto;max-width:{img.shape[1]}px">')


# ------------------------------------------------------------------ speed
def fastest_listed(wb: Workbench) -> str | None:
    """The listed model with the shortest measured CPU forward (catalog.MEASURED), if any."""
    ids = wb.catalog.ids if wb.catalog is not None else list(CURATED)
    timed = [(MEASURED[arch_of(m)][1], m) for m in ids if arch_of(m) in MEASURED]
    return min(timed)[1] if timed else None


def speed_note(wb: Workbench, vm: VitModel, rate: float, forward_s: float, frames: int) -> str:
    """What the panel says about speed: too slow for live use (with the measured time and, on a
    CPU, the fastest model of the list), said from the first picture on; or fast enough, once a
    few pictures give a rate."""
    if frames < 1 or forward_s <= 0:
        return ""
    most = 1.0 / forward_s
    if most >= LIVE_FPS:
        if frames < 3:
            return ""
        return (f"✓ **{short_name(vm.id)}** is fast enough for live use: one forward takes {forward_s * 1000:.0f} ms "
                f"here; the page shows {rate:.1f} pictures a second now (drawing, sending and this computer's "
                "other work take the rest).")
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
    return (INTRO.format(limit=TIME_LIMIT_S, streams=CONCURRENT_STREAMS) + "\n\n"
            + PRIVACY.format(idle=int(IDLE_S // 60)))


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

    picture: str
    note: str | None
    analysis_s: float  # the model's forward for this frame


def frame_image(rgb: np.ndarray) -> Image.Image:
    """A frame as the photo the model reads (RGB, any size: the processor resizes it)."""
    arr = np.asarray(rgb)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4) or arr.dtype != np.uint8:
        raise UserError("A camera frame must be an RGB picture.")
    return Image.fromarray(np.ascontiguousarray(arr[..., :3]))


def live_step(wb: Workbench, feed: Feed, key: PhotoKey, rgb: np.ndarray, p: CameraParams) -> LiveStep | None:
    """One camera frame: offered to the session's feed; None when a newer frame took its place.
    key: the model, the heads switched off and the typed labels (its sha1 is not read)."""
    vm = wb.labelled(key)
    ap = p.attn(vm)

    def work(frame: Frame) -> LiveStep:
        a = wb.forwards.run(wb.model(key.model_id), Request(frame_image(frame.rgb), ablation=key.ablation),
                            live=True)
        a = with_zero_shot(a, vm) if vm.is_zero_shot else a
        feed.meter.record(a.seconds)
        fwd = feed.meter.forward_s()
        img = compose(vm, a, ap, rate_lines(feed, fwd))
        note = speed_note(wb, vm, feed.meter.rate(), fwd, feed.meter.count())
        changed, feed.note = note != feed.note, note
        return LiveStep(as_html(img, feed.done + 1, layout(vm).side), note if changed else None, a.seconds)

    return feed.step(rgb, work)


def page_query(params: dict[str, Any]) -> str:
    """The camera page's relative link, e.g. 'camera?model=...&layer=12&heads=mean+of+heads&mode=raw'
    (the tab's model, heads off and map controls; None and '' left out)."""
    return "camera?" + urlencode({k: v for k, v in params.items() if v not in (None, "")})


def frozen_query(wb: Workbench, key: PhotoKey | None, sha1: str) -> str:
    """After Freeze: the main page's relative link on the frozen frame (its key, the live map's model
    and heads off), on the Attention tab."""
    if key is None:
        raise UserError("The camera page is still opening: wait a moment, then Freeze.")
    catalog = wb.catalog
    model = catalog.public(key.model_id) if catalog is not None else key.model_id
    q = {"photo": sha1, "model": model, "tab": "attention"}
    if key.ablation.heads:
        q |= {"ablate": format_heads(key.ablation.heads), "ablate_mode": key.ablation.mode}
    return "./?" + urlencode(q)


def title(vm: VitModel, key: PhotoKey, notices: str = "") -> str:
    """The camera page's model line: which model, its heads off, where to change them."""
    off = f" · heads off: {format_heads(key.ablation.heads)}" if key.ablation.heads else ""
    untrained = " · ⚠ untrained random weights" if not vm.is_pretrained else ""
    labels = " · labels: the default list" if vm.is_zero_shot else ""
    line = (f"**{vm.display_name}**{untrained}{off}{labels}. To change the model or heads, pick them on the main "
            "page's Camera tab and open the camera from there.")
    return line + ("\n\n**About this link:**\n" + notices if notices else "")


def freeze(wb: Workbench, feed: Feed | None) -> str:
    """The feed's last frame as a photo (its sha1): the same photo store as an upload."""
    if feed is None or feed.last is None:
        raise UserError("No camera frame yet: press Record first, then Freeze.")
    return wb.add_photo(frame_image(feed.last.rgb))  # type: ignore[arg-type]


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    return {}  # a live view: nothing to export from a photo


def export_figures(ph: Photo) -> dict[str, np.ndarray]:
    return {}

