"""The method registry (vizvit/readings/methods.py): ONE record per method, each in its own module of
vizvit/methods/, read by every consumer.

A method's name is written as a string in its own module only: the grep below reads every string
literal in vizvit/ and page/ and refuses a registered name anywhere else (the registry and the other
methods' modules included), but for the few places where the same word names something else (each
counted and explained in SAME_WORD)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from vizvit.errors import UserError
from vizvit.methods import flow, maps
from vizvit.readings import masks, methods
from vizvit.views import attention as ap

ROOT = Path(__file__).resolve().parents[2]

# (file, word) -> how many literals there spell it, and what it names there (not a method).
SAME_WORD: dict[tuple[str, str], tuple[int, str]] = {
    ("vizvit/vocab.py", "rollout"): (3, "the Attention tab's mode in a URL and the Embeddings tab's colour choice"),
    ("vizvit/vocab.py", "random"): (1, "a mask action (its button)"),
    ("vizvit/model/models.py", "random"): (3, "a random-weights architecture (random:<arch>)"),
    ("vizvit/methods/maps.py", "rollout"): (1, "the tag of a rollout stack's cache name (maps.rollout_name)"),
    ("vizvit/api.py", "rollout"): (1, "/analyze's JSON key for the mean rollout map"),
    ("vizvit/export.py", "rollout"): (1, "summary.json's key for the rollout array"),
    ("vizvit/views/attention.py", "rollout"): (1, "arrays.npz's key for the rollout stack"),
    ("vizvit/views/camera.py", "rollout"): (1, "which picture the live camera draws"),
    ("vizvit/views/embeddings.py", "rollout"): (2, "the colour choice (vocab.COLOR_CHOICES)"),
    ("vizvit/readings/masks.py", "random"): (1, "the mask action"),
    ("vizvit/readings/lesson.py", "rollout"): (1, "the lesson step's measure id (lesson.toml)"),
    ("page/endpoints.py", "rollout"): (1, "the /rollout endpoint's name"),
    ("page/tabs/compare.py", "rollout"): (2, "the Compare tab's rollout picture"),
    ("page/tabs/experiments.py", "random"): (2, "the mask action's button"),
}


def name_literals(names: set[str], root: Path = ROOT, own: dict[str, str] | None = None) -> Counter:
    """(file, literal) -> count of string constants in vizvit/ and page/ that equal a registered name,
    outside the name's own module (`own`: name -> that module's path under root)."""
    own = own or {}
    found: Counter = Counter()
    for top in ("vizvit", "page"):
        for path in sorted((root / top).rglob("*.py")):
            rel = str(path.relative_to(root))
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names \
                        and own.get(node.value) != rel:
                    found[(rel, node.value)] += 1
    return found


def own_modules(root: Path = ROOT) -> dict[str, str]:
    """Each name a record is built with (``Method("name", ...)``) in a module of vizvit/methods/ -> that
    module's path."""
    out = {}
    for path in sorted((root / "vizvit" / "methods").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Method" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                out[node.args[0].value] = str(path.relative_to(root))
    return out


def test_each_method_name_is_written_in_its_own_module_only():
    names = {m.name for m in methods.METHODS}
    own = own_modules()
    assert set(own) == names  # every record lives in a module of vizvit/methods/
    for name, path in own.items():  # ... and is written there once
        literals = [n for n in ast.walk(ast.parse((ROOT / path).read_text()))
                    if isinstance(n, ast.Constant) and n.value == name]
        assert len(literals) == 1, (name, path)
    found = name_literals(names, own=own)
    extra = {k: n for k, n in found.items() if n > SAME_WORD.get(k, (0, ""))[0]}
    assert not extra, ("a method name written as a string outside its own module of vizvit/methods/ (read the "
                       f"record instead: methods.get(name), a field, methods.ROLLOUT.name): {extra}")
    assert set(SAME_WORD) <= set(found), f"stale SAME_WORD entries: {set(SAME_WORD) - set(found)}"


def test_the_grep_sees_a_planted_name(tmp_path):
    """The grep itself: a literal method name in a module is found (so the test above can fail)."""
    (tmp_path / "vizvit").mkdir()
    (tmp_path / "page").mkdir()
    (tmp_path / "page" / "x.py").write_text('if method == "Grad-CAM":\n    pass\n')
    assert name_literals({"Grad-CAM"}, tmp_path) == Counter({("page/x.py", "Grad-CAM"): 1})


def test_records_are_unique_and_every_consumer_reads_the_registry(tiny16):
    names = [m.name for m in methods.METHODS]
    assert len(set(names)) == len(names)
    assert ap.EXPLAIN_METHODS == tuple(m.name for m in methods.METHODS if m.menu)  # the tab's menu, /relevance
    assert masks.MASK_MAPS == tuple(m.name for m in methods.METHODS
                                          if m.contest and not m.baseline and not m.costly)
    assert all(m.blurb.split("*")[1].lower() == m.name.lower() for m in methods.MENU)  # the tab's text, in order
    assert [k for k in methods.JOB_LIMITS] == [m.name for m in methods.METHODS if m.costly]
    from page import jobs
    for m in methods.METHODS:
        if m.costly:
            assert jobs.JOBS.jobs.limit_of(m.name) == m.limit_s  # the page's jobs take the record's limit
    keys = [m.export_key for m in methods.EXPORTED]
    assert len(set(keys)) == len(keys) and "relevance" in keys
    from vizvit import export
    assert all(export.methods_used(tiny16)[k] == m.export_text for m in methods.EXPORTED for k in [m.export_key])


def test_an_unknown_method_is_refused_with_the_names():
    with pytest.raises(UserError, match="use one of class relevance, gradient rollout"):
        methods.get("SmoothGrad", methods.MENU)
    assert not methods.is_costly("SmoothGrad") and methods.is_costly(methods.FLOW.name)


def test_ranking_maps_are_the_records_maps_in_registry_order(tiny16, cat):
    import vizvit
    a = vizvit.analyze(tiny16, cat)
    got = methods.ranking_maps(tiny16, a, seed=3)
    assert list(got) == [m.name for m in methods.CONTEST if not m.costly]
    g = tiny16.geometry
    # Each against a plain computation of the same map.
    np.testing.assert_allclose(got[methods.ROLLOUT.name], maps.summary_rollout_map(a))
    np.testing.assert_allclose(got[methods.RANDOM.name], np.random.default_rng(3).random(g.grid))
    np.testing.assert_allclose(got[methods.RELEVANCE.name], maps.relevance_map(tiny16, a, a.top5[0].index))
    last = a.attentions[-1].mean(0)[0, g.num_prefix_tokens:].reshape(g.grid).numpy()
    np.testing.assert_allclose(got[methods.LAST_LAYER.name], last, rtol=1e-5)


def test_a_class_specific_record_needs_a_classifier(tiny16, cat):
    import dataclasses

    import vizvit
    a = dataclasses.replace(vizvit.analyze(tiny16, cat), top5=())
    assert not methods.GRADCAM.applies(tiny16, a) and methods.ROLLOUT.applies(tiny16, a)
    assert methods.GRADCAM.name not in methods.ranking_maps(tiny16, a)
    with pytest.raises(UserError, match="no classifier"):
        methods.GRADCAM(tiny16, a)


def test_the_flow_record_is_a_costly_job_checked_first():
    assert methods.FLOW.costly and not methods.FLOW.needs_class and methods.FLOW.cached_as is not None
    assert methods.FLOW.caption == flow.FLOW_METHOD
    assert "flatter than rollout" in methods.FLOW.note(np.full((2, 2), 0.25))  # type: ignore[misc]


@pytest.mark.parametrize("value", [["rollout"], {"name": "rollout"}, 3, None, "x" * 200])
def test_a_method_that_is_not_a_short_name_is_refused_without_echoing_it(value):
    """An API caller may send any JSON value: it is refused in a sentence, never a TypeError (a list or a
    dict cannot key the registry), and never repeated back when it is not short text."""
    assert not methods.is_costly(value)
    with pytest.raises(UserError, match="use one of") as e:
        methods.get(value)
    assert repr(value)[:20] not in str(e.value).replace("'None'", "") and "x" * 49 not in str(e.value)
    assert "this value" in str(e.value)
