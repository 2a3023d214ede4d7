"""One module per tab, named like its tab id. No gradio here: app.py wires these.

Every module has the same entry points, each taking a ``session.Photo`` handle first:
``show`` (what the tab shows on open: a new photo or model), ``change`` or a named
handler (on a control change; several where a tab has independent parts), and
``export_arrays`` / ``export_figures`` (``python -m vizvit export``). Lower-level
functions below them are pure: (VitModel, Analysis, params[, cache]) -> pictures,
figures, text. ``common`` holds what the tabs share.
"""

from __future__ import annotations

from . import attention, embeddings, experiments, inside, lecture, patches, positions

# In the page's order; module names are the tab ids (tests/test_views.py checks).
VIEWS = (patches, embeddings, attention, positions, experiments, inside, lecture)
