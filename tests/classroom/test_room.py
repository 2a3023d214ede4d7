"""vizvit.classroom.room (issues 45, 50): one lecturer paces, every student answers once per step, over both
stores (SQLite in a temp file, Redis on a throwaway redis-server). Cases built by hand with known
answers; a fake wall clock for the host-away rule and the tombstones."""

from __future__ import annotations

import json
import threading

import pytest
from roomstores import QS, S1, S2, S3, Clock, opened, redis_url, store  # noqa: F401 (fixtures)

from vizvit.classroom.lesson import load_steps
from vizvit.classroom.room import (
    BARRED,
    CLOSED_AWAY,
    CLOSED_BY_HOST,
    CODE_LEN,
    HOST_AWAY_S,
    LOCKED,
    MAX_ANSWER_CHARS,
    NO_NETWORK,
    OWN_NETWORK,
    OWNER_FULL,
    UNKNOWN_ROOM,
    WRONG_KEY,
    Question,
    Rooms,
    network_id,
    number_bars,
    owner_full,
    parse_number,
    questions_of,
    share_full,
)
from vizvit.classroom.roomstore import OwnerLimit, StoreDown
from vizvit.errors import UserError


@pytest.mark.parametrize("typed, value", [
    ("12.5", 12.5), ("12,5", 12.5), ("0,85", 0.85), ("9,5", 9.5), ("0,850", 0.85),  # a decimal comma
    ("1,234", 1234), ("1,234,567", 1234567), ("1 234", 1234), ("1\u202f234,5", 1234.5),  # digits grouped
    ("1,234.5", 1234.5), ("1.234,5", 1234.5), ("1.234.567", 1234567), ("1.234", 1.234),
    ("10%", 10), (" 10 % ", 10), ("\u22123", -3), ("-1,5", -1.5), ("1e3", 1000), ("224", 224),
    ("224px", 224), ("224 px", 224), ("196 patches", 196), ("64,875×", 64875), ("12,5 cm.", 12.5)])  # a unit
def test_a_number_typed_on_any_phone_is_read_as_its_writer_meant(typed, value):
    assert parse_number(typed) == pytest.approx(value, rel=0, abs=1e-12)


@pytest.mark.parametrize("typed", ["", "%", "1,2,3", "1.2.3,4,5", "twelve", "1..2", "12,5,", "px", "abc",
                                   "12 and 13 px", "inf px", "1e", "2x"])  # a lone letter is no unit
def test_a_string_that_is_no_number_is_refused(typed):
    with pytest.raises(ValueError):
        parse_number(typed)


@pytest.mark.parametrize("given", ["nan", "NaN", " nan ", float("nan")])
def test_nan_is_refused_as_no_number_not_as_too_big(given):
    """A hostile student's "nan" (float reads it) was told "The answer must be a number of at most 1e+12 in size."."""
    with pytest.raises(UserError) as e:
        Question(()).normalise(given)
    assert str(e.value) == "The answer to this question must be a number."


@pytest.mark.parametrize("given", ["inf", "-Infinity", 2e12, "-1000000000001"])
def test_a_number_out_of_range_is_told_the_range_in_plain_digits(given):
    with pytest.raises(UserError) as e:
        Question(()).normalise(given)
    assert str(e.value) == "The answer must be a number between -1,000,000,000,000 and 1,000,000,000,000."
    assert Question(()).normalise("-1000000000000") == "-1e+12"  # the edge itself is an answer


def test_a_number_answer_keeps_twelve_digits_and_a_comma_answer_meets_its_dot_twin():
    q = Question(())
    assert q.normalise("1234567") == "1234567" != q.normalise("1234568")  # "%g" once made both 1.23457e+06
    assert q.normalise("12,5") == q.normalise("12.5") == q.normalise(12.5) == "12.5"
    assert q.normalise("10%") == q.normalise(10.0) == "10"
    with pytest.raises(UserError, match="must be a number"):
        q.normalise("1,2,3")


def test_minus_zero_is_zero_in_the_tally_and_against_the_truth(opened):
    """"-0" was tallied as its own bar beside "0" and was wrong against a truth of 0 at tolerance 0."""
    q = Question(())
    assert {q.normalise(a) for a in ("0", "+0", "0e5", "-0", "-0.0", "\u22120", -0.0, 0)} == {"0"}
    assert q.normalise("-1e-300") == "-1e-300"  # a tiny negative number keeps its sign: only zero is folded
    rooms, code, key = opened()
    for i, typed in enumerate(["0", "+0", "0e5", "-0"]):
        assert rooms.answer(code, f"student-{i:04d}", 1, typed) == (True, "")
    assert rooms.tally(code, key, 1).answers == {"0": 4}
    rooms.prepare(code, 1, {"truth": "0"}, None)
    rooms.move(code, key, 1, reveal=True)
    rows = rooms.answers_csv(code, key, ["one"], [0.0]).splitlines()[1:]
    assert [r.split(",")[-1] for r in rows] == ["yes"] * 4


def test_a_number_steps_bars_are_the_most_given_and_the_truth_the_rest_one_count():
    answers = {"224": 9, "196": 4, "256": 4, "16": 2, "14": 1, "7": 1, "1000": 1}
    bars, others = number_bars(answers, "224", keep=3)  # ties in the numbers' order: 196 before 256
    assert bars == (("224", 9), ("196", 4), ("256", 4)) and others == 2 + 1 + 1 + 1
    bars, others = number_bars(answers, "7", keep=3)  # the truth given once: its bar replaces the third
    assert bars == (("224", 9), ("196", 4), ("7", 1)) and others == 4 + 2 + 1 + 1
    bars, others = number_bars(answers, "197", keep=3)  # nobody gave it: drawn at 0, last
    assert bars == (("224", 9), ("196", 4), ("197", 0)) and others == 4 + 2 + 1 + 1 + 1
    assert number_bars({}, None) == ((), 0)
    bars, others = number_bars({str(n): 1 for n in range(25)}, None)  # 25 numbers: five bars, one "others"
    assert bars == tuple((str(n), 1) for n in range(5)) and others == 20


def test_a_number_steps_tied_bars_go_to_the_numbers_nearest_the_truth():
    """A walk-through: five numbers given once each, the truth 197 given by nobody; "1.97", "100" and "150" got
    bars and "198" (one off) and "200" went into "other numbers". Ties now go nearest the truth once it is
    revealed; before, in the numbers' order (numerically: "1.97" < "100" < "150" < "198" < "200" < "1000")."""
    answers = {"1.97": 1, "100": 1, "150": 1, "198": 1, "200": 1, "1000": 1}
    bars, others = number_bars(answers, "197")
    # kept: |198-197| = 1, |200-197| = 3, |150-197| = 47, |100-197| = 97 (1.97 and 1000 are further); drawn in the
    # numbers' order, the truth at 0 last
    assert bars == (("100", 1), ("150", 1), ("198", 1), ("200", 1), ("197", 0)) and others == 2
    bars, others = number_bars(answers, None)  # no truth yet: the numbers' order
    assert bars == (("1.97", 1), ("100", 1), ("150", 1), ("198", 1), ("200", 1)) and others == 1
    assert number_bars({"9": 3, "196": 1, "250": 1}, "197", keep=2) == ((("9", 3), ("197", 0)), 2)  # most given first


def test_an_answer_is_kept_as_the_tally_keys_it(opened):
    rooms, code, key = opened()
    assert rooms.answer(code, S1, 1, "12,5") == (True, "")
    assert rooms.kept(code, 1, "12,5") == rooms.own(code, S1, 1) == "12.5"  # the page's "(you)" finds its bar
    assert rooms.kept(code, 1, "twelve") is None and rooms.kept("NOPE9", 1, "1") is None


def test_a_revealed_number_step_in_the_view_has_its_bars_with_the_truth(opened):
    rooms, code, key = opened()
    for i in range(12):
        rooms.answer(code, f"student-{i:04d}", 1, 200 + i % 7)  # 7 different numbers
    rooms.prepare(code, 1, {"truth": "224"}, None)
    live = rooms.tally(code, key, 1).as_json()  # before the reveal: no truth among the bars
    assert live["bars"] == [["200", 2], ["201", 2], ["202", 2], ["203", 2], ["204", 2]] and live["others"] == 2
    rooms.move(code, key, 1, reveal=True)
    shown = rooms.view(code)["shown"]["1"]["tally"]
    # five numbers given twice, four bars beside the truth's: the four nearest 224 keep theirs (200 goes)
    assert shown["bars"] == [["201", 2], ["202", 2], ["203", 2], ["204", 2], ["224", 0]] and shown["others"] == 4


def test_a_code_is_short_and_readable_and_the_key_is_long(opened):
    rooms, code, key = opened()
    assert len(code) == CODE_LEN and code.isalnum() and code.upper() == code
    assert not set(code) & set("01OI")
    assert len(key) >= 20
    assert rooms.state(code.lower()).step == 1  # typed in lower case on a phone: the same room


def test_one_answer_per_student_per_step_and_a_change_replaces(opened):
    rooms, code, key = opened()
    assert rooms.answer(code, S1, 1, 196) == (True, "")
    assert rooms.answer(code, S2, 1, "196") == (True, "")
    assert rooms.answer(code, S3, 1, 197.0) == (True, "")
    assert rooms.tally(code, key, 1).as_json() == {"step": 1, "answers": {"196": 2, "197": 1}, "total": 3,
                                                  "bars": [["196", 2], ["197", 1]], "others": 0}
    assert rooms.answer(code, S3, 1, "196") == (True, "")  # changed its mind: replaces, not adds
    assert rooms.tally(code, key, 1).as_json() == {"step": 1, "answers": {"196": 3}, "total": 3,
                                                  "bars": [["196", 3]], "others": 0}
    assert rooms.own(code, S3, 1) == "196"


def test_a_student_answers_only_the_lecturers_open_step(opened):
    rooms, code, key = opened()
    ok, why = rooms.answer(code, S1, 2, "a")
    assert not ok and "not open yet" in why  # not ahead of the lecturer
    rooms.move(code, key, 2)
    assert rooms.answer(code, S1, 2, "b")[0]
    ok, why = rooms.answer(code, S1, 1, 5)
    assert not ok and "closed" in why  # a past step: look back, but no late answer
    rooms.move(code, key, 2, reveal=True)
    ok, why = rooms.answer(code, S1, 2, "a")
    assert not ok and "closed" in why  # after the reveal: the answer is fixed
    assert rooms.own(code, S1, 2) == "b"
    assert rooms.revealed_tally(code, 2).answers == {"b": 1}
    with pytest.raises(UserError, match="not been revealed"):
        rooms.revealed_tally(code, 1)


def test_answers_are_checked_against_the_question(opened):
    rooms, code, key = opened()
    for bad in ("x", None, [1], {"a": 1}, float("nan"), float("inf"), 1e13, True, "9" * (MAX_ANSWER_CHARS + 1)):
        ok, why = rooms.answer(code, S1, 1, bad)
        assert not ok and why, bad
    rooms.move(code, key, 2)
    for bad in ("d", "A", 1, None, ""):
        ok, why = rooms.answer(code, S1, 2, bad)
        assert not ok and "one of: a, b, c" in why, bad
    for bad_student in ("", "short", "x" * 65, "has space!", None, 12345678, "-A1-B1-C1"):  # "-" first: a CSV formula
        ok, why = rooms.answer(code, bad_student, 2, "a")
        assert not ok and "student" in why
    assert rooms.tally(code, key, 2).total == 0 and rooms.tally(code, key, 1).total == 0


def test_wrong_key_and_unknown_code_are_one_plain_sentence(opened):
    rooms, code, key = opened()
    for call in (lambda: rooms.move(code, "nope", 2), lambda: rooms.tally(code, None, 1),
                 lambda: rooms.close(code, key + "x")):
        with pytest.raises(UserError) as e:
            call()
        assert str(e.value) == WRONG_KEY
    for bad in ("ZZZZZ", "", None, 5, "A" * 100):
        with pytest.raises(UserError) as e:
            rooms.state(bad)
        assert str(e.value) == UNKNOWN_ROOM
        assert rooms.answer(bad, S1, 1, 3) == (False, UNKNOWN_ROOM)
    for bad_step in (0, 4, 1.5, "x", None, True, 10 ** 30, 10 ** 400):  # 10**400: float() overflowed (a 500)
        with pytest.raises(UserError, match="step must be a whole number from 1 to 3"):
            rooms.move(code, key, bad_step)
    # A true/false that is not one is refused, not read as "no" ("yes" did not reveal, quietly), and only
    # after the key: a stranger with a null key hears that the key is wrong, not what the flag must be.
    for bad_flag in ("yes", "true", 1, None, [True]):
        with pytest.raises(UserError, match="reveal must be true or false"):
            rooms.move(code, key, 2, bad_flag)
        with pytest.raises(UserError, match="locked must be true or false"):
            rooms.lock(code, key, bad_flag)
        for call in (lambda f=bad_flag: rooms.move(code, None, 2, f), lambda f=bad_flag: rooms.lock(code, None, f)):
            with pytest.raises(UserError) as e:
                call()
            assert str(e.value) == WRONG_KEY
    assert 2 not in rooms.state(code).revealed


@pytest.mark.parametrize("bad", ["é", "١٢٣", "\ud800", "a\udfff"])
def test_a_key_or_network_id_in_any_unicode_is_refused_in_a_sentence_not_a_typeerror(opened, bad):
    """hmac.compare_digest refuses a str with non-ASCII characters (TypeError) and str.encode a lone
    surrogate, which JSON may carry ("\\ud800"): the host routes answered such a key, and turn_away / let_in
    such a network id, with an HTTP 500 and a traceback."""
    rooms, code, key = opened()
    assert rooms.join(code, S1, "10.0.0.5") == (True, "")  # a network to look the id up among
    for call in (lambda: rooms.host(code, bad), lambda: rooms.move(code, bad, 2), lambda: rooms.tally(code, bad, 1),
                 lambda: rooms.lock(code, bad, True), lambda: rooms.turn_away(code, bad, "x"),
                 lambda: rooms.let_in(code, bad, "x"), lambda: rooms.close(code, bad)):
        with pytest.raises(UserError) as e:
            call()
        assert str(e.value) == WRONG_KEY
    for call in (lambda: rooms.turn_away(code, key, bad), lambda: rooms.let_in(code, key, bad)):
        with pytest.raises(UserError) as e:
            call()
        assert str(e.value) == NO_NETWORK
    assert rooms.state(code).joined == 1


def test_the_cached_version_and_view_never_call_the_store_and_say_none_when_they_do_not_know(store, monkeypatch):
    """The long poll reads these in the event loop (page/room.py): a store call there (a hung Redis) stalled
    the whole server, so they answer from this process's cache alone, or None (then asked in a thread)."""
    import vizvit.classroom.room as room_module

    monkeypatch.setattr(room_module, "META_TTL_S", 60.0)  # kept while the test runs, however loaded the machine
    monkeypatch.setattr(room_module, "VIEW_TTL_S", 60.0)
    clock = Clock()
    rooms = Rooms(store(), clock=clock)
    code, key = rooms.open("vit-tiny", b"view", QS)
    assert rooms.cached_version("not a code") == -1
    view = rooms.view(code)  # read from the store: kept
    calls = []
    real = rooms.store

    class Counting:
        def __getattr__(self, name):
            calls.append(name)
            return getattr(real, name)

    rooms.store = Counting()
    assert rooms.cached_version(code) == view["version"] == 0
    assert rooms.cached_view(code) == view
    assert calls == [], calls
    clock.t += HOST_AWAY_S + 1  # the host away: only a fresh read may close the room, so nothing is known here
    assert rooms.cached_version(code) is None and rooms.cached_view(code) is None
    assert calls == [], calls


def test_bounded_rooms_and_students(store):
    rooms = Rooms(store(), max_rooms=2, max_students=3)
    code, key = rooms.open("m", None, QS)
    rooms.open("m", None, QS)
    with pytest.raises(UserError, match="2 open rooms"):
        rooms.open("m", None, QS)
    for s in (S1, S2, S3):
        assert rooms.answer(code, s, 1, 1)[0]
    ok, why = rooms.answer(code, "student-four", 1, 1)
    assert not ok and "full (3 students)" in why
    assert rooms.answer(code, S1, 1, 2)[0]  # one already in may still change its answer
    rooms.close(code, key)
    rooms.open("m", None, QS)  # a closed room frees its place


def test_a_room_closes_when_the_host_page_is_away_and_says_why(opened):
    clock = Clock()
    rooms, code, key = opened(host_away_s=60, clock=clock)
    clock.t += 50
    rooms.move(code, key, 2)  # the lecturer acts: the away time starts again
    clock.t += 50
    assert rooms.host(code, key)["step"] == 2  # the host page's heartbeat: seen again
    clock.t += 50
    assert rooms.state(code).step == 2
    assert rooms.answer(code, S1, 2, "a")[0]  # students do not keep a room alive, the lecturer does
    clock.t += 11
    with pytest.raises(UserError) as e:
        rooms.state(code)
    assert str(e.value) == CLOSED_AWAY
    assert rooms.answer(code, S1, 2, "a") == (False, CLOSED_AWAY)
    assert rooms.version(code) == -1 and len(rooms) == 0
    with pytest.raises(UserError, match="^" + CLOSED_AWAY):
        rooms.move(code, key, 3)  # the lecturer's page comes back too late: told why


def test_the_sweep_closes_away_rooms_it_never_visits(opened):
    clock = Clock()
    rooms, code, key = opened(host_away_s=60, clock=clock)
    clock.t += 61
    assert len(rooms) == 0  # the sweep (at open and len), not only a visit, closes an away room
    with pytest.raises(UserError, match="^" + CLOSED_AWAY):
        rooms.view(code)


def test_close_forgets_and_the_version_tells_pages(opened):
    rooms, code, key = opened()
    v0 = rooms.version(code)
    rooms.move(code, key, 1)  # no change: no version bump (no page reloads for nothing)
    assert rooms.version(code) == v0
    rooms.move(code, key, 2)
    rooms.move(code, key, 2, reveal=True)
    assert rooms.version(code) == v0 + 2
    rooms.close(code, key)
    assert rooms.version(code) == -1
    with pytest.raises(UserError):
        rooms.tally(code, key, 1)
    with pytest.raises(UserError) as e:
        rooms.view(code)
    assert str(e.value) == CLOSED_BY_HOST  # not "no open room": the student hears what happened
    assert rooms.answer(code, S1, 2, "a") == (False, CLOSED_BY_HOST)


def test_many_threads_count_every_answer_exactly_once(opened):
    rooms, code, key = opened()
    students = [f"student-{i:04d}" for i in range(200)]

    def answer_all(s: str) -> None:
        for v in (1, 2, 3):  # each changes its answer twice; the last one counts
            assert rooms.answer(code, s, 1, v)[0]

    threads = [threading.Thread(target=answer_all, args=(s,)) for s in students]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert rooms.tally(code, key, 1).as_json()["answers"] == {"3": 200}


def test_rooms_per_owner_are_limited_and_a_closed_one_frees_its_place(store):
    rooms = Rooms(store(), max_rooms=10, max_per_owner=3, roomy_per_owner=3)
    mine = [rooms.open("m", None, QS, owner="10.0.0.7") for _ in range(3)]
    with pytest.raises(UserError) as e:
        rooms.open("m", None, QS, owner="10.0.0.7")
    assert str(e.value) == owner_full(rooms.owners)
    rooms.open("m", None, QS, owner="10.0.0.8")  # another address: its own three
    for _ in range(4):
        rooms.open("m", None, QS)  # no address known (a notebook): no owner to count
    rooms.close(*mine[0])
    rooms.open("m", None, QS, owner="10.0.0.7")
    assert len(rooms) == 3 + 1 + 4


def test_an_address_holds_more_rooms_while_the_server_is_roomy_and_three_once_it_is_half_full(store):
    """A campus behind one NAT is several lecturers: a fourth room was refused at 3 on an empty server.
    With 12 places: 5 rooms for one address while fewer than 6 are open, then 3 for each newcomer."""
    rooms = Rooms(store(), max_rooms=12, max_per_owner=3, roomy_per_owner=5)
    campus = [rooms.open("m", None, QS, owner="10.0.0.1") for _ in range(5)]  # 0..4 open before each: roomy
    with pytest.raises(UserError) as e:
        rooms.open("m", None, QS, owner="10.0.0.1")  # its roomy share is full (5 open: still roomy)
    assert str(e.value) == owner_full(OwnerLimit(3, 5)) != OWNER_FULL and "(3 while" in str(e.value)
    rooms.open("m", None, QS, owner="10.0.0.2")  # 5 open before it: roomy, so 6 now: half full
    rooms.open("m", None, QS, owner="10.0.0.2")
    rooms.open("m", None, QS, owner="10.0.0.2")
    with pytest.raises(UserError):
        rooms.open("m", None, QS, owner="10.0.0.2")  # half full or more: 3 an address
    rooms.close(*campus[0])
    rooms.close(*campus[1])  # 6 open: still half full, and the campus holds 3
    with pytest.raises(UserError):
        rooms.open("m", None, QS, owner="10.0.0.1")
    for _ in range(2):
        rooms.close(*campus.pop())  # 4 open: roomy again, the campus holds 1
    rooms.open("m", None, QS, owner="10.0.0.1")
    assert len(rooms) == 5


def test_a_locked_room_refuses_new_students_but_not_those_in(opened):
    rooms, code, key = opened()
    assert rooms.join(code, S1) == (True, "")
    assert rooms.answer(code, S2, 1, 5)[0]  # a first answer registers a student too
    v = rooms.version(code)
    st = rooms.lock(code, key, True)
    assert st.locked is True and st.joined == 2 and rooms.version(code) == v + 1  # the pages show it
    assert rooms.view(code)["locked"] is True
    assert rooms.join(code, S3) == (False, LOCKED)
    assert rooms.answer(code, S3, 1, 5) == (False, LOCKED)
    assert rooms.answer(code, S1, 1, 7) == (True, "") and rooms.join(code, S2) == (True, "")
    with pytest.raises(UserError, match="locked must be true or false"):
        rooms.lock(code, key, "yes")
    with pytest.raises(UserError) as e:
        rooms.lock(code, "nope", False)
    assert str(e.value) == WRONG_KEY
    rooms.lock(code, key, False)
    assert rooms.join(code, S3) == (True, "")
    assert rooms.tally(code, key, 1).as_json() == {"step": 1, "answers": {"5": 1, "7": 1}, "total": 2,
                                                  "bars": [["5", 1], ["7", 1]], "others": 0}


def test_hello_counts_students_toward_the_limit(store):
    rooms = Rooms(store(), max_students=2)
    code, key = rooms.open("m", None, QS)
    assert rooms.view(code)["joined"] == 0
    assert rooms.join(code, S1) == (True, "") and rooms.join(code, S1) == (True, "")  # again: harmless
    assert rooms.join(code, S2) == (True, "")
    assert rooms.view(code)["joined"] == 2 and rooms.state(code).joined == 2
    assert rooms.join(code, S3) == (False, "This room is full (2 students).")
    assert rooms.answer(code, S3, 1, 1) == (False, "This room is full (2 students).")
    assert rooms.join(code, "bad id") == (False, "student must be the page's random id: 8 to 64 letters, digits, "
                                                 "- or _, a letter or digit first.")
    assert rooms.join("NOPE", S1) == (False, UNKNOWN_ROOM)


def test_the_lessons_questions_become_room_questions():
    steps = load_steps()
    qs = questions_of(steps)
    assert len(qs) == len(steps)
    by_id = {s.id: q for s, q in zip(steps, qs)}
    assert by_id["image"].is_number and by_id["patches"].options == ("a", "b", "c", "d")


def test_a_students_view_shows_only_revealed_steps_tally_and_truth(opened):
    rooms, code, key = opened()
    rooms.answer(code, S1, 1, 224)
    rooms.answer(code, S2, 1, 196)
    assert rooms.view(code)["shown"] == {}
    rooms.prepare(code, 1, {"truth": "224"}, None)  # measured ahead: still hidden
    assert rooms.view(code)["shown"] == {}
    rooms.move(code, key, 1, reveal=True)
    assert rooms.view(code)["shown"] == {"1": {"tally": {"step": 1, "answers": {"224": 1, "196": 1}, "total": 2,
                                                         "bars": [["196", 1], ["224", 1]], "others": 0},
                                               "truth": "224", "picture": False}}


def test_every_change_and_only_a_change_calls_on_change(store):
    seen: list[str] = []
    rooms = Rooms(store(), on_change=seen.append)
    code, key = rooms.open("m", None, QS)
    rooms.move(code, key, 1)  # no change
    rooms.answer(code, S1, 1, 3)  # an answer is not the lecturer's move
    assert seen == []
    rooms.move(code, key, 2)
    rooms.prepare(code, 3, {"truth": "7"}, b"fig")  # measured ahead, not revealed: no page needs waking
    assert seen == [code]
    rooms.move(code, key, 2, reveal=True)
    rooms.prepare(code, 2, {"truth": "b"}, None)  # revealed before its truth was ready: the pages fetch it
    rooms.close(code, key)
    assert seen[:4] == [code] * 4 and set(seen) == {code}  # (Redis: each may come twice, here and published)


def test_a_steps_figure_is_shown_only_after_its_reveal(opened):
    """Before the reveal every step's picture is the photo (the figure may show the answer); after it,
    the step's own figure; a step without a figure keeps the photo."""
    rooms, code, key = opened()
    assert rooms.picture(code, 1) is None and rooms.view(code)["picture"] is False  # nothing drawn yet
    rooms.keep_photo_view(code, b"photo")
    rooms.prepare(code, 1, {"truth": "224"}, b"grid")
    rooms.prepare(code, 2, {"truth": "b"}, None)
    v = rooms.version(code)
    assert rooms.version(code) == v and rooms.view(code)["picture"] is True
    assert rooms.picture(code, 1) == b"photo" and rooms.picture(code, "0") == b"photo"
    assert rooms.prepared(code, 1) and rooms.prepared(code, 2) and not rooms.prepared(code, 3)
    rooms.move(code, key, 1, reveal=True)
    assert rooms.picture(code, 1) == b"grid" and rooms.picture(code, 0) == b"photo"
    assert rooms.view(code)["shown"]["1"]["picture"] is True
    rooms.move(code, key, 2, reveal=True)
    assert rooms.picture(code, 2) == b"photo"  # no figure for that step
    with pytest.raises(UserError, match="step must be"):
        rooms.picture(code, 9)
    rooms.close(code, key)
    rooms.prepare(code, 3, {"truth": "1"}, b"late")  # the opening's measuring ends after the close: dropped
    assert rooms.store.blob(code, "p3") is None
    with pytest.raises(UserError, match="^" + CLOSED_BY_HOST):
        rooms.picture(code, 3)


def test_the_lecturer_gets_every_answer_as_csv_and_no_one_else_does(opened):
    """Issue 51: a CSV of the room's answers per step, for the host key only; the students are their
    pages' random ids, nothing more. Rows written by hand."""
    rooms, code, key = opened()
    assert rooms.answer(code, S2, 1, "196")[0] and rooms.answer(code, S1, 1, 224)[0]
    rooms.move(code, key, 2, reveal=True)
    assert rooms.answer(code, S1, 3, "x")[0] is False  # step 3 is not open: not in the file
    rows = rooms.answers_csv(code, key, ["one", "two, with a comma"]).splitlines()
    head = "step,title,student,answer,revealed,truth,right"
    assert rows == [head, f"1,one,{S1},224,no,,", f"1,one,{S2},196,no,,"]
    # revealed with its truth measured: right is the truth's text, or a number within the step's tolerance
    rooms.move(code, key, 1)
    assert rooms.answer(code, S3, 1, "220")[0]
    rooms.prepare(code, 1, {"truth": "224"}, None)
    rooms.move(code, key, 1, reveal=True)
    rows = rooms.answers_csv(code, key, ["one"], [3.0]).splitlines()
    assert rows == [head, f"1,one,{S1},224,yes,224,yes", f"1,one,{S3},220,yes,224,no", f"1,one,{S2},196,yes,224,no"]
    rows = rooms.answers_csv(code, key, ["one"], [4.0]).splitlines()
    assert rows[2] == f"1,one,{S3},220,yes,224,yes"  # 4 off, within 4
    with pytest.raises(UserError, match="host key"):
        rooms.answers_csv(code, "not the key")


HALL, STRANGER, OTHER, WIFI = "address 10.0.0.1", "address 203.0.113.9", "address 198.51.100.7", "address 2001:db8::/64"


def _id(rooms: Rooms, code: str, addr: str) -> str:
    """A network's id as the host page gets it: keyed by the room's salt (in its meta, never sent)."""
    return network_id(rooms.store.meta(code)["salt"], addr)


def test_one_address_never_fills_a_room_and_the_lecturer_turns_it_away(store):
    """A stranger minting student ids from one address gets the address's share of the room and no more;
    the hall (the lecturer's address) is not limited by it. The lecturer's page hears how many one other
    network brought, under an id that is not the address (the students' view never hears of it), turns
    that network away with its answers, and it joins no more until let in again, with its share."""
    rooms = Rooms(store(), max_students=40, address_share=6)
    code, key = rooms.open("vit-tiny", b"view", QS, owner=HALL)
    for i in range(6):
        assert rooms.answer(code, f"minted-{i:03d}", 1, 999, STRANGER) == (True, "")
    assert rooms.join(code, "minted-006", STRANGER) == (False, share_full(6))
    assert rooms.answer(code, "minted-007", 1, 999, STRANGER) == (False, share_full(6))
    assert rooms.answer(code, "minted-000", 1, 998, STRANGER) == (True, "")  # one already in still answers
    for i in range(8):
        assert rooms.answer(code, f"hall-{i:04d}", 1, 196, HALL) == (True, "")
    assert rooms.join(code, "travelling", OTHER) == (True, "")
    seen = rooms.host(code, key, HALL)
    crowd = seen["crowd"]
    assert seen["joined"] == 15 and crowd == {"others": 7, "network": _id(rooms, code, STRANGER), "students": 6,
                                              "trusted": False, "full": True}
    assert crowd["network"] != network_id(key, STRANGER), "keyed by the room's salt, not the host key"
    assert "address" not in json.dumps(seen) + json.dumps(rooms.view(code)), "no address leaves the server"
    assert "crowd" not in rooms.view(code), "a student never hears of other networks"
    assert rooms.tally(code, key, 1).answers == {"998": 1, "999": 5, "196": 8}

    v = rooms.version(code)
    assert rooms.turn_away(code, key, crowd["network"]) == 6
    assert rooms.version(code) > v, "every page re-reads: a revealed tally may have changed"
    assert rooms.tally(code, key, 1).answers == {"196": 8}
    seen = rooms.host(code, key, HALL)
    assert (seen["joined"], seen["crowd"]) == (9, {"others": 0})  # OTHER's one student: below CROWD_SHOWN
    assert rooms.join(code, "minted-100", STRANGER) == (False, BARRED)
    assert rooms.answer(code, "minted-101", 1, 5, STRANGER) == (False, BARRED)
    assert rooms.turn_away(code, key, crowd["network"]) == 0, "the same click twice turns nobody else away"
    with pytest.raises(UserError, match=NO_NETWORK):
        rooms.turn_away(code, key, crowd["network"][:-1] + "x")
    with pytest.raises(UserError, match=OWN_NETWORK):
        rooms.turn_away(code, key, _id(rooms, code, HALL))
    with pytest.raises(UserError, match=WRONG_KEY):
        rooms.turn_away(code, "not-the-host-key", crowd["network"])
    with pytest.raises(UserError, match="trust must be true or false"):
        rooms.let_in(code, key, crowd["network"], "yes")
    rooms.let_in(code, key, crowd["network"], trust=False)  # undone: it may join again, with its share
    assert [rooms.join(code, f"minted-{i}", STRANGER)[0] for i in range(100, 107)] == [True] * 6 + [False]
    assert rooms.tally(code, key, 1).answers == {"196": 8}, "its old answers stay gone"
    assert rooms.host(code, key, HALL)["crowd"]["trusted"] is False


def test_the_lecturers_addresses_are_its_own_and_a_network_let_in_can_be_turned_away(store):
    """A laptop calls from several addresses (wired, Wi-Fi, IPv6): each one it called from stays the
    lecturer's, so the hall never becomes "another network" to be turned away, and an address it calls
    from is never barred. A hall on another network fills its share until the lecturer lets it in; a
    network let in is still named, and may still be turned away."""
    rooms = Rooms(store(), max_students=60, address_share=5)
    code, key = rooms.open("vit-tiny", b"view", QS, owner=HALL)
    assert all(rooms.join(code, f"hall-{i:04d}", HALL)[0] for i in range(8))
    assert rooms.host(code, key, WIFI)["crowd"] == {"others": 0}, "the hall is still the lecturer's"
    assert all(rooms.join(code, f"hall-{i:04d}", HALL)[0] for i in range(8, 12))
    with pytest.raises(UserError, match=OWN_NETWORK):
        rooms.turn_away(code, key, _id(rooms, code, HALL))
    # another network's hall: its share, then "ask the lecturer"; let in, the rest join
    got = [rooms.join(code, f"other-{i:04d}", OTHER) for i in range(7)]
    assert [ok for ok, _ in got] == [True] * 5 + [False] * 2 and got[-1][1] == share_full(5)
    crowd = rooms.host(code, key, WIFI)["crowd"]
    assert crowd == {"others": 5, "network": _id(rooms, code, OTHER), "students": 5, "trusted": False, "full": True}
    rooms.let_in(code, key, crowd["network"])
    assert all(rooms.join(code, f"other-{i:04d}", OTHER)[0] for i in range(5, 20))
    assert rooms.host(code, key, WIFI)["crowd"] == {**crowd, "others": 20, "students": 20, "trusted": True,
                                                    "full": False}
    # many small networks add up where no one of them is named
    for n in range(4):
        assert all(rooms.join(code, f"small-{n}-{i}", f"address 192.0.2.{n}")[0] for i in range(4))
    assert rooms.host(code, key, WIFI)["crowd"]["others"] == 36
    # a network let in, then turned away: barred, no longer trusted
    assert rooms.turn_away(code, key, crowd["network"]) == 20
    assert rooms.join(code, "other-9999", OTHER) == (False, BARRED)
    # a network turned away that the lecturer's page then calls from is its own again
    rooms.host(code, key, OTHER)
    assert rooms.join(code, "other-9999", OTHER) == (True, "")


def test_a_server_with_a_lecturer_key_opens_rooms_only_for_it():
    """Opt-in (VIZVIT_LECTURER_KEY): a stranger holding the link cannot take a department's rooms. Any value
    that is not the key, of any type or size, is refused with a sentence; no key set, anyone opens."""
    from vizvit.classroom.room import KEY_NEEDED, LECTURER_KEY_MAX, WRONG_LECTURER_KEY

    rooms = Rooms(lecturer_key=" s3cret key ")  # a secret pasted with spaces around it
    assert rooms.needs_key
    for given, said in ((None, KEY_NEEDED), ("", KEY_NEEDED), ("  ", KEY_NEEDED), (5, KEY_NEEDED),
                        (["s3cret key"], KEY_NEEDED), ({"k": 1}, KEY_NEEDED), ("s3cret", WRONG_LECTURER_KEY),
                        ("s3cret keyX", WRONG_LECTURER_KEY), ("S3CRET KEY", WRONG_LECTURER_KEY),
                        ("s3cret key" * 10_000, WRONG_LECTURER_KEY), ("ключ\x00", WRONG_LECTURER_KEY),
                        ("\ud800", WRONG_LECTURER_KEY), ("s3cret k\udfffey", WRONG_LECTURER_KEY)):
        with pytest.raises(UserError) as e:
            rooms.open("m", None, QS, lecturer_key=given)
        assert str(e.value) == said, given
    assert rooms.store.metas() == {}
    code, _ = rooms.open("m", None, QS, lecturer_key="s3cret key")
    assert rooms.state(code).step == 1
    assert not Rooms().needs_key and Rooms(lecturer_key="").lecturer_key is None
    Rooms().open("m", None, QS, lecturer_key="anything")  # no key set: what is given does not matter
    with pytest.raises(UserError, match="longer than"):
        Rooms(lecturer_key="k" * (LECTURER_KEY_MAX + 1))


@pytest.mark.parametrize("server, typed", [("café clé", "cafe\u0301 cle\u0301"), ("cafe\u0301 cle\u0301", "café clé")])
def test_a_lecturer_key_typed_in_another_unicode_form_opens_rooms(server, typed):
    """One key, "é" as one character (NFC: a Mac's keyboard) or as "e" and its accent (NFD: another's, a
    pasted key): the lecturer was told the key is wrong. Compared in NFC; other keys stay refused."""
    from vizvit.classroom.room import WRONG_LECTURER_KEY

    rooms = Rooms(lecturer_key=server)
    code, _ = rooms.open("m", None, QS, lecturer_key=typed)
    assert rooms.state(code).step == 1
    with pytest.raises(UserError, match=WRONG_LECTURER_KEY):
        rooms.open("m", None, QS, lecturer_key="cafe cle")


class _BlobsFail:
    """A store that opens rooms but cannot keep their pictures (a disk full, Redis gone just then)."""

    def __init__(self, store: object, failing: str) -> None:
        self.store, self.failing = store, failing

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)

    def put_blob(self, code: str, name: str, data: bytes) -> None:
        if name == self.failing:
            raise StoreDown("The room store cannot be reached.")
        self.store.put_blob(code, name, data)


@pytest.mark.parametrize("failing", ["view", "p0"])
def test_a_room_whose_pictures_cannot_be_kept_is_not_left_open(store, failing):
    """The store fails just after the room is created: the caller hears the failure and never the room's
    key. The room stayed open, holding one of the server's rooms and of its owner's share, which nobody
    could close for HOST_AWAY_S (an owner's three such failures barred it from opening a room)."""
    rooms = Rooms(_BlobsFail(store(), failing), max_per_owner=1, roomy_per_owner=1)
    with pytest.raises(StoreDown):
        rooms.open("m", b"view", QS, owner="10.0.0.1", shown=b"jpeg")
    assert rooms.store.metas() == {}
    rooms.store.failing = ""
    code, _ = rooms.open("m", b"view", QS, owner="10.0.0.1", shown=b"jpeg")  # its share is free
    assert rooms.picture(code, 0) == b"jpeg" and rooms.model_view(code) == b"view"


def test_a_meta_read_while_its_room_changes_is_not_kept_and_days_of_rooms_leave_no_count_behind(store, monkeypatch):
    """A meta read from the store while a change of its room is announced (another replica's answer) may be
    the one before the change: it is not kept, and the next read goes to the store again. The changes are
    counted in a fixed number of slots: 5,000 rooms opened and changed over days left 5,000 counts
    (Rooms._gens grew with every code ever changed)."""
    import vizvit.classroom.room as room_module

    monkeypatch.setattr(room_module, "META_TTL_S", 60.0)  # kept while the test runs, however loaded the machine
    rooms = Rooms(store())
    code, _ = rooms.open("vit-tiny", None, QS)
    real, reads = rooms.store, []

    class ChangedMidRead:
        def __getattr__(self, name):
            return getattr(real, name)

        def meta(self, c):
            reads.append(c)
            got = real.meta(c)
            if len(reads) == 1:
                rooms._changed(c)  # announced while this read was on its way
            return got

    rooms.store = ChangedMidRead()
    assert rooms._meta(code) is not None and rooms._meta(code) is not None
    assert reads == [code, code], "a read begun before a change was kept"
    assert rooms._meta(code) is not None and reads == [code, code], "a read after the change was not kept"
    for n in range(5_000):
        rooms._changed(f"gone-{n}")
    assert len(rooms._gens) <= room_module.GEN_SLOTS
