"""The Inside tab's head importance: for each (layer, head), the drop of the top-1 probability when that head
alone is switched off, zeroed or set to its mean as the ablation mode says (engine.zeroed_head_chunks, batched
per layer, each run starting from the analysis' hidden state entering that layer), streamed per batch and cached
per photo (intact model) and mode. Nothing here draws: vizvit.views.inside colours the layers × heads grid with it."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from vizvit.cancel import NEVER, Cancel
from vizvit.errors import UserError
from vizvit.model.engine import DEFAULT_CHUNK, zeroed_head_chunks
from vizvit.session import Photo

# The names this module's results are cached under (Photo.derived).
HEAD_IMPORTANCE = "head_importance"  # (L, H) drop of the top-1 probability per zeroed head
MEAN_IMPORTANCE = "head_importance_mean"  # the same per head set to its mean over the photo's tokens


def _name(mode: str) -> str:
    """The cache name of the importance measured with this ablation mode."""
    return MEAN_IMPORTANCE if mode == "mean" else HEAD_IMPORTANCE


def importance_steps(ph: Photo, chunk: int = DEFAULT_CHUNK, cancel: Cancel = NEVER,
                     mode: str = "zero") -> Iterator[tuple[np.ndarray, int, int]]:
    """Yields (importance (L, H) float32 with NaN where not yet computed, done, total) per batch;
    stores the complete map per photo (intact model) and mode at the end. `cancel`: checked per batch.
    mode: how each head is switched off, "zero" or "mean" (the Inside tab's radio: a student who picked
    "mean" expects the run to switch heads off that way too)."""
    key = ph.key.intact
    done_map = ph.wb.peek_derived(key, _name(mode))
    g = ph.vm.geometry
    total = g.num_layers * g.num_heads
    if done_map is not None:
        yield done_map, total, total
        return
    a = ph.wb.analysis(key)
    if a.probs is None:
        raise UserError("This model has no classifier: there is no prediction for a head to change.")
    c = int(a.probs.argmax())
    p0 = float(a.probs[c])
    cells = [(l, hd) for l in range(g.num_layers) for hd in range(g.num_heads)]
    imp = np.full((g.num_layers, g.num_heads), np.nan, np.float32)
    for start, probs in zeroed_head_chunks(ph.vm, a.input_view, cells, chunk, cancel,
                                           a.hidden_states, mode):
        for b, (l, hd) in enumerate(cells[start:start + len(probs)]):
            imp[l, hd] = p0 - float(probs[b, c])
        yield imp.copy(), start + len(probs), total
    ph.wb.derived(key, _name(mode), lambda: imp)


def head_importance(ph: Photo, chunk: int = DEFAULT_CHUNK, mode: str = "zero") -> np.ndarray:
    """(L, H) float32: drop of the top-1 probability when each head alone is zeroed (or set to its mean)."""
    *_, (imp, _, _) = importance_steps(ph, chunk, mode=mode)
    return imp


def cached_importance(ph: Photo, mode: str = "zero") -> np.ndarray | None:
    """The photo's (intact model's) importance with this mode when already computed, else None (nothing is run)."""
    return ph.wb.peek_derived(ph.key.intact, _name(mode))
