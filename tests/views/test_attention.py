"""The Attention tab's view (vizvit/views/attention.py): the main map, grid, strip, readout, the book the page draws
from, relevance and export, on constructed attentions and tiny models."""

from __future__ import annotations

import base64
import dataclasses
import json

import numpy as np
import pytest
import torch
from synthetic import GEOMS, StandInModel, pointing_attention, stand_in_analysis

import vizvit
from vizvit import vocab
from vizvit.methods import maths as A, maths as att_mod
from vizvit.methods.maps import relevance_map
from vizvit.model.models import PATCH_MEAN, Geometry
from vizvit.pictures import render
from vizvit.readings import attention as ra
from vizvit.readings.artifacts import artifact_masks
from vizvit.session import PhotoKey, Workbench
from vizvit.views import attention as ap, books, layout

# ------------------------------------------------------------------ "points at (r, c)" in every view
RC = {"g14": (3, 11), "g7": (5, 2)}


def _params(**kw) -> ra.AttnParams:
    # A constructed attention that points every query at one patch makes that patch an attention
    # sink, i.e. an artifact token: these tests are about the map itself, so it stays in the range.
    return ra.AttnParams(**{"layer": 2, "head": 3, "alpha": 1.0, "cmap": "inferno", "artifacts_in_range": True, **kw})


def _brightest_tile(img: np.ndarray, g: Geometry, x0: int = 0, y0: int = 0, tile: int | None = None):
    """(row, col) of the tile whose centre pixel is the colour map's top colour."""
    top = render.colorize(np.array([[1.0]]), "inferno", 0, 1)[0, 0]
    size = tile or img.shape[0]
    step = size / g.grid[0]
    hits = [(r, c) for r in range(g.grid[0]) for c in range(g.grid[1])
            if np.array_equal(img[int(y0 + (r + 0.5) * step), int(x0 + (c + 0.5) * step)], top)]
    return hits


def test_main_map_has_a_colour_bar_from_the_map_min_to_max_and_clicks_on_it_pick_no_patch(geom):
    g = geom
    r, c = RC[[k for k, v in GEOMS.items() if v == g][0]]
    a = stand_in_analysis(g, pointing_attention(g, g.num_prefix_tokens + r * g.grid[1] + c, weight=0.5))
    main = ap.main_panel(StandInModel(g), a, _params(show=vocab.ONE_HEAD))
    side = g.image_size[0] * render.display_scale(g)  # the enlarged map is side × side
    assert main.image.shape[0] == side and main.image.shape[1] > side + 40
    bar = main.image[:, side:]
    lut = render.colorize(np.array([[0.0, 1.0]]), "inferno", 0, 1)[0]
    bar_cols = [x for x in range(bar.shape[1]) if np.array_equal(bar[0, x], lut[1])]
    assert bar_cols, "the bar's top is the colour of the map's max"
    x = side + bar_cols[0]
    assert np.array_equal(main.image[-1, x], lut[0]), "its bottom is the colour of the map's min"
    with pytest.raises(ValueError, match="outside the patch grid"):
        ap.clicked_query(g, x, side // 2)


def test_the_query_patch_attending_to_itself_does_not_set_the_colour_scale(geom):
    g = geom
    n, pre, gw = g.seq_len, g.num_prefix_tokens, g.grid[1]
    q, u = (1, 1), (2, 3)  # query patch, and the patch it attends to most after itself
    tq, tu = pre + q[0] * gw + q[1], pre + u[0] * gw + u[1]
    att = torch.full((g.num_layers, g.num_heads, n, n), 0.01 / n)
    att[..., tq, tq] = 0.9
    att[..., tq, tu] = 0.05
    att = att / att.sum(-1, keepdim=True)
    main = ap.main_panel(StandInModel(g), stand_in_analysis(g, att), _params(show=vocab.ONE_HEAD, query=q))
    assert main.values[q] > 10 * main.values[u]
    # u is the brightest of the others: it gets the top colour, as does the query (clipped).
    assert sorted(_brightest_tile(main.image, g)) == sorted([q, u])
    # The grid's shared scale ignores the query's own cell the same way.
    p = _params(show=vocab.ONE_HEAD, query=q, shared_scale=True)
    v = ap.attention_view(StandInModel(g), stand_in_analysis(g, att), p)
    t = layout.grid_tile(g)
    assert sorted(_brightest_tile(v.grid, g, layout.GRID_LEFT, layout.GRID_TOP, t)) == sorted([q, u])


def test_attention_pointing_at_a_patch_lights_that_tile_in_every_view(geom, request):
    g = geom
    r, c = RC[[k for k, v in GEOMS.items() if v == g][0]]
    t = g.num_prefix_tokens + r * g.grid[1] + c
    att = pointing_attention(g, t)
    a = stand_in_analysis(g, att)
    vm = StandInModel(g)
    for show in vocab.SHOW_CHOICES:
        for mode in vocab.MODES:
            p = _params(show=show, mode=mode)
            main = ap.main_panel(vm, a, p)
            assert main.values.shape == g.grid
            assert np.unravel_index(main.values.argmax(), g.grid) == (r, c), (show, mode)
            assert _brightest_tile(main.image, g) == [(r, c)], (show, mode)
    # A clicked query patch's row points at (r, c) too.
    p = _params(show=vocab.ONE_HEAD, query=(0, 0))
    assert np.unravel_index(ap.main_panel(vm, a, p).values.argmax(), g.grid) == (r, c)
    # Column: only patch (r, c) attends to [CLS] -> the [CLS] column lights (r, c).
    n = g.seq_len
    col_att = torch.full((g.num_layers, g.num_heads, n, n), 1.0 / n)
    col_att[..., t, :] = 0.1 / (n - 1)
    col_att[..., t, 0] = 0.9
    p = _params(show="mean", direction="column")
    v = ap.main_panel(vm, stand_in_analysis(g, col_att), p).values
    assert np.unravel_index(v.argmax(), g.grid) == (r, c)
    # Rollout strip maps and the all-heads grid, raw and rolled out.
    assert all(np.unravel_index(m.argmax(), g.grid) == (r, c) for m in ra.strip_maps(a, _params()).numpy())
    for mode in vocab.MODES:
        img = layout.compose_grid(ra.grid_maps(a, _params(mode=mode)).numpy(), "inferno", shared=False)
        tile = layout.grid_tile(g)
        for l in range(g.num_layers):
            for h in range(g.num_heads):
                x0 = layout.GRID_LEFT + h * (tile + layout.GRID_SEP)
                y0 = layout.GRID_TOP + l * (tile + layout.GRID_SEP)
                assert _brightest_tile(img, g, x0, y0, tile) == [(r, c)], (mode, l, h)


def test_only_one_head_pointing_lights_only_its_rolled_out_cell(geom):
    g = geom
    r, c = RC[[k for k, v in GEOMS.items() if v == g][0]]
    t = g.num_prefix_tokens + r * g.grid[1] + c
    n = g.seq_len
    att = torch.full((g.num_layers, g.num_heads, n, n), 1.0 / n)
    l0, h0 = g.num_layers - 1, 2
    att[l0, h0] = 0.1 / n
    att[l0, h0, :, t] += 0.9
    maps = ra.grid_maps(stand_in_analysis(g, att), _params(mode="rolled out")).numpy()  # (L, H, gh, gw)
    for l in range(g.num_layers):
        for h in range(g.num_heads):
            m = maps[l, h]
            if (l, h) == (l0, h0):
                assert np.unravel_index(m.argmax(), g.grid) == (r, c)
                assert m[r, c] > 2 * np.delete(m.ravel(), r * g.grid[1] + c).max()
            else:
                assert np.ptp(m) < 1e-6, f"cell (layer {l + 1}, head {h + 1}) should be flat"


def test_grid_click_maps_back_to_layer_and_head(geom):
    g = geom
    tile = layout.grid_tile(g)
    for l in range(g.num_layers):
        for h in range(g.num_heads):
            x = layout.GRID_LEFT + h * (tile + layout.GRID_SEP) + tile - 1
            y = layout.GRID_TOP + l * (tile + layout.GRID_SEP) + 1
            assert layout.grid_cell_at(g, x, y) == (l + 1, h + 1)
    maps = np.random.rand(g.num_layers, g.num_heads, *g.grid)
    height = layout.GRID_TOP + g.num_layers * (tile + layout.GRID_SEP) - layout.GRID_SEP
    width = layout.GRID_LEFT + g.num_heads * (tile + layout.GRID_SEP) - layout.GRID_SEP
    per_tile = layout.compose_grid(maps, shared=False)  # + a bar naming the rule ("tile max"), cells unmoved
    assert per_tile.shape[0] == height and per_tile.shape[1] > width + 30
    shared = layout.compose_grid(maps, shared=True)  # + a colour bar on the right, cells unmoved
    assert shared.shape[0] == height and shared.shape[1] > width + 30
    top = render.colorize(np.array([[1.0]]), "inferno", 0, 1)[0, 0]
    assert any(np.array_equal(shared[0, x], top) for x in range(width, shared.shape[1]))
    with pytest.raises(ValueError):
        layout.grid_cell_at(g, 3, 3)  # the label margin
    with pytest.raises(ValueError):
        layout.grid_cell_at(g, width + 10, layout.GRID_TOP + 1)  # the colour bar


def test_head_choices_and_chart_clicks_parse_to_layer_and_head():
    assert ap.parse_choice("3,4") == (3, 4)
    assert ap.parse_choice("3,4,17") == (3, 4)  # a chart click carries its click count
    for bad in ("", "3", "3,x", "1,2,3,4", None):
        with pytest.raises(ValueError, match="Choose a head"):
            ap.parse_choice(bad)


def test_relevance_on_a_tiny_model_is_finite_non_negative_and_cached(tiny, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    a = wb.analysis(key)
    before = {k: v.clone() for k, v in tiny.model.state_dict().items()}
    cache = lambda name, f: wb.derived(key, name, f)  # noqa: E731
    m = relevance_map(tiny, a, a.top5[1].index, cache)
    assert m.shape == tiny.geometry.grid
    assert np.isfinite(m).all() and (m >= 0).all() and m.sum() > 0
    artifact_masks(a, cache)  # the panel also names the artifact tokens (cached once per photo)
    misses = wb.cache.misses
    img, text = ap.relevance_panel(tiny, a, a.top5[1].index, ra.AttnParams(), cache)
    assert wb.cache.misses == misses, "the second request must come from the cache"
    assert img.shape[2] == 3 and "Relevance" in text
    assert all(not p.requires_grad for p in tiny.model.parameters())
    assert all(torch.equal(before[k], v) for k, v in tiny.model.state_dict().items())


# ------------------------------------------------------------------ panels on a real tiny model
def test_attention_views_on_a_tiny_model_run_no_forward(tiny, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    a = wb.analysis(key)
    cache = lambda name, f: wb.derived(key, name, f)  # noqa: E731
    page = ap.attention_page(tiny, a, ra.AttnParams(layer=2), cache)
    g = tiny.geometry
    s = render.display_scale(g)
    side = g.image_size[1] * s
    assert page.view.main.shape[0] == g.image_size[0] * s and page.view.main.shape[1] > side  # + colour bar
    assert len(page.distance_choices) == g.num_layers * g.num_heads
    assert len(page.classes) == len(tiny.labels)  # every class, top-5 first
    chart, choices = ap.distance_view(tiny, a, page.params.distance_norm, cache)  # the chart: after the first picture
    assert choices == page.distance_choices
    title = chart.layout.title.text.replace("</sub>", "")  # the model's line (issue 17)
    assert "Mean attention distance" in title and "/" not in title, "no server path in the page"
    assert "<br><sub>local: p16" in chart.layout.title.text or "<br><sub>" in title, "model on its own line"
    forwards = sum(1 for k in wb.cache._items if k[0] == "analysis")
    for p in (ra.AttnParams(mode="rolled out", show="max", discard=0.5, tau=0.6, query=(1, 2), direction="column"),
              ra.AttnParams(show=vocab.ONE_HEAD, head=2, mode="rolled out", shared_scale=False, cmap="viridis")):
        v = ap.attention_view(tiny, wb.analysis(key), p, cache)
        assert v.grid.ndim == 3 and v.strip.ndim == 3 and "Layer 1" in v.readout
    assert sum(1 for k in wb.cache._items if k[0] == "analysis") == forwards
    with pytest.raises(ValueError):
        ap.attention_view(tiny, a, ra.AttnParams(layer=g.num_layers + 1))
    assert ap.clip_params(ra.AttnParams(layer=99, head=99, query=(20, 20)), g) == \
        ra.AttnParams(layer=g.num_layers, head=g.num_heads, query=None)


@pytest.mark.slow
def test_export_writes_the_attention_keys(tiny, cat, tmp_path):
    from tiny import EXAMPLES

    from vizvit.export import export

    export(EXAMPLES / "chelsea.jpg", tmp_path, model=tiny, charts_png=False)  # charts as PNG: tests/test_export.py
    z = np.load(tmp_path / "arrays.npz")
    g = tiny.geometry
    n_l, n_h, n = g.num_layers, g.num_heads, g.seq_len
    assert z["attentions"].shape == (n_l, n_h, n, n) and z["attentions"].dtype == np.float16
    assert z["cls_attention"].shape == (n_l, n_h, *g.grid)
    np.testing.assert_allclose(z["cls_attention"], z["attentions"][:, :, 0, 1:].reshape(n_l, n_h, *g.grid)
                               .astype(np.float32), atol=1e-3)
    assert z["rollout"].shape == (n_l, *g.grid) and z["attention_distance"].shape == (n_l, n_h)
    assert z["rollout_heads"].shape == (n_l, n_h, *g.grid) and z["rollout_heads"].dtype == np.float32
    np.testing.assert_allclose(z["rollout_heads"].mean(1), z["rollout"], rtol=1e-5, atol=1e-7)
    assert z["relevance"].shape == g.grid and (z["relevance"] >= 0).all()
    for name in ("attention_cls_mean", "attention_heads_grid", "rollout_strip"):
        assert (tmp_path / f"{name}.png").stat().st_size > 100


# ------------------------------------------------------------------ the book the page draws from
def _book_cases(g):
    yield ra.AttnParams()
    yield ra.AttnParams(mode="rolled out", discard=0.3, tau=0.5, scale="fixed across layers and heads")
    yield ra.AttnParams(query=(1, g.grid[1] - 2), direction="column", scale="this map's range")
    for s in g.summaries[1:]:
        yield ra.AttnParams(summary=s, mode="rolled out")


def _color_rows(values: np.ndarray, lo: float, hi: float) -> list:
    """The colour-table row of each value, in plain Python floats: round(clip((v - lo) / (hi - lo)) · 255),
    Python's round (half to even, as numpy's)."""
    return [[round(min(1.0, max(0.0, (float(v) - lo) / (hi - lo))) * 255) if hi > lo else 0 for v in row]
            for row in values]


def test_the_books_colour_rows_hold_at_the_boundaries_between_two_rows():
    """A map whose values sit on the boundaries between colour rows ((k + ½)/255 of the range, and
    one float32 step either side of it): the book's rows are exactly render.colorize's (a row off by
    one at any boundary fails), on two ranges."""
    g = Geometry((224, 224), 16, (14, 14), 1, 1, 1, 32)
    for lo, hi in [(0.0, 1.0), (0.001, 0.0213)]:
        mids = (lo + (hi - lo) * (np.arange(65) + 0.5) / 255).astype(np.float32)
        vals = np.concatenate([np.nextafter(mids, -np.inf), mids, np.nextafter(mids, np.inf), [hi]]).astype(np.float32)
        maps = vals.reshape(1, 1, *g.grid)
        book = books.MapBook(maps, np.array([[[lo, hi]]]), None, [[[]]], ra.AttnParams(), np.zeros((1, *g.grid), bool))
        rows = books.book_index(book)[0, 0]
        assert rows.tolist() == _color_rows(maps[0, 0], lo, hi)
        gray = render.colorize(maps[0, 0], "gray", lo, hi)[..., 0]  # the gray table's row r is the colour r
        assert (rows == gray).all(), (lo, hi)
        k = np.arange(65)
        assert (rows.ravel()[:65] == k).all() and (rows.ravel()[130:195] == k + 1).all(), "either side of k + ½"


def assert_book_is_the_main_panel(vm: vizvit.VitModel, photo) -> None:
    """MapBook map (l, k) is main_panel's map for layer l + 1 and head k + 1, or fusion k − H:
    same values, same colour range, same τ mask, same colour-bar labels, same picture width."""
    g = vm.geometry
    a = vizvit.analyze(vm, photo)
    shows = [(h + 1, vocab.ONE_HEAD) for h in range(g.num_heads)] + [(1, f) for f in vocab.FUSIONS]
    for p in _book_cases(g):
        book = books.map_book(vm, a, p)
        assert book.maps.shape == (g.num_layers, g.num_heads + len(vocab.FUSIONS), *g.grid)
        for l in range(g.num_layers):
            for k, (head, show) in enumerate(shows):
                q = dataclasses.replace(p, layer=l + 1, head=head, show=show)
                main = ap.main_panel(vm, a, q)
                np.testing.assert_array_equal(book.maps[l, k], main.values, err_msg=f"{vm.id} {q}")
                lo, hi = book.lo_hi[l, k]
                assert f"{ap.range_number(lo)} … {ap.range_number(hi)}" in main.readout, (vm.id, q)  # its range
                if p.tau > 0:
                    keep = A.mass_threshold(torch.from_numpy(main.values), p.tau).numpy()
                    assert (book.keep[l, k] == keep).all()
                assert book.bars[l][k] == render.colorbar_labels(main.image.shape[0], lo, hi,
                                                                 marks={"1/N": 1 / g.seq_len})
        page = json.loads(books.book_for_page(book, a.input_view, g))
        assert page["width"] == ap.main_panel(vm, a, p).image.shape[1], vm.id  # clicks map alike
        # The page gets each map as the colour-table rows it is painted with, under its own range.
        index = np.frombuffer(base64.b64decode(page["index"]), np.uint8).reshape(book.maps.shape)
        for l in range(g.num_layers):
            for k in range(len(shows)):
                assert index[l, k].tolist() == _color_rows(book.maps[l, k], *book.lo_hi[l, k]), (vm.id, p, l, k)


def test_the_book_holds_the_main_map_of_every_layer_head_and_fusion(tiny16, families, cat):
    """For every family's token layout: DeiT's [DIST], registers, BEiT's patch mean (SigLIP's MAP
    head: test_zeroshot)."""
    for vm in [tiny16, *families.values()]:
        assert_book_is_the_main_panel(vm, cat)


def test_models_too_large_for_a_book_are_drawn_by_the_server():
    vit_b = Geometry((224, 224), 16, (14, 14), 1, 12, 12, 768)
    dinov2_l = Geometry((518, 518), 14, (37, 37), 1, 24, 16, 1024)  # 24 × 19 maps of 37² floats: 2.5 MB
    assert books.draws_in_page(vit_b) and not books.draws_in_page(dinov2_l)


def test_page_drawing_takes_every_shared_constant_from_the_book():
    """map_draw.js and attention_map.js draw map_image's picture: each number and word it shares with the server
    comes from page_style() in the book, none is written in the script (a miss would only show up
    as a wrong pixel). Every style key the script reads exists, and no shared value is a literal."""
    import re

    from page import web

    js = web.scripts(web.MAP_DRAW, web.ATTENTION_MAP)
    code = "\n".join(line.split("//")[0] for line in js.splitlines())  # comments may name values
    style = books.page_style()
    used = set(re.findall(r"\bS\.(\w+)", code)) | set(re.findall(r"style\.(\w+)", code))
    assert used and used <= set(style), used - set(style)
    words = [v for v in style.values() if isinstance(v, str) and v.strip()]
    for w in words:
        assert f"'{w}'" not in code and f'"{w}"' not in code, f"{w!r} is written in the script"
    numbers = {layout.DIM, render.LINE_SPACING}
    literals = {float(m) for m in re.findall(r"(?<![\w.])(\d+\.\d+)", code)}
    assert not literals & numbers, literals & numbers
    for key in ("gap", "bar", "tick", "overhang", "label_offset", "dim", "one_head", "mark"):
        assert key in used, f"the script draws without style.{key}"


def test_the_page_book_reads_clip_and_siglip_maps_as_the_server_does(towers, cat):
    """SigLIP's maps are read through its MAP head, CLIP's from [CLS]: the book the page draws
    from holds main_panel's maps for both."""

    for name in ("clip16", "siglip16"):
        assert_book_is_the_main_panel(towers[name], cat)


def test_attention_view_reads_from_dist_and_names_every_prefix_token(families, cat):
    vm = families["deit"]
    g = vm.geometry
    a = vizvit.analyze(vm, cat)
    p = ra.AttnParams(layer=2, summary="[DIST]")
    panel = ap.main_panel(vm, a, p)
    want = a.attentions[1].float().mean(0)[1, g.num_prefix_tokens:].reshape(g.grid)
    assert np.allclose(panel.values, want.numpy(), atol=1e-6), "main map = [DIST]'s row"
    assert "[DIST]→[DIST]" in panel.readout and "mean patch→[CLS]" in panel.readout
    strip = ra.strip_maps(a, p)
    assert torch.allclose(strip, att_mod.rollout_maps(a.attentions, g, summary="[DIST]"))
    with pytest.raises(ValueError, match="Read maps from"):
        ap.main_panel(vm, a, ra.AttnParams(summary="[REG1]"))
    regs = families["dinov2_reg"]
    readout = ap.main_panel(regs, vizvit.analyze(regs, cat), ra.AttnParams()).readout
    assert all(f"mean patch→[REG{i}]" in readout for i in range(1, 5)), "the attention registers receive"


def test_a_dinov2_classifiers_patch_mean_map_says_the_head_reads_cls_and_the_patch_mean(dino_classifiers, families,
                                                                                         cat):
    """A DINOv2 classifier's maps read from [CLS] (default) or the patch mean (the registers not in it); the
    note says the head reads both. BEiT's head reads the patch mean alone."""
    vm = dino_classifiers["dinov2_reg_cls"]
    g = vm.geometry
    a = vizvit.analyze(vm, cat)
    panel = ap.main_panel(vm, a, ra.AttnParams(layer=2, summary=PATCH_MEAN))
    want = a.attentions[1].float().mean(0)[5:, 5:].mean(0).reshape(g.grid)  # the 64 patch queries' rows
    assert g.num_prefix_tokens == 5 and np.allclose(panel.values, want.numpy(), atol=1e-6)
    assert "head reads [CLS] ⊕ the mean of the patch tokens" in panel.readout
    assert "note" not in ap.main_panel(vm, a, ra.AttnParams(layer=2)).readout  # [CLS]: no note
    beit = families["beit"]
    readout = ap.main_panel(beit, vizvit.analyze(beit, cat), ra.AttnParams()).readout
    assert "head reads the mean of the patch tokens, not [CLS]" in readout


def test_dino_without_classifier_has_no_top5_but_every_view(families, cat):
    vm = families["dino"]
    assert not vm.has_classifier
    a = vizvit.analyze(vm, cat)
    assert a.top5 == () and a.logits is None
    v = ap.attention_view(vm, a, ra.AttnParams(tau=0.6))
    assert v.main.ndim == 3



def test_the_query_book_holds_main_panels_map_for_every_patch_as_the_query(tiny16, families, cat):
    """QueryBook entry i (what the page paints for a click on patch i) is main_panel's map for that
    query: its colour rows, its colour range (the query and the artifact tokens left out; on the fixed
    scale the top of every layer and head for that query, as the server finds it for a click) and its
    τ mask, for rows and columns, raw and rolled out, every scale, registers too."""
    fixed = "fixed across layers and heads"
    cases = [ra.AttnParams(layer=2), ra.AttnParams(layer=1, head=2, show=vocab.ONE_HEAD, direction="column", tau=0.5),
             ra.AttnParams(layer=2, show="max", mode="rolled out", scale="this map's range", tau=0.3),
             ra.AttnParams(layer=2, show="min", scale=fixed),
             ra.AttnParams(layer=1, head=1, show=vocab.ONE_HEAD, mode="rolled out", direction="column", scale=fixed),
             ra.AttnParams(layer=2, show="max", mode="rolled out", scale=fixed, tau=0.4)]
    for vm in (tiny16, families["dinov2_reg"]):
        g = vm.geometry
        a = vizvit.analyze(vm, cat)
        for p in cases:
            qb = books.query_book(a, p)
            page = json.loads(books.matrix_for_page(a, p))
            assert base64.b64decode(page["index"]) == qb.index.tobytes(), (vm.id, p)
            for i in range(g.num_patches):
                rc = divmod(i, g.grid[1])
                q = dataclasses.replace(p, query=rc)
                main = ap.main_panel(vm, a, q)
                lo, hi = ra.main_map(a, q).lo_hi  # the server's range for this click (fixed: fixed_scale_max)
                assert tuple(qb.lo_hi[i]) == (lo, hi), (vm.id, q)
                assert qb.index[i].tolist() == _color_rows(main.values, lo, hi), (vm.id, q)
                if p.tau > 0:
                    assert (qb.keep[i] == A.mass_threshold(torch.from_numpy(main.values), p.tau).numpy()).all(), q
                else:
                    assert qb.keep is None


def test_a_rolled_out_map_read_as_one_row_is_the_whole_rollouts(families, towers, cat):
    """main_map(one_row=True), the live camera's map, equals main_panel's from the whole rollout
    stack: every family (a [CLS] row, DeiT's [DIST], BEiT's patch mean, SigLIP's MAP head), a fusion
    with a discard, one head, a clicked patch; a column has no one row and reads the stack."""
    from vizvit.views import attention as ap

    cases = [ra.AttnParams(mode="rolled out", layer=2),
             ra.AttnParams(mode="rolled out", layer=1, show="max", discard=0.5),
             ra.AttnParams(mode="rolled out", layer=2, show=vocab.ONE_HEAD, head=2),
             ra.AttnParams(mode="rolled out", layer=2, query=(1, 3)),
             ra.AttnParams(mode="rolled out", layer=2, query=(1, 3), direction="column")]
    for vm in [*families.values(), towers["siglip16"]]:
        a = vizvit.analyze(vm, cat)
        for p in cases:
            for summary in vm.geometry.summaries:
                q = dataclasses.replace(p, summary=summary).checked(vm.geometry)
                fast, whole = ra.main_map(a, q, one_row=True), ap.main_panel(vm, a, q)
                np.testing.assert_allclose(fast.values, whole.values, rtol=1e-4, atol=1e-7, err_msg=f"{vm.id} {q}")


def test_the_background_work_after_an_upload_caches_the_heads_distances(tiny, cat):
    """warm_photo, run after an upload (Workbench.prepare_later), caches the distances the tab's
    first answer needs, so opening the tab does not compute them while the visitor waits."""
    from vizvit import views
    from vizvit.readings.attention import distance_name

    wb = views.attach(Workbench(device="cpu"))
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    wb.analysis(key)
    assert ap.warm_photo in wb.photo_work and wb.peek_derived(key, distance_name("renormalised")) is None
    wb.prepare_later(key).result(60)
    want = att_mod.attention_distance(wb.analysis(key).attentions.float(), tiny.geometry, "renormalised")
    assert torch.allclose(wb.peek_derived(key, distance_name("renormalised")), want)


def test_a_change_the_page_draws_itself_draws_no_main_map(tiny, cat, monkeypatch):
    """Issue 52: a layer, head or fusion change the page draws from its book was drawn here too, then
    dropped. Now map_image is not called for it; the readout, grid and strip are those of a full change."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    ph = wb.handle(PhotoKey(tiny.id, wb.add_photo(cat)))
    p = ra.AttnParams(layer=2, show=vocab.ONE_HEAD, head=2)
    full = ap.change(ph, p)  # the reference: drawn, as a query click is
    assert full.main is not None and full.matrix is not None
    drawn = []
    real = layout.map_image
    monkeypatch.setattr(ap, "map_image", lambda *a, **k: drawn.append(1) or real(*a, **k))
    got = ap.change(ph, p, drawn_in_page=True)
    assert got.main is None and drawn == []
    assert got.readout == full.readout
    assert np.array_equal(got.grid, full.grid) and np.array_equal(got.strip, full.strip)
    assert got.matrix == full.matrix


# ------------------------------------------------------------------ the artifact share's ratio and its verdict
def _corners_map(times: float) -> tuple[np.ndarray, np.ndarray]:
    """A 14x14 map of ones whose four corners hold `times` their even share (4 of 196) of its sum: corner
    value x solves 4x / (4x + 192) = times * 4 / 196."""
    arts = np.zeros((14, 14), bool)
    arts[[0, 0, -1, -1], [0, -1, 0, -1]] = True
    s = times * 4 / 196
    x = 192 * s / (4 * (1 - s))
    values = np.ones((14, 14))
    values[arts] = x
    return arts, values


@pytest.mark.parametrize("times, shown, verdict", [
    (1.975, "1.98×", "do not stand out"),  # the strip photo's rollout: one decimal read "2.0×"
    (1.996, "1.996×", "do not stand out"),  # chelsea's layer 11
    (1.6, "1.6×", "do not stand out"),  # ordinary cases keep one decimal
    (2.0, "2.0×", "On this map they hold"),
    (2.3, "2.3×", "On this map they hold"),
])
def test_the_artifact_shares_ratio_never_reads_as_the_other_side_of_its_verdict(times, shown, verdict):
    arts, values = _corners_map(times)
    said = ap.artifact_share(arts, values)
    assert f", {shown} what 4 of 196 patches" in said and verdict in said, said


@pytest.mark.parametrize("top, written", [
    (0.075, "0.0750"),  # the sentence read "0 … 0.075" beside the table's "max 0.0750"
    (0.00647, "0.00647"),  # chelsea's layer-11 rollout: sentence and bar "0.00647", the table "0.0065"
    (0.000552, "0.000552"),  # a grey photo's top: the table read "5.52e-04"
])
def test_the_colour_sentence_writes_its_top_as_the_table_beside_it(top, written):
    g = GEOMS["g14"]
    values = np.full(g.grid, top / 4, np.float32)
    values[2, 3] = top  # the max, and the top of "0 to max"
    note = ap.scale_note(values, 0.0, top, "0 to max", g)
    table = f"| max | {ap.table_number(float(values.max()))} at (row 2, col 3) |"
    assert f"**0 to max**, 0 … {written};" in note and f"| max | {written} at" in table, (note, table)
