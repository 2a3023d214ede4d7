"""The notebook example in docs/api.md (linked from the README) runs as written (with a tiny local
model instead of the hub id)."""

from __future__ import annotations

import re

import matplotlib
from tiny import ROOT


def test_readme_notebook_example_runs(tiny_dirs, tmp_path, monkeypatch):
    matplotlib.use("Agg")
    text = (ROOT / "docs" / "api.md").read_text()
    block = re.search(r"<!-- notebook-example:start -->\n```python\n(.*?)```", text, re.S).group(1)
    assert 'vizvit.load_model("google/vit-base-patch16-224")' in block
    code = block.replace('"google/vit-base-patch16-224"', repr(str(tiny_dirs["p32"])))
    code = code.replace('"assets/examples/', f'"{ROOT}/assets/examples/')
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "docs/api.md", "exec"), scope)
    assert scope["rollout"].shape == (2, 7, 7)
    assert scope["sim"].shape == (49, 49)
    assert (tmp_path / "vizvit-example.png").stat().st_size > 10_000
