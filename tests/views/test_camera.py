"""The live camera's picture (vizvit/views/camera.py): the composed picture puts a constructed map where
it points; the params fit any model and refuse nonsense; a slow model is called so; a frozen frame is
the same photo as that frame uploaded, opened with the live map's layer, heads and mode; every family
gets a live picture. The frames' sessions and slots (vizvit/service/camera.py) are tests/service/test_camera.py."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import threading
import time

import fake_camera
import matplotlib
import numpy as np
import pytest
from PIL import Image
from synthetic import pointing_attention, stand_in_analysis

from vizvit.model import engine
from vizvit.model.forwards import ForwardQueue
from vizvit.model.images import model_input_view
from vizvit.model.results import Prediction
from vizvit.pictures import figures
from vizvit.readings import attention as ra
from vizvit.service import camera
from vizvit.session import PhotoKey, Workbench
from vizvit.views import attention as attn, camera as view


def test_the_live_picture_draws_a_constructed_map_where_it_points(tiny16):
    """Every query of every layer puts 0.9 on patch (3, 9): in the picture's map part that patch's
    tile is the colour map's top colour over the grey view, every other tile the bottom one. (So
    sharp a sink is an artifact token by vizvit.readings.artifacts_rule' rule: kept in the colour range here.)"""
    g = tiny16.geometry
    r, c = 3, 9
    target = g.num_prefix_tokens + r * g.grid[1] + c
    a = stand_in_analysis(g, pointing_attention(g, target))
    p = view.CameraParams(mode="raw")
    img = view.compose(tiny16, a, dataclasses.replace(p.attn(tiny16), artifacts_in_range=True), ["a line"])
    lay = view.layout(tiny16)
    assert img.shape == (lay.height, lay.width, 3)
    tile = lay.side // g.grid[0]
    inferno = matplotlib.colormaps["inferno"]
    top = 0.6 * np.array(inferno(1.0)[:3]) * 255 + 0.4 * 128
    bottom = 0.6 * np.array(inferno(0.0)[:3]) * 255 + 0.4 * 128
    hot = img[r * tile + 4:(r + 1) * tile - 4, lay.map_x + c * tile + 4:lay.map_x + (c + 1) * tile - 4]
    cold = img[8 * tile + 4:9 * tile - 4, lay.map_x + 2 * tile + 4:lay.map_x + 3 * tile - 4]
    np.testing.assert_allclose(hot.reshape(-1, 3).mean(0), top, atol=3)
    np.testing.assert_allclose(cold.reshape(-1, 3).mean(0), bottom, atol=12)  # 0.1/N of a 0.9 peak: near 0
    # The model-input part is the view itself, enlarged, with the grid's white lines.
    inside = img[tile + 2:2 * tile - 2, tile + 2:2 * tile - 2]
    assert (inside == 128).all()
    assert (img[tile, :lay.side] == 255).all()


def test_the_params_fit_any_model_and_refuse_nonsense(tiny16):
    g = tiny16.geometry
    assert view.CameraParams(layer=0).attn(tiny16).layer == g.num_layers  # 0: the last
    assert view.CameraParams(layer=99, heads="head 99").attn(tiny16).head == g.num_heads
    ap = view.CameraParams(layer=1, heads="max of heads", mode="raw").attn(tiny16)
    assert (ap.layer, ap.show, ap.mode) == (1, "max", "raw")
    with pytest.raises(ValueError):
        view.CameraParams(heads="every head").attn(tiny16)
    with pytest.raises(ValueError):
        view.CameraParams(mode="sideways").attn(tiny16)


def test_a_slow_model_is_called_too_slow_with_its_time_and_a_small_model_named(tiny16):
    wb = Workbench(device="cpu")
    slow = view.speed_note(wb, tiny16, 0.5, 10)
    assert "too slow" in slow and "500 ms" in slow and "2.0 pictures a second" in slow
    assert "vit-tiny-patch16-224" in slow  # the fastest measured model of the list (catalog.MEASURED)
    assert "fast enough" in view.speed_note(wb, tiny16, 0.05, 10)
    assert "too slow" in view.speed_note(wb, tiny16, 0.5, 1)  # from the first picture on
    assert view.speed_note(wb, tiny16, 0.05, 1) == ""  # fast: said once a few pictures give a forward time


def test_the_fastest_model_is_not_told_to_pick_itself(trained):
    """The trained ViT-Ti, slow only because the computer is busy: no advice to pick ViT-Ti."""
    slow = view.speed_note(Workbench(device="cpu"), trained, 0.3, 10)
    assert "too slow" in slow and "already the fastest" in slow and "pick" not in slow


def test_the_pictures_a_second_are_one_number_on_the_picture_and_the_note_is_said_once(tiny16):
    """The camera page showed two pictures-a-second readings at once (16.4 on the picture, 16.6 in the note):
    the same meter read at two pictures. Now the picture's line alone says it, new with each picture, and a fast
    model's note names no rate: it is said once, not with nearly every picture (each a Gradio event, the
    note's refresh). Pictures on a clock of our own: 8 in 0.53 s, so 7 intervals in the last 0.47 s."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    now = [0.0]
    feed = camera.Feed(clock=lambda: now[0])
    notes, rates = [], []
    for i, dt in enumerate([0.06, 0.07, 0.05, 0.08, 0.06, 0.09, 0.05, 0.07]):
        now[0] += dt
        step = view.live_step(wb, feed, PhotoKey(tiny16.id, ""), fake_camera.frame_rgb(i, 30), view.CameraParams())
        assert step is not None
        notes.append(step.note)
        rates += [t[0] for t in json.loads(step.book)["texts"] if t[0].endswith("pictures/s")]
    assert len(rates) == 8 and rates[-1] == f"{7 / 0.47:.1f} pictures/s", rates  # (n - 1) / span, by hand: 14.9
    said = [n for n in notes if n is not None]
    assert len(said) == 1 and notes[2] == said[0] and "fast enough" in said[0], notes
    assert "a second now" not in said[0] and "14.9" not in said[0]


def test_frames_are_never_cached_and_a_frozen_frame_is_the_frame_uploaded(tiny16, tmp_path):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    feed = camera.Feed()
    key = PhotoKey(tiny16.id, "")
    frame = fake_camera.frame_rgb(7, 30)
    before = len(wb.cache), wb.photos_nbytes
    step = view.live_step(wb, feed, key, frame, view.CameraParams())
    assert step is not None and json.loads(step.book)["frame"] == 1 and (step.frame, step.side) == (1, 2 * 224)
    assert (len(wb.cache), wb.photos_nbytes) == before, "a camera frame was kept by the workbench"
    assert feed.last is not None and feed.done == 1
    sha1 = view.freeze(wb, feed)
    Image.fromarray(frame).save(tmp_path / "frame.png")
    assert wb.add_photo(str(tmp_path / "frame.png")) == sha1  # the same photo key as that frame uploaded
    a = wb.analysis(PhotoKey(tiny16.id, sha1))
    np.testing.assert_array_equal(a.input_view, model_input_view(Image.fromarray(frame), tiny16.preprocess))
    with pytest.raises(ValueError, match="Start"):
        view.freeze(wb, camera.Feed())


def test_freeze_keeps_the_frame_of_the_picture_the_page_shows(tiny16):
    """The page may show a picture or two behind the last one made (its answer on the way): Freeze
    with the shown picture's number keeps that picture's frame; a number no longer kept (or none)
    keeps the last; only the last RECENT pictures' frames are kept."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    feed = camera.Feed()
    frames = [fake_camera.frame_rgb(i, 30) for i in range(camera.RECENT + 2)]
    for f in frames:
        view.live_step(wb, feed, PhotoKey(tiny16.id, ""), f, view.CameraParams())
    sha = lambda f: wb.add_photo(Image.fromarray(f))  # noqa: E731 - the frame as an upload's key
    assert view.freeze(wb, feed, len(frames) - 1) == sha(frames[-2])  # picture n is frames[n - 1]
    assert view.freeze(wb, feed, 1) == sha(frames[-1])  # picture 1's frame is no longer kept
    assert view.freeze(wb, feed) == sha(frames[-1])
    assert list(feed.recent) == list(range(3, len(frames) + 1)) and len(feed.recent) == camera.RECENT


def test_freeze_opens_the_frozen_photo_with_the_live_maps_layer_heads_and_mode(tiny16):
    """Issue 43, item 5: the live page showed "rolled out" and the frozen photo opened in "raw". The
    frozen link, read back as the main page reads a link (deeplink.parse), names the same map."""
    from urllib.parse import parse_qsl, urlsplit

    from vizvit import deeplink

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    key, sha1 = PhotoKey(tiny16.id, ""), "a" * 40
    g = tiny16.geometry  # 2 layers × 2 heads
    cases = [(view.CameraParams(layer=1, heads="head 2", mode="rolled out"), (1, 2, "rolled out")),
             (view.CameraParams(layer=0, heads="max of heads", mode="raw"), (g.num_layers, "max", "raw")),
             (view.CameraParams(), (g.num_layers, "mean", "rolled out"))]  # the live page's defaults
    for p, (layer, head, mode) in cases:
        q = view.frozen_query(wb, key, sha1, p)
        assert q.startswith("./?photo=" + sha1), q
        link, notices = deeplink.parse(dict(parse_qsl(urlsplit(q).query)), [], [tiny16.id], ["attention"])
        assert not notices and (link.photo, link.tab) == (sha1, "attention"), (q, notices)
        assert (link.layer, link.head, link.mode) == (layer, head, mode), q


def test_the_live_map_shows_the_heads_switched_off(tiny16):
    """A session with heads off (Inside tab) sees the ablated model live: its frames' forwards run
    with those heads off, and the picture differs from the intact model's."""
    from vizvit.model.ablation import Ablation

    seen = []

    def run_batch(vm, requests):
        seen.extend(r.ablation for r in requests)
        return engine.analyze_batch(vm, requests)

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    wb.forwards = ForwardQueue(run_batch=run_batch)
    frame = fake_camera.frame_rgb(5, 10)
    off = Ablation(((0, 0), (1, 1)))
    p = view.CameraParams(mode="raw", layer=2, heads="head 2")
    pics = [json.loads(view.live_step(wb, camera.Feed(), PhotoKey(tiny16.id, "", a), frame, p).book)["map"]["index"]
            for a in (Ablation(), off)]
    assert seen == [Ablation(), off] and pics[0] != pics[1]


def test_on_trained_weights_the_live_map_follows_the_square(trained):
    """The trained ViT-Ti on the fake camera's frames (unmirrored, as the camera page sends them): in every
    frame of the square's pass, the default live map ([CLS] rollout, last layer, mean of heads; its
    artifact tokens left out as the colours leave them out) is higher on the square's patches than
    on the rest of the same patch rows (measured: 1.5-5.5x)."""
    g = trained.geometry
    p = view.CameraParams().attn(trained)
    for i in range(0, 27, 4):
        frame = fake_camera.frame_rgb(i, 30)
        a = engine.analyze(trained, Image.fromarray(frame))
        values = attn.main_panel(trained, a, p).values.copy()
        values[ra.artifact_stack(a, p)[p.layer - 1]] = np.nan
        x0, y0, x1, y1 = fake_camera.square_in_view(i, 30, trained.preprocess)
        rows = slice(int(y0 * g.grid[0]), int(np.ceil(y1 * g.grid[0])))
        inside = np.zeros(g.grid, bool)
        inside[rows, max(0, int(x0 * g.grid[1])):int(np.ceil(x1 * g.grid[1]))] = True
        same_rows = np.zeros(g.grid, bool)
        same_rows[rows] = True
        ratio = np.nanmean(values[inside]) / np.nanmean(values[same_rows & ~inside])
        assert ratio > 1.3, f"frame {i}: the map is {ratio:.2f}x as high on the square as beside it"


def test_a_frames_book_is_made_beside_the_next_frames_forward(tiny16, monkeypatch):
    """Only the forward waits for the session's previous frame: frame 1's book waits until frame 2's
    forward has run (it would wait forever if the book held the feed), and both pictures come."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    forwarded, seen = threading.Event(), []

    def run_batch(vm, requests):
        if seen:
            forwarded.set()  # the second frame's forward
        seen.append(len(requests))
        return engine.analyze_batch(vm, requests)

    wb.forwards = ForwardQueue(run_batch=run_batch)
    book = view.live_book

    def waiting_book(*args, **kw):
        if not forwarded.is_set():
            assert forwarded.wait(10), "the next frame's forward waited for this book"
        return book(*args, **kw)

    monkeypatch.setattr(view, "live_book", waiting_book)
    feed, key, out = camera.Feed(), PhotoKey(tiny16.id, ""), {}
    first = threading.Thread(target=lambda: out.setdefault(1, view.live_step(
        wb, feed, key, fake_camera.frame_rgb(1, 10), view.CameraParams())))
    first.start()
    while not seen:
        time.sleep(0.01)
    time.sleep(0.1)  # frame 1's forward done, its book waiting
    out[2] = view.live_step(wb, feed, key, fake_camera.frame_rgb(2, 10), view.CameraParams())
    first.join(15)
    assert out[1] is not None and out[2] is not None and (out[1].frame, out[2].frame) == (1, 2)


@pytest.mark.parametrize("params", [view.CameraParams(), view.CameraParams(layer=6, heads="head 2", mode="raw"),
                                    view.CameraParams(layer=9, heads="max of heads")])
def test_the_live_picture_is_what_the_ordinary_analysis_of_its_frame_shows(trained, params):
    """A frame through the camera (its model-input view made before the feed's lock, its book after)
    and the same frame frozen and analysed as an upload: the same probabilities and top-5, the same
    map values (the Attention tab's main panel; the camera's rollout is one row, so up to summation
    order: 1e-5), colour range, colour rows and artifact tokens, and the book's top-5 texts."""
    from vizvit.pictures import render

    kept = []

    def run_batch(vm, requests):
        kept.extend(out := engine.analyze_batch(vm, requests))
        return out

    wb = Workbench(device="cpu")
    wb.add_model(trained)
    wb.forwards = ForwardQueue(run_batch=run_batch)
    feed = camera.Feed()
    frame = fake_camera.frame_rgb(11, 30)
    step = view.live_step(wb, feed, PhotoKey(trained.id, ""), frame, params)
    assert step is not None and len(kept) == 1
    live, book = kept[0], json.loads(step.book)
    a = wb.analysis(PhotoKey(trained.id, view.freeze(wb, feed)))  # the ordinary path: an upload of the frame
    assert a is not live
    np.testing.assert_allclose(live.probs.numpy(), a.probs.numpy(), rtol=0, atol=1e-5)
    assert [t.label for t in live.top5] == [t.label for t in a.top5]
    ap = params.attn(trained)
    ref = attn.main_panel(trained, a, ap, with_image=False).values
    mm = view.live_map(live, ap)
    np.testing.assert_allclose(mm.values, ref, rtol=0, atol=1e-5)
    lo, hi = ra.main_map(a, ap).lo_hi
    assert abs(book["map"]["lo"] - lo) <= 1e-5 and abs(book["map"]["hi"] - hi) <= 1e-5
    index = np.frombuffer(base64.b64decode(book["map"]["index"]), np.uint8).reshape(trained.geometry.grid)
    assert np.abs(index.astype(int) - render.color_index(ref, lo, hi).astype(int)).max() <= 1  # a rounding edge
    assert book["map"]["art"] == np.flatnonzero(ra.artifact_stack(a, ap)[ap.layer - 1]).tolist()
    said = [t[0] for t in book["texts"] if "%  " in t[0]]  # cut to fit, with "..."
    top5 = [f"{s}  {t.label.split(',')[0]}" for t, s in zip(a.top5, figures.percents([t.prob for t in a.top5]))]
    assert len(said) == 5 and all(s == t or (s.endswith("...") and t.startswith(s[:-3])) for s, t in zip(said, top5))


@pytest.mark.parametrize("mode", ["rolled out", "raw"])
def test_every_family_and_tower_gets_a_live_picture(families, towers, mode):
    """One frame through each family (ViT, DeiT distilled, DINO v1/v2, registers, BEiT) and each
    image-text tower (CLIP, SigLIP: the default labels as classes): a book of a picture of the
    layout's size, with the model-input view, one colour row per patch and the top-5 (or labels)."""
    for vm in [*families.values(), towers["clip16"], towers["siglip16"]]:
        wb = Workbench(device="cpu")
        wb.add_model(vm)
        step = view.live_step(wb, camera.Feed(), PhotoKey(vm.id, ""), fake_camera.frame_rgb(3, 10),
                              view.CameraParams(heads="head 2", mode=mode))
        lay, g = view.layout(vm), vm.geometry
        assert step is not None, vm.id
        b = json.loads(step.book)
        assert (b["layout"]["height"], b["layout"]["width"]) == (lay.height, lay.width), vm.id
        assert decode(b["view"]).shape == (*g.image_size, 3), vm.id
        assert len(base64.b64decode(b["map"]["index"])) == g.num_patches, vm.id
        said = [t[0] for t in b["texts"]]
        assert said[0].startswith("model input") and any("pictures/s" in t for t in said), (vm.id, said)


def decode(src: str) -> np.ndarray:
    """A data: URL's picture -> its pixels."""
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))))


@pytest.mark.parametrize("query, order", [
    ({"run": "1", "n": "7"}, (1, 7)), ({"run": "3", "n": "0"}, (3, 0)),
    ({}, None), ({"run": "1"}, None), ({"n": "2"}, None), ({"run": "x", "n": "2"}, None),
    ({"run": "1", "n": "2.5"}, None), ({"run": "-1", "n": "2"}, None), ({"run": "1", "n": str(2**31)}, None),
    ({"run": "1", "n": "9" * 5000}, None),
])
def test_a_frames_place_is_read_from_the_query_or_left_out(query, order):
    """run and n as the camera page sends them; anything else keeps no order (the frame still streams).
    A 5,000-digit number is refused before Python's int() limit raises."""
    assert view.frame_order(query) == order


def test_a_frames_book_names_its_top1_for_a_screen_reader(trained):
    """The live top-5 is drawn on a canvas: the book carries its top-1, the class (what the page compares, so a
    new percent alone is not said again) and the words a screen reader hears; none without a classifier."""
    frame = Image.fromarray(fake_camera.frame_rgb(5, 30))
    a = engine.analyze(trained, frame)
    p = view.CameraParams().attn(trained)
    label, words = json.loads(view.live_book(trained, a, p, [], 1))["top1"]
    top = a.top5[0]
    assert label == top.label and words == f"Top-1: {top.label.split(',')[0]}, {figures.percent(top.prob)}", words
    assert view.top1_of(trained, dataclasses.replace(a, top5=())) is None


# chelsea's top-5 under the trained ViT-Ti (its Patches chart: 82.2% ... 0.015% hare), in full ImageNet names
CHELSEA_TOP5 = ((285, "Egyptian cat", 0.822), (281, "tabby, tabby cat", 0.093), (282, "tiger cat", 0.077),
                (287, "lynx, catamount", 0.005), (331, "hare", 0.00015))


def test_the_live_top5_reads_as_the_other_tabs_top5(trained):
    """A constructed top-5: each row and the said top-1 write the percent and the first name as the Patches chart
    does: "0.015%  hare", never "0.0%" (no chance at all beside a bar that has one), "tabby", not "tabby, tabby
    cat", and a top-1 of 80.6 % is said "80.6%", as drawn, not "81%"."""
    a = engine.analyze(trained, Image.fromarray(fake_camera.frame_rgb(5, 30)))
    a = dataclasses.replace(a, top5=tuple(Prediction(i, name, p) for i, name, p in CHELSEA_TOP5))
    assert [t for t, _ in view.top5_rows(trained, a)] == [
        "82.2%  Egyptian cat", "9.3%  tabby", "7.7%  tiger cat", "0.50%  lynx", "0.015%  hare"]
    tabby = dataclasses.replace(a, top5=(Prediction(281, "tabby, tabby cat", 0.806), *a.top5[2:]))
    assert view.top1_of(trained, tabby) == ("tabby, tabby cat", "Top-1: tabby, 80.6%")
