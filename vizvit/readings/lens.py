"""The Inside tab's readings: the logit lens of one photo (vizvit.readings.lens_maths holds its maths, the engine
its readout), cached per photo, and the name the head-importance sweep is stored under."""

from __future__ import annotations

from vizvit.model import engine
from vizvit.readings import lens_maths as lens
from vizvit.session import Photo

LOGIT_LENS = "logit_lens"  # lens.Lens: the readout at every depth
HEAD_IMPORTANCE = "head_importance"  # (L, H) drop of the top-1 probability per zeroed head (views.inside streams it)


def lens_of(ph: Photo) -> lens.Lens:
    """The logit lens of the photo: its hidden states at every depth read through the model's own head
    (one readout, no forward), cached under LOGIT_LENS."""
    return ph.derived(LOGIT_LENS, lambda: lens.logit_lens(ph.vm, engine.readout(ph.vm, ph.analysis().hidden_states)))
