"""page/upload_budget.py: Gradio's upload folder is kept within its byte budget, the oldest files first,
never a young file nor one there at the start (the examples); while young files fill it, an upload is
refused with 503. First on a constructed folder whose answer is known, then on the served page (the
production launch settings) over Gradio's own upload route, as any HTTP client uploads."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx
from appserver import serving

from page import upload_budget
from page.upload_budget import FULL, trim

NOW = 1_000_000.0


def put(folder: Path, name: str, size: int, age_s: float) -> Path:
    """A file of `size` bytes in its own (content-hash-like) folder, last written `age_s` before NOW."""
    p = folder / f"h-{name}" / name
    p.parent.mkdir(parents=True)
    p.write_bytes(b"\0" * size)
    os.utime(p, (NOW - age_s, NOW - age_s))
    return p


def files(folder: Path) -> dict[Path, int]:
    """Every file under `folder` and its size, as the folder is now. os.walk and a stat that may miss: the
    server's trim removes files and their folders while this looks (rglob raised FileNotFoundError on one)."""
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                out[Path(root, name)] = Path(root, name).stat().st_size
            except FileNotFoundError:
                pass
    return out


def present(folder: Path) -> set[str]:
    return {p.name for p in files(folder)}


def test_the_oldest_files_go_first_until_the_rest_fit(tmp_path):
    a, _b, _c = put(tmp_path, "a", 400, 900), put(tmp_path, "b", 300, 600), put(tmp_path, "c", 500, 300)
    t = trim(tmp_path, 900, now=NOW, young_s=60)
    # 1,200 bytes: removing a (the oldest, 400) leaves 800 <= 900; b and c stay
    assert present(tmp_path) == {"b", "c"} and (t.kept, t.removed) == (800, 1)
    assert not a.parent.exists(), "the file's hash folder stays behind, empty"


def test_young_files_and_kept_ones_are_never_removed(tmp_path):
    put(tmp_path, "old", 400, 900)
    example = put(tmp_path, "example", 5_000, 10_000)  # the oldest of all, and over the budget alone
    put(tmp_path, "young1", 300, 30)
    put(tmp_path, "young2", 300, 10)
    t = trim(tmp_path, 100, keep=frozenset({example}), now=NOW, young_s=60)
    assert present(tmp_path) == {"example", "young1", "young2"}
    assert (t.kept, t.young, t.removed) == (600, 600, 1)  # over the budget in young files only: full


def upload(http: httpx.Client, url: str, name: str, data: bytes) -> httpx.Response:
    return http.post(url + "gradio_api/upload", files={"files": (name, data, "image/png")}, timeout=60)


def folder_bytes(folder: Path, but: set[Path]) -> int:
    return sum(size for p, size in files(folder).items() if p not in but)


def test_the_served_pages_upload_folder_stays_within_its_budget(tiny16, tmp_path, monkeypatch):
    """Before: 12 distinct 250 KB uploads stayed in the folder (3 MB against a 1 MB budget) for an hour."""
    folder = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    monkeypatch.setenv(upload_budget.BUDGET_ENV, "1")
    monkeypatch.setattr(upload_budget, "YOUNG_S", 0.0)  # every upload old enough at once
    monkeypatch.setattr(upload_budget, "GAP_S", 0.0)
    with serving(tiny16) as (url, _), httpx.Client() as http:
        at_start = set(files(folder))
        assert any(p.name == "chelsea.jpg" for p in at_start), "the examples are filed as the page is built"
        for i in range(12):
            r = upload(http, url, f"p{i}.png", os.urandom(250_000))
            assert r.status_code == 200, r.text
        last = Path(r.json()[0])
        end = time.monotonic() + 30
        while folder_bytes(folder, at_start) > 1 << 20 and time.monotonic() < end:
            time.sleep(0.1)  # polls the folder's own state: the trim runs in the server's thread
        assert folder_bytes(folder, at_start) <= 1 << 20, "the upload folder grew past its budget"
        assert all(p.exists() for p in at_start), "an example's file was removed"
        assert last.exists(), "the newest upload was removed"


def test_an_upload_is_refused_while_young_files_fill_the_budget(tiny16, tmp_path, monkeypatch):
    folder = tmp_path / "gradio"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    monkeypatch.setenv(upload_budget.BUDGET_ENV, "1")
    monkeypatch.setattr(upload_budget, "GAP_S", 0.0)  # YOUNG_S as shipped: every upload here is young
    with serving(tiny16) as (url, _), httpx.Client() as http:
        refused = None
        for i in range(200):  # a look runs in a thread after each upload: the 4th or so is refused
            r = upload(http, url, f"p{i}.png", os.urandom(300_000))
            if r.status_code != 200:
                refused = r
                break
        assert refused is not None, "200 uploads of 300 KB were all taken against a 1 MB budget"
        assert refused.status_code == 503 and refused.json() == {"detail": FULL}
        # what was taken: the budget, and what arrived while the last look ran
        assert i * 300_000 < 8 << 20, i
