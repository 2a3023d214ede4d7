"""Is the Hugging Face hub reachable? Asked once, fast, at start.

Without this, every `from_pretrained` on a machine with no internet walks the hub
client's retry ladder (1+2+4+8+8 s) before failing, and does so again for each model
a visitor picks. One short request decides; if it fails, the whole process runs
offline (hub files come from the local cache only) and says so once.
"""

from __future__ import annotations

import logging
import os

import httpx
from huggingface_hub import constants, try_to_load_from_cache

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 3.0


def hub_reachable(timeout: float = CHECK_TIMEOUT_S) -> bool:
    """One HEAD request to the hub endpoint, no retries. Any HTTP answer means reachable."""
    if constants.is_offline_mode():
        return False
    try:
        httpx.head(constants.ENDPOINT, timeout=timeout, follow_redirects=False)
        return True
    except (httpx.HTTPError, OSError) as e:
        log.info("hub check: %s unreachable (%s)", constants.ENDPOINT, type(e).__name__)
        return False


def go_offline() -> None:
    """From now on, hub ids load from the local cache only, at once, without network calls.
    huggingface_hub reads HF_HUB_OFFLINE at import, so set its constant too."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    constants.HF_HUB_OFFLINE = True


def ensure_hub_or_offline(timeout: float = CHECK_TIMEOUT_S) -> bool:
    """Check the hub once; go offline if it cannot be reached. Returns True when online."""
    if hub_reachable(timeout):
        return True
    if not constants.is_offline_mode():
        log.warning("The Hugging Face hub cannot be reached: running offline for the rest of this "
                    "process (hub models load from the local cache only; set HF_HUB_OFFLINE=1 to skip "
                    "this check).")
    go_offline()
    return False


def is_cached(repo_id: str) -> bool:
    """Whether a hub model's config is in the local cache (so it may load offline)."""
    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except (ValueError, OSError):  # not a valid repo id
        return False
