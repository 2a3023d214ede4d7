"""Issue 51, accessibility of the live room's two pages: axe-core's WCAG 2.0/2.1 A and AA rules find
nothing critical or serious on the student's page (the join form, an open question, a revealed step)
nor on the lecturer's (before and after opening a room, with another network's students named and
turning them away asked), each at a phone's size (390 px) and a
projector's (1366 px); and a student answers by keyboard alone.
axe-core comes from npm (see tests/page/test_a11y.py); without it the axe test skips with one line."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import httpx
import pytest
from browser import page_at
from roompage import open_room

# test_a11y's axe runner (test files import by path here: pytest's importlib mode)
_spec = importlib.util.spec_from_file_location("vizvit_test_a11y", Path(__file__).with_name("test_a11y.py"))
_a11y = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_a11y)
AXE, BAD, RUN_AXE, WCAG_AA, _listing = _a11y.AXE, _a11y.BAD, _a11y.RUN_AXE, _a11y.WCAG_AA, _a11y._listing


def _axe(page) -> list:
    page.add_script_tag(path=str(AXE))
    return page.evaluate(RUN_AXE, [WCAG_AA, list(BAD)])


def _need_axe() -> None:
    if not AXE.is_file():
        if os.environ.get("CI"):
            pytest.fail("axe-core not installed: scripts/setup --dev runs npm ci")
        pytest.skip("axe-core not installed (npm ci at the repo root)")


# (host's, student's) viewport: a lecturer at the projector with students on phones, and the other way round.
SIZES = {"host-1366-student-390": ((1366, 900), (390, 844)), "host-390-student-1366": ((390, 844), (1366, 900))}


@pytest.mark.parametrize("sizes", SIZES.values(), ids=SIZES.keys())
def test_axe_finds_nothing_critical_or_serious_on_the_room_pages_and_a_student_answers_by_keyboard(url, sizes):
    _need_axe()
    (hw, hh), (sw, sh) = sizes
    found: dict[str, list] = {}
    with page_at(url + "room?host=1", width=hw, height=hh, wait_for="#ex") as host:
        found["host: open a room"] = _axe(host)
        code = open_room(host)
        student = host.context.browser.new_page(viewport={"width": sw, "height": sh})
        student.set_default_timeout(60_000)
        student.goto(url + "room")
        student.wait_for_selector("#code")
        found["student: join form"] = _axe(student)
        # By keyboard alone: the code typed, Enter joins; Tab to an option, Enter answers.
        student.focus("#code")
        student.keyboard.type(code.lower())
        student.keyboard.press("Enter")
        student.wait_for_selector("#num")
        found["student: a number question"] = _axe(student)
        host.click("#next")
        host.wait_for_selector("text=Step 2 of", timeout=30_000)
        found["host: a room, step 2"] = _axe(host)
        with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.4"), timeout=30) as stranger:
            for i in range(5):  # one other network's students: the host page names them, offers to turn them away
                r = stranger.post(f"{url}vizvit_room/{code}/hello", json={"student": f"other-{i:04d}"})
                assert r.json()["accepted"], r.text
        host.wait_for_selector("#crowd-text", timeout=15_000)
        found["host: another network named"] = _axe(host)
        host.click("#turn-away")
        found["host: turning them away, asked"] = _axe(host)
        host.click("#turn-yes")
        host.wait_for_selector("#let-back")
        found["host: turned away, undo offered"] = _axe(host)
        host.click("#let-back")
        host.wait_for_selector("#let-back", state="detached")
        student.wait_for_selector("button[data-k]")
        for _ in range(40):
            if student.evaluate("() => !!document.activeElement?.dataset?.k"):
                break
            student.keyboard.press("Tab")
        key = student.evaluate("() => document.activeElement.dataset.k")
        student.keyboard.press("Enter")
        student.wait_for_selector(f"button.chosen[data-k='{key}']")
        host.wait_for_selector("#total:text-matches('^1 (of [0-9]+ )?answered$')", timeout=30_000)
        host.click("#reveal")
        student.wait_for_selector("text=The truth for this model", timeout=60_000)
        found["student: revealed"] = _axe(student)
        found["host: revealed"] = _axe(host)
        student.close()
    assert not any(found.values()), "axe-core, WCAG 2.1 AA:\n" + _listing(found)
