"""A short Y4M clip for Chromium's fake camera (--use-file-for-fake-video-capture): a bright
square moving left to right over a dark background, and each frame's number written as a row of
black/white blocks near the top, so a test can tell which captured frame a picture was made of.
The code row lies in the frame's central half (CODE_BOX), which every processor's resize and
centre crop keeps. The camera page sends frames unmirrored (only its preview is a mirror), so
the code reads left to right in what the model sees: a mirrored frame would read as another number."""

from __future__ import annotations

from pathlib import Path

import numpy as np

W, H = 640, 480
SQUARE = 128  # px side of the bright square
BITS = 8  # frame number bits in the code row (frames 0..255)
CODE_BOX = (0.25, 0.08, 0.75, 0.22)  # x0, y0, x1, y1 as fractions of the frame: 40×67 px blocks at 640×480
BACKGROUND = 40
FPS = 30


def square_x(i: int, frames: int) -> int:
    """The square's left edge in frame i: one pass left to right over the clip."""
    return int(round(i * (W - SQUARE) / max(1, frames - 1)))


SQUARE_Y = int(0.30 * H)  # top edge: below the code row


def frame_rgb(i: int, frames: int) -> np.ndarray:
    """(H, W, 3) uint8 frame i."""
    img = np.full((H, W, 3), BACKGROUND, np.uint8)
    x = square_x(i, frames)
    img[SQUARE_Y:SQUARE_Y + SQUARE, x:x + SQUARE] = (250, 250, 250)
    x0, y0, x1, y1 = (int(round(f * n)) for f, n in zip(CODE_BOX, (W, H, W, H)))
    bw = (x1 - x0) // BITS
    for b in range(BITS):  # most significant bit first, left to right
        img[y0:y1, x0 + b * bw:x0 + (b + 1) * bw] = 255 if (i >> (BITS - 1 - b)) & 1 else 0
    return img


def box_in_view(pp, size: tuple[int, int] = (W, H), box: tuple[float, ...] = CODE_BOX) -> tuple[float, ...]:
    """A box (fractions of a (w, h) frame; CODE_BOX by default) as fractions of the model-input
    view under the processor `pp` (models.Preprocess: its resize, then its centre crop, as
    images.model_input_view does)."""
    from vizvit.model.images import resized_size

    rw, rh = resized_size(size, pp)
    ch, cw = pp.crop if pp.crop is not None else (rh, rw)
    ox, oy = (rw - cw) // 2, (rh - ch) // 2
    x0, y0, x1, y1 = box
    return ((x0 * rw - ox) / cw, (y0 * rh - oy) / ch, (x1 * rw - ox) / cw, (y1 * rh - oy) / ch)


def square_in_view(i: int, frames: int, pp, mirrored: bool = False) -> tuple[float, ...]:
    """Where frame i's square lies in the model-input view (fractions x0, y0, x1, y1); mirrored:
    where it would lie in a mirrored frame (the preview's, never the model's)."""
    x = square_x(i, frames)
    x0, x1 = (W - x - SQUARE, W - x) if mirrored else (x, x + SQUARE)
    return box_in_view(pp, box=(x0 / W, SQUARE_Y / H, x1 / W, (SQUARE_Y + SQUARE) / H))


def bright_columns(view: np.ndarray, rows: tuple[float, float], background: tuple[float, float]) -> float:
    """The x centre (fraction of the width) of the bright square in a picture of a model-input
    view: per column, bright pixels within the square's rows minus those within a band of
    background rows (so the white patch-grid lines, bright in every row, cancel)."""
    h = view.shape[0]
    bright = view.astype(np.float32).mean(-1) > 160
    band = lambda r: bright[int(r[0] * h):int(r[1] * h)].mean(0)  # noqa: E731
    excess = np.clip(band(rows) - band(background), 0, None)
    return float((excess * np.arange(len(excess))).sum() / max(excess.sum(), 1e-9) / len(excess))


def read_code(rgb: np.ndarray, box: tuple[float, ...] = CODE_BOX) -> int:
    """The frame number from the code row of a picture of a frame; box: where the row lies, as
    fractions of the picture (CODE_BOX for the frame itself, box_in_view for a model-input view).
    Each bit: the mean of its block's middle half."""
    h, w = rgb.shape[:2]
    gray = rgb.astype(np.float32).mean(-1)
    bx0, by0, bx1, by1 = box[0] * w, box[1] * h, box[2] * w, box[3] * h
    ys = slice(int(by0 + (by1 - by0) / 4), int(by1 - (by1 - by0) / 4))
    n = 0
    for b in range(BITS):
        x0, x1 = bx0 + (bx1 - bx0) * b / BITS, bx0 + (bx1 - bx0) * (b + 1) / BITS
        cell = gray[ys, int(x0 + (x1 - x0) / 4): int(x1 - (x1 - x0) / 4)]
        n = (n << 1) | int(cell.mean() > 127)
    return n


def _rgb_to_yuv420(rgb: np.ndarray) -> bytes:
    """BT.601 full-range (the C420jpeg tag) Y, then U and V subsampled 2×2."""
    f = rgb.astype(np.float32)
    r, g, b = f[..., 0], f[..., 1], f[..., 2]
    y = 0.299 * r + 0.587 * g + 0.114 * b
    u = -0.168736 * r - 0.331264 * g + 0.5 * b + 128
    v = 0.5 * r - 0.418688 * g - 0.081312 * b + 128
    sub = lambda c: c.reshape(H // 2, 2, W // 2, 2).mean((1, 3))  # noqa: E731
    return b"".join(np.clip(np.rint(c), 0, 255).astype(np.uint8).tobytes() for c in (y, sub(u), sub(v)))


def write_y4m(path: Path, frames: int = 90) -> Path:
    """The clip, `frames` frames at FPS (Chromium loops it)."""
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{W} H{H} F{FPS}:1 Ip A1:1 C420jpeg\n".encode())
        for i in range(frames):
            f.write(b"FRAME\n" + _rgb_to_yuv420(frame_rgb(i, frames)))
    return path


CHROMIUM_ARGS = ("--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream")


def chromium_args(clip: Path) -> list[str]:
    return [*CHROMIUM_ARGS, f"--use-file-for-fake-video-capture={clip}"]


# Installed before the page's scripts: every frame the webcam component captures (its canvas's
# toDataURL) is logged with its frame number and time, and every new live picture painted
# (#cam-picture canvas, drawn, then the next animation frame) with the number read from its
# model-input view. window.__cam.captures: [[t, code]], .paints: [[t, code, picture number]].
# With window.__cam.stamp = true (the benchmark) each capture writes its own number (mod 256)
# over the clip's code row before it is sent, so a picture names the very capture it was made of.
PROBE_JS = """
(() => {
  const cam = window.__cam = { captures: [], paints: [] };
""" + f"  const BITS = {BITS}, FRAME_BOX = {list(CODE_BOX)};\n" + """\
  cam.viewBox = FRAME_BOX;  // set by the test: where the code row lies in the model-input view
  function code(ctx, w, h, box) {  // read_code's rule
    const bx0 = box[0] * w, by0 = box[1] * h, bx1 = box[2] * w, by1 = box[3] * h;
    const y0 = Math.floor(by0 + (by1 - by0) / 4), y1 = Math.floor(by1 - (by1 - by0) / 4);
    const d = ctx.getImageData(0, y0, w, Math.max(1, y1 - y0)).data;
    let n = 0;
    for (let b = 0; b < BITS; b++) {
      const x0 = bx0 + (bx1 - bx0) * b / BITS, x1 = bx0 + (bx1 - bx0) * (b + 1) / BITS;
      let s = 0, k = 0;
      const xa = Math.floor(x0 + (x1 - x0) / 4), xb = Math.floor(x1 - (x1 - x0) / 4);
      for (let y = 0; y < y1 - y0; y++) for (let x = xa; x < xb; x++) {
        const i = 4 * (y * w + x); s += d[i] + d[i + 1] + d[i + 2]; k += 3; }
      n = (n << 1) | (s / k > 127 ? 1 : 0);
    }
    return n;
  }
  cam.code = code;
  cam.stamp = false; cam.count = 0;
  function write(ctx, w, h, box, n) {  // the code row of number n, as frame_rgb draws it
    const bx0 = box[0] * w, by0 = box[1] * h, bw = (box[2] - box[0]) * w / BITS, bh = (box[3] - box[1]) * h;
    for (let b = 0; b < BITS; b++) {
      ctx.fillStyle = (n >> (BITS - 1 - b)) & 1 ? '#fff' : '#000';
      ctx.fillRect(bx0 + b * bw, by0, bw + 0.5, bh);
    }
  }
  function captured(canvas) {  // a frame is encoded for the server: note (or stamp) its number
    const t = performance.now();
    if (canvas.width < 160) return;
    try {
      const ctx = canvas.getContext('2d');
      if (cam.stamp) {
        const n = cam.count++ & 255;
        ctx.setTransform(1, 0, 0, 1, 0, 0);
        write(ctx, canvas.width, canvas.height, FRAME_BOX, n);
        cam.captures.push([t, n]);
      } else {
        cam.captures.push([t, code(ctx, canvas.width, canvas.height, FRAME_BOX)]);
      }
    } catch (e) {}
  }
  for (const name of ['toDataURL', 'toBlob']) {  // Gradio's webcam used the first, the camera page the second
    const orig = HTMLCanvasElement.prototype[name];
    HTMLCanvasElement.prototype[name] = function (...a) { captured(this); return orig.apply(this, a); };
  }
  const off = document.createElement('canvas');
  let last = null;
  new MutationObserver(() => {  // the page sets data-frame once a picture is drawn (camera_live.js)
    const cv = document.querySelector('#cam-picture canvas.vv-live');
    if (!cv || !cv.dataset.frame || cv.dataset.frame === last) return;
    last = cv.dataset.frame;
    const frame = +cv.dataset.frame, side = +cv.dataset.side;
    requestAnimationFrame(() => {  // the picture drawn is painted in this frame
      const t = performance.now();
      off.width = side; off.height = side;
      const c = off.getContext('2d', { willReadFrequently: true });
      c.drawImage(cv, 0, 0, side, side, 0, 0, side, side);
      cam.paints.push([t, code(c, side, side, cam.viewBox), frame]);
    });
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-frame'] });
})();
"""


def latencies(captures: list, paints: list, stamped: bool = False) -> list[float]:
    """ms from each painted picture's capture to its paint. stamped (PROBE_JS's stamp): each
    capture has its own number, the latest capture of that number before the paint is the one.
    Otherwise the page may capture one camera frame several times (it captures whenever the last
    picture came back, up to 30 a second, whatever the camera's rate), and a frame's capture is the first of the run of
    captures of it that ends last before the paint: the moment the page first had it. Pictures
    whose frame was never captured are left out."""
    out = []
    for t, code, _ in paints:
        j = max((k for k, (tc, c) in enumerate(captures) if c == code and tc <= t), default=None)
        if j is None:
            continue
        while not stamped and j > 0 and captures[j - 1][1] == code:
            j -= 1
        out.append(t - captures[j][0])
    return out
