"""The "Inside" tab: perturb the model itself while the top-5 moves.

Logit lens: the tokens the head reads, after every block, read through the final layernorm and head
(vizvit.readings.lens_maths; from the cached Analysis, no forward). Head ablation: switch heads off (the
session's PhotoKey carries the Ablation, so every tab shows the ablated model; one forward
per change, cached per ablation set). Which heads matter: the drop of the top-1 probability
when one head alone is switched off (the mode radio: zeroed or set to its mean), L·H forwards batched,
streamed and cached per photo and mode.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import cv2
import numpy as np
import plotly.graph_objects as go
import torch

from vizvit.classroom import claims
from vizvit.errors import UserError
from vizvit.model.ablation import Ablation, format_heads, parse_heads
from vizvit.model.engine import top_predictions
from vizvit.model.models import Geometry, VitModel
from vizvit.pictures import figures, render
from vizvit.readings import heads
from vizvit.readings.lens import lens_of
from vizvit.session import Photo, PhotoKey
from vizvit.views import flip
from vizvit.views.common import photo_status, top5_figure
from vizvit.vocab import HEADS_EXAMPLE

LENS_TEXT = """**Logit lens.** Each row is a depth l = 0 (after the embedding stage) … L (after the last block): the
model's **final** layernorm and classifier applied to the hidden states there, read as the head reads the last block's
([CLS] for a ViT; DeiT: [CLS] and [DIST]; BEiT: the patch mean; a DINOv2 classifier: [CLS] ⊕ the patch mean). It is a
readout through a head trained to read depth L only: early rows show how far those tokens already point at a class in
the final head's coordinates, not what the layer "thinks". The last row is the model's own prediction. **Click a row**
for its full top-5. No new forward."""

HEADS_TYPED = HEADS_EXAMPLE.replace(",", ", ")  # the example as a visitor types it in the heads box
ABLATE_TEXT = f"""**Head ablation.** Rows are layers (L1 at the top), columns heads, both counted from 1. A head's
output is its slice of the concatenated head outputs, before the output projection mixes them: *zero* sets it to 0,
*mean* replaces it by its mean over the photo's tokens. **Click a cell** of the layers × heads grid to switch that head
off or on; click a row's label (L3) for the whole layer, or type heads as layer.head counted from 1 (`{HEADS_TYPED}`;
`7` = all of layer 7). The top-5 shows the change from the intact model, and **every tab shows the ablated model**
while heads are off (one forward per change)."""

IMPORTANCE_TEXT = """**Which heads matter.** For each (layer, head), the drop of the top-1 probability when
that head alone is switched off the way the radio above says (zeroed, or set to its mean): one forward per head,
batched. Red: the prediction needs that head;
blue: it does better without it. Cached per photo; it can be stopped."""

NO_LENS_TEXT = ("**No logit lens for this model:** it has no classifier, so there is no final head to read "
                "the layers through.")
# Short: long headers broke mid-word ("probabi|lity") at 1366 px and pushed the data off a phone.
LENS_HEADERS = ["depth", "top-1 here", "its p", "final top-1: p", "final top-1: rank"]
# The lens table's height on the page: room for 25 rows (ViT-L's depths 0..24) at two lines each,
# so depth L (the model's own prediction) is never hidden in a scroll box (Gradio's default: 500 px).
LENS_TABLE_PX = 2000
# The heat strip's colour is log10 p, floored here: on the trained ViT-Ti, p(final top-5) is
# 1e-5 … 1e-2 at depths 0-9 and 0.8 at depth 12, so a linear 0..0.8 scale gave depths 0-9 one colour.
LENS_LOG_FLOOR = -6.0
# The ablation grid: row labels "L12", column labels "12" (head numbers), at the size a lecture
# hall reads (render.TEXT_PX); cells wide enough for a two-digit head number.
CELL = max(44, render.text_size("12")[0] + 12)  # px per head cell
LEFT = render.text_size("L24")[0] + 14  # px for the row labels
TOP = render.text_size("0")[1] + 20  # px for the column labels
OFF_COLOR = (40, 40, 40)  # a switched-off head's frame and cross
ON_COLOR = (235, 235, 235)  # a cell's fill without importance to show
OFF_FRAME = 2  # px: the frame round a switched-off head's cell
OFF_INSET = 13  # px from the cell's corner to its cross's ends: the colour shows round the cross
# The grid's label says what its colours are: "which heads matter" draws into this grid, ~1,600 px above
# its button on a 390 px phone, so a label still saying only "click to switch heads off" hid the result
# (a walk-through). It goes back when the grid has no importance to show (a new photo).
GRID_LABEL = "Layers × heads: click to switch heads off"
GRID_LABEL_IMPORTANCE = "Layers × heads: each head's importance (top-1 drop) · click to switch heads off"
# Where the run's result is drawn, as the text under its button says it. Not a "#ablate-grid" link: the
# page's <base href> resolves it to "/#ablate-grid", which reloads a page opened with a query (a deep link).
GRID_PLACE = "**the Layers × heads grid above**"


@dataclass(frozen=True)
class LensPanel:
    rows: list[list[str]]  # LENS_HEADERS, one row per depth
    figure: go.Figure  # heat strip: depth × the final top-5 classes
    text: str


@dataclass(frozen=True)
class AblationPanel:
    grid: np.ndarray  # (h, w, 3) uint8 layers × heads, ablated cells framed and crossed over their colour
    label: str  # the grid's label: GRID_LABEL, or GRID_LABEL_IMPORTANCE when its cells show importance
    top5: go.Figure | None  # the ablated model's top-5 with its change from the intact model
    text: str


# ------------------------------------------------------------------ logit lens
def lens_panel(ph: Photo) -> LensPanel:
    vm = ph.vm
    if not vm.has_classifier:
        raise UserError("This model has no classifier, so there is no final head to read the layers "
                        "through: the logit lens needs one (DINO-style models have none).")
    ln = lens_of(ph)
    final = vm.labels[ln.final_class].split(",")[0]
    # A head that reads learned tokens alone ([CLS], DeiT's [DIST], CLIP's class embedding) reads at
    # depth 0 what no patch has reached yet: that row is the model's, not the photo's (a reviewer saw
    # "crayfish 5.0%" on every photo). A head reading the patches (BEiT's mean, DINOv2's, SigLIP's
    # pooling) sees the photo from depth 0 on.
    blind = vm.family.pooling in ("token", "projection")
    rows = []
    for depth, p in enumerate(ln.probs):
        top = int(p.argmax())
        # Short: a long first cell made the depth column a phone's whole width (the text says why depth 0
        # is the same on every photo).
        rows.append([f"{depth}" + (" (emb.)" if depth == 0 else ""), vm.labels[top].split(",")[0],
                     f"{p[top]:.1%}", figures.percent(ln.final_prob[depth]), str(int(ln.final_rank[depth]))])
    top5 = np.argsort(-ln.probs[-1])[:5]
    fig = lens_figure(ln.probs[:, top5], [vm.labels[i].split(",")[0][:24] for i in top5])
    return LensPanel(rows, fig, lens_text(final, ln.final_prob, ln.final_rank, blind))


def lens_text(final: str, prob: np.ndarray, rank: np.ndarray, blind: bool = False) -> str:
    """The final top-1's path through the depths (prob, rank (L+1,)), from the numbers themselves.
    blind: the head reads learned tokens alone, so depth 0 is the same for every photo (said)."""
    last = len(rank) - 1
    first = next((d for d in range(len(rank)) if (rank[d:] == 1).all()), last)
    top5 = next((d for d in range(len(rank)) if (rank[d:] <= 5).all()), last)
    stay = ("only at the last depth" if first == last else f"from depth **{first}** on")
    before = (f" (depth {last - 1}: rank {int(rank[last - 1])}, {figures.percent(prob[last - 1])})"
              if first == last and last > 0
              else "")
    # "From depth F on" is where it stays top-1; a top-1 it held before F and lost is said too, or
    # "only at the last depth" would deny what the table's earlier rows show.
    lost = [d for d in range(first) if rank[d] == 1]
    earlier = (f"; it was top-1 earlier too, at depth{'s' if len(lost) > 1 else ''} "
               f"{', '.join(str(d) for d in lost)}, and lost it again" if lost else "")
    stay = stay.replace("only at the last depth", "for good only at the last depth") if lost else stay
    # The readout at depth 0 is the same on every photo; this class's rank in it is not (it follows the final
    # class: "rank 381" beside "the same on every photo" read as if the rank were, a walk-through).
    zero = (" (before any block, where the readout is the same on every photo since the head reads no patch yet: "
            "only which class is this photo's final one differs)" if blind else "")
    # Its top 5 before it stays there, said as the top-1 is ("from depth 12 on" read as "first at 12" beside
    # a table with rank 1 at depth 6: a walk-through).
    in5 = [d for d in range(top5) if rank[d] <= 5]
    was5 = f" (and at depth{'s' if len(in5) > 1 else ''} {_runs(in5)} before, then out of it)" if in5 else ""
    return (f"Final top-1: **{final}** ({prob[last]:.1%}). Read through the final head it has rank {int(rank[0])} "
            f"(p = {figures.percent(prob[0])}) at depth 0{zero}, "
            f"is in the readout's top 5 from depth **{top5}** on{was5}, "
            f"and its top-1 {stay}{before}{earlier}.")


def _runs(depths: list[int]) -> str:
    """Increasing depths [5, 6, 7, 8, 10] -> "5–8, 10" (a run: depth − its index is constant)."""
    runs = [[d for _, d in run] for _, run in groupby(enumerate(depths), lambda kd: kd[1] - kd[0])]
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def lens_log_range(probs: np.ndarray) -> tuple[float, float]:
    """(zmin, zmax) of the strip's log10 p colour: from the whole decade below the smallest value,
    floored at LENS_LOG_FLOOR (a probability below 1e-6 reads as "none" anyway), to 0 (p = 1)
    always, so the brightest colour means a confident readout on every model (random weights'
    p ≈ 0.006 stays mid-scale instead of turning yellow)."""
    logp = np.log10(np.clip(probs, 10.0 ** LENS_LOG_FLOOR, 1.0))
    return min(-1.0, max(LENS_LOG_FLOOR, float(np.floor(logp.min())))), 0.0


def lens_figure(probs: np.ndarray, names: list[str]) -> go.Figure:
    """(L+1, k) probabilities of k classes per depth -> heat strip coloured by log10 p (the bar's
    ticks read as probabilities), exact p on hover."""
    lo, hi = lens_log_range(probs)
    logp = np.log10(np.clip(probs, 10.0 ** LENS_LOG_FLOOR, 1.0))
    ticks = list(range(int(lo), int(hi) + 1))
    # Every tick a percentage ("1e-3" beside "1%" read as 1e-3 %: a walk-through)
    text = [f"{100 * 10.0 ** t:.{max(0, -t - 2)}f}%" for t in ticks]
    title, top = figures.title_lines("Readout of the final top-5 classes at each depth")
    sub = textwrap.wrap("colour: log₁₀ of the probability, so the early depths' small values differ too",
                        figures.TITLE_CHARS + 12)  # a <sub> line's letters are smaller
    head = figures.PANEL_LABEL_PX + top + 18 * len(sub)  # the label, the title's lines, the sub's
    return go.Figure(dict(
        data=[dict(type="heatmap", z=logp.tolist(), customdata=probs.tolist(), x=names,
                   y=list(range(len(probs))), colorscale="Viridis", zmin=lo, zmax=hi,
                   hovertemplate="depth %{y}, %{x}: p = %{customdata:.2e}<extra></extra>",
                   # the title along the bar: above it, it overlapped the top tick's "100%" (a reviewer)
                   colorbar=dict(title=dict(text="p (log scale)", side="right"), tickvals=ticks, ticktext=text))],
        # Lines a phone's chart holds (figures.title_lines): one line each was cut at 390 px. Laid from the
        # top down, below the panel label (placed by plotly, 4 lines overlapped the plot).
        layout=dict(title=dict(text=title + "".join(f"<br><sub>{line}</sub>" for line in sub), yref="container",
                               y=1, yanchor="top", pad=dict(t=figures.PANEL_LABEL_PX)),
                    # title.text: unvalidated, a plain string title reached the page's plotly.js, which
                    # dropped it (rows 0…12 unnamed: a walk-through)
                    yaxis=dict(title=dict(text="depth (0 = embedding)"), autorange="reversed", dtick=1),
                    margin=dict(l=10, r=10, t=head, b=10), height=300 + head)),
        _validate=False)


def depth_top5(ph: Photo, depth: int) -> go.Figure:
    """The full top-5 of the readout at one depth."""
    ln = lens_of(ph)
    if not 0 <= depth < len(ln.probs):
        raise UserError(f"Depth must be 0..{len(ln.probs) - 1}.")
    preds = top_predictions(torch.from_numpy(ln.probs[depth]), ph.vm.labels)
    return figures.top5_bar(preds, title=f"Readout at depth {depth} (logit lens)")


# ------------------------------------------------------------------ ablation grid
def grid_label(importance: bool) -> str:
    """The grid's label: whether its cells show each head's importance (a finished or running run)."""
    return GRID_LABEL_IMPORTANCE if importance else GRID_LABEL


def grid_size(g: Geometry) -> tuple[int, int]:
    return TOP + g.num_layers * CELL, LEFT + g.num_heads * CELL


def ablation_grid(g: Geometry, ablation: Ablation, importance: np.ndarray | None = None) -> np.ndarray:
    """(h, w, 3) uint8: one cell per (layer, head), rows = layers from 1 (top). Cells are coloured by
    importance when given (red: switching it off lowers the top-1, blue: raises it), else light grey;
    a switched-off head keeps its colour under a thin frame and cross (off_mark)."""
    h, w = grid_size(g)
    img = np.full((h, w, 3), 255, np.uint8)
    if importance is not None:
        lim = max(float(np.nanmax(np.abs(importance))), 1e-6)
        colours = render.colorize(np.nan_to_num(importance), "RdBu_r", -lim, lim)  # (L, H, 3)
    off = set(ablation.heads)
    for l in range(g.num_layers):
        y0 = TOP + l * CELL
        render.put_text(img, f"L{l + 1}", (4, y0 + (CELL + render.text_size("0")[1]) // 2))
        for hd in range(g.num_heads):
            x0 = LEFT + hd * CELL
            colour = tuple(int(c) for c in colours[l, hd]) if importance is not None else ON_COLOR
            cv2.rectangle(img, (x0 + 1, y0 + 1), (x0 + CELL - 2, y0 + CELL - 2), colour, -1)
            if (l, hd) in off:
                off_mark(img, x0, y0)
    for hd in range(g.num_heads):
        w = render.text_size(str(hd + 1))[0]
        render.put_text(img, str(hd + 1), (LEFT + hd * CELL + (CELL - w) // 2, TOP - 10))
    if importance is not None:
        img = render.with_colorbar(img, "RdBu_r", -lim, lim)
    return img


def off_mark(img: np.ndarray, x0: int, y0: int) -> None:
    """A switched-off head's mark over its cell at (x0, y0), drawn in place: a dark frame and a thin dark
    cross edged in white (it reads on the bar's dark red and blue ends and on its white middle), leaving
    most of the cell its colour. A dark fill hid the importance of the very head the text named (chelsea,
    3.1 off: "Largest drop: head 3.1 (+0.816)" beside a black cell)."""
    a, b = OFF_INSET, CELL - 1 - OFF_INSET
    for width, colour in ((3, (255, 255, 255)), (1, OFF_COLOR)):  # the white edge first, the dark line on it
        cv2.line(img, (x0 + a, y0 + a), (x0 + b, y0 + b), colour, width, cv2.LINE_AA)
        cv2.line(img, (x0 + a, y0 + b), (x0 + b, y0 + a), colour, width, cv2.LINE_AA)
    e = 1 + OFF_FRAME // 2  # a frame's line is centred on its rectangle: kept inside the cell's fill
    cv2.rectangle(img, (x0 + e, y0 + e), (x0 + CELL - 1 - e, y0 + CELL - 1 - e), OFF_COLOR, OFF_FRAME)


def cell_at(g: Geometry, x: float, y: float) -> tuple[list[tuple[int, int]], str]:
    """A click on the grid (pixels of the picture) -> the heads it toggles: one cell, or a whole
    layer on its label; ([], why) off the grid."""
    l = int((y - TOP) // CELL)
    if y < TOP or not 0 <= l < g.num_layers:
        return [], "Click a cell, or a row's label for a whole layer."
    if x < LEFT:
        return [(l, hd) for hd in range(g.num_heads)], f"layer {l + 1}"
    hd = int((x - LEFT) // CELL)
    if not 0 <= hd < g.num_heads:
        return [], "Click a cell, or a row's label for a whole layer."
    return [(l, hd)], f"head {l + 1}.{hd + 1}"


def toggle(ablation: Ablation, cells: list[tuple[int, int]]) -> Ablation:
    """A whole layer switches together: all off if any was on, else all on."""
    if len(cells) > 1:
        on = set(cells) - set(ablation.heads)
        keep = tuple(c for c in ablation.heads if c not in cells)
        return Ablation(keep + (tuple(cells) if on else ()), ablation.mode)
    return ablation.toggled(cells)


def parse_ablation(text: str, mode: str, g: Geometry) -> Ablation:
    """What the heads box and the mode radio say, checked against the model."""
    return Ablation(parse_heads(text or "", g), mode).checked(g)


def session_ablation(text: str, mode: str, g: Geometry) -> Ablation:
    """The heads box for a new photo: what it says when it makes sense on this model, else none
    (a typo there was already refused when typed; it must not block an upload)."""
    try:
        return parse_ablation(text, mode, g)
    except UserError:
        return Ablation()


def with_ablation(key: PhotoKey, ablation: Ablation) -> PhotoKey:
    """The session's key with these heads off: every tab then shows that model."""
    return PhotoKey(key.model_id, key.sha1, ablation, key.labels, key.template)  # the typed labels stay


def ablation_panel(ph: Photo) -> AblationPanel:
    """ph.key.ablation is the set switched off; the intact analysis is the baseline."""
    vm = ph.vm
    ab = ph.key.ablation
    importance = heads.cached_importance(ph, ab.mode)  # the run of the mode the radio shows
    grid = ablation_grid(vm.geometry, ab, importance)
    label = grid_label(importance is not None)
    intact = ph.wb.analysis(ph.key.intact)
    if not ab:
        return AblationPanel(grid, label, top5_figure(vm, intact), "All heads on: the intact model.")
    a = ph.analysis()
    text = f"Switched off ({ab.mode}): **{format_heads(ab.heads)}** — {len(ab.heads)} of " \
           f"{vm.geometry.num_layers * vm.geometry.num_heads} heads."
    if a.top5 and intact.top5:
        text += (f" Top-1 **{a.top5[0].label.split(',')[0]}** {a.top5[0].prob:.1%} "
                 f"(intact: {intact.top5[0].label.split(',')[0]} {intact.top5[0].prob:.1%}).")
    return AblationPanel(grid, label, top5_figure(vm, a, intact), text)


# ------------------------------------------------------------------ which heads matter
IMPORTANT = 0.05  # a head "matters" when zeroing it alone moves the top-1 probability by more than this ...
# ... or by more than this share of the intact top-1 probability, where that is less (below 0.20): a flat grey photo's
# "letter opener" at 0.025 read "0 of 36 heads move the probability by more than 0.05", where no drop can pass 0.025.
IMPORTANT_SHARE = 0.25


def important_bar(p0: float | None) -> float:
    """The move of the top-1 probability past which a head matters, from the intact model's top-1 probability p0:
    IMPORTANT, or IMPORTANT_SHARE of p0 where that is less (they meet at p0 = 0.20). p0 None: IMPORTANT."""
    return IMPORTANT if p0 is None else min(IMPORTANT, IMPORTANT_SHARE * p0)


def _bar_words(p0: float | None) -> str:
    """The bar important_bar gives p0, said so that a student can check it (one decimal more than a drop: 0.0062)."""
    bar = important_bar(p0)
    if p0 is None or bar >= IMPORTANT:
        return f"{IMPORTANT}"
    never = f", which no drop from {p0:.{SHOWN_DIGITS}f} can pass" if p0 <= IMPORTANT else ""
    return (f"{bar:.{SHOWN_DIGITS + 1}f} (a quarter of the intact top-1 probability, {p0:.{SHOWN_DIGITS}f}: below "
            f"{IMPORTANT / IMPORTANT_SHARE:.2f} the bar is that quarter, not {IMPORTANT}{never})")


# How the run switched each head off, by ablation mode: (the cell's sentence, the rise's sentence with the head).
# Said: with the radio on "mean" the run zeroed heads all the same and its text said "zeroed".
MODE_WORDS = {"zero": ("zeroed", "zeroing {}"),
              "mean": ("set to its mean over the photo's tokens", "setting {} to its mean")}


def importance_text(vm: VitModel, done: int, total: int, imp: np.ndarray | None = None, off: int = 0,
                    mode: str = "zero", p0: float | None = None) -> str:
    """The run's progress; when done and given the (L, H) drops, the heads that matter most, from
    the numbers (on the trained ViT-Ti, chelsea: head 3.1 alone takes 0.82 → 0.01). off: heads the
    session has switched off; the run measures the intact model all the same, and says so (a drop
    of 0.816 beside an ablated top-1 of 18.6% read as impossible). mode: how each head was switched off.
    p0: the intact model's top-1 probability, which sets the bar a head's move must pass (important_bar)."""
    switched, rising = MODE_WORDS[mode]
    g = vm.geometry
    # The result is drawn in the grid far above the button (~1,600 px on a phone): the text says where.
    if done < total:
        return (f"Running… {done} of {total} forwards ({g.num_layers} layers × {g.num_heads} heads), batched; "
                f"the cells of {GRID_PLACE} fill in batch by batch.")
    text = (f"Done: {total} forwards ({g.num_layers} × {g.num_heads}), drawn in {GRID_PLACE}: each cell "
            f"is the drop of the top-1 probability when that head alone is {switched}, as a probability (0.10 is 10 "
            "percentage points, the top-5 chart's pp); read the colours against the bar on the grid's right.")
    if off:
        text += (f" Measured on the intact model, every head on: not on the {off} head{'s' if off != 1 else ''} "
                 "switched off above, whose top-5 the chart shows.")
    if imp is None or not np.isfinite(imp).all():
        return text
    order = np.argsort(-imp.ravel(), kind="stable")
    name = lambda i: f"{i // g.num_heads + 1}.{i % g.num_heads + 1}"  # noqa: E731 - layer.head from 1
    n = int((np.abs(imp) > important_bar(p0)).sum())
    text += (f" {_largest(imp.ravel(), order, name)} {n} of {imp.size} heads move the probability by more than "
             f"{_bar_words(p0)}")
    # A rise said as a rise: "the largest rise ... (-0.104)" read as a contradiction (the cells' drop is negative).
    return text + (f"; {_largest_rise(imp.ravel(), name, rising)}." if imp.min() < 0 else ".")


def _largest_rise(drops: np.ndarray, name: Any, rising: str) -> str:
    """The head whose switching off raises the probability most, and by how much; heads level with it at
    MAX_DIGITS named together, as _largest names level drops (one of two equal rises was named as if alone).
    drops: (L·H,); name: index -> "l.h"; rising: MODE_WORDS' sentence with the head."""
    rises = np.argsort(drops, kind="stable")  # the largest rise (the most negative drop) first
    top = int(rises[0])
    level = [int(i) for i in rises if _digits(drops[top], drops[i]) is None]  # top itself included
    by = f"{-drops[top]:.{SHOWN_DIGITS}f}"
    if len(level) == 1:
        # the next rise printed far enough to tell apart where it reads alike at SHOWN_DIGITS, as _largest does:
        # 0.10004 and 0.10001 named one head "by 0.100" as if alone (a reviewer)
        second = int(rises[1]) if drops.size > 1 else top
        d = _digits(drops[top], drops[second]) if second != top else None
        if d is not None and d > SHOWN_DIGITS:
            return (f"{rising.format(name(top))} raises it most: by {-drops[top]:.{d}f}; next: {name(second)} by "
                    f"{-drops[second]:.{d}f} (their cells' drops: {drops[top]:+.{d}f}, {drops[second]:+.{d}f})")
        return f"{rising.format(name(top))} raises it most: by {by} (its cell's drop: {drops[top]:+.{SHOWN_DIGITS}f})"
    return (f"{claims.listed([rising.format(name(i)) for i in level])} raise it most, level: by {by} each (their "
            f"cells' drop: {drops[top]:+.{SHOWN_DIGITS}f})")


SHOWN_DIGITS = 3  # decimals a drop is printed with
MAX_DIGITS = 6  # past this, two float32 drops that still print alike are called level


def _digits(a: float, b: float) -> int | None:
    """The fewest decimals (SHOWN_DIGITS at least) that print a and b apart; None when even MAX_DIGITS
    print them alike (level)."""
    return next((d for d in range(SHOWN_DIGITS, MAX_DIGITS + 1) if f"{a:+.{d}f}" != f"{b:+.{d}f}"), None)


def _largest(drops: np.ndarray, order: np.ndarray, name: Any) -> str:
    """The largest drop and the next, printed far enough to tell apart: a 20 × 20 photo read "Largest drop:
    head 2.2 (+0.100); next: 3.2 (+0.100)", one of two equal-looking numbers called the larger. Heads level
    at MAX_DIGITS are named together. drops: (L·H,); order: their indices, largest first; name: index -> "l.h"."""
    top = int(order[0])
    if drops.size == 1:
        return f"Largest drop: head **{name(top)}** ({drops[top]:+.{SHOWN_DIGITS}f})."
    level = [int(i) for i in order if _digits(drops[top], drops[i]) is None]  # top itself included
    if len(level) > 1:
        heads_ = claims.listed([name(i) for i in level])
        return f"Largest drops: heads **{heads_}**, {drops[top]:+.{SHOWN_DIGITS}f} each."
    second = int(order[1])
    d = _digits(drops[top], drops[second])
    return (f"Largest drop: head **{name(top)}** ({drops[top]:+.{d}f}); next: {name(second)} "
            f"({drops[second]:+.{d}f}).")


# ------------------------------------------------------------------ tab entry points
@dataclass(frozen=True)
class InsideParams:
    """The tab's controls that change what opening it shows (the heads switched off are in the
    session's key, ph.key.ablation)."""

    depth: int | None = None  # the logit lens's readout depth (None: the last)

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> InsideParams:
        d = v.get("depth")
        return cls(depth=None if d is None else int(d))


@dataclass(frozen=True)
class InsidePage:
    """What the tab shows on open, each field named like its component."""

    lens_table: list[list[str]]  # LENS_HEADERS, one row per depth; empty without a classifier
    lens_plot: go.Figure | None
    lens_text: str
    depth_top5: go.Figure | None  # the readout at `depth` (None without a classifier)
    depth: int  # the lens depth shown (0..L)
    num_layers: int  # the depth slider's top
    lens_book: flip.Flipbook  # no pages yet (lens_book fills them)
    grid: np.ndarray  # layers × heads, the switched-off ones framed and crossed over their colour
    grid_label: str  # what the grid's cells show (grid_label)
    top5: go.Figure | None
    ablate_text: str
    heads: str  # the heads box: those switched off, "3.5, 7.1"
    mode: str  # zero or mean
    importance_text: str  # this photo's "which heads matter" run if done (shown_importance), else ""


def shown_importance(ph: Photo) -> str:
    """The importance text as a photo opens: its finished run's, or "" when none was run. The previous
    photo's ("Largest drop: head 3.1 (+0.816)" of chelsea) stayed under a new photo beside a blank grid."""
    ab = ph.key.ablation
    imp = heads.cached_importance(ph, ab.mode)
    if imp is None:
        return ""
    g = ph.vm.geometry
    total = g.num_layers * g.num_heads
    return importance_text(ph.vm, total, total, imp, len(ab.heads), ab.mode, intact_top1(ph))


def intact_top1(ph: Photo) -> float | None:
    """The intact model's top-1 probability on this photo (what the importance run drops from), None without a
    classifier."""
    probs = ph.wb.analysis(ph.key.intact).probs
    return None if probs is None else float(probs.max())


def show(ph: Photo, p: InsideParams) -> InsidePage:
    """On open: the lens (none without a classifier) and the ablation grid with the top-5."""
    lp, ab = (lens_panel(ph) if ph.vm.has_classifier else None), ablation_panel(ph)
    rows, fig, text = (lp.rows, lp.figure, lp.text) if lp else ([], None, NO_LENS_TEXT)
    L = ph.vm.geometry.num_layers
    depth = L if p.depth is None else min(max(int(p.depth), 0), L)
    return InsidePage(lens_table=rows, lens_plot=fig, lens_text=text, depth_top5=depth_top5(ph, depth) if lp else None,
                      depth=depth, num_layers=L, lens_book=flip.empty(repr(ph.key), LENS_CONTROLS), grid=ab.grid,
                      grid_label=ab.label,
                      top5=ab.top5, ablate_text=ab.text, heads=format_heads(ph.key.ablation.heads),
                      mode=ph.key.ablation.mode, importance_text=shown_importance(ph))


LENS_CONTROLS = ("depth",)


def lens_book(ph: Photo) -> flip.Flipbook:
    """The readout's top-5 at every depth (~7 KB a chart), for the page to swap as the depth moves.
    No pages without a classifier (no lens)."""
    if not ph.vm.has_classifier:
        return flip.empty(repr(ph.key), LENS_CONTROLS)
    pages = {flip.page_key(d): {"depth_top5": flip.Chart(figure=depth_top5(ph, d))}
             for d in range(ph.vm.geometry.num_layers + 1)}
    return flip.Flipbook(repr(ph.key), LENS_CONTROLS, pages, rows="lens_table")  # row k of the table: depth k


@dataclass(frozen=True)
class Ablated:
    """The session's new key with these heads off, and the status line for it."""

    key: PhotoKey
    status: str


def ablate(ph: Photo, ablation: Ablation) -> Ablated:
    """Switch these heads off for the session (every tab then shows that model): the new key, after its
    forward, and its status line."""
    k = with_ablation(ph.key, ablation)
    return Ablated(k, photo_status(ph.wb, k))  # its file's notes too (an animation's frame 1), as the upload said


def click(ph: Photo, x: float, y: float) -> Ablated | None:
    """A click on the layers × heads grid: that head (or a whole layer, on its label) toggled;
    None off the cells."""
    cells, _ = cell_at(ph.wb.model(ph.key.model_id).geometry, x, y)
    return ablate(ph, toggle(ph.key.ablation, cells)) if cells else None


def typed(ph: Photo, text: str, mode: str) -> Ablated:
    """The heads box and the mode radio, applied."""
    return ablate(ph, parse_ablation(text, mode, ph.wb.model(ph.key.model_id).geometry))


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    if not ph.vm.has_classifier:
        return {}
    return {"logit_lens": lens_of(ph).probs, "head_importance": heads.head_importance(ph)}


def export_figures(ph: Photo) -> dict[str, np.ndarray | go.Figure]:
    if not ph.vm.has_classifier:
        return {}
    return {"logit_lens": lens_panel(ph).figure,
            "head_importance": ablation_grid(ph.vm.geometry, ph.key.ablation, heads.head_importance(ph))}
