"""The Experiments tab's view (vizvit/views/experiments.py): shifts, masks, the sweep, the deletion curves and their charts, cached per photo."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vizvit
from vizvit import perturb
from vizvit.export import export
from vizvit.images import View, shift_view
from vizvit.session import PhotoKey, Workbench
from vizvit.views import experiments

from tiny import EXAMPLES


def test_workbench_panels_cache_their_forwards(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    key = PhotoKey(tiny16.id, wb.add_photo(cat))
    experiments.shift_panel(wb.handle(key), 5, -3, "wrap")
    misses = wb.cache.misses
    experiments.shift_panel(wb.handle(key), 5, -3, "wrap")
    assert wb.cache.misses == misses  # the second time: no forward
    p1 = list(experiments.sweep_progress(wb.handle(key)))
    p2 = list(experiments.sweep_progress(wb.handle(key)))
    assert len(p1) > 1 and len(p2) == 1 and p2[0].table == p1[-1].table
    c1 = experiments.curves_panel(wb.handle(key), 3, "black")
    misses = wb.cache.misses
    c2 = experiments.curves_panel(wb.handle(key), 3, "black")
    assert wb.cache.misses == misses and c1.table == c2.table
    m = experiments.mask_action(wb.handle(key), (), "top", 10)
    assert len(m) == round(0.1 * 196)
    from vizvit import maps
    a = wb.analysis(key)
    for by in ("LeGrad", "Grad-CAM", "gradient rollout"):  # masks by any map (issue 32), the same map as elsewhere
        want = perturb.mask_by_map(maps.class_map(by, tiny16, a, a.top5[0].index), 0.1)
        assert experiments.mask_action(wb.handle(key), (), "top", 10, rank_by=by) == want
    assert experiments.toggle_at(wb.handle(key), m, 5.0, 5.0) == perturb.toggle(m, 0)



def test_export_writes_sweep_and_deletion_curves(tiny_dirs, tmp_path):
    vm = vizvit.load_model(str(tiny_dirs["p32"]), device="cpu")
    summary = export(EXAMPLES / "coffee.jpg", tmp_path, model=vm, view=View(mask=(3, 17, 40)))
    arrays = np.load(tmp_path / "arrays.npz")
    assert arrays["shift_sweep"].shape == (2 * 32 + 1, 4)
    assert np.array_equal(arrays["shift_sweep"][:, 0], np.arange(65))
    names = ["rollout", "last-layer [CLS] attention", "random", "class relevance", "gradient rollout", "LeGrad",
             "Grad-CAM"]
    assert arrays["deletion_curves"].shape == arrays["insertion_curves"].shape == (7, 11)
    assert list(arrays["deletion_curve_maps"]) == names
    auc = arrays["contest_auc"]  # the contest through export: AUCs and the ranking best first
    assert auc.shape == (7, 3) and np.allclose(auc[:, 2], auc[:, 1] - auc[:, 0], atol=1e-6)
    assert list(arrays["contest_ranking"]) == [names[k] for k in np.argsort(-auc[:, 2], kind="stable")]
    assert arrays["masked_probs"].shape == (7,)
    assert set(summary["arrays"]) == set(arrays.files)



def test_curves_shown_map_by_map_end_equal_to_one_batched_run(tiny16, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    key = PhotoKey(tiny16.id, wb.add_photo(cat))
    started, *panels_seen = list(experiments.curves_progress(wb.handle(key), steps=4, mode="black"))
    maps = experiments.curve_maps(wb.handle(key))
    # First the news that work started (no figures yet), then one update per map, as they come.
    assert started.chart is None and "Computing" in started.text and f"{len(maps)} maps" in started.text
    assert len(panels_seen) == len(maps)
    assert "1 of" in panels_seen[0].text and "of" not in panels_seen[-1].text.split("·")[0]
    whole = perturb.faithfulness_curves(tiny16, wb.analysis(key).input_view, maps, steps=4, mode="black")
    cached = experiments.compute_curves(wb.handle(key), steps=4, mode="black")  # filled by the progress run
    assert cached.names == whole.names
    assert np.allclose(cached.deletion, whole.deletion, atol=1e-6)
    assert np.allclose(cached.insertion, whole.insertion, atol=1e-6)
    assert len(list(experiments.curves_progress(wb.handle(key), steps=4, mode="black"))) == 1  # cached now



def test_cnn_beside_the_vit_in_the_sweep(tiny16, cat, tmp_path):
    from transformers import ResNetConfig, ResNetForImageClassification

    from vizvit.cnn import cnn_shift_probs, load_cnn

    torch.manual_seed(0)
    ResNetForImageClassification(ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                                              layer_type="basic", num_labels=5)).save_pretrained(tmp_path)
    cnn = load_cnn(str(tmp_path), device="cpu")
    view = vizvit.analyze(tiny16, cat).input_view
    probs = cnn_shift_probs(cnn, view, [0, 3, 16])
    # Reference: the CNN on each shifted view, one at a time, normalised by hand.
    def p(v):
        x = (torch.from_numpy(v).permute(2, 0, 1).float()[None] / 255 - torch.tensor(cnn.mean).view(1, 3, 1, 1)) \
            / torch.tensor(cnn.std).view(1, 3, 1, 1)
        with torch.no_grad():
            return cnn.model(pixel_values=x).logits.softmax(-1)[0]
    top1 = int(p(view).argmax())
    ref = [float(p(shift_view(view, k, 0, "edge"))[top1]) for k in (0, 3, 16)]
    assert np.allclose(probs, ref, atol=1e-5) and abs(probs[0] - float(p(view).max())) < 1e-5
    # In the page's sweep: one more trace and one more column, only when a CNN is loaded.
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    key = PhotoKey(tiny16.id, wb.add_photo(cat))
    plain = list(experiments.sweep_progress(wb.handle(key)))[-1]
    wb.cnn = cnn
    beside = list(experiments.sweep_progress(wb.handle(key)))[-1]
    assert len(beside.figure.data) == len(plain.figure.data) + 1
    assert beside.table["headers"][-1] == "CNN p(top-1)" and "CNN p(top-1)" not in plain.table["headers"]
    with pytest.raises(ValueError, match="convolutional"):
        load_cnn(tiny16.id, device="cpu")  # a ViT checkpoint directory



def test_curves_and_sweep_charts_have_clean_ticks_and_one_view_count(tiny16, cat):
    """Issue 17: the curves' 0 % and 0 ticks do not meet; the sweep's probability ticks are
    0/25/50/75/100 %; progress never promises a per-map view count the end contradicts."""
    from vizvit.session import Workbench
    from vizvit.views import experiments

    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(tiny16)
    from vizvit.session import PhotoKey

    k = PhotoKey(tiny16.id, wb.add_photo(cat))
    first, *_, last = list(experiments.curves_progress(wb.handle(k), 2, "black"))
    assert "views each" not in first.text and "views in all" in last.text
    assert last.chart.layout.xaxis.range[0] < 0
    panels = list(experiments.sweep_progress(wb.handle(k)))
    assert list(panels[-1].figure.layout.yaxis2.tickvals) == [0, 0.25, 0.5, 0.75, 1.0]



def test_deletion_verdict_on_constructed_aucs():
    from vizvit.views.experiments import deletion_verdict, first_removed

    names = ("rollout", "last-layer [CLS] attention", "random", "class relevance")
    # The trained ViT-Ti on chelsea.jpg: random first.
    t = deletion_verdict(names, np.array([0.596, 0.519, 0.463, 0.567]), "black", "cat", 0.82,
                         {"rollout": 4, "last-layer [CLS] attention": 4, "class relevance": 0}, "the four corners", 20)
    assert "no map beats **random order** (AUC 0.463" in t and "Random ranks 1 of 4" in t
    assert "Worse than random: rollout (0.596), last-layer [CLS] attention (0.519), class relevance (0.567)" in t
    assert "rollout 4, last-layer [CLS] attention 4;" in t and "class relevance 0" not in t
    assert "a likely reason" in t and "One photo and one fill" in t
    # A map that wins clearly; one within 2 % of p0 of random is "about random"; no artifacts named.
    t = deletion_verdict(names, np.array([0.30, 0.455, 0.46, 0.50]), "blur", "cat", 0.8)
    assert "**rollout** removes p(cat) fastest (deletion AUC 0.3" in t and "better than random (0.46): rollout (0.3)." in t
    assert "About random" in t and "last-layer [CLS] attention (0.455)" in t and "Worse than random: class relevance" in t
    assert "artifact" not in t and "(blur fill)" in t
    # artifacts among the first patches of a map that beats random: named, but not blamed
    t = deletion_verdict(names, np.array([0.30, 0.5, 0.46, 0.5]), "black", "cat", 0.8, {"rollout": 2}, "x", 20)
    assert "rollout 2" in t and "a likely reason" not in t
    # the first step removes round(P / steps) patches, highest first, ties by patch number
    m = np.array([[0.1, 0.9], [0.9, 0.2]])
    assert first_removed(m, 2).tolist() == [1, 2]



def test_a_page_asked_for_by_key_is_the_views_own_and_any_other_key_is_refused(tiny16, cat):
    """shift_book_at / mask_book_at: the key the page sends (any caller's text) -> the book holding
    that key's page, drawn as shift_panel / mask_panel draw it; every malformed key: a UserError."""
    from vizvit.errors import UserError
    from vizvit.views import flip

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(cat)))
    book = experiments.shift_book_at(ph, "5|-3|wrap")
    panel = experiments.shift_panel(ph, 5, -3, "wrap")
    assert list(book.pages) == ["5|-3|wrap"]
    page = book.pages["5|-3|wrap"]
    assert np.array_equal(page["view"], panel.view) and np.array_equal(page["cosine"], panel.cosine)
    assert isinstance(page["top5"], flip.Chart) and page["top5"].figure.to_json() == panel.top5.to_json()
    book = experiments.mask_book_at(ph, "black|3,17")
    mp = experiments.mask_panel(ph, (3, 17), "black")
    page = book.pages["black|3,17"]
    assert np.array_equal(page["grid"], mp.grid) and np.array_equal(page["masked"], mp.masked)
    assert book.toggle.state is None  # the page keeps its own mask (a later click may be on its way)
    assert list(experiments.mask_book_at(ph, "drop|").pages) == ["drop|"]
    for bad in ("5|-3", "5|-3|wrap|1", "x|0|edge", "1.5|0|edge", "²|0|edge", "1|0|lava", "9" * 20 + "|0|edge",
                "1|0|" + "e" * 9000, None, 7):
        with pytest.raises(UserError):
            experiments.shift_book_at(ph, bad)  # type: ignore[arg-type]
    every = ",".join(str(i) for i in range(tiny16.geometry.num_patches))
    for bad in ("drop", "dance|3", "drop|3,x", "drop|" + every):
        with pytest.raises(UserError):
            experiments.mask_book_at(ph, bad)
