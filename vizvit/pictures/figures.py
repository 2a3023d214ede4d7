"""plotly Figure builders. Pure: data in, Figure out."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from vizvit.errors import UserError
from vizvit.model.engine import Prediction

INSIDE_FROM = 0.5  # a bar this long (of the 0–100 % axis) shows its value inside
# Projector mode: the least font size of any chart text, in CSS px (issue 43: a lecture hall reads
# ≥ 24 px; render.MIN_TEXT_PX is the same for text drawn into pictures). web/projector.js applies it
# through plotly, so that plotly's automargins make room for the larger labels.
PROJECTOR_CHART_PX = 24
# A legend under the plot, placed against the figure's bottom edge ("container"): plotly then makes room
# for it below the x axis's title at any width. Placed against the plot ("paper", y = −0.25: a quarter of
# the plot's height), a phone's legend of 8 rows sat on the axis title (a walk-through at 390 px).
# No gap between legend groups (plotly's default 10 px a group took 70 of a phone's contest chart).
LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, tracegroupgap=0)
# How far the page's panel label reaches into a chart (page/web/style.css starts pictures this far down).
PANEL_LABEL_PX = 36
# plotly does not wrap a title: one line longer than a phone's chart (~360 px at 17 px) was cut short.
TITLE_CHARS = 40


def title_lines(text: str, top: int = 10) -> tuple[str, int]:
    """A chart title broken at spaces into lines of at most TITLE_CHARS characters (a word longer stays
    whole), and the top margin they need: 22 px a line plus `top`."""
    lines = textwrap.wrap(text, TITLE_CHARS, break_long_words=False, break_on_hyphens=False) or [""]
    return "<br>".join(lines), 22 * len(lines) + top


def percent(prob: float) -> str:
    """A probability as a percentage: one decimal from 1 % up ("82.2%"), two significant digits below it with
    their trailing zeros ("0.16%", "0.015%", "0.040%"), where one decimal would write "0.0%" (the chelsea cat's
    fifth class, hare, 0.015 %, read as no chance at all beside four bars that have one) or one digit ("0.2%"
    for 0.159 % beside "0.1%" for 0.149 %: read as twofold). Exactly 0 stays "0.0%"."""
    if 0 < prob < 0.01:
        return f"{two_digits(100 * prob)}%"
    return f"{prob:.1%}"


def two_digits(x: float) -> str:
    """A positive x below 10 at two significant digits, trailing zeros kept ("0.040", "0.99", "1.0"):
    `.2g` drops the zeros ("0.04"), and numpy's format_float_positional drops them too where the rounding
    carries into the next decade (0.00999 -> "0.01")."""
    decade = math.floor(math.log10(x))
    decimals = max(0, 1 - decade)
    text = f"{x:.{decimals}f}"
    if float(text) >= 10 ** (decade + 1) and decimals > 0:  # 0.00999 -> "0.0100": one digit too many
        text = f"{x:.{decimals - 1}f}"
    return text


def percents(probs: Sequence[float]) -> list[str]:
    """Probabilities written side by side (a top-5): percent() each, or, where two different ones would read
    alike, all at the fewest decimals (2 to 5) that tell every different pair apart: an untrained model's
    five bars of 0.19 % to 0.24 % all read "0.2%" beside bars of different lengths (a reviewer, Compare)."""
    text = [percent(p) for p in probs]
    for d in range(2, 6):
        if len({float(t[:-1]) for t in text}) == len(set(probs)):  # the numbers shown: "0.100%" is "0.1%"
            break
        text = [f"{100 * p:.{d}f}%" for p in probs]
    return text


NO_CHANGE = "0 pp"  # an exact 0: no sign, and unlike any change however small ("+0.0 pp" read as none)
SMALLEST_POINTS = 0.0001  # pp: below it, "<0.0001 pp" with the sign (float32 probabilities hold ~1e-7)


def signed_points(change: float, decimals: int = 1) -> str:
    """A change of a probability in percentage points, "+1.2 pp" / "-1.2 pp"; "0 pp" for none at all. A
    change that rounds to zero at `decimals` keeps two significant digits ("+0.03 pp", "-0.0041 pp"), as
    percent() does: masking one patch of chelsea moved a bar 0.03 points and its label read "+0.0 pp", no
    change, beside a bar that moved. Points, not "%": 82.2% → 80.1% is a fall of 2.1 points, which "-2.1%"
    would read as a fall of 2.1 % of 82.2 % (1.7 points)."""
    points = 100 * change
    if points == 0:
        return NO_CHANGE
    text = f"{points:+.{decimals}f}"
    if text.strip("-+0.") == "":  # rounds to zero: its size, not "+0.0"
        sign = "+" if points > 0 else "-"
        if abs(points) < SMALLEST_POINTS:
            return f"{sign}<{SMALLEST_POINTS:.4f} pp"
        text = sign + np.format_float_positional(abs(points), precision=2, unique=False, fractional=False,
                                                 trim="-")
    return text + " pp"


CHANGE_DECIMALS = 2  # the mask readout's probabilities: one way for every mask (prob_change)


def fixed_percent(prob: float, decimals: int = CHANGE_DECIMALS) -> str:
    """A probability at a fixed number of decimals of percent ("82.25%"), "<0.01%" for one above 0 that
    would read "0.00%" (no chance at all)."""
    text = f"{100 * prob:.{decimals}f}%"
    if 0 < prob and float(text[:-1]) == 0:
        return f"<{10.0 ** -decimals:.{decimals}f}%"
    return text


def prob_change(before: float, after: float, decimals: int = CHANGE_DECIMALS) -> str:
    """"82.25% → 80.10% (Δ -2.15 pp)": both numbers at the same fixed decimals for every change, and the Δ the
    difference of the two numbers shown. Where they are equal as shown but the probability moved, the Δ says
    its size (signed_points: "82.24% → 82.24% (Δ +0.001 pp)"), and only no move (or float noise) reads "0 pp". The
    decimals once grew with the change (one to three): the unmasked top-1 read "82.2%", "82.25%" and
    "82.245%" from one mask to the next, beside a top-1 written "81.8%" that the same line wrote "81.764%"."""
    delta = shown_change(before, after, decimals)
    return f"{fixed_percent(before, decimals)} → {fixed_percent(after, decimals)} (Δ {delta})"


# Two forwards of the same pixels need not give the same float32 probabilities: the page's Analysis (the forward
# queue's batch) and a shift's or a contest's lighter batched forward sum in other orders through every block. On the
# trained ViT-Ti (CPU), a flat grey photo shifted 3 px (every patch identical) moved its top-5 by up to 1.05e-6 of
# each probability, and the chart read "-<0.0001 pp" beside a cosine of 1.000. A move within FLOAT_NOISE of the
# larger probability (relative: a softmax's rounding scales with p) is read as none, ten times what was measured:
# each forward's own rounding is that size, so a real change that small could not be told from it anyway.
FLOAT_NOISE = 1e-5


def moved(before: float, after: float) -> bool:
    """Whether a probability changed by more than two forwards' float noise (FLOAT_NOISE, relative)."""
    return abs(after - before) > FLOAT_NOISE * max(abs(before), abs(after))


def shown_change(before: float, after: float, decimals: int = CHANGE_DECIMALS) -> str:
    """The change between two probabilities as fixed_percent writes them ("-2.15 pp"): the difference of the two
    numbers shown, or, where they are equal as shown, signed_points' size of the move ("0 pp" for none, and for a
    move within float noise: moved)."""
    b, a = (round(100 * x, decimals) for x in (before, after))
    if a == b:
        return signed_points(after - before, decimals) if moved(before, after) else NO_CHANGE
    return f"{a - b:+.{decimals}f} pp"


RIGHT_FOR_100 = 26  # px: half of "100%" at the charts' 16 px font, and a little air


TITLE_LINE_PX = 36  # the top margin a title's second line needs
THIRD_LINE_PX = 16  # and a further line this more: at 36 alone the third touched the first bar (test_top5.py)


def top5_bar(top5: Sequence[Prediction], baseline: dict[int, float] | None = None,
             title: str = "Top-5 predictions", decimals: int | None = None) -> go.Figure:
    """Horizontal bars, best on top. baseline: class index -> probability before a
    perturbation; when given, each bar's change is written at the chart's right edge. decimals: each value and
    change at these fixed decimals of percent (fixed_percent, shown_change), as a readout beside the chart writes
    them (the mask's, prob_change: its "82.25% → 82.29%" was "82.2%" and "+0.0 pp" on the bar); None: percents()."""
    labels = [_short(p.label) for p in top5][::-1]
    probs = [p.prob for p in top5][::-1]
    text = percents(probs) if decimals is None else [fixed_percent(p, decimals) for p in probs]
    # A long bar's value goes inside it, at its end: after an 80 % bar it ran past the chart's
    # right edge and was cut. A short bar's value stays outside, where half the axis is free.
    position = ["inside" if p >= INSIDE_FROM else "outside" for p in probs]
    data = [dict(type="bar", x=probs, y=labels, orientation="h", text=text, textposition=position,
                 insidetextanchor="end", insidetextfont=dict(color="#fff"), constraintext="none",
                 cliponaxis=False, marker=dict(color="#1f77b4"),
                 hovertemplate="%{y}: %{x:.4f}<extra></extra>")]
    # A second title line needs t=76: at 60 it touched the first bar's label (issue 51,
    # tests/page/test_top5.py); a further line TITLE_LINE_PX + THIRD_LINE_PX more, the chart as much taller (the bars
    # keep their room).
    lines = title.count("<br>")
    more = THIRD_LINE_PX * max(0, lines - 1)
    # The axis's last label ("100%") is centred on the plot's right edge: plotly hid it past the chart's div
    # (the page showed 0 % … 80 %). A right margin of half its width, and the label allowed to draw there.
    layout: dict[str, Any] = dict(title=dict(text=title),
                                  xaxis=dict(range=[0, 1], tickformat=".0%", ticklabeloverflow="allow"),
                                  font=dict(size=16), yaxis=dict(automargin=True),
                                  margin=dict(l=10, r=RIGHT_FOR_100, t=40 + TITLE_LINE_PX * lines + more, b=10),
                                  height=260 + (TITLE_LINE_PX * (lines - 1) + more if lines > 1 else 0),
                                  showlegend=False)
    if baseline is not None:
        # The change as the tick labels of a second y axis on the right: plotly measures those
        # (automargin) and makes room, as for the class names; "80.1% (-2.1%)" after the bar was cut.
        before = [baseline.get(p.index, 0.0) for p in top5]
        deltas = [(signed_points(p.prob - b) if moved(b, p.prob) else NO_CHANGE) if decimals is None
                  else shown_change(b, p.prob, decimals) for p, b in zip(top5, before)][::-1]
        data.append(dict(type="scatter", x=[0] * len(labels), y=labels, yaxis="y2", mode="markers",
                         marker=dict(opacity=0), hoverinfo="skip", showlegend=False))
        layout["yaxis2"] = dict(overlaying="y", side="right", automargin=True, tickmode="array",
                                tickvals=labels, ticktext=deltas, showgrid=False, zeroline=False,
                                categoryorder="array", categoryarray=labels, ticklen=0)
        layout["yaxis"]["categoryorder"] = "array"
        layout["yaxis"]["categoryarray"] = labels
    # One dict, unvalidated: plotly's validation is most of a small figure's cost, and
    # these properties are fixed (the browser tests render them). Labels measured by plotly
    # itself (automargin) at a readable size: page CSS that enlarged plotly's text after layout
    # clipped labels (issue 17).
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def _short(label: str, n: int = 32) -> str:
    first = label.split(",")[0]
    return first if len(first) <= n else first[: n - 1] + "…"


def token_scatter(xy: np.ndarray, color: np.ndarray, color_label: str, rows: np.ndarray, cols: np.ndarray,
                  tokens: np.ndarray, thumbs: Sequence[str], axis_titles: tuple[str, str], title: str,
                  colorscale: str = "Viridis", marked: np.ndarray | None = None, marked_name: str = "",
                  ranges: tuple[tuple[float, float], tuple[float, float]] | None = None) -> go.Figure:
    """2-D scatter of patch tokens (one point per patch).

    xy (P, 2); color, rows, cols, tokens (P,). thumbs: one image URI per patch, carried in
    customdata[4] for the page's hover script (plotly's hover labels cannot show images);
    customdata[3] is empty (it held the colour value, which the hover now reads from the marker).
    marked (P,) bool: points ringed in red as a second trace named marked_name (trace 0 keeps
    every patch, for the hover script). ranges: fixed (x, y) axis ranges.
    """
    # Plain lists: plotly validates and serialises them ~2× faster than an object array. The
    # colour is not in customdata (the hover reads marker.color): another colouring then changes
    # the marker and the hover text only, which the page can restyle without the thumbnails.
    custom = [[int(r), int(c), int(t), None, str(u)] for r, c, t, u in zip(rows, cols, tokens, thumbs)]
    # SVG Scatter, not Scattergl: WebGL is often missing in headless or remote browsers.
    # One dict, unvalidated: validating 196 thumbnails is most of the cost of a depth move.
    data = [dict(type="scatter", x=xy[:, 0], y=xy[:, 1], mode="markers", customdata=custom, showlegend=False,
                 marker=dict(color=color, colorscale=colorscale, size=9, line=dict(width=0.5, color="#333"),
                             colorbar=dict(title=dict(text=color_label, side="right"), thickness=12)),
                 hovertemplate=("patch (row %{customdata[0]}, col %{customdata[1]})<br>token %{customdata[2]}"
                                f"<br>{color_label}: " + "%{marker.color:.4~f}<extra></extra>"))]
    if marked is not None and np.any(marked):
        m = np.asarray(marked, bool).reshape(-1)
        data.append(dict(type="scatter", x=xy[m, 0], y=xy[m, 1], mode="markers", name=marked_name,
                         hoverinfo="skip", marker=dict(symbol="circle-open", size=17,
                                                       line=dict(width=2.5, color="rgb(230,30,30)"))))
    xaxis: dict[str, Any] = dict(title=dict(text=axis_titles[0]))
    yaxis: dict[str, Any] = dict(title=dict(text=axis_titles[1]))
    if ranges is not None:
        xaxis["range"], yaxis["range"] = list(ranges[0]), list(ranges[1])
    else:  # equal units on both axes only when plotly picks the ranges (fixed ones would fight it)
        yaxis.update(scaleanchor="x", scaleratio=1)
    return go.Figure(dict(
        data=data,
        layout=dict(title=dict(text=title), xaxis=xaxis, yaxis=yaxis,
                    legend=dict(orientation="h", x=0, y=-0.12, xanchor="left", yanchor="top"),
                    margin=dict(l=10, r=10, t=40, b=10), height=480, hovermode="closest",
                    uirevision="tokens")), _validate=False)


def charts_html(charts: Sequence[tuple[str, str]], title: str = "vizvit charts") -> str:
    """One standalone HTML page from plotly figures given as (name, figure JSON).

    plotly.js is embedded once, so the file works offline (slides, a lecture hall)."""
    import plotly.io as pio

    parts = []
    for i, (name, fig_json) in enumerate(charts):
        fig = pio.from_json(fig_json)
        parts.append(f"<h2>{name}</h2>" + fig.to_html(full_html=False, include_plotlyjs=(i == 0)))
    if not parts:
        raise UserError("There are no charts on this tab yet: upload a photo first.")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
            f"<body style='font-family:sans-serif'><h1>{title}</h1>{''.join(parts)}</body></html>")


CHARTS_DIR = Path(tempfile.gettempdir()) / "vizvit-charts"
CHARTS_MAX_AGE_S = 3600


def save_charts_html(charts: Sequence[tuple[str, str]], title: str, stem: str) -> Path:
    """charts_html written to a fresh file for download. Files older than an hour are
    removed first, so a public server's disk does not fill up with them. Two saves at once (or two
    servers sharing the folder) may both find an old file: the second's stat then finds it gone,
    which once failed that save with FileNotFoundError."""
    html = charts_html(charts, title)  # a refusal (no charts yet) before the disk is touched
    CHARTS_DIR.mkdir(exist_ok=True)
    now = time.time()
    for old in CHARTS_DIR.glob("*.html"):
        with contextlib.suppress(FileNotFoundError):  # removed by another save meanwhile
            if now - old.stat().st_mtime > CHARTS_MAX_AGE_S:
                old.unlink(missing_ok=True)
    fd, name = tempfile.mkstemp(dir=CHARTS_DIR, prefix=f"{stem}-", suffix=".html")
    with os.fdopen(fd, "w") as f:
        f.write(html)
    return Path(name)


@contextlib.contextmanager
def captured_stderr(into: list[str]) -> Iterator[None]:
    """File descriptor 2 of this process, and so of the browser it starts, into a temporary file;
    its text is appended to `into` on the way out. Process-wide: for the command line only (no
    server calls it), around a step whose noise must not reach the user's terminal."""
    sys.stderr.flush()
    saved, saved_obj = os.dup(2), sys.stderr
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        # sys.stderr too: where it is not fd 2 (a notebook, a test's capture), Python's own lines still
        # land here.
        sys.stderr = text = open(os.dup(f.fileno()), "w", encoding="utf-8", errors="replace")
        try:
            yield
        finally:
            text.close()
            sys.stderr = saved_obj
            os.dup2(saved, 2)
            os.close(saved)
            f.seek(0)
            into.append(f.read().decode("utf-8", errors="replace"))


_LOG = logging.getLogger(__name__)


def charts_png(charts: dict[str, go.Figure], folder: Path) -> list[str]:
    """Render plotly charts to folder/<name>.png in one browser session (kaleido + a
    Chrome/Chromium on the machine). Returns the file names written, [] if that is missing.

    Kaleido's browser channel (choreographer) sometimes logs a traceback it then ignores ("JSONError
    decoding message. Ignoring": one run in three on ViT-B/16), and Chromium prints its own lines:
    everything written to stderr meanwhile is captured. When every PNG is written it is only logged
    at DEBUG (logger vizvit.pictures.figures); when a PNG is missing or kaleido raises, it is logged as a
    WARNING with the error, so a real failure still reaches the terminal."""
    try:
        import kaleido  # noqa: F401
        import plotly.io as pio
    except ImportError:  # no kaleido: the HTML copy still has every chart (summary.json: charts_as_png)
        return []
    names = list(charts)
    said: list[str] = []
    missing = names
    try:
        # Twice at most: on a busy machine kaleido's session now and then leaves one chart unwritten
        # (the export's top-5 chart, once in a test run), and that chart alone written again is.
        for _ in range(2):
            with captured_stderr(said):
                pio.write_images([charts[n] for n in missing], [folder / f"{n}.png" for n in missing])
            missing = [n for n in names if not (folder / f"{n}.png").is_file()]
            if not missing:
                break
    except Exception as e:  # noqa: BLE001 - no browser, a crash: the HTML copy still has every chart
        _LOG.warning("Charts as PNG failed (%s: %s); charts.html has every chart. Kaleido's output:\n%s",
                     type(e).__name__, e, "".join(said).strip() or "(none)")
        return []
    if missing:
        _LOG.warning("Charts as PNG: %s not written; charts.html has every chart. Kaleido's output:\n%s",
                     ", ".join(missing), "".join(said).strip() or "(none)")
    elif "".join(said).strip():
        _LOG.debug("Kaleido's output while every chart was written:\n%s", "".join(said))
    return [f"{n}.png" for n in names if n not in missing]
