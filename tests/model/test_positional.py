"""Positions tab: position-embedding similarity against plain loops and hand-made inputs."""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch

from vizvit.errors import UserError
from vizvit.model import engine, positional
from vizvit.model.engine import analyze
from vizvit.pictures import render
from vizvit.session import PhotoKey, Workbench
from vizvit.views import positions as positions_panel


def table_of(vm) -> np.ndarray:
    """The raw (N, D) table straight from the model; [CLS] is row 0 in HF's ViT."""
    return vm.model.vit.embeddings.position_embeddings.detach()[0].numpy().astype(np.float64)


def cos(u: np.ndarray, v: np.ndarray) -> float:
    return float(np.dot(u, v) / (math.sqrt(np.dot(u, u)) * math.sqrt(np.dot(v, v))))


def with_positions(vm, table: torch.Tensor):
    """A copy of vm whose position table is `table` (N, D): the fixture stays untouched."""
    model = copy.deepcopy(vm.model)
    with torch.no_grad():
        model.vit.embeddings.position_embeddings.copy_(table[None])
    return dataclasses.replace(vm, model=model)


def test_similarity_matches_a_per_pair_loop_and_excludes_cls(tiny, cat):
    g = tiny.geometry
    t = table_of(tiny)
    r = positional.position_report(engine.position_tables(tiny))
    P = g.num_patches
    assert r.sim.shape == (P, P) and r.sim.dtype == np.float32
    ref = np.array([[cos(t[1 + i], t[1 + j]) for j in range(P)] for i in range(P)])
    np.testing.assert_allclose(r.sim, ref, atol=1e-5, err_msg="(P, P) similarity differs from the pair loop")
    cls_ref = np.array([cos(t[0], t[1 + j]) for j in range(P)]).reshape(g.grid)
    np.testing.assert_allclose(r.cls_sim, cls_ref, atol=1e-5, err_msg="[CLS] map differs from the pair loop")
    wb = Workbench()
    wb.add_model(tiny)
    arrays = positions_panel.export_arrays(wb.handle(PhotoKey(tiny.id, wb.add_photo(cat))))
    assert arrays["pos_similarity"].shape == (P, P) and arrays["pos_similarity"].dtype == np.float32
    assert arrays["cls_pos_similarity"].shape == g.grid
    np.testing.assert_allclose(arrays["pos_similarity"], ref, atol=1e-5)


def test_tile_r_c_pixel_k_m_is_sim_of_rc_and_km(tiny, rng):
    gh, gw = tiny.geometry.grid
    P = gh * gw
    # Values on the colour table's own steps, so each pixel's colour names its value exactly.
    code = rng.integers(0, 256, (P, P))
    sim = (code / 255 * 2 - 1).astype(np.float32)
    cell = positions_panel.tile_cell((gh, gw))
    img = positions_panel.similarity_grid(sim, (gh, gw), cell)
    lut = render.colorize(np.linspace(-1, 1, 256)[None], positions_panel.CMAP, -1, 1)[0]  # (256, 3)
    tile_h = gh * cell + positions_panel.SEP
    tile_w = gw * cell + positions_panel.SEP
    for r in range(gh):
        for c in range(gw):
            for k in range(gh):
                for m in range(gw):
                    y = r * tile_h + k * cell + cell // 2
                    x = c * tile_w + m * cell + cell // 2
                    want = lut[code[r * gw + c, k * gw + m]]
                    assert (img[y, x] == want).all(), f"tile ({r},{c}) pixel ({k},{m})"
            # A click in the middle of tile (r, c) names it.
            assert positions_panel.tile_at(c * tile_w + tile_w / 2, r * tile_h + tile_h / 2, (gh, gw), cell) == (r, c)
    assert positions_panel.tile_at(img.shape[1] + 20, 5, (gh, gw), cell) is None  # on the colour bar


def test_sinusoidal_1d_by_hand():
    pe = positional.sinusoidal_1d(5, 4).numpy()
    # d = 4: frequencies 1 and 1/10000^(2/4) = 1/100.
    for pos in range(5):
        want = [math.sin(pos), math.cos(pos), math.sin(pos / 100), math.cos(pos / 100)]
        np.testing.assert_allclose(pe[pos], want, atol=1e-6, err_msg=f"position {pos}")
    with pytest.raises(ValueError):
        positional.sinusoidal_1d(3, 5)


def test_sincos_2d_by_hand_like_mae():
    pe = positional.sincos_2d((2, 3), 8).numpy()  # 2 rows, 3 cols
    assert pe.shape == (6, 8)
    for r in range(2):
        for c in range(3):
            # MAE: first half encodes the column (w), second the row (h); ω = 1, 1/100.
            want = [math.sin(c), math.sin(c / 100), math.cos(c), math.cos(c / 100),
                    math.sin(r), math.sin(r / 100), math.cos(r), math.cos(r / 100)]
            np.testing.assert_allclose(pe[r * 3 + c], want, atol=1e-6, err_msg=f"({r}, {c})")


def test_constructed_2d_embedding_gives_the_expected_tiles(tiny):
    g = tiny.geometry
    gh, gw = g.grid
    D = g.hidden_size
    assert gh + gw + 1 <= D
    # Position (r, c) = one-hot(row r) + one-hot(col c): cos((r,c),(k,m)) = ([r==k] + [c==m]) / 2.
    table = torch.zeros(g.seq_len, D)
    table[0, 0] = 1.0  # [CLS] = the row-0 direction: cos to (k, m) = [k == 0] / √2
    for r in range(gh):
        for c in range(gw):
            table[1 + r * gw + c, r] = 1.0
            table[1 + r * gw + c, gh + c] = 1.0
    vm = with_positions(tiny, table)
    rep = positional.position_report(engine.position_tables(vm))
    for r in range(gh):
        for c in range(gw):
            tile = rep.sim[r * gw + c].reshape(gh, gw)
            want = np.array([[((r == k) + (c == m)) / 2 for m in range(gw)] for k in range(gh)])
            np.testing.assert_allclose(tile, want, atol=1e-6, err_msg=f"tile ({r}, {c})")
    want_cls = np.array([[(k == 0) / math.sqrt(2) for m in range(gw)] for k in range(gh)])
    np.testing.assert_allclose(rep.cls_sim, want_cls, atol=1e-6)
    # The contrast against plain loops: 4-neighbours share a row or a column (0.5 each).
    near, far = [], []
    for i in range(gh * gw):
        for j in range(gh * gw):
            (r, c), (k, m) = divmod(i, gw), divmod(j, gw)
            if abs(r - k) + abs(c - m) == 1:
                near.append(rep.sim[i, j])
            if max(abs(r - k), abs(c - m)) >= positional.FAR:
                far.append(rep.sim[i, j])
    got = rep.contrasts["learned"]
    assert got.neighbour == pytest.approx(0.5, abs=1e-6)
    assert got.far == pytest.approx(float(np.mean(far)), abs=1e-6)
    assert got.contrast == pytest.approx(0.5 - float(np.mean(far)), abs=1e-6)
    # The 2-D sin-cos baseline is built for the grid: its neighbours beat its far pairs.
    assert rep.contrasts[positional.BASELINES[1]].contrast > 0.05
    # The untrained init knows no geometry.
    assert abs(rep.contrasts[positional.BASELINES[2]].contrast) < 0.05


def test_random_init_is_seeded_and_leaves_the_global_rng_alone(tiny):
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    a = positional.random_init_positions(engine.position_tables(tiny))
    assert torch.equal(torch.rand(3), expected_next)
    b = positional.random_init_positions(engine.position_tables(tiny))
    assert torch.equal(a, b) and a.shape == (tiny.geometry.num_patches, tiny.geometry.hidden_size)
    std = tiny.model.config.initializer_range
    assert 0.7 * std < float(a.std()) < 1.3 * std  # trunc-normal init of the config, not randn
    assert not torch.allclose(a, torch.from_numpy(table_of(tiny)[1:]).float())


@pytest.mark.parametrize("size", [288, 384])
def test_interpolation_equals_the_models_own(tiny, size):
    g = tiny.geometry
    new = positional.grid_at(g, size)
    emb = tiny.vit.embeddings
    with torch.no_grad():
        ref = emb.interpolate_pos_encoding(torch.zeros(1, 1 + new[0] * new[1], g.hidden_size), size, size)[0]
    _, patches = positional.position_embeddings(engine.position_tables(tiny))
    got = positional.interpolate_patch_positions(patches, g.grid, new)
    assert got.shape == (new[0] * new[1], g.hidden_size)
    torch.testing.assert_close(got, ref[g.num_prefix_tokens:], rtol=0, atol=1e-6)
    grid, sim = positional.interpolated_similarity(engine.position_tables(tiny), size)
    assert grid == new and sim.shape == (new[0] * new[1],) * 2
    f = ref[g.num_prefix_tokens:].double()
    np.testing.assert_allclose(sim[3, 7], cos(f[3].numpy(), f[7].numpy()), atol=1e-5)


def test_predict_at_native_size_equals_analyze_and_differs_at_384(tiny, cat):
    native = tiny.geometry.image_size[0]
    same = engine.predict_at_size(tiny, cat, native)
    np.testing.assert_allclose(same.probs, analyze(tiny, cat).probs.numpy(), atol=1e-5)
    big = engine.predict_at_size(tiny, cat, 384)
    assert big.input_view.shape == (384, 384, 3) and big.grid == positional.grid_at(tiny.geometry, 384)
    assert abs(big.probs.sum() - 1) < 1e-5 and len(big.top5) == 5
    assert not np.allclose(big.probs, same.probs)




def test_a_non_square_table_is_read_on_its_own_grid_and_refused_at_another_size(tiny_rect, cat):
    """160×224 px, patch 32: a 5×7 table. Its similarity is over those 35 rows (a loop here); an
    other-size view is refused with a UserError where transformers' own resize fails (a RuntimeError)."""
    vm = tiny_rect
    t = engine.position_tables(vm)
    assert positional.stored_positions(t)[2] == (5, 7)
    r = positional.position_report(t)
    table = table_of(vm)
    assert r.sim.shape == (35, 35) and r.cls_sim.shape == (5, 7)
    for i, j in [(0, 34), (6, 7), (12, 30)]:
        assert r.sim[i, j] == pytest.approx(cos(table[1 + i], table[1 + j]), abs=1e-5)
    assert r.cls_sim[4, 6] == pytest.approx(cos(table[0], table[1 + 34]), abs=1e-5)
    assert positional.random_init_positions(t).shape == (35, vm.geometry.hidden_size)
    with pytest.raises(RuntimeError):  # what the forward itself does at 224×224 (7×7)
        vm.vit.embeddings.interpolate_pos_encoding(torch.zeros(1, 50, vm.geometry.hidden_size), 224, 224)
    with pytest.raises(UserError, match="5×7 grid"):
        positional.interpolated_similarity(t, 224)
    with pytest.raises(UserError, match="5×7 grid"):
        engine.predict_at_size(vm, cat, 224)
