"""The head importance (vizvit/readings/heads.py): each (layer, head) against the model run with that head alone
zeroed, streamed per batch and cached per photo."""

from __future__ import annotations

import numpy as np
import pytest
from ablated import reference_importance

import vizvit
from vizvit.model import truncated
from vizvit.model.ablation import Ablation
from vizvit.model.images import to_pixel_values
from vizvit.readings import heads
from vizvit.session import PhotoKey, Workbench


def photo_of(vm, image):
    wb = Workbench(device="cpu")
    wb.add_model(vm)
    return wb.handle(PhotoKey(vm.id, wb.add_photo(image)))


def test_head_importance_equals_single_ablations_one_by_one(tiny, cat):
    ph = photo_of(tiny, cat)
    wb = ph.wb
    assert heads.cached_importance(ph) is None
    imp = heads.head_importance(ph, chunk=3)  # chunks that cut across layers
    g = tiny.geometry
    base = ph.analysis()
    c = base.top5[0].index
    for l in range(g.num_layers):
        for h in range(g.num_heads):
            one = vizvit.analyze(tiny, cat, ablation=Ablation(((l, h),)))
            assert imp[l, h] == pytest.approx(float(base.probs[c] - one.probs[c]), abs=1e-5)
    assert wb.peek_derived(ph.key, heads.HEAD_IMPORTANCE) is not None, "cached per photo"
    assert np.array_equal(heads.cached_importance(ph), imp)


def test_the_stream_fills_the_grid_batch_by_batch_then_answers_at_once(tiny, cat):
    ph = photo_of(tiny, cat)
    g = tiny.geometry
    total = g.num_layers * g.num_heads
    steps = list(heads.importance_steps(ph, chunk=3))
    dones = [done for _, done, _ in steps]
    assert dones == sorted(dones) and dones[-1] == total and all(0 < b - a <= 3 for a, b in zip([0, *dones], dones))
    assert all(t == total for _, _, t in steps)
    assert [int(np.isnan(imp).sum()) for imp, _, _ in steps] == [total - done for _, done, _ in steps]
    again = list(heads.importance_steps(ph, chunk=3))
    assert len(again) == 1 and again[0][1:] == (total, total) and np.array_equal(again[0][0], steps[-1][0])


@pytest.mark.parametrize("name", ["p32", "deit", "beit", "clip32", "siglip16", "dinov2_cls", "dinov2_reg_cls"])
def test_the_importance_is_that_of_whole_forwards_with_one_head_zeroed(families, towers, dino_classifiers, tiny_dirs,
                                                                       cat, name):
    """Each family (DINOv2's classifiers, whose head reads [CLS] ⊕ the patch mean, too): the importance (each
    run from the analysis' state entering the head's layer) against L·H whole forwards with that head zeroed by
    the tests' own hook (tests/ablated.py)."""
    vm = (vizvit.load_model(str(tiny_dirs["p32"]), device="cpu") if name == "p32"
          else {**families, **towers, **dino_classifiers}[name])
    assert truncated.starts_inside(vm.family, vm.model), "run from inside, not by whole forwards"
    ph = photo_of(vm, cat)
    want = reference_importance(vm, to_pixel_values(ph.analysis().input_view, vm.preprocess))
    np.testing.assert_allclose(heads.head_importance(ph), want, rtol=0, atol=1e-5)
    assert np.abs(want).max() > 1e-4, "some head must matter"


def test_on_the_trained_vit_ti_too(trained, cat):
    ph = photo_of(trained, cat)
    want = reference_importance(trained, to_pixel_values(ph.analysis().input_view, trained.preprocess))
    np.testing.assert_allclose(heads.head_importance(ph), want, rtol=0, atol=1e-5)
    assert want.max() > 0.1, "a trained ViT-Ti has heads its answer leans on"


def check_the_mean_mode(vm, cat):
    """The radio on "mean": the run measured by zeroing all the same. Now each head is set to its mean over the
    photo's tokens, as the tests' own hook does it in whole forwards; the zero run is kept beside it."""
    ph = photo_of(vm, cat)
    pixels = to_pixel_values(ph.analysis().input_view, vm.preprocess)
    want = reference_importance(vm, pixels, mode="mean")
    got = heads.head_importance(ph, chunk=3, mode="mean")
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    zeroed = reference_importance(vm, pixels)
    assert np.abs(want - zeroed).max() > 1e-3, "the two modes differ on this photo: the test tells them apart"
    assert heads.cached_importance(ph) is None and np.array_equal(heads.cached_importance(ph, "mean"), got)
    np.testing.assert_allclose(heads.head_importance(ph), zeroed, rtol=0, atol=1e-5)


def test_with_the_mean_mode_each_head_is_set_to_its_mean(tiny, cat):
    check_the_mean_mode(tiny, cat)


def test_with_the_mean_mode_on_the_trained_vit_ti_too(trained, cat):
    check_the_mean_mode(trained, cat)
