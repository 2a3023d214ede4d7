"""Where the server listens: command line, then Gradio's environment, then defaults.

Hugging Face Spaces sets GRADIO_SERVER_NAME=0.0.0.0 and routes traffic to port 7860;
a server that binds 127.0.0.1 there is unreachable. So a Space (SPACE_ID set) always
binds 0.0.0.0:7860; elsewhere flags win, then GRADIO_SERVER_NAME / GRADIO_SERVER_PORT,
then 127.0.0.1:7860 (local only, the safe default on a laptop).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Mapping

from .catalog import OFFLINE_FALLBACK
from .errors import UserError
from .models import RANDOM_PREFIX

if TYPE_CHECKING:
    from .session import Workbench

log = logging.getLogger("vizvit.app")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
SPACE_ADDRESS = ("0.0.0.0", 7860)


def on_space(env: Mapping[str, str]) -> bool:
    return bool(env.get("SPACE_ID"))


def server_address(host: str | None, port: int | None, env: Mapping[str, str]) -> tuple[str, int]:
    """(host, port) to bind. host/port: the command-line flags, None when not given."""
    if on_space(env):
        return SPACE_ADDRESS
    host = host or env.get("GRADIO_SERVER_NAME") or DEFAULT_HOST
    if port is None:
        raw = env.get("GRADIO_SERVER_PORT")
        try:
            port = int(raw) if raw else DEFAULT_PORT
        except ValueError:
            raise UserError(f"GRADIO_SERVER_PORT={raw!r} is not a port number.") from None
    if not 0 < port < 65536:
        raise UserError(f"Port {port} is out of range (1..65535).")
    return host, port


def start_model(wb: "Workbench", name: str) -> str:
    """Load the requested model; when it cannot be had (offline, say), fall back to the same
    architecture with random weights. The page's banner says so; the reason goes to the log."""
    try:
        wb.model(name)
        return name
    except ValueError as e:
        if name.startswith(RANDOM_PREFIX):
            raise
        log.warning("Could not load %s (%s): showing %s (untrained random weights) instead. "
                    "Run with --model PATH for a local checkpoint.", name, e, OFFLINE_FALLBACK)
        wb.model(OFFLINE_FALLBACK)
        return OFFLINE_FALLBACK
