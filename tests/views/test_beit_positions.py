"""A BEiT's config chooses its positions: a relative bias (every published checkpoint), an absolute
table, or neither. The page read every BEiT as a relative bias, so one built with a table was told it
had "no absolute position embeddings" while its table was being added to the tokens. Each case is
checked against its config and the model's own tensors, not the views' output."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from tiny import BEIT_POSITIONS, make_tiny_family

import vizvit
from vizvit.errors import UserError
from vizvit.export import methods_used
from vizvit.model.models import FAMILIES
from vizvit.readings import lesson as rl
from vizvit.session import PhotoKey, Workbench
from vizvit.views import embeddings, positions


@pytest.fixture(scope="module")
def beits(tmp_path_factory) -> dict[str, vizvit.VitModel]:
    root = tmp_path_factory.mktemp("beit_positions")
    return {k: vizvit.load_model(str(make_tiny_family(root / k, k)), device="cpu") for k in BEIT_POSITIONS}


def handle(vm, cat):
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    wb.add_model(vm)
    return wb.handle(PhotoKey(vm.id, wb.add_photo(cat)))


@pytest.mark.parametrize("flags, pe", [
    (dict(use_relative_position_bias=True), "relative bias"),
    (dict(use_shared_relative_position_bias=True), "relative bias"),
    (dict(use_relative_position_bias=True, use_absolute_position_embeddings=True), "learned and relative bias"),
    (dict(use_absolute_position_embeddings=True), "learned"),
    (dict(), "none"),
])
def test_a_beit_config_chooses_its_positions(flags, pe):
    config = transformers.BeitConfig(**{"use_relative_position_bias": False, **flags})
    fam = FAMILIES["beit"].for_config(config)
    assert fam.pe == pe
    assert fam.has_bias_table == ("relative bias" in pe) and fam.has_positions == (pe != "none")
    assert fam.has_position_table == pe.startswith("learned")
    assert FAMILIES["vit"].for_config(transformers.ViTConfig()) is FAMILIES["vit"]


def test_a_beit_with_a_table_shows_its_table(beits, cat):
    vm = beits["beit_abs"]
    assert vm.family.pe == "learned" and "No absolute position embeddings" not in vm.family.pe_text
    ph = handle(vm, cat)
    # The similarity the Positions tab shows is the cosine of the model's own table's patch rows.
    table = vm.model.beit.embeddings.position_embeddings[0, 1:].detach().double()  # (P, D)
    unit = table / table.norm(dim=-1, keepdim=True)
    np.testing.assert_allclose(positions.export_arrays(ph)["pos_similarity"], (unit @ unit.T).numpy(), atol=1e-5)
    assert "relative_position_bias" not in positions.export_arrays(ph)
    page = embeddings.show(ph, embeddings.EmbeddingsParams())
    assert [r[0] for r in page.steps if "position" in r[0]] == ["+ position embeddings"], page.steps
    assert "pos_similarity" in methods_used(vm) and "relative_position_bias" not in methods_used(vm)


def test_a_beit_told_no_positions_says_so_and_its_claim_holds(beits, cat):
    vm = beits["beit_nopos"]
    assert vm.family.pe == "none" and "unordered set" in vm.family.pe_text
    ph = handle(vm, cat)
    assert positions.export_arrays(ph) == {} and positions.export_figures(ph) == {}
    assert methods_used(vm)["positions"] == vm.family.pe_text
    page = embeddings.show(ph, embeddings.EmbeddingsParams())
    assert [r[0] for r in page.steps if "position" in r[0]] == ["no position embeddings"], page.steps
    with pytest.raises(UserError, match="No position information"):
        positions.show(ph, positions.PositionsParams())
    with pytest.raises(UserError, match="no position table to measure"):
        rl.MEASURES["positions"](ph, next(s for s in rl.steps() if s.measure == "positions"))
    # The sentence's claim: shuffle the patches and each patch's last-layer token moves with its patch.
    p, (gh, gw) = vm.geometry.patch_size, vm.geometry.grid
    x = torch.randn(1, 3, gh * p, gw * p)
    order = torch.randperm(gh * gw, generator=torch.Generator().manual_seed(0))
    tiles = x.unfold(2, p, p).unfold(3, p, p).reshape(1, 3, gh * gw, p, p)[:, :, order]
    shuffled = tiles.reshape(1, 3, gh, gw, p, p).permute(0, 1, 2, 4, 3, 5).reshape(1, 3, gh * p, gw * p)
    with torch.no_grad():
        a = vm.model.beit(x).last_hidden_state[0, 1:]
        b = vm.model.beit(shuffled).last_hidden_state[0, 1:]
    torch.testing.assert_close(b, a[order], atol=1e-5, rtol=1e-5)


def test_a_beit_with_both_says_both_and_shows_both(beits, families, cat):
    """A review: a BEiT with a table and a bias was read as a bias alone ("No absolute position embeddings",
    the steps' "no position embeddings", the lesson's "has no position table") while its table was added."""
    vm = beits["beit_both"]
    assert vm.model.beit.embeddings.position_embeddings is not None  # the config's table, in the model
    assert any(hasattr(m, "relative_position_bias_table") for m in vm.model.modules())  # and its bias
    assert vm.family.pe == "learned and relative bias" and "No absolute" not in vm.family.pe_text
    ph = handle(vm, cat)
    page = embeddings.show(ph, embeddings.EmbeddingsParams())
    assert [r[0] for r in page.steps if "position" in r[0]] == ["+ position embeddings"], page.steps
    arrays = positions.export_arrays(ph)
    assert {"relative_position_bias", "pos_similarity"} <= set(arrays)
    table = vm.model.beit.embeddings.position_embeddings[0, 1:].detach().double()
    unit = table / table.norm(dim=-1, keepdim=True)
    np.testing.assert_allclose(arrays["pos_similarity"], (unit @ unit.T).numpy(), atol=1e-5)
    used = methods_used(vm)
    assert "pos_similarity" in used and "no absolute position table" not in used["relative_position_bias"]
    step = next(s for s in rl.steps() if s.measure == "positions")
    assert "Neighbour contrast of the learned positions" in rl.MEASURES["positions"](ph, step).line
    shown = positions.show(ph, positions.PositionsParams())
    assert "no position embeddings to compare" not in shown.text and "its position table is added too" in shown.text
    g = vm.geometry.grid  # at another size both are resized, and the text says so (a second review)
    assert f"absolute position table is resized too, bicubically, from {g[0]}×{g[1]} to 14×14" in (
        positions.resolution_panel(ph, 224).text)
    bias_only = handle(families["beit"], cat)  # the published kind: a bias alone, no table sentence
    assert "absolute position table" not in positions.resolution_panel(bias_only, 224).text
