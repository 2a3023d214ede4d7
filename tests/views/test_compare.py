"""vizvit.views.compare: each side is what that model's own tabs show (same cache entries, the
Attention tab's maps), the book equals the server's answer at every cursor position, the verdict's
numbers against plain computations on the analysis, and the gate and the memory rule for model B."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from tiny import EXAMPLES

from vizvit.errors import UserError
from vizvit.methods.maps import MEAN_ROLLOUT
from vizvit.model.catalog import Catalog
from vizvit.pictures import render
from vizvit.readings import attention as ra
from vizvit.session import PhotoKey, Workbench
from vizvit.views import attention as ap, compare, layout

TWIN = "random:vit-tiny-patch16-224"  # the random twin of the listed WinKawaks/vit-tiny-patch16-224


@pytest.fixture(scope="module")
def bench(tiny16):
    wb = Workbench(device="cpu", catalog=Catalog(tiny16.id))
    wb.add_model(tiny16)
    return wb, wb.handle(PhotoKey(wb.catalog.public(tiny16.id), wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))


def test_each_side_reads_the_cache_its_own_tabs_use_and_draws_their_maps(bench):
    wb, ph = bench
    page = compare.show(ph, compare.CompareParams(model_b=TWIN, depth=3, head="2"))
    b = compare.pair(ph, TWIN).b  # the twin reads A's input view (a photo of its own, issue 43)
    assert wb.peek_derived(b.key, MEAN_ROLLOUT) is not None, "B's rollout is the Attention tab's cache entry"
    assert wb.peek_derived(ph.key, MEAN_ROLLOUT) is not None
    assert (page.positions, page.depth, page.heads) == (12, 3, ["mean", "max", "min", "1", "2", "3"])
    # position 3 of 12: layer 1 of the 2-layer A, layer 3 of B; head 2 of 3: A's head 2 of 2, B's head 2
    for side, layer, head in ((ph, 1, 2), (b, 3, 2)):
        s = compare.side_maps(side, layer, head)
        p = ra.AttnParams(layer=layer, head=head, show="one head")
        assert np.array_equal(s.attention, ap.main_panel(side.vm, side.analysis(), p, side.derived).values)
        roll = ap.main_panel(side.vm, side.analysis(), ra.AttnParams(layer=layer, show="mean", mode="rolled out"),
                             side.derived).values
        assert np.allclose(s.rollout, roll, atol=1e-7)
    assert "A (layer 1/2)" in page.verdict and "B (layer 3/12)" in page.verdict


def test_the_book_holds_the_servers_own_pictures_at_every_position(bench):
    _, ph = bench
    p = compare.CompareParams(model_b=TWIN, head="max", shared_range=False)
    book = compare.depth_book(ph, p)
    assert list(book.pages) == [str(t) for t in range(1, 13)] and book.controls == ("depth",)
    for t in (1, 7, 12):
        ch = compare.change_depth(ph, compare.CompareParams(model_b=TWIN, head="max", shared_range=False, depth=t))
        for target in compare.DEPTH_TARGETS:
            assert np.array_equal(book.pages[str(t)][target], getattr(ch, target)), (t, target)


def test_one_shared_colour_range_or_each_its_own(bench):
    """Shared: both sides' attention maps are coloured 0 .. the larger of the two tops; own: each
    0 .. its own top (the Attention tab's default "0 to max")."""
    _, ph = bench
    pr = compare.pair(ph, TWIN)
    c = compare.cursor(pr, compare.CompareParams(model_b=TWIN))
    shared, sa, sb = compare.depth_pictures(pr, c, shared=True)
    own, _, _ = compare.depth_pictures(pr, c, shared=False)
    assert not sa.arts.any() and not sb.arts.any()  # random weights: every patch counts in the range
    top_a, top_b = float(sa.attention.max()), float(sb.attention.max())
    assert top_a != top_b
    g = ph.vm.geometry
    for pics, hi in ((shared, max(top_a, top_b)), (own, top_a)):
        expect = layout.map_image(ph.analysis().input_view, sa.attention, g,
                                  compare.attn_params(c.layer_a, "mean", "raw"),
                              lo_hi=(0.0, hi), marks={layout.UNIFORM_MARK: ra.uniform_level(g)}, artifacts=sa.arts,
                              scale=render.display_scale(g, compare.MAP_PX))
        assert np.array_equal(pics["attention_a"][:expect.shape[0]], expect)  # the caption below it


def test_model_b_passes_the_gate_before_it_loads_and_two_models_must_fit(bench, tiny16):
    wb, ph = bench
    before = set(wb._models)
    for bad in ("openai/clip-vit-large-patch14", "/tmp", "random:vit-large-patch16-384"):
        with pytest.raises(UserError, match="page's list"):
            compare.show(ph, compare.CompareParams(model_b=bad))
    assert set(wb._models) == before
    one = Workbench(device="cpu", max_models=1)
    one.add_model(tiny16)
    with pytest.raises(UserError, match="one model in memory"):
        compare.pair(one.handle(PhotoKey(tiny16.id, one.add_photo(str(EXAMPLES / "chelsea.jpg")))), tiny16.id)


def test_no_model_b_yet_is_a_prompt_not_an_error(bench):
    _, ph = bench
    page = compare.show(ph, compare.CompareParams())
    assert "Pick model B" in page.verdict and page.attention_b is None
    # The cursor runs over A's layers meanwhile (a 1..1 slider is refused by Gradio), at the link's position.
    assert (page.positions, page.depth) == (ph.vm.geometry.num_layers, ph.vm.geometry.num_layers)
    assert compare.show(ph, compare.CompareParams(depth=1)).depth == 1


def test_on_trained_weights_the_verdict_says_where_cls_attention_goes(trained, cat):
    """The trained ViT-Ti's [CLS] gives 57 % of its last-layer attention to the four corner artifact
    tokens (README); its random twin has none. Computed here from the attentions by hand."""
    wb = Workbench(device="cpu", catalog=Catalog(str(trained.id)))
    wb.add_model(trained)
    ph = wb.handle(PhotoKey(wb.catalog.public(trained.id), wb.add_photo(cat)))
    page = compare.show(ph, compare.CompareParams(model_b=TWIN))
    a = ph.analysis()
    row = a.attentions[11].float().mean(0)[0, 1:].reshape(14, 14).numpy()  # [CLS]'s row, heads averaged
    corners = row[0, 0] + row[0, 13] + row[13, 0] + row[13, 13]
    assert corners == pytest.approx(0.57, abs=0.01)
    assert f"gives **{corners:.0%}** to its 4 artifact tokens" in page.verdict, page.verdict
    assert "B (layer 12/12): no artifact tokens among the tokens entering this layer" in page.verdict
    assert "top-1 **differs**: A Egyptian cat" in page.verdict
    assert "[trained against its random twin](?example" not in page.pairs  # no example given to the view
    assert f"compare={TWIN}" in page.pairs


def test_each_sides_top5_chart_and_position_picture_name_their_side_and_model(bench):
    """A walk-through on a 390-px phone: the sides stack and both charts read "Top-5 predictions", both pictures
    "position-embedding similarity (Positions tab)": A and B could not be told apart."""
    _, ph = bench
    page = compare.show(ph, compare.CompareParams(model_b=TWIN))
    a_name = ph.key.model_id  # the tiny model's listed name (p16)
    ta, tb = page.top5_a.layout.title.text, page.top5_b.layout.title.text
    assert ta == f"A: top-5 predictions<br><sub>{a_name}</sub>", ta
    assert tb == f"B: top-5 predictions<br><sub>{TWIN}</sub><br><sub>UNTRAINED weights: meaningless</sub>", tb
    assert page.positions_label_a == f"A: {a_name} · position-embedding similarity (Positions tab)"
    assert page.positions_label_b == f"B: {TWIN} · position-embedding similarity (Positions tab)"
    alone = compare.show(ph, compare.CompareParams())  # no model B yet: A's chart named, B's picture by its side
    assert alone.top5_a.layout.title.text == ta and alone.positions_label_b.startswith("B: position-embedding")
    assert compare.side_name("B", ph.vm) == f"B: {a_name}"
    long = "x" * 60  # a name past NAME_CHARS is cut
    assert compare.side_name("A", _Named(long)) == f"A: {'x' * compare.NAME_CHARS}…"


class _Named:
    def __init__(self, id_: str) -> None:
        self.id = id_


def test_the_teaching_pairs_links_name_an_upload_by_its_key_and_an_example_by_its_name(bench):
    """A walk-through: an upload's pair links kept no photo (only example=, which an upload has none of)."""
    _, ph = bench
    sha1 = ph.key.sha1
    up = compare.show(ph, compare.CompareParams(photo=sha1)).pairs
    assert ("[DeiT (distilled) against ViT](?model=facebook/deit-base-distilled-patch16-224&tab=compare"
            f"&compare=google/vit-base-patch16-224&photo={sha1})") in up, up
    assert up.count(f"&photo={sha1})") == up.count("](?"), "every pair's link"
    ex = compare.show(ph, compare.CompareParams(example="chelsea", photo=sha1)).pairs
    assert "(?example=chelsea&" in ex and "photo=" not in ex, ex


def test_each_teaching_pair_says_which_of_its_sides_are_untrained():
    """A walk-through: on a server with the ViT-Ti alone, "DeiT (distilled) against ViT (untrained twin)" linked
    two random models (both hub models stood in by their twins), and a pair whose A alone was random said nothing."""
    r = "random:"
    pairs = [("DeiT (distilled) against ViT", r + "deit-base-distilled-patch16-224", r + "vit-base-patch16-224"),
             ("ViT-Ti against ViT-B", "vit-tiny-augreg", r + "vit-base-patch16-224"),
             ("DINOv2 against DINOv2 with registers", r + "dinov2-small", "facebook/dinov2-with-registers-small"),
             ("ViT-Ti against ViT-B", "vit-tiny-augreg", "google/vit-base-patch16-224"),
             ("trained against its random twin", "vit-tiny-augreg", r + "vit-tiny-augreg")]
    said = [t.rstrip() for t in re.findall(r"\]\(\?[^)]*\)([^·]*)", compare.pairs_text(pairs, "chelsea"))]
    assert said == [" (both untrained)", " (B: untrained twin)", " (A: untrained twin)", "", ""], said


def test_the_verdicts_share_is_the_head_the_maps_show(trained, cat):
    """A walk-through: with head 2 picked, the map beside the verdict was captioned "head 2 of 3" while the
    verdict said "[CLS] gives 57 %", the heads' mean; head 2 alone gives 66 % to the corners. The share
    follows the head control, and a fused map (whose max or min row is no distribution) says it is the
    heads' mean. Computed here from the attentions by hand."""
    wb = Workbench(device="cpu", catalog=Catalog(str(trained.id)))
    wb.add_model(trained)
    ph = wb.handle(PhotoKey(wb.catalog.public(trained.id), wb.add_photo(cat)))
    last = ph.analysis().attentions[11].float()  # (H, N, N)

    def corners(row: torch.Tensor) -> float:  # (N,) -> the four corner patches' share
        grid = row[1:].reshape(14, 14)
        return float(grid[0, 0] + grid[0, 13] + grid[13, 0] + grid[13, 13])

    head2, mean = corners(last[1, 0]), corners(last.mean(0)[0])
    assert f"{head2:.0%}" != f"{mean:.0%}"  # 66 % against 57 %: the test tells them apart
    verdict = compare.show(ph, compare.CompareParams(model_b=TWIN, head="2")).verdict
    assert f"[CLS] (head 2 of 3) gives **{head2:.0%}** to its 4 artifact tokens" in verdict, verdict
    for fused in ("mean", "max"):
        verdict = compare.show(ph, compare.CompareParams(model_b=TWIN, head=fused)).verdict
        assert f"[CLS] (mean of 3 heads) gives **{mean:.0%}** to its 4 artifact tokens" in verdict, verdict


def test_the_random_twin_reads_the_trained_models_input_view(tiny16):
    """Issue 43: the twin's default processor squashed the whole photo to 224×224 while the trained model
    resized the short side and centre-cropped, so the two maps' cosine compared different pixels. A model
    B with random weights now reads model A's input view: the same pixels, whatever A's processor."""
    import dataclasses

    from PIL import Image

    from vizvit.model.images import model_input_view
    from vizvit.model.models import Preprocess

    crop = Preprocess(resize=256, crop=(224, 224), resample=Image.Resampling.BICUBIC, mean=(0.5,) * 3, std=(0.5,) * 3)
    a_vm = dataclasses.replace(tiny16, preprocess=crop)
    wb = Workbench(device="cpu", catalog=Catalog(a_vm.id))
    wb.add_model(a_vm)
    photo = Image.open(EXAMPLES / "chelsea.jpg").convert("RGB")  # 451×300: a crop and a squash differ
    ph = wb.handle(PhotoKey(wb.catalog.public(a_vm.id), wb.add_photo(photo)))
    pr = compare.pair(ph, TWIN)
    va, vb = pr.a.analysis().input_view, pr.b.analysis().input_view
    assert np.array_equal(va, model_input_view(photo, crop))  # A: its own crop
    assert np.array_equal(vb, va), "the twin must read the trained model's pixels"
    squash = model_input_view(photo, pr.b.vm.preprocess)  # what the twin's own processor would make
    assert not np.array_equal(squash, va)  # so the test above tells the two apart
    c = compare.cursor(pr, compare.CompareParams(model_b=TWIN))
    _, sa, sb = compare.depth_pictures(pr, c, shared=True)
    said = compare.verdict(pr, c, sa, sb)
    assert "(both read A's model-input view)" in said
    # each number beside its own words, computed here by hand: the plain cosine, then Pearson's r
    a, b = np.asarray(sa.rollout, float).ravel(), np.asarray(sb.rollout, float).ravel()
    cos, r = a @ b / np.linalg.norm(a) / np.linalg.norm(b), np.corrcoef(a, b)[0, 1]
    assert (f"cosine **{cos:.2f}** as they are, **{r:.2f}** with each map's mean taken out (a correlation)"
            in said), said
    # A trained model B keeps its own processor: the same upload.
    assert compare.photo_for_b(ph, a_vm) == ph.key.sha1


def test_an_untrained_b_of_another_input_size_is_said_to_read_as_view_resized(tiny_rect):
    """A walk-through (ViT-Ti against the ViT-B/32-384 twin): an untrained B reads A's model-input view, and at
    another input size its processor resizes that view, but the verdict said "each model's processor made its
    own input of the photo", as if B had seen the whole photo its own way. Here A reads a 160×224 view (5×7
    patches of 32) and the 224-px twin gets that view squashed to 224×224, not the photo."""
    from PIL import Image

    wb = Workbench(device="cpu", catalog=Catalog(tiny_rect.id))
    wb.add_model(tiny_rect)
    photo = Image.open(EXAMPLES / "chelsea.jpg").convert("RGB")
    ph = wb.handle(PhotoKey(wb.catalog.public(tiny_rect.id), wb.add_photo(photo)))
    pr = compare.pair(ph, TWIN)
    va, vb = pr.a.analysis().input_view, pr.b.analysis().input_view
    assert va.shape == (160, 224, 3) and vb.shape == (224, 224, 3)
    # B's pixels: A's view resized by PIL with the twin's filter (not the photo through the twin's processor)
    pp = pr.b.vm.preprocess
    resized = np.asarray(Image.fromarray(va).resize((224, 224), pp.resample))
    assert np.abs(vb.astype(int) - resized.astype(int)).max() <= 1
    c = compare.cursor(pr, compare.CompareParams(model_b=TWIN))
    _, sa, sb = compare.depth_pictures(pr, c, shared=True)
    said = compare.verdict(pr, c, sa, sb)
    assert "(B read A's model-input view, resized to its 224×224 px)" in said, said
    assert "own input of the photo" not in said, said


def _hand_distances(att: torch.Tensor, grid: tuple[int, int], patch: int) -> np.ndarray:
    """(L, H, N, N) -> (L, H) mean attention distance in pixels, by loops: over each patch query, the
    attention-weighted distance between patch centres, its patch weights rescaled to sum to 1."""
    gh, gw = grid
    a = att.double().numpy()[..., 1:, 1:]  # one [CLS] in front
    out = np.zeros(a.shape[:2])
    for layer in range(a.shape[0]):
        for head in range(a.shape[1]):
            per_query = []
            for i in range(gh * gw):
                w = a[layer, head, i]
                d = [patch * np.hypot(i // gw - j // gw, i % gw - j % gw) for j in range(gh * gw)]
                per_query.append(float(np.dot(w, d) / w.sum()))
            out[layer, head] = np.mean(per_query)
    return out


def test_distances_of_models_of_other_input_widths_share_one_unit(tmp_path):
    """A walk-through (ViT-Ti at 224 px against the ViT-B/32-384 twin): the chart put both models' pixels on
    one 'model-input px' axis, so the twin's near-uniform attention (~200 of its 384 px) stood above every
    head of ViT-Ti, whose uniform attention is ~117 of 224 px: the same distance on the photo. With other
    input widths each distance is now a share of its own model's input width. Here A is 160 px wide
    (5×5 patches of 32) and the 224-px twin reads its view."""
    from tiny import make_tiny_vit

    import vizvit

    a_vm = vizvit.load_model(str(make_tiny_vit(tmp_path / "vit160", 160, 32)), device="cpu")
    wb = Workbench(device="cpu", catalog=Catalog(a_vm.id))
    wb.add_model(a_vm)
    ph = wb.handle(PhotoKey(wb.catalog.public(a_vm.id), wb.add_photo(str(EXAMPLES / "chelsea.jpg"))))
    pr = compare.pair(ph, TWIN)
    fig = compare.distance_figure(pr)
    assert fig.layout.yaxis.title.text == "distance ÷ its input width" and fig.layout.yaxis.tickformat == ".0%"
    sides = ((fig.data[0], pr.a, (5, 5), 32, 160), (fig.data[1], pr.b, (14, 14), 16, 224))
    for trace, side, grid, patch, width in sides:
        want = _hand_distances(side.analysis().attentions, grid, patch)
        np.testing.assert_allclose(np.array(trace.y), want.reshape(-1) / width, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose([c[2] for c in trace.customdata], want.reshape(-1), rtol=1e-4)  # px on hover


def test_distances_of_models_of_one_input_width_stay_in_pixels(bench):
    """The same input width: the chart keeps pixels (against the loops above)."""
    _, ph = bench
    pr = compare.pair(ph, TWIN)
    fig = compare.distance_figure(pr)
    assert fig.layout.yaxis.title.text == "distance (model-input px)"
    for trace, side in zip(fig.data, (pr.a, pr.b)):
        np.testing.assert_allclose(np.array(trace.y), _hand_distances(side.analysis().attentions, (14, 14), 16)
                                   .reshape(-1), rtol=1e-4)


def test_each_map_names_its_side_and_model_under_it(bench, monkeypatch):
    """On a phone the sides stack and a map's caption said only "A: layer 1/2": its model was named two screens
    up. The caption's first line is the side and its model: another model's name changes that band of pixels
    and nothing else (the map, the layer's line)."""
    _, ph = bench
    s = compare.side_maps(ph, 1, 2)
    ranges = ((0.0, 1.0), (0.0, 1.0))
    shown = {}
    for name in ("vit-tiny-augreg", "another-model-entirely"):
        monkeypatch.setattr(compare, "model_name", lambda vm, n=name: n)
        shown[name] = compare.side_pictures("A", ph, s, 1, 2, ranges, False)
    for a, b in zip(shown["vit-tiny-augreg"], shown["another-model-entirely"]):
        assert a.shape == b.shape
        rows = np.flatnonzero((a != b).any(axis=(1, 2)))
        bare = layout.map_image(ph.analysis().input_view, s.attention, ph.vm.geometry,
                                compare.attn_params(1, 2, "raw"), lo_hi=ranges[0],
                                scale=render.display_scale(ph.vm.geometry, compare.MAP_PX)).shape[0]
        _, cap = render.text_size("A", render.TEXT_PX)
        band = cap + 2 * max(3, cap // 4)
        # the pictures differ in the first caption band under the map, and only there
        assert rows.size and rows.min() >= bare and rows.max() < bare + band, (rows.min(), rows.max(), bare, band)
        assert a.shape[0] == bare + 2 * band  # two lines: the side and model, then the layer
