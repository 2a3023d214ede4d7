"""Generate the odd and hostile uploads the page must survive, into a folder.

    python tests/make_inputs.py OUT_DIR

Nothing here is committed as a binary: every file is made on the fly. Each entry of
CASES says what the loader must do: "ok" (a documented working result, with the
expected RGB size) or "error" (a ValueError whose message contains the given words).
"""

from __future__ import annotations

import io
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

# name -> ("ok", (width, height)) or ("error", words expected in the message)
CASES: dict[str, tuple[str, object]] = {
    "empty.jpg": ("error", "empty"),
    "text.jpg": ("error", "not an image"),
    "truncated.jpg": ("error", "truncated"),
    "truncated.png": ("error", "truncated"),
    "bomb.png": ("error", "too large"),
    "rgba.png": ("ok", (64, 48)),
    "la.png": ("ok", (64, 48)),
    "p.png": ("ok", (64, 48)),
    "one_bit.png": ("ok", (64, 48)),
    "l.png": ("ok", (64, 48)),
    "i16.png": ("ok", (64, 48)),
    "cmyk.jpg": ("ok", (64, 48)),
    "exif_rotated.jpg": ("ok", (48, 64)),  # stored 64×48, EXIF orientation 6 (rotate 90°)
    "one_pixel.png": ("ok", (1, 1)),
    "very_wide.png": ("ok", (20000, 1)),
    "animated.gif": ("ok", (64, 48)),
    "animated.webp": ("ok", (64, 48)),
    "rgba_renamed.gif": ("ok", (64, 48)),
    "photo.heic": ("error", "HEIC"),
    "drawing.svg": ("error", "SVG"),
}


def _photo(w: int = 64, h: int = 48) -> np.ndarray:
    """A smooth colourful test picture, (h, w, 3) uint8."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1),
                     (x + y) * 255 // max(w + h - 2, 1)], -1).astype(np.uint8)


def _save(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def _bomb_png(w: int = 10_000, h: int = 10_000) -> bytes:
    """A valid 1-bit PNG header claiming w×h pixels (100 Mpx), a few KB on disk."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + b"\x00" * ((w + 7) // 8)
    comp = zlib.compressobj(9)
    body = b"".join(comp.compress(row) for _ in range(h)) + comp.flush()
    ihdr = struct.pack(">IIBBBBB", w, h, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def make_all() -> dict[str, bytes]:
    rgb = Image.fromarray(_photo())
    rgba = rgb.copy()
    rgba.putalpha(Image.fromarray(np.tile(np.linspace(0, 255, 64, dtype=np.uint8), (48, 1))))
    exif = Image.Exif()
    exif[0x0112] = 6
    frames = [Image.fromarray(_photo()), Image.fromarray(255 - _photo())]
    wide = Image.fromarray(np.tile(_photo(20000, 1), (1, 1, 1)))
    jpg = _save(rgb, "JPEG", quality=90)
    png = _save(rgb, "PNG")
    i16 = Image.fromarray(np.arange(64 * 48, dtype=np.uint16).reshape(48, 64) * 20)
    return {
        "empty.jpg": b"",
        "text.jpg": b"This is not a photo, just some text renamed to .jpg\n" * 20,
        "truncated.jpg": jpg[: len(jpg) // 2],
        "truncated.png": png[: len(png) // 2],
        "bomb.png": _bomb_png(),
        "rgba.png": _save(rgba, "PNG"),
        "la.png": _save(rgba.convert("LA"), "PNG"),
        "p.png": _save(rgb.convert("P"), "PNG"),
        "one_bit.png": _save(rgb.convert("1"), "PNG"),
        "l.png": _save(rgb.convert("L"), "PNG"),
        "i16.png": _save(i16, "PNG"),
        "cmyk.jpg": _save(rgb.convert("CMYK"), "JPEG"),
        "exif_rotated.jpg": _save(rgb, "JPEG", exif=exif),
        "one_pixel.png": _save(Image.new("RGB", (1, 1), (200, 30, 30)), "PNG"),
        "very_wide.png": _save(wide, "PNG"),
        "animated.gif": _save(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100),
        "animated.webp": _save(frames[0], "WEBP", save_all=True, append_images=frames[1:], duration=100),
        "rgba_renamed.gif": _save(rgba, "PNG"),
        "photo.heic": b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic" + b"\x00" * 200,
        "drawing.svg": b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
                       b'<rect width="10" height="10"/></svg>',
    }


def write_all(out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, data in make_all().items():
        (out / name).write_bytes(data)
        paths[name] = out / name
    return paths


if __name__ == "__main__":
    for name, path in write_all(Path(sys.argv[1])).items():
        print(f"{path}  {path.stat().st_size:>9,} bytes  expect {CASES[name][0]}")
