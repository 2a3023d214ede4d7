"""What every tab shares: the page header and status lines, the top-5 chart, a click on
an enlarged grid -> a patch, clamping a patch to the grid; the highlight colour is render.HIGHLIGHT_COLOR."""

from __future__ import annotations

import plotly.graph_objects as go

from vizvit.model.ablation import format_heads
from vizvit.model.engine import Analysis
from vizvit.model.images import FRAMES, STRETCHED, TURNED, resized_size
from vizvit.model.models import Geometry, VitModel, short_name
from vizvit.model.patches import patch_at
from vizvit.pictures import figures, render
from vizvit.session import PhotoKey, ViewPrediction, Workbench

HEADER_TEXT = """# vizvit: watch a Vision Transformer read your photo
Upload a photo (or pick an example). The model cuts it into square patches, turns each
patch into a token, and lets every token attend to every other. Each tab shows one step."""


def on_grid(clicked: tuple[int, int] | None, g: Geometry) -> tuple[int, int] | None:
    """The clicked patch if it exists on this grid (a model switch can shrink the grid)."""
    if clicked is None or not (0 <= clicked[0] < g.grid[0] and 0 <= clicked[1] < g.grid[1]):
        return None
    return clicked


TOP5_TITLE = "Top-5 predictions"
UNTRAINED_LINE = "<br><sub>UNTRAINED weights: meaningless</sub>"  # under the title of a model with random weights
UNTRAINED_TOP5_TITLE = TOP5_TITLE + UNTRAINED_LINE


def top5_figure(vm: VitModel, a: Analysis | ViewPrediction, baseline: Analysis | None = None,
                heading: str = TOP5_TITLE, decimals: int | None = None) -> go.Figure | None:
    """Top-5 bars; with `baseline`, each bar shows its change from the baseline's probability. heading: the
    title (plotly markup; the Compare tab's names its side and model), the untrained warning added below it.
    decimals: the values' and changes' fixed decimals of percent, as the readout beside writes them
    (figures.top5_bar)."""
    if not vm.has_classifier or a.probs is None:
        return None
    # A second line, not a longer one: plotly cuts a title at the chart's width.
    title = heading if vm.is_pretrained else heading + UNTRAINED_LINE
    base = None
    if baseline is not None and baseline.probs is not None:
        base = {p.index: float(baseline.probs[p.index]) for p in a.top5}
    return figures.top5_bar(a.top5, base, title, decimals)


def clicked_patch(g: Geometry, x: float, y: float) -> tuple[int, int]:
    """A click at (x, y) on the enlarged grid image -> patch (row, col)."""
    return patch_at(x, y, g, render.display_scale(g))


# Parts of the status a hall does not need: projector mode hides them (style.css), so the rest
# (model, top-1, what became of the photo) is shown whole instead of cut at the screen's edge.
DETAIL_CLASS = "vv-detail"


JOIN_CLASS = "vv-join"  # shown in projector mode only, where the status's lines run on as one


def detail(text: str) -> str:
    """`text` marked as a detail of the status line (hidden in projector mode)."""
    return f'<span class="{DETAIL_CLASS}">{text}</span>'


NEW_LINE = f'  \n<span class="{JOIN_CLASS}"> · </span>'  # a line break; " · " where lines are joined


def model_line(vm: VitModel) -> str:
    g = vm.geometry
    # A detail in projector mode only because the banner right above says it there (see banner).
    flag = "" if vm.is_pretrained else detail(" ⚠️ **untrained random weights**")
    head = "" if vm.has_classifier else " · no classifier: predictions hidden"
    return (f"**{short_name(vm.id)}**{flag}" + detail(
        f" · {vm.family.title}: {' '.join(g.prefix_names) or 'no [CLS]'} + "
        f"{g.grid[0]}×{g.grid[1]} patches of {g.patch_size}px · {g.image_size[0]}×{g.image_size[1]} px · "
        f"{g.num_layers} layers × {g.num_heads} heads") + f"{head}" + detail(f" · {vm.device}"))


def heads_line(vm: VitModel, a: Analysis) -> str:
    """A family with several heads (DeiT distilled): each head's top-1 beside their average."""
    if not a.head_logits:
        return ""
    parts = []
    for name, logits in a.head_logits.items():
        p = logits.softmax(-1)
        i = int(p.argmax())
        parts.append(f"{name}: {vm.labels[i].split(',')[0]} ({float(p[i]):.1%})")
    return " · average of " + ", ".join(parts)


def running_line(vm: VitModel, ahead: int = 0, image_s: float = 0.0) -> str:
    """The status while a new photo's forward pass runs (its grid may already be on screen, next
    to the previous photo's predictions). ahead: photos of other visitors waiting for the model
    before this one; image_s: the last forward's seconds per image (0: not known yet)."""
    if ahead <= 0:
        return f"{model_line(vm)} · ⏳ running the model on the new photo…"
    eta = f", about {max(1, round(ahead * image_s))} s" if image_s > 0 else ""
    who = "photo" if ahead == 1 else "photos"
    return (f"{model_line(vm)} · ⏳ waiting for the model: {ahead} other {who} ahead of yours{eta}. "
            "Every tab stays usable meanwhile.")


def status_line(vm: VitModel, a: Analysis, photo_size: tuple[int, int] | None = None) -> str:
    best = f" · top-1: **{a.top5[0].label.split(',')[0]}** ({a.top5[0].prob:.1%}){heads_line(vm, a)}" if a.top5 else ""
    off = (f" · ⚠️ heads off ({a.ablation.mode}): **{format_heads(a.ablation.heads)}**, every tab shows that model"
           if a.ablation else "")
    return f"{model_line(vm)}{best}{off}{detail(f' · forward {a.seconds * 1000:.0f} ms')}{resize_note(vm, photo_size)}"


def photo_status(wb: Workbench, k: PhotoKey) -> str:
    """The status line of the session's photo under its model (after its forward), with what the upload's own
    status said of its file (frames_note: an animation's frame 1, a turn by EXIF), which a model change and heads
    switched off had dropped."""
    photo = wb.photo(k.sha1)
    return status_line(wb.model(k.model_id), wb.analysis(k), photo.size) + frames_note(photo)


CROP_WARN = 0.25  # a centre crop keeping less of the photo than this is warned of (a 4000×300 strip keeps 6%)


def resize_note(vm: VitModel, photo_size: tuple[int, int] | None) -> str:
    """Say how the upload became the model input, and when its shape was squashed."""
    if photo_size is None:
        return ""
    w, h = photo_size
    H, W = vm.geometry.image_size
    note = f"{NEW_LINE}{detail(f'Your photo: {w}×{h} px → ')}the model sees {W}×{H} px"
    pp = vm.preprocess
    if pp.crop is not None:
        # The processor scales, then keeps the centre: say what was cut (a cat's ears, often).
        # Projector mode keeps "centre 224×224 kept: 54% of the photo's area" (see DETAIL_CLASS).
        sw, sh = resized_size(photo_size, pp)
        ch, cw = pp.crop
        kept = min(cw, sw) * min(ch, sh) / (sw * sh)
        note = (NEW_LINE + detail(f"Your photo: {w}×{h} px → scaled to {sw}×{sh}, ")
                + f"centre {cw}×{ch} kept: {kept:.0%} of the photo's area"
                + detail((" (its edges are cut off)" if kept < 0.995 else "") + f"; the model sees {W}×{H} px"))
        if kept < CROP_WARN:  # a panorama's centre: as a squash past 2.5:1 is warned of, where the model squashes
            note += f". ⚠️ Only the centre {kept:.0%} is read: crop the photo to what you want the model to read"
    r = (w / h) / (W / H)  # 1 when the photo has the input's shape, whatever the orientation
    squash = max(r, 1 / r)
    if squash > 1.25 and vm.preprocess.crop is None:
        note += f" ({detail('its shape was ')}squashed to a square{detail(', as the model’s image processor does')})"
    if squash >= 2.5 and vm.preprocess.crop is None:  # 3:1 and beyond (a 3:1 portrait once got no note)
        note += f". ⚠️ Squashed {squash:.0f}:1, so shapes are distorted: a crop nearer to square reads better"
    rw, rh = resized_size(photo_size, pp)  # the processor's scale (before any crop), as the sentence above says
    enlarged = max(rw / w, rh / h)
    if enlarged > 4:
        note += (f". ⚠️ Enlarged {enlarged:.0f}×: the model sees blurred pixels, each patch holds "
                 "little of the photo")
    return note


# How exif_transpose turns each EXIF orientation (2..8) upright, as Pillow's transposes do it.
TURNS = {2: "Mirrored left to right", 3: "Turned 180°", 4: "Mirrored top to bottom", 5: "Turned 90° and mirrored",
         6: "Turned 90° clockwise", 7: "Turned 90° and mirrored", 8: "Turned 90° anticlockwise"}
WIDE_GREY_NAMES = {"I": "32-bit grey", "F": "32-bit float grey"}  # else "16-bit grey" (I;16, I;16B, I;16L)


def frames_note(image) -> str:
    """What became of the uploaded file beyond decoding (load_image's record in the photo's info), where the
    model's own image processor, given the file as Pillow opens it, reads something else: an animation's
    first frame only, a photo turned upright by its EXIF orientation (else sideways), a 16/32-bit grey
    image's range scaled to 0–255 (else clipped nearly white). Empty for an ordinary photo. Starts with
    NEW_LINE, as the status's other parts do: a bare line break ran on as "…of the photo⚠️ An animation"
    where the phone and projector CSS hide breaks."""
    info = getattr(image, "info", {})
    notes = []
    n = int(info.get(FRAMES, 1) or 1)
    if n > 1:
        notes.append(f"⚠️ An animation of {n} frames: the model sees frame 1 only.")
    turn = TURNS.get(info.get(TURNED, 0))
    if turn:
        notes.append(f"{turn} to stand upright, as its EXIF orientation says.")
    stretched = info.get(STRETCHED)
    if stretched:
        mode, lo, hi = stretched
        grey = WIDE_GREY_NAMES.get(mode, "16-bit grey")
        notes.append(f"{grey}: its values {lo:,.6g}–{hi:,.6g} scaled to 0–255." if hi > lo
                     else f"{grey} of one value throughout: shown black.")
    return NEW_LINE + " ".join(notes) if notes else ""


def upload_refused(message: str, had_photo: bool) -> str:
    """The status after a refused upload: the refusal itself stays readable until the next action."""
    rest = ("The tabs still show the previous photo." if had_photo else "Upload a photo or pick an example to begin.")
    return f"⚠️ **That file was not used:** {message} {rest}"


READING_EXAMPLE = "⏳ Reading the example"  # the status line's start while a link's example is read (web/run_waits.js)


def reading_example(name: str) -> str:
    """The status line while a link's example (?example=chelsea) is read: the page had said "Upload a photo or
    pick an example to begin." beside the example's name in the upload box."""
    return f"{READING_EXAMPLE} {name}: its numbers come in a moment."


def upload_status(had_photo: bool, failed: bool) -> str:
    """The status line after an upload that gave no new photo (a bad file, or the box cleared):
    say what the tabs still show, so the old photo's numbers are not taken for the new file's."""
    first = ("⚠️ That file could not be used (the message in the corner says why)." if failed
             else "The upload box is empty.")
    rest = (" The tabs still show the previous photo; upload another or pick an example." if had_photo
            else " Upload a photo or pick an example to begin.")
    return first + rest


def banner(vm: VitModel, offline: bool, failed: str | None = None, reason: str = "") -> str:
    """The one plain-language line that stays on the page while its maps could mislead: untrained
    weights, and why. Empty for a trained model online. No exception names, no command lines.
    failed, reason: the model the server was started with, which could not be loaded, and why
    (vizvit.launch.Start): `vm` is its stand-in."""
    g = vm.geometry
    if failed and not vm.is_pretrained:
        where = "No internet connection here: the" if offline else "The"
        return (f"⚠️ {where} model **{short_name(failed)}** could not be loaded ({reason}), so this page shows "
                f"the {g.num_layers}-layer ViT architecture with **untrained random weights**."
                + detail(" The maps show the mathematics, not learned behaviour, and the predictions are meaningless."))
    if not vm.is_pretrained:
        why = "No internet connection here: showing" if offline else "Showing"
        # Projector mode keeps the first sentence (one line; see DETAIL_CLASS).
        return (f"⚠️ {why} the {g.num_layers}-layer ViT architecture with **untrained random weights**."
                + detail(" The maps show the mathematics, not learned behaviour, and the predictions are meaningless."))
    if offline:
        return "ℹ️ No internet connection here: only the models stored on this server are in the list."
    return ""


def model_unavailable(requested: str, current: VitModel, alternative: str | None = None) -> str:
    text = (f"⚠️ **{short_name(requested)}** cannot be loaded here (no internet connection, or the weights "
            f"are not on this server), so it is gone from the list. Still showing {model_line(current)}.")
    if alternative:
        text += f" The same architecture with untrained weights is in the list: **{alternative}**."
    return text
