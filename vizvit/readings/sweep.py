"""The Experiments tab's shift sweep: the photo shifted k = 0..2P pixels right under one fill (what enters at the
border, vocab.FILLS: the tab's own choice; edge where none is given), each view's patch cosines and top-1
(vizvit.readings.perturb, batched), cached per photo and fill; and, when the app has
one, the CNN's probability of its own unshifted top-1 at the same shifts (model.cnn), beside it.
Nothing here draws: vizvit.views.experiments charts it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from vizvit.cancel import NEVER, Cancel
from vizvit.errors import UserError
from vizvit.model.cnn import cnn_shift_probs
from vizvit.model.engine import DEFAULT_CHUNK, Progress
from vizvit.readings import perturb
from vizvit.session import Photo
from vizvit.vocab import FILLS, Fill

DEFAULT_FILL: Fill = "edge"  # the lesson's, the API's and the export's sweep: what a caller names no fill for


def sweep_name(fill: str = DEFAULT_FILL) -> tuple:
    """The name the sweep under `fill` is cached under (Photo.derived): streamed or whole, one entry for both."""
    return ("shift_sweep", fill)


SHIFT_SWEEP = sweep_name()  # the edge fill's


def cnn_sweep_name(cnn_id: str, fill: str = DEFAULT_FILL) -> tuple:
    """The CNN's probabilities of its unshifted top-1 per shift, under `fill`."""
    return ("cnn_sweep", cnn_id, fill)


def _fill(fill: str) -> Fill:
    if fill not in FILLS:
        raise UserError(f"What enters at the border is one of {', '.join(FILLS)}, not {fill!r}.")
    return fill  # type: ignore[return-value]


def full_sweep(ph: Photo, cancel: Cancel = NEVER, progress: Progress | None = None,
               fill: str = DEFAULT_FILL) -> perturb.ShiftSweep:
    """The complete sweep under `fill`, cached under the same name as the streamed one (Cancelled: nothing
    cached). progress: told (views done, views in all) after each batch."""
    f = _fill(fill)

    def run() -> perturb.ShiftSweep:
        for s in perturb.shift_sweep_steps(ph.vm, ph.analysis().input_view, f, cancel=cancel,
                                           extra=ph.forward_hooks()):
            if progress is not None:
                progress(len(s.rows), s.total)
        return s

    return ph.derived(sweep_name(f), run)


def sweep_steps(ph: Photo, chunk: int = DEFAULT_CHUNK, cancel: Cancel = NEVER,
                fill: str = DEFAULT_FILL) -> Iterator[perturb.ShiftSweep]:
    """The growing sweep under `fill` after each batched chunk, cached once complete (the cached one alone
    when it is there already). `cancel` is checked between chunks (Cancelled: nothing cached)."""
    f = _fill(fill)
    done = ph.peek(sweep_name(f))
    if done is not None:
        yield done
        return
    for s in perturb.shift_sweep_steps(ph.vm, ph.analysis().input_view, f, chunk, cancel, ph.forward_hooks()):
        yield s
    ph.derived(sweep_name(f), lambda: s)


def cnn_probs(ph: Photo, ks: Sequence[int], fill: str = DEFAULT_FILL) -> tuple[str, np.ndarray] | None:
    """The app's CNN's id and (len(ks),) its probability of its own unshifted top-1 at each shift k (px
    right, under `fill`), cached per photo; None when the app has no CNN (--cnn)."""
    cnn = ph.wb.cnn
    if cnn is None:
        return None
    f = _fill(fill)
    probs = ph.derived(cnn_sweep_name(cnn.id, f), lambda: cnn_shift_probs(cnn, ph.analysis().input_view, list(ks), f))
    return cnn.id, probs
