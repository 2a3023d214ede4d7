"""The one exception type whose message is meant for the person using the page."""

from __future__ import annotations

# What every class-specific method says on a model without a classifier (vizvit.methods).
NO_CLASS = "This model has no classifier, so there is no class to explain."
# What they say on an image-text model (CLIP, SigLIP) with no labels typed: its classes are the labels.
NO_LABELS = "Zero-shot labels are needed to explain this image-text model: type some."


class UserError(ValueError):
    """Bad input or a request that cannot be done, with a message that says what to do.

    The page shows this message as it is; any other exception is logged and the user
    sees a generic message (a library's ValueError text is not written for users)."""
