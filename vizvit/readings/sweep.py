"""The Experiments tab's shift sweep: the photo shifted k = 0..2P pixels right (edge fill), each view's
patch cosines and top-1 (vizvit.readings.perturb, batched), cached per photo; and, when the app has
one, the CNN's probability of its own unshifted top-1 at the same shifts (model.cnn), beside it.
Nothing here draws: vizvit.views.experiments charts it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from vizvit.cancel import NEVER, Cancel
from vizvit.model.cnn import cnn_shift_probs
from vizvit.model.engine import DEFAULT_CHUNK, Progress
from vizvit.readings import perturb
from vizvit.session import Photo

# The names this module's results are cached under (Photo.derived).
SHIFT_SWEEP = ("shift_sweep", "edge")  # the sweep, streamed or whole (one entry for both)


def cnn_sweep_name(cnn_id: str) -> tuple:
    """The CNN's probabilities of its unshifted top-1 per shift."""
    return ("cnn_sweep", cnn_id)


def full_sweep(ph: Photo, cancel: Cancel = NEVER, progress: Progress | None = None) -> perturb.ShiftSweep:
    """The complete sweep, cached under the same name as the streamed one (Cancelled: nothing cached).
    progress: told (views done, views in all) after each batch."""
    def run() -> perturb.ShiftSweep:
        for s in perturb.shift_sweep_steps(ph.vm, ph.analysis().input_view, "edge", cancel=cancel,
                                           extra=ph.forward_hooks()):
            if progress is not None:
                progress(len(s.rows), s.total)
        return s

    return ph.derived(SHIFT_SWEEP, run)


def sweep_steps(ph: Photo, chunk: int = DEFAULT_CHUNK, cancel: Cancel = NEVER) -> Iterator[perturb.ShiftSweep]:
    """The growing sweep after each batched chunk, cached once complete (the cached one alone when it is
    there already). `cancel` is checked between chunks (Cancelled: nothing cached)."""
    done = ph.peek(SHIFT_SWEEP)
    if done is not None:
        yield done
        return
    for s in perturb.shift_sweep_steps(ph.vm, ph.analysis().input_view, "edge", chunk, cancel, ph.forward_hooks()):
        yield s
    ph.derived(SHIFT_SWEEP, lambda: s)


def cnn_probs(ph: Photo, ks: Sequence[int]) -> tuple[str, np.ndarray] | None:
    """The app's CNN's id and (len(ks),) its probability of its own unshifted top-1 at each shift k (px
    right, edge fill), cached per photo; None when the app has no CNN (--cnn)."""
    cnn = ph.wb.cnn
    if cnn is None:
        return None
    probs = ph.derived(cnn_sweep_name(cnn.id), lambda: cnn_shift_probs(cnn, ph.analysis().input_view, list(ks), "edge"))
    return cnn.id, probs
