"""The element ids the page's scripts (page/web/*.js) look up, in one place.

A script names an id as ``VIZVIT_IDS.ATTN_MAIN``; page.web.asset fills in ``VIZVIT_IDS`` with
this table (a JSON object) as the script is read, so a renamed id is renamed here, once, and a
script cannot name an id the table lacks (tests/page/test_ids.py: every one is in the built page).
The flipbooks' ids travel in their books (vizvit/views/flip.py) and are not listed here.
"""

from __future__ import annotations

import json
import types

# The header and the tabs (page/shell.py)
SKIP = "skip-link"  # the first Tab stop: "Skip to main content" (a11y.js, part 8)
UPLOAD = "upload"
TABS = "tabs"
STATUS = "status"
# The pictures a readout's numbers describe (a11y.js: aria-describedby), each beside its readout below
PATCH_GRID = "patch-grid"
ATTN_GRID = "attn-grid"
EMB_CLS = "emb-cls"
EMB_CLS_INFO = "emb-cls-info"
MASK_GRID = "mask-grid"
MASKED_VIEW = "masked-view"
SHIFT_VIEW = "shift-view"
SHIFT_COS = "shift-cos"
ABLATE_GRID = "ablate-grid"
POS_GRID = "pos-grid"
POS_TEXT = "pos-text"
POS_TILE = "pos-tile"  # the picked position's tile, drawn large: its chart title is said (web/a11y.js)
# The readouts that answer a pick or a setting (a11y.js says each once it settles)
PATCH_INFO = "patch-info"
ATTN_READOUT = "attn-readout"
MASK_INFO = "mask-info"
SHIFT_INFO = "shift-info"
ABLATE_TEXT = "ablate-text"
LESSON_ANSWER = "lesson-answer"
CURVES_STALE = "curves-stale"  # the contest on show is for other settings (page/tabs/experiments.py)
SWEEP_STALE = "sweep-stale"  # the shift sweep on show ran with another fill (page/tabs/experiments.py)
CMP_VERDICT = "cmp-verdict"  # the Compare tab's verdict at the depth cursor (page/tabs/compare.py)
SWEEP_TEXT = "sweep-text"  # the shift sweep's line: "Running… 8 of 33", then "Done: 33 of 33" (its last is said)
CURVES_TEXT = "curves-text"  # the contest's line: "8 of 10 parts so far · Tracking p(…)", then "Tracking p(…)"
# Attention (page/tabs/attention.py)
ATTN_MAIN = "attn-main"
ATTN_LAYER = "attn-layer"
ATTN_HEAD = "attn-head"
ATTN_SHOW = "attn-show"
ATTN_SCALE = "attn-scale"
ATTN_TO_CLS = "attn-to-cls"
ATTN_DISTANCE = "attn-distance"
ATTN_DISTANCE_CLICK = "attn-distance-click"
ATTN_CLASS = "attn-class"  # the class search box (page.js: empty on focus)
# Embeddings (page/tabs/embeddings.py)
EMB_PCA = "emb-pca"
EMB_SIM = "emb-sim"
EMB_SIM_INFO = "emb-sim-info"
EMB_SCATTER = "emb-scatter"
EMB_DEPTH = "emb-depth"
EMB_CLICK = "emb-click"
EMB_THUMB = "emb-thumb"  # made by page.js: the scatter's hover thumbnail
# Lesson (page/tabs/lesson.py)
LESSON_STEP = "lesson-step"
LESSON_ROOM_SAVED = "lesson-room-saved"  # the room this page opened, kept across a reload (also its storage's name)
LESSON_ROOM_BOX = "lesson-room-box"  # its invitation and QR code: "closed" once the room is (lesson_room_load.js)
# The live camera (page/tabs/camera.py; the live box's markup: vizvit/views/camera.live_markup)
CAM_PICTURE = "cam-picture"
CAM_NOTE_REFRESH = "cam-note-refresh"
CAM_LAYER = "cam-layer"
CAM_HEADS = "cam-heads"
CAM_MODE = "cam-mode"
CAM_LIVE = "cam-live"
CAM_VIDEO = "cam-video"
CAM_START = "cam-start"
CAM_STOP = "cam-stop"
CAM_STATUS = "cam-status"
CAM_SAID = "cam-said"  # the live top-1, said to a screen reader (camera_live.js)

# Ids no component has: a script makes the element itself.
MADE_BY_SCRIPTS = frozenset({EMB_THUMB})

IDS: types.MappingProxyType[str, str] = types.MappingProxyType(
    {name: value for name, value in dict(globals()).items() if name.isupper() and isinstance(value, str)})
PLACEHOLDER = "VIZVIT_IDS"  # what a script writes where it means this table


def as_js() -> str:
    """The table as a JavaScript object literal (JSON): what PLACEHOLDER becomes in a script."""
    return json.dumps(dict(IDS), separators=(",", ":"))
