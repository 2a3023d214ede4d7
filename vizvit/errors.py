"""The one exception type whose message is meant for the person using the page."""

from __future__ import annotations

# What every class-specific method says on a model without a classifier (vizvit.methods).
NO_CLASS = "This model has no classifier, so there is no class to explain."
# What they say on an image-text model (CLIP, SigLIP) with no labels typed: its classes are the labels.
NO_LABELS = "Zero-shot labels are needed to explain this image-text model: type some."

QUOTED_CHARS = 40  # of a caller's text quoted back in a refusal (a box any caller fills, megabytes of it)


def cut(text: str, most: int = QUOTED_CHARS) -> str:
    """text, cut after `most` characters with "…": a caller's value quoted in a sentence, never whole."""
    return text if len(text) <= most else text[:most] + "…"


class UserError(ValueError):
    """Bad input or a request that cannot be done, with a message that says what to do.

    The page shows this message as it is; any other exception is logged and the user
    sees a generic message (a library's ValueError text is not written for users)."""
