"""A handler's type hints, looked up once (issue 52: server CPU a student).

For every event it runs, Gradio 6.31 asks for the handler's type hints (helpers.special_args: does it
take a gr.Request, a gr.EventData, component props?), through gradio.utils.get_type_hints, on the
server's event loop. This project's modules use `from __future__ import annotations`, so each ask
evaluates every annotation's string again: ~3 % of the loop's work in a hall of 100 (cProfile).

install() wraps gradio.utils.get_type_hints (special_args and Gradio's utils call it through the
module): a callable's hints, once found, are kept beside it, weakly (a callable that goes, its hints
go); an empty answer (no hints, or a name not defined yet) is asked again each time, as before, and
a callable that cannot be weakly referenced is never kept. Each caller gets its own copy. Idempotent.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from gradio import utils


def kept(lookup: Callable[[Any], dict]) -> Callable[[Any], dict]:
    """`lookup` (fn -> its hints) with each non-empty answer kept for that fn."""
    found: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @functools.wraps(lookup)
    def get_type_hints(fn: Any) -> dict:
        try:
            return dict(found[fn])
        except (KeyError, TypeError):  # not yet, or not weakly referable (TypeError)
            pass
        hints = lookup(fn)
        if hints:
            try:
                found[fn] = dict(hints)
            except TypeError:
                pass
        return hints

    get_type_hints.vizvit_kept = True  # type: ignore[attr-defined]
    return get_type_hints


def install() -> None:
    """gradio.utils.get_type_hints wrapped (idempotent)."""
    if not getattr(utils.get_type_hints, "vizvit_kept", False):
        utils.get_type_hints = kept(utils.get_type_hints)
