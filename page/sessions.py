"""Gradio's memory per visitor, bounded in count and in time (issue 42).

Gradio 6.31 keeps a SessionState for every session that ever sent an event (its StateHolder), an
API client's as much as a page's. Each holds a copy of the config of every one of the page's ~300
components (SessionState.config_values, for deep links): 0.5-0.6 MB a session here, measured with
benchmarks/memory.py --new-sessions (docs/memory.md). Gradio drops a session only past
`state_session_capacity` (10,000 by default: ~5.5 GB), and its expiry (gr.State's time_to_live,
an hour after a page closes) empties the State values but keeps the SessionState itself. So:
- at most MAX_SESSIONS sessions are kept (Gradio's own LRU: launch's state_session_capacity), and
- a session nobody has used for IDLE_S seconds is dropped whole (forget_idle, on a thread).
A visitor whose session was dropped finds the page as a new visitor does: the photo is asked for again.
"""

from __future__ import annotations

import datetime
import logging
import threading
from typing import Any

log = logging.getLogger("vizvit.sessions")

MAX_SESSIONS = 300  # sessions kept at most (a lecture hall): 0.55 MB each, 165 MB in all
IDLE_S = 3600  # a session unused this long is dropped (shell.SESSION_TTL_S: its photo key is gone by then)
EVERY_S = 60.0  # how often idle sessions are looked for


def forget_idle(holder: Any, idle_s: float, now: datetime.datetime | None = None) -> int:
    """Drop from Gradio's StateHolder every session last used more than idle_s seconds before now.
    Returns how many were dropped. A session whose last use is not recorded yet (being created
    right now) is kept."""
    now = now or datetime.datetime.now()
    cutoff = now - datetime.timedelta(seconds=idle_s)
    dropped = 0
    with holder.lock:  # the lock Gradio's own LRU eviction (StateHolder.update) takes
        for sid in [s for s, t in list(holder.time_last_used.items()) if t < cutoff]:
            if holder.session_data.pop(sid, None) is not None:
                dropped += 1
            holder.time_last_used.pop(sid, None)
    return dropped


def start_forgetting(demo: Any, idle_s: float = IDLE_S, every_s: float = EVERY_S) -> threading.Thread:
    """A daemon thread: every `every_s` seconds, forget_idle on the demo's StateHolder (there once the
    app is created: until then it waits)."""

    def loop() -> None:
        import time

        while True:
            time.sleep(every_s)
            holder = getattr(demo, "state_holder", None)
            if holder is None:
                continue
            try:
                n = forget_idle(holder, idle_s)
            except Exception:
                log.warning("forgetting idle sessions failed", exc_info=True)
                continue
            if n:
                log.info("forgot %d idle sessions", n)

    t = threading.Thread(target=loop, name="vizvit-forget-sessions", daemon=True)
    t.start()
    return t
