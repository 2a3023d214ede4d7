"""The page's own JavaScript, CSS and HTML, as real files beside this module.

Each ``.js`` file holds one JavaScript function (what Gradio's ``js=`` takes); its
leading ``//`` lines document it and are left out when it is read. The library (vizvit/) neither
names nor reads them: the scripts the page draws with are named below, and this module is the only
reader.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from vizvit.pictures import figures
from vizvit.views.common import READING_EXAMPLE

from .. import ids
from ..stream_grace import REOPENS_HEADER

HERE = Path(__file__).resolve().parent
# A clickable picture that is a grid of cells (the Patches tab's grid, the attention map, the layers × heads
# grids...) carries the class CELLS_CLASS-<rows>x<cols>[-<left>-<top>-<step x>-<step y>]: a11y.js then lets
# the arrow keys choose a cell and Enter click it (issue 51).
CELLS_CLASS = "vv-cells"

# A button whose handler needs the photo (a Run button, a mask preset) carries NEEDS_PHOTO: clicked while the page's
# first photo is still being read, the click waits for it (run_waits.js) instead of being told "Upload a photo first."
NEEDS_PHOTO = "vv-needs-photo"
PHOTO_READING = "The photo is still being read: a moment. What you clicked runs once it is in."

# The page's own drawing (a js_on_load each), from the books the views send (vizvit.views.books...).
MAP_DRAW = "map_draw.js"  # one attention map, views.layout.map_image's pixels: run before the two below
ATTENTION_MAP = "attention_map.js"  # the Attention tab's layer, head, fusion and clicks, with no round trip
CAMERA_DRAW = "camera_draw.js"  # the live camera's picture, from views.camera.live_book
EMBEDDINGS_CLICK = "embeddings_click.js"  # a clicked token, from views.embeddings.token_book
FLIPBOOK = "flipbook.js"  # a view's Flipbook (page/flip.py): pictures swapped in as the controls move
HAND_ON = "hand_on.js"  # the one queue of events held until the page's picture is painted: before the others
# Every script a component's js_on_load runs (on_load): the page defines each once, in its head (page_head).
DRAWING = (HAND_ON, MAP_DRAW, ATTENTION_MAP, CAMERA_DRAW, EMBEDDINGS_CLICK, FLIPBOOK)
# The page's table of them: window.<DRAWN>[file name] is that file's statements as a function of
# js_on_load's arguments.
DRAWN = "__vizvitDrawing"
ON_LOAD_ARGS = "element, trigger, props, server, upload, watch"  # Gradio 6.31's gr.HTML js_on_load


@cache
def asset(name: str) -> str:
    """The text of page/web/<name>; for .js, without its leading comment lines."""
    path = HERE / name
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".js":
        lines = text.splitlines()
        while lines and (lines[0].startswith("//") or not lines[0].strip()):
            lines.pop(0)
        text = "\n".join(lines).strip()
        # the element ids it names (VIZVIT_IDS.ATTN_MAIN): page/ids.py's table, written in
        text = text.replace(ids.PLACEHOLDER, ids.as_js())
    return text


def projector_js() -> str:
    """projector.js with its charts' text size written in: run by the main page's checkbox, and by the camera
    page opened from a page in projector mode."""
    return asset("projector.js").replace("CHART_PX", str(figures.PROJECTOR_CHART_PX))


def projector_checkbox_js() -> str:
    """The main page's projector checkbox: projector.js, then the page's address made to say what it shows
    (projector_address.js: ?projector=1 on, none off), so a reload or a copied address shows the same layout."""
    return f"(on) => {{ ({projector_js()})(on); ({asset('projector_address.js')})(on); }}"


def scripts(*names: str) -> str:
    """Scripts run one after the other: each file's statements, in order."""
    return "\n".join(asset(n) for n in names)


def page_head() -> str:
    """launch's head=: every DRAWING script, defined once for the page as a function of js_on_load's
    arguments (its text compiled once, not once per component: issue 52). Gradio 6.31 adds the head's
    scripts to the document before it renders a component, so each is defined before any js_on_load
    calls it; js= runs only once every component has mounted, after their js_on_load."""
    defs = "".join(f"{json.dumps(n)}: function ({ON_LOAD_ARGS}) {{\n{asset(n)}\n}},\n" for n in DRAWING)
    # First, the page's fetch that keeps the stream of answers (answer_stream.js): before any event.
    answers = asset("answer_stream.js").replace("REOPENS_HEADER", json.dumps(REOPENS_HEADER))
    script = f"({answers})();\nwindow.{DRAWN} = {{\n{defs}}};"
    if re.search(r"</script|<!--", script, re.I):  # would end the <script> early (the head is HTML)
        raise ValueError("a drawing script holds '</script' or '<!--'")
    return f"<script>\n{script}\n</script>"


def on_load(*names: str) -> str:
    """A component's js_on_load: the DRAWING scripts `names` (page_head), in order, each run with this
    component's own arguments (its element, its props and watch: the book it carries), at each mount
    as a script of its own would be."""
    unknown = [n for n in names if n not in DRAWING]
    if unknown:
        raise ValueError(f"not a drawing script (web.DRAWING): {unknown}")
    return f"for (const n of {json.dumps(list(names))}) window.{DRAWN}[n]({ON_LOAD_ARGS});"


def click_new_file(box: str) -> str:
    """The download script for the file box matching CSS selector `box`."""
    return asset("click_new_file.js").replace("BOX", box)


def after_paint(selector: str) -> str:
    """The js= that holds a chained event until the pictures under CSS `selector` are painted."""
    return asset("after_paint.js").replace("SELECTOR", selector)


# A tab's follow-up (after_quiet.js) waits until the person has not touched the page for QUIET_MS,
# at most LIMIT_MS after its pictures are painted (issue 52: live from the first second).
QUIET_MS = 500
QUIET_LIMIT_MS = 2000


def after_quiet(selector: str, busy: list[str] | tuple[str, ...] = (), key: str = "") -> str:
    """The js= that holds a tab's follow-up until the pictures under CSS `selector` are painted and
    the person pauses (see after_quiet.js); the elements under the `busy` selectors shown on screen
    are marked as being redrawn, under `key`, until follow_done(key) runs."""
    return (asset("after_quiet.js").replace("SELECTOR", selector).replace("QUIET_MS", str(QUIET_MS))
            .replace("LIMIT_MS", str(QUIET_LIMIT_MS)).replace("BUSY", json.dumps(list(busy)))
            .replace("UPDATING", json.dumps(UPDATING)).replace("KEY", json.dumps(key)))


UPDATING = "vv-updating"  # CSS class (style.css) of a chart a follow-up is redrawing


def follow_done(key: str) -> str:
    """The js= of the step after a follow-up: the marks its wait put under `key` end (see after_quiet)."""
    return asset("follow_done.js").replace("KEY", json.dumps(key))


def cells_class(rows: int, cols: int, step: tuple[int, int] | None = None, at: tuple[int, int] = (0, 0)) -> str:
    """The class that makes a picture of rows × cols cells keyboard-choosable (a11y.js). step: (x, y) px,
    in the picture's own pixels, from one cell's top-left corner to the next one's (a cell and its
    separator); at: the first cell's top-left corner (after the labels). No step: the cells fill the picture."""
    if step is None:
        return f"{CELLS_CLASS}-{rows}x{cols}"
    return f"{CELLS_CLASS}-{rows}x{cols}-{at[0]}-{at[1]}-{step[0]}-{step[1]}"


def run_waits() -> str:
    """run_waits.js with its class, its line and the status line's start while a link's example is read written
    in (the page-load js= that holds early clicks)."""
    return (asset("run_waits.js").replace("NEEDS_PHOTO_CLASS", NEEDS_PHOTO)
            .replace("SAY_READING", json.dumps(PHOTO_READING)).replace("LINK_READING", json.dumps(READING_EXAMPLE)))


def page_scripts() -> str:
    """The page-load js= (one function): page.js, then a11y.js (names and keys, issue 51), then
    focus_order.js (Tab in the order seen), then input_clock.js (the last input's time, for after_quiet.js)."""
    a11y = asset("a11y.js").replace("CELLS_CLASS", CELLS_CLASS)
    return (f"() => {{ ({asset('page.js')})(); ({a11y})(); ({asset('focus_order.js')})();"
            f" ({asset('input_clock.js')})(); }}")
