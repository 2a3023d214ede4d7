"""Flipbooks: the server's own pictures for the positions of a control, swapped in by the page.

A control with few positions (the 13 depths of the Embeddings tab), or views the server has
already drawn (shifts seen before), needs no port of the drawing to the browser: the page
holds the server's pictures for those positions and shows the right one the moment the
control moves (vizvit/web/flipbook.js), with no round trip. The pixels are the server's, so
they cannot differ from what the round trip would bring.

A page is keyed by the controls' values as the page reads them (`page_key`), in the order the
book names the controls. `look` is everything else the pictures depend on (photo, model,
other controls): the page drops every page of another look. Fields are named like the view's
Page fields (targets) and Params fields (controls); page/ maps them to its components.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np


def key_value(v: Any) -> str:
    """One control value as the page reads it from the DOM: a whole number without a decimal point
    (a range input's "3", not "3.0"), booleans as "true"/"false", text as it is."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, numbers.Real) and float(v).is_integer():
        return str(int(v))
    return str(v)


def page_key(*values: Any) -> str:
    """The key of the page for these control values, in the book's control order."""
    return "|".join(key_value(v) for v in values)


@dataclass(frozen=True)
class Flipbook:
    """Pictures for positions of `controls`, each page {target field: picture (H, W, 3) uint8}.

    merge: the page adds these pages to the ones it holds of the same look (views seen so far)
    instead of replacing them."""

    look: str
    controls: tuple[str, ...]
    pages: Mapping[str, Mapping[str, np.ndarray]] = field(default_factory=dict)
    merge: bool = False

    @property
    def targets(self) -> tuple[str, ...]:
        """Every target field some page draws, in first-seen order."""
        return tuple(dict.fromkeys(t for page in self.pages.values() for t in page))


def empty(look: str, controls: tuple[str, ...]) -> Flipbook:
    """A book with no pages: the page forgets the pages of any other look (a new photo)."""
    return Flipbook(look, controls)
