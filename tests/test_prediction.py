"""Photo.prediction: a perturbed view's top-5 and patch embeddings from one lighter forward (no
attentions or hidden states kept), held to the full Analysis of the same view: every family, heads
switched off, CLIP / SigLIP's typed labels; and read off a cached Analysis with no forward."""

from __future__ import annotations

import pytest
import torch

from tiny import EXAMPLES
from vizvit.ablation import Ablation
from vizvit.images import View
from vizvit.session import PhotoKey, Workbench

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
