"""Find a browser for the browser tests the way users have one: VIZVIT_CHROMIUM, then
chromium or chrome on PATH, then Playwright's own downloaded browser. Prints its path
(or nothing) when run as a script."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_browser() -> str | None:
    env = os.environ.get("VIZVIT_CHROMIUM")
    if env:
        return env if Path(env).exists() or shutil.which(env) else None
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    try:  # Playwright's own browser, from `python -m playwright install chromium`
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            path = p.chromium.executable_path
        return path if path and Path(path).exists() else None
    except Exception:  # noqa: BLE001 - no playwright, or no browser downloaded
        return None


if __name__ == "__main__":
    print(find_browser() or "")
