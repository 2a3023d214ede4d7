"""page/tabs/experiments.py's handlers, called alone (no browser, no server) on a tiny ViT: each
answers what the Experiments views answer for the controls it was sent, under the page's names; a
click on the mask grid toggles the patch under the pixel (or takes the mask the page wrote), and the
mask buttons answer their known masks."""

from __future__ import annotations

import dataclasses
import json

import gradio as gr
import pytest
from built_page import same

from page.tabs import experiments as tab
from vizvit.errors import UserError
from vizvit.pictures import render
from vizvit.readings import contest, masks, sweep
from vizvit.session import PhotoKey, Workbench
from vizvit.views import experiments as ev


@pytest.fixture(scope="module")
def page(photo) -> tuple[dict, dict]:
    """The tab's own components (the books name their elem ids) and its two Fetchers."""
    with gr.Blocks():
        ui = {**tab._shift_layout(cnn=False), **tab._mask_layout(), **tab._curves_layout()}
    return ui, tab.fetchers(photo[0], ui)


def controls(**changed) -> tuple:
    """The tab's controls as the page sends them (its defaults), in CONTROLS order."""
    c = dict(dx=0, dy=0, fill="edge", mask=(), mode="drop")
    assert list(c) == tab.CONTROLS
    return tuple({**c, **changed}.values())


def select(x: float, y: float) -> gr.SelectData:
    return gr.SelectData(None, {"index": [x, y], "value": None})


def test_opening_the_tab_shows_the_views_page_and_sets_the_shift_range_to_the_model(photo, page, tiny16):
    wb, key = photo
    ui, fetch = page
    got = tab.show(wb, fetch, key, *controls(dx=3, mask=(1, 2)), 10, "black", None)
    assert set(got) == set(tab.OPENED) | set(tab.STALE) | {"contest_ran"} and got["curves_stale"] == ""
    want = ev.show(wb.handle(key), ev.ExperimentsParams(dx=3, mask=(1, 2)))
    for n in tab.SHOWN:
        assert same(got[n], getattr(want, n)), f"{n} differs from the view's own answer"
    P = tiny16.geometry.patch_size
    dx, dy = got["dx"], got["dy"]
    assert (dx["minimum"], dx["maximum"]) == (dy["minimum"], dy["maximum"]) == (-2 * P, 2 * P)
    shift, mask = json.loads(got["book"]), json.loads(got["mask_book"])
    assert shift["controls"] == ["shift-dx", "shift-dy", "shift-fill"]
    assert shift["fetch"].endswith(fetch["shift"].token(key))
    assert mask["controls"] == ["mask-mode"]
    assert (mask["toggle"]["target"], mask["toggle"]["box"]) == ("mask-grid", "mask-box")
    charts = tab.show_charts(wb, key, *controls(dx=3, mask=(1, 2)))
    assert set(charts) == set(tab.CHARTS) and all(same(charts[n], getattr(want, n)) for n in tab.CHARTS)
    none = tab.show(wb, fetch, None, *controls(), 10, "black", None)
    assert none == {n: gr.skip() for n in [*tab.OPENED, *tab.STALE, "contest_ran"]}
    assert tab.show_charts(wb, None, *controls()) == {n: gr.skip() for n in tab.CHARTS}


def test_a_shift_answers_the_views_shift_panel_under_the_page_names(photo, page):
    wb, key = photo
    fetch = page[1]
    got = tab.show_shift(wb, fetch, key, *controls(dx=5, dy=-2, fill="wrap"))
    want = ev.shift_panel(wb.handle(key), 5, -2, "wrap")
    assert set(got) == set(tab.SHIFT_OUT)
    assert same(got["shift_view"], want.view) and same(got["shift_cos"], want.cosine)
    assert got["shift_info"] == want.cosine_text and same(got["shift_top5"], want.top5)
    assert json.loads(got["book"])["pages"], "the shift just drawn is kept in the book"
    assert tab.show_shift(wb, fetch, None, *controls()) == {n: gr.skip() for n in tab.SHIFT_OUT}


def test_a_click_toggles_the_patch_under_it_or_takes_the_mask_the_page_wrote(photo, page, tiny16):
    wb, key = photo
    fetch = page[1]
    g = tiny16.geometry
    s, P = render.display_scale(g), g.patch_size
    r, c = 2, 3
    xy = select((c + 0.5) * P * s, (r + 0.5) * P * s)
    got = tab.click(wb, fetch, key, (), "drop", "", xy)
    assert got["mask"] == (r * g.grid[1] + c,)
    want = ev.mask_panel(wb.handle(key), got["mask"], "drop")
    assert same(got["mask_grid"], want.grid) and same(got["masked_view"], want.masked) and got["mask_info"] == want.text
    assert tab.click(wb, fetch, key, got["mask"], "drop", "", xy)["mask"] == (), "a second click unmasks it"
    assert tab.click(wb, fetch, key, (), "drop", "m:7,4", xy)["mask"] == (4, 7), "the page's own mask wins"
    assert tab.click(wb, fetch, None, (), "drop", "", xy) == {n: gr.skip() for n in ["mask", *tab.MASK_OUT]}
    shown = tab.show_mask(wb, fetch, key, *controls(mask=(4, 7), mode="black"))
    assert same(shown["masked_view"], ev.mask_panel(wb.handle(key), (4, 7), "black").masked)
    assert tab.show_mask(wb, fetch, None, *controls()) == {n: gr.skip() for n in tab.MASK_OUT}


def test_a_mode_refused_for_the_mask_puts_the_radio_back_on_the_mode_the_readout_is_for(photo, page, tiny16,
                                                                                      monkeypatch):
    """The walk-through: every patch masked in black, then drop picked: the refusal's toast came, but the radio
    stayed on drop beside the black readout. The answer now says why (a toast) and sets the radio to black, the
    readout's mode, leaving the readout as it is; every answer that draws the mask views says which mode they are
    for."""
    wb, key = photo
    fetch = page[1]
    every = tuple(range(tiny16.geometry.num_patches))
    toasts = []
    monkeypatch.setattr(gr, "Warning", lambda msg, *a, **k: toasts.append(msg))
    black = tab.pick_mode(wb, fetch, key, "drop", *controls(mask=every, mode="black"))
    assert black["mask_shown"] == "black" and "196 of 196** patches masked (black)" in black["mask_info"]
    back = tab.pick_mode(wb, fetch, key, "black", *controls(mask=every, mode="drop"))
    assert back["mode"] == "black", "the radio stayed on the refused mode"
    assert toasts == ["Every patch is masked: leave at least one patch for the model to see."]
    assert {n: v for n, v in back.items() if n != "mode"} == {n: gr.skip() for n in tab.MASK_OUT}
    # A refused mode the readout is for already (a link set it): nothing to go back to, the refusal alone.
    with pytest.raises(UserError, match="Every patch is masked"):
        tab.pick_mode(wb, fetch, key, "drop", *controls(mask=every, mode="drop"))
    assert tab.run(wb, fetch, "clear", key, every, 25, 0, "mean", masks.MASK_MAPS[0])["mask_shown"] == "mean"


def test_the_mask_buttons_answer_their_masks_and_only_random_draws_a_new_seed(photo, page, tiny16):
    wb, key = photo
    fetch = page[1]
    N = tiny16.geometry.num_patches
    by = masks.MASK_MAPS[0]
    assert tab.run(wb, fetch, "clear", key, (1, 2), 25, 0, "drop", by)["mask"] == ()
    inv = tab.run(wb, fetch, "invert", key, (0,), 25, 0, "drop", by)
    assert inv["mask"] == tuple(range(1, N)) and inv["seed"] == 0
    rnd = tab.run(wb, fetch, "random", key, (), 25, 4, "drop", by)
    assert len(rnd["mask"]) == round(0.25 * N) and rnd["seed"] == 5
    top, bottom = (tab.run(wb, fetch, a, key, (), 50, 0, "drop", by)["mask"] for a in ("top", "bottom"))
    assert len(top) == len(bottom) == N // 2 and set(top) | set(bottom) == set(range(N)), "two halves of one ranking"
    cleared = tab.run(wb, fetch, "clear", None, (), 25, 0, "drop", by)
    assert cleared == {n: gr.skip() for n in ["mask", "seed", *tab.MASK_OUT]}


def test_the_sweep_streams_every_shift_and_both_jobs_need_a_photo(photo, tiny16):
    wb, key = photo
    steps = list(tab.sweep(wb, key))
    assert steps and all(set(tab.SWEEP) <= set(p) <= set(tab.SWEEP_OUT) for p in steps)
    ks = [r[0] for r in steps[-1]["sweep_table"]["data"]]
    assert ks == list(range(2 * tiny16.geometry.patch_size + 1)), "k = 0..2P"
    with pytest.raises(UserError):
        next(tab.sweep(wb, None))
    with pytest.raises(UserError):
        next(tab.curves(wb, None, 10, "black"))


def test_a_sweep_waiting_for_a_slot_shows_its_place_in_line_then_runs(photo, monkeypatch):
    """Issue 50: a costly job past the slots waits its turn and says so in its status line."""
    import threading

    from page import jobs
    from vizvit.service.jobs import Jobs

    wb, key = photo
    costly = jobs.CostlyJobs(Jobs(slots=1))
    monkeypatch.setattr(jobs, "JOBS", costly)
    req = lambda host, session: gr.Request(session_hash=session, client={"host": host, "port": 1}, headers={})  # noqa: E731
    holding, release = threading.Event(), threading.Event()

    def other() -> None:  # another address holds the only slot until released
        with costly.hold(req("192.0.2.9", "x"), "deletion curves"):
            holding.set()
            release.wait(10)

    t = threading.Thread(target=other, daemon=True)
    t.start()
    assert holding.wait(10)
    steps = tab.sweep(wb, key, request=req("192.0.2.7", "me"))
    assert next(steps) == {"sweep_text": "Waiting for a free slot: your shift sweep is next in line."}
    release.set()
    rest = list(steps)
    assert rest and set(tab.SWEEP) <= set(rest[-1]) <= set(tab.SWEEP_OUT), "then the sweep itself, to its end"
    t.join(10)


def test_opening_the_tab_for_a_photo_sends_its_own_sweep_and_contest_panels(photo, page):
    """The tab's open answers the sweep and contest components too: empty with a note before a run
    (the previous photo's stayed on screen), the photo's own cached run after."""
    wb, key = photo
    ui, fetch = page
    got = tab.show(wb, fetch, key, *controls(), 3, "blur")
    assert set(tab.SWEEP + tab.CURVES) <= set(got)
    want = ev.show(wb.handle(key), ev.ExperimentsParams(steps=3, curve_mode="blur"))
    assert got["sweep_text"] == want.sweep.text and got["curves_text"] == want.curves.text
    assert "3 steps and the blur fill" in got["curves_text"] and got["auc_table"] == []
    ev.curves_panel(wb.handle(key), 3, "blur")
    got = tab.show(wb, fetch, key, *controls(), 3, "blur")
    assert got["del_plot"] is not None and len(got["auc_table"]) > 1 and "Verdict on this photo" in got["curves_text"]


def test_the_contest_on_show_is_said_to_be_for_the_old_settings_when_a_setting_changed(photo, page):
    """A contest run with other steps or fill (or on another photo: another key): the line says so when a
    setting moves; for the settings now, no line. The tab's opening shows the photo's own contest for the
    settings now (or none), so it clears the line and keeps what is on show."""
    wb, key = photo
    _, fetch = page
    ran = ev.ContestRun(key, 10, "black")
    assert tab.contest_stale(wb, key, 10, "black", ran) == {"curves_stale": ""}
    assert "12 steps" in tab.contest_stale(wb, key, 12.0, "black", ran)["curves_stale"]
    other = dataclasses.replace(key, sha1="0" * 40)
    assert "photo (or model) shown before" in tab.contest_stale(wb, key, 10, "black",
                                                                ev.ContestRun(other, 10, "black"))["curves_stale"]
    opened = tab.show(wb, fetch, key, *controls(), 2, "mean")
    assert opened["curves_stale"] == "" and opened["contest_ran"] is None  # none run: none on show
    ev.curves_panel(wb.handle(key), 2, "mean")
    opened = tab.show(wb, fetch, key, *controls(), 2, "mean")
    assert opened["contest_ran"] == ev.ContestRun(key, 2, "mean")


def test_a_setting_moved_while_the_contest_runs_stays_said_to_its_end(photo):
    """The page as a run's answers and a slider's input leave it: the first chart replaces the contest on
    show, and clears the line that said it was old; a setting moved after it writes the line again
    (contest_stale), and no later chart of the same run may clear it (each did: the finished chart looked
    current for 3 steps while it had run with 7)."""
    wb, key = photo
    shown = {"curves_stale": "⚠️ the contest before", "contest_ran": None}
    charts = 0
    for answer in tab.curves(wb, key, 7, "blur"):  # steps and fill no other test runs: nothing cached
        shown.update(answer)
        if "del_plot" not in answer:
            continue
        charts += 1
        if charts == 1:
            assert shown["curves_stale"] == "", "the first chart is this run's: the old contest's line goes"
            shown.update(tab.contest_stale(wb, key, 3, "blur", shown["contest_ran"]))  # the steps slider moved to 3
            assert "7 steps" in shown["curves_stale"]
    assert charts >= 2, "the contest streams map by map: more than one chart"
    assert "7 steps" in shown["curves_stale"] and "3 steps" in shown["curves_stale"], shown["curves_stale"]


def test_the_run_s_end_says_the_line_again_for_the_settings_then(built):
    """A setting moved before the run's first chart is cleared by that chart: the page asks contest_stale again
    once the run ends (an event after the run's, with the key, the two settings and what the run ran with)."""
    from built_page import by_id, wired

    _, demo, _ = built
    run = wired(demo, "curves-run", "click")
    run_id = next(i for i, fn in demo.fns.items() if fn is run)
    after = [fn for fn in demo.fns.values() if fn.trigger_after == run_id]
    assert len(after) == 1 and after[0].outputs == [by_id(demo, tab.ids.CURVES_STALE)], after
    assert [getattr(c, "elem_id", None) for c in after[0].inputs[1:3]] == ["curves-steps", "curves-mode"]


def test_a_contest_run_before_attention_flow_was_computed_is_said_to_rank_fewer_maps(tiny16, cat, page):
    """Attention flow, computed on the Attention tab after the contest ran, is a map the contest ranks from then
    on: the table on show ranked the others and nothing said so; opened again, the tab said the contest had
    never run and hid it. Now the line says which map it lacks, on the tab's open and when a setting moves,
    until the contest is run again over every map."""
    from vizvit.readings import methods

    wb = Workbench(device="cpu")  # a photo of its own: the module's photo keeps a contest without flow
    wb.add_model(tiny16)
    key = PhotoKey(tiny16.id, wb.add_photo(cat))
    ph, fetch = wb.handle(key), tab.fetchers(wb, page[0])
    ev.curves_panel(ph, 2, "mean")
    before = tab.show(wb, fetch, key, *controls(), 2, "mean")
    assert before["curves_stale"] == "" and before["contest_ran"] == ev.ContestRun(key, 2, "mean", ())
    ranked = [row[1] for row in before["auc_table"]]
    assert "attention flow" not in ranked
    methods.get("attention flow")(ph.vm, ph.analysis(), None, ph.derived)  # the Attention tab's flow, cached
    line = tab.contest_stale(wb, key, 2, "mean", before["contest_ran"])["curves_stale"]
    assert "Not every map" in line and "before attention flow was computed" in line, line
    opened = tab.show(wb, fetch, key, *controls(), 2, "mean")
    assert [row[1] for row in opened["auc_table"]] == ranked, "the contest on show was hidden"
    assert opened["curves_stale"] == line and opened["contest_ran"] == before["contest_ran"]
    assert "12 steps" in tab.contest_stale(wb, key, 12, "mean", opened["contest_ran"])["curves_stale"]
    last = {"curves_stale": line}  # run again: every map, no line (the page as the run's answers leave it)
    for answer in tab.curves(wb, key, 2, "mean"):
        last.update(answer)
    assert last["curves_stale"] == "" and last["contest_ran"] == ev.ContestRun(key, 2, "mean", ("attention flow",))
    assert "attention flow" in [row[1] for row in last["auc_table"]]
    assert tab.contest_stale(wb, key, 2, "mean", last["contest_ran"])["curves_stale"] == ""
    assert tab.show(wb, fetch, key, *controls(), 2, "mean")["curves_stale"] == ""


def test_the_sweep_runs_under_the_fill_the_shift_controls_show(photo):
    """The sweep button sends the fill control's value: the sweep runs under it and says so (it ran under edge
    whatever the control said)."""
    wb, key = photo
    last = list(tab.sweep(wb, key, "constant"))[-1]
    assert "constant fill" in last["sweep_text"] and "constant fill" in last["sweep_plot"].layout.title.text
    want = ev.sweep_panel(wb.handle(key).vm, sweep.full_sweep(wb.handle(key), fill="constant"), fill="constant")
    assert last["sweep_table"] == want.table


def test_the_mask_grid_carries_the_title_the_text_names_it_by(page):
    ui, _ = page
    assert ui["mask_grid"].label == "Click patches to mask them"
    assert f"*{ui['mask_grid'].label}*" in ev.MASKS_TEXT


def test_a_fill_moved_after_the_sweep_ran_puts_a_line_over_it_until_run_again(photo):
    """The page as a sweep's answers and the fill control leave it: the sweep keeps the fill it ran with and clears
    the line over the sweep before it with its first panel; a fill moved after it is said (sweep_stale), and a fill
    moved back is not. The edge sweep's rows stayed up under wrap with nothing said (trained ViT-Ti, chelsea)."""
    wb, key = photo
    shown = {"sweep_stale": "⚠️ the sweep before", "sweep_ran": None}
    panels = 0
    for answer in tab.sweep(wb, key, "wrap"):
        shown.update(answer)
        if "sweep_table" not in answer:
            continue
        panels += 1
        if panels == 1:
            assert shown["sweep_stale"] == "" and shown["sweep_ran"] == "wrap"
            shown.update(tab.sweep_stale("edge", shown["sweep_ran"]))  # the fill moved while it runs
    assert panels >= 2, "the sweep streams chunk by chunk: more than one panel"
    assert "wrap fill" in shown["sweep_stale"] and "edge fill" in shown["sweep_stale"], shown["sweep_stale"]
    assert tab.sweep_stale("wrap", shown["sweep_ran"]) == {"sweep_stale": ""}


def test_the_fill_and_the_sweep_s_end_ask_for_the_sweep_s_line(built):
    """The fill's input and the sweep run's end each ask sweep_stale (the fill, then the fill it ran with), as the
    contest's settings and run do for its line."""
    from built_page import by_id, wired

    _, demo, _ = built
    run = wired(demo, "sweep-run", "click")
    run_id = next(i for i, fn in demo.fns.items() if fn is run)
    line, fill = by_id(demo, tab.ids.SWEEP_STALE), by_id(demo, "shift-fill")
    after = [fn for fn in demo.fns.values() if fn.trigger_after == run_id]
    moved = [fn for fn in demo.fns.values() if any(t[0] == fill._id and t[1] == "input" for t in fn.targets)
             and line in fn.outputs]
    assert len(after) == 1 and len(moved) == 1, (after, moved)
    for fn in (*after, *moved):
        assert fn.outputs == [line] and fn.inputs[0] is fill, fn
    assert line in run.outputs, "the run's first panel clears the line over the sweep before it"


def test_the_line_under_the_contest_button_follows_the_steps_and_this_servers_forward(photo, built):
    """The button says "Run the contest" and no more; the line under it gives the views at the steps slider's value
    and their time at this server's last forward (it was "about 10 s for ViT-Ti" on the button, 62 s on a loaded
    machine). Moving the steps slider asks for it again (no queue: a stats read)."""
    from built_page import by_id

    wb, key = photo
    wb.handle(key).analysis()
    image_s = wb.forwards.stats().image_s
    for steps in (3, 12):
        line = tab.contest_cost(wb, key, float(steps))["curves_cost"]
        views = ev.contest_views(steps, len(contest.costly_maps(wb.handle(key))))
        assert f"At {steps} steps: \\~{views} views, \\~{max(1, round(views * image_s))} s here**" in line, line
    _, demo, _ = built
    assert by_id(demo, "curves-run").value == "Run the contest"
    cost = by_id(demo, "curves-cost")
    steps = by_id(demo, "curves-steps")
    moved = [fn for fn in demo.fns.values() if any(t[0] == steps._id and t[1] == "input" for t in fn.targets)]
    assert any(fn.outputs == [cost] for fn in moved), "the steps slider does not update the line under the button"
