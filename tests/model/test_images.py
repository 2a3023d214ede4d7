"""load_image on every odd input; the model-input view against the real image processor."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zlib

import numpy as np
import pytest
import torch
from make_inputs import CASES, make_all
from PIL import Image
from transformers import ViTImageProcessorPil

import vizvit
from vizvit.model.images import (
    MAX_PIXELS,
    View,
    apply_view,
    mask_pixels,
    model_input_view,
    shift_view,
    to_pixel_values,
    wide_grey_to_8bit,
)

INPUTS = make_all()


@pytest.mark.parametrize("name", sorted(CASES))
def test_odd_inputs(name):
    kind, expect = CASES[name]
    data = INPUTS[name]
    if kind == "error":
        with pytest.raises(ValueError, match=f"(?i){expect}"):
            vizvit.load_image(data)
    else:
        im = vizvit.load_image(data)
        assert im.mode == "RGB", f"{name}: got mode {im.mode}"
        assert im.size == expect, f"{name}: got size {im.size}, expected {expect}"


def test_bomb_is_refused_before_decoding(monkeypatch):
    # If the loader decoded first, Image.load would be called: make that fail loudly.
    monkeypatch.setattr(Image.Image, "load", lambda self: pytest.fail("decoded a bomb"))
    with pytest.raises(ValueError, match="too large"):
        vizvit.load_image(INPUTS["bomb.png"])
    assert 10_000 * 10_000 > MAX_PIXELS


def test_a_bomb_past_pillows_own_limit_is_refused_with_its_size(monkeypatch):
    """Past twice Pillow's limit (~179 Mpx) Image.open refuses the file itself, before load_image reads its
    size: a walk-through's 20000×20000 PNG got "The image is too large; the limit is 40 Mpx", not how large."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20_000, 20_000, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))  # a header: the pixels are never read
    with pytest.raises(Image.DecompressionBombError):
        Image.open(io.BytesIO(png))  # the case is the one Pillow refuses in open
    monkeypatch.setattr(Image.Image, "load", lambda self: pytest.fail("decoded a bomb"))
    with pytest.raises(ValueError, match=r"too large \(20000×20000 = 400 Mpx\); the limit is 40 Mpx"):
        vizvit.load_image(png)


def test_alpha_composited_on_white():
    im = Image.new("RGBA", (4, 4), (255, 0, 0, 0))  # fully transparent red
    assert np.asarray(vizvit.load_image(im)).reshape(-1, 3).tolist() == [[255, 255, 255]] * 16


def test_exif_rotation_moves_pixels():
    stored = np.asarray(Image.open(__import__("io").BytesIO(INPUTS["exif_rotated.jpg"])).convert("RGB"))
    shown = np.asarray(vizvit.load_image(INPUTS["exif_rotated.jpg"]))
    # Orientation 6 = rotate 90° clockwise for display: displayed (y, x) = stored (W-1-x... )
    assert np.abs(shown.astype(int) - np.rot90(stored, k=-1).astype(int)).mean() < 2


def test_animation_takes_first_frame():
    for name in ("animated.gif", "animated.webp"):
        first = np.asarray(vizvit.load_image(INPUTS[name])).astype(int)
        # frame 0 is dark at the top-left, frame 1 (inverted) is bright there
        assert first[0, 0].sum() < 100, name


def test_16_bit_uses_full_range():
    a = np.asarray(vizvit.load_image(INPUTS["i16.png"]))
    assert a.min() == 0 and a.max() == 255


def _png(im: Image.Image) -> bytes:
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def _scaled(a: np.ndarray) -> np.ndarray:
    """The reference, in plain numpy on the whole array: round((v - lo) / (hi - lo) * 255) as uint8."""
    a = a.astype(np.float64)
    lo, hi = a.min(), a.max()
    return np.round((a - lo) / (hi - lo) * 255.0).astype(np.uint8)


def test_a_16_bit_ramp_becomes_the_grey_levels_it_was_made_from():
    """Column i holds 1000 + 4i (i = 0..255): 1000..2020 scaled to 0..255 is i itself, in R, G and B."""
    a = np.tile(1000 + 4 * np.arange(256, dtype=np.uint16), (5, 1))  # (5, 256)
    im = Image.open(io.BytesIO(_png(Image.fromarray(a))))
    assert im.mode == "I;16"
    out = np.asarray(vizvit.load_image(_png(Image.fromarray(a))))
    assert out.shape == (5, 256, 3) and (out == np.arange(256, dtype=np.uint8)[None, :, None]).all()


@pytest.mark.parametrize("band_pixels", [1, 7, 37 * 3, 37 * 5 + 1, 1 << 20])  # a row, a few rows, all at once
@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I", "F"])
def test_wide_grey_is_scaled_band_by_band_as_one_whole_array_would_be(mode, band_pixels, rng):
    """Bit for bit the whole array's answer, whatever the bands: the minimum in the last band, the maximum in
    the first, 23 rows of 37 split unevenly."""
    dtype = {"I;16": np.uint16, "I;16B": np.uint16, "I": np.int32, "F": np.float32}[mode]
    span = {"I;16": (0, 65535), "I;16B": (0, 65535), "I": (-2**31, 2**31 - 1), "F": (-3.5, 1e6)}[mode]
    a = rng.uniform(span[0] / 2, span[1] / 2, size=(23, 37)).astype(dtype)
    a[0, 5], a[22, 30] = span[1], span[0]
    im = Image.frombytes(mode, (37, 23), a.astype(">u2").tobytes()) if mode == "I;16B" else Image.fromarray(a, mode)
    assert im.mode == mode and np.array_equal(np.asarray(im, dtype=np.float64), a.astype(np.float64))
    out = wide_grey_to_8bit(im, band_pixels)
    assert out.mode == "L" and np.array_equal(np.asarray(out), _scaled(a))
    assert np.asarray(out).min() == 0 and np.asarray(out).max() == 255


def test_a_flat_wide_grey_image_is_black():
    assert not np.asarray(wide_grey_to_8bit(Image.fromarray(np.full((4, 6), 700, np.uint16)), 5)).any()


def test_a_large_16_bit_image_is_scaled_without_a_float_copy_of_it():
    """The audit's case, smaller: a 3000×3000 16-bit grey image (9 Mpx; its float64 copy is 72 MB, and the
    whole-array pass took two or three such) is scaled within its 9 MB result and one band's temporaries."""
    a = np.zeros((3000, 3000), dtype=np.uint16)
    a[::7, ::5] = 1000
    im = Image.fromarray(a)
    im.load()
    tracemalloc.start()
    try:
        out = wide_grey_to_8bit(im)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 36 << 20, f"peak {peak >> 20} MB"  # half one float64 copy (tracemalloc counts numpy's)
    assert np.array_equal(np.asarray(out), np.where(a == 1000, 255, 0).astype(np.uint8))


@pytest.mark.parametrize("size", [(224, 224), (300, 451), (640, 17), (1, 1)])
def test_view_and_pixels_match_the_image_processor(size, rng):
    h, w = size
    im = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
    pp = vizvit.model.models.Preprocess(resize=(224, 224), crop=None, resample=Image.Resampling.BILINEAR,
                                  mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    view = model_input_view(im, pp)
    assert view.shape == (224, 224, 3) and view.dtype == np.uint8
    ref = ViTImageProcessorPil()(im, return_tensors="pt")["pixel_values"]
    assert torch.allclose(to_pixel_values(view, pp), ref, atol=1e-6)


def test_tiny_model_reads_its_processor_config(tiny16, cat):
    ref = ViTImageProcessorPil(size={"height": 224, "width": 224})(cat, return_tensors="pt")["pixel_values"]
    a = vizvit.analyze(tiny16, cat)
    assert torch.allclose(a.pixel_values, ref, atol=1e-6)


def test_shortest_edge_and_centre_crop():
    im = Image.fromarray(np.arange(300 * 400 * 3, dtype=np.uint32).reshape(300, 400, 3).astype(np.uint8))
    pp = vizvit.model.models.Preprocess(resize=256, crop=(224, 224), resample=Image.Resampling.BICUBIC,
                                  mean=(0.5,) * 3, std=(0.5,) * 3)
    view = model_input_view(im, pp)
    resized = np.asarray(im.resize((341, 256), Image.Resampling.BICUBIC))
    assert view.shape == (224, 224, 3)
    assert np.array_equal(view, resized[16:240, 58:282])


# Processor configs as checkpoints save them. The reference is the checkpoint's own processor,
# loaded by transformers from the same folder; these sizes are where rounding the long side and
# truncating it (what transformers does) disagree: 451·224/300 = 336.75.
PROCESSOR_CONFIGS = {
    "deit, class defaults only": {"feature_extractor_type": "DeiTFeatureExtractor"},  # 256² bicubic, crop 224²
    "shortest edge + crop": {"image_processor_type": "ViTImageProcessor", "size": {"shortest_edge": 224},
                             "do_center_crop": True, "crop_size": {"height": 224, "width": 224},
                             "resample": 3, "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]},
    "scalar mean and std": {"image_processor_type": "ViTImageProcessor", "image_mean": 0.4,
                                       "image_std": 0.2},
}


@pytest.mark.parametrize("name", list(PROCESSOR_CONFIGS))
def test_every_processor_config_gives_the_processors_own_pixels(name, tmp_path, rng):
    import json

    from tiny import make_tiny_vit
    from transformers import AutoImageProcessor

    from vizvit.model.images import view_at_size

    path = make_tiny_vit(tmp_path / "m", 224, 16)
    (path / "preprocessor_config.json").write_text(json.dumps(PROCESSOR_CONFIGS[name]))
    vm = vizvit.load_model(str(path), device="cpu")
    proc = AutoImageProcessor.from_pretrained(str(path), backend="pil")
    for h, w in [(300, 451), (451, 300), (224, 224), (97, 500)]:
        im = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        ref = proc(im, return_tensors="pt")["pixel_values"]
        view = model_input_view(im, vm.preprocess)
        assert view.shape == (224, 224, 3), (name, h, w)
        assert torch.allclose(to_pixel_values(view, vm.preprocess), ref, atol=1e-5), (name, h, w)
        # The Positions tab's view at another size, asked for the native size, is this view.
        assert np.array_equal(view_at_size(im, vm.preprocess, 224, 224), view), (name, h, w)


def test_processors_we_cannot_use_fall_back_to_vit_defaults_and_never_run_checkpoint_code(tmp_path, capfd):
    import json

    from tiny import make_tiny_vit

    path = make_tiny_vit(tmp_path / "m", 224, 16)
    (path / "evil.py").write_text("print('REMOTE CODE RAN')\nfrom transformers import ViTImageProcessorPil as Evil\n")
    import importlib.util

    configs = [{"image_processor_type": "Evil", "auto_map": {"AutoImageProcessor": "evil.Evil"}}]
    if importlib.util.find_spec("torchvision") is None:  # as in CI: this processor cannot load
        configs.append({"image_processor_type": "DINOv3ViTImageProcessorFast"})
    for cfg in configs:
        (path / "preprocessor_config.json").write_text(json.dumps(cfg))
        vm = vizvit.load_model(str(path), device="cpu")
        assert vm.preprocess.resize == (224, 224) and vm.preprocess.mean == (0.5, 0.5, 0.5)
    assert "REMOTE CODE RAN" not in capfd.readouterr().out


def test_view_at_another_size_keeps_the_field_of_view_of_a_resize_then_crop():
    # A horizontal ramp: the crop's left edge shows which part of the photo is in view.
    ramp = np.tile(np.linspace(0, 255, 1000).round().astype(np.uint8)[None, :, None], (1000, 1, 3))
    im = Image.fromarray(ramp)
    pp = vizvit.model.models.Preprocess(resize=(256, 256), crop=(224, 224), resample=Image.Resampling.BILINEAR,
                                  mean=(0.5,) * 3, std=(0.5,) * 3)
    from vizvit.model.images import view_at_size

    native = model_input_view(im, pp).astype(float)
    big = view_at_size(im, pp, 224, 384).astype(float)
    assert big.shape == (384, 384, 3)
    # Same field of view: the first and last columns show the same part of the ramp (±1 level).
    assert abs(big[:, 0].mean() - native[:, 0].mean()) < 1.5
    assert abs(big[:, -1].mean() - native[:, -1].mean()) < 1.5


def test_shift_zero_is_identity(rng):
    v = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    for fill in ("edge", "wrap", "constant"):
        assert np.array_equal(shift_view(v, 0, 0, fill), v)


def test_shift_moves_content_and_fills(rng):
    v = rng.integers(0, 256, (8, 10, 3), dtype=np.uint8)
    s = shift_view(v, 3, -2, "edge")
    assert np.array_equal(s[0:6, 3:], v[2:8, :7])  # pixel (y, x) <- (y + 2, x - 3)
    assert np.array_equal(s[0:6, 0], v[2:8, 0])  # left strip repeats the edge column
    assert np.array_equal(s[6:, 3:], np.repeat(v[7:8, :7], 2, axis=0))  # bottom repeats last row
    c = shift_view(v, 3, -2, "constant")
    assert (c[:, :3] == 0).all() and (c[6:] == 0).all()
    w = shift_view(v, 3, -2, "wrap")
    assert np.array_equal(w, np.roll(v, (-2, 3), (0, 1)))


def test_pixel_mask_changes_exactly_the_masked_patches(rng):
    v = rng.integers(1, 256, (64, 64, 3), dtype=np.uint8)
    for mode in ("black", "mean", "blur"):
        out = mask_pixels(v, (0, 5, 15), patch=16, grid_w=4, mode=mode)
        changed = (out != v).any(-1)
        expect = np.zeros((64, 64), bool)
        for i in (0, 5, 15):
            r, c = divmod(i, 4)
            expect[r * 16:(r + 1) * 16, c * 16:(c + 1) * 16] = True
        assert not changed[~expect].any(), mode
        assert changed[expect].mean() > 0.9, mode
    assert (mask_pixels(v, (5,), 16, 4, "black")[16:32, 16:32] == 0).all()


def test_view_key_is_normalised():
    assert View(mask=(3, 1, 3)) == View(mask=(1, 3))
    assert hash(View(mask=(3, 1))) == hash(View(mask=(1, 3)))
    with pytest.raises(ValueError):
        View(fill="mirror")
    v = np.zeros((32, 32, 3), np.uint8)
    assert np.array_equal(apply_view(v, View(), 16, 2), v)


def test_a_strip_whose_resize_would_pass_the_pixel_limit_is_refused_before_it_is_made():
    """The hostile caller's 20000×1 PNG passed the upload's 40 Mpx check, then the processor's resize to a
    248-px short side made it 248×4,960,000 px: the server's memory peaked at 5.6 GB."""
    import tracemalloc

    from vizvit.errors import UserError
    from vizvit.model.images import MAX_PIXELS, model_input_view, resized_size

    pp = vizvit.model.models.Preprocess(resize=248, crop=(224, 224), resample=Image.Resampling.BICUBIC,
                                        mean=(0.5,) * 3, std=(0.5,) * 3)
    strip = Image.new("RGB", (20000, 1), (200, 10, 10))
    assert resized_size(strip.size, pp) == (4_960_000, 248)
    tracemalloc.start()
    with pytest.raises(UserError, match=r"20000×1 px.*4960000×248 px \(1230 Mpx.*at most about 650:1"):
        model_input_view(strip, pp)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20
    # The widest strip under the limit is still made, and is what the model sees.
    w = MAX_PIXELS // 248 ** 2 * 5 // 6  # about 540:1
    ok = Image.new("RGB", (w, 1), (200, 10, 10))
    assert model_input_view(ok, pp).shape == (224, 224, 3)


def test_decodes_wait_until_their_pixels_fit_the_budget():
    """An audit: nothing bounded how many decodes ran at once (ten 40 Mpx 16-bit PNGs peaked at 3-8 GB).
    A decode waits while the pixels being decoded would pass the budget; one bigger than it takes all."""
    import threading

    from vizvit.model.images import PixelBudget

    budget = PixelBudget(100)
    entered, leave = threading.Event(), threading.Event()

    def second() -> None:
        with budget.hold(60):
            entered.set()
            leave.wait(5)

    with budget.hold(60):
        t = threading.Thread(target=second)
        t.start()
        assert not entered.wait(0.3), "60 + 60 pixels ran inside a budget of 100"
        with budget.hold(40):  # fits beside the first: no wait
            assert budget.used == 100
    assert entered.wait(5) and budget.used == 60  # the first left: the second runs
    leave.set()
    t.join(5)
    budget = PixelBudget(100)
    with budget.hold(10**9):  # larger than the whole budget: it alone, never stuck
        assert budget.used == 100
    assert budget.used == 0


def test_load_image_decodes_inside_the_budget(monkeypatch, tmp_path):
    from vizvit.model import images

    held = []
    budget = images.PixelBudget(10**9)
    real = budget.hold
    monkeypatch.setattr(budget, "hold", lambda n: held.append(n) or real(n))
    monkeypatch.setattr(images, "DECODING", budget)
    Image.new("RGB", (30, 20)).save(tmp_path / "a.png")
    images.load_image(tmp_path / "a.png")
    assert held == [600] and budget.used == 0


def test_a_photo_decoded_from_bytes_is_one_copy_at_its_peak_and_keeps_no_file(tmp_path):
    """A 40 Mpx upload peaked at two full decoded copies (~300 MB): exif_transpose copied, then _to_rgb.
    Measured in a fresh interpreter (Pillow's buffers are outside tracemalloc): a 12 Mpx JPEG is 48 MB
    decoded (Pillow keeps RGB as 4 bytes a pixel); the peak may pass one copy by a little, never two."""
    import subprocess
    import sys

    from tiny import ROOT

    path = tmp_path / "big.jpg"
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (3000, 4000, 3), dtype=np.uint8)).save(path, quality=70)
    code = f"""
from vizvit.model.images import load_image
def kb(field):
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith(field))
data = open({str(path)!r}, 'rb').read()
open('/proc/self/clear_refs', 'w').write('5')  # the peak (VmHWM) starts again from now
base = kb('VmRSS:')
im = load_image(data)
print((kb('VmHWM:') - base) / 1024, getattr(im, 'fp', None) is None)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""}).stdout.split()
    one_copy_mb = 3000 * 4000 * 4 / 2**20
    assert float(out[0]) < 1.5 * one_copy_mb, f"peak {out[0]} MB for a {one_copy_mb:.0f} MB image"
    assert out[1] == "True", "the decoded photo keeps the uploaded file's bytes alive"
    # A caller's own image is never changed: only a copy is turned upright.
    rotated = Image.open(io.BytesIO(INPUTS["exif_rotated.jpg"]))
    rotated.load()
    size = rotated.size
    assert vizvit.load_image(rotated).size == size[::-1] and rotated.size == size


def test_a_multi_frame_photo_keeps_none_of_its_file(tmp_path):
    """A review: an MPO (how Pillow opens many phone JPEGs: the photo and a preview) decoded without a copy
    kept the whole upload in its file pointer, outside the photos' memory budget."""
    buf = io.BytesIO()
    first = Image.fromarray(np.full((64, 96, 3), 200, np.uint8))
    first.save(buf, "MPO", save_all=True, append_images=[Image.new("RGB", (32, 48), (10, 20, 30))])
    assert Image.open(io.BytesIO(buf.getvalue())).format == "MPO"  # the constructed case is what a phone sends
    out = vizvit.load_image(buf.getvalue())
    assert out.size == (96, 64) and out.info["frames"] == 2
    assert getattr(out, "fp", None) is None and getattr(out, "_fp", None) is None, "the file's bytes are kept"


def _jpeg(rgb: np.ndarray, orientation: int | None = None) -> bytes:
    buf, exif = io.BytesIO(), Image.Exif()
    if orientation is not None:
        exif[0x0112] = orientation
    Image.fromarray(rgb).save(buf, "JPEG", quality=95, exif=exif.tobytes())
    return buf.getvalue()


def test_the_photo_records_a_turn_by_its_exif_orientation_and_a_stretched_16_bit_range():
    """What load_image does that the model's processor, given the file, would not: the page says it
    (views.common.frames_note) from these records. Orientation 6 means "turn 90° clockwise to view": the
    stored image's red left edge becomes the top. A 16-bit grey PNG of values 1200..7341: that range, named."""
    rgb = np.zeros((32, 64, 3), np.uint8)
    rgb[:, :8] = (255, 0, 0)
    im = vizvit.load_image(_jpeg(rgb, 6))
    top, bottom = np.asarray(im)[:4, :, 0].mean(), np.asarray(im)[-4:, :, 0].mean()
    assert im.size == (32, 64) and top > 200 and bottom < 50, (im.size, top, bottom)  # turned clockwise
    assert im.info["turned"] == 6 and im.info["stretched"] is None
    plain = vizvit.load_image(_jpeg(rgb, 1))  # upright: no turn, as with no EXIF at all
    assert plain.size == (64, 32) and plain.info["turned"] == 0 and plain.info["stretched"] is None
    assert vizvit.load_image(_jpeg(rgb)).info["turned"] == 0
    buf = io.BytesIO()
    grey = (np.arange(64 * 32).reshape(32, 64) * 3 + 1200).astype(np.uint16)  # 1200 .. 1200 + 3 * 2047
    Image.fromarray(grey).save(buf, "PNG")
    assert Image.open(io.BytesIO(buf.getvalue())).mode == "I;16"  # the constructed case is a 16-bit file
    wide = vizvit.load_image(buf.getvalue())
    assert wide.info["stretched"] == ("I;16", 1200.0, 7341.0) and wide.info["turned"] == 0
    assert np.asarray(wide)[0, 0, 0] == 0 and np.asarray(wide)[-1, -1, 0] == 255


def test_a_png_text_chunk_never_speaks_for_the_records():
    """A PNG's text chunks land in Pillow's info beside the records: one named like a record is overwritten."""
    from PIL import PngImagePlugin

    meta = PngImagePlugin.PngInfo()
    meta.add_text("stretched", "**bold**")
    meta.add_text("turned", "6")
    buf = io.BytesIO()
    Image.new("RGB", (20, 10), (1, 2, 3)).save(buf, "PNG", pnginfo=meta)
    assert Image.open(io.BytesIO(buf.getvalue())).info["stretched"] == "**bold**"
    im = vizvit.load_image(buf.getvalue())
    assert im.info["stretched"] is None and im.info["turned"] == 0 and im.info["frames"] == 1
