"""The charts (vizvit/pictures/figures.py): the top-5 bars and the token scatter on constructed numbers, and the
standalone HTML page that keeps their data."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from vizvit.model.engine import Prediction
from vizvit.pictures import figures


def test_charts_html_is_standalone_and_keeps_the_data():
    from vizvit.pictures.figures import charts_html

    fig = go.Figure(go.Bar(x=[0.25, 0.75], y=["cat", "dog"]))
    html = charts_html([("Top-5", fig.to_json()), ("again", fig.to_json())], "test")
    assert html.count("<h2>") == 2 and "0.75" in html and "dog" in html
    assert html.count("plotly.js v") <= 2 and len(html) > 1_000_000  # plotly.js embedded once
    with pytest.raises(ValueError, match="no charts"):
        charts_html([])


def test_a_save_survives_an_old_file_another_save_removed_meanwhile(tmp_path, monkeypatch):
    """The full suite, two servers sharing /tmp: both found an hour-old chart file, one removed it,
    the other's stat raised FileNotFoundError and its save answered "Something went wrong"."""
    import os
    import time
    from pathlib import Path

    monkeypatch.setattr(figures, "CHARTS_DIR", tmp_path)
    old = tmp_path / "vizvit-old.html"
    old.write_text("old")
    os.utime(old, (time.time() - 2 * figures.CHARTS_MAX_AGE_S,) * 2)
    gone = tmp_path / "vizvit-gone.html"  # listed, then removed by another save before its stat
    real_glob = Path.glob
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter([*real_glob(self, pattern), gone]))
    fig = go.Figure(go.Bar(x=[1], y=["cat"]))
    path = figures.save_charts_html([("Top-5", fig.to_json())], "t", "vizvit-test")
    assert path.parent == tmp_path and path.read_text().startswith("<!doctype html>")
    assert not old.exists(), "the hour-old file is still removed"
    with pytest.raises(ValueError, match="no charts"):  # refused before the disk is touched
        figures.save_charts_html([], "t", "vizvit-test")


def top5():
    from vizvit.model.engine import Prediction

    return [Prediction(281, "tabby, tabby cat", 0.8), Prediction(282, "tiger cat", 0.1),
            Prediction(285, "Egyptian cat", 0.05), Prediction(7, "a label far longer than thirty-two characters", 0.03),
            Prediction(1, "goldfish", 0.02)]


def test_top5_bars_best_on_top_with_their_values_inside_a_long_bar_only():
    fig = figures.top5_bar(top5())
    bars = fig.data[0]
    # plotly draws the first category at the bottom: the best class is the last one given
    assert list(bars.x) == [0.02, 0.03, 0.05, 0.1, 0.8]
    # a label's first name only (ImageNet's synonyms after the comma), cut to 32 characters
    assert list(bars.y) == ["goldfish", "a label far longer than thirty-…", "Egyptian cat", "tiger cat", "tabby"]
    assert list(bars.text) == ["2.0%", "3.0%", "5.0%", "10.0%", "80.0%"]
    assert list(bars.textposition) == ["outside"] * 4 + ["inside"]  # 80 % >= INSIDE_FROM (50 %)
    assert list(fig.layout.xaxis.range) == [0, 1] and len(fig.data) == 1


def test_a_tiny_top5_probability_is_not_written_as_zero():
    """chelsea's fifth class on the trained ViT-Ti, hare, has p = 0.00015: its bar read "0.0%"."""
    from vizvit.model.results import Prediction

    top = [Prediction(285, "Egyptian cat", 0.8225), Prediction(281, "tabby", 0.0934),
           Prediction(282, "tiger cat", 0.077), Prediction(287, "lynx", 0.0046), Prediction(331, "hare", 0.00015)]
    assert list(figures.top5_bar(top).data[0].text) == ["0.015%", "0.46%", "7.7%", "9.3%", "82.2%"]
    assert figures.percent(0.0) == "0.0%" and figures.percent(0.001) == "0.10%" and figures.percent(0.00096) == "0.096%"


@pytest.mark.parametrize("prob, text", [
    (0.00159, "0.16%"), (0.00149, "0.15%"),  # one digit read "0.2%" beside "0.1%": twofold for 7 % apart
    (0.0004035, "0.040%"),  # .2g dropped the zero: "0.04%"
    (0.0046, "0.46%"), (0.0099, "0.99%"), (0.00999, "1.0%"), (0.0000999, "0.010%"), (0.00005, "0.0050%"),
    (0.01, "1.0%"), (0.0234, "2.3%"), (0.822, "82.2%"),  # from 1 % up: one decimal, as before
])
def test_a_probability_below_one_percent_keeps_two_significant_digits(prob, text):
    """Written by hand: two significant digits below 1 %, trailing zeros kept; 0.00999 rounds up to 1.0 %."""
    assert figures.percent(prob) == text


def test_top5_bars_of_different_lengths_never_read_alike():
    """An untrained model's five bars, 0.19 % to 0.24 % (the reviewer's Compare side B), all read "0.2%": the
    labels take the fewest decimals that tell every different pair apart; equal ones stay equal."""
    from vizvit.model.results import Prediction

    top = [Prediction(i, f"c{i}", p) for i, p in enumerate([0.0024, 0.0022, 0.0021, 0.0019, 0.0019])]
    assert list(figures.top5_bar(top).data[0].text) == ["0.19%", "0.19%", "0.21%", "0.22%", "0.24%"]  # bottom up
    assert figures.percents([0.00212, 0.00214]) == ["0.212%", "0.214%"]
    assert figures.percents([0.822, 0.093]) == ["82.2%", "9.3%"]  # apart already: as percent() writes them
    # around 0.1 % (1/1000 classes: where an untrained model's top-5 sits) "0.100%" and "0.1%" are one number
    # (a reviewer: [..., '0.100%', '0.1%'])
    near = figures.percents([0.00104, 0.00102, 0.00101, 0.00100, 0.000999])
    assert near == ["0.1040%", "0.1020%", "0.1010%", "0.1000%", "0.0999%"], near


def test_top5_bars_write_each_change_from_the_baseline_on_the_right():
    before = {281: 0.9, 282: 0.05, 285: 0.05, 7: 0.0}  # class 1 was not in the baseline: +2.0 points
    fig = figures.top5_bar(top5(), baseline=before)
    assert list(fig.layout.yaxis2.ticktext) == ["+2.0 pp", "+3.0 pp", "0 pp", "+5.0 pp", "-10.0 pp"]
    assert fig.layout.yaxis2.side == "right" and list(fig.layout.yaxis2.tickvals) == list(fig.data[0].y)


def test_the_token_scatter_keeps_one_point_per_patch_and_rings_the_marked_ones():
    xy = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    marked = np.array([False, True, True])
    fig = figures.token_scatter(xy, np.array([0.1, 0.2, 0.3]), "norm", np.array([0, 0, 1]), np.array([0, 1, 0]),
                                np.array([1, 2, 3]), ["a", "b", "c"], ("x", "y"), "tokens", marked=marked,
                                marked_name="artifacts")
    every, ring = fig.data
    assert list(every.x) == [0.0, 2.0, 4.0] and list(every.y) == [1.0, 3.0, 5.0]
    assert [list(c) for c in every.customdata] == [[0, 0, 1, None, "a"], [0, 1, 2, None, "b"], [1, 0, 3, None, "c"]]
    assert list(ring.x) == [2.0, 4.0] and list(ring.y) == [3.0, 5.0] and ring.name == "artifacts"
    assert fig.layout.yaxis.scaleanchor == "x"  # equal units while plotly picks the ranges
    fixed = figures.token_scatter(xy, np.zeros(3), "norm", np.zeros(3), np.zeros(3), np.zeros(3), ["", "", ""],
                                  ("x", "y"), "t", marked=np.zeros(3, bool), ranges=((-1, 5), (0, 6)))
    assert len(fixed.data) == 1 and list(fixed.layout.xaxis.range) == [-1, 5] and fixed.layout.yaxis.scaleanchor is None


def _noisy_writer(fail: bool):
    """plotly.io.write_images as kaleido's browser channel behaved in one export of three: a traceback on
    stderr (from this process's logging and from a child's fd 2), then the PNGs, or a failure."""
    import subprocess
    import sys

    def write_images(figs, paths):
        print("Traceback (most recent call last):\nchoreographer JSONError decoding message. Ignoring", file=sys.stderr)
        subprocess.run([sys.executable, "-c", "import os; os.write(2, b'chromium: [ERROR] a stray line\\n')"])
        if fail:
            raise RuntimeError("the browser closed")
        for p in paths:
            with open(p, "wb") as f:
                f.write(b"\x89PNG")
    return write_images


def test_kaleidos_noise_stays_out_of_the_terminal_when_the_charts_are_written(tmp_path, capfd, caplog, monkeypatch):
    import plotly.io as pio

    monkeypatch.setattr(pio, "write_images", _noisy_writer(fail=False))
    with caplog.at_level("DEBUG", logger="vizvit.pictures.figures"):
        assert figures.charts_png({"a": go.Figure(), "b": go.Figure()}, tmp_path) == ["a.png", "b.png"]
    out, err = capfd.readouterr()
    assert "JSONError" not in err and "stray line" not in err and not out
    kept = [r for r in caplog.records if r.name == "vizvit.pictures.figures"]
    assert kept and all(r.levelname == "DEBUG" for r in kept) and "stray line" in kept[0].getMessage()


def test_a_real_kaleido_failure_still_reaches_the_terminal_with_what_it_said(tmp_path, capfd, caplog, monkeypatch):
    import plotly.io as pio

    monkeypatch.setattr(pio, "write_images", _noisy_writer(fail=True))
    with caplog.at_level("WARNING", logger="vizvit.pictures.figures"):
        assert figures.charts_png({"a": go.Figure()}, tmp_path) == []
    (warning,) = [r for r in caplog.records if r.name == "vizvit.pictures.figures"]
    text = warning.getMessage()
    assert warning.levelname == "WARNING" and "the browser closed" in text and "stray line" in text
    assert "charts.html has every chart" in text


def test_a_chart_kaleido_left_unwritten_is_written_again_and_one_left_twice_is_said(tmp_path, caplog, monkeypatch):
    import plotly.io as pio

    asked: list[list[str]] = []

    def drops(figs, paths, **kw) -> None:  # kaleido's busy-machine flake: the first chart asked is not written
        asked.append([Path(p).stem for p in paths])
        for p in paths[1:]:
            Path(p).write_bytes(b"\x89PNG")

    monkeypatch.setattr(pio, "write_images", drops)
    with caplog.at_level("WARNING", logger="vizvit.pictures.figures"):
        assert figures.charts_png({"a": go.Figure(), "b": go.Figure()}, tmp_path) == ["b.png"]
    assert asked == [["a", "b"], ["a"]]  # again, that chart alone, once
    assert "a not written" in caplog.records[-1].getMessage()
    asked.clear()

    def drops_once(figs, paths, **kw) -> None:
        asked.append([Path(p).stem for p in paths])
        for p in (paths[1:] if len(asked) == 1 else paths):
            Path(p).write_bytes(b"\x89PNG")

    monkeypatch.setattr(pio, "write_images", drops_once)
    assert figures.charts_png({"c": go.Figure(), "d": go.Figure()}, tmp_path) == ["c.png", "d.png"]
    assert asked == [["c", "d"], ["c"]]


@pytest.mark.parametrize(("change", "shown"), [(0.0123, "+1.2 pp"), (-0.0123, "-1.2 pp"), (0.0, "0 pp"),
                                              (-0.0, "0 pp"), (-0.0006, "-0.1 pp"), (-0.821, "-82.1 pp")])
def test_a_change_is_in_points_and_never_minus_zero(change, shown):
    """The top-5 charts' Δ labels: "-0.0%" read as a drop that is not there (a student's walk); a difference of
    two probabilities is in percentage points ("-2.1%" of 82.2 % would be 1.7 points)."""
    assert figures.signed_points(change) == shown


# Written by hand: a change of p that one decimal of points rounds to zero, and its size in points (100 × Δp)
@pytest.mark.parametrize(("before", "after", "shown"), [
    (0.82245, 0.82275, "+0.03 pp"),  # chelsea's top-1 with one patch masked: its label read "+0.0 pp"
    (0.5, 0.49996, "-0.004 pp"), (0.0001, 0.00050, "+0.04 pp"), (0.3, 0.300041, "+0.0041 pp"),
    (0.7, 0.7 + 1e-7, "+<0.0001 pp"), (0.7, 0.7 - 1e-7, "-<0.0001 pp"), (0.25, 0.25, "0 pp")])
def test_a_change_too_small_for_one_decimal_says_its_size_and_only_none_says_zero(before, after, shown):
    """Masking one patch moved chelsea's top-1 bar by 0.03 points and the chart wrote "+0.0 pp" beside it: read
    as no change. Two significant digits, as figures.percent writes a small probability; "0 pp" is kept for a
    probability that did not move at all, and below 0.0001 pp (float32 probabilities hold ~1e-7) the label says
    so rather than print digits of rounding."""
    assert figures.signed_points(after - before) == shown


# Written by hand: two decimals of percent for every change, the Δ the difference of the numbers shown.
@pytest.mark.parametrize("before, after, shown", [
    (0.8224, 0.8215, "82.24% → 82.15% (Δ -0.09 pp)"),
    (0.822, 0.801, "82.20% → 80.10% (Δ -2.10 pp)"),  # it read "82.2% → 80.1%" here, "82.24%" above
    (0.5, 0.5, "50.00% → 50.00% (Δ 0 pp)"),  # no change at all: equal as shown, and the Δ says so
    (0.10049, 0.10051, "10.05% → 10.05% (Δ +0.002 pp)"),  # it read "10.049% → 10.051%"
    (0.35, 0.00002, "35.00% → <0.01% (Δ -35.00 pp)"),  # not "0.00%", no chance at all
])
def test_a_change_is_the_difference_of_the_two_numbers_it_shows(before, after, shown):
    text = figures.prob_change(before, after)
    assert text == shown
    b, a, d = (float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?(?=%| pp)", text))
    if a != b and "<" not in text:  # "<0.01%" is below the number it writes
        assert round(a - b, 2) == round(d, 2)


def test_a_change_writes_its_numbers_the_same_way_for_every_change():
    """The Experiments tab's mask readout, one mask after another on chelsea: the unmasked top-1 (0.82245) read
    "82.2%", "82.25%" and "82.245%" as the decimals grew with each change's size. Each number is now written
    with two decimals whatever the change; one that equal numbers hide is said in the Δ alone."""
    for after, shown in [(0.8166, "82.25% → 81.66% (Δ -0.59 pp)"), (0.817640, "82.25% → 81.76% (Δ -0.49 pp)"),
                         (0.82224, "82.25% → 82.22% (Δ -0.03 pp)"), (0.822449, "82.25% → 82.24% (Δ -0.01 pp)"),
                         (0.82246, "82.25% → 82.25% (Δ +0.001 pp)")]:
        assert figures.prob_change(0.82245, after) == shown


# Written by hand: moves of a probability p within 1e-5 × p (float32 noise of two forwards of the same pixels: up to
# 1.05e-6 × p measured, the trained ViT-Ti on a flat grey photo shifted 3 px) and moves just past it.
@pytest.mark.parametrize(("before", "after", "shown"), [
    (0.02478761, 0.02478761 + 2.6e-8, "0 pp"),  # the grey photo's top-1, as measured: it read "+<0.0001 pp"
    (0.02086629, 0.02086629 - 7.5e-9, "0 pp"),
    (0.82245, 0.822451, "0 pp"),  # 1.2e-6 of p: it read "+0.0001 pp"
    (1e-6, 1e-6 + 5e-12, "0 pp"),  # relative: a tiny probability's noise is tinier
    (0.02478761, 0.02478761 + 3e-6, "+0.0003 pp"),  # 1.2e-4 of p: a change, said with its size
    (0.82245, 0.82246, "+0.001 pp"),
    (1e-6, 1.1e-6, "+<0.0001 pp")])
def test_a_move_within_float_noise_is_no_change(before, after, shown):
    """Every patch of the shifted grey photo was the photo's own (cosine 1.000), yet its chart read "−<0.0001 pp":
    the page's forward and the shift's batched one round differently. Within the noise, "0 pp", in both ways a
    chart writes a change (fixed decimals beside a readout, or the change alone)."""
    assert figures.shown_change(before, after) == shown
    top = [Prediction(7, "cat", after)]
    assert list(figures.top5_bar(top, {7: before}, decimals=2).layout.yaxis2.ticktext) == [shown]
    free = figures.top5_bar(top, {7: before}).layout.yaxis2.ticktext[0]
    assert (free == "0 pp") == (shown == "0 pp"), free
