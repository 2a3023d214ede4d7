"""The Inside tab's view (vizvit/views/inside.py): the logit lens strip and sentence, heads switched off, head
importance."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from vizvit.model.ablation import Ablation
from vizvit.session import PhotoKey, Workbench
from vizvit.views import inside


def test_heat_strip_colours_log10_p_on_whole_decades():
    from vizvit.views import inside

    probs = np.array([[1e-4, 3e-5], [2e-3, 1e-2], [0.8, 0.05]])
    fig = inside.lens_figure(probs, ["cat", "dog"])
    tr = fig.data[0]
    assert (tr.zmin, tr.zmax) == (-5.0, 0.0), "decades around 3e-5 … 0.8"
    np.testing.assert_allclose(np.asarray(tr.z), np.log10(probs), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(tr.customdata), probs)  # exact p on hover
    assert list(tr.colorbar.tickvals) == [-5, -4, -3, -2, -1, 0]
    # every tick a percentage (a walk-through read "1e-3" beside "1%" as 1e-3 %)
    assert list(tr.colorbar.ticktext) == ["0.001%", "0.01%", "0.1%", "1%", "10%", "100%"]
    assert "log" in tr.colorbar.title.text
    # along the bar: above it, the title overlapped the top tick's "100%", which sits half above the bar's end
    # (a reviewer's screenshot; checked by eye in a PNG of the figure after the change)
    assert tr.colorbar.title.side == "right"
    # a probability of exactly 0 is floored, not -inf
    floor = inside.lens_figure(np.array([[0.0, 1.0]]), ["a", "b"]).data[0]
    assert floor.zmin == inside.LENS_LOG_FLOOR and np.isfinite(np.asarray(floor.z)).all()



def test_lens_sentence_follows_the_ranks():
    from vizvit.views import inside

    prob = np.array([0.0001, 0.002, 0.3, 0.82])
    t = inside.lens_text("cat", prob, np.array([703, 5, 2, 1]))
    assert "rank 703" in t and "top 5 from depth **1**" in t and "only at the last depth" in t and "rank 2, 30.0%" in t
    # coffee's espresso at depth 0 (p = 0.00002) read "p = 0.00%" beside rank 875: no chance at all
    coffee = inside.lens_text("cat", np.array([0.00002, 0.5]), np.array([875, 1]))
    assert "(p = 0.010%)" in t and "(p = 0.0020%)" in coffee and "(depth 0: rank 875, 0.0020%)" in coffee, coffee
    t = inside.lens_text("cat", prob, np.array([9, 3, 1, 1]))
    assert "top-1 from depth **2** on" in t and "top 5 from depth **1**" in t and "earlier" not in t
    assert "before, then out of it" not in t
    # in the top 5 at depths 1-2 and 4, out of it at 3 and 5: "from depth 6 on" names the earlier stints
    # (a walk-through: "from depth 12 on" beside a table with ranks 4, 1, 3, 3 at depths 5-8)
    t = inside.lens_text("cat", np.full(8, 0.1), np.array([9, 4, 2, 8, 5, 7, 3, 1]))
    assert "top 5 from depth **6** on (and at depths 1–2, 4 before, then out of it)" in t


def test_a_top_1_held_then_lost_is_not_denied():
    """The trained ViT-Ti, Egyptian cat with heads 3.2 and 7.1 off: rank 1 at depth 10, 2 at depth 11,
    1 at the last. "Top-1 only at the last depth" was false; the sentence now names depth 10."""
    from vizvit.views import inside

    prob = np.array([0.001, 0.01, 0.195, 0.336, 0.662])
    rank = np.array([40, 7, 1, 2, 1])
    t = inside.lens_text("cat", prob, rank)
    assert "only at the last depth" not in t.replace("for good only at the last depth", "")
    assert "for good only at the last depth (depth 3: rank 2, 33.6%)" in t
    assert "earlier too, at depth 2, and lost it again" in t
    t = inside.lens_text("cat", prob, np.array([1, 7, 1, 1, 1]))
    assert "from depth **2** on" in t and "at depth 0, and lost it" in t


def test_every_tab_sees_the_ablated_model_through_the_session_key(tiny, cat):
    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    off = inside.with_ablation(key, Ablation(((0, 1),)))
    a, b = wb.analysis(key), wb.analysis(off)
    assert not torch.equal(a.attentions[1], b.attentions[1]), "layer 2's attention follows the ablated layer 1"
    assert torch.equal(a.attentions[0], b.attentions[0]), "layer 1's own attention is computed before o_proj"
    assert wb.analysis(off) is b, "cached per ablation set: one forward per change"



def test_the_sweep_the_contest_and_other_sizes_run_the_ablated_model_too(tiny, cat):
    """A reviewer on the trained ViT-Ti, head 3.1 off: the Positions tab set "at 224 px: brain coral
    18.6%" (ablated) beside "at 384 px: Egyptian cat 84.2%" (the intact model's), and the shift sweep's
    and the contest's curves started at the intact 0.822. Each now starts where the ablated analysis is."""
    from vizvit.readings import contest, positions, sweep

    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    off = inside.with_ablation(key, Ablation(tuple((l, h) for l in range(tiny.geometry.num_layers)
                                                   for h in range(tiny.geometry.num_heads))))
    intact, ablated = wb.analysis(key).probs, wb.analysis(off).probs
    t = int(ablated.argmax())
    assert abs(float(intact[t]) - float(ablated[t])) > 1e-3, "the ablation must move the probability"
    ph = wb.handle(off)
    row0 = sweep.full_sweep(ph).rows[0]
    assert row0.k == 0 and abs(row0.base_class_prob - float(ablated[t])) < 1e-5
    native = tiny.geometry.image_size[0]
    np.testing.assert_allclose(positions.predict_at(ph, native).probs, ablated.numpy(), atol=1e-5)
    c = contest.compute_contest(ph, steps=2)
    assert c.first.curves.target == t
    np.testing.assert_allclose(c.first.curves.deletion[:, 0], float(ablated[t]), atol=1e-5)
    # the intact photo's own runs are unchanged: another cache entry
    assert abs(sweep.full_sweep(wb.handle(key)).rows[0].base_class_prob - float(intact.max())) < 1e-5


def test_grid_clicks_toggle_a_head_or_a_whole_layer(tiny):
    g = tiny.geometry
    x = inside.LEFT + 1.5 * inside.CELL
    y = inside.TOP + 0.5 * inside.CELL
    cells, _ = inside.cell_at(g, x, y)
    assert cells == [(0, 1)]
    layer, _ = inside.cell_at(g, 5, inside.TOP + 1.5 * inside.CELL)
    assert layer == [(1, 0), (1, 1)]
    ab = inside.toggle(Ablation(((1, 0),)), layer)
    assert ab.heads == ((1, 0), (1, 1))  # any on -> all off
    assert inside.toggle(ab, layer).heads == ()
    assert inside.cell_at(g, x, 3)[0] == []  # the header row



def test_importance_sentence_names_the_heads_from_the_numbers():
    from types import SimpleNamespace

    import numpy as np

    from vizvit.views import inside

    vm = SimpleNamespace(geometry=SimpleNamespace(num_layers=2, num_heads=3))
    imp = np.array([[0.01, -0.2, 0.0], [0.6, 0.07, 0.03]], np.float32)
    t = inside.importance_text(vm, 6, 6, imp)
    assert "Largest drop: head **2.1** (+0.600); next: 2.2 (+0.070)" in t
    assert "3 of 6 heads" in t and "zeroing 1.2 raises it most: by 0.200 (its cell's drop: -0.200)" in t
    assert "Largest" not in inside.importance_text(vm, 6, 6, None)
    assert "intact model" not in t  # every head on: nothing to say
    # heads switched off: the run still measures the intact model, and says so beside the ablated top-5
    t = inside.importance_text(vm, 6, 6, imp, off=2)
    assert "Measured on the intact model, every head on: not on the 2 heads switched off above" in t
    assert inside.importance_text(vm, 3, 6, imp).startswith("Running")



def test_the_lens_says_depth_0_is_the_same_on_every_photo_when_it_is(tiny, cat):
    """A reviewer: "crayfish 5.0%" at depth 0 on every photo, read as this photo's. A ViT's head reads
    [CLS], which at depth 0 is its learned token plus its position: two photos, one row."""
    from PIL import Image

    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    grey = Image.new("RGB", (300, 200), (90, 90, 90))
    panels = [inside.lens_panel(wb.handle(PhotoKey(tiny.id, wb.add_photo(im)))) for im in (cat, grey)]
    assert tiny.family.pooling == "token"
    # the readout's own top class and p at depth 0 (the last two columns follow each photo's final class)
    assert panels[0].rows[0][:3] == panels[1].rows[0][:3]
    assert panels[0].rows[0][0] == "0 (emb.)"  # short: the text says why (a phone's column)
    assert panels[0].rows[-1][:3] != panels[1].rows[-1][:3], "the last depth does read the photo"
    assert "at depth 0 (before any block, where the readout is the same on every photo" in panels[0].text
    # the rank is this photo's final class's place in that readout: said to differ, never to be the same
    assert "only which class is this photo's final one differs" in panels[0].text
    assert "the same on every photo" not in inside.lens_text("cat", np.array([0.1, 0.8]), np.array([3, 1]))


def test_a_new_photo_shows_its_own_importance_text_or_none(tiny, cat):
    """Browser walk on the trained ViT-Ti: chelsea's "Largest drop: head 3.1 (+0.816)" stayed under coffee.jpg
    beside a blank grid. The tab's open now says only the photo's own finished run."""
    from PIL import Image

    from vizvit.readings import heads

    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    assert inside.show(wb.handle(key), inside.InsideParams()).importance_text == ""
    imp = heads.head_importance(wb.handle(key))
    text = inside.show(wb.handle(key), inside.InsideParams()).importance_text
    L, H = imp.shape
    top = int(np.argmax(imp))  # the largest drop, by hand: layer.head from 1
    assert text.startswith(f"Done: {L * H} forwards") and f"head **{top // H + 1}.{top % H + 1}**" in text
    # Heads switched off afterwards: the same run (intact model), said to be on the intact model.
    off = inside.show(wb.handle(inside.with_ablation(key, Ablation(((0, 0),)))), inside.InsideParams())
    assert "Measured on the intact model" in off.importance_text
    other = PhotoKey(tiny.id, wb.add_photo(Image.fromarray(np.asarray(cat)[::-1].copy())))
    assert inside.show(wb.handle(other), inside.InsideParams()).importance_text == ""


def test_the_grid_says_when_it_shows_each_heads_importance_and_the_text_says_where(tiny, cat):
    """A walk-through on a 390 px phone: "which heads matter" drew into the layers × heads grid ~1,600 px above
    its button, whose label still said only "click to switch heads off", while the sentence under the button
    said "Cells show the drop…". The label names the importance while the grid shows it, and goes back on a
    photo without a run; the sentence says where the cells are."""
    from PIL import Image

    from vizvit.readings import heads

    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    plain = "Layers × heads: click to switch heads off"
    assert inside.show(wb.handle(key), inside.InsideParams()).grid_label == plain
    imp = heads.head_importance(wb.handle(key))
    page = inside.show(wb.handle(key), inside.InsideParams())
    assert page.grid_label == "Layers × heads: each head's importance (top-1 drop) · click to switch heads off"
    L, H = imp.shape
    assert page.importance_text.startswith(f"Done: {L * H} forwards ({L} × {H}), drawn in **the Layers × heads "
                                           "grid above**: each cell is the drop of the top-1 probability")
    # its unit said: the top-5 chart beside it writes changes in percentage points, the drops are probabilities
    # ("+0.816" beside "-9.3 pp", a reviewer)
    assert "as a probability (0.10 is 10 percentage points, the top-5 chart's pp)" in page.importance_text
    # Heads switched off on top: still the same importance cells (crossed out where off), still said.
    off = inside.show(wb.handle(inside.with_ablation(key, Ablation(((0, 0),)))), inside.InsideParams())
    assert off.grid_label == page.grid_label
    # A new photo, no run yet: the grid is the switch-off grid again, and so is its label.
    other = PhotoKey(tiny.id, wb.add_photo(Image.fromarray(np.asarray(cat)[::-1].copy())))
    assert inside.show(wb.handle(other), inside.InsideParams()).grid_label == plain
    running = inside.importance_text(tiny, 2, L * H)
    assert running.startswith(f"Running… 2 of {L * H} forwards") and "the Layers × heads grid above" in running


def test_a_switched_off_head_keeps_its_importance_colour_readable():
    """Chelsea on the trained ViT-Ti with 3.1 off: the text said "Largest drop: head 3.1 (+0.816) … read the colours
    against the bar" while the grid filled 3.1's cell dark. Against the same grid with every head on: an off
    cell keeps most of its pixels (its colour) and still carries a mark that stands out from that colour, on the
    bar's darkest red, its darkest blue and its white middle alike."""
    g = SimpleNamespace(num_layers=2, num_heads=3)
    imp = np.array([[0.8, 0.0, -0.8], [0.1, 0.2, 0.3]], np.float32)
    cells = [(0, 0), (0, 1), (0, 2)]  # +lim (dark red), 0 (white), -lim (dark blue)
    on = inside.ablation_grid(g, Ablation(), imp)
    off = inside.ablation_grid(g, Ablation(tuple(cells)), imp)
    for l, hd in cells:
        y0, x0 = inside.TOP + l * inside.CELL, inside.LEFT + hd * inside.CELL
        box = (slice(y0 + 1, y0 + inside.CELL - 1), slice(x0 + 1, x0 + inside.CELL - 1))
        colour = on[y0 + inside.CELL // 2, x0 + inside.CELL // 2].astype(int)  # its fill, every head on
        diff = np.abs(off[box].astype(int) - colour).sum(-1)  # (CELL - 2, CELL - 2)
        kept = (diff <= 30).mean()
        assert kept > 0.5, f"{l + 1}.{hd + 1}: only {kept:.0%} of its cell keeps its colour"
        assert (diff > 300).sum() > 50, f"{l + 1}.{hd + 1}: no mark that stands out from its colour"
    rest = np.ones(on.shape[:2], bool)
    for l, hd in cells:
        rest[inside.TOP + l * inside.CELL:inside.TOP + (l + 1) * inside.CELL,
             inside.LEFT + hd * inside.CELL:inside.LEFT + (hd + 1) * inside.CELL] = False
    assert (off[rest] == on[rest]).all(), "only the switched-off cells change"


def test_drops_that_print_alike_are_told_apart_or_called_level():
    """A 20 × 20 photo read "Largest drop: head 2.2 (+0.100); next: 3.2 (+0.100)": one of two numbers that print
    the same was called the larger. Drops that differ get the decimals that show it; equal ones are level."""
    vm = SimpleNamespace(geometry=SimpleNamespace(num_layers=2, num_heads=3))

    def said(*drops):
        return inside.importance_text(vm, 6, 6, np.array(drops, np.float32).reshape(2, 3))

    # 20 × 20 chelsea on the trained ViT-Ti: 2.2 +0.41539, 3.2 +0.41501 (a 2-layer grid here: 1.2 and 2.1)
    assert "Largest drop: head **1.2** (+0.4154); next: 2.1 (+0.4150)." in said(0.1, 0.41539, 0.0, 0.41501, 0.2, 0.3)
    assert "Largest drop: head **1.3** (+0.10002); next: 2.3 (+0.10001)." in said(0, 0, 0.10002, 0, 0, 0.10001)
    assert "Largest drop: head **1.1** (+0.600); next: 2.1 (+0.070)." in said(0.6, 0, 0, 0.07, 0, 0)  # as before
    level = said(0.05, 0.1, 0.02, 0.0, 0.1, 0.03)
    assert "Largest drops: heads **1.2 and 2.2**, +0.100 each." in level and "next" not in level
    assert "Largest drops: heads **1.1, 1.3 and 2.2**, +0.250 each." in said(0.25, 0, 0.25, 0, 0.25, 0.1)


def test_with_the_radio_on_mean_the_importance_shown_is_the_mean_runs(tiny, cat):
    """The radio on "mean": "which heads matter" zeroed each head all the same, and said "zeroed". The tab shows
    the run of the radio's mode, named by it: none until that run is done, whatever the zero run says."""
    from vizvit.readings import heads

    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(cat))
    mean = inside.with_ablation(key, Ablation((), "mean"))
    heads.head_importance(wb.handle(key))  # the zero run
    page = inside.show(wb.handle(mean), inside.InsideParams())
    assert page.importance_text == "" and page.grid_label == inside.GRID_LABEL
    imp = heads.head_importance(wb.handle(mean), mode="mean")
    page = inside.show(wb.handle(mean), inside.InsideParams())
    assert "when that head alone is set to its mean over the photo's tokens," in page.importance_text
    assert "zero" not in page.importance_text
    assert np.array_equal(page.grid, inside.ablation_grid(tiny.geometry, mean.ablation, imp))
    L, H = imp.shape
    low = int(np.argmin(imp))  # the largest rise, by hand: layer.head from 1
    if imp.min() < 0:
        assert f"setting {low // H + 1}.{low % H + 1} to its mean raises it most" in page.importance_text
    zero = inside.show(wb.handle(key), inside.InsideParams()).importance_text
    assert "when that head alone is zeroed," in zero and "mean" not in zero


def test_heads_level_for_the_largest_rise_are_named_together():
    """Two heads whose switching off raises the probability by the same amount: the sentence named the first of
    them ("zeroing 1.2 raises it most") as if it alone did. Level rises are named together, as level drops are."""
    vm = SimpleNamespace(geometry=SimpleNamespace(num_layers=2, num_heads=3))

    def said(*drops, mode="zero"):
        return inside.importance_text(vm, 6, 6, np.array(drops, np.float32).reshape(2, 3), mode=mode)

    assert ("zeroing 1.2 and zeroing 2.3 raise it most, level: by 0.200 each (their cells' drop: -0.200)."
            in said(0.3, -0.2, 0.0, 0.1, 0.05, -0.2))
    assert ("setting 1.1 to its mean, setting 1.3 to its mean and setting 2.2 to its mean raise it most, level: "
            "by 0.050 each" in said(-0.05, 0.3, -0.05, 0.0, -0.05, 0.1, mode="mean"))
    # apart at the 6th decimal: one head, and the next printed far enough to tell them apart, as the largest drop
    # and the next are (it said "by 0.200" of one head alone while another's rise printed the same: a reviewer)
    alone = said(0.3, -0.200001, 0.0, 0.1, 0.05, -0.2)
    assert ("zeroing 1.2 raises it most: by 0.200001; next: 2.3 by 0.200000 (their cells' drops: -0.200001, "
            "-0.200000)." in alone and "level" not in alone), alone
    # apart at 3 decimals: one head alone, as before
    assert "zeroing 1.2 raises it most: by 0.300 (its cell's drop: -0.300)." in said(0.3, -0.3, 0.0, 0.1, 0.05, -0.2)


def test_a_weak_prediction_sets_the_bar_a_head_must_pass_at_a_quarter_of_itself():
    """A flat grey photo on the trained ViT-Ti, top-1 at 0.025: "0 of 36 heads move the probability by more than
    0.05", where no drop can pass 0.025. Below 0.20 the bar is a quarter of the intact top-1 probability; from 0.20
    up it stays 0.05 (chelsea's 0.82: 18 of 36, as before)."""
    vm = SimpleNamespace(geometry=SimpleNamespace(num_layers=2, num_heads=3))
    drops = np.array([[0.018, -0.020, 0.0], [0.010, 0.005, 0.007]], np.float32)
    # bar 0.025 / 4 = 0.00625: 0.018, -0.020, 0.010 and 0.007 pass it, 0.005 and 0 do not (by hand)
    t = inside.importance_text(vm, 6, 6, drops, p0=0.025)
    assert "4 of 6 heads move the probability by more than 0.0063 (a quarter of the intact top-1 probability, " \
           "0.025: below 0.20 the bar is that quarter, not 0.05, which no drop from 0.025 can pass)" in t, t
    # 0.12: bar 0.03, and a drop of 0.05 could happen: not said that it cannot
    t = inside.importance_text(vm, 6, 6, drops * 3, p0=0.12)  # 0.054, -0.06, 0.03, 0.015, 0.021: two pass 0.03
    assert "2 of 6 heads move the probability by more than 0.0300 (a quarter of the intact top-1 probability, " \
           "0.120: below 0.20 the bar is that quarter, not 0.05)" in t, t
    imp = np.array([[0.01, -0.2, 0.0], [0.6, 0.07, 0.03]], np.float32)
    for p0 in (0.82, 0.20):  # from 0.20 up: 0.05, as before
        assert "3 of 6 heads move the probability by more than 0.05;" in inside.importance_text(vm, 6, 6, imp, p0=p0)


def test_the_tab_counts_a_flat_grey_photos_heads_against_its_own_top_1(trained):
    """The reviewer's grey photo, trained ViT-Ti: top-1 letter opener at 0.0248. Plain transformers, each head's
    slice zeroed before o_proj (a script beside the
    review), gives a largest drop of 0.018 and 8 heads past 0.0248 / 4
    (the 8th at 0.00627, the 9th at 0.00608: both far from float32 noise)."""
    from PIL import Image

    from vizvit.readings import heads

    wb = Workbench(device="cpu")
    wb.add_model(trained)
    key = PhotoKey(trained.id, wb.add_photo(Image.fromarray(np.full((224, 224, 3), 128, np.uint8))))
    heads.head_importance(wb.handle(key))
    t = inside.show(wb.handle(key), inside.InsideParams()).importance_text
    assert "Largest drop: head **4.2** (+0.018)" in t, t
    assert "8 of 36 heads move the probability by more than 0.0062 (a quarter of the intact top-1 probability, " \
           "0.025" in t, t


def test_heads_switched_off_keep_the_animation_note_of_the_photo(tiny):
    """The status after heads are switched off was written without the upload's note (an animation: the model
    sees frame 1 only), as a model change's was (a walk-through); the ablated model sees frame 1 only too."""
    from make_inputs import make_all

    wb = Workbench(device="cpu")
    wb.add_model(tiny)
    key = PhotoKey(tiny.id, wb.add_photo(make_all()["animated.gif"]))  # 2 frames
    off = inside.ablate(wb.handle(key), Ablation(frozenset({(0, 0)})))
    assert "An animation of 2 frames: the model sees frame 1 only." in off.status, off.status
