"""The tests mirror the code (issue 44): every module under vizvit/ and page/ has a test file at
the mirrored path, so a newcomer who opens a module knows where its tests are, and a module
with none shows up here by name.

    vizvit/b.py    -> tests/test_b.py         vizvit/a/b.py -> tests/a/test_b.py
    page/b.py      -> tests/page/test_b.py    page/a/b.py   -> tests/page/a/test_b.py

Exempt, and why:
- a package's ``__init__.py`` that only names the package (a docstring, imports, constants): it
  has nothing of its own to test. One that defines a function or a class is a module like any
  other, mirrored by the package's name: vizvit/views/__init__.py -> tests/test_views.py
  (tests/views/test___init__.py is accepted too).
- ``__main__.py``: the command line is a thin argparse front of export(), run as a user runs it
  (`python -m vizvit export`, a subprocess) by tests/test_export.py; a file named test___main__
  would hold nothing else.

The other way round, a test file directly in tests/ must be the mirror of a module (of vizvit/,
or app.py / gradio_patch.py at the root) or one of the few repository-wide checks below; a test
of a live server, the docs or the deployment goes to tests/system/, a benchmark's to
tests/benchmarks/ (mirroring benchmarks/)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
MIRRORED = ("vizvit", "page")
# Checks of the repository as a whole, not of one module.
REPO_WIDE = {"test_imports.py", "test_mirror.py"}
# Flat files whose tests belong in a module's mirror but that other branches of this round (issue 44)
# edit at the same time: merged once those branches have landed, so that no edit is lost in a
# conflict. The list may only shrink: a name here must still be a file (the test below says so).
# all merged (h/split-c): test_costly, test_explain_torchcam, test_prediction, test_prepare
TO_MERGE: dict[str, str] = {}


def defines_something(path: Path) -> bool:
    """Whether a module defines a function or a class at its top level."""
    tree = ast.parse(path.read_text())
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body)


def mirrors(module: Path, root: Path = ROOT) -> list[Path]:
    """The test files (relative to root) any of which mirrors module (relative to root); [] if exempt.

    vizvit/ maps onto tests/ itself, page/ onto tests/page/."""
    parts = module.parts
    base = Path("tests") if parts[0] == "vizvit" else Path("tests", "page")
    folder = base.joinpath(*parts[1:-1])
    if module.name == "__main__.py":
        return []
    if module.name == "__init__.py":
        if len(parts) == 2 or not defines_something(root / module):  # the top package, or a plain marker
            return []
        return [folder.parent / f"test_{parts[-2]}.py", folder / "test___init__.py"]
    return [folder / f"test_{module.name}"]


def modules(root: Path = ROOT) -> list[Path]:
    """Every .py file under vizvit/ and page/, relative to root."""
    return sorted(p.relative_to(root) for top in MIRRORED for p in (root / top).rglob("*.py")
                  if "__pycache__" not in p.parts)


def unmirrored(root: Path = ROOT) -> list[str]:
    """'module -> expected test file' for each module with no mirror under root."""
    out = []
    for m in modules(root):
        wanted = mirrors(m, root)
        if wanted and not any((root / w).is_file() for w in wanted):
            out.append(f"{m} -> {wanted[0]}")
    return out


def strays(root: Path = ROOT) -> list[str]:
    """The test files directly in tests/ that mirror no module and are no repository-wide check."""
    names = {f"test_{p.stem}.py" for p in (root / "vizvit").glob("*.py")}
    names |= {f"test_{p.name}.py" for p in (root / "vizvit").iterdir() if (p / "__init__.py").is_file()}
    names |= {f"test_{p.stem}.py" for p in root.glob("*.py")}  # app.py, gradio_patch.py
    return sorted(p.name for p in (root / "tests").glob("test_*.py")
                  if p.name not in names | REPO_WIDE | TO_MERGE.keys())


def test_every_module_has_its_mirror():
    missing = unmirrored()
    assert not missing, ("these modules have no test file at the mirrored path (see this file's "
                         "docstring):\n  " + "\n  ".join(missing))


def test_every_flat_test_file_mirrors_a_module():
    stray = strays()
    assert not stray, ("these test files in tests/ mirror no module: merge each into the mirror of the "
                       "module it tests, or move it to tests/system/ (a live server, docs, deploy) or "
                       "tests/benchmarks/:\n  " + "\n  ".join(stray))


def test_the_files_still_to_merge_are_still_there():
    gone = [name for name in TO_MERGE if not (TESTS / name).is_file()]
    assert not gone, f"merged: take {gone} off TO_MERGE"


def test_the_rule_on_a_constructed_tree(tmp_path):
    """A made-up tree with known answers: which modules lack mirrors, which tests are strays."""
    files = {
        "vizvit/__init__.py": "X = 1\n",
        "vizvit/__main__.py": "def main(): pass\n",
        "vizvit/a.py": "", "vizvit/b.py": "",
        "vizvit/sub/__init__.py": '"""Only a docstring."""\n',
        "vizvit/sub/c.py": "", "vizvit/sub/d.py": "",
        "vizvit/pkg/__init__.py": "def f(): pass\n",
        "page/__init__.py": "", "page/e.py": "", "page/tabs/__init__.py": "", "page/tabs/f.py": "",
        "page/tabs/g.py": "",
        "app.py": "",
        "tests/test_a.py": "", "tests/sub/test_c.py": "", "tests/page/test_e.py": "",
        "tests/page/tabs/test_f.py": "", "tests/test_app.py": "", "tests/test_mirror.py": "",
        "tests/test_a_feature.py": "", "tests/test_sub.py": "",
        "tests/page/test_g.py": "",  # g lives in page/tabs/: this is not its mirror
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert unmirrored(tmp_path) == ["page/tabs/g.py -> tests/page/tabs/test_g.py",
                                    "vizvit/b.py -> tests/test_b.py",
                                    "vizvit/pkg/__init__.py -> tests/test_pkg.py",
                                    "vizvit/sub/d.py -> tests/sub/test_d.py"]
    assert strays(tmp_path) == ["test_a_feature.py"]
    (tmp_path / "tests/pkg").mkdir()
    (tmp_path / "tests/pkg/test___init__.py").write_text("")
    assert "vizvit/pkg/__init__.py -> tests/test_pkg.py" not in unmirrored(tmp_path)
