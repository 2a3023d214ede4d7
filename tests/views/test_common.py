"""What the tabs share (vizvit/views/common.py): the status lines and notes (resize, crop, frames,
photos ahead), worked out by hand for constructed photos and models."""

from __future__ import annotations

import re

from make_inputs import make_all
from tiny import EXAMPLES

import vizvit


def test_status_warns_about_strongly_squashed_or_enlarged_photos(tiny16):
    from vizvit.views.common import resize_note

    assert "squashed" not in resize_note(tiny16, (300, 280)) and "⚠️" not in resize_note(tiny16, (300, 280))
    note = resize_note(tiny16, (451, 300))
    assert "squashed to a square" in note and "⚠️" not in note  # 1.5:1, usual for photos
    assert "Squashed 12:1" in resize_note(tiny16, (4800, 400))
    assert "Squashed 3:1" in resize_note(tiny16, (300, 900)), "a 3:1 portrait is warned about like a 4:1 one"
    assert "Squashed 4:1" in resize_note(tiny16, (1600, 400))
    assert "Enlarged 45×" in resize_note(tiny16, (5, 5))
    assert "Enlarged" not in resize_note(tiny16, (100, 100))  # 2.24×: fine


def test_squash_note_knows_the_orientation_of_a_non_square_input(tiny16):
    from dataclasses import replace

    from vizvit.views.common import resize_note

    wide = replace(tiny16, geometry=replace(tiny16.geometry, image_size=(224, 448)))  # H=224, W=448
    assert "squashed" not in resize_note(wide, (896, 448))  # 2:1 photo into a 2:1 input
    assert "Squashed 4:1" in resize_note(wide, (224, 448))  # a 1:2 portrait into a 2:1 input


def test_status_says_how_much_of_the_photo_a_centre_crop_keeps(tiny16):
    """ViT-Ti AugReg's processor: shortest side to 248, centre 224×224. A 451×300 photo (chelsea)
    becomes 372×248 (transformers truncates 372.8), of which 224×224 is kept: 50176 / 92256."""
    import re
    from dataclasses import replace

    from vizvit.model.models import Preprocess
    from vizvit.views.common import resize_note

    augreg = replace(tiny16, preprocess=Preprocess(resize=248, crop=(224, 224), resample=3,
                                                   mean=(0.5,) * 3, std=(0.5,) * 3))
    note = re.sub(r"<[^>]+>", "", resize_note(augreg, (451, 300)))  # as shown, without its markup
    assert "scaled to 372×248, centre 224×224 kept: 54% of the photo's area (its edges are cut off)" in note, note
    assert "squashed" not in note, "a crop keeps the shape"
    # A portrait: 300×600 -> 248×496, 224×224 kept of it = 50176 / 123008
    assert "scaled to 248×496, centre 224×224 kept: 41%" in re.sub(r"<[^>]+>", "", resize_note(augreg, (300, 600)))
    # Exactly the crop's size after scaling: all of it kept, nothing said to be cut
    square = re.sub(r"<[^>]+>", "", resize_note(replace(augreg, preprocess=replace(augreg.preprocess, resize=224)),
                                                (448, 448)))  # the text as shown, without its markup
    assert "kept: 100% of the photo's area;" in square and "cut off" not in square
    # No crop (tiny16's processor resizes to 224×224): no crop named
    assert "kept" not in resize_note(tiny16, (451, 300))
    # Enlarged by the scale the line names: 20×20 -> 248×248 is 12.4×, not 224 / 20 (the crop's 11×)
    tiny = re.sub(r"<[^>]+>", "", resize_note(augreg, (20, 20)))
    assert "scaled to 248×248" in tiny and "Enlarged 12×" in tiny, tiny
    # A panorama: 4000×300 -> 3306×248, of which 50176 / 819888 = 6% is read: warned, as a squash is (a walk-through
    # read "kept: 6%" with no warning where a squashing model's 3:1 gets one). 1000×248: 20% warned; 800×248: 25% not.
    strip = re.sub(r"<[^>]+>", "", resize_note(augreg, (4000, 300)))
    assert "kept: 6% of the photo's area" in strip and "⚠️ Only the centre 6% is read" in strip, strip
    assert "⚠️ Only the centre 20% is read" in resize_note(augreg, (1000, 248))
    assert "⚠️" not in resize_note(augreg, (800, 248)) and "⚠️" not in resize_note(augreg, (451, 300))


def test_the_running_line_says_how_many_photos_are_ahead(tiny16):
    from vizvit.views.common import running_line

    assert "running the model on the new photo" in running_line(tiny16)
    line = running_line(tiny16, ahead=3, image_s=0.4)
    assert "3 other photos ahead of yours, about 1 s" in line and "usable" in line
    assert "1 other photo ahead of yours." in running_line(tiny16, ahead=1)  # no estimate before a forward


def joined(status: str) -> str:
    """The status as the phone (under 480 px) and projector CSS show it (style.css: #status br and .vv-detail
    hidden, .vv-join shown): Markdown's line breaks gone, the join marks' " · " in their place."""
    text = re.sub(r'<span class="vv-detail">.*?</span>', "", status)
    return re.sub(r'<span class="vv-join">(.*?)</span>', r"\1", text).replace("  \n", "")


def test_the_animation_note_is_set_apart_where_line_breaks_are_hidden(tiny16):
    """The note began with a bare line break: on a phone it ran on as "…little of the photo⚠️ An animation"."""
    from vizvit.views.common import frames_note, resize_note

    im = vizvit.load_image(make_all()["animated.gif"])  # 2 frames of 64×48
    shown = joined(resize_note(tiny16, im.size) + frames_note(im))
    assert shown.endswith("holds little of the photo · ⚠️ An animation of 2 frames: the model sees frame 1 only."), shown


def test_an_animation_is_named_in_the_status_as_frame_1_of_n():
    from vizvit.views.common import frames_note

    im = vizvit.load_image(make_all()["animated.gif"])
    assert im.info["frames"] > 1
    assert f"{im.info['frames']} frames" in frames_note(im) and "frame 1 only" in frames_note(im)
    assert frames_note(vizvit.load_image(EXAMPLES / "chelsea.jpg")) == ""


def test_a_turned_photo_and_a_stretched_16_bit_one_are_named_in_the_status():
    """load_image turns an EXIF-rotated JPEG upright and scales a 16-bit grey PNG's range to 0–255, where the
    model's own processor, given the file, would see it sideways or clipped nearly white: the status says so,
    after the resize note's separator. An ordinary JPEG gets no note."""
    import io

    import numpy as np
    from PIL import Image

    from vizvit.views.common import frames_note

    buf, exif = io.BytesIO(), Image.Exif()
    exif[0x0112] = 6
    Image.new("RGB", (64, 32), (200, 10, 10)).save(buf, "JPEG", exif=exif.tobytes())
    turned = frames_note(vizvit.load_image(buf.getvalue()))
    assert joined(turned) == " · Turned 90° clockwise to stand upright, as its EXIF orientation says.", turned
    exif[0x0112] = 8
    buf = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 10, 10)).save(buf, "JPEG", exif=exif.tobytes())
    assert "Turned 90° anticlockwise to stand upright" in frames_note(vizvit.load_image(buf.getvalue()))
    buf = io.BytesIO()
    Image.fromarray((np.arange(64 * 32).reshape(32, 64) * 3 + 1200).astype(np.uint16)).save(buf, "PNG")
    stretched = frames_note(vizvit.load_image(buf.getvalue()))
    assert joined(stretched) == " · 16-bit grey: its values 1,200–7,341 scaled to 0–255.", stretched
    buf = io.BytesIO()
    Image.fromarray(np.full((32, 64), 700, np.uint16)).save(buf, "PNG")
    assert "16-bit grey of one value throughout: shown black." in frames_note(vizvit.load_image(buf.getvalue()))
    buf = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 10, 10)).save(buf, "JPEG")
    assert frames_note(vizvit.load_image(buf.getvalue())) == ""
    assert frames_note(vizvit.load_image(EXAMPLES / "chelsea.jpg")) == ""
