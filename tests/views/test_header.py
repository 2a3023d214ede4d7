"""The page's header (vizvit/views/header.py): a photo's key keeps the heads switched off and, for a
CLIP / SigLIP model only, the typed labels; a new model that loads gives its line, banner and key;
one that fails leaves the list and the current model stays, its twin named. Expected values written
by hand."""

from __future__ import annotations

import shutil

import pytest
from make_inputs import make_all
from tiny import EXAMPLES

from vizvit.errors import UserError
from vizvit.model.ablation import Ablation
from vizvit.model.catalog import Catalog
from vizvit.model.zeroshot import DEFAULT_TEMPLATE
from vizvit.session import PhotoKey, Workbench
from vizvit.views import header


@pytest.fixture
def wb(tiny16, towers, tiny_dirs, tmp_path):
    broken = tmp_path / "broken-vit"
    shutil.copytree(tiny_dirs["p16"], broken)
    for f in broken.glob("*.safetensors"):
        f.write_bytes(f.read_bytes()[:100])  # weights cut short: the model cannot load
    catalog = Catalog(tiny16.id, extra=(towers["clip16"].id, str(broken)), curated=())
    return Workbench(cache_bytes=64 << 20, device="cpu", catalog=catalog)


def vit(wb, tiny16) -> str:
    return wb.catalog.public(tiny16.id)  # a local folder is listed by its name


def test_a_photos_key_keeps_the_heads_off_and_labels_for_a_text_model_only(wb, tiny16, towers):
    k = header.photo_key(wb, vit(wb, tiny16), "abc", "1.2", "zero", "cat, dog", DEFAULT_TEMPLATE)
    assert k.ablation == Ablation(((0, 1),), "zero") and k.labels == () and k.template == ""  # a ViT: no labels
    clip = wb.catalog.public(towers["clip16"].id)
    k = header.photo_key(wb, clip, "abc", "", "zero", "cat, dog", "a photo of {}")
    assert k.labels == ("cat", "dog") and k.template == "a photo of {}" and k.ablation == Ablation()
    k = header.photo_key(wb, vit(wb, tiny16), "abc", "9.9", "zero", "", DEFAULT_TEMPLATE)  # no such head here
    assert k.ablation == Ablation()  # a box that makes no sense on this model blocks no upload
    with pytest.raises(UserError):
        header.photo_key(wb, clip, "abc", "", "zero", "cat, dog", "no placeholder")


def test_a_new_model_without_a_photo_gives_its_line_and_no_key(wb, towers):
    clip = wb.catalog.public(towers["clip16"].id)
    change = header.new_model(wb, clip, None, "cat, dog", DEFAULT_TEMPLATE, clip, False)
    assert change.loaded and change.key is None and change.model == clip and change.zero_shot
    assert change.status.startswith(f"**{clip}**") and "CLIP (image tower)" in change.status
    assert "softmax over your labels" in change.rule  # what the labels box means for CLIP


def test_a_new_model_keeps_the_photo_and_drops_the_heads(wb, tiny16, towers, cat):
    sha = wb.add_photo(cat)
    k = PhotoKey(vit(wb, tiny16), sha, Ablation(((0, 0),), "zero"))
    clip = wb.catalog.public(towers["clip16"].id)
    change = header.new_model(wb, clip, k, "cat, dog", DEFAULT_TEMPLATE, vit(wb, tiny16), False)
    assert change.key == PhotoKey(clip, sha, Ablation(), ("cat", "dog"), DEFAULT_TEMPLATE)


def test_a_model_that_fails_leaves_the_list_and_the_current_one_stays(wb, tiny16):
    change = header.new_model(wb, "broken-vit", None, "", DEFAULT_TEMPLATE, vit(wb, tiny16), False)
    assert not change.loaded and change.key is None and change.model == vit(wb, tiny16)
    assert "**broken-vit** cannot be loaded here" in change.status and "gone from the list" in change.status
    assert "broken-vit" not in wb.catalog.ids
    # A model off the list is refused at the entry (Catalog.check, once per request); new_model trusts its ModelId.
    with pytest.raises(UserError, match="page's list"):
        wb.catalog.check("google/vit-huge-patch14-224-in21k")


def test_a_new_model_keeps_the_animation_note_of_the_photo(wb, tiny16):
    """The upload's status says an animation's model sees frame 1 only; a model change wrote the status again
    without it (a walk-through), though the new model sees frame 1 only too. Also a new label list."""
    sha = wb.add_photo(make_all()["animated.gif"])  # 2 frames of 64×48
    k = PhotoKey(vit(wb, tiny16), sha)
    change = header.new_model(wb, vit(wb, tiny16), k, "", DEFAULT_TEMPLATE, vit(wb, tiny16), False)
    assert "An animation of 2 frames: the model sees frame 1 only." in change.status, change.status
    assert "frame 1 only" in header.status_of(wb, k)
    assert "animation" not in header.status_of(wb, PhotoKey(vit(wb, tiny16), wb.add_photo(EXAMPLES / "chelsea.jpg")))
