"""Imports run one way: no module imports one that imports it back, directly or through others,
counting imports inside functions and under TYPE_CHECKING (read from the source, not from what
happens to be imported at run time). In the package, and across the repository: vizvit, page,
app.py, gradio_patch.py and the scripts of benchmarks/ and deploy/ (imported by bare name)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vizvit"


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the package modules it imports (relative and absolute, at any depth)."""
    mods = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
            for p in root.rglob("*.py")}
    return _graph(mods, {root.name})


def repository_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the repository's code by the name it is imported by: the packages' dotted
    names, app and gradio_patch, and benchmarks/ and deploy/ scripts by bare name (each script puts
    its folder on sys.path, as pytest's pythonpath does)."""
    mods = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): p
            for pkg in ("vizvit", "page") for p in (root / pkg).rglob("*.py")}
    mods |= {name: root / f"{name}.py" for name in ("app", "gradio_patch")}
    for folder in ("benchmarks", "deploy"):
        for p in (root / folder).glob("*.py"):
            assert p.stem not in mods, f"{p} has the name of another module"
            mods[p.stem] = p
    return mods


def _graph(mods: dict[str, Path], tops: set[str]) -> dict[str, set[str]]:
    """module -> the modules in `mods` it imports. `from vizvit import x` of a name that is not a
    module counts as no edge (as ../shared/tools/import_cycles.py does): the packages' __init__
    files (`tops`) re-export the library's names and are not a layer of their own."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[:len(pkg.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                found = [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target for a in node.names]
            elif isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            else:
                continue
            graph[name] |= {t for t in found if t in mods and t != name and t not in tops}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: each a path m0 -> m1 -> ... -> m0 found by depth-first search."""
    found, state = [], {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                found.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


def test_the_cycle_finder_finds_a_constructed_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_the_package_has_no_import_cycles():
    graph = import_graph()
    assert "vizvit.model.engine" in graph and "vizvit.model.models" in graph["vizvit.model.engine"]  # the graph is read
    assert cycles(graph) == [], "imports must run one way (see README, code layout)"


# vizvit's layers, lowest first (README, code layout): a module may import only from its own package
# or from a lower layer, so the packages show the layers and no package imports one that imports it back.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "vocab"),
    ("cancel",),
    ("model",),
    ("methods", "pictures", "service", "classroom", "deeplink"),
    ("session",),
    ("readings",),
    ("views",),
    ("api", "export", "launch"),
    ("__main__",),
)


def package_of(module: str) -> str:
    """'vizvit.model.engine' -> 'model'; 'vizvit.session' -> 'session'; 'vizvit.views' -> 'views'."""
    return module.split(".")[1]


def upward_imports(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[str]:
    """'a -> b' for each import of a module in the same or a higher layer's other package (and of a
    package no layer names)."""
    rank = {name: i for i, names in enumerate(layers) for name in names}
    bad = []
    for a, targets in sorted(graph.items()):
        for b in sorted(targets):
            pa, pb = package_of(a), package_of(b)
            if pa != pb and rank.get(pb, len(layers)) >= rank.get(pa, -1):
                bad.append(f"{a} -> {b}")
    return bad


def test_the_layer_rule_on_a_constructed_graph():
    graph = {"vizvit.model.engine": {"vizvit.errors", "vizvit.model.models"},
             "vizvit.methods.rollout": {"vizvit.model.engine", "vizvit.readings.maps"},
             "vizvit.service.jobs": {"vizvit.classroom.room"}, "vizvit.odd.x": set()}
    assert upward_imports(graph) == ["vizvit.methods.rollout -> vizvit.readings.maps",
                                     "vizvit.service.jobs -> vizvit.classroom.room"]


def test_the_packages_are_layers():
    graph = {m: t for m, t in import_graph().items() if m != "vizvit"}  # the top __init__ re-exports only
    unplaced = {package_of(m) for m in graph} - {n for names in LAYERS for n in names}
    assert not unplaced, f"a package or top-level module that LAYERS does not place: {unplaced}"
    assert not upward_imports(graph), "imports must run down the layers (see README, code layout)"


def test_the_repository_has_no_import_cycles():
    """vizvit, page, app.py, gradio_patch.py, benchmarks/ and deploy/ together: a benchmark that
    imports a script which imports it back (hall.py and load_test.py did) is a cycle too."""
    mods = repository_modules()
    graph = _graph(mods, {"vizvit", "page"})
    # the graph is read across folders: the page uses the library, app.py the page, a benchmark another
    assert "vizvit.views.attention" in graph["page.tabs.attention"] and "page.shell" in graph["app"]
    assert "hall" in graph["load_test"]  # inside a function: counted
    assert cycles(graph) == [], "imports must run one way (see README, code layout)"


def test_a_cycle_between_two_scripts_is_found():
    """hall.py <-> load_test.py as it was: a module-level import one way, a function's the other."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        a, b = Path(d, "hall.py"), Path(d, "load_test.py")
        a.write_text("from load_test import photo\n")
        b.write_text("def start():\n    from hall import start_server\n")
        assert cycles(_graph({"hall": a, "load_test": b}, set())) == [["hall", "load_test", "hall"]]


def test_the_room_store_is_below_the_rooms():
    """vizvit.classroom.roomstore is a leaf the rooms stand on (vizvit.errors aside, itself a leaf: its StoreDown is
    a UserError); the Redis store stands on it; only vizvit.classroom.room chooses between them (issue 50)."""
    graph = import_graph()
    assert graph["vizvit.classroom.roomstore"] <= {"vizvit.errors"} and graph["vizvit.errors"] == set()
    assert graph["vizvit.classroom.roomstore_redis"] <= {"vizvit.classroom.roomstore", "vizvit.errors"}
    assert {"vizvit.classroom.roomstore", "vizvit.classroom.roomstore_redis"} <= graph["vizvit.classroom.room"]
