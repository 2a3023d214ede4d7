"""The README is a newcomer's page (issue 43): short, its two commands exactly as .ci/run runs them,
every link in it and in the docs it sends to resolving, and the one number it quotes from trained
weights (the artifact tokens' norm ratio) equal to a fresh measurement with transformers' own
processor and forward."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny import EXAMPLES, ROOT, trained_dir

from vizvit.vocab import TABS

README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")
NO_WEIGHTS = "trained weights not found: set VIZVIT_TRAINED or put ../shared/models/vit-tiny-augreg beside the repo"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", path.read_text(), re.M)}


def test_the_readme_is_short_and_has_the_run_and_test_commands_as_ci_runs_them():
    text = README.read_text()
    assert len(text.splitlines()) <= 250, f"{len(text.splitlines())} lines"
    assert "bash scripts/setup && .venv/bin/python app.py" in text
    # Lint first (issue 53): a tree that fails it fails CI at once. Types are a test of the suite
    # (tests/system/test_types.py): mypy's cold start on a fresh clone would add minutes in front (issue 52).
    test_command = ("bash scripts/setup --dev && .venv/bin/ruff check ."
                    " && .venv/bin/python -m pytest -q tests -n 2 --dist loadgroup")
    assert test_command in text
    assert test_command in (ROOT / ".ci" / "run").read_text(), ".ci/run runs the README's test command"
    assert test_command in (DOCS / "running.md").read_text(), "docs/running.md quotes the same command"
    # scripts/setup --dev installs the linters the command runs, pinned (a new release's rules would fail CI).
    pins = (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert {"ruff", "mypy"} <= {line.split("==")[0] for line in pins if "==" in line}
    assert (ROOT / "tests" / "system" / "test_types.py").is_file(), "mypy runs as a test of the suite"
    assert "## Code layout" in text
    # Offline, said where the run command is: before the next section starts.
    run = text.split("## Run it", 1)[1].split("\n## ", 1)[0]
    assert "random weights" in run and "--model" in run


@pytest.mark.parametrize("doc", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_resolves_to_a_file_and_a_heading(doc):
    text = re.sub(r"`[^`\n]*`", "", doc.read_text())  # a link inside a code span is text, not a link
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not checked (no network in tests)
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file) if file else doc
        assert path.exists(), f"{doc.name}: {target} (no such file)"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{doc.name}: {target} (no such heading)"


RATIO = re.compile(r"(\d+(?:\.\d+)?)–(\d+(?:\.\d+)?)× the median")


def test_the_artifact_norm_ratio_is_stated_once():
    """It was quoted as 18–31× in one place and 12–45× in another. docs/methods.md is left out: it is
    the methods' own page, kept by the methods' authors."""
    found = [(p.name, m.group(0)) for p in [README, *DOCS.glob("*.md")] if p.name != "methods.md"
             for m in RATIO.finditer(p.read_text().replace("\n", " "))]
    assert len(found) == 1 and found[0][0] == "README.md", found


def test_the_methods_page_quotes_the_readmes_artifact_norm_ratio():
    """docs/methods.md is the page's Methods panel: a walk-through read "20–45× the median norm" in its LeGrad
    section and "12–45×" in its artifact section, while the README's measured ratio (tested above against a
    fresh forward) is 12.7–44.7×. Wherever the methods page quotes the ratio, it is the README's."""
    readme = RATIO.search(README.read_text().replace("\n", " "))
    quoted = [m.groups() for m in RATIO.finditer((DOCS / "methods.md").read_text().replace("\n", " "))]
    assert quoted and all(q == readme.groups() for q in quoted), (readme.groups(), quoted)


def test_the_quoted_artifact_norm_ratio_is_what_the_trained_model_gives():
    """The four corners' token norm over the median patch-token norm, after blocks 8..12, on the three
    examples: computed with transformers' own image processor and model, not vizvit's engine."""
    path = trained_dir()
    if path is None:
        pytest.skip(NO_WEIGHTS)
    from PIL import Image
    from transformers import AutoImageProcessor, ViTForImageClassification

    processor = AutoImageProcessor.from_pretrained(path)
    model = ViTForImageClassification.from_pretrained(path).eval()
    grid = model.config.image_size // model.config.patch_size
    corners = [0, grid - 1, grid * (grid - 1), grid * grid - 1]  # 0, 13, 182, 195
    ratios = []
    for name in ("chelsea", "coffee", "astronaut"):
        x = processor(Image.open(EXAMPLES / f"{name}.jpg").convert("RGB"), return_tensors="pt")["pixel_values"]
        with torch.inference_mode():
            hidden = model(pixel_values=x, output_hidden_states=True).hidden_states  # (L+1) × (1, N, D)
        for depth in range(8, 13):
            norms = hidden[depth][0, 1:].norm(dim=-1).numpy()  # (P,): patch tokens, [CLS] left out
            ratios += list(norms[corners] / np.median(norms))
    m = RATIO.search(README.read_text().replace("\n", " "))
    lo, hi = float(m.group(1)), float(m.group(2))
    assert round(min(ratios), 1) == lo and round(max(ratios), 1) == hi, (min(ratios), max(ratios))


def test_the_attnlrp_position_share_correlations_quoted_are_the_trained_models():
    """docs/methods.md says how far the map (the patch embeddings' relevance) is from the full tokens'
    (with the position embedding's share): the r it quotes per example, measured again (issue 51)."""
    path = trained_dir()
    if path is None:
        pytest.skip(NO_WEIGHTS)
    from PIL import Image

    from vizvit.methods.attnlrp import attnlrp_relevance
    from vizvit.model import engine

    text = (DOCS / "methods.md").read_text().replace("\n", " ")
    m = re.search(r"correlate at r = ([\d.]+) on the example cat, ([\d.]+) on the coffee"
                  r" and ([\d.]+) on\s+the astronaut", text)
    assert m, "the AttnLRP paragraph no longer quotes its correlations"
    vm = engine.load_model(str(path), device="cpu")
    p0 = vm.geometry.num_prefix_tokens
    for name, quoted in zip(("chelsea", "coffee", "astronaut"), m.groups()):
        a = engine.analyze(vm, Image.open(EXAMPLES / f"{name}.jpg").convert("RGB"))
        r = attnlrp_relevance(vm, a, int(a.logits.argmax()))
        got = np.corrcoef(r.tokens[p0:].numpy(), r.patches.numpy())[0, 1]
        assert f"{got:.2f}" == quoted, (name, got, quoted)


def test_the_first_layers_cls_head_numbers_quoted_are_the_trained_models():
    """docs/methods.md (Mean attention distance, shown in the page's Methods panel) quotes how much of each
    patch query's weight layer 1, head 3 of the trained ViT-Ti puts on [CLS]. A walk-through read "0.62–0.78
    of each patch query's weight" beside queries from 0.42 to 0.995 on chelsea, and medians of 0.61 (coffee)
    and 0.86 (astronaut). Measured again with transformers' own processor and eager attention."""
    path = trained_dir()
    if path is None:
        pytest.skip(NO_WEIGHTS)
    from PIL import Image
    from transformers import AutoImageProcessor, ViTForImageClassification

    processor = AutoImageProcessor.from_pretrained(path)
    model = ViTForImageClassification.from_pretrained(path, attn_implementation="eager").eval()
    medians, spans = [], {}
    for name in ("chelsea", "coffee", "astronaut"):
        x = processor(Image.open(EXAMPLES / f"{name}.jpg").convert("RGB"), return_tensors="pt")["pixel_values"]
        with torch.inference_mode():
            to_cls = model(pixel_values=x, output_attentions=True).attentions[0][0, 2, 1:, 0]  # (P,) head 3
        medians.append(float(to_cls.median()))
        spans[name] = (float(to_cls.min()), float(to_cls.max()))
    text = (DOCS / "methods.md").read_text().replace("\n", " ")
    m = re.search(r"layer 1, head 3 puts a median ([\d.]+)–([\d.]+) of a patch query's weight on \[CLS\] over the "
                  r"three examples \(([\d.]+) on chelsea\.jpg, one query ([\d.]+) to ([\d.]+)", text)
    assert m, "the distance paragraph no longer quotes layer 1, head 3's [CLS] weights as measured"
    lo, hi, cat, q_lo, q_hi = m.groups()
    assert (lo, hi) == (f"{min(medians):.2f}", f"{max(medians):.2f}"), medians
    assert cat == f"{medians[0]:.2f}" and (q_lo, q_hi) == tuple(f"{v:.3f}" for v in spans["chelsea"]), spans


def test_the_methods_panel_has_no_unfilled_placeholder():
    """docs/methods.md is rendered as the page's Methods panel: a walk-through read "Measured (python
    benchmarks/bench_inside.py, random ViT-B/16, CPU): BENCH_NUMBERS" under Head ablation, a placeholder
    never filled in. A constant's name in code spans (`FLOW_MAX_EDGES`) and maths (W_O) are fine."""
    prose = re.sub(r"`[^`]*`", "", (DOCS / "methods.md").read_text())
    assert not re.findall(r"\b[A-Z]{3,}_[A-Z_]{3,}\b", prose)


def _api_row(endpoint: str) -> str:
    """docs/api.md's table row of one public endpoint."""
    rows = [line for line in (DOCS / "api.md").read_text().splitlines() if line.startswith(f"| `{endpoint}` |")]
    assert len(rows) == 1, f"docs/api.md has {len(rows)} rows for {endpoint}"
    return rows[0]


def test_the_api_table_names_every_choice_an_endpoint_takes():
    """A script writer reads the choices in docs/api.md, not in vizvit.vocab: /relevance's list left out
    AttnLRP, and /predict's and /rollout's rows named fill, mask_mode and fusion without their values."""
    from vizvit import vocab
    from vizvit.readings import methods

    takes = {"/attention": vocab.MODES, "/rollout": vocab.FUSIONS, "/relevance": [m.name for m in methods.MENU],
             "/predict": (*vocab.FILLS, *vocab.MASK_MODES)}
    for endpoint, choices in takes.items():
        row = _api_row(endpoint)
        missing = [c for c in choices if f"`{c}`" not in row]
        assert not missing, f"docs/api.md's {endpoint} row does not name {missing}"


# A repository path in prose: `vizvit/methods/flow.py`, `tests/page/test_guard.py`, `page/jobs._site` (a module's
# name), not a prefix such as `tests/methods/test_` (ends in "_") or a pattern (`tests/<package>/...`).
REPO_PATH = re.compile(r"(?<![\w./<-])((?:vizvit|page|tests|benchmarks|scripts|docs|deploy|assets)/"
                       r"[\w./-]*[A-Za-z0-9])(?![\w/-])")


def _named_path_exists(name: str) -> bool:
    if (ROOT / name).exists():
        return True
    module, _, attr = name.rpartition(".")  # page/jobs._site: page/jobs.py defines _site
    source = ROOT / f"{module}.py"
    return bool(module) and source.is_file() and re.search(rf"\b{re.escape(attr)}\b", source.read_text()) is not None


@pytest.mark.parametrize("doc", [README, *sorted(DOCS.glob("*.md")), ROOT / "deploy" / "README.md",
                                 *sorted(ROOT.glob("requirements*.txt"))], ids=lambda p: p.name)
def test_every_file_the_docs_name_is_in_the_repository(doc):
    """A newcomer opens the file a sentence names: after the move into packages (vizvit/methods/, tests/methods/)
    requirements*.txt and four docs still named vizvit/explain.py, tests/test_lrp.py and others that are gone."""
    gone = sorted({m.group(1) for m in REPO_PATH.finditer(doc.read_text()) if not _named_path_exists(m.group(1))})
    assert not gone, f"{doc.name} names {gone}"


def _help_flags(*command: str) -> set[str]:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, *command, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", out.stdout)) - {"--help"}


def _spans_flags(text: str, program: str) -> set[str]:
    """The flags in every code span or line that runs `program`, e.g. `python app.py --model X --host 0.0.0.0`."""
    spans = re.findall(r"`([^`\n]*)`", text) + text.splitlines()
    return {flag for span in spans if program in span
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", span.split(program, 1)[1].split(" -- ")[0])}


def test_every_flag_the_docs_give_the_app_and_the_export_is_theirs():
    """A newcomer types the flags the README and docs give: each must be in `app.py --help` or `python -m
    vizvit export --help`, and docs/running.md's flag list names every flag the app has."""
    docs = [README, *sorted(DOCS.glob("*.md"))]
    app, export = _help_flags("app.py"), _help_flags("-m", "vizvit", "export")
    for doc in docs:
        text = doc.read_text()
        assert _spans_flags(text, "app.py") <= app, (doc.name, _spans_flags(text, "app.py") - app)
        assert _spans_flags(text, "vizvit export") <= export, (doc.name, _spans_flags(text, "vizvit export") - export)
    # docs/export.md is the export's page: every flag in it is the export's (`--mask 3,17,40 --mask-mode drop`).
    in_export = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", (DOCS / "export.md").read_text()))
    assert in_export <= export, in_export - export
    listed = (DOCS / "running.md").read_text().split("Flags: ", 1)[1].split("\n\n", 1)[0]
    assert app <= set(re.findall(r"--[a-z][a-z-]*", listed)), app - set(re.findall(r"--[a-z][a-z-]*", listed))


@pytest.mark.parametrize("script", sorted(DOCS.glob("*.py")), ids=lambda p: p.name)
def test_the_docs_scripts_import(script):
    """docs/tabs.md runs `python docs/compare_screenshots.py DIR`: it imported vizvit.catalog, gone since the
    move into vizvit/model/, and stopped before its first line ran. Importing a script runs its imports
    (its main() waits for __main__)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"docs_{script.stem}", script)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_the_readme_code_layout_names_every_module():
    """A newcomer finds a module through the README's Code layout: page/lean_config.py was missing from it.
    A tab's presenter (vizvit/views/<tab>.py) is named by its pattern; vizvit/__main__.py is `python -m vizvit`."""
    layout = README.read_text().split("## Code layout", 1)[1]
    modules = [*(ROOT / "page").glob("*.py"), *(ROOT / "vizvit").rglob("*.py")]
    unnamed = sorted(str(p.relative_to(ROOT)) for p in modules
                     if p.stem not in ("__init__", "__main__") and not (p.parent.name == "views" and p.stem in TABS)
                     and not re.search(rf"\b{p.stem}\b", layout))
    assert not unnamed, unnamed


def test_every_random_architecture_the_docs_name_exists():
    """`--model random:NAME` is the offline way in: every NAME the docs give is one vizvit builds."""
    from vizvit.model.models import RANDOM_ARCHS

    docs = [README, *DOCS.glob("*.md")]
    named = {m for doc in docs for m in re.findall(r"random:([a-z0-9.-]*[a-z0-9])", doc.read_text())}
    assert named and named <= set(RANDOM_ARCHS), named - set(RANDOM_ARCHS)


def test_every_environment_variable_the_app_reads_is_documented():
    """A Space runs `python app.py` with no flags: its owner sets the app through variables. app.py read
    VIZVIT_MODEL, VIZVIT_CACHE_MB, VIZVIT_PHOTO_MB and VIZVIT_CNN, and no doc named them (the README told a
    CPU Space to pick ViT-Ti/16 without saying how). VIZVIT_IDS is the page scripts' placeholder, no variable."""
    sources = [ROOT / "app.py", *(ROOT / "vizvit").rglob("*.py"), *(ROOT / "page").rglob("*.py")]
    read = {v for p in sources for v in re.findall(r"\"(VIZVIT_[A-Z_]+)\"", p.read_text())} - {"VIZVIT_IDS"}
    docs = README.read_text() + "".join(p.read_text() for p in DOCS.glob("*.md"))
    assert read and not {v for v in read if v not in docs}, sorted(v for v in read if v not in docs)
