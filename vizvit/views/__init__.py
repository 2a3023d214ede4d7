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

from ..vocab import TAB_IDS

# In the page's order: the module named like each tab id of vocab.TABS (the one tab list).
VIEWS = tuple(import_module(f".{tab_id}", __name__) for tab_id in TAB_IDS)
