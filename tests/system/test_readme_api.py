"""The gradio_client example in docs/api.md (linked from the README) runs as written against a running page."""

from __future__ import annotations

import re

from appserver import running
from tiny import ROOT


def test_readme_api_example_runs(tiny16, monkeypatch, capsys):
    text = (ROOT / "docs" / "api.md").read_text()
    block = re.search(r"<!-- api-example:start -->\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(ROOT)
    with running(tiny16) as url:
        code = block.replace('"http://127.0.0.1:7860/"', repr(url))
        exec(compile(code, "docs/api.md", "exec"), {})
    out = capsys.readouterr().out
    assert "thing" in out and "[14, 14]" in out and "14 rows of 14" in out
