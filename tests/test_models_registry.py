"""A family is one entry (issue 26): registering a new ``Family`` (here a copy of the ViT family
under its own model_type, with its own random architecture and curated checkpoint) is enough for
its models to load, be analysed by every tab and appear in the catalog; no other code changes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from transformers import ViTConfig, ViTForImageClassification

import vizvit
from vizvit import catalog
from vizvit.catalog import Catalog, random_twin
from vizvit.models import FAMILIES, RANDOM_ARCHS, RANDOM_PREFIX, register_family, unregister_family
from vizvit.session import PhotoKey, Workbench
from vizvit.views import VIEWS

KEY = "throwaway_vit"
ARCH = "throwaway-vit-tiny"
HUB_ID = "someone/" + ARCH


class ThrowawayConfig(ViTConfig):
    model_type = KEY


class ThrowawayViT(ViTForImageClassification):
    config_class = ThrowawayConfig


@pytest.fixture
def throwaway():
    fam = dataclasses.replace(
        FAMILIES["vit"], key=KEY, title="Throwaway ViT", classes=("ThrowawayViT",), random_class=ThrowawayViT,
        config_class=ThrowawayConfig,
        random_archs={ARCH: dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                 image_size=64, patch_size=16)},
        curated={HUB_ID: 1})
    register_family(fam)
    try:
        yield fam
    finally:
        unregister_family(KEY)


def test_a_registered_family_loads_analyses_and_is_listed(throwaway, cat):
    assert ARCH in RANDOM_ARCHS and RANDOM_ARCHS[ARCH][0] == KEY
    assert HUB_ID in catalog.CURATED and random_twin(HUB_ID) == RANDOM_PREFIX + ARCH
    wb = Workbench(catalog=Catalog(RANDOM_PREFIX + ARCH), device="cpu")
    assert HUB_ID in wb.catalog.ids and RANDOM_PREFIX + ARCH in wb.catalog.ids
    vm = wb.model(RANDOM_PREFIX + ARCH)  # through the catalog's gate and load_model
    assert vm.family is throwaway and vm.geometry.family == KEY and vm.model.config.model_type == KEY
    g = vm.geometry
    assert g.grid == (4, 4) and g.prefix_names == ("[CLS]",)
    a = vizvit.analyze(vm, cat)
    assert a.attentions.shape == (2, 2, g.seq_len, g.seq_len) and a.probs.shape == (1000,)
    ph = wb.handle(PhotoKey(vm.id, wb.add_photo(cat)))
    arrays = {k: v for view in VIEWS for k, v in view.export_arrays(ph).items()}  # every tab
    assert arrays["rollout"].shape == (2, 4, 4) and arrays["pos_similarity"].shape == (16, 16)
    assert arrays["logit_lens"].shape == (3, 1000) and np.isfinite(arrays["deletion_curves"]).all()


def test_unregistering_takes_the_family_out_again(throwaway):
    unregister_family(KEY)
    assert KEY not in FAMILIES and ARCH not in RANDOM_ARCHS and HUB_ID not in catalog.CURATED
    with pytest.raises(ValueError, match="Unknown random architecture"):
        vizvit.load_model(RANDOM_PREFIX + ARCH, device="cpu")


def test_a_random_architecture_belongs_to_one_family():
    clash = dataclasses.replace(FAMILIES["vit"], key=KEY, random_archs={"vit-base-patch16-224": {}})
    with pytest.raises(ValueError, match="another family"):
        register_family(clash)
    assert KEY not in FAMILIES


def test_no_family_branch_outside_models_and_the_engine():
    """Views and the rest ask a Family or Geometry for a property: no model_type or family-key test."""
    import re
    from pathlib import Path

    root = Path(vizvit.__file__).parent
    keys = "|".join(re.escape(k) for k in FAMILIES)
    pattern = re.compile(rf"model_type\s*[!=]=|\.key\s*[!=]=|family\s*[!=]=|[!=]=\s*[\"']({keys})[\"']|"
                         rf"[\"']({keys})[\"']\s*[!=]=|summary\s*[!=]=\s*[\"']map[\"']|\.pe\s*[!=]=")
    hits = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py") if p.name not in ("models.py", "engine.py")
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert hits == [], hits
