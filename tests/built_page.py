"""Helpers for tests that call a built page's handlers as Gradio does (tests/page/tabs/)."""

from __future__ import annotations

import numpy as np


def by_id(demo, elem_id: str):
    found = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id]
    assert len(found) == 1, elem_id
    return found[0]


def wired(demo, elem_id: str, trigger: str):
    """The one event the component's trigger runs (a handler, not a page script)."""
    c = by_id(demo, elem_id)
    fns = [fn for fn in demo.fns.values()
           if fn.fn is not None and any(t[0] == c._id and t[1] == trigger for t in fn.targets)]
    assert len(fns) == 1, (elem_id, trigger)
    return fns[0]


def picture(answer):
    """The picture an answer shows: a picture sent in an update (it carries the picture's keyboard
    cells class, issue 51) is its value; anything else is itself."""
    is_update = isinstance(answer, dict) and answer.get("__type__") == "update" and "value" in answer
    return answer["value"] if is_update else answer


def same(a, b) -> bool:
    """The handler's answer a shows the view's b: a picture by its pixels, a chart by its JSON."""
    a = picture(a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return a.to_json() == b.to_json() if hasattr(a, "to_json") else a == b
