"""page/web: the page's JS, CSS and HTML files and their one reader (page/web/__init__.py).

No browser: every file name the code refers to (page/, vizvit/views' script names, app.py) is
read here, every file there is referred to, and the library holds none of them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from page import web

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "page" / "web"
SUFFIXES = (".js", ".css", ".html")
# A quoted plain file name with one of those suffixes: what asset() and the views' *_SCRIPT(S) take.
NAME = re.compile(r"""["']([\w-]+\.(?:js|css|html))["']""")


# In vizvit/ only the views' script names count (FOO_SCRIPT = ..., FOO_SCRIPTS = (...)): the library
# also names files it writes (export's charts.html), which are not the page's.
SCRIPT_LINE = re.compile(r"^\w*_SCRIPTS? = .*$", re.M)


def referenced_names() -> dict[str, set[str]]:
    """{file name: the source files naming it} over page/, app.py and vizvit's *_SCRIPT(S) lines."""
    names: dict[str, set[str]] = {}
    texts = {src: src.read_text(encoding="utf-8") for src in [*(ROOT / "page").rglob("*.py"), ROOT / "app.py"]}
    for src in (ROOT / "vizvit").rglob("*.py"):
        texts[src] = "\n".join(SCRIPT_LINE.findall(src.read_text(encoding="utf-8")))
    for src, text in texts.items():
        for name in NAME.findall(text):
            names.setdefault(name, set()).add(str(src.relative_to(ROOT)))
    return names


def test_the_library_holds_no_browser_file():
    found = [str(p.relative_to(ROOT)) for p in (ROOT / "vizvit").rglob("*") if p.suffix in SUFFIXES]
    assert found == []


def test_every_named_file_is_in_page_web_and_reads():
    names = referenced_names()
    missing = {n: sorted(names[n]) for n in names if not (WEB / n).is_file()}
    assert not missing, f"named but not in page/web: {missing}"
    for name in names:
        assert web.asset(name).strip(), name


def test_every_file_in_page_web_is_named_somewhere():
    """An orphan would ship and never run (or be named by a path the code no longer reads)."""
    names = referenced_names()
    orphans = sorted(p.name for p in WEB.iterdir() if p.suffix in SUFFIXES and p.name not in names)
    assert orphans == []


def test_the_page_names_its_drawing_scripts_and_the_library_none():
    """The scripts the page draws with are named in page/web (plain file names there); vizvit names none."""
    named = [web.MAP_DRAW, web.ATTENTION_MAP, web.CAMERA_DRAW, web.EMBEDDINGS_CLICK]
    for name in named:
        assert type(name) is str and "/" not in name and (WEB / name).is_file(), name
    library = [p for p in (WEB.parent.parent / "vizvit").rglob("*.py") if ".js\"" in p.read_text()]
    assert library == [], library


def test_asset_drops_only_the_leading_comment_lines():
    """A script's leading // lines document it; what follows is kept to the byte (less the ends' blanks)."""
    raw = (WEB / "preload.js").read_text(encoding="utf-8")
    assert raw.startswith("//")
    body = web.asset("preload.js")
    assert not body.startswith("//") and body in raw
    first_code = next(line for line in raw.splitlines() if line.strip() and not line.startswith("//"))
    assert body.splitlines()[0] == first_code
    css = (WEB / "style.css").read_text(encoding="utf-8")
    assert web.asset("style.css") == css  # not a script: read as it is


def test_scripts_runs_each_in_order_and_hand_on_first():
    a, b = web.asset("map_draw.js"), web.asset("attention_map.js")
    assert web.scripts("map_draw.js", "attention_map.js") == a + "\n" + b
    assert web.with_hand_on("map_draw.js") == web.asset("hand_on.js") + "\n" + a


def test_the_templates_fill_their_placeholder():
    assert "BOX" in web.asset("click_new_file.js")
    filled = web.click_new_file("#charts-file-x")
    assert "BOX" not in filled and "#charts-file-x" in filled
    assert "SELECTOR" in web.asset("after_paint.js")
    assert "SELECTOR" not in web.after_paint("#a img") and "#a img" in web.after_paint("#a img")
    quiet = web.after_quiet("#a img")
    assert not any(p in quiet for p in ("SELECTOR", "QUIET_MS", "LIMIT_MS")) and "#a img" in quiet
    assert f"+ {web.QUIET_MS}, t0 + {web.QUIET_LIMIT_MS})" in quiet


def test_an_unknown_name_is_a_clear_error():
    with pytest.raises(FileNotFoundError):
        web.asset("no_such_script.js")
