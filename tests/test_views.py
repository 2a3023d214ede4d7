"""vizvit.views: one module per tab, named like its tab id, all with the same entry points;
vocab and engine: choices defined once, hooks registered in one module only."""

from __future__ import annotations

import ast
import re

from tiny import ROOT

from vizvit import vocab
from vizvit.views import VIEWS, TabView


def test_one_view_module_per_tab_in_page_order():
    assert tuple(v.__name__.rsplit(".", 1)[-1] for v in VIEWS) == vocab.TAB_IDS


def test_every_view_has_the_tab_views_members():
    """TabView (mypy checks VIEWS against it too): each member a callable of every view module."""
    members = sorted(n for n, f in vars(TabView).items() if callable(f) and not n.startswith("_"))
    assert members == ["export_arrays", "export_figures", "show"]
    for v in VIEWS:
        for name in members:
            assert callable(getattr(v, name, None)), f"{v.__name__} lacks {name}"
        assert isinstance(v, TabView), v.__name__


def test_a_module_lacking_a_member_is_no_tab_view():
    import types

    half = types.ModuleType("half")
    half.show = lambda ph, p: None  # type: ignore[attr-defined]
    half.export_arrays = lambda ph: {}  # type: ignore[attr-defined]
    assert not isinstance(half, TabView)
    half.export_figures = lambda ph: {}  # type: ignore[attr-defined]
    assert isinstance(half, TabView)


def test_every_view_has_one_params_with_from_controls_and_one_page():
    import dataclasses

    for v in VIEWS:
        params = {c for n, c in vars(v).items() if n.endswith("Params") and dataclasses.is_dataclass(c)}
        pages = {c for n, c in vars(v).items() if n.endswith("Page") and dataclasses.is_dataclass(c)}
        assert len(params) == 1 and callable(getattr(next(iter(params)), "from_controls", None)), v.__name__
        assert len(pages) == 1, v.__name__


def test_hooks_are_registered_in_one_module_only():
    # vizvit/model/hooks.py (the Hooked runs the engine and the methods use) is the one place a hook is put on a model.
    sources = [*(ROOT / "vizvit").rglob("*.py"), *(ROOT / "page").rglob("*.py"), ROOT / "app.py"]
    hits = {p.relative_to(ROOT).as_posix() for p in sources
            if re.search(r"register_\w*hook\(", p.read_text(encoding="utf-8"))}
    assert hits == {"vizvit/model/hooks.py"}, hits


def test_no_js_or_css_left_in_python():
    for p in [*(ROOT / "vizvit").rglob("*.py"), *(ROOT / "page").rglob("*.py"), ROOT / "app.py"]:
        text = p.read_text(encoding="utf-8")
        assert not re.search(r"=\s*\"\"\"\(\)\s*=>|=\s*\"\(\w*\)\s*=>|\.vizvit-projector \{", text), p


def _top_level_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names a module defines, names it only imports) at its top level (TYPE_CHECKING imports included)."""
    defined, imported = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                defined |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        for n in ast.walk(node) if isinstance(node, (ast.Import, ast.ImportFrom, ast.If)) else ():
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                imported |= {a.asname or a.name.split(".")[0] for a in n.names}
    return defined, imported - defined


def test_nothing_reaches_a_computation_through_a_view():
    """Issue 53: no re-export blocks. A name a view only imports (a reading, a layout helper, a vocab
    choice) is read from where it lives, never as `view.name` (vizvit, page, tests, benchmarks)."""
    views = {p.stem: _top_level_names(ast.parse(p.read_text(encoding="utf-8")))[1]
             for p in (ROOT / "vizvit" / "views").glob("*.py") if p.stem != "__init__"}
    assert not any("noqa: F401" in p.read_text(encoding="utf-8") for p in (ROOT / "vizvit" / "views").glob("*.py"))
    found = []
    for top in ("vizvit", "page", "tests", "benchmarks"):
        for path in (ROOT / top).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            alias = {a.asname or a.name: a.name for n in ast.walk(tree)
                     if isinstance(n, ast.ImportFrom) and n.module == "vizvit.views"
                     for a in n.names if a.name in views}
            found += [f"{path.relative_to(ROOT)}:{n.lineno} {n.value.id}.{n.attr}" for n in ast.walk(tree)
                      if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in alias
                      and n.attr in views[alias[n.value.id]]]
    assert found == [], found
