"""The Inside tab's view (vizvit/views/inside.py): the logit lens strip and sentence, heads switched off, head
importance."""

from __future__ import annotations

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
    assert list(tr.colorbar.ticktext)[-3:] == ["1%", "10%", "100%"]
    assert "log" in tr.colorbar.title.text
    # a probability of exactly 0 is floored, not -inf
    floor = inside.lens_figure(np.array([[0.0, 1.0]]), ["a", "b"]).data[0]
    assert floor.zmin == inside.LENS_LOG_FLOOR and np.isfinite(np.asarray(floor.z)).all()



def test_lens_sentence_follows_the_ranks():
    from vizvit.views import inside

    prob = np.array([0.0001, 0.002, 0.3, 0.82])
    t = inside.lens_text("cat", prob, np.array([703, 5, 2, 1]))
    assert "rank 703" in t and "top 5 from depth **1**" in t and "only at the last depth" in t and "rank 2, 30.0%" in t
    t = inside.lens_text("cat", prob, np.array([9, 3, 1, 1]))
    assert "top-1 from depth **2** on" in t and "top 5 from depth **1**" in t and "earlier" not in t


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
    assert "3 of 6 heads" in t and "zeroing 1.2 (-0.200)" in t
    assert "Largest" not in inside.importance_text(vm, 6, 6, None)
    assert inside.importance_text(vm, 3, 6, imp).startswith("Running")

