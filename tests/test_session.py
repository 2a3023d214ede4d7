"""One path per computation (issue 26): every cache name is a named constant or function of the module that computes
it (session.py keys them generically, issue 44), and the mean rollout is computed once per photo whichever tab, mask,
curve, export or API call asks first.
Then, by origin: Photo.prediction (merged from tests/test_prediction.py) and what is prepared before
a tab's first open (merged from tests/test_prepare.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny import EXAMPLES

import vizvit
from vizvit import session, views
from vizvit.api import PublicApi
from vizvit.methods import maps, maths as att_mod
from vizvit.model import engine
from vizvit.model.ablation import Ablation
from vizvit.model.images import View
from vizvit.readings import attention as ra, contest, embeddings as emb, masks, positions as rp
from vizvit.session import AnalysisCache, PhotoKey, Workbench
from vizvit.views import attention, embeddings, positions

PACKAGE = Path(__file__).resolve().parent.parent / "vizvit"
CACHE_CALLS = {"derived", "per_model", "peek", "peek_derived", "cache", "get_or_compute"}


def spelled_names(path: Path) -> list[str]:
    """Calls that cache under a name spelled in place (a string or tuple literal, not a named one)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name not in CACHE_CALLS:
            continue
        args = node.args[1:2] if name == "peek_derived" else node.args[:1]
        if any(isinstance(a, (ast.Constant, ast.Tuple)) for a in args):
            found.append(f"{path.parent.name}/{path.name}:{node.lineno}")
    return found


def test_views_and_the_api_spell_no_cache_name():
    files = [*sorted((PACKAGE / "views").glob("*.py")), *sorted((PACKAGE / "readings").glob("*.py")),
             PACKAGE / "api.py", PACKAGE / "methods" / "maps.py"]
    assert [hit for f in files for hit in spelled_names(f)] == [], "name what you cache in the module that computes it"


def test_session_names_no_feature_cache():
    """session.py keys any name; the names themselves belong to the modules that compute them (only the
    one result session.py computes itself, a view's lighter forward, is named there)."""
    tree = ast.parse((PACKAGE / "session.py").read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("_name")}
    names |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Name) and t.id.isupper()}
    assert names == {"view_prediction_name"}, names


def test_the_finder_finds_a_spelled_name(tmp_path):
    bad = tmp_path / "views" / "probe.py"
    bad.parent.mkdir()
    bad.write_text('def f(ph, wb, key):\n    ph.derived(("rollout", "mean"), lambda: 0)\n'
                   '    return wb.peek_derived(key, "head_importance")\n')
    assert spelled_names(bad) == ["views/probe.py:2", "views/probe.py:3"]


def test_the_mean_rollout_is_computed_once_for_every_reader(tiny16, monkeypatch):
    calls = []
    real = att_mod.rollout_stack

    def counted(att, fusion="mean", discard=0.0, *rest, **kw):
        calls.append((fusion, discard))
        return real(att, fusion, discard, *rest, **kw)

    monkeypatch.setattr(att_mod, "rollout_stack", counted)
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    photo = str(EXAMPLES / "chelsea.jpg")
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(photo)))
    attention.export_arrays(ph)  # maps, prefix rollouts, per-head rollout
    emb.data(ph)  # the scatter's rollout colours
    masks.mask_action(ph, (), "top", 10)  # a mask by rollout
    contest.curve_maps(ph)  # the curves' rollout map
    attention.change(ph, ra.AttnParams(mode="rolled out"))  # the strip, rolled out
    PublicApi(wb).rollout(photo, tiny16.id)  # the API's rollout endpoint
    assert calls == [("mean", 0.0)], "one mean rollout per photo, whoever reads it"
    assert wb.peek_derived(ph.key, maps.MEAN_ROLLOUT) is not None
    assert maps.rollout(ph.analysis(), "mean", 0.0, ph.derived) is wb.peek_derived(ph.key, maps.MEAN_ROLLOUT)


def test_cache_hit_runs_no_second_forward(tiny16, cat):
    wb = Workbench(cache_bytes=1 << 28)
    wb.add_model(tiny16)
    calls = []
    hook = tiny16.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        key = PhotoKey(tiny16.id, wb.add_photo(cat))
        a1 = wb.analysis(key)
        a2 = wb.analysis(key)
        assert a1 is a2 and len(calls) == 1
        wb.analysis(key, View(dx=3))
        wb.analysis(key, View(dx=3))
        assert len(calls) == 2
        # An evicted entry is recomputed, identically (deterministic forward).
        wb.cache.clear()
        a3 = wb.analysis(key)
        assert len(calls) == 3 and torch.equal(a3.attentions, a1.attentions)
    finally:
        hook.remove()



def test_cache_is_bounded_in_bytes():
    cache = AnalysisCache(max_bytes=1000)
    for i in range(10):
        cache.put(i, np.zeros(300, np.uint8))
    assert cache.nbytes <= 1000 and len(cache) == 3
    assert cache.get(9) is not None and cache.get(0) is None
    cache.get(7)  # touch: 7 becomes most recent, 8 is evicted next
    cache.put(10, np.zeros(300, np.uint8))
    assert 7 in cache and 8 not in cache
    cache.put("huge", np.zeros(5000, np.uint8))  # larger than the budget: not kept
    assert "huge" not in cache and cache.nbytes <= 1000



def test_concurrent_misses_compute_once():
    import threading
    import time

    cache = AnalysisCache()
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.1)
        return np.ones(3)

    threads = [threading.Thread(target=cache.get_or_compute, args=("k", slow)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1



def test_photo_store_forgets_and_says_so(cat):
    wb = Workbench(photo_bytes=1)
    s1 = wb.add_photo(cat)
    wb.add_photo(cat.rotate(90, expand=True))
    with pytest.raises(ValueError, match="upload it again"):
        wb.photo(s1)


def test_a_photo_named_by_its_key_stays_kept_as_one_uploaded_again(cat):
    """touch_photo: True for a kept photo, which becomes the most recent (a newer photo pushes out the
    other one); False for a key never kept or one pushed out, and it keeps nothing."""
    one, two, three = cat, cat.rotate(90, expand=True), cat.transpose(0)
    wb = Workbench(photo_bytes=2 * 3 * cat.width * cat.height)  # room for two photos of this size
    k1, k2 = wb.add_photo(one), wb.add_photo(two)
    assert wb.touch_photo(k1) and not wb.touch_photo("0" * 40)
    k3 = wb.add_photo(three)  # pushes out the least recent: k2, since k1 was named after it
    assert wb.touch_photo(k1) and wb.touch_photo(k3) and not wb.touch_photo(k2)



def test_a_clip_model_gets_its_default_labels_in_the_session_and_keeps_their_prompts(tmp_path, cat, monkeypatch):
    """The checkpoint loads bare (models.load_checkpoint runs no text forward); the Workbench puts the
    default labels on, caching each prompt, so a typed list of default labels runs no text tower.
    Its classes and probabilities equal vizvit.load_model's (the engine's own labelling)."""
    from tiny import make_tiny_tower

    from vizvit.model import engine, models
    from vizvit.model.zeroshot import DEFAULT_LABELS, DEFAULT_TEMPLATE

    path = str(make_tiny_tower(tmp_path / "clip", "clip"))
    assert models.load_checkpoint(path, "cpu").zero_shot is None  # the checkpoint alone: no labels
    wb = Workbench(device="cpu")
    key = PhotoKey(path, wb.add_photo(cat))
    got = wb.analysis(key)
    want = vizvit.analyze(vizvit.load_model(path, "cpu"), cat)
    assert [p.label for p in got.top5] == [p.label for p in want.top5]
    np.testing.assert_allclose(got.probs.numpy(), want.probs.numpy(), rtol=1e-6, atol=1e-7)
    calls = []
    monkeypatch.setattr(session, "text_embeddings", lambda vm, texts: calls.append(texts) or
                        engine.text_embeddings(vm, texts))
    wb.zero_shot(path, DEFAULT_LABELS[:3], DEFAULT_TEMPLATE)
    assert calls == []  # every prompt was cached when the model loaded


def test_a_model_id_is_checked_once_at_the_entry_and_trusted_below(tiny16, monkeypatch):
    """Catalog.check makes a ModelId; the Workbench and the header's model change trust one (no
    second or third check), and still check a plain string (a library caller's, the API's)."""
    from vizvit.errors import UserError
    from vizvit.model.catalog import Catalog, ModelId
    from vizvit.model.zeroshot import DEFAULT_TEMPLATE
    from vizvit.views import header

    catalog = Catalog(tiny16.id)
    wb = Workbench(device="cpu", catalog=catalog)
    listed = catalog.ids[0]
    checked = catalog.check(listed)
    assert type(checked) is ModelId and checked == listed
    checks: list[str] = []
    real = Catalog.check
    monkeypatch.setattr(Catalog, "check", lambda self, m: checks.append(m) or real(self, m))
    with pytest.raises(UserError, match="Choose a model from the page's list"):
        wb.model("google/vit-huge-patch14-224-in21k")  # not listed: refused before any loading
    assert checks == ["google/vit-huge-patch14-224-in21k"]
    checks.clear()
    assert wb.model(checked).id == listed
    change = header.new_model(wb, checked, None, "", DEFAULT_TEMPLATE, listed, False)
    assert change.loaded and change.model == listed and checks == []  # trusted all the way down
    wb.model(str(listed))  # a plain str: checked
    assert checks == [listed]


def test_load_model_is_defined_once():
    """One `def load_model` in the library and the page (engine's: the checkpoint, then the labels)."""
    root = Path(__file__).resolve().parent.parent
    found = [str(p.relative_to(root)) for d in ("vizvit", "page") for p in (root / d).rglob("*.py")
             for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "load_model"]
    assert found == ["vizvit/model/engine.py"]


# ---- From tests/test_prediction.py (merged, issue 44) ------------------------------------------
# Photo.prediction: a perturbed view's top-5 and patch embeddings from one lighter forward (no
# attentions or hidden states kept), held to the full Analysis of the same view: every family, heads
# switched off, CLIP / SigLIP's typed labels; and read off a cached Analysis with no forward.


VIEWS = (View(dx=5, dy=-3, fill="edge"), View(dx=-16, dy=7, fill="wrap"), View(dx=2, dy=0, fill="constant"))


def _photo(vm, **key):
    wb = Workbench(device="cpu")
    wb.add_model(vm)
    k = PhotoKey(vm.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg")), **key)
    return wb, wb.handle(k)


def _same(p, a):
    assert (p.input_view == a.input_view).all()
    torch.testing.assert_close(p.patch_embeddings, a.patch_embeddings, atol=1e-5, rtol=1e-5)
    if a.probs is None:
        assert p.probs is None and p.top5 == ()
        return
    torch.testing.assert_close(p.probs, a.probs, atol=1e-6, rtol=1e-5)
    assert [t.index for t in p.top5] == [t.index for t in a.top5]


def _fresh(wb, ph, view):
    """The view's prediction computed before its Analysis exists, then the Analysis."""
    assert wb.cache.get(("analysis", ph.key.model_id, ph.key.sha1, view, ph.key.ablation)) is None
    return ph.prediction(view), ph.analysis(view)


@pytest.mark.parametrize("view", VIEWS)
def test_a_views_prediction_is_its_analysis_top5_and_patches(fam, view):
    wb, ph = _photo(fam)
    _same(*_fresh(wb, ph, view))


def test_heads_switched_off_are_off_in_the_prediction_too(tiny16):
    g = tiny16.geometry
    off = Ablation(((g.num_layers - 1, 0), (0, 1)))
    wb, ph = _photo(tiny16, ablation=off)
    p, a = _fresh(wb, ph, VIEWS[0])
    _same(p, a)
    _, intact = _photo(tiny16)
    assert not torch.allclose(p.probs, intact.prediction(VIEWS[0]).probs), "the ablation changed nothing"


def test_an_image_text_models_prediction_reads_the_typed_labels(towers):
    vm = towers["clip16"]
    labels = ("a cat", "a dog", "a teapot")
    wb, ph = _photo(vm, labels=labels, template="a photo of {}")
    p, a = _fresh(wb, ph, VIEWS[1])
    _same(p, a)
    assert {t.label for t in p.top5} <= set(labels)


def test_a_cached_analysis_answers_with_no_forward(tiny16, monkeypatch):
    wb, ph = _photo(tiny16)
    a = ph.analysis(VIEWS[2])
    from vizvit import session

    monkeypatch.setattr(session, "predict_batch", lambda *a, **k: pytest.fail("a forward for a cached view"))
    _same(ph.prediction(VIEWS[2]), a)


# ---- From tests/test_prepare.py (merged, issue 44) ---------------------------------------------
# Issue 27, a tab's first open: what a tab needs of the model is made when the model is warmed, what
# it needs of a photo right after the photo's forward (in the background), and the Positions tab's
# slow part (a forward at another size) is not in its first answer.


PHOTO = str(EXAMPLES / "chelsea.jpg")


@pytest.fixture
def wb(tiny16) -> Workbench:
    w = views.attach(Workbench(device="cpu"))
    w.add_model(tiny16)
    return w


def model_keys(model_id: str) -> list[tuple]:
    size = positions.PositionsParams().size
    names = (rp.POSITIONS, positions.DRAWN, emb.FILTER_PCA, rp.positions_at_name(size),
             positions.drawn_at_name(size))
    return [session.model_key(model_id, n) for n in names]


def test_attach_gives_the_workbench_each_views_preparation(wb):
    assert embeddings.warm_model in wb.model_work and positions.warm_model in wb.model_work
    assert embeddings.warm_photo in wb.photo_work
    assert Workbench().model_work == () and Workbench().photo_work == (), "nothing prepares without attach"


def test_warm_leaves_the_models_position_tables_and_filters_and_the_photos_embeddings_cached(wb, tiny16):
    for k in model_keys(tiny16.id):
        assert k not in wb.cache, f"{k} cached before the warm-up"
    wb.warm(tiny16.id, [PHOTO])
    for k in model_keys(tiny16.id):
        assert k in wb.cache, f"{k} not cached by the warm-up"
    key = PhotoKey(tiny16.id, wb.add_photo(PHOTO))
    assert wb.peek_derived(key, emb.EMBEDDINGS) is not None, "the example's Embeddings data is not ready"


def test_prepare_later_fills_the_cache_so_a_first_open_recomputes_nothing(wb, tiny16, monkeypatch):
    key = PhotoKey(tiny16.id, wb.add_photo(PHOTO))
    wb.analysis(key)  # the photo's forward, as the upload runs it
    assert wb.peek_derived(key, emb.EMBEDDINGS) is None
    wb.prepare_later(key).result(timeout=120)
    assert wb.peek_derived(key, emb.EMBEDDINGS) is not None
    assert all(k in wb.cache for k in model_keys(tiny16.id))
    # The tabs' first open now only draws: the preparations' own computations are not run again.
    for name in ("prepare", "model_filters"):
        monkeypatch.setattr(emb, name, lambda *a, **k: pytest.fail("recomputed after prepare_later"))
    monkeypatch.setattr(positions, "model_positions", lambda *a, **k: pytest.fail("recomputed after prepare_later"))
    ph = wb.handle(key)
    embeddings.show(ph, embeddings.EmbeddingsParams())
    embeddings.rest(ph, embeddings.EmbeddingsParams())
    positions.show(ph, positions.PositionsParams())


def test_a_failing_preparation_is_logged_and_the_others_still_run(wb, tiny16, caplog):
    def broken(ph):
        raise RuntimeError("boom")

    wb.photo_work = (broken, *wb.photo_work)
    key = PhotoKey(tiny16.id, wb.add_photo(PHOTO))
    wb.prepare_later(key).result(timeout=120)
    assert "boom" in caplog.text or "broken" in caplog.text
    assert wb.peek_derived(key, emb.EMBEDDINGS) is not None


def test_the_positions_first_answer_runs_no_forward_at_another_size(wb, tiny16, monkeypatch):
    calls = []
    real = engine.predict_at_size
    monkeypatch.setattr(engine, "predict_at_size", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(PHOTO)))
    page = positions.show(ph, positions.PositionsParams(size=384))
    assert page.grid.ndim == 3 and calls == [], "the grid waited for the forward at 384 px"
    later = positions.resolution_panel(ph, 384)  # the tab's follow-up answer
    assert calls == [384] and later.text.startswith("**At 384×384 px**")


def _same_analysis(a, b) -> None:
    assert np.array_equal(a.input_view, b.input_view)
    assert torch.equal(a.attentions, b.attentions)
    if a.logits is not None:
        assert torch.equal(a.logits, b.logits)


def test_a_model_view_analysed_again_is_the_photos_own_analysis(fam, tiny16, towers, cat):
    """What a live room keeps of its photo (issue 50): the model's input view as PNG. Analysed through
    add_model_view it must be the very forward the photo had, in every family's preprocessing; and the
    processor applied to the view again would not be (a resize to 256 then a 224 crop, as DeiT's
    checkpoints do, changes a 224-pixel picture: constructed below), so the check can fail."""
    import dataclasses
    import io

    from PIL import Image

    deit_like = dataclasses.replace(tiny16, id="deit-like", preprocess=dataclasses.replace(
        tiny16.preprocess, resize=256, crop=(224, 224)))
    for vm in (fam, towers["clip16"], deit_like):
        wb = Workbench(cache_bytes=64 << 20, device="cpu")
        wb.add_model(vm)
        photo = wb.analysis(PhotoKey(vm.id, wb.add_photo(cat)))
        buf = io.BytesIO()
        Image.fromarray(photo.input_view).save(buf, "PNG")
        key = wb.add_model_view(buf.getvalue())
        assert key.startswith(Workbench.MODEL_VIEW)
        _same_analysis(wb.analysis(PhotoKey(vm.id, key)), photo)
        assert np.array_equal(wb.handle(PhotoKey(vm.id, key)).input_view(), photo.input_view)
        if vm is deit_like:  # the processor again on the view: another picture (why add_model_view exists)
            again = wb.analysis(PhotoKey(vm.id, wb.add_photo(buf.getvalue())))
            assert not np.array_equal(again.input_view, photo.input_view)


# ------------------------------------------------------------------ a file decoded once (issue 52)
def _decodes(monkeypatch) -> list:
    """Counts load_image calls made by the Workbench."""
    calls: list = []
    real = session.load_image
    monkeypatch.setattr(session, "load_image", lambda src, *a, **k: calls.append(src) or real(src, *a, **k))
    return calls


def test_the_same_file_is_decoded_once_and_keeps_its_key(monkeypatch, tmp_path):
    from PIL import Image

    calls = _decodes(monkeypatch)
    path = tmp_path / "a.png"
    Image.new("RGB", (40, 30), (200, 10, 10)).save(path)
    wb = Workbench()
    k1 = wb.add_photo(str(path))
    k2 = wb.add_photo(str(path))
    assert k1 == k2 == vizvit.model.images.image_sha1(Image.open(path).convert("RGB"))
    assert len(calls) == 1


def test_a_file_changed_since_is_decoded_again(monkeypatch, tmp_path):
    import os

    from PIL import Image

    calls = _decodes(monkeypatch)
    path = tmp_path / "a.png"
    Image.new("RGB", (40, 30), (200, 10, 10)).save(path)
    st = os.stat(path)
    wb = Workbench()
    k1 = wb.add_photo(str(path))
    Image.new("RGB", (40, 30), (10, 200, 10)).save(path)  # other pixels under the same name
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the same time: only the bytes tell
    k2 = wb.add_photo(str(path))
    assert k1 != k2 and len(calls) == 2
    assert k2 == vizvit.model.images.image_sha1(Image.new("RGB", (40, 30), (10, 200, 10)))


def test_the_same_bytes_uploaded_again_elsewhere_are_not_decoded_again(monkeypatch, tmp_path):
    """Gradio writes each upload of a photo anew (another file, or the same name rewritten): the
    bytes are the same, so is the photo."""
    from PIL import Image

    calls = _decodes(monkeypatch)
    first, again = tmp_path / "a.png", tmp_path / "b" / "a.png"
    Image.new("RGB", (40, 30), (200, 10, 10)).save(first)
    again.parent.mkdir()
    again.write_bytes(first.read_bytes())
    wb = Workbench()
    assert wb.add_photo(str(first)) == wb.add_photo(str(again)) == wb.add_photo(first.read_bytes())
    assert len(calls) == 1


def test_a_file_whose_photo_was_pushed_out_is_decoded_again(monkeypatch, tmp_path):
    from PIL import Image

    calls = _decodes(monkeypatch)
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    Image.new("RGB", (100, 100), (200, 10, 10)).save(a)
    Image.new("RGB", (100, 100), (10, 10, 200)).save(b)
    wb = Workbench(photo_bytes=3 * 100 * 100)  # room for one photo
    ka = wb.add_photo(str(a))
    wb.add_photo(str(b))  # pushes a out
    assert wb.add_photo(str(a)) == ka and len(calls) == 3
    assert wb.photo(ka).getpixel((0, 0)) == (200, 10, 10)
