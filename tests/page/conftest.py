"""The page in a browser: ONE server for every test here (the production build and launch settings
on 127.0.0.1, a tiny ViT-B/16-shaped model), started once for the session. Tests that need another
model or other build settings start their own with appserver.serving. One Chromium serves every
test too (browser.page_at: a fresh context each), closed at the end."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from appserver import running
from browser import close_browsers

from page import guard
from vizvit.classroom.room import Rooms
from vizvit.service.limits import Rate


@contextlib.contextmanager
def _opens_lifted() -> Iterator[None]:
    """Guard() built meanwhile lets one address open rooms at will (it reads page.guard.OPENS as it is built)."""
    kept = guard.OPENS
    guard.OPENS = Rate(burst=10_000, per_s=10.0)
    try:
        yield
    finally:
        guard.OPENS = kept


@pytest.fixture(scope="session")
def url(tiny16):
    # Every test here is one caller (127.0.0.1) on one server for the whole session: the rooms they open
    # would pass the 3 open rooms one address may hold, and the 20 it may open before waiting 30 s a room (a
    # full run refused a test's room_open: "Too many rooms opened from this address"). Those limits have their
    # own tests (tests/classroom/test_room.py, tests/page/tabs/test_lesson.py, tests/page/test_guard.py,
    # test_lecturer_key.py); this server lifts them.
    with contextlib.ExitStack() as stack:
        with _opens_lifted():
            u = stack.enter_context(running(tiny16, rooms=Rooms(max_per_owner=10_000)))
        yield u


@pytest.fixture(scope="session", autouse=True)
def shared_browsers():
    yield
    close_browsers()
