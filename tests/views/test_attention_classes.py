"""Class maps for any class (issue 43): the Attention tab's class menu lists every label, the
top-5 first, each class once; a class outside the top-5 gets its map, and a bad index a clear message."""

from __future__ import annotations

import numpy as np
import pytest
from tiny import EXAMPLES

import vizvit
from vizvit.errors import UserError
from vizvit.readings import attention as ra
from vizvit.views import attention as ap


def test_the_class_menu_lists_every_class_top5_first(tiny16, cat):
    a = vizvit.analyze(tiny16, cat)
    choices = ap.class_choices(a, tiny16.labels)
    assert [i for _, i in choices[:5]] == [p.index for p in a.top5]
    assert sorted(i for _, i in choices) == list(range(len(tiny16.labels))), "each class once"
    rest = choices[5:]
    assert [i for _, i in rest] == sorted(i for _, i in rest), "the others in index order"
    probs = a.probs.numpy()
    for name, i in rest:
        assert name == f"{tiny16.labels[i]} ({100 * probs[i]:.2g}%)"


def test_a_class_outside_the_top5_gets_its_own_map(tiny16, cat):
    a = vizvit.analyze(tiny16, cat)
    top = {p.index for p in a.top5}
    other = next(i for i in range(len(tiny16.labels)) if i not in top)
    p = ra.AttnParams()
    img, text = ap.method_panel(tiny16, a, "class relevance", other, p)
    assert f"Relevance for **{tiny16.labels[other]}** (class {other})" in text
    mine, _ = ap.method_panel(tiny16, a, "LeGrad", other, p)
    top1, _ = ap.method_panel(tiny16, a, "LeGrad", a.top5[0].index, p)
    assert not np.array_equal(mine, top1), "another class, another map"
    with pytest.raises(UserError, match="outside 0..6"):
        ap.method_panel(tiny16, a, "LeGrad", len(tiny16.labels), p)


def test_on_the_trained_vit_every_imagenet_label_can_be_found(trained):
    a = vizvit.analyze(trained, vizvit.load_image(str(EXAMPLES / "chelsea.jpg")))
    choices = ap.class_choices(a, trained.labels)
    assert len(choices) == 1000 and choices[0][0].startswith("Egyptian cat")
    found = [(name, i) for name, i in choices if "tabby" in name.lower()]  # what the menu's search matches
    assert [i for _, i in found] == [281], found


def test_a_signed_maps_negative_patches_are_said_as_this_scale_draws_them(tiny16, cat):
    """A reviewer, AttnLRP on the trained ViT-Ti with "this map's range": the text said the negative
    patches were "drawn as 0" while the colour bar started at −0.0279 and they took its lowest colours."""
    from dataclasses import replace

    a = vizvit.analyze(tiny16, cat)
    p = ra.AttnParams()
    _, zero_based = ap.method_panel(tiny16, a, "AttnLRP", a.top5[0].index, p)
    _, stretched = ap.method_panel(tiny16, a, "AttnLRP", a.top5[0].index, replace(p, scale="this map's range"))
    assert "the patches below 0 are drawn as 0" in zero_based and "drawn as 0" not in stretched
    lo = float(stretched.split("(it starts at ")[1].split(")")[0])
    assert lo < 0 and "take the bar's colours under 0" in stretched
