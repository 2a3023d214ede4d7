"""page/ids.py: the element ids the page's scripts look up come from Python, and exist.

No browser: the scripts' text (page/web/*.js), the table, and the built page's config.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from page import ids, web

WEB = Path(__file__).resolve().parents[2] / "page" / "web"
# The lesson room's page is a page of its own (room.html), not the Gradio page these ids are in.
SCRIPTS = sorted(p for p in WEB.glob("*.js") if not p.name.startswith("room"))
USE = re.compile(r"\b(?:ID|VIZVIT_IDS)\.([A-Z][A-Z0-9_]*)")


def code(path: Path) -> str:
    """A script's text without its comments (which may name an id in words)."""
    return "\n".join(line.split("//")[0] for line in path.read_text(encoding="utf-8").splitlines())


def test_every_id_a_script_names_is_in_the_table():
    used = {m for p in SCRIPTS for m in USE.findall(code(p))}
    assert used and not used - set(ids.IDS), used - set(ids.IDS)


def test_every_id_in_the_table_is_named_by_a_script():
    used = {m for p in SCRIPTS for m in USE.findall(code(p))}
    assert set(ids.IDS) - used == set()


def test_no_script_writes_an_id_of_the_table_itself():
    """'#attn-main' or 'attn-main' in a script would drift from the table when renamed."""
    for p in SCRIPTS:
        text = code(p)
        for value in ids.IDS.values():
            pattern = rf"""(['"`]|#){re.escape(value)}(?![\w-])"""
            assert not re.search(pattern, text), f"{p.name} writes {value!r}: use ID.{value.upper()}"


def test_asset_writes_the_table_in():
    text = web.asset("scroll_to_main.js")
    assert ids.PLACEHOLDER not in text
    table = json.loads(re.search(r"\{[^{}]*\}", text.split("${", 1)[1]).group(0))
    assert table == dict(ids.IDS) and table["ATTN_MAIN"] == "attn-main"


def test_every_id_is_in_the_built_page(tiny16):
    """Each id is a component's elem_id, or an id in markup the page holds (the camera's live box),
    in the page the app serves; those a script makes itself are listed as such."""
    from page import shell
    from vizvit.session import Workbench

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    config = demo.get_config_file()
    elem_ids = {c.get("props", {}).get("elem_id") for c in config["components"]}
    markup = json.dumps(config, default=str)  # an event may hold a function
    missing = [v for v in ids.IDS.values() if v not in ids.MADE_BY_SCRIPTS and v not in elem_ids
               and f'id=\\"{v}\\"' not in markup]
    assert missing == []
    assert not ids.MADE_BY_SCRIPTS & elem_ids  # one made by a script must not clash with a component's
