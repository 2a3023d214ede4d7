"""One module per tab, named like its tab id. No gradio here: page/tabs/<id>.py wires these.

Every module has the same entry points, each taking a ``session.Photo`` handle first:
``show`` (what the tab shows on open: a new photo or model), ``change`` or a named
handler (on a control change; several where a tab has independent parts), and
``export_arrays`` / ``export_figures`` (``python -m vizvit export``). Lower-level
functions below them are pure: (VitModel, Analysis, params[, cache]) -> pictures,
figures, text. ``common`` holds what the tabs share.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from vizvit.vocab import TAB_IDS

if TYPE_CHECKING:
    from vizvit.session import Workbench

# In the page's order: the module named like each tab id of vocab.TABS (the one tab list).
VIEWS = tuple(import_module(f".{tab_id}", __name__) for tab_id in TAB_IDS)


def attach(wb: Workbench) -> Workbench:
    """Give the workbench each view's preparation (a view module's optional ``warm_model`` and
    ``warm_photo``, each taking a Photo handle): run when a model is warmed and after each
    photo's forward (Workbench.model_work, photo_work, prepare_later). Idempotent."""
    wb.model_work = tuple(v.warm_model for v in VIEWS if hasattr(v, "warm_model"))
    wb.photo_work = tuple(v.warm_photo for v in VIEWS if hasattr(v, "warm_photo"))
    return wb
