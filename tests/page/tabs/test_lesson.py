"""page/tabs/lesson.py's handlers, called alone (no browser, no server) on a tiny ViT: a step's page
is the lesson view's own page with its link and QR code for the address a phone can open; previous
and next move one step and stop at the ends; the reveal answers what the view's reveal answers;
"open that tab" sets the step's controls on that tab's components; a room opens on this photo."""

from __future__ import annotations

import dataclasses
import time
from types import SimpleNamespace

import gradio as gr
import pytest

from page import kit
from page.kit import Ctx
from page.tabs import lesson as tab
from vizvit import deeplink
from vizvit.api import PublicApi
from vizvit.classroom.room import META_TTL_S, Rooms
from vizvit.classroom.roomstore import SQLiteStore, StoreDown
from vizvit.classroom.roomstore_redis import STORE_DOWN
from vizvit.errors import UserError
from vizvit.readings import lesson as rl
from vizvit.session import PhotoKey, Workbench
from vizvit.views import lesson

PAGE = "http://10.1.2.3:7860/"  # a page address phones reach as it is (not a loopback one)


@pytest.fixture(scope="module")
def photo(tiny16, cat) -> tuple[Ctx, PhotoKey]:
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    key = PhotoKey(tiny16.id, wb.add_photo(cat))
    # Only the fields the Lesson handlers read: the backend, the default model, the rooms, the tabs' controls.
    return Ctx(wb, None, None, None, "another-model", rooms=Rooms()), key


@pytest.fixture(autouse=True)
def not_a_space(monkeypatch):
    monkeypatch.delenv("SPACE_HOST", raising=False)


def request(url: str, referer: str | None = None) -> SimpleNamespace:
    """What the handlers read of a gr.Request: its headers, URL and query."""
    query = dict(p.split("=") for p in url.split("?")[1].split("&")) if "?" in url else {}
    return SimpleNamespace(headers={"referer": referer} if referer else {}, url=url, query_params=query)


def test_the_page_address_is_the_referer_else_the_url_without_its_query():
    assert tab.address(None, "known") == "known"
    assert tab.address(request("http://a/gradio_api/x?y=1", "http://b:1/?lesson=1&step=3"), "") == "http://b:1/"
    assert tab.address(request("http://a:2/?lesson=1"), "known") == "http://a:2/"


def test_first_open_shows_the_links_step_with_its_link_and_qr_code(photo):
    ctx, key = photo
    got = tab.show(ctx, None, key, None, "", request=request(PAGE + "?lesson=1&step=3"))
    assert set(got) == set(tab.OUTS)
    want = lesson.show(ctx.wb.handle(key), lesson.LessonParams(step=3))
    assert got["step"] == 3 and got["header"] == want.header and got["base"] == PAGE
    assert got["choice"].visible is (not want.is_number) and got["number"].visible is want.is_number
    url = PAGE + deeplink.to_query(deeplink.lesson_link(3, None, key.sha1, key.model_id))
    assert got["link"] == f"[{url}]({url})", "the step on this photo and (not the default) model"
    assert got["qr"].shape == lesson.qr_picture(url).shape and got["qr_note"] == ""
    assert got["answer"] == "" and got["picture"].visible is False and got["open_btn"].visible is False
    # A new photo's answer before the tab's first open answered (no step yet, no request): it draws
    # nothing, where step 1 could land over the open's step 3 (the open draws it, with this photo).
    assert tab.show(ctx, None, key, None, "") == kit.skip(tab.OUTS)


def test_a_links_tab_opened_before_its_photo_keeps_only_the_step_and_the_address(photo):
    """?example=...&step=3 clicks the Lesson tab open while the photo loads: that answer (no key yet)
    draws nothing the photo's answer draws, and sets the step and the page's address that answer reads."""
    ctx, key = photo
    got = tab.show(ctx, None, None, None, "", request=request(PAGE + "?example=chelsea&lesson=1&step=3"))
    assert got["step"] == 3 and got["base"] == PAGE
    assert all(v == gr.skip() for n, v in got.items() if n not in ("step", "base")), got
    then = tab.show(ctx, None, key, got["step"], got["base"])  # the photo's answer, with no request
    assert then["step"] == 3 and key.sha1 in then["link"] and then["qr"] is not None


def test_the_step_shown_drawn_again_keeps_the_answer_and_its_reveal(photo):
    """The tab opened again on the same step and photo (back from the tab a reveal opened, or the photo's
    own answer landing after the tab's on a slow server) leaves everything as it is, the student's answer
    and reveal too; another step, photo or model clears them."""
    ctx, key = photo
    first = tab.show(ctx, None, key, None, "", request=request(PAGE + "?lesson=1&step=2"))
    assert first["drawn"] == (key, 2)
    again = tab.show(ctx, None, key, first["step"], first["base"], first["drawn"], request=request(PAGE))
    # Nothing moves, the step and its link and QR code neither: a late one must not undo a Next meanwhile.
    assert all(again[n] == gr.skip() for n in tab.OUTS), again
    assert tab.go(ctx, None, +1, key, 2, PAGE, first["drawn"])["answer"] == "", "the next step clears"
    last = len(rl.steps())
    assert tab.go(ctx, None, +1, key, last, PAGE, (key, last))["answer"] == gr.skip(), "next at the end stays"
    other = PhotoKey(key.model_id, "0" * 40)
    assert tab.at_step(ctx, None, key, 2, PAGE, (other, 2))["answer"] == "", "another photo clears"


def test_a_loopback_page_links_the_share_address_phones_can_open(photo):
    ctx, key = photo
    demo = SimpleNamespace(server_name="127.0.0.1", share_url="https://abc.gradio.live")
    got = tab.go(ctx, demo, +1, key, 1, "http://127.0.0.1:7860/")
    assert got["step"] == 2 and got["link"].startswith("[https://abc.gradio.live/?")
    assert "share" in got["qr_note"]


def test_previous_and_next_move_one_step_and_stop_at_the_ends(photo):
    ctx, key = photo
    last = len(rl.steps())
    assert tab.go(ctx, None, +1, key, 2, PAGE)["step"] == 3
    assert tab.go(ctx, None, -1, key, 2, PAGE)["step"] == 1
    assert tab.go(ctx, None, -1, key, 1, PAGE)["step"] == 1
    assert tab.go(ctx, None, +1, key, last, PAGE)["step"] == last
    assert tab.go(ctx, None, +1, None, None, PAGE)["step"] == 2, "no step yet counts as the first"


def test_the_reveal_answers_what_the_lessons_reveal_does(photo):
    ctx, key = photo
    assert set(tab.do_reveal(ctx, False, None, 1, None, None)) == {"answer"}
    asked = tab.do_reveal(ctx, False, key, 1, None, None)  # no prediction yet: it asks for one
    assert asked["answer"] == lesson.reveal(ctx.wb.handle(key), lesson.LessonParams(step=1)).answer
    assert asked["open_btn"].visible is False
    r = lesson.reveal(ctx.wb.handle(key), lesson.LessonParams(step=1, dont_know=True))
    shown = tab.do_reveal(ctx, True, key, 1, None, None)
    assert shown["answer"] == r.answer and shown["open_btn"].visible is True
    assert shown["picture"].visible is (r.picture is not None)


def test_opening_the_steps_tab_sets_its_controls_and_counts_each_opening(photo):
    ctx, key = photo
    view, controls = lesson.opens(ctx.wb.handle(key), lesson.LessonParams(step=1))
    comps = {k: object() for k in controls}  # stand-ins for that tab's control components
    first = object()
    ctx.controls[view], ctx.firsts[view] = comps, (first, ())
    try:
        got = tab.do_open(ctx, key, 1, "")
        assert got.pop("goto") == f"{view}#1" and got.pop(first) is None, "its drawn-ahead picture cleared"
        assert got == {comps[k]: v for k, v in controls.items()}
        assert tab.do_open(ctx, key, 1, f"{view}#1")["goto"] == f"{view}#2", "a second opening changes goto"
    finally:
        del ctx.controls[view], ctx.firsts[view]
    assert tab.do_open(ctx, None, 1, "") == {"goto": gr.skip()}


def test_a_room_opens_on_this_photo_with_the_students_link(photo, monkeypatch):
    ctx, key = photo
    # The room's steps measured ahead run in a thread (vizvit/api.py), not the page's concern here: a
    # forward still running as the interpreter exits aborts it.
    monkeypatch.setattr(PublicApi, "room_prepare", lambda self, code: None)
    none = tab.open_room(ctx, None, None, PAGE, None)
    assert none["room_md"].value == lesson.ROOM_NO_PHOTO and none["room_qr"].visible is False
    asked = request(PAGE + "?lesson=1")
    asked.client = SimpleNamespace(host="10.1.2.3")
    got = tab.open_room(ctx, None, key, "", None, request=asked)
    assert got["room_md"].visible is True and got["room_qr"].visible is True
    code = got["room_md"].value.split("**Room ")[1].split("**")[0]
    assert f"{PAGE}room?code={code}" in got["room_md"].value
    # the opener's address is the room's owner (issue 50: 3 open rooms per address)
    assert ctx.rooms.store.meta(code)["owner"] == "address 10.1.2.3"
    # the button again, its room still open on this photo: the same room, none opened beside it
    rooms_before = len(ctx.rooms)
    again = tab.open_room(ctx, None, key, "", got["room_kept"], request=asked)
    assert again["room_md"].value == got["room_md"].value and len(ctx.rooms) == rooms_before
    # once that room is closed, the button opens a new one
    ctx.rooms.close(code, got["room_kept"][2])
    new = tab.open_room(ctx, None, key, "", got["room_kept"], request=asked)
    assert new["room_kept"][1] != code and ctx.rooms.version(new["room_kept"][1]) >= 0
    # a room whose lecturer's page has been away 30 minutes is closed (its version alone still read open)
    clock = [1000.0]
    away = dataclasses.replace(ctx, rooms=Rooms(clock=lambda: clock[0]))
    first = tab.open_room(away, None, key, "", None, request=asked)
    clock[0] += 31 * 60
    assert away.rooms.version(first["room_kept"][1]) >= 0
    later = tab.open_room(away, None, key, "", first["room_kept"], request=asked)
    assert later["room_kept"][1] != first["room_kept"][1]


def _room_then_a_blink(photo, monkeypatch, host: str) -> tuple:
    """A room opened from the tab over a store whose next meta read fails once (StoreDown), the room's meta
    no longer kept in memory -> (the tab's ctx on that store, the request, the opening's answer, the photo key)."""
    ctx, key = photo
    monkeypatch.setattr(PublicApi, "room_prepare", lambda self, code: None)
    store = SQLiteStore(None)
    blink = dataclasses.replace(ctx, rooms=Rooms(store))
    asked = request(PAGE + "?lesson=1")
    asked.client = SimpleNamespace(host=host)
    got = tab.open_room(blink, None, key, "", None, asked)
    meta, reads = store.meta, []

    def down_once(code):
        if not reads:
            reads.append(code)
            raise StoreDown(STORE_DOWN)
        return meta(code)

    monkeypatch.setattr(store, "meta", down_once)
    time.sleep(META_TTL_S + 0.05)  # the room's meta is read from the store again
    return blink, asked, got, key


def test_the_button_opens_no_second_room_when_its_rooms_store_blinks(photo, monkeypatch):
    """The kept room's check read the store's outage (StoreDown, a UserError) as a closed room: a read that
    failed for a moment, then an opening that did not, left a second room open beside the first (each
    holding one of the address's rooms, the first's host link gone). Now the outage is said and nothing opens."""
    blink, asked, got, key = _room_then_a_blink(photo, monkeypatch, "10.1.2.4")
    store = blink.rooms.store
    with pytest.raises(UserError, match="not answering"):
        tab.open_room(blink, None, key, "", got["room_kept"], asked)
    assert len(store.metas()) == 1, "a second room was opened while the first stayed open"
    again = tab.open_room(blink, None, key, "", got["room_kept"], asked)
    assert again["room_kept"] == got["room_kept"]


def test_a_room_opens_when_its_photo_was_pushed_out_of_memory(photo, monkeypatch):
    """Other work evicted the tab's photo from the Workbench (issue 50: 8 of 14 openings under load
    failed so): the room needs only the model's view, from the cached analysis, and keeps it itself."""
    ctx, key = photo
    monkeypatch.setattr(PublicApi, "room_prepare", lambda self, code: None)
    ctx.wb.analysis(key)
    ctx.wb._photos.clear()
    got = tab.open_room(ctx, None, key, "", None, request=request(PAGE + "?lesson=1"))
    code = got["room_md"].value.split("**Room ")[1].split("**")[0]
    view = ctx.rooms.model_view(code)
    assert view is not None and view.startswith(b"\x89PNG")
    truth = PublicApi(ctx.wb, None, ctx.rooms).room_truth(code, 1)  # measured from the kept view
    assert truth["truth"] == str(ctx.wb.analysis(key).geometry.image_size[0])


def test_rooms_opened_from_the_tab_count_per_address_like_the_apis(photo, monkeypatch):
    """Issue 50: the tab's button is a way to open rooms too, so the guard's limit per address holds here."""
    from page.guard import OPENS, Guard

    ctx, key = photo
    monkeypatch.setattr(PublicApi, "room_prepare", lambda self, code: None)
    # the server's own limits (rooms at once, per owner) are not the one seen here
    rooms = Rooms(max_rooms=int(OPENS.burst) + 5, max_per_owner=int(OPENS.burst) + 5)
    frozen_clock = Guard(rooms, clock=lambda: 0.0)  # no refill
    ctx = dataclasses.replace(ctx, rooms=rooms, room_opening=frozen_clock.open)
    caller = request(PAGE + "?lesson=1")
    caller.client = SimpleNamespace(host="10.1.2.3")
    for _ in range(int(OPENS.burst)):
        assert tab.open_room(ctx, None, key, "", None, request=caller)["room_md"].visible is True
    with pytest.raises(Exception, match=r"^Too many rooms opened from this address: wait \d+ s\.$"):
        tab.open_room(ctx, None, key, "", None, request=caller)



def kept(**fields: object) -> str:
    """A room as the browser keeps it (or as anyone may write it there)."""
    import json

    return json.dumps(fields)


A_KEY = "a" * 22
HOSTILE_KEPT = ["", "null", "[]", "{}", "x" * 5000, "{" * 150, kept(code="ABCD2345"),
                kept(code="ABCD2345", host_key=None),
                kept(code="<script>", host_key=A_KEY), kept(code="ABCD0345", host_key=A_KEY),
                kept(code="ABCD2345", host_key="a b c d e f g h i j k l"), '{"code":NaN,"host_key":"a"}',
                kept(code="ABCD2345", host_key=A_KEY, x=1), kept(code="ABCD2345", host_key=A_KEY)]  # no such room


def test_a_reloaded_page_shows_the_room_it_had_opened_while_it_is_open_and_forgets_any_other(photo, monkeypatch):
    """A reload lost the Lesson tab's room (a gr.State): the invitation gone, the button opening a second room
    while the first stayed open. The browser now keeps the room's code and key (room_saved); the page checks
    them against the room before showing it again."""
    import json

    ctx, key = photo
    monkeypatch.setattr(PublicApi, "room_prepare", lambda self, code: None)
    got = tab.open_room(ctx, None, key, "", None, request=request(PAGE + "?lesson=1"))
    code, host_key = got["room_kept"][1], got["room_kept"][2]
    assert json.loads(got["room_saved"]) == {"code": code, "host_key": host_key}
    back = tab.restore_room(ctx, None, got["room_saved"], "", None, request(PAGE))
    assert back["room_md"].visible is True and back["room_qr"].visible is True
    assert f"**Room {code}** is still open" in back["room_md"].value
    assert f"{PAGE}room?code={code}" in back["room_md"].value and f"#key={host_key}" in back["room_md"].value
    assert back["room_kept"] == (None, code, host_key) and back["room_saved"] == got["room_saved"]
    typed = kept(code=f"{code[:4].lower()}-{code[4:].lower()}", host_key=host_key)  # as a student types it
    assert tab.restore_room(ctx, None, typed, "", None, request(PAGE))["room_kept"] == (None, code, host_key)
    forgotten = {**kit.skip(["room_md", "room_qr", "room_kept"]), "room_saved": ""}
    other_key = ("b" if host_key[0] != "b" else "c") + host_key[1:]
    assert tab.restore_room(ctx, None, "", "", None, request(PAGE)) == kit.skip(tab.ROOM)  # nothing kept
    for bad in [*HOSTILE_KEPT[1:], kept(code=code, host_key=other_key)]:
        assert tab.restore_room(ctx, None, bad, "", None, request(PAGE)) == forgotten, bad[:60]
    # the page's own room, written in the box by open_room (its change event): nothing to do
    assert tab.restore_room(ctx, None, got["room_saved"], "", got["room_kept"], request(PAGE)) == kit.skip(tab.ROOM)
    ctx.rooms.close(code, host_key)  # closed: forgotten too
    assert tab.restore_room(ctx, None, got["room_saved"], "", None, request(PAGE)) == forgotten


def test_a_reload_while_the_rooms_store_blinks_keeps_the_room_for_the_next_try(photo, monkeypatch):
    """The reload's check of the kept room read the store's outage (StoreDown, a UserError) as a wrong key:
    the browser was told to forget the room (room_saved ""), its host key gone for good while the room stayed
    open, holding one of the address's rooms. Now the outage is said and the browser keeps the room."""
    blink, asked, got, key = _room_then_a_blink(photo, monkeypatch, "10.1.2.5")
    with pytest.raises(UserError, match="not answering"):
        tab.restore_room(blink, None, got["room_saved"], "", None, request(PAGE))
    back = tab.restore_room(blink, None, got["room_saved"], "", None, request(PAGE))
    assert back["room_kept"] == (None, *got["room_kept"][1:]) and back["room_saved"] == got["room_saved"]


# lesson_room_keep.js run in node over in-memory storage (and a page with no room box): `before` rooms already in
# the browser's list, then the Lesson tab keeps one more; prints the list's length.
KEEP_NODE = r"""
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const store = () => { const m = new Map(); return { getItem: (k) => (m.has(k) ? m.get(k) : null),
  setItem: (k, v) => m.set(k, String(v)), removeItem: (k) => m.delete(k) }; };
globalThis.sessionStorage = store();
globalThis.localStorage = store();
globalThis.document = { getElementById: () => null };
const before = Array.from({ length: input.before }, (_, i) => ({ code: 'ROOM' + i, host_key: 'k' + i, seen: 1 }));
localStorage.setItem('vizvit-hosted', JSON.stringify(before));
const keep = (SCRIPT);
keep(JSON.stringify({ code: 'NEWROOM1', host_key: 'new-key' }));
console.log(JSON.parse(localStorage.getItem('vizvit-hosted')).length);
"""


@pytest.mark.skipif(__import__("shutil").which("node") is None, reason="node is not installed")
@pytest.mark.parametrize("roomy", [5, 20])
def test_the_rooms_kept_in_the_browser_are_as_many_as_the_room_page_offers_back(roomy):
    """The browser's list of the rooms it opened ("vizvit-hosted") is cut by the room page at hosted_max (the
    rooms one address may hold: Rooms.owners.roomy); the Lesson tab's copy of the same list was cut at 12
    whatever the server's rooms."""
    import json
    import subprocess

    js = tab.keep_js(Rooms(roomy_per_owner=roomy))
    out = subprocess.run(["node", "-e", KEEP_NODE.replace("SCRIPT", js)], input=json.dumps({"before": 30}),
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert int(out) == roomy == Rooms(roomy_per_owner=roomy).owners.roomy


def test_previous_is_off_on_the_first_step_and_next_on_the_last(photo):
    """Step 1's "← previous" was on, and a click drew step 1 again as if nothing happened (a walk-through): every
    step's page now sets whether each button leads anywhere, and the page opens with previous off."""
    ctx, key = photo
    last = len(rl.steps())
    for n, prev_on, next_on in ((1, False, True), (2, True, True), (last, True, False)):
        got = tab.at_step(ctx, None, key, n, PAGE)
        assert (got["prev"].interactive, got["nxt"].interactive) == (prev_on, next_on), n
    assert tab.go(ctx, None, -1, key, 2, PAGE)["prev"].interactive is False, "back on step 1: previous goes off"
    with gr.Blocks():
        ui = tab._step()
    assert ui["prev"].interactive is False and ui["nxt"].interactive is not False, "before any step is drawn: step 1"
