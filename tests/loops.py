"""Run a coroutine to its end from a test, whatever the test's thread already runs.

A test that ran before in the same process may leave Playwright's sync API started (the browser is shared
by a session's tests): its event loop then counts as running in the main thread, and asyncio.run() there
raises "cannot be called from a running event loop". The coroutine gets a thread and a loop of its own, and
the test's context variables (Gradio's LocalContext, say) as they are."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_apart(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(coro) in a thread of its own; its result, or its exception raised here."""
    out: dict[str, Any] = {}
    context = contextvars.copy_context()

    def run() -> None:
        try:
            out["value"] = context.run(asyncio.run, coro)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller as it was
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]
