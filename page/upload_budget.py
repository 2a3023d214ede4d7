"""Gradio's upload folder bounded in bytes, not only in time.

Gradio files every upload (and every picture an event answers with) in its folder, and the page has it
delete only what is older than an hour (build_demo's delete_cache): the folder held whatever arrived within
that hour. A stranger's soak of distinct photos over REST and gradio_client (two callers, a new photo every
few seconds) grew it by 30 MB a minute, 177 MB in six minutes; a client on a fast line could fill the disk
in the hour, and every other server on it with it.

UploadBudget, an ASGI middleware, keeps what the server files within a budget (VIZVIT_UPLOAD_MB, default
2 GB). After an upload a thread looks at the folder (at most once a second, GAP_S) and removes the oldest
files first (an upload of the same bytes again is the same file, made new) until the rest fit. It never removes:
- a file younger than YOUNG_S: its event may still wait in the queue, or its picture on the way to a page;
- a file that was in the folder when the server answered its first request: the examples Gradio filed as
  the page was built (a click on one sends its path there). A previous run's leftovers are kept too; that
  run kept them within its own budget.
While young files alone fill the budget, Gradio's upload route answers 503 with a sentence, before it reads
the body, until they age. A page whose photo file was removed meets an emptied upload box and keeps its
analysis (page.shell._shown_file), as after the hour's cleaning.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gradio.utils import get_upload_folder
from starlette.types import ASGIApp, Receive, Scope, Send

from page.body_limit import declared_length, route_path

log = logging.getLogger(__name__)
BUDGET_ENV = "VIZVIT_UPLOAD_MB"
DEFAULT_MB = 2048
YOUNG_S = 120.0  # a photo's event waits in the queue (64 places) for at most about this long
GAP_S = 1.0  # between two looks: a walk of a full folder (20,000 files) costs ~0.1 s of CPU
UPLOAD_PATHS = ("/gradio_api/upload", "/upload")  # Gradio's upload route, and its older name
FULL = "The server has received too many new photos in the last minutes; please try again in a minute."


@dataclass(frozen=True)
class Trim:
    """One look at the folder: what this server filed that is still there (bytes), of which young, and
    how many files were removed."""

    kept: int
    young: int
    removed: int


def files_in(folder: Path) -> list[tuple[float, int, Path]]:
    """(mtime, size, path) of every file under `folder`, oldest first; files that vanish meanwhile left out."""
    out = []
    for root, _, names in os.walk(folder):
        for name in names:
            p = Path(root, name)
            try:
                st = p.lstat()
            except OSError:
                continue
            out.append((st.st_mtime, st.st_size, p))
    out.sort()
    return out


def trim(folder: Path, max_bytes: int, keep: frozenset[Path] = frozenset(), now: float | None = None,
         young_s: float = YOUNG_S) -> Trim:
    """Remove the oldest files under `folder` (but `keep` and those younger than `young_s`) until the
    rest, `keep` not counted, is at most `max_bytes`; each file's folder (Gradio's: one per content hash)
    goes with its last file."""
    now = time.time() if now is None else now
    files = [f for f in files_in(folder) if f[2] not in keep]
    total, removed = sum(size for _, size, _ in files), 0
    for mtime, size, p in files:
        if total <= max_bytes or now - mtime < young_s:  # oldest first: the rest are younger still
            break
        try:
            p.unlink()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        total -= size
        removed += 1
        try:
            p.parent.rmdir()  # only once empty
        except OSError:
            pass
    young = sum(size for mtime, size, _ in files if now - mtime < young_s)
    return Trim(kept=total, young=min(young, total), removed=removed)


def budget_bytes(env: Mapping[str, str] = os.environ) -> int:
    raw = env.get(BUDGET_ENV, "")
    return (int(raw) if raw.strip().isdigit() else DEFAULT_MB) << 20


class UploadBudget:
    """The ASGI middleware (app.launch_kwargs lists it): a look at the folder after each upload to Gradio's
    route, and refuses an upload while the folder is full of young files."""

    def __init__(self, app: ASGIApp, max_bytes: int | None = None, folder: str | None = None):
        self.app = app
        self.max_bytes = budget_bytes() if max_bytes is None else max_bytes
        self.folder = Path(folder or get_upload_folder())
        self.keep = frozenset(p for _, _, p in files_in(self.folder))
        self.added, self.full = 0, False
        self.lock = threading.Lock()
        self.running: threading.Thread | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or route_path(scope) not in UPLOAD_PATHS:
            await self.app(scope, receive, send)
            return
        if self.full:
            self.due(0)
            body = json.dumps({"detail": FULL}).encode()
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"60"),
                                    (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": body})
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.due(declared_length(scope.get("headers", [])) or 0)

    def due(self, n: int) -> None:
        """Count `n` bytes received and start a look in a thread, unless one runs: it looks again before
        it ends when more arrived meanwhile (the folder never stays over the budget after the last upload)."""
        with self.lock:
            self.added += n
            if self.running is None:
                self.running = threading.Thread(target=self.looks, name="vizvit-upload-budget", daemon=True)
                self.running.start()

    def looks(self) -> None:
        while True:
            with self.lock:
                self.added = 0
            try:
                self.look()
            except OSError as e:  # a failed look must not leave `running` set for good
                log.warning("the upload folder could not be trimmed: %s", e)
            time.sleep(GAP_S)  # in this thread only: an upload flood gets a look a second, not one per upload
            with self.lock:
                if not self.added:
                    self.running = None
                    return

    def look(self) -> Trim:
        t = trim(self.folder, self.max_bytes, self.keep, young_s=YOUNG_S)
        self.full = t.young >= self.max_bytes
        return t
