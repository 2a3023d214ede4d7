"""The fixtures every test shares: tiny models of each family (built in tiny.py, saved with
save_pretrained and loaded back through vizvit.load_model: the real code path, no network; two
ViT geometries so nothing can hard-code a 14×14 grid), the trained ViT-Ti, the example cat.

The tests mirror the code: tests/test_<module>.py for vizvit/<module>.py, tests/views/test_<tab>.py
for vizvit/views/<tab>.py, tests/page/ for the page (page/, app.py) in a browser. The helpers
beside this file (tiny, synthetic, appserver, browser, ...) are imported by name: pyproject puts
this folder on pythonpath."""

from __future__ import annotations

import ast
import functools
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # a test that reaches for the hub fails fast
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Under pytest-xdist (README's test command: -n 2) each worker serves its own pages. Gradio
    # files an upload under a hash of its bytes and a closing server deletes the files it made,
    # so two workers sharing one upload folder delete each other's copy of the same photo. Each
    # worker gets a folder of its own; set here, before anything imports gradio.
    import tempfile

    _base = os.environ.get("GRADIO_TEMP_DIR") or os.path.join(tempfile.gettempdir(), "gradio")
    os.environ["GRADIO_TEMP_DIR"] = os.path.join(_base, os.environ["PYTEST_XDIST_WORKER"])

from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from synthetic import GEOMS
from tiny import (
    DINO_CLASSIFIERS,
    EXAMPLES,
    FAMILY_CONFIGS,
    GEOMETRIES,
    RECT,
    make_tiny_family,
    make_tiny_tower,
    make_tiny_vit,
    trained_dir,
)

import vizvit
from vizvit.model.models import Geometry


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("models")
    return {k: make_tiny_vit(base / k, *v) for k, v in GEOMETRIES.items()}


@pytest.fixture(scope="session", params=list(GEOMETRIES))
def tiny(request, tiny_dirs) -> vizvit.VitModel:
    """A tiny ViT in each test geometry, loaded on the CPU through load_model."""
    return vizvit.load_model(str(tiny_dirs[request.param]), device="cpu")


@pytest.fixture(scope="session")
def family_dirs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("families")
    return {k: make_tiny_family(base / k, k) for k in FAMILY_CONFIGS}


@pytest.fixture(scope="session")
def families(family_dirs) -> dict[str, vizvit.VitModel]:
    """name -> a tiny model of that family, loaded on the CPU through load_model."""
    return {k: vizvit.load_model(str(d), device="cpu") for k, d in family_dirs.items()}


@pytest.fixture(scope="session", params=list(FAMILY_CONFIGS))
def fam(request, families) -> vizvit.VitModel:
    return families[request.param]


@pytest.fixture(scope="session")
def dino_classifiers(tmp_path_factory) -> dict[str, vizvit.VitModel]:
    """Tiny DINOv2 and DINOv2-with-registers image classifiers (dinov2_cls, dinov2_reg_cls): their head reads
    [CLS] ⊕ the patch mean."""
    base = tmp_path_factory.mktemp("dino_classifiers")
    return {k: vizvit.load_model(str(make_tiny_family(base / k, k)), device="cpu") for k in DINO_CLASSIFIERS}


@pytest.fixture(scope="session")
def towers(tmp_path_factory) -> dict[str, vizvit.VitModel]:
    """Tiny CLIP and SigLIP image-text models at patch 16 and 32 (clip16, clip32, siglip16, siglip32)."""
    base = tmp_path_factory.mktemp("towers")
    return {f"{k}{p}": vizvit.load_model(str(make_tiny_tower(base / f"{k}{p}", k, p)), device="cpu")
            for k in ("clip", "siglip") for p in (16, 32)}


@pytest.fixture(scope="session")
def tiny16(tiny_dirs) -> vizvit.VitModel:
    return vizvit.load_model(str(tiny_dirs["p16"]), device="cpu")


@pytest.fixture(scope="session")
def tiny_rect(tmp_path_factory) -> vizvit.VitModel:
    """A tiny ViT trained (built) at 160×224 px, patch 32: a non-square 5×7 grid and position table
    (tiny.RECT), loaded on the CPU through load_model."""
    return vizvit.load_model(str(make_tiny_vit(tmp_path_factory.mktemp("rect") / "vit_rect", *RECT)), device="cpu")


@pytest.fixture(scope="session")
def trained() -> vizvit.VitModel:
    """The trained ViT-Ti through the same load_model path as any checkpoint. Skipped with one line
    where it is missing; under CI (which has ../shared) a missing model fails instead."""
    path = trained_dir()
    if path is None:
        message = ("trained weights not found: set VIZVIT_TRAINED or put ../shared/models/vit-tiny-augreg "
                   "beside the repo")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return vizvit.load_model(str(path), device="cpu")


@pytest.fixture(params=list(GEOMS))
def geom(request) -> Geometry:
    """Each constructed geometry (synthetic.GEOMS: a 14×14 and a 7×7 grid, no model)."""
    return GEOMS[request.param]


@pytest.fixture(scope="session")
def cat() -> Image.Image:
    return vizvit.load_image(EXAMPLES / "chelsea.jpg")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@functools.cache
def _is_browser_module(path: str) -> bool:
    """A module that imports page_at from browser.py at its top drives a browser: a browser test
    module. Read from its syntax tree: ruff's isort wraps a long import in parentheses over many
    lines (after issue 53 a regex on one line missed 3 of the 25 modules, test_attention,
    test_embeddings and test_flip: 28 of the longest browser tests, then free to run on both workers
    at once)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return False
    imports = [node for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "browser"]
    return any(alias.name == "page_at" for node in imports for alias in node.names)


# The browser modules the other worker runs, from the start, beside the main group: one browser
# test at a time left the second worker idle for the last third of the run (R2 on 2026-12-07: the
# browser group 1,080 s on one worker, everything else 749 s on the other). These do no timing of
# their own (axe-core's scans, keyboard walks), so a second browser beside the first slows them
# without failing them; together about 200 s, which the other worker's 749 s absorbs.
SECOND_BROWSER_GROUP = frozenset({"test_a11y.py"})


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: none without it
def pytest_xdist_make_scheduler(config, log):
    """"--dist loadgroup" (README's test command) with the browser test modules in two groups, each
    run on one worker: the browser and the page's server each take a core while a test waits on
    them, so two workers driving timing-sensitive browser tests at once on CI's 2 cores starve each
    other (and time out). The main group holds every browser module but SECOND_BROWSER_GROUP's; the
    two groups go first (the most tests first), one to each worker, and the other tests one at a
    time to whichever worker is free. (xdist 3.8 reads groups from xdist_group marks through a
    node-id suffix that pytest 9.2 no longer keeps, pytest-xdist issue 1386, so the group is decided
    here, from the test's file, in the controller.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    root = config.rootpath

    class BrowserGroup(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if _is_browser_module(str(root / path)):
                return "browser-second" if Path(path).name in SECOND_BROWSER_GROUP else "browser"
            return super()._split_scope(nodeid)

    return BrowserGroup(config, log)


def pytest_runtest_logreport(report) -> None:
    """VIZVIT_TEST_TIMES=<file>: one line a test phase as it ends (worker, seconds, outcome, test),
    appended at once, so a long or stuck run (CI, xdist) shows where its time went before it ends."""
    path = os.environ.get("VIZVIT_TEST_TIMES")
    if getattr(report, "node", None) is not None:  # xdist's controller, handed a worker's report: written there
        return
    if path and (report.when == "call" or report.duration >= 0.5 or report.outcome != "passed"):
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{worker}\t{report.duration:.2f}\t{report.when}:{report.outcome}\t{report.nodeid}\n")
            if report.failed:  # the error's last lines, indented, at once
                f.writelines(f"    {line}\n" for line in report.longreprtext.splitlines()[-15:])


def pytest_terminal_summary(terminalreporter) -> None:
    """One line when browser tests were skipped for want of a browser, and how to get one."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "no Chromium/Chrome found" in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} browser tests were skipped: no Chromium/Chrome found. Install one "
            "(sudo apt-get install chromium, or python -m playwright install chromium) or set VIZVIT_CHROMIUM.",
            yellow=True)
