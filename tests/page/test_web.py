"""page/web: the page's JS, CSS and HTML files and their one reader (page/web/__init__.py).

No browser: every file name the code refers to (page/, vizvit/views' script names, app.py) is
read here, every file there is referred to, and the library holds none of them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from page import core_chunk, web

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
    # Gradio's own chunks (page/core_chunk.py serves one patched) are Gradio's files, not the page's.
    gradio_assets = core_chunk.chunk_file().parent
    names = {n: srcs for n, srcs in referenced_names().items() if not (gradio_assets / n).is_file()}
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


def test_scripts_runs_each_in_order():
    a, b = web.asset("map_draw.js"), web.asset("attention_map.js")
    assert web.scripts("map_draw.js", "attention_map.js") == a + "\n" + b


def test_the_head_defines_each_drawing_script_once_and_on_load_calls_them_in_order():
    head = web.page_head()
    assert head.startswith("<script>") and head.endswith("</script>") and head.count("</script>") == 1
    for name in web.DRAWING:
        assert head.count(web.asset(name)) == 1, name
        assert head.count(f'"{name}": function ({web.ON_LOAD_ARGS}) {{') == 1, name
    call = web.on_load(web.HAND_ON, web.MAP_DRAW, web.ATTENTION_MAP)
    assert call == ('for (const n of ["hand_on.js", "map_draw.js", "attention_map.js"]) '
                    f"window.{web.DRAWN}[n]({web.ON_LOAD_ARGS});")
    with pytest.raises(ValueError, match="not a drawing script"):
        web.on_load("page.js")


# The whole page's js_on_load, every component's together (issue 52: 232 KB when each carried its
# scripts' text): the flipbooks', the attention map's, the clicked token's, the camera's calls,
# attn_matrix.js (~370 bytes) and the camera picture's click trigger (Gradio's default).
JS_ON_LOAD_MAX_BYTES = 3_000
CALL_MAX_BYTES = 200  # one component's call into the head's scripts
OWN_MAX_BYTES = 500  # a component's own script
SNIPPET = 80  # characters: a piece of a drawing script this long found in a js_on_load is its text


def test_the_served_config_carries_each_drawing_script_once(url):
    """The config the app serves (tests/page/conftest.py: the production launch settings): each
    drawing script's text once, in the head; each component that draws only calls it."""
    import json
    import urllib.request

    with urllib.request.urlopen(url + "config", timeout=60) as r:
        config = json.loads(r.read())
    loads = {c["props"].get("elem_id"): c["props"]["js_on_load"] for c in config["components"]
             if c.get("props", {}).get("js_on_load")}
    assert {"attn-book", "emb-tokens", "flip-emb-depth"} <= set(loads), sorted(loads)
    total = sum(len(v.encode()) for v in loads.values())
    assert total <= JS_ON_LOAD_MAX_BYTES, (total, {k: len(v) for k, v in loads.items()})
    calls = {k: v for k, v in loads.items() if f"window.{web.DRAWN}[" in v}
    assert all(len(v.encode()) <= CALL_MAX_BYTES for v in calls.values())
    # The rest: a component's own short script (attn_matrix.js; Gradio's default click trigger).
    others = {k: len(v.encode()) for k, v in loads.items() if k not in calls}
    assert len(others) <= 2 and all(n <= OWN_MAX_BYTES for n in others.values()), others
    for name in web.DRAWING:  # no piece of a drawing script in any component: each is the head's, once
        text = web.asset(name)
        pieces = {text[i:i + SNIPPET] for i in range(0, len(text) - SNIPPET, SNIPPET)}
        assert not any(p in v for p in pieces for v in loads.values()), name
        assert config["head"].count(text) == 1, name
    assert config["head"] == web.page_head()


def test_the_templates_fill_their_placeholder():
    assert "BOX" in web.asset("click_new_file.js")
    filled = web.click_new_file("#charts-file-x")
    assert "BOX" not in filled and "#charts-file-x" in filled
    assert "SELECTOR" in web.asset("after_paint.js")
    assert "SELECTOR" not in web.after_paint("#a img") and "#a img" in web.after_paint("#a img")
    quiet = web.after_quiet("#a img")
    assert not any(p in quiet for p in ("SELECTOR", "QUIET_MS", "LIMIT_MS")) and "#a img" in quiet
    assert f"+ {web.QUIET_MS}, t0 + {web.QUIET_LIMIT_MS})" in quiet
    waits = web.run_waits()
    assert "NEEDS_PHOTO_CLASS" not in waits and "SAY_READING" not in waits
    assert f"'.{web.NEEDS_PHOTO}'" in waits and json.dumps(web.PHOTO_READING) in waits


def test_an_unknown_name_is_a_clear_error():
    with pytest.raises(FileNotFoundError):
        web.asset("no_such_script.js")
