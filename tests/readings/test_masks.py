"""The mask readings (vizvit/readings/masks.py): each button's mask on constructed cases, and "top / bottom k %"
against a plain reference ranking (vit-explain's rollout; a class map read by its own name)."""

from __future__ import annotations

import numpy as np
import pytest
from vit_explain import vit_explain_rollout

from vizvit.errors import UserError
from vizvit.readings import masks, methods, perturb
from vizvit.session import PhotoKey, Workbench


@pytest.fixture
def photo(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    return wb.handle(PhotoKey(tiny16.id, wb.add_photo(cat)))


def test_a_mask_keeps_only_the_grids_patch_ids_sorted_once(tiny16):
    P = tiny16.geometry.num_patches
    assert masks.clean_mask([5, -1, P, 3, 5, P - 1], tiny16.geometry) == (3, 5, P - 1)
    assert masks.clean_mask(None, tiny16.geometry) == ()


def test_clear_invert_and_random(photo):
    P = photo.vm.geometry.num_patches
    assert masks.mask_action(photo, (1, 2), "clear", 10) == ()
    inv = masks.mask_action(photo, (1, 2, P + 4), "invert", 10)
    assert set(inv) == set(range(P)) - {1, 2} and list(inv) == sorted(inv)
    r = masks.mask_action(photo, (), "random", 25, seed=3)
    assert len(r) == round(0.25 * P) == len(set(r)) and r == masks.mask_action(photo, (), "random", 25, seed=3)


def test_top_and_bottom_by_rollout_are_the_plain_rollouts_ranking(photo):
    a = photo.analysis()
    ref = vit_explain_rollout([x[None].float() for x in a.attentions], 0.0, "mean", keepdim=True).ravel()
    P = photo.vm.geometry.num_patches
    k = round(0.1 * P)
    top = masks.mask_action(photo, (), "top", 10)
    bottom = masks.mask_action(photo, (), "bottom", 10)
    assert set(top) == set(np.argsort(-ref)[:k].tolist())
    assert set(bottom) == set(np.argsort(ref)[:k].tolist())


def test_a_class_map_ranks_by_the_top1_class(photo):
    a = photo.analysis()
    for by in ("LeGrad", "Grad-CAM", "gradient rollout"):  # masks by any map (issue 32), the same map as elsewhere
        want = perturb.mask_by_map(methods.class_map(by, photo.vm, a, a.top5[0].index), 0.1)
        assert masks.mask_action(photo, (), "top", 10, rank_by=by) == want


def test_an_unknown_action_or_map_is_refused(photo):
    with pytest.raises(UserError):
        masks.mask_action(photo, (), "sideways", 10)
    with pytest.raises(UserError):
        masks.mask_action(photo, (), "top", 10, rank_by="no such map")
    assert masks.MASK_MAPS[0] == methods.ROLLOUT.name
