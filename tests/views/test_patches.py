"""The Patches tab's view (vizvit/views/patches.py): the preview of a new photo and the grid drawn after its forward."""

from __future__ import annotations

import pytest

import vizvit


@pytest.mark.parametrize("lines, indices, clicked", [(True, False, None), (False, True, (1, 2))])
def test_a_new_photos_preview_needs_no_forward_and_is_the_grid_drawn_after_it(fam, cat, lines, indices, clicked):
    """The upload sends the grid before the forward; the open tab's event sends it again after.
    It must be the same picture (the same file: nothing flickers), from no forward at all."""
    import numpy as np

    from vizvit.session import PhotoKey, Workbench
    from vizvit.views import patches

    wb = Workbench(device="cpu")
    wb.add_model(fam)
    ph = wb.handle(PhotoKey(fam.id, wb.add_photo(cat)))
    p = patches.PatchesParams(lines, indices, clicked)
    first = patches.preview(ph, p)
    assert len(wb.cache) == 0, "the preview ran a forward pass (or a text forward)"
    after = patches.show(ph, p).grid
    assert first.dtype == np.uint8 and first.shape == after.shape
    assert np.array_equal(first, after), f"{fam.id}: the preview differs from the grid drawn after the forward"


def test_patches_explanation_uses_the_model_numbers():
    from vizvit.views.patches import patches_explanation

    text = patches_explanation(vizvit.load_model("random:vit-base-patch16-224", device="cpu"))
    assert "14×14 = **196 patches**" in text and "**768 numbers**" in text and "**197 tokens**" in text
    assert "38,809-weight" in text
    # the family's head said as a sentence ("the head reads a linear head on …" read twice: a walk-through)
    assert "**ViT**: on top, a linear head on the final [CLS] token." in text and "head reads a" not in text
