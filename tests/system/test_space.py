"""A Hugging Face Space, as faithfully as this machine allows: `python app.py` with no arguments,
the Space's environment and no network. It must listen on 0.0.0.0:7860, answer quickly (one short
hub check, not the hub client's retry ladder), and say on the page that the weights are untrained.
The README's front matter must match what the Space build uses."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The target is 15 s (10.7 s measured here on a quiet machine). What this test must catch is
# the hub client's retry ladder, and that is read from the log; the time is only a bound against a
# hang: at load ~9 on these two shared cores the start took 54 s (2026-12-06), and speed belongs in
# benchmarks/, not in a timed test.
ANSWER_WITHIN_S = 150.0


def netns_prefix() -> list[str]:
    """A private network namespace (loopback only) when the kernel lets us make one: no network,
    and port 7860 cannot clash with anything else on the machine."""
    if shutil.which("unshare"):
        ok = subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0
        if ok:
            return ["unshare", "-rn"]
    return []


@pytest.fixture(scope="module")
def space() -> dict:
    prefix = netns_prefix()
    if not prefix:
        import socket

        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", 7860)) == 0:
                pytest.skip("port 7860 is taken here and no private network namespace can be made")
    # In a new namespace loopback starts down: bring it up, then run the check.
    script = "ip link set lo up 2>/dev/null || true; exec \"$0\" \"$@\""
    cmd = [*prefix, "sh", "-c", script, sys.executable, str(ROOT / "tests" / "space_check.py")]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_listens_on_all_interfaces_port_7860(space):
    assert space["answered_s"] is not None, space["log"]
    assert "0.0.0.0:7860" in space["listening"], (space["listening"], space["log"])


def test_answers_without_network_and_without_the_hub_retry_ladder(space):
    assert space["answered_s"] < ANSWER_WITHIN_S, space["log"]
    assert "Retrying in" not in space["log"], "the hub client's retry ladder ran"
    assert space["log"].count("cannot be reached") == 1, "the hub is asked once and the log says so once"


def test_the_page_says_the_weights_are_untrained(space):
    assert "untrained random weights" in space["config"] and "No internet connection" in space["config"]


def front_matter() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("---\n")[1]
    return {k.strip(): v.strip().strip('"') for k, v in (line.split(":", 1) for line in block.splitlines()
                                                          if ":" in line and not line.startswith(" "))}


def test_front_matter_matches_the_space_build():
    fm = front_matter()
    assert fm["sdk"] == "gradio" and fm["app_file"] == "app.py" and (ROOT / fm["app_file"]).exists()
    pinned = re.search(r"^gradio==([\d.]+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert pinned and fm["sdk_version"] == pinned.group(1), "sdk_version must be the pinned gradio"
    assert re.fullmatch(r"3\.\d+", fm["python_version"])
    requires = re.search(r'requires-python = ">=(3\.\d+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    assert tuple(map(int, fm["python_version"].split("."))) >= tuple(map(int, requires.split(".")))
    # The Space installs requirements.txt with pip: no local paths, editable installs or extra indexes.
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        spec = line.split("#")[0].strip()
        assert not spec.startswith(("-e", "--", ".", "/", "file:")), spec
