"""The Inside tab's readings: the logit lens of one photo (vizvit.readings.lens_maths holds its maths, the engine
its readout), cached per photo (readings.heads holds the head-importance sweep)."""

from __future__ import annotations

from vizvit.model import engine
from vizvit.readings import lens_maths as lens
from vizvit.session import Photo

LOGIT_LENS = "logit_lens"  # lens.Lens: the readout at every depth


def lens_of(ph: Photo) -> lens.Lens:
    """The logit lens of the photo: its hidden states at every depth read through the model's own head
    (one readout, no forward), cached under LOGIT_LENS."""
    return ph.derived(LOGIT_LENS, lambda: lens.logit_lens(ph.vm, engine.readout(ph.vm, ph.analysis().hidden_states)))
