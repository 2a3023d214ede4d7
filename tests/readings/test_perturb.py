"""Experiments backend: shifts, patch cosines, masks, batched sweep, faithfulness curves.

References are plain loops written here, or one-by-one `analyze` calls (a different
code path from the batched forwards under test).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vizvit
from vizvit.model import engine
from vizvit.model.images import View, shift_view
from vizvit.readings import methods, perturb
from vizvit.session import PhotoKey, Workbench
from vizvit.views import experiments


def cos_reference(base: torch.Tensor, shifted: torch.Tensor, dx: int, dy: int, g) -> np.ndarray:
    """Loops: original (i, j) vs shifted (i + int(dy/P), j + int(dx/P)), int() rounding toward 0,
    NaN without partner."""
    gh, gw = g.grid
    p = g.patch_size
    out = np.full((gh, gw), np.nan)
    for i in range(gh):
        for j in range(gw):
            si, sj = i + int(dy / p), j + int(dx / p)
            if 0 <= si < gh and 0 <= sj < gw:
                u = base[i * gw + j].double()
                v = shifted[si * gw + sj].double()
                out[i, j] = float(u @ v / (u.norm() * v.norm()))
    return out


@pytest.fixture(scope="module")
def noise_view() -> np.ndarray:
    """A 224×224 view with no black or constant patch, so every fill is visible."""
    return np.random.default_rng(1).integers(1, 255, (224, 224, 3), dtype=np.uint8)


def test_shift_zero_is_a_no_op(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    b = vizvit.analyze(tiny, cat, View(dx=0, dy=0, fill="constant"))
    assert np.array_equal(a.input_view, b.input_view)
    assert torch.equal(a.logits, b.logits)
    cos = perturb.shift_cosine(a.patch_embeddings, b.patch_embeddings, 0, 0, tiny.geometry)
    assert np.isfinite(cos).all() and np.allclose(cos, 1.0, atol=1e-6)


@pytest.mark.parametrize("dx,dy", [(1, 0), (0, 1), (1, 1), (-1, 0), (0, -1), (2, -1)])
def test_shift_of_whole_patches_with_edge_fill_gives_cosine_one(tiny, cat, dx, dy):
    """Whatever the weights: moving the grid back by whole patches compares identical pixels."""
    g = tiny.geometry
    p = g.patch_size
    a = vizvit.analyze(tiny, cat)
    b = vizvit.analyze(tiny, cat, View(dx=dx * p, dy=dy * p, fill="edge"))
    cos = perturb.shift_cosine(a.patch_embeddings, b.patch_embeddings, dx * p, dy * p, g)
    gh, gw = g.grid
    assert np.isfinite(cos).sum() == (gh - abs(dy)) * (gw - abs(dx)), "patches that leave the grid are NaN"
    assert np.allclose(cos[np.isfinite(cos)], 1.0, atol=1e-5)
    mean, low = perturb.cos_summary(cos)
    assert abs(mean - 1) < 1e-5 and abs(low - 1) < 1e-5


@pytest.mark.parametrize("dx,dy", [(1, 0), (-1, 2), (2, 2)])
def test_a_wrapped_shift_of_whole_patches_gives_every_patch_its_partner_at_cosine_one(tiny, cat, dx, dy):
    """Fill "wrap" rolls the view: the column that leaves one edge enters at the other, so every patch
    has a partner. The Experiments tab greyed them out as "no partner" and said "182 of 196 patches"
    (chelsea, 16 px, wrap, trained ViT-Ti)."""
    g = tiny.geometry
    p = g.patch_size
    a = vizvit.analyze(tiny, cat)
    b = vizvit.analyze(tiny, cat, View(dx=dx * p, dy=dy * p, fill="wrap"))
    cos = perturb.shift_cosine(a.patch_embeddings, b.patch_embeddings, dx * p, dy * p, g, wrap=True)
    assert np.isfinite(cos).all(), "every patch has a partner"
    assert np.allclose(cos, 1.0, atol=1e-5)
    # By hand, one patch past the right/bottom edge: its partner is the patch at the other side.
    gh, gw = g.grid
    ea, eb = a.patch_embeddings.reshape(gh, gw, -1), b.patch_embeddings.reshape(gh, gw, -1)
    i, j = gh - 1, gw - 1
    assert torch.allclose(ea[i, j], eb[(i + dy) % gh, (j + dx) % gw], atol=1e-5)


@pytest.mark.parametrize("dx,dy", [(5, 0), (-5, 3), (-17, -33), (31, 16), (-1, -1)])
def test_shift_cosine_matches_a_loop_rounding_toward_zero(tiny, cat, dx, dy):
    g = tiny.geometry
    if max(abs(dx), abs(dy)) > 2 * g.patch_size:
        pytest.skip("outside ±2P")
    a = vizvit.analyze(tiny, cat)
    b = vizvit.analyze(tiny, cat, View(dx=dx, dy=dy))
    got = perturb.shift_cosine(a.patch_embeddings, b.patch_embeddings, dx, dy, g)
    want = cos_reference(a.patch_embeddings, b.patch_embeddings, dx, dy, g)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.allclose(got[~np.isnan(got)], want[~np.isnan(want)], atol=1e-5)
    # Whole patches moved: −5 px and −1 px move none (every column has a partner); −17 px moves
    # one, so the first column's partner left the grid.
    p = g.patch_size
    assert np.isnan(got[:, 0]).all() == (dx <= -p)
    assert np.isnan(got[:, -1]).all() == (dx >= p)


def test_batched_predictions_equal_one_by_one_analyze(tiny, cat):
    g = tiny.geometry
    base = vizvit.analyze(tiny, cat).input_view
    ks = [0, 3, g.patch_size, 2 * g.patch_size]
    views = [shift_view(base, k, 0, "edge") for k in ks]
    pred = engine.predict_batch(tiny, views, chunk=3)  # uneven chunks on purpose
    for b, k in enumerate(ks):
        a = vizvit.analyze(tiny, base, View(dx=k, fill="edge"))
        assert torch.allclose(pred.probs[b], a.probs, atol=1e-5)
        assert torch.allclose(pred.patch_embeddings[b], a.patch_embeddings, atol=1e-5)


def test_batched_token_drop_equals_one_by_one_analyze(tiny, cat):
    g = tiny.geometry
    base = vizvit.analyze(tiny, cat).input_view
    masks = [(), (0, 5), (1, 2), (g.num_patches - 1,)]
    keeps = [engine.keep_indices(m, g) for m in masks]
    assert torch.equal(keeps[0], torch.arange(g.seq_len))
    pred = engine.predict_batch(tiny, [base] * len(masks), keeps, chunk=8)
    for b, m in enumerate(masks):
        a = vizvit.analyze(tiny, base, View(mask=m, mask_mode="drop"))
        assert torch.allclose(pred.probs[b], a.probs, atol=1e-5), m


def test_batched_sweep_equals_one_by_one(tiny, cat):
    g = tiny.geometry
    base = vizvit.analyze(tiny, cat)
    s = perturb.shift_sweep(tiny, base.input_view, chunk=5)
    assert s.done and [r.k for r in s.rows] == list(range(2 * g.patch_size + 1))
    top = base.top5[0].index
    for r in s.rows:
        a = vizvit.analyze(tiny, base.input_view, View(dx=r.k, fill="edge"))
        cos = cos_reference(base.patch_embeddings, a.patch_embeddings, r.k, 0, g)
        assert r.moved_back == r.k // g.patch_size
        assert abs(r.mean_cos - np.nanmean(cos)) < 1e-5 and abs(r.min_cos - np.nanmin(cos)) < 1e-5
        assert abs(r.base_class_prob - float(a.probs[top])) < 1e-5
        assert r.top1_index == int(a.probs.argmax()) and abs(r.top1_prob - float(a.probs.max())) < 1e-5
    arr = s.array()
    assert arr.shape == (2 * g.patch_size + 1, 4)
    assert np.allclose(arr[g.patch_size, 1:3], 1.0, atol=1e-5)  # k = P: every compared patch identical


def test_sweep_streams_progress(tiny16, cat):
    base = vizvit.analyze(tiny16, cat).input_view
    steps = list(perturb.shift_sweep_steps(tiny16, base, chunk=8))
    assert [len(s.rows) for s in steps] == [8, 16, 24, 32, 33]
    assert not steps[0].done and steps[-1].done


def test_pixel_fill_changes_exactly_the_masked_patches(tiny, noise_view):
    g = tiny.geometry
    p, gw = g.patch_size, g.grid[1]
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    from PIL import Image

    key = PhotoKey(tiny.id, wb.add_photo(Image.fromarray(noise_view)))
    mask = (0, 7, g.num_patches - 2)
    for mode in ("black", "mean", "blur"):
        panel = experiments.mask_panel(wb.handle(key), mask, mode)
        a = wb.analysis(key, View(mask=mask, mask_mode=mode))
        changed = (a.input_view != noise_view).any(-1)  # (H, W)
        for r in range(g.grid[0]):
            for c in range(gw):
                tile = changed[r * p:(r + 1) * p, c * p:(c + 1) * p]
                if r * gw + c in mask:
                    assert tile.mean() > 0.9, (mode, r, c)
                else:
                    assert not tile.any(), (mode, r, c)
        assert f"{len(mask)} of {g.num_patches}" in panel.text


def test_mask_helpers():
    grid = np.arange(12, dtype=float).reshape(3, 4)  # patch i scores i
    assert perturb.mask_by_map(grid, 0.25, top=True) == (9, 10, 11)
    assert perturb.mask_by_map(grid, 0.25, top=False) == (0, 1, 2)
    assert perturb.invert((0, 5), 6) == (1, 2, 3, 4)
    assert perturb.toggle(perturb.toggle((), 3), 3) == ()
    r = perturb.random_mask(100, 0.3, seed=4)
    assert len(r) == 30 == len(set(r)) and r == perturb.random_mask(100, 0.3, seed=4)
    assert r != perturb.random_mask(100, 0.3, seed=5)
    with pytest.raises(ValueError):
        perturb.mask_by_map(grid, 1.5)


@pytest.mark.parametrize("mode", ["black", "drop"])
def test_deletion_curves_match_one_by_one_masked_forwards(tiny, cat, mode):
    g = tiny.geometry
    base = vizvit.analyze(tiny, cat)
    known = np.arange(g.num_patches, dtype=float).reshape(g.grid)  # last patch ranks first
    maps = {"known": known, "flipped": -known, "random": np.random.default_rng(0).random(g.grid)}
    c = perturb.faithfulness_curves(tiny, base.input_view, maps, steps=4, mode=mode)
    top = base.top5[0].index
    assert c.target == top and c.deletion.shape == (3, 5) and c.insertion.shape == (3, 5)
    # 0 removed = the unmasked probability, for every map.
    assert np.allclose(c.deletion[:, 0], float(base.probs[top]), atol=1e-5)
    assert np.allclose(c.insertion[:, -1], float(base.probs[top]), atol=1e-5)
    # Step 2 of 4 removes round(P/2) patches: the highest-numbered ones for "known".
    n = int(round(0.5 * g.num_patches))
    want = vizvit.analyze(tiny, base.input_view, View(mask=tuple(range(g.num_patches - n, g.num_patches)),
                                                      mask_mode=mode))
    assert abs(c.deletion[0, 2] - float(want.probs[top])) < 1e-5
    want_ins = vizvit.analyze(tiny, base.input_view, View(mask=tuple(range(n)), mask_mode=mode))
    assert abs(c.deletion[1, 2] - float(want_ins.probs[top])) < 1e-5  # flipped deletes the low ids first
    # Insertion for "known": the n highest ids are back, the other P - n stay masked.
    kept_low = vizvit.analyze(tiny, base.input_view, View(mask=tuple(range(g.num_patches - n)), mask_mode=mode))
    assert abs(c.insertion[0, 2] - float(kept_low.probs[top])) < 1e-5
    # Shared masks (nothing removed, everything removed) ran once.
    assert c.forwards < 3 * 2 * 5
    # Area under the curve: a plain trapezoid sum.
    f = c.fractions
    for m in range(3):
        area = sum((f[s + 1] - f[s]) * (c.deletion[m, s] + c.deletion[m, s + 1]) / 2 for s in range(4))
        assert abs(c.deletion_auc[m] - area) < 1e-9


def test_ranking_maps_are_the_attention_maps(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    g = tiny.geometry
    maps = methods.ranking_maps(tiny, a, seed=3)  # the one map-method registry, vizvit.readings.methods
    # every registered map but the slow attention flow (a job of its own: issue 32), in registry order
    assert list(maps) == ["rollout", "last-layer [CLS] attention", "random", "class relevance", "gradient rollout",
                          "LeGrad", "Grad-CAM", "AttnLRP"]
    assert all(m.shape == g.grid for m in maps.values())
    last = a.attentions[-1]  # (H, N, N)
    want = np.zeros(g.grid)
    for h in range(g.num_heads):
        want += last[h, 0, 1:].reshape(g.grid).numpy() / g.num_heads
    assert np.allclose(maps["last-layer [CLS] attention"], want, atol=1e-6)


def test_concurrent_sweep_and_token_drop_do_not_share_hooks(tiny16, cat):
    """Hooks sit on the one shared model: a token drop running during a batched sweep must
    neither drop tokens from the sweep's batch nor read the sweep's patches."""
    import threading

    base = vizvit.analyze(tiny16, cat).input_view
    want_sweep = perturb.shift_sweep(tiny16, base, chunk=2).array()
    view = View(mask=(1, 2, 3), mask_mode="drop")
    want = vizvit.analyze(tiny16, base, view)
    got: list = []
    t = threading.Thread(target=lambda: got.append(perturb.shift_sweep(tiny16, base, chunk=2).array()))
    t.start()
    drops = [vizvit.analyze(tiny16, base, view) for _ in range(20)]
    t.join()
    assert np.allclose(got[0], want_sweep, atol=1e-5)
    assert all(torch.allclose(d.logits, want.logits, atol=1e-5) for d in drops)




def test_random_orders_spread_and_band():
    orders = perturb.random_orders((14, 14), 10, seed=3)
    assert len(orders) == 10 and all(m.shape == (14, 14) for m in orders.values())
    # order 1 is maps' "random" map of the same seed: the contestant and the band share its views
    assert np.array_equal(orders["random order 1"], np.random.default_rng(3).random((14, 14)))
    assert len({m.tobytes() for m in orders.values()}) == 10
    s = perturb.spread([1.0, 2.0, 3.0, 4.0])
    assert s.mean == 2.5 and abs(s.sd - 1.2909944) < 1e-6 and s.n == 4  # sd with ddof = 1, by hand
    assert perturb.against_band(1.0, s, higher_is_better=False) == "better"
    assert perturb.against_band(1.0, s, higher_is_better=True) == "worse"
    assert perturb.against_band(s.low, s, higher_is_better=True) == "within"
    assert perturb.against_band(4.0, s, higher_is_better=True) == "better"
    with pytest.raises(ValueError):
        perturb.spread([0.5])


def test_a_wrapped_sweep_compares_every_patch_with_its_partner_across_the_edge(tiny16, cat):
    """shift_sweep_steps takes a fill; with "wrap" the view is rolled, so a patch whose partner moves past the
    right edge has it at the left (as shift_panel reads it since 0c24b6e). The sweep read those patches as
    having no partner: its mean and min left the last columns out."""
    g = tiny16.geometry
    p, (gh, gw) = g.patch_size, g.grid
    base = vizvit.analyze(tiny16, cat)
    s = perturb.shift_sweep(tiny16, base.input_view, fill="wrap", chunk=11)
    for k in (p + 3, 2 * p - 1):
        b = vizvit.analyze(tiny16, base.input_view, View(dx=k, fill="wrap"))
        ea, eb = base.patch_embeddings.reshape(gh, gw, -1), b.patch_embeddings.reshape(gh, gw, -1)
        cos = [float(torch.nn.functional.cosine_similarity(ea[i, j], eb[i, (j + k // p) % gw], dim=0))
               for i in range(gh) for j in range(gw)]  # every patch, its partner by hand
        r = s.rows[k]
        assert r.k == k and abs(r.mean_cos - np.mean(cos)) < 1e-5 and abs(r.min_cos - np.min(cos)) < 1e-5, k
