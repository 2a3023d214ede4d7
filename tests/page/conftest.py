"""The page in a browser: ONE server for every test here (the production build and launch settings
on 127.0.0.1, a tiny ViT-B/16-shaped model), started once for the session. Tests that need another
model or other build settings start their own with appserver.serving. One Chromium serves every
test too (browser.page_at: a fresh context each), closed at the end."""

from __future__ import annotations

import pytest
from appserver import running
from browser import close_browsers

from vizvit.classroom.room import Rooms


@pytest.fixture(scope="session")
def url(tiny16):
    # Every test here is one caller (127.0.0.1) on one server for the whole session: the rooms they open
    # would pass the 3 open rooms one address may hold. That limit has its own tests (tests/classroom/test_room.py,
    # tests/page/tabs/test_lesson.py, tests/page/test_guard.py); this server lifts it.
    with running(tiny16, rooms=Rooms(max_per_owner=10_000)) as u:
        yield u


@pytest.fixture(scope="session", autouse=True)
def shared_browsers():
    yield
    close_browsers()
