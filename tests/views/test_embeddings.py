"""The Embeddings tab's view (vizvit/views/embeddings.py): depth, clicked token, similarity, scatter, artifact marks
and export."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import torch

import vizvit
from vizvit import vocab
from vizvit.pictures import render
from vizvit.readings import embeddings as emb
from vizvit.session import PhotoKey, Workbench
from vizvit.views import embeddings as embed_panels, embeddings as embed_view


# ------------------------------------------------------------------ clicks and the depth slider
@pytest.mark.parametrize("prefix", [1, 2])
def test_click_on_patch_maps_to_its_token(tiny, prefix):
    g = dataclasses.replace(tiny.geometry, num_prefix_tokens=prefix)  # no magic 1
    step = g.patch_size * render.display_scale(g)
    gh, gw = g.grid
    for r, c in [(0, 0), (2, 5 % gw), (gh - 1, gw - 1)]:
        x, y = (c + 0.5) * step, (r + 0.5) * step
        assert embed_panels.clicked_token(g, x, y) == (r, c, prefix + r * gw + c)



def test_depth_slider_and_clicks_run_no_forward(tiny, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    forwards = []
    hook = tiny.model.register_forward_hook(lambda *_: forwards.append(1))
    try:
        a = wb.analysis(key)
        d = wb.derived(key, "embeddings", lambda: emb.prepare(tiny, a))
        assert len(forwards) == 1
        g = tiny.geometry
        for depth in range(g.num_layers + 1):  # every slider position, as the app's handlers do
            a = wb.analysis(key)
            d = wb.derived(key, "embeddings", lambda a=a: emb.prepare(tiny, a))
            p = embed_panels.depth_panel(tiny, a, d, depth, (1, 2))
            s = embed_panels.similarity_panel(tiny, a, d, depth, (g.grid[0] - 1, 0))
            for color in vocab.COLOR_CHOICES:
                embed_panels.scatter_figure(tiny, d, depth, color)
            assert p.pca_over_photo.shape[:2] == tuple(v * render.display_scale(g) for v in g.image_size)
            assert s.image.shape == p.pca_over_photo.shape
        assert len(forwards) == 1, "moving the depth slider or clicking must not run the model"
    finally:
        hook.remove()



def test_similarity_panel_reports_the_clicked_token(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    d = emb.prepare(tiny, a)
    g = tiny.geometry
    r, c = 1, 2
    s = embed_panels.similarity_panel(tiny, a, d, 1, (r, c))
    t = g.num_prefix_tokens + r * g.grid[1] + c
    ref = float(torch.nn.functional.cosine_similarity(a.hidden_states[1, t], a.hidden_states[1, 0], dim=0))
    assert f"token {t}" in s.text and f"[CLS] = {ref:+.3f}" in s.text
    with pytest.raises(ValueError, match="Depth"):
        embed_panels.similarity_panel(tiny, a, d, g.num_layers + 1, (r, c))



def test_scatter_carries_row_col_and_a_thumbnail_per_patch(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    d = emb.prepare(tiny, a)
    g = tiny.geometry
    fig = embed_panels.scatter_figure(tiny, d, g.num_layers, "rollout")
    tr = fig.data[0]
    assert len(tr.x) == g.num_patches
    cd = np.asarray(tr.customdata, dtype=object)
    i = g.num_patches - 2
    assert (cd[i, 0], cd[i, 1]) == divmod(i, g.grid[1])
    assert cd[i, 2] == g.num_prefix_tokens + i and str(cd[i, 4]).startswith("data:image/png;base64,")
    np.testing.assert_allclose(np.asarray(tr.marker.color, float), d.rollout.reshape(-1), rtol=1e-6)
    with pytest.raises(ValueError, match="Colour"):
        embed_panels.scatter_figure(tiny, d, 0, "hue")



def test_export_arrays_have_the_documented_shapes(tiny, cat):
    a = vizvit.analyze(tiny, cat)
    g = tiny.geometry
    arr = embed_panels.embedding_arrays(tiny, a)
    gh, gw = g.grid
    n = g.num_layers + 1
    assert arr["patch_embeddings"].shape == (g.num_patches, g.hidden_size)
    assert arr["token_norms"].shape == (n, gh, gw)
    assert arr["token_pca_rgb"].shape == (n, gh, gw, 3)
    assert arr["embedding_filters_pca"].shape == (28, g.patch_size, g.patch_size, 3)
    assert all(v.dtype == np.float32 for v in arr.values())



def test_norm_colours_are_a_log_scale_over_the_ordinary_patches():
    lut = render.lut(embed_panels.NORM_CMAP)
    norms = np.array([[1.0, 10.0, 100.0], [1000.0, 3.0, 50.0]])
    art = np.array([[False, False, False], [True, False, False]])  # 1000 is an artifact
    rgb, lo, hi = embed_panels.norm_colors(norms, art)
    assert (lo, hi) == (1.0, 100.0)
    # log10: 1 -> 0, 10 -> 1/2, 100 -> 1 of the range; the artifact clips to the top colour
    assert (rgb[0, 0] == lut[0]).all() and (rgb[0, 2] == lut[255]).all() and (rgb[1, 0] == lut[255]).all()
    assert (rgb[0, 1] == lut[round(0.5 * 255)]).all()
    assert (rgb[1, 1] == lut[round(np.log10(3) / 2 * 255)]).all()



def test_depth_panel_marks_and_leaves_out_the_artifact_tokens(tiny16, cat):
    a = vizvit.analyze(tiny16, cat)
    g = tiny16.geometry
    d = emb.prepare(tiny16, a)
    # Plant an artifact at depth L: patch (0, 1) excluded by hand, as the views do.
    ex = d.tokens.excluded.copy()
    ex[-1, 0, 1] = True
    tokens = dataclasses.replace(d.tokens, excluded=ex)
    d2 = dataclasses.replace(d, tokens=tokens)
    img = embed_panels.pca_over_photo(tiny16, d2, g.num_layers, None)
    s = render.display_scale(g) * g.patch_size
    assert (img[s // 2, s + 1] == embed_panels.ARTIFACT_COLOR).all(), "the artifact's tile is outlined red"
    fig = embed_panels.scatter_figure(tiny16, d2, g.num_layers, "row")
    assert len(fig.data[0].x) == g.num_patches and len(fig.data[1].x) == 1, "a ring around the artifact"


def test_no_artifact_sentence_says_from_depth_on_only_when_they_stay(tiny16, cat):
    """'No artifact tokens at this depth (from depth k on: the four corners)' held only while the same
    patches stay artifact tokens to the last depth. Constructed: the four corners at depth 1, three of
    them at the last (the trained ViT-Ti on a plain gradient: (13, 13) under 4× the median at depth 12,
    the norm table counting 3 beside "from depth 8 on: the four corners")."""
    a = vizvit.analyze(tiny16, cat)
    g = tiny16.geometry
    assert g.num_layers >= 2
    d = emb.prepare(tiny16, a)
    gh, gw = g.grid
    ex = np.zeros((g.num_layers + 1, gh, gw), bool)
    ex[1:, [0, 0, gh - 1, gh - 1], [0, gw - 1, 0, gw - 1]] = True
    stay = dataclasses.replace(d, tokens=dataclasses.replace(d.tokens, excluded=ex.copy()))
    assert "(from depth 1 on: the four corners)" in embed_panels.artifact_sentence(tiny16, a, stay, 0)
    ex[-1, gh - 1, gw - 1] = False  # the last depth keeps three
    drop = dataclasses.replace(d, tokens=dataclasses.replace(d.tokens, excluded=ex))
    said = embed_panels.artifact_sentence(tiny16, a, drop, 0)
    assert "from depth 1 on" not in said, said
    assert "first at depth 1: the four corners" in said and f"3 at {g.num_layers}" in said, said


def test_the_artifact_share_is_the_attention_tabs_share_of_the_patches_total(tiny16, cat):
    """A flat grey photo on the trained ViT-Ti: the Attention tab said the corners "hold 94.3% of its total
    over the patches" (0.8985 of the 0.9524 [CLS] gives the patches) and this tab "[CLS] puts 90% of its
    attention on them" (0.8985 of all of it). Constructed: in the last layer every head's [CLS] keeps 0.05,
    gives the four corners 0.225 each (0.9) and the other 192 patches 0.05 in all: 0.9 / 0.95 = 94.7%."""
    from vizvit.views import attention as ap

    g = tiny16.geometry
    gh, gw = g.grid
    pre = g.num_prefix_tokens
    a = vizvit.analyze(tiny16, cat)
    corners = np.zeros((gh, gw), bool)
    corners[[0, 0, gh - 1, gh - 1], [0, gw - 1, 0, gw - 1]] = True
    row = np.full(g.num_patches, 0.05 / 192)
    row[corners.ravel()] = 0.225
    att = a.attentions.clone()
    att[-1, :, 0, :] = 0.0
    att[-1, :, 0, 0] = 0.05
    att[-1, :, 0, pre:] = torch.from_numpy(row).to(att.dtype)
    a = dataclasses.replace(a, attentions=att)
    d = emb.prepare(tiny16, a)
    ex = np.zeros((g.num_layers + 1, gh, gw), bool)
    ex[-1] = corners
    d = dataclasses.replace(d, tokens=dataclasses.replace(d.tokens, excluded=ex))
    said = embed_panels.artifact_sentence(tiny16, a, d, g.num_layers)
    assert "**94.7%** of [CLS]'s attention over the patches" in said, said
    assert "90%" not in said and "2.0% for an even spread" in said, said  # 4 of 196 patches
    # The Attention tab says the same number of the same map.
    assert "**94.7%** of its total over the patches" in ap.artifact_share(corners, row.reshape(gh, gw)), said


def test_register_norms_are_exported(families, cat):
    vm = families["dinov2_reg"]
    a = vizvit.analyze(vm, cat)
    arr = embed_view.embedding_arrays(vm, a)
    g = vm.geometry
    want = a.hidden_states[:, 1:5].norm(dim=-1).numpy()
    assert arr["register_norms"].shape == (g.num_layers + 1, 4)
    assert np.allclose(arr["register_norms"], want, atol=1e-5)
    assert arr["prefix_norms"].shape == (g.num_layers + 1, 5)
    assert "[REG4]" in embed_view.norms_table(vm, emb.prepare(vm, a))



def test_dropout_panel_reads_the_photos_tokens_after_the_embedding_stage(tiny16):
    """The panel's tokens are hidden state 0 of the cached forward (what the embeddings' dropout gets);
    its text says the zero share of train mode and that eval changes nothing; the page's show has it."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo("assets/examples/chelsea.jpg")))
    a = ph.analysis()
    d = embed_view.dropout_panel(tiny16, a, 0.25)
    assert torch.equal(d.check.before, a.hidden_states[0])
    zeros = float((d.check.train == 0).float().mean())
    assert f"{zeros:.1%} of them are zero" in d.text and "Eval mode changes 0 numbers" in d.text
    page = embed_view.show(ph, embed_view.EmbeddingsParams(dropout=0.25))
    assert page.dropout_text == d.text and np.array_equal(page.dropout_image, d.image)


def test_a_drawn_clicks_patch_from_the_page_is_checked(tiny16):
    """The hidden box's value comes from any caller: "row,col[,n]" on the grid, or a clear refusal."""
    from vizvit.errors import UserError
    from vizvit.views import embeddings as ev

    g = tiny16.geometry
    assert ev.picked_cell(g, "3,5,17") == (3, 5) and ev.picked_cell(g, "0,0") == (0, 0)
    for bad in ("", "3", "a,b", "-1,2", f"{g.grid[0]},0", "²,1", "99999999,1", None):
        with pytest.raises(UserError):
            ev.picked_cell(g, bad)


def test_the_stage_table_says_the_processors_own_resize_and_crop():
    """A reviewer on the trained ViT-Ti: the table said "resized to 224×224" while the status line said
    "scaled to 372×248, centre 224×224 kept" (its processor: short side 248, centre crop 224)."""
    from vizvit.model.models import Preprocess
    from vizvit.views.embeddings import resize_text

    kw = dict(resample=3, mean=(0.5,) * 3, std=(0.5,) * 3)
    assert resize_text(Preprocess(248, (224, 224), **kw)) == "short side scaled to 248 px, centre 224×224 kept"
    assert resize_text(Preprocess((224, 224), None, **kw)) == "resized to 224×224"
    assert resize_text(Preprocess((256, 256), (224, 224), **kw)) == "resized to 256×256, centre 224×224 kept"


def test_the_tab_opens_on_a_non_square_vit(tiny_rect, cat):
    """160×224 px, patch 32 (a 5×7 grid and position table): show, rest and a depth book draw, the
    maps as the grid's shape (7 wide : 5 tall) with the colour bar beside them, the steps' shapes 5×7."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny_rect)
    ph = wb.handle(PhotoKey(tiny_rect.id, wb.add_photo(cat)))
    p = embed_view.EmbeddingsParams()
    page = embed_view.show(ph, p)
    embed_view.rest(ph, p)
    embed_view.depth_book(ph, p)
    s = render.display_scale(tiny_rect.geometry)
    assert page.pca.shape[:2] == (160 * s, 224 * s)
    d = emb.data(ph)
    heat, _, _ = embed_panels.norm_colors(d.tokens.norms[0], d.tokens.excluded[0])
    assert heat.shape[:2] == (5, 7)
    assert page.maps.shape[0] >= 336 * 5 // 7
    rows = {row[0]: row[1] for row in page.steps}
    assert rows["flatten"] == "(1, 35, 32)" and rows["+ position embeddings"] == "(1, 36, 32)"


def test_the_depth_text_names_its_pictures_by_title_not_by_a_side():
    """At 390 px the two depth pictures stack, one under the other, and the text's "*Left*: the three main
    directions ..." named a side a phone does not have (a walk-through). It names each picture by its title."""
    assert re.search(r"\b(left|right|beside)\b", embed_view.DEPTH_TEXT, re.IGNORECASE) is None, embed_view.DEPTH_TEXT
    for title in (embed_view.PCA_TITLE, embed_view.SIM_TITLE):
        assert f"*{title}*" in embed_view.DEPTH_TEXT


def test_the_filters_text_promises_no_smooth_pattern_the_trained_vit_ti_does_not_show(trained):
    """The text said "Trained models show smooth, Fourier-like patterns", but the trained ViT-Ti's first two
    components (5.0 %, 2.7 % of the variance) are checkerboards. Measured here by a plain FFT of each tile (its
    channels summed): most of its energy lies at 1/4 cycle per pixel or more, where a smooth pattern has
    little. The text gives the paper's finding as a reference and says this model's may differ."""
    pca = emb.model_filters(trained)
    for tile in pca.tiles[:2]:
        t = tile.sum(-1)  # (p, p)
        power = np.abs(np.fft.fft2(t)) ** 2
        f = np.fft.fftfreq(t.shape[0])
        high = np.hypot(f[:, None], f[None, :]) >= 0.25
        assert power[high].sum() / power.sum() > 0.9, "a fine, not a smooth, pattern"  # measured 0.96, 0.99
    text = " ".join(embed_view.FILTERS_TEXT.split())
    assert "Trained models show smooth" not in text
    assert "The ViT paper reports" in text and "a reference, not a promise" in text, text
