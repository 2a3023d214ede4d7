"""Flipbooks: the server's own pictures for the positions of a control, swapped in by the page.

A control with few positions (the 13 depths of the Embeddings tab), or views the server has
already drawn (shifts seen before), needs no port of the drawing to the browser: the page
holds the server's pictures for those positions and shows the right one the moment the
control moves (page/web/flipbook.js), with no round trip. The pixels are the server's, so
they cannot differ from what the round trip would bring.

A page is keyed by the controls' values as the page reads them (`page_key`), in the order the
book names the controls. `look` is everything else the pictures depend on (photo, model,
other controls): the page drops every page of another look. Fields are named like the view's
Page fields (targets) and Params fields (controls); page/ maps them to its components.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vizvit.errors import UserError


def key_value(v: Any) -> str:
    """One control value as the page reads it from the DOM: a whole number without a decimal point
    (a range input's "3", not "3.0"), booleans as "true"/"false", text as it is."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Real) and float(v).is_integer():
        return str(int(float(v)))
    return str(v)


def page_key(*values: Any) -> str:
    """The key of the page for these control values, in the book's control order."""
    return "|".join(key_value(v) for v in values)


MAX_KEY_CHARS = 8192  # a mask of every patch of a 576-patch model is ~2.6k characters


def key_parts(key: Any, n: int) -> list[str]:
    """A page key the page sent (any caller's text) -> its n parts, or a UserError that says why."""
    if not isinstance(key, str) or len(key) > MAX_KEY_CHARS:
        raise UserError(f"A page key is text of at most {MAX_KEY_CHARS} characters.")
    parts = key.split("|")
    if len(parts) != n:
        raise UserError(f"A page key has {n} parts separated by '|', not {len(parts)}.")
    return parts


def key_int(part: str, what: str) -> int:
    """One whole-number part of a page key ("-3"), or a UserError."""
    t = part.strip()
    if not (t.lstrip("-").isascii() and t.lstrip("-").isdigit()) or len(t) > 9:
        raise UserError(f"{what} must be a whole number, not {part!r}.")
    return int(t)


@dataclass(frozen=True)
class Chart:
    """A chart target's page: a whole figure (plotly.js react: a small chart, e.g. one top-5), or
    `restyle`, a change to trace `trace` of the figure shown (the same points coloured another way:
    a much smaller page than the figure when the figure carries data the change leaves alone)."""

    figure: Any = None  # a plotly Figure
    restyle: Mapping[str, Any] | None = None  # attribute -> new value, for trace `trace`
    trace: int = 0


def set_key(ids: tuple[int, ...] | list[int]) -> str:
    """A set of cell ids as a key part: sorted, comma-separated ("" for none)."""
    return ",".join(str(int(i)) for i in sorted(ids))


@dataclass(frozen=True)
class Toggle:
    """A click on the target picture toggles the clicked cell in a set, as the server's click does:
    the cell is the click's pixel over `cell` px (row-major id r·cols + c). The set is the key's
    last part (set_key). state: the set the server holds now (None: keep the page's own, which
    has seen every click, where this answer may be older than the last one)."""

    target: str  # a field of the view's page
    cell: float  # px of a cell on the target picture
    cells: tuple[int, int]  # (rows, cols)
    state: tuple[int, ...] | None = None
    box: str | None = None  # a control field the page writes the set into before the click goes on
    prefix: str = ""  # written before the set in `box` (so an empty set differs from none written)


@dataclass(frozen=True)
class Flipbook:
    """Pictures (or charts) for positions of `controls`, each page {target field: picture (H, W, 3)
    uint8, or a Chart}.

    merge: the page adds these pages to the ones it holds of the same look (views seen so far)
    instead of replacing them."""

    look: str
    controls: tuple[str, ...]
    pages: Mapping[str, Mapping[str, np.ndarray | Chart]] = field(default_factory=dict)
    merge: bool = False
    rows: str | None = None  # a table field: a click on its row k sets the one control to k, in the page
    toggle: Toggle | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        """Every target field some page draws, in first-seen order."""
        return tuple(dict.fromkeys(t for page in self.pages.values() for t in page))


def empty(look: str, controls: tuple[str, ...]) -> Flipbook:
    """A book with no pages: the page forgets the pages of any other look (a new photo)."""
    return Flipbook(look, controls)


@dataclass(frozen=True)
class Marks:
    """A picture with a mark on one cell of a regular grid of cells (a tile's outline), redrawn by
    the page when another cell is clicked: the picture without the mark, and the mark alone as
    the server draws it (`stamp`). Cell (r, c) starts at (c·step_x, r·step_y); the page finds the
    clicked cell as the server does (floor of the click over the step) and puts the mark at that
    cell's start + offset, clipped to the picture: the server's own pixels, moved."""

    look: str
    base: np.ndarray  # (H, W, 3) uint8: the picture with no mark
    mark: np.ndarray  # (h, w, 4) uint8: the mark, opaque where drawn, clear elsewhere
    offset: tuple[int, int]  # (x, y) of the mark's top-left, from its cell's start
    step: tuple[int, int]  # (x, y) px from one cell's start to the next
    cells: tuple[int, int]  # (rows, cols)
    at: tuple[int, int] | None = None  # the cell the server's picture marks


def stamp(draw: Callable[[np.ndarray, int, int], Any], size: tuple[int, int],
          pad: int) -> tuple[np.ndarray, tuple[int, int]]:
    """What draw(img, x0, y0) paints for a cell of size (w, h) starting at (x0, y0), alone: (mark
    (h', w', 4) RGBA, its top-left from (x0, y0)). Drawn once on black and once on white, so a
    mark of any colour is found; pad: px the mark may reach outside the cell."""
    w, h = size
    canvases = [np.full((h + 2 * pad, w + 2 * pad, 3), v, np.uint8) for v in (0, 255)]
    for c in canvases:
        draw(c, pad, pad)
    drawn = (canvases[0] != 0).any(-1) | (canvases[1] != 255).any(-1)
    ys, xs = np.nonzero(drawn)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    mark = np.zeros((y1 - y0, x1 - x0, 4), np.uint8)
    mark[..., :3] = canvases[0][y0:y1, x0:x1]
    mark[..., 3] = np.where(drawn[y0:y1, x0:x1], 255, 0)
    return mark, (int(x0) - pad, int(y0) - pad)
