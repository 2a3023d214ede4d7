"""Uploads in, model-input views out.

``load_image`` turns whatever a user uploads into one RGB PIL image, or raises a
ValueError that says what went wrong. ``model_input_view`` reproduces the
checkpoint's image processor up to the uint8 stage, so overlays are drawn on
exactly the pixels the model sees; ``apply_view`` then shifts or masks that view.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError
from transformers.image_transforms import get_resize_output_image_size
from transformers.image_utils import ChannelDimension

from vizvit.errors import UserError
from vizvit.model.models import Preprocess
from vizvit.vocab import FILLS, MASK_MODES, Fill, MaskMode

MAX_PIXELS = 40_000_000  # ~ a 7700×5200 photo; bigger is refused before decoding
ALLOWED_FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP", "TIFF", "MPO")
ImageInput = str | Path | bytes | Image.Image
# Magic numbers of the formats we read: a file that starts like one but does not
# open is damaged, not "not an image".
_SIGNATURES = (b"\xff\xd8\xff", b"\x89PNG", b"GIF87a", b"GIF89a", b"BM", b"II*\x00", b"MM\x00*")

# Never let PIL silently pad a truncated file with grey.
ImageFile.LOAD_TRUNCATED_IMAGES = False

# What load_image did to the file beyond decoding, kept in the photo's `info` for the page to say
# (views.common.frames_note): the model's own image processor, given the file as Pillow opens it, would
# see an EXIF-rotated phone photo sideways and clip a 16-bit scan nearly white.
FRAMES = "frames"  # the file's frame count: the model reads the first
TURNED = "turned"  # the EXIF orientation applied (2..8), 0 when none was
STRETCHED = "stretched"  # (mode, lo, hi) of a 16/32-bit grey image whose range became 0..255, else None
ORIENTATION_TAG = 0x0112  # EXIF's orientation


def _open(src: ImageInput) -> Image.Image:
    if isinstance(src, Image.Image):
        return src
    if isinstance(src, (bytes, bytearray)):
        data = bytes(src)
    else:
        try:
            data = Path(src).read_bytes()
        except OSError as e:
            raise UserError("The file could not be read. Please upload it again.") from e
    if not data:
        raise UserError("The file is empty. Please upload a photo (JPEG, PNG, WebP, GIF, BMP or TIFF).")
    head = data[:256].lstrip().lower()
    if head.startswith((b"<svg", b"<?xml")) or b"<svg" in head:
        raise UserError("SVG drawings are not supported: export it as PNG or JPEG first.")
    if data[4:12] in (b"ftypheic", b"ftypheix", b"ftypmif1", b"ftypmsf1", b"ftyphevc", b"ftypavif"):
        raise UserError("HEIC/AVIF photos are not supported: save it as JPEG or PNG first.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # we check the size ourselves
            return Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as e:  # over twice Pillow's own limit (~179 Mpx): refused in open
        raise UserError(_too_big_message(*(_header_size(data) or (None, None)))) from e
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        if data.startswith(_SIGNATURES) or data[8:12] == b"WEBP":
            raise UserError("The image file is truncated or damaged. Please upload the complete file.") from e
        raise UserError(
            "This file is not an image we can read. Please upload a JPEG, PNG, WebP, GIF, BMP or TIFF photo."
        ) from e


def _header_size(data: bytes) -> tuple[int, int] | None:
    """(w, h) as the file's header gives it, read by Pillow's own plugin for its format without the
    decompression-bomb check Image.open adds after it (which refused a 20000×20000 PNG before its size was
    known: the page said "too large" without saying how large). None when no plugin reads it."""
    Image.init()
    for fmt in ALLOWED_FORMATS:
        factory, accept = Image.OPEN.get(fmt, (None, None))
        if factory is None or (accept is not None and not accept(data[:16])):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                w, h = factory(io.BytesIO(data), "").size  # the header only: nothing is decoded
            return int(w), int(h)
        except Exception:  # noqa: BLE001 - a plugin's own refusal (a GIF's frame past the limit): no size to say
            continue
    return None


def _too_big_message(w: int | None = None, h: int | None = None) -> str:
    size = f" ({w}×{h} = {w * h / 1e6:.0f} Mpx)" if w and h else ""
    return f"The image is too large{size}; the limit is {MAX_PIXELS / 1e6:.0f} Mpx. Please downscale it."


def _too_thin_message(size: tuple[int, int], resized: tuple[int, int], pp: Preprocess) -> str:
    (w, h), (rw, rh) = size, resized
    side = pp.resize if isinstance(pp.resize, int) else min(pp.resize)
    return (f"This image is {w}×{h} px: this model's processor scales its short side to {side} px, which "
            f"would make it {rw}×{rh} px ({rw * rh / 1e6:.0f} Mpx, over the {MAX_PIXELS / 1e6:.0f} Mpx limit). "
            f"Please crop it to a less extreme shape (at most about {MAX_PIXELS // side ** 2}:1).")


class PixelBudget:
    """Pixels being decoded at once, bounded: a decode waits until its pixels fit. A decode takes several
    times its RGB size while it runs (the decoded image, its EXIF-turned copy, the RGB result; a 16-bit
    grey image more), and nothing else bounded how many ran at once (an audit: ten 40 Mpx 16-bit PNGs of
    90 KB each, sent together, peaked at 3-8 GB). An image larger than the whole budget takes all of it."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def hold(self, pixels: int) -> Iterator[None]:
        n = min(int(pixels), self.total)
        with self._cond:
            self._cond.wait_for(lambda: self.used + n <= self.total)
            self.used += n
        try:
            yield
        finally:
            with self._cond:
                self.used -= n
                self._cond.notify_all()


# Two of the largest images allowed at once; a phone's 12 Mpx photos, six (their decodes take ~0.1 s)
DECODING = PixelBudget(2 * MAX_PIXELS)


def load_image(src: ImageInput, max_pixels: int = MAX_PIXELS) -> Image.Image:
    """Any common photo -> one RGB PIL image.

    EXIF orientation applied, alpha composited on white, palette/grayscale/CMYK/
    16-bit converted, first frame of an animation. The pixel limit is checked on
    the header, before decoding, so a decompression bomb never allocates.
    Raises ValueError with a message meant for the user. The result's `info` says what
    became of the file beyond decoding: FRAMES, TURNED, STRETCHED.
    """
    im = _open(src)
    if im.format is not None and im.format not in ALLOWED_FORMATS:
        raise UserError(f"{im.format} images are not supported. Please upload a JPEG, PNG or WebP photo.")
    w, h = im.size
    if w * h > max_pixels:
        raise UserError(_too_big_message(w, h))
    if w < 1 or h < 1:
        raise UserError("The image has no pixels.")
    try:
        with DECODING.hold(w * h):
            frames = int(getattr(im, "n_frames", 1) or 1)
            im.seek(0)  # first frame of an animated GIF/WebP
            im.load()
            turned = _orientation(im)
            wide = im.mode in WIDE_GREY
            # Decoded here from the file's bytes, one frame: no caller holds this image, and nothing in it reads
            # the file again (a multi-frame file, an MPO phone photo or an animation, keeps it for its other
            # frames, so it is copied as before).
            own = im is not src and frames == 1
            if own:
                # In place, and no copy for an upright RGB photo: a 40 Mpx decode peaked at two full copies
                # (~300 MB). A photo with an EXIF rotation still needs its rotated copy (Pillow makes one).
                ImageOps.exif_transpose(im, in_place=True)
                if isinstance(im, ImageFile.ImageFile):  # as Pillow does once it has loaded a file it opened:
                    im.fp = None  # the upload's bytes are not kept with the photo
            else:
                im = ImageOps.exif_transpose(im)
            out = _to_rgb(im, own)
        # Every key set each time: a PNG text chunk of the same name (kept in info) never speaks for them.
        out.info.update({FRAMES: frames, TURNED: turned, STRETCHED: out.info.get(STRETCHED) if wide else None})
        return out
    except (OSError, SyntaxError, ValueError, EOFError) as e:
        raise UserError("The image file is truncated or damaged. Please upload the complete file.") from e


WIDE_GREY = ("I;16", "I;16B", "I;16L", "I", "F")  # 16-bit, 32-bit integer and 32-bit float grey
BAND_PIXELS = 1 << 18  # a wide grey image is scaled this many pixels at a time (2 MB a float64 band)


def _bands(im: Image.Image, band_pixels: int) -> Iterator[tuple[int, np.ndarray]]:
    """(first row, its band of whole rows as float64 (rows, W)): at most band_pixels pixels (one row at least)."""
    w, h = im.size
    rows = max(1, band_pixels // w)
    for top in range(0, h, rows):
        yield top, np.asarray(im.crop((0, top, w, min(h, top + rows))), dtype=np.float64)


def wide_grey_to_8bit(im: Image.Image, band_pixels: int = BAND_PIXELS) -> Image.Image:
    """A 16/32-bit grey image -> "L": its actual range scaled to 0..255 (instead of clipping at 255),
    round((v - lo) / (hi - lo) * 255), all 0 when flat (or NaN). Computed in float64 one band of rows
    at a time, so each pixel's value is what one whole-image float64 pass gives, bit for bit: that pass
    took ~720 MB above the decoded image for a 6300×6300 16-bit PNG of 90 KB (a float64 copy and its
    temporaries, 318 MB each), this takes the 40 MB result and one band's temporaries."""
    # np.min over the bands' minima, as over the whole: a NaN anywhere makes lo NaN, and the image flat
    ext = np.array([(b.min(), b.max()) for _, b in _bands(im, band_pixels)])
    lo, hi = float(np.min(ext[:, 0])), float(np.max(ext[:, 1]))
    out = np.zeros((im.height, im.width), dtype=np.uint8)
    if hi > lo:
        for top, b in _bands(im, band_pixels):
            out[top:top + len(b)] = ((b - lo) / (hi - lo) * 255.0).round().astype(np.uint8)
    grey = Image.fromarray(out, "L")
    grey.info[STRETCHED] = (im.mode, lo, hi)
    return grey


def _orientation(im: Image.Image) -> int:
    """The EXIF orientation exif_transpose applies (2..8: a turn or a mirror), 0 for none (1, absent, unknown)."""
    o = im.getexif().get(ORIENTATION_TAG, 1)
    return int(o) if isinstance(o, int) and 2 <= o <= 8 else 0


def _to_rgb(im: Image.Image, own: bool = False) -> Image.Image:
    """The image in RGB; own: `im` may be returned itself (nobody else holds it), else an RGB photo is copied."""
    if im.mode == "RGB":
        return im if own else im.copy()
    if im.mode in WIDE_GREY:
        grey = wide_grey_to_8bit(im)
        rgb = grey.convert("RGB")
        rgb.info[STRETCHED] = grey.info[STRETCHED]
        return rgb
    if im.mode == "P":
        im = im.convert("RGBA")
    if im.mode in ("RGBA", "LA", "PA", "La", "RGBa"):
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return im.convert("RGB")


def image_sha1(image: Image.Image) -> str:
    """Content key of a decoded image (size + pixels), for the analysis cache."""
    h = hashlib.sha1(f"{image.size}{image.mode}".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def resized_size(size: tuple[int, int], pp: Preprocess) -> tuple[int, int]:
    """(width, height) of a photo of `size` (w, h) after the processor's resize, before its crop."""
    w, h = size
    if isinstance(pp.resize, int):  # shortest edge -> pp.resize, keep aspect
        # transformers' own size rule (it truncates the long side): a zero-copy stand-in image
        # carries the shape, so the rule is the processor's, not a copy of it.
        shape = np.broadcast_to(np.uint8(0), (3, h, w))
        nh, nw = get_resize_output_image_size(shape, pp.resize, default_to_square=False,
                                              input_data_format=ChannelDimension.FIRST)
        return max(1, nw), max(1, nh)
    return pp.resize[1], pp.resize[0]


def model_input_view(image: Image.Image, pp: Preprocess) -> np.ndarray:
    """The uint8 (H, W, 3) picture the model sees: the processor's resize and crop. A photo whose
    resize would pass MAX_PIXELS is refused (UserError): the limit on the upload does not bound it, as
    a 20000×1 strip scaled to a 248-px short side is 248×4,960,000 px (3.7 GB, 5.6 GB at the peak)."""
    size = resized_size(image.size, pp)
    if size[0] * size[1] > MAX_PIXELS:
        raise UserError(_too_thin_message(image.size, size, pp))
    im = image.resize(size, resample=pp.resample)
    if pp.crop is not None:
        ch, cw = pp.crop
        left = (im.width - cw) // 2
        top = (im.height - ch) // 2
        im = im.crop((left, top, left + cw, top + ch))
    return np.asarray(im, dtype=np.uint8).copy()


def to_pixel_values(view: np.ndarray, pp: Preprocess) -> torch.Tensor:
    """(H, W, 3) uint8 -> (1, 3, H, W) float32, rescaled and normalised as the processor does."""
    x = torch.from_numpy(np.ascontiguousarray(view)).permute(2, 0, 1).float() * pp.rescale
    mean = torch.tensor(pp.mean, dtype=torch.float32).view(3, 1, 1)
    std = torch.tensor(pp.std, dtype=torch.float32).view(3, 1, 1)
    return ((x - mean) / std).unsqueeze(0)




@dataclass(frozen=True)
class View:
    """A perturbation of the model-input view. Hashable: part of the cache key.

    dx, dy: shift in model-input pixels (content moves right/down when positive).
    fill: what enters at the border: repeat the edge, wrap around, or black.
    mask: 0-based row-major patch indices; mask_mode says how they are removed.
    """

    dx: int = 0
    dy: int = 0
    fill: Fill = "edge"
    mask: tuple[int, ...] = ()
    mask_mode: MaskMode = "drop"

    def __post_init__(self) -> None:
        if self.fill not in FILLS:
            raise UserError(f"Unknown shift fill {self.fill!r}: use edge, wrap or constant.")
        if self.mask_mode not in MASK_MODES:
            raise UserError(f"Unknown mask mode {self.mask_mode!r}: use one of {', '.join(MASK_MODES)}.")
        # Normalise so equal masks give equal cache keys.
        object.__setattr__(self, "mask", tuple(sorted({int(i) for i in self.mask})))
        # No shift: no border enters, so the fill changes nothing: one key, the unshifted view's. The wrap fill at
        # 0 px was a view of its own, run through the lighter forward, and its top-5 read "+<0.0001 pp" beside
        # the photo's own numbers where nothing had moved (a helper, the trained ViT-Ti).
        if self.dx == 0 and self.dy == 0:
            object.__setattr__(self, "fill", "edge")

    @property
    def is_identity(self) -> bool:
        return self.dx == 0 and self.dy == 0 and not self.mask


def shift_view(view: np.ndarray, dx: int, dy: int, fill: Fill = "edge") -> np.ndarray:
    """Move the picture by (dx, dy) pixels inside a frame of the same size.

    (H, W, 3) -> (H, W, 3). Pixel (y, x) of the result is pixel (y - dy, x - dx) of
    the input; the strip that enters is filled per ``fill``.
    """
    if dx == 0 and dy == 0:
        return view.copy()
    h, w = view.shape[:2]
    if abs(dx) >= w or abs(dy) >= h:
        raise UserError(f"A shift of ({dx}, {dy}) moves the photo out of the {w}×{h} frame.")
    if fill == "wrap":
        return np.roll(view, shift=(dy, dx), axis=(0, 1))
    pad = ((max(dy, 0), max(-dy, 0)), (max(dx, 0), max(-dx, 0)), (0, 0))
    mode: Literal["edge", "constant"] = "edge" if fill == "edge" else "constant"
    padded = np.pad(view, pad, mode=mode)
    y0, x0 = max(-dy, 0), max(-dx, 0)
    return padded[y0:y0 + h, x0:x0 + w].copy()


def fill_pixels(view: np.ndarray, patch: int, mode: MaskMode) -> np.ndarray | None:
    """(H, W, 3) uint8 -> what a masked patch's pixels become under `mode`, for the whole view: black,
    the image mean, or a strong blur (None for drop and [MASK]: the tokens change, not the pixels).
    Computed once, it serves every mask of the same view (the contest's ~300 views per fill: the blur
    alone is ~25 ms a view on a busy core, a ViT-Ti forward's order)."""
    if mode == "blur":
        import cv2

        k = 2 * patch + 1
        return cv2.GaussianBlur(view, (k, k), sigmaX=patch / 2)
    if mode == "mean":
        return np.broadcast_to(view.reshape(-1, 3).mean(0).round().astype(np.uint8), view.shape)
    if mode == "black":
        return np.zeros_like(view)
    return None


def mask_pixels(view: np.ndarray, mask: tuple[int, ...], patch: int, grid_w: int,
                mode: MaskMode, filler: np.ndarray | None = None) -> np.ndarray:
    """Fill the masked patches' pixels: black, the image mean, or a strong blur.

    Only the pixels of the masked patches change. 'drop' and 'mask' leave pixels alone: the
    tokens are removed (or replaced by the [MASK] token) later, in the forward pass.
    filler: fill_pixels(view, patch, mode), when the caller masks the same view many times.
    """
    out = view.copy()
    if not mask or mode not in ("black", "mean", "blur"):  # drop, [MASK]: the tokens change, not the pixels
        return out
    if filler is None:
        filler = fill_pixels(view, patch, mode)
        assert filler is not None  # a pixel fill (checked above) always has its pixels
    for i in mask:
        r, c = divmod(i, grid_w)
        ys, xs = slice(r * patch, (r + 1) * patch), slice(c * patch, (c + 1) * patch)
        out[ys, xs] = filler[ys, xs]
    return out


def apply_view(base: np.ndarray, view: View, patch: int, grid_w: int) -> np.ndarray:
    """Shift, then pixel-mask, the model-input view. (H, W, 3) uint8 -> same."""
    out = shift_view(base, view.dx, view.dy, view.fill)
    return mask_pixels(out, view.mask, patch, grid_w, view.mask_mode)


def view_at_size(image: Image.Image, pp: Preprocess, native: int, size: int) -> np.ndarray:
    """The processor's resize and crop, every length scaled by size/native, so the size×size view
    shows the same field of view as the native one (at size == native: exactly model_input_view).
    E.g. DeiT (resize 256², crop 224²) at 384: resize 439², crop 384²."""
    k = size / native
    if isinstance(pp.resize, int):
        resize: tuple[int, int] | int = round(pp.resize * k)
    else:
        resize = (round(pp.resize[0] * k), round(pp.resize[1] * k))
    if pp.crop is not None:
        crop: tuple[int, int] | None = (size, size)
    else:  # the resize alone makes the input: it must be size×size
        resize, crop = (resize if isinstance(resize, int) else (size, size)), None
    return model_input_view(image, replace(pp, resize=resize, crop=crop))
