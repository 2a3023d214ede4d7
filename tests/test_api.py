"""The public API through gradio_client, as another program meets it: the documented endpoints
answer with plain JSON, and every one refuses a model off the page's list (before loading it)
and values that would make one request expensive."""

from __future__ import annotations

import time

import numpy as np
import pytest
from appserver import page_name, serving
from gradio_client import Client, handle_file
from tiny import EXAMPLES

from page.endpoints import PUBLIC_ENDPOINTS

PHOTO = str(EXAMPLES / "chelsea.jpg")


@pytest.fixture(scope="module")
def served(tiny16):
    with serving(tiny16) as (url, wb):
        yield Client(url, verbose=False), wb


def photo_args(name: str) -> dict:
    """The photo argument of each endpoint that takes one."""
    return {} if name == "positions" else {"photo": handle_file(PHOTO)}


@pytest.mark.parametrize("bad_model", ["/tmp", "../", "openai/clip-vit-large-patch14",
                                       "random:vit-large-patch16-384", "", 42])
# stats: no model; compare: two models (its own test below, each side refused)
# the room endpoints after room_open take no model: the room has it
@pytest.mark.parametrize("endpoint", [e for e in PUBLIC_ENDPOINTS if e not in ("stats", "compare")
                                      and (e == "room_open" or not e.startswith("room_"))])
def test_every_endpoint_refuses_a_model_off_the_list_before_loading_it(served, endpoint, bad_model, tiny_dirs):
    client, wb = served
    if bad_model == "/tmp":
        bad_model = str(tiny_dirs["p32"])  # a real checkpoint on the server, but not on the page's list
    with pytest.raises(Exception, match="Choose a model from the page's list") as e:
        client.predict(**photo_args(endpoint), model=bad_model, api_name=f"/{endpoint}")
    assert "Traceback" not in str(e.value)
    assert list(wb._models) == [app_model_id(wb)], "nothing else was loaded"


def app_model_id(wb) -> str:
    return next(iter(wb._models))


@pytest.mark.parametrize("endpoint, kwargs, message", [
    ("attention", dict(layer=0), "layer must be"),
    ("attention", dict(layer=3), "layer must be"),
    ("attention", dict(layer=1.5), "layer must be"),
    ("attention", dict(head=3), "head must be"),
    ("attention", dict(head="median"), "head must be"),
    ("attention", dict(mode="sideways"), "mode must be"),
    ("attention", dict(query_row=14, query_col=0), "query_row must be"),
    ("rollout", dict(discard=1.0), "discard must be"),
    ("rollout", dict(fusion="sum"), "fusion must be"),
    ("positions", dict(row=-1), "row must be"),
    ("positions", dict(col=10 ** 9), "col must be"),
    ("predict", dict(dx=33), "dx must be"),
    ("predict", dict(dy=-10 ** 6), "dy must be"),
    ("predict", dict(mask=list(range(197))), "mask must be a list of at most 196"),
    ("predict", dict(mask=[196]), "mask index must be"),
    ("predict", dict(mask=list(range(196))), "at least one patch"),
    ("predict", dict(fill="mirror"), "fill"),
    ("predict", dict(mask_mode="erase"), "mask mode"),
    ("relevance", dict(class_index=7), "class_index must be"),
    ("compare", dict(depth=0), "depth must be"),
    ("compare", dict(depth=1.01), "depth must be"),
    ("compare", dict(depth="deep"), "depth must be"),
    ("relevance", dict(method="SmoothGrad"), "method must be one of"),
    # true/false and text are not numbers: float() read them as 1, 0 or what they spell (a stranger's probe)
    ("attention", dict(layer=True), "layer must be"),
    ("relevance", dict(class_index=True), "class_index must be"),
    ("predict", dict(dx=True), "dx must be"),
    ("predict", dict(mask=["1", "2"]), "mask index must be"),
    ("predict", dict(mask=[True, False]), "mask index must be"),
    ("compare", dict(depth=True), "depth must be"),
    ("compare", dict(depth="0.5"), "depth must be"),
    # a JSON int past a float's range: math.isfinite(10**400) raised OverflowError ("Something went wrong")
    ("positions", dict(row=10 ** 400), "row must be"),
    ("attention", dict(layer=-10 ** 400), "layer must be"),
    # float(10**400) raises OverflowError too: /rollout's discard and /compare's depth read it with float()
    ("rollout", dict(discard=10 ** 400), "discard must be"),
    ("compare", dict(depth=-10 ** 400), "depth must be"),
])
def test_out_of_range_values_are_refused_in_the_backend(served, tiny16, endpoint, kwargs, message):
    client, _ = served
    with pytest.raises(Exception, match=f"(?i){message}"):
        models = dict(model_a=page_name(tiny16)) if endpoint == "compare" else dict(model=page_name(tiny16))
        client.predict(**photo_args(endpoint), **models, **kwargs, api_name=f"/{endpoint}")


def test_attention_map_equals_the_cached_analysis(served, tiny16):
    """The JSON map is [CLS]'s row of that layer and head, rows of the patch grid."""
    client, wb = served
    r = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), layer=2, head=2, api_name="/attention")
    a = vizvit_analysis(tiny16)
    expected = a.attentions[1, 1, 0, 1:].reshape(14, 14).numpy()
    assert np.allclose(np.array(r["map"]), expected, atol=1e-6)
    assert r["uniform_level"] == pytest.approx(1 / 197) and r["query"] == "[CLS]"
    # "2" as text, as a REST caller may send the int | str head (a walk-through: it was refused)
    text = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), layer=2, head="2", api_name="/attention")
    assert np.allclose(np.array(text["map"]), expected, atol=1e-6)


def vizvit_analysis(vm):
    import vizvit

    return vizvit.analyze(vm, vizvit.load_image(PHOTO))


def test_predict_under_a_mask_and_the_rest_answer_json(served, tiny16):
    client, _ = served
    r = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), dx=3, mask=[0, 5, 5], api_name="/predict")
    assert r["mask"] == [0, 5] and len(r["top5"]) == 5 and r["top5"] != r["unperturbed_top5"]
    roll = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), api_name="/rollout")
    assert np.array(roll["maps"]).shape == (2, 14, 14)
    pos = client.predict(model=page_name(tiny16), row=3, col=4, api_name="/positions")
    assert np.array(pos["similarity"])[3, 4] == pytest.approx(1.0, abs=1e-5)  # a position with itself
    sweep = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), api_name="/sweep")
    assert [row["k"] for row in sweep["rows"]] == list(range(33))
    rel = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), api_name="/relevance")
    assert np.array(rel["map"]).shape == (14, 14) and "2021b" in rel["method"]
    from vizvit.readings import methods
    a = vizvit_analysis(tiny16)
    # The same maps as the Attention tab's menu.
    for method in ("gradient rollout", "LeGrad", "LeGrad (token mean)", "Grad-CAM"):
        r = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), class_index=2, method=method,
                           api_name="/relevance")
        assert np.allclose(np.array(r["map"]), methods.class_map(method, tiny16, a, 2), atol=1e-5), method


def test_predict_with_the_mask_token(served, tiny16):
    """mask_mode="mask": the [MASK] token (zeros, never trained, for this ViT classifier) as the engine gives it."""
    import vizvit
    from vizvit.model.images import View

    client, _ = served
    r = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), mask=[0, 5, 17], mask_mode="mask",
                       api_name="/predict")
    a = vizvit.analyze(tiny16, vizvit.load_image(PHOTO), View(mask=(0, 5, 17), mask_mode="mask"))
    assert r["mask_mode"] == "mask" and [p["label"] for p in r["top5"]] == [p.label for p in a.top5]
    assert r["top5"][0]["prob"] == pytest.approx(a.top5[0].prob, abs=1e-5)


# Model B of /compare: the random twin of the listed WinKawaks/vit-tiny-patch16-224 (the gate takes a
# listed model's twin: same architecture, no download), 12 layers against the tiny model's 2.
TWIN = "random:vit-tiny-patch16-224"


@pytest.mark.parametrize("bad_model", ["/tmp", "openai/clip-vit-large-patch14", "random:vit-large-patch16-384", ""])
def test_compare_refuses_a_model_off_the_list_on_either_side_before_loading_either(served, tiny16, tiny_dirs,
                                                                                  bad_model):
    client, wb = served
    if bad_model == "/tmp":
        bad_model = str(tiny_dirs["p32"])  # a real checkpoint on the server, not on the list
    before = set(wb._models)
    for a, b in ((bad_model, TWIN), (page_name(tiny16), bad_model), (TWIN, bad_model)):
        with pytest.raises(Exception, match="Choose a model from the page's list") as e:
            client.predict(photo=handle_file(PHOTO), model_a=a, model_b=b, api_name="/compare")
        assert "Traceback" not in str(e.value)
    assert set(wb._models) == before, "neither model was loaded"


# depth -> (layer of the 2-layer tiny model, layer of the 12-layer twin): ceil(depth·L), by hand.
LAYERS = {1.0: (2, 12), 0.5: (1, 6), 0.25: (1, 3), 0.05: (1, 1), 0.75: (2, 9)}


def test_compare_equals_two_single_model_calls(served, tiny16):
    """Both sides of /compare are what /rollout (that layer) and /analyze (top-5) return for each
    model alone."""
    client, _ = served
    photo, m = handle_file(PHOTO), page_name(tiny16)
    alone = {model: (np.array(client.predict(photo=photo, model=model, api_name="/rollout")["maps"]),
                     client.predict(photo=photo, model=model, api_name="/analyze")["top5"]) for model in (m, TWIN)}
    assert alone[m][0].shape == (2, 14, 14) and alone[TWIN][0].shape == (12, 14, 14)
    for depth, layers in LAYERS.items():
        r = client.predict(photo=photo, model_a=m, model_b=TWIN, depth=depth, api_name="/compare")
        for side, model, layer in (("a", m, layers[0]), ("b", TWIN, layers[1])):
            maps, top5 = alone[model]
            assert r[side]["layer"] == layer, (depth, side)
            assert np.allclose(np.array(r[side]["rollout"]), maps[layer - 1], atol=1e-6, rtol=0), (depth, side)
            assert r[side]["top5"] == top5
        x, y = maps_of(alone, m, layers[0]), maps_of(alone, TWIN, layers[1])
        assert r["rollout_cosine"] == pytest.approx(float(x @ y / np.linalg.norm(x) / np.linalg.norm(y)), abs=1e-5)
    assert r["b"]["untrained"] and r["b"]["prefix_tokens"] == ["[CLS]"]


def maps_of(alone: dict, model: str, layer: int) -> np.ndarray:
    return alone[model][0][layer - 1].ravel()


# Issue 52: each reading of a photo but /analyze takes the photo's key from /analyze's answer instead
# of the file (no upload again), as its last argument. Each endpoint's own arguments: the tiny model
# on both sides of /compare, relevance by a class map (attention flow: test_flow).
BY_KEY = {"attention": dict(layer=2, head=1, query_row=3, query_col=4), "rollout": dict(discard=0.5),
          "compare": dict(depth=0.5), "predict": dict(dx=5, mask=[1, 2]), "sweep": {},
          "relevance": dict(class_index=3, method="Grad-CAM")}


def models_of(endpoint: str, vm) -> dict:
    return dict(model_a=page_name(vm), model_b=page_name(vm)) if endpoint == "compare" else dict(model=page_name(vm))


def test_a_photo_named_by_its_key_reads_as_the_file_itself(served, tiny16):
    """The key /analyze answered is the photo's: SHA-1 of its size, mode and pixels (computed here by hand),
    and every endpoint answers for the key exactly as for the file, in either case of hex digit."""
    import hashlib

    from PIL import Image

    client, _ = served
    sha1 = client.predict(handle_file(PHOTO), page_name(tiny16), api_name="/analyze")["photo_sha1"]
    im = Image.open(PHOTO).convert("RGB")
    assert sha1 == hashlib.sha1(f"{im.size}{im.mode}".encode() + im.tobytes()).hexdigest()
    for endpoint, kwargs in BY_KEY.items():
        models = models_of(endpoint, tiny16)
        by_file = client.predict(photo=handle_file(PHOTO), **models, **kwargs, api_name=f"/{endpoint}")
        by_key = client.predict(photo_sha1=sha1, **models, **kwargs, api_name=f"/{endpoint}")
        assert by_key == by_file, endpoint
    att = dict(**models_of("attention", tiny16), **BY_KEY["attention"], api_name="/attention")
    assert client.predict(photo_sha1=sha1.upper(), **att) == client.predict(photo=handle_file(PHOTO), **att)


@pytest.mark.parametrize("endpoint", list(BY_KEY))
@pytest.mark.parametrize("args, message", [
    (dict(photo_sha1="0" * 40), "holds no photo with that photo_sha1"),  # well formed, never uploaded
    (dict(photo_sha1="abc"), "photo_sha1 must be the 40 hex digits"),
    (dict(photo_sha1="g" * 40), "photo_sha1 must be the 40 hex digits"),
    (dict(photo_sha1="0" * 41), "photo_sha1 must be the 40 hex digits"),
    (dict(photo_sha1="view-" + "0" * 40), "photo_sha1 must be the 40 hex digits"),  # a room's model view
    (dict(photo_sha1="../../etc/passwd"), "photo_sha1 must be the 40 hex digits"),
    (dict(photo_sha1=42), "photo_sha1 must be the 40 hex digits"),
    (dict(photo=handle_file(PHOTO), photo_sha1="0" * 40), "either photo or photo_sha1, not both"),
    ({}, "photo must be an uploaded file .* or photo_sha1"),  # neither
])
def test_a_key_that_is_no_kept_photo_or_comes_with_the_file_is_refused(served, tiny16, endpoint, args, message):
    client, _ = served
    with pytest.raises(Exception, match=message) as e:
        client.predict(**args, **models_of(endpoint, tiny16), api_name=f"/{endpoint}")
    assert "Traceback" not in str(e.value)


def test_an_upload_pushed_out_before_its_forward_is_kept_again_a_held_key_is_not(tiny16):
    """An audit, with a small --photo-mb and six large uploads at once: a fresh upload was pushed out of the
    photos' budget between its keeping and its forward, and /analyze answered "no longer in memory". The
    caller sent the file: it is kept again. A photo named by its key is gone once pushed out."""
    from vizvit.api import Held, PublicApi
    from vizvit.session import PhotoGone, Workbench

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    real = wb.analysis
    pushed = []

    def push_out_first(key, *args, **kwargs):
        if not pushed:  # another upload took the budget just now
            pushed.append(key.sha1)
            wb._photos.pop(key.sha1, None)
        return real(key, *args, **kwargs)

    wb.analysis = push_out_first
    answer = PublicApi(wb).analyze(PHOTO, tiny16.id)
    assert pushed == [answer["photo_sha1"]] and len(answer["top5"]) == 5
    pushed.clear()
    wb.cache.clear()  # no cached analysis: the forward needs the photo, pushed out again before it
    with pytest.raises(PhotoGone):
        PublicApi(wb).analyze(Held(answer["photo_sha1"]), tiny16.id)
    assert len(pushed) == 1  # not tried again: a key names a photo the server holds, or none


# ------------------------------------------------------------------ rooms measured ahead, a few at once
def test_rooms_opened_together_are_measured_ahead_a_few_at_once(tiny16, monkeypatch):
    """Each room's steps are measured ahead in the background. Before, a thread per room measured at
    once: twelve rooms opened together took the trained ViT-Ti server from 637 to 1,138 MB (the budgets'
    line 1,033) and 18 to 45 threads. Now ROOMS_MEASURED_AT_ONCE threads take them in turn."""
    import threading

    from vizvit import api as api_mod
    from vizvit.api import ROOMS_MEASURED_AT_ONCE, PublicApi
    from vizvit.classroom.room import Rooms
    from vizvit.session import Workbench

    monkeypatch.setattr(PublicApi, "_measurers", api_mod.Measurers(ROOMS_MEASURED_AT_ONCE))  # this test's own
    release, lock = threading.Event(), threading.Lock()
    running, peak = [0], [0]
    real = PublicApi._room_ready

    def held(self, code, n):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        try:
            release.wait(60)  # every measure holds on until the test has counted the threads
            return real(self, code, n)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(PublicApi, "_room_ready", held)
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(tiny16)
    api = PublicApi(wb, None, Rooms(max_per_owner=10, roomy_per_owner=10))
    before = set(threading.enumerate())  # an earlier test's pool may still idle here
    codes = [api.room_open(PHOTO, tiny16.id, owner="10.0.0.1")["code"] for _ in range(5)]
    measuring = [t for t in threading.enumerate() if t not in before and t.name.startswith("room-")]
    release.set()
    assert len(measuring) <= ROOMS_MEASURED_AT_ONCE, [t.name for t in measuring]
    end = time.monotonic() + 120
    while not all(api.rooms.measured(c) for c in codes) and time.monotonic() < end:
        time.sleep(0.05)  # the rooms' own state: every step measured
    assert all(api.rooms.measured(c) for c in codes), "a room waiting its turn was never measured"
    assert peak[0] <= ROOMS_MEASURED_AT_ONCE
