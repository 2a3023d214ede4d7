"""One path per computation (issue 26): every cache name is defined in session.py, and the mean
rollout is computed once per photo whichever tab, mask, curve, export or API call asks first."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import EXAMPLES

from vizvit import attention as att_mod
from vizvit import maps, session
from vizvit.api import PublicApi
from vizvit.session import PhotoKey, Workbench
from vizvit.views import attention, embeddings, experiments

PACKAGE = Path(__file__).resolve().parent.parent / "vizvit"
CACHE_CALLS = {"derived", "per_model", "peek", "peek_derived", "cache", "get_or_compute"}


def spelled_names(path: Path) -> list[str]:
    """Calls that cache under a name spelled in place (a string or tuple literal, not session's)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name not in CACHE_CALLS:
            continue
        args = node.args[1:2] if name == "peek_derived" else node.args[:1]
        if any(isinstance(a, (ast.Constant, ast.Tuple)) for a in args):
            found.append(f"{path.parent.name}/{path.name}:{node.lineno}")
    return found


def test_views_and_the_api_spell_no_cache_name():
    files = [*sorted((PACKAGE / "views").glob("*.py")), PACKAGE / "api.py", PACKAGE / "maps.py"]
    assert [hit for f in files for hit in spelled_names(f)] == [], "cache names live in vizvit/session.py"


def test_the_finder_finds_a_spelled_name(tmp_path):
    bad = tmp_path / "views" / "probe.py"
    bad.parent.mkdir()
    bad.write_text('def f(ph, wb, key):\n    ph.derived(("rollout", "mean"), lambda: 0)\n'
                   '    return wb.peek_derived(key, "head_importance")\n')
    assert spelled_names(bad) == ["views/probe.py:2", "views/probe.py:3"]


def test_the_mean_rollout_is_computed_once_for_every_reader(tiny16, monkeypatch):
    calls = []
    real = att_mod.rollout_stack

    def counted(att, fusion="mean", discard=0.0, *rest, **kw):
        calls.append((fusion, discard))
        return real(att, fusion, discard, *rest, **kw)

    monkeypatch.setattr(att_mod, "rollout_stack", counted)
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    photo = str(EXAMPLES / "chelsea.jpg")
    ph = wb.handle(PhotoKey(tiny16.id, wb.add_photo(photo)))
    attention.export_arrays(ph)  # maps, prefix rollouts, per-head rollout
    embeddings.data(ph)  # the scatter's rollout colours
    experiments.mask_action(ph, (), "top", 10)  # a mask by rollout
    experiments.curve_maps(ph)  # the curves' rollout map
    attention.change(ph, attention.AttnParams(mode="rolled out"))  # the strip, rolled out
    PublicApi(wb).rollout(photo, tiny16.id)  # the API's rollout endpoint
    assert calls == [("mean", 0.0)], "one mean rollout per photo, whoever reads it"
    assert wb.peek_derived(ph.key, session.MEAN_ROLLOUT) is not None
    assert maps.rollout(ph.analysis(), "mean", 0.0, ph.derived) is wb.peek_derived(ph.key, session.MEAN_ROLLOUT)
