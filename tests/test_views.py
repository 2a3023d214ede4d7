"""vizvit.views: one module per tab, named like its tab id, all with the same entry points;
vocab and engine: choices defined once, hooks registered in one module only."""

from __future__ import annotations

import re

from tiny import ROOT

from vizvit import vocab
from vizvit.views import VIEWS


def test_one_view_module_per_tab_in_page_order():
    assert tuple(v.__name__.rsplit(".", 1)[-1] for v in VIEWS) == vocab.TAB_IDS


def test_every_view_has_the_same_export_entry_points():
    for v in VIEWS:
        for name in ("export_arrays", "export_figures"):
            assert callable(getattr(v, name, None)), f"{v.__name__} lacks {name}"
        assert callable(getattr(v, "show", None)), f"{v.__name__} lacks show"


def test_hooks_are_registered_in_one_module_only():
    # vizvit/model/hooks.py (the Hooked runs the engine and the methods use) is the one place a hook is put on a model.
    hits = {p.relative_to(ROOT).as_posix() for p in [*(ROOT / "vizvit").rglob("*.py"), *(ROOT / "page").rglob("*.py"), ROOT / "app.py"]
            if re.search(r"register_\w*hook\(", p.read_text(encoding="utf-8"))}
    assert hits == {"vizvit/model/hooks.py"}, hits


def test_no_js_or_css_left_in_python():
    for p in [*(ROOT / "vizvit").rglob("*.py"), *(ROOT / "page").rglob("*.py"), ROOT / "app.py"]:
        text = p.read_text(encoding="utf-8")
        assert not re.search(r"=\s*\"\"\"\(\)\s*=>|=\s*\"\(\w*\)\s*=>|\.vizvit-projector \{", text), p
