"""A view's Flipbook (vizvit/views/flip.py) in the page: one hidden component per book, whose
script (vizvit/web/flipbook.js) swaps the server's pictures (and charts) in as the controls move.

Each picture is saved exactly as its gr.Image saves an output (the same encoder, format and
content-hash path in Gradio's cache), so a page's URL is the very URL the server's own answer
for that position brings: the answer then changes nothing on screen.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import gradio as gr
import numpy as np
import plotly.io

from vizvit import web

from .kit import safe, skip

from vizvit.views.flip import Chart, Flipbook, Marks, set_key


def component(name: str) -> gr.HTML:
    """The hidden carrier of the book `name` (its value: for_page's JSON)."""
    return gr.HTML(None, html_template="<span></span>", js_on_load=web.with_hand_on("flipbook.js"), visible="hidden",
                   elem_id=f"flip-{name}", apply_default_css=False)


def _page_value(target: gr.components.Component, value: "np.ndarray | Chart") -> Any:
    """A picture: its path in Gradio's cache; a chart: the figure as gr.Plot sends it (plotly's own
    JSON), or the restyle in plotly's JSON encoding (numpy arrays as its figures carry them)."""
    if not isinstance(value, Chart):
        return target.postprocess(value).path
    if value.figure is not None:
        return {"figure": value.figure.to_json(), "show_label": target.show_label}
    return {"restyle": json.loads(plotly.io.json.to_json_plotly(dict(value.restyle))), "trace": value.trace}


def for_page(name: str, book: Flipbook, targets: dict[str, gr.components.Component], controls: dict[str, gr.components.Component]) -> str:
    """The book as the page script reads it: the controls' and targets' elem ids (from the page's
    field -> component maps) and each picture's path in Gradio's cache."""
    missing = ([c for c in book.controls if c not in controls] + [t for t in book.targets if t not in targets]
               + [r for r in [book.rows, *((book.toggle.target, book.toggle.box) if book.toggle else ())]
                  if r is not None and r not in {**targets, **controls}])
    if missing:
        raise KeyError(f"flipbook {name!r}: no component for {missing}")
    pages = {key: {targets[t].elem_id: _page_value(targets[t], pic) for t, pic in page.items()}
             for key, page in book.pages.items()}
    every = {**targets, **controls}
    rows = None if book.rows is None else every[book.rows].elem_id
    tg = book.toggle
    toggle = None if tg is None else {
        "target": every[tg.target].elem_id, "cell": tg.cell, "cells": list(tg.cells),
        "state": None if tg.state is None else set_key(tg.state), "box": None if tg.box is None else every[tg.box].elem_id,
        "prefix": tg.prefix}
    return json.dumps({"name": name, "look": book.look, "merge": book.merge, "rows": rows, "toggle": toggle,
                       "controls": [controls[c].elem_id for c in book.controls], "pages": pages})


def marks_for_page(name: str, marks: Marks, target: gr.Image) -> str:
    """Marks as the page script reads them: the target's elem id, the two pictures' paths (saved as
    the target saves its outputs: a PNG target keeps the mark's clear pixels clear)."""
    return json.dumps({"name": name, "kind": "marks", "look": marks.look, "target": target.elem_id,
                       "base": target.postprocess(marks.base).path, "mark": target.postprocess(marks.mark).path,
                       "offset": list(marks.offset), "step": list(marks.step), "cells": list(marks.cells),
                       "at": list(marks.at) if marks.at else None})


def filled_later(book: gr.HTML, fill: Callable[..., dict], inputs: list, outputs: list,
                 after: str | None = None) -> None:
    """A book that comes with no pages (a new look: its first answer stays fast) is filled by
    fill(*inputs) -> {output: value} once, after the pictures under CSS `after` are painted."""
    @safe
    def run(held: str | None, *values: Any) -> dict:
        if not held or json.loads(held).get("pages"):
            return skip(outputs)  # filled already (this very answer), or no book
        return fill(*values)

    book.change(run, [book, *inputs], outputs, show_progress="hidden", js=web.after_paint(after) if after else None)
