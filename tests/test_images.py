"""load_image on every odd input; the model-input view against the real image processor."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import ViTImageProcessorPil

import vizvit
from vizvit.images import MAX_PIXELS, View, apply_view, mask_pixels, model_input_view, shift_view, to_pixel_values
from make_inputs import CASES, make_all

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


@pytest.mark.parametrize("size", [(224, 224), (300, 451), (640, 17), (1, 1)])
def test_view_and_pixels_match_the_image_processor(size, rng):
    h, w = size
    im = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
    pp = vizvit.models.Preprocess(resize=(224, 224), crop=None, resample=Image.Resampling.BILINEAR,
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
    pp = vizvit.models.Preprocess(resize=256, crop=(224, 224), resample=Image.Resampling.BICUBIC,
                                  mean=(0.5,) * 3, std=(0.5,) * 3)
    view = model_input_view(im, pp)
    resized = np.asarray(im.resize((341, 256), Image.Resampling.BICUBIC))
    assert view.shape == (224, 224, 3)
    assert np.array_equal(view, resized[16:240, 58:282])


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
