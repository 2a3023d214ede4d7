"""One module per tab, named like its tab id. No gradio here: page/tabs/<id>.py wires these.

Every tab's module has one shape, TabView (checked by mypy on VIEWS, and by tests/test_views.py):
a ``*Params`` dataclass of the tab's controls (``from_controls``), a ``*Page`` of what it shows,
``show(ph, params)`` (what the tab shows on open: a new photo or model), and ``export_arrays`` /
``export_figures`` (``python -m vizvit export``), each taking a ``session.Photo`` handle first; and
``change`` or named handlers (on a control change; several where a tab has independent parts).
They read vizvit.readings (every computation, cached through the handle) and lay out and draw:
pictures, figures, text. ``common``, ``flip``, ``books`` and ``layout`` hold what the tabs share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from vizvit.views import (
    attention,
    camera,
    compare,
    embeddings,
    experiments,
    inside,
    lecture,
    lesson,
    patches,
    positions,
)

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from vizvit.session import Photo, Workbench


@runtime_checkable
class TabView(Protocol):
    """What every tab's view module has: its entry points, by the names the page and export call."""

    def show(self, ph: Photo, p: Any, /) -> Any:
        """What the tab shows on open, for the photo and the tab's Params: its Page."""

    def export_arrays(self, ph: Photo, /) -> Mapping[str, np.ndarray]:
        """The tab's numbers for arrays.npz (python -m vizvit export), by key."""

    def export_figures(self, ph: Photo, /) -> Mapping[str, np.ndarray | go.Figure]:
        """The tab's pictures (uint8) and charts for the export, by file name."""


# In the page's order (vocab.TAB_IDS, the one tab list: tests/test_views.py checks the two agree).
VIEWS: tuple[TabView, ...] = (patches, embeddings, attention, camera, positions, compare, experiments, inside,
                              lesson, lecture)


def attach(wb: Workbench) -> Workbench:
    """Give the workbench each view's preparation (a view module's optional ``warm_model`` and
    ``warm_photo``, each taking a Photo handle): run when a model is warmed and after each
    photo's forward (Workbench.model_work, photo_work, prepare_later); and the Lesson tab's step
    picture, which a live room shows (Workbench.step_picture). Idempotent."""
    mods: tuple[Any, ...] = VIEWS
    wb.model_work = tuple(v.warm_model for v in mods if hasattr(v, "warm_model"))
    wb.photo_work = tuple(v.warm_photo for v in mods if hasattr(v, "warm_photo"))
    wb.step_picture = lesson.step_picture
    return wb
