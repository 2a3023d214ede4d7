"""The Experiments tab's mask readings: a mask is a sorted tuple of patch ids; the row of buttons turns one mask
into another (clear, invert, random, or the top / bottom k % of the patches by a map, vizvit.readings.perturb).
The maps are read through readings.methods, so they share the photo's cache. Nothing here draws:
vizvit.views.experiments hatches the masked patches."""

from __future__ import annotations

from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.readings import methods, perturb
from vizvit.session import Photo

# The maps "top / bottom k %" can rank the patches by (readings.methods.RANK_BY: the contest's but the
# baseline, which has its own button, and the costly ones); class-specific ones for the top-1 class.
MASK_MAPS = tuple(m.name for m in methods.RANK_BY)


def clean_mask(mask: tuple[int, ...] | list[int] | None, g: Geometry) -> tuple[int, ...]:
    """Keep valid patch ids only (a model change can shrink the grid)."""
    return tuple(sorted({int(i) for i in (mask or ()) if 0 <= int(i) < g.num_patches}))


def mask_action(ph: Photo, mask: tuple[int, ...] | None, action: str, percent: float,
                seed: int = 0, rank_by: str = methods.ROLLOUT.name) -> tuple[int, ...]:
    """clear | invert | random | top | bottom (by the map `rank_by`, MASK_MAPS) -> the new mask."""
    g = ph.vm.geometry
    mask = clean_mask(mask, g)
    f = float(percent) / 100.0
    if action == "clear":
        return ()
    if action == "invert":
        return perturb.invert(mask, g.num_patches)
    if action == "random":
        return perturb.random_mask(g.num_patches, f, seed)
    if action in ("top", "bottom"):
        if rank_by not in MASK_MAPS:
            raise UserError(f"Rank patches by one of: {', '.join(MASK_MAPS)}.")
        m = methods.get(rank_by)
        if not m.applies(ph.vm, ph.analysis()):
            raise UserError(f"{rank_by} needs a class to explain, and this model has no classifier.")
        values = m(ph.vm, ph.analysis(), None, ph.derived)
        return perturb.mask_by_map(values, f, top=action == "top")
    raise UserError(f"Unknown mask action {action!r}.")
