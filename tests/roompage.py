"""What the room's browser tests do again and again on /room (page/web/room.js): open a room from the host
page, and bring a phone to its student page."""

from __future__ import annotations

from typing import Any


def open_room(host: Any) -> str:
    """On /room?host=1: open a room on the example photo -> its code (its truths are measured: minutes)."""
    host.click("#ex")
    host.wait_for_selector("#room-code", timeout=120_000)
    return host.inner_text("#room-code").strip()


def student_page(host: Any, url: str, code: str) -> Any:
    """A 390×844 phone page in the host's browser on the room's student page, its number box ready."""
    s = host.context.browser.new_page(viewport={"width": 390, "height": 844})
    s.set_default_timeout(60_000)
    s.goto(url + f"room?code={code}")
    s.wait_for_selector("#num")
    return s
