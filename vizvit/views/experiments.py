"""Panel functions of the Experiments tab: (photo handle, UI params) -> what the
components show. Every single perturbed view is one cached forward (``Photo.analysis``);
the sweep and the curves are batched (vizvit.readings.perturb) and cached as derived results.
No gradio here; app.py only wires these."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from vizvit.cancel import NEVER, Cancel
from vizvit.classroom import claims
from vizvit.errors import QUOTED_CHARS, UserError
from vizvit.model import engine
from vizvit.model.engine import DEFAULT_CHUNK
from vizvit.model.images import View
from vizvit.model.models import Geometry, VitModel
from vizvit.model.patches import patch_at
from vizvit.pictures import figures, render
from vizvit.readings import contest, masks, methods, perturb, sweep
from vizvit.readings.lesson import SAME
from vizvit.session import Photo
from vizvit.views import flip
from vizvit.views.common import top5_figure
from vizvit.vocab import FILLS, MASK_MODES, TOKEN_MODES

EXPERIMENTS_TEXT = """**Shift** the photo by a few pixels and watch the predictions: a ViT cuts a fixed grid, so a
shift that is not a whole number of patches gives every patch different pixels (the same ones only where the
photo is flat: one colour across the patch and its neighbour). The cosine map compares
each original patch's embedding (before position embeddings) with the shifted photo's patch at
(i + dy/P, j + dx/P), each rounded toward 0: the grid moved back by the whole patches the photo moved
(so −3 px and +3 px both compare a patch with itself). Grey = no partner.
At a shift of exactly P (edge fill) every compared patch is identical: cosine 1."""

# The mask grid's title (the page's label): the text names the grid by it and by its order, never by a side (on a
# phone the pictures stack, and "the left grid" named a side there is none of).
MASK_GRID_TITLE = "Click patches to mask them"

MASKS_TEXT = f"""**Masks.** Click patches on the first grid (*{MASK_GRID_TITLE}*) to mask them. *black / mean /
blur* replace the pixels, so the model still gets a token there; *drop* removes those tokens from the sequence after the
embedding stage (each kept token keeps its own position embedding), which only a transformer allows; *[MASK]
token* keeps every token but replaces each masked patch's embedding by the model's mask token, one vector for
all, as BERT, BEiT and the ViT paper's masked-patch pre-training do (its position embedding is still added);
the readout below says whether this checkpoint ever trained it (a classifier's is often all zeros)."""

CURVES_TEXT = """**Faithfulness contest** (Petsiuk et al. 2018, RISE): for every map (rollout, raw attention, the
class-specific maps of the Attention tab's menu for the top-1 class, attention flow once computed there),
remove patches most-important-first and follow the probability of the photo's top-1 class (deletion: a
low area under the curve means the map found what matters); insertion starts from everything removed and
adds patches back (a high area is better). The table ranks the maps by insertion − deletion. *Random order*
is the mean of 10 random orders, drawn as a grey band (mean ± sd): a map beats random only outside it. The
contest runs twice, with the chosen fill and with a second one (blur, or black when blur is chosen), since
black squares are pixels the model never saw in training. A map that is no better than random should not be
believed on this photo."""


@dataclass(frozen=True)
class ShiftPanel:
    view: np.ndarray  # enlarged shifted view with the patch grid, uint8
    cosine: np.ndarray  # enlarged (gh, gw) cosine heatmap, NaN tiles grey, uint8
    cosine_text: str
    top5: go.Figure | None
    book: flip.Flipbook  # this shift's pictures, for the page to keep (shift_book)


@dataclass(frozen=True)
class MaskPanel:
    grid: np.ndarray  # clickable: unperturbed view, masked patches hatched
    masked: np.ndarray  # what the model gets
    text: str
    top5: go.Figure | None


@dataclass(frozen=True)
class SweepPanel:
    figure: go.Figure | None  # None: not run on this photo (shown_sweep)
    table: dict  # {"data": rows, "headers": columns} for gr.Dataframe
    text: str


@dataclass(frozen=True)
class CurvesPanel:
    """The faithfulness contest as shown: one chart of every map's deletion and insertion curves, the
    AUC table in rank order, and the text (progress, cost, verdict, what the ranking means)."""

    chart: go.Figure | None  # None: nothing computed yet (only `text` is news)
    table: list[list]
    text: str


MINUS = "\u2212"  # the minus sign plotly writes on the chart beside the table, not a hyphen
SWEEP_HEADERS = ["k (px right)", "whole patches moved back", "mean cos", "min cos", "top-1 label",
                 "top-1 prob", "p(unshifted top-1)"]
CURVES_HEADERS = ["rank", "map", "deletion AUC (lower = better)", "insertion AUC (higher = better)",
                  "insertion − deletion (higher = better)", "second fill: deletion AUC", "second fill: insertion AUC"]
# What one contest costs, said in a line under its button (the button once held all of it: 6 lines at 1366 px, 8
# on a 390-px phone). The maps counted from the registry (issue 51: it said 7 and ran 8 once attention flow was
# computed): the costly ones join only once computed, and the random baseline is the random orders. The views a
# step: each map's deletion and insertion view, each random order's one (read back, contest.read_back), for each
# fill; plus the intact and the empty view of each fill (a reviewer: it said ~600 at any steps), and the total once
# the costly maps are computed, each a deletion and an insertion view a step and fill (trained ViT-Ti, chelsea and
# astronaut, 10 steps: 436 views, and 472 with attention flow, which it once left under its "~436"); "~": more on a
# grid whose step counts round unevenly (49 patches). No seconds here: "about 10 s for ViT-Ti" (2 quiet cores) took
# 62 s on a loaded machine; contest_cost estimates them from this server's last forward.
_ALWAYS = [m for m in methods.CONTEST if not m.costly and not m.baseline]
_ONCE = [m.name for m in methods.CONTEST if m.costly]
_A_STEP = 2 * (2 * len(_ALWAYS) + perturb.RANDOM_ORDERS)
_COSTLY_STEP = 2 * 2  # a costly map's deletion and insertion view, each fill


def contest_views(steps: int, costly: int = 0) -> int:
    """The forward views a contest of `steps` steps runs (~: a grid whose step counts round unevenly runs more), with
    `costly` costly maps computed: the intact and the empty view of each fill, then each step between."""
    return 4 + (int(steps) - 1) * (_A_STEP + _COSTLY_STEP * int(costly))


CONTEST_COST = (f"{len(_ALWAYS)} maps" + (f" ({len(_ALWAYS) + len(_ONCE)} once {' and '.join(_ONCE)} is computed)"
                                          if _ONCE else "")
                + f" + {perturb.RANDOM_ORDERS} random orders, 2 fills: 4 backward passes + ~{_A_STEP} forward views "
                f"a step (~{contest_views(10)} at 10 steps"
                + (f", ~{contest_views(10, len(_ONCE))} with {' and '.join(_ONCE)}" if _ONCE else "") + ")")
CONTEST_BUTTON = "Run the contest"


def contest_cost(steps: int, image_s: float, costly: int = 0) -> str:
    """The line under the contest's button: what it runs (CONTEST_COST), then, at these steps, its views and their
    time estimated from this server's last forward (image_s: its seconds per image; 0: none yet, no estimate). An
    estimate: the contest's views run batched and without attention maps (measured on 2 cores, chelsea on the
    trained ViT-Ti: 21 ms a view against the page forward's 50), and the machine's load changes as it runs."""
    views = contest_views(steps, costly)
    at = f"At {int(steps)} steps: ~{views} views"
    if image_s <= 0:
        return _tildes(f"{CONTEST_COST}. **{at}**; this server has run no forward yet to time them by.")
    secs = max(1, round(views * image_s))
    return _tildes(f"{CONTEST_COST}. **{at}, ~{secs} s here** at the last forward's {1000 * image_s:.0f} ms a view "
                   "(an estimate: its views run batched, often in half a forward's time each; a busier "
                   "server takes longer).")


def _tildes(markdown: str) -> str:
    """Markdown whose "~" stays a tilde: two of them on a line struck out the text between ("~48 forward views a
    step (~436") on the page."""
    return markdown.replace("~", "\\~")


CONTEST_COST_MD = _tildes(CONTEST_COST + ".")  # the line before a photo: no steps or forward to estimate by


def contest_cost_of(ph: Photo, steps: int) -> str:
    """contest_cost for this photo (its costly maps computed so far) and this server's last forward."""
    return contest_cost(steps, ph.wb.forwards.stats().image_s, len(contest.costly_maps(ph)))


RANKING_NOTE = ("**What the ranking means:** on this photo, with the {fill} fill, the maps are ranked by insertion "
                "− deletion AUC: a map near the top raised p({label}) sooner when its patches were added back, "
                "lowered it sooner when they were removed, or both, on balance; the rank alone does not say which "
                "(the table's columns do). *Random order*, the mean of {n} random orders, is the baseline to beat, "
                "and a map beats it only outside their mean ± sd (the verdict above). **What it does not:** it is "
                "one photo and two ways of removing patches ({fill}, then {fill2}: the table's last two columns; "
                "black or mean squares are pixels the model never saw in training, a blur stays closer to its "
                "photos, a token drop changes the sequence), so it ranks these maps here, not the methods in general.")


def _short(label: str) -> str:
    return label.split(",")[0]


def _grid_image(view: np.ndarray, g: Geometry, marked: tuple[int, ...] = ()) -> np.ndarray:
    return render.draw_grid(render.enlarge(view, render.display_scale(g)), g, marked=marked)


# ------------------------------------------------------------------ shift
def _two_decimals(v: float) -> str:
    """0.973 -> '.97', 0.9999 -> '1', 0.998 -> '.99', -0.41 -> '-.4' (one decimal below 0: a minus sign and
    two decimals do not fit a 48 px tile at a size a lecture hall can read). Cut, not rounded, below 1:
    '1' only where the cosine counts as the same (lesson.SAME), or a tile read '1' beside a sentence
    that said no vector stayed the same."""
    if v < -0.05:
        t = f"{v:.1f}".replace("0.", ".", 1)
        return "-1" if t == "-1.0" else t
    if v >= SAME:
        return "1"
    return f"{math.floor(max(v, 0.0) * 100 + 1e-9) / 100:.2f}".replace("0.", ".", 1)  # 0.29 * 100 is 28.999…


def cosine_image(cos: np.ndarray, g: Geometry) -> np.ndarray:
    """(gh, gw) cosines in [-1, 1] -> an image the size of the grid view, values written in."""
    tile = g.patch_size * render.display_scale(g)
    img = render.enlarge(render.colorize(cos, "RdBu_r", vmin=-1.0, vmax=1.0), tile)
    img = render.draw_grid(img, g)
    px = render.TEXT_PX * (tile - 4) / render.text_size(".00")[0]  # the widest value fills a tile
    if px >= render.MIN_TEXT_PX:  # room for two decimals at a size a hall can read
        px = min(px, render.TEXT_PX)
        cap = render.text_size("0", px)[1]
        for (r, c), v in np.ndenumerate(cos):
            if np.isfinite(v):
                t = _two_decimals(v)
                w = render.text_size(t, px)[0]
                render.put_text(img, t, (c * tile + (tile - w) // 2, r * tile + (tile + cap) // 2), px,
                                (255, 255, 255) if abs(v) > 0.6 else (0, 0, 0))
    return img


def shift_limits(ph: Photo) -> tuple[int, int]:
    """Slider range for this model: −2P..+2P pixels."""
    p = ph.vm.geometry.patch_size
    return -2 * p, 2 * p


def shift_panel(ph: Photo, dx: int, dy: int, fill: str = "edge") -> ShiftPanel:
    vm, dx0, dy0 = ph.vm, dx, dy
    g = vm.geometry
    limit = 2 * g.patch_size  # sliders may still hold another model's range: clamp, don't fail
    dx, dy = int(np.clip(dx, -limit, limit)), int(np.clip(dy, -limit, limit))
    base = ph.analysis()
    # No maps of the shifted view are shown: its lighter forward (about one bare forward).
    a = ph.prediction(View(dx=int(dx), dy=int(dy), fill=fill))  # type: ignore[arg-type]
    cos = perturb.shift_cosine(base.patch_embeddings, a.patch_embeddings, int(dx), int(dy), g, wrap=fill == "wrap")
    mean, low = perturb.cos_summary(cos)
    di, dj = perturb.patches_moved_back(int(dy), g.patch_size), perturb.patches_moved_back(int(dx), g.patch_size)
    n = int(np.isfinite(cos).sum())
    text = (f"Shift dx = {dx}, dy = {dy} px ({fill} fill) · grid moved back by ({dj}, {di}) whole patches "
            f"(columns, rows) · **mean cos {cos_text(mean)}**, **min cos {cos_text(low)}** over {n} of {g.num_patches} "
            f"patches that have a partner (red 1, white 0, blue −1, grey: no partner)")
    if a.top5 and base.top5:
        text += (f" · top-1 **{_short(a.top5[0].label)}** {figures.fixed_percent(a.top5[0].prob)} "
                 f"(unshifted: {_short(base.top5[0].label)} {figures.fixed_percent(base.top5[0].prob)})")
    # The chart and line at the mask readout's fixed decimals: one tab wrote chelsea's top-1 "82.2%" and its
    # hare "0.015%" here, and "82.25%" and "0.02%" in the mask chart and line below.
    top5 = top5_figure(vm, a, base, decimals=figures.CHANGE_DECIMALS)
    view, cos_img = _grid_image(a.input_view, g), cosine_image(cos, g)
    # Keyed by the sliders' values as the page holds them (a clamped value is drawn as its limit).
    return ShiftPanel(view, cos_img, text, top5, shift_book(ph, dx0, dy0, fill, view, cos_img, top5))


SHIFT_CONTROLS = ("dx", "dy", "fill")


def _with_top5(pictures: dict[str, Any], top5: go.Figure | None) -> dict[str, Any]:
    """A book's page: its pictures, and the top-5 chart (none for a model without a classifier)."""
    return pictures if top5 is None else {**pictures, "top5": flip.Chart(figure=top5)}


def shift_book(ph: Photo, dx: int, dy: int, fill: str, view: np.ndarray, cosine: np.ndarray,
               top5: go.Figure | None = None) -> flip.Flipbook:
    """The shift pictures just drawn and their top-5, for the page to keep: moving back to a shift
    seen before then shows them at once (the page adds each answer's page to the ones it holds)."""
    page = _with_top5({"view": view, "cosine": cosine}, top5)
    return flip.Flipbook(repr(ph.key), SHIFT_CONTROLS, {flip.page_key(dx, dy, fill): page}, merge=True)


def shift_book_at(ph: Photo, key: str) -> flip.Flipbook:
    """The shift book with the page for `key` ("dx|dy|fill" as the page reads its controls), drawn
    now: one forward. The page asks for it the moment a slider reaches a shift it holds no page
    for, so the new view is drawn without Gradio's round trip (page/flip.py: Fetcher)."""
    part = flip.key_parts(key, len(SHIFT_CONTROLS))
    dx, dy, fill = flip.key_int(part[0], "dx"), flip.key_int(part[1], "dy"), part[2]
    if fill not in FILLS:
        raise UserError(f"What enters at the border is one of {', '.join(FILLS)}, not {fill!r}.")
    return shift_panel(ph, dx, dy, fill).book


# ------------------------------------------------------------------ sweep
def sweep_panel(vm: VitModel, s: perturb.ShiftSweep, cnn: tuple[str, np.ndarray] | None = None,
                fill: str = sweep.DEFAULT_FILL) -> SweepPanel:
    """The sweep so far, run under `fill` (its title and text name it); cnn: (name, probability of its unshifted
    top-1 per k) beside the ViT."""
    p = vm.geometry.patch_size
    ks = [r.k for r in s.rows]
    fig = go.Figure()
    fig.add_scatter(x=ks, y=[r.mean_cos for r in s.rows], name="mean patch cos", mode="lines+markers")
    fig.add_scatter(x=ks, y=[r.min_cos for r in s.rows], name="min patch cos", mode="lines+markers")
    if vm.has_classifier:
        fig.add_scatter(x=ks, y=[r.base_class_prob for r in s.rows], name="p(unshifted top-1)",
                        mode="lines+markers", yaxis="y2", line=dict(dash="dot"))
    if cnn is not None:
        fig.add_scatter(x=ks, y=cnn[1][:len(ks)], name=f"CNN {_short(cnn[0])}: p(its unshifted top-1)",
                        mode="lines+markers", yaxis="y2", line=dict(dash="dashdot"))
    for k in range(p, 2 * p + 1, p):
        fig.add_vline(x=k, line=dict(color="grey", dash="dash", width=1))
    title, top = figures.title_lines(f"Shift sweep, k = 0..{2 * p} px right, {fill} fill ({len(s.rows)}/{s.total} "
                                     "views)")
    fig.update_layout(
        title=title,
        xaxis=dict(title="k (pixels shifted right)", range=[-0.5, 2 * p + 0.5]),
        yaxis=dict(title="cosine", range=[-1.05, 1.05]),
        # Fixed ticks: left to plotly, an exported chart got 2/26/50/74/98 % (issue 17).
        yaxis2=dict(title="probability", overlaying="y", side="right", range=[0, 1], tickformat=".0%",
                    tickmode="array", tickvals=[0, 0.25, 0.5, 0.75, 1.0]),
        legend=figures.LEGEND_BELOW, margin=dict(l=10, r=10, t=top, b=10), height=340 + top)
    # Written as the shift readout above writes them (cos to 3 decimals, probabilities as fixed_percent): the
    # table said "0.0772" where the readout and the chart's axis said "7.72%" (the strip photo's dingo).
    rows = [[r.k, r.moved_back, cos_text(r.mean_cos), cos_text(r.min_cos), _short(r.top1_label),
             figures.fixed_percent(r.top1_prob), figures.fixed_percent(r.base_class_prob)] for r in s.rows]
    headers = list(SWEEP_HEADERS)
    if cnn is not None:
        headers.append("CNN p(top-1)")
        rows = [row + [figures.fixed_percent(float(c))] for row, c in zip(rows, cnn[1])]
    # The fill named in the text too: the tab's fill control sits above, and the sweep once ran under edge
    # whatever it said (its title alone named the rule).
    text = (("Done: " if s.done else "Running… ") + f"{len(s.rows)} of {s.total} shifted views, {fill} fill "
            f"({FILL_SAID.get(fill, fill)}; batched forwards).")
    return SweepPanel(fig, {"data": rows, "headers": headers}, text)


def cos_text(x: float) -> str:
    """A cosine as the shift readout writes it ("0.998"), with a minus sign, not a hyphen; NaN (no partner) "–"."""
    return auc_text(x, 3) if np.isfinite(x) else "–"


SWEEP_BUTTON = "Run the shift sweep"


def sweep_stale(ran: str | None, fill: str) -> str:
    """The line over a sweep on show whose fill is not the tab's fill now, as contest_stale says it of the
    contest: its chart and table stayed up when the fill moved, the text still naming the old fill (trained ViT-Ti,
    chelsea: the edge sweep's rows under the radio's wrap). ran: the fill the sweep on show ran with (None: none
    on show). Empty when none is shown or it is for `fill`."""
    if ran is None or ran == fill:
        return ""
    return (f"⚠️ **Not for the fill now:** the chart and table below are from the sweep run with the {ran} fill. "
            f"Press **{SWEEP_BUTTON}** to run it with the {fill} fill.")


# What each fill puts where the shift leaves the view empty (vocab.FILLS), as the sweep's text says it.
FILL_SAID = {"edge": "the border pixels repeated", "wrap": "the pixels pushed out come back on the other side",
             "constant": "black"}


def sweep_progress(ph: Photo, chunk: int = DEFAULT_CHUNK, cancel: Cancel = NEVER,
                   fill: str = sweep.DEFAULT_FILL) -> Iterator[SweepPanel]:
    """The growing sweep under `fill` (the tab's fill control; readings.sweep) drawn after each batched chunk,
    then once more whole with the app's CNN beside it; the cached sweep at once. `cancel` is checked between
    chunks (Cancelled)."""
    fresh = ph.peek(sweep.sweep_name(fill)) is None
    for s in sweep.sweep_steps(ph, chunk, cancel, fill):
        if fresh:
            yield sweep_panel(ph.vm, s, fill=fill)
    yield sweep_panel(ph.vm, s, sweep.cnn_probs(ph, [r.k for r in s.rows], fill), fill)


# ------------------------------------------------------------------ masks
def toggle_at(ph: Photo, mask: tuple[int, ...] | None, x: float, y: float) -> tuple[int, ...]:
    """A click at (x, y) on the enlarged mask grid toggles that patch."""
    g = ph.vm.geometry
    r, c = patch_at(x, y, g, render.display_scale(g))
    return perturb.toggle(masks.clean_mask(mask, g), r * g.grid[1] + c)


MASK_CONTROLS = ("mode",)


def mask_book(ph: Photo, mask: tuple[int, ...] | None, mode: str, panel: MaskPanel,
              clicked: bool = False) -> flip.Flipbook:
    """The mask pictures just drawn and their top-5, for the page to keep (a toggle back to a mask
    seen before is then drawn at once), and the click rule: a click toggles the patch under it (toggle_at). The
    page keeps its own mask through clicks (clicked: this answer is a click's, maybe not the last)."""
    g = ph.vm.geometry
    mask = masks.clean_mask(mask, g)
    toggle = flip.Toggle("grid", g.patch_size * render.display_scale(g), g.grid, None if clicked else mask, box="box",
                         prefix=PAGE_MASK)
    page = _with_top5({"grid": panel.grid, "masked": panel.masked}, panel.top5)
    return flip.Flipbook(repr(ph.key), MASK_CONTROLS, {flip.page_key(mode, flip.set_key(mask)): page},
                         merge=True, toggle=toggle)


PAGE_MASK = "m:"  # what the page writes before the mask, so an empty mask differs from none written


def page_mask(text: str | None, g: Geometry) -> tuple[int, ...] | None:
    """The mask the page wrote with a click ("m:3,17"; "m:" for none), or None when it wrote none."""
    text = (text or "").strip()
    if not text.startswith(PAGE_MASK):
        return None
    try:
        return masks.clean_mask([int(t) for t in text[len(PAGE_MASK):].split(",") if t.strip()], g)
    except ValueError:
        # the box is any caller's to fill (megabytes): the sentence quotes its start only
        more = "…" if len(text) > QUOTED_CHARS else ""  # after the quote, as a refusal quotes
        raise UserError(f"A mask is patch numbers separated by commas, not {text[:QUOTED_CHARS]!r}{more}.") from None


def mask_book_at(ph: Photo, key: str) -> flip.Flipbook:
    """The mask book with the page for `key` ("mode|ids", as the page holds its mode and its mask),
    drawn now: at most one forward (see shift_book_at). The page keeps its own mask (clicked)."""
    mode, ids = flip.key_parts(key, len(MASK_CONTROLS) + 1)
    if mode not in MASK_MODES:
        raise UserError(f"A mask mode is one of {', '.join(MASK_MODES)}, not {mode!r}.")
    mask = page_mask(PAGE_MASK + ids, ph.vm.geometry)
    return mask_book(ph, mask, mode, mask_panel(ph, mask, mode), clicked=True)


def mask_panel(ph: Photo, mask: tuple[int, ...] | None, mode: str = "drop") -> MaskPanel:
    vm = ph.vm
    g = vm.geometry
    mask = masks.clean_mask(mask, g)
    base = ph.analysis()
    if len(mask) == g.num_patches and mode == "drop":
        raise UserError("Every patch is masked: leave at least one patch for the model to see.")
    token = engine.mask_token(vm) if mode == "mask" else None  # a family without one says so here
    a = ph.analysis(View(mask=mask, mask_mode=mode)) if mask else base  # type: ignore[arg-type]
    grid = _grid_image(base.input_view, g, marked=mask)
    # Pixel fills show what replaced the patches; dropped or [MASK]ed tokens are hatched: the model
    # never sees those pixels.
    masked = _grid_image(a.input_view, g, marked=mask if mode in TOKEN_MODES else ())
    if mode == "drop":
        kept = f"{g.num_patches - len(mask)} patches"
        what = (f"the model gets {a.kept_tokens.numel()} tokens "
                f"({' '.join(g.prefix_names) + ' + ' if g.prefix_names else ''}{kept})")
    elif token is not None:
        what = (f"the model still gets all {g.seq_len} tokens; each masked patch's embedding is the [MASK] token "
                f"(‖[MASK]‖ = {float(token.vector.norm()):.3g}) plus its own position embedding: {token.source}")
    else:
        what = f"pixels filled with {mode}; the model still gets all {g.seq_len} tokens"
    text = f"**{len(mask)} of {g.num_patches}** patches masked ({mode}): {what}"
    if a.top5 and base.top5 and a.probs is not None:
        b0 = base.top5[0]
        now = float(a.probs[b0.index])
        # The top-1 at the decimals of the change after it: the same number was "81.8%" there and "81.764%".
        text += (f" · top-1 **{_short(a.top5[0].label)}** {figures.fixed_percent(a.top5[0].prob)} · unmasked top-1 "
                 f"{_short(b0.label)}: {figures.prob_change(b0.prob, now)}")
    # The chart at the readout's decimals: its "-1.0 pp" beside the readout's "Δ -1.05 pp" (chelsea, one patch).
    return MaskPanel(grid, masked, text, top5_figure(vm, a, base, decimals=figures.CHANGE_DECIMALS))


# ------------------------------------------------------------------ faithfulness
def curves_figure(c: perturb.Curves, insertion: bool) -> go.Figure:
    ys, auc = (c.insertion, c.insertion_auc) if insertion else (c.deletion, c.deletion_auc)
    fig = go.Figure()
    for name, y, area in zip(c.names, ys, auc):
        fig.add_scatter(x=c.fractions, y=y, name=f"{name} (AUC {area:.3f})", mode="lines+markers")
    what = "added back" if insertion else "removed"
    title, top = figures.title_lines(f"{'Insertion' if insertion else 'Deletion'}: p({_short(c.target_label)}) "
                                     f"as patches are {what} ({c.mode})")
    fig.update_layout(title=title,
                      # a little room left of 0 %: its tick label overlapped the y axis's "0"
                      xaxis=dict(title=f"fraction of patches {what}", range=[-0.04, 1.02], tickformat=".0%"),
                      yaxis=dict(title="probability", rangemode="tozero"),
                      legend=figures.LEGEND_BELOW, margin=dict(l=10, r=10, t=top, b=10), height=330 + top)
    return fig


def contest_rows(c: perturb.Curves, band: perturb.Curves | None = None,
                 second: contest.FillContest | None = None) -> list[list]:
    """The AUC table, best first: [rank, map, deletion AUC, insertion AUC, insertion − deletion, and the
    second fill's deletion and insertion AUC ("" until computed)]."""
    other: dict[str, tuple[float, float]] = {}
    n = table_decimals(*_band_sds(band), *(_band_sds(second.band) if second is not None else ()))
    if second is not None:
        other = {n: (d, i) for n, d, i in contest.contestants(second.curves, second.band)}
    out = []
    for r, (name, d, i) in enumerate(contest.contestants(c, band)):
        shown = name if name == contest.RANDOM_ROW or name != methods.RANDOM.name else f"{name} (baseline, one order)"
        two = other.get(name)  # the second fill's AUCs ("" until computed)
        out.append([r + 1, shown, auc_text(d, n), auc_text(i, n), auc_text(i - d, n),
                    *(("", "") if two is None else (auc_text(two[0], n), auc_text(two[1], n)))])
    return out


def auc_text(x: float, decimals: int) -> str:
    """An AUC (or a difference of two; a cosine, cos_text) as the table and the verdict write it: `decimals`
    decimals, trailing zeros kept (the table's numbers, floats, read "0.008" where the verdict said "0.0080"), a
    minus sign, not a hyphen, and no "−0.0000" (the random row's insertion − deletion is 0 up to rounding)."""
    text = f"{round(x, decimals) + 0.0:.{decimals}f}"
    return text.replace("-", MINUS) if text.strip("-0.") else text.lstrip("-")


def _band_sds(band: perturb.Curves | None) -> tuple[float, ...]:
    """The random orders' deletion and insertion AUC sd (none without a band)."""
    if band is None:
        return ()
    return perturb.spread(band.deletion_auc).sd, perturb.spread(band.insertion_auc).sd


BAND_FILL = "rgba(120,120,120,0.25)"


def contest_figure(c: perturb.Curves, band: perturb.Curves | None = None) -> go.Figure:
    """Every map's deletion (solid) and insertion (dashed) curve in one chart, one colour per map,
    legend in rank order. With a band: the random orders' mean ± sd as a grey band (deletion and
    insertion) in place of the one random curve; without: random order grey."""
    fig = go.Figure()
    # Colours over the maps but random (drawn grey), in registry order: the same map, the same colour.
    ranked = [x for x in c.names if x != methods.RANDOM.name]
    colour = {n: CONTEST_COLOURS[k % len(CONTEST_COLOURS)] for k, n in enumerate(ranked)}
    curves = {n: (c.deletion[k], c.insertion[k]) for k, n in enumerate(c.names)}
    k_ = contest.auc_decimals(*_band_sds(band))
    for r, (name, d, i) in enumerate(contest.contestants(c, band)):
        label = f"{r + 1}. {name} (del {d:.{k_}f}, ins {i:.{k_}f})"
        if name == contest.RANDOM_ROW and band is not None:
            ds, is_ = perturb.spread(band.deletion_auc), perturb.spread(band.insertion_auc)
            # Mean ± sd of n orders, short enough for a phone's legend (the text above the chart says more).
            label = (f"{r + 1}. random ×{ds.n}: del {ds.mean:.{k_}f}±{ds.sd:.{k_}f}, "
                     f"ins {is_.mean:.{k_}f}±{is_.sd:.{k_}f}")
            for k, ys in enumerate((band.deletion, band.insertion)):
                m, s = ys.mean(0), ys.std(0, ddof=1)
                # The band: its lower edge, then the upper edge filled down to it.
                fig.add_scatter(x=c.fractions, y=m - s, mode="lines", line=dict(width=0), legendgroup=name,
                                showlegend=False, hoverinfo="skip")
                fig.add_scatter(x=c.fractions, y=m + s, mode="lines", line=dict(width=0), fill="tonexty",
                                fillcolor=BAND_FILL, legendgroup=name, showlegend=False, hoverinfo="skip")
                fig.add_scatter(x=c.fractions, y=m, name=label, legendgroup=name, mode="lines", showlegend=k == 0,
                                line=dict(color="#666666", width=2, dash="dash" if k else "solid"))
            continue
        col = "#888888" if name == methods.RANDOM.name else colour[name]
        dy, iy = curves[name]
        fig.add_scatter(x=c.fractions, y=dy, name=label, legendgroup=name, mode="lines",
                        line=dict(color=col, width=2))
        fig.add_scatter(x=c.fractions, y=iy, name=label, legendgroup=name, mode="lines",
                        line=dict(color=col, width=2, dash="dash"), showlegend=False)
    title, top = figures.title_lines(f"p({_short(c.target_label)}) as patches are removed (solid) or added back "
                                     f"(dashed), {c.mode}")
    fig.update_layout(title=title,
                      xaxis=dict(title="fraction of patches removed / added back", range=[-0.04, 1.02],
                                 tickformat=".0%"),
                      yaxis=dict(title="probability", rangemode="tozero"),
                      legend=figures.LEGEND_BELOW, margin=dict(l=10, r=10, t=top, b=10), height=450 + top)
    return fig


# One colour per map, in registry order (plotly's qualitative set, random drawn grey; brown last: beside the
# random band's grey mean it read as grey).
# Okabe & Ito's palette (Color Universal Design), yellow left out (too pale on white), black and Tol's wine
# added: told apart under every common colour-vision deficiency, where plotly's default put a green
# and a red curve side by side told apart by hue alone (issue 51, docs/accessibility.md).
CONTEST_COLOURS = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#882255")


def curves_panel(ph: Photo, steps: int = 10, mode: str = "black", seed: int = 0) -> CurvesPanel:
    c = contest.compute_contest(ph, steps, mode, seed)
    return _contest_panel(c, steps, verdict=_verdict_of(ph, c, contest.curve_maps(ph, seed), int(steps)))


# Each map's (deletion, insertion) against the random band -> the sentence that lists it, in the order said. Better
# on one curve and worse on the other is neither a win nor a loss, and said as such (a map listed "on insertion
# only" while its deletion AUC lay past the band's worse edge read as a win); the worse side is split as the better
# side is (a map past the band on one curve, within it on the other, was listed plainly "Worse than random": a
# reviewer, chelsea black, LeGrad 0.003 past the deletion band's edge).
VERDICT_GROUPS = {
    ("better", "better"): "Beat random on both curves",
    ("better", "within"): "On deletion only (insertion within the band)",
    ("within", "better"): "On insertion only (deletion within the band)",
    ("better", "worse"): "Better than random on deletion but worse on insertion",
    ("worse", "better"): "Better than random on insertion but worse on deletion",
    ("within", "within"): "Within the band on both",
    ("worse", "worse"): "Worse than random on both curves",
    ("worse", "within"): "Worse on deletion only (insertion within the band)",
    ("within", "worse"): "Worse on insertion only (deletion within the band)",
}


def table_decimals(*sds: float) -> int:
    """The decimals the AUC table writes every number with (contest_rows), from the random orders' sds of every
    fill it shows: at least four, more where a band's sd needs them (contest.auc_decimals)."""
    return max(4, contest.auc_decimals(*sds))


def fill_verdict(s: contest.FillScore, table: int | None = None) -> str:
    """What one fill says: the random band, then the maps outside it (better on both, on one) and inside.
    table: the AUC table's decimals (table_decimals over every fill it shows; None: this fill's alone), which every
    number said here is written in, as the table writes it (auc_text)."""
    db, ib = s.deletion_band, s.insertion_band
    v = contest.beats_random(s)
    auc = {n: (float(d), float(i)) for n, d, i in zip(s.names, s.deletion, s.insertion)}
    # The table's decimals, which it writes both fills in (white canvas: the verdict's blur numbers "(0.008, 0.138)"
    # and band "0.030 ± 0.019" beside the table's 0.0078, 0.1377, 0.0296); alone, the band's own scale.
    dec = table_decimals(db.sd, ib.sd) if table is None else table

    def named(ns: list[str]) -> str:
        return ", ".join(f"{n} ({auc_text(auc[n][0], dec)}, {auc_text(auc[n][1], dec)})" for n in ns)

    if contest.unchanged(s):  # "none ranks the patches better than chance" was said of a fill that removed nothing
        # No spread of its own to size the decimals by (auc_decimals of 0: three): the table's, which its rows
        # are written in. A flat grey photo's blur said "(0.025, 0.025)" beside the table's 0.02479 and the black
        # fill's "0.01423 ± 0.00075" just before.
        return (f"**{s.fill} fill:** it changes nothing the model sees on this photo: every order, each map's and "
                f"the {db.n} random orders', gives the same deletion and insertion AUC ({auc_text(db.mean, dec)}, "
                f"{auc_text(ib.mean, dec)}), so this fill ranks no map here.")

    wins = [n for n, (d, i) in v.items() if "better" in (d, i) and "worse" not in (d, i)]
    split = [n for n, (d, i) in v.items() if {d, i} == {"better", "worse"}]
    dband = f"{auc_text(db.mean, dec)} ± {auc_text(db.sd, dec)}"
    iband = f"{auc_text(ib.mean, dec)} ± {auc_text(ib.sd, dec)}"
    # The random orders insert read back (contest.read_back), so their two bands are one: said, not left
    # for a student to wonder at two equal pairs of numbers.
    bands = (f"deletion and insertion AUC **{dband}** (one band: a random order's insertion is its deletion "
             "read backwards)" if dband == iband else f"deletion AUC **{dband}**, insertion **{iband}**")
    out = [f"**{s.fill} fill:** random order, mean ± sd of {db.n} orders: {bands} (maps below: deletion, "
           "insertion)."]
    apart = separated(s, dec)
    if apart is not None:
        out.append(apart)
    if not wins:
        out.append("No map beats random order outside its band"
                   + (" without doing worse than it on the other curve" if split else "")
                   + ": none ranks the patches the class needs better than chance here.")
    for pair, heading in VERDICT_GROUPS.items():
        these = [n for n, dv in v.items() if dv == pair]
        if these:
            out.append(f"{heading}: {named(these)}.")
    return " ".join(out)


def separated(s: contest.FillScore, decimals: int | None = None) -> str | None:
    """The sentence for a fill whose contest cannot separate the maps on this photo: every map's insertion −
    deletion AUC within contest.score_noise of the others' and of random order's (0: its insertion is its
    deletion), end to end. None when it can. decimals: the table's (default: the band's own, auc_decimals)."""
    scores = [0.0, *(float(i - d) for d, i in zip(s.deletion, s.insertion))]
    noise = contest.score_noise(s.deletion_band, s.insertion_band)
    if max(scores) - min(scores) > noise:
        return None
    k = contest.auc_decimals(s.deletion_band.sd, s.insertion_band.sd) if decimals is None else decimals

    def signed(x: float) -> str:
        text = auc_text(x, k)
        return text if text.startswith(MINUS) or not text.strip("0.") else "+" + text

    return (f"Every map's insertion − deletion AUC ({signed(min(scores[1:]))} to {signed(max(scores[1:]))}) lies "
            f"within {auc_text(noise, k)} of the others' and of random order's (0): random orders differ by as much "
            f"(the sd of two orders' difference), so with the {s.fill} fill the contest cannot separate the "
            "maps on this photo.")


def ranking_line(c: perturb.Curves, band: perturb.Curves | None, shown: list[str]) -> str:
    """The ranking in words: the table's rows, ">" only between neighbours more than the random orders' noise
    apart and "≈" between the others (contest.tiers); "best" only for a map that far ahead of the next; then
    the maps that far above or below random order's row. A chain of "≈" may span more than the noise end to
    end, so what is told apart from the baseline is said row by row (a chained line once said "none" and "only
    the ends lie further apart" over three maps 0.5 above random's row, astronaut, blur). shown: the table's
    names, in its order (without a band: no noise to read, the order as it is)."""
    rows = contest.contestants(c, band)
    if band is None:
        return f"**Ranking:** {' > '.join(shown)} (best: **{shown[0]}**; {c.mode} fill)."
    ds, is_ = perturb.spread(band.deletion_auc), perturb.spread(band.insertion_auc)
    if contest.alike(np.array([d for _, d, _ in rows]), np.array([i for _, _, i in rows]), ds, is_):
        return (f"**Ranking:** none on this photo ({c.mode} fill): the fill changes nothing the model sees, every "
                "order alike.")
    noise = contest.score_noise(ds, is_)
    dec = contest.auc_decimals(ds.sd, is_.sd)
    score = {n: i - d for n, d, i in rows}
    # Both curves together here; the verdict above reads each curve alone against the band, so a map may beat
    # random there and be level with its row here (or the other way round).
    how = f"{noise:.{dec}f} in insertion − deletion, as two random orders differ; the verdict reads each curve alone"
    if max(score.values()) - min(score.values()) <= noise:
        return (f"**Ranking:** none on this photo ({c.mode} fill): every map is within {noise:.{dec}f} of every "
                "other in insertion − deletion, as two random orders differ, so the contest cannot separate "
                "the maps here and the table's order is chance.")
    groups = contest.tiers(rows, noise)
    said = " > ".join(" ≈ ".join(g) for g in groups)
    base = score[contest.RANDOM_ROW]
    above = [n for n, _, _ in rows if n != contest.RANDOM_ROW and score[n] - base > noise]
    below = [n for n, _, _ in rows if n != contest.RANDOM_ROW and base - score[n] > noise]
    top = groups[0]
    if len(top) == 1:
        best = f"best: **{top[0]}**"
    elif contest.RANDOM_ROW in top and not above:  # the first maps are not told apart from chance
        best = "no map is told apart from random order at the top"
    else:
        best = "no single best"
    sides = [f"{claims.listed(xs)} {word}" for xs, word in ((above, "above it"), (below, "below it")) if xs]
    vs = (f"told apart from random order's row: {' and '.join(sides)}" if sides
          else "none told apart from random order's row")
    return f"**Ranking:** {said} ({best}; {vs}; ≈: within {how}; {c.mode} fill)."


def contest_verdict(scores: list[contest.FillScore] | tuple[contest.FillScore, ...], label: str, p0: float,
                    artifacts_first: dict[str, int] | None = None, where: str = "", first_n: int = 0) -> str:
    """The verdict from this photo's AUCs under each fill: a map beats random only outside the random
    orders' mean ± sd, on deletion (lower) or insertion (higher); the fills named, and where they
    disagree, said. artifacts_first: map -> how many of the first_n patches it removes first are
    artifact tokens (`where` names them)."""
    out = [f"**Verdict on this photo**, tracking p({label}); a map beats random only outside the band of "
           f"{scores[0].deletion_band.n} random orders (mean ± sd)."]
    table = table_decimals(*(x for s in scores for x in (s.deletion_band.sd, s.insertion_band.sd)))
    out += [fill_verdict(s, table) for s in scores]
    wins = [{n for n, dv in contest.beats_random(s).items() if contest.wins(dv)} for s in scores]
    if len(scores) > 1 and wins[0] != wins[1]:
        a, b = scores[0].fill, scores[1].fill
        pairs = ((wins[0], wins[1], a), (wins[1], wins[0], b))
        only = [f"{', '.join(sorted(w - o))} with {f} only" for w, o, f in pairs if w - o]
        out.append(f"The fills disagree (beat random: {'; '.join(only)}): such a win rests on how patches are "
                   "removed, not on the map alone.")
    hit = {n: k for n, k in (artifacts_first or {}).items() if k}
    if hit:
        # "No better than random": better on no curve under any fill (a reviewer: rollout, first with blur and far
        # above the band on insertion, was said to do no better for being worse on deletion). "A likely reason"
        # only where such a map removes more artifact tokens first than every map that beats random does: on
        # chelsea the winners removed as many (4), and the tokens explained nothing.
        never = [n for n in hit if not any("better" in s_v for sc in scores for m, s_v in
                                            contest.beats_random(sc).items() if m == n)]
        most_won = max((hit.get(n, 0) for w in wins for n in w), default=0)
        losers = [n for n in never if hit[n] > most_won]
        does = "does" if len(losers) == 1 else "do"
        why = f"; a likely reason {claims.listed(losers)} {does} no better than random here" if losers else ""
        out.append(f"Among the first {first_n} patches each map removes are artifact tokens ("
                   + ", ".join(f"{n} {k}" for n, k in hit.items())
                   + f"; this photo has {where}): high-norm patches that draw attention because a trained ViT "
                   "uses them as scratch space (Darcet et al. 2024), so attention ranks them high whatever they show"
                   + why + ".")
    if p0 < 0.05:
        out.append(f"p({label}) is only {p0:.2%} with nothing removed, so every curve stays near 0.")
    fills = " and ".join(s.fill for s in scores)
    out.append(f"One photo, {len(scores)} fill{'s' if len(scores) > 1 else ''} ({fills}): a verdict on these maps "
               "for this photo, not on the methods.")
    return " ".join(out)


def curves_verdict(ph: Photo, steps: int, mode: str, seed: int = 0) -> str:
    """contest_verdict for this photo's cached contest and maps."""
    return _verdict_of(ph, contest.compute_contest(ph, steps, mode, seed), contest.curve_maps(ph, seed), steps)


def _verdict_of(ph: Photo, c: contest.Contest, maps: dict[str, np.ndarray], steps: int) -> str:
    first = c.first.curves
    art = contest.artifacts_first(ph, c, maps, steps)
    return contest_verdict([contest.fill_score(c.first), contest.fill_score(c.second)], _short(first.target_label),
                           float(first.deletion[0, 0]), art.counts, art.where, art.first_n)


def curves_progress(ph: Photo, steps: int = 10, mode: str = "black",
                    seed: int = 0, cancel: Cancel = NEVER) -> Iterator[CurvesPanel]:
    """The contest as it comes (readings.contest.contest_steps): map by map, then the random orders, then
    the second fill, the last panel with the verdict; the cached contest at once. `cancel` is checked
    between batches."""
    maps = contest.curve_maps(ph, seed)
    for s in contest.contest_steps(ph, steps, mode, seed, cancel):
        if s.contest is not None:
            # The last panel carries the verdict: it needs every map's AUC under both fills.
            yield _contest_panel(s.contest, steps, verdict=_verdict_of(ph, s.contest, maps, int(steps)))
        elif s.curves is None:
            # Say at once what is coming: the first map's views take seconds on a CPU. No view count here:
            # views shared between deletion and insertion are run once, and the final line gives the true
            # total (it once promised "22 views each" and ended with 80).
            yield CurvesPanel(None, [], f"Computing: {len(maps)} maps ({', '.join(maps)}) and "
                                        f"{perturb.RANDOM_ORDERS} random orders, {int(steps)} steps each, deletion "
                                        f"and insertion, batched, removing patches by {mode}, then again by "
                                        f"{contest.second_fill(mode)}. The curves appear map by map…")
        else:
            yield _curves_panel(s.curves, steps, (s.done, s.total), band=s.band)


@dataclass(frozen=True)
class ContestRun:
    """What the contest on show was run with: the session's photo key (model, heads off and labels with the
    photo: only its equality is read), the steps, the fill, and the costly maps it ranks (contest.costly_maps:
    attention flow once computed; one computed after the contest ran is not in it)."""
    photo: Any
    steps: int
    mode: str
    costly: tuple[str, ...] = ()


def contest_run(ph: Photo, steps: int, mode: str, costly: tuple[str, ...] | None = None) -> ContestRun:
    """The ContestRun of a contest on this photo (costly: the costly maps it ranks; None: those computed now)."""
    return ContestRun(ph.key, int(steps), mode, contest.costly_maps(ph) if costly is None else tuple(costly))


def contest_stale(ran: ContestRun | None, now: ContestRun) -> str:
    """The line over a contest whose settings have changed since it ran: its chart, table and verdict stayed up
    as if current (a walk-through); or, with the same settings, that ranks fewer maps than there are now (attention
    flow computed after it ran: the table ranked 7 maps, the button promised 8, and nothing said so). Empty
    when none is shown or it is for `now`."""
    if ran is None:
        return ""
    if (ran.photo, ran.steps, ran.mode) == (now.photo, now.steps, now.mode):
        new = [m for m in now.costly if m not in ran.costly]  # one lost from the cache since: none missing
        if not new:
            return ""
        named = " and ".join(new)
        return (f"⚠️ **Not every map:** the chart, table and verdict below are from the contest run before "
                f"{named} was computed, and rank the other maps only. Press **{CONTEST_BUTTON}** to rank {named} too.")
    def said(r: ContestRun) -> str:
        return f"{r.steps} steps, patches removed by {r.mode}"
    other = "" if ran.photo == now.photo else ", on the photo (or model) shown before"
    return (f"⚠️ **Not for the settings now:** the chart, table and verdict below are from the contest run with "
            f"{said(ran)}{other}. Press **{CONTEST_BUTTON}** to run it with {said(now)}"
            f"{' on this photo' if other else ''}.")


def _contest_panel(c: contest.Contest, steps: int, verdict: str = "") -> CurvesPanel:
    return _curves_panel(c.first.curves, steps, band=c.first.band, second=c.second, verdict=verdict,
                         forwards=c.first.forwards + c.second.forwards)


def _curves_panel(c: perturb.Curves, steps: int, progress: tuple[int, int] | None = None,
                  verdict: str = "", band: perturb.Curves | None = None, second: contest.FillContest | None = None,
                  forwards: int | None = None) -> CurvesPanel:
    done = "" if progress is None or progress[0] == progress[1] else f"{progress[0]} of {progress[1]} parts so far · "
    views = c.forwards if forwards is None else forwards
    fills = c.mode + (f", then by {second.curves.mode}" if second is not None else "")
    text = (f"{done}Tracking p({_short(c.target_label)}), the unmasked top-1 · {steps} steps · patches removed "
            f"by {fills} · {views} views in all, batched." + (f"\n\n{verdict}" if verdict else ""))
    rows = contest_rows(c, band, second)
    if verdict:
        text += f"\n\n{ranking_line(c, band, [str(r[1]) for r in rows])}\n\n" + RANKING_NOTE.format(
            label=_short(c.target_label), fill=c.mode, n=perturb.RANDOM_ORDERS,
            fill2=second.curves.mode if second is not None else contest.SECOND_FILL)
    return CurvesPanel(contest_figure(c, band), rows, text)


# ------------------------------------------------------------------ export
def _auc_table(c: perturb.Curves) -> np.ndarray:
    """(rows, 3) float32: deletion AUC, insertion AUC, insertion − deletion, in c.names' order."""
    return np.stack([c.deletion_auc, c.insertion_auc, c.insertion_auc - c.deletion_auc], 1).astype(np.float32)


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    """arrays.npz: shift_sweep (2P+1, 4) and deletion_curves (maps × steps) of the unperturbed
    view; the same cached sweep and contest as the page's buttons."""
    out = {"shift_sweep": sweep.full_sweep(ph).array()}
    if ph.vm.has_classifier:
        ct = contest.compute_contest(ph)
        c = ct.first.curves
        out["deletion_curves"] = c.deletion.astype(np.float32)
        out["insertion_curves"] = c.insertion.astype(np.float32)
        out["deletion_curve_maps"] = np.array(c.names)
        # (maps, 3): deletion AUC, insertion AUC, insertion − deletion, in deletion_curve_maps order
        out["contest_auc"] = _auc_table(c)
        out["contest_random_auc"] = _auc_table(ct.first.band)  # (orders, 3), the baseline's spread
        # best first; "random (baseline)" is the random orders' mean
        out["contest_ranking"] = np.array([n for n, _, _ in contest.contestants(c, ct.first.band)])
        # The second fill (blur): the same tables, the same map order.
        out["contest_auc_second_fill"] = _auc_table(ct.second.curves)
        out["contest_random_auc_second_fill"] = _auc_table(ct.second.band)
    return out


def export_figures(ph: Photo) -> dict[str, np.ndarray | go.Figure]:
    """The sweep chart and the deletion / insertion charts, for `python -m vizvit export`."""
    out: dict[str, np.ndarray | go.Figure] = {"shift_sweep_chart": sweep_panel(ph.vm, sweep.full_sweep(ph)).figure}
    if ph.vm.has_classifier:
        ct = contest.compute_contest(ph)
        c = ct.first.curves
        out["deletion_chart"] = curves_figure(c, insertion=False)
        out["insertion_chart"] = curves_figure(c, insertion=True)
        out["contest_chart"] = contest_figure(c, ct.first.band)
    return out


@dataclass(frozen=True)
class ExperimentsParams:
    """Everything a control on the tab sets."""

    dx: int = 0  # shift right (pixels)
    dy: int = 0  # shift down
    fill: str = "edge"  # what enters at the border (vocab.FILLS)
    mask: tuple[int, ...] = ()  # row-major patch ids
    mode: str = "drop"  # how a masked patch is removed (vocab.MASK_MODES)
    steps: int = 10  # the contest's steps and fill: which cached contest the tab shows on open
    curve_mode: str = "black"

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> ExperimentsParams:
        """The page's control values by field name -> ExperimentsParams (missing: the default)."""
        d = cls()
        return cls(dx=int(v.get("dx", d.dx)), dy=int(v.get("dy", d.dy)), fill=v.get("fill", d.fill),
                   mask=v.get("mask", d.mask), mode=v.get("mode", d.mode), steps=int(v.get("steps", d.steps)),
                   curve_mode=v.get("curve_mode", d.curve_mode))


@dataclass(frozen=True)
class ExperimentsPage:
    """What the tab shows on open (the sweep and curves run on request), each field named like its
    component."""

    shift_limits: tuple[int, int]  # the dx / dy sliders' range (±2P)
    shift_view: np.ndarray
    shift_cos: np.ndarray
    shift_info: str
    shift_top5: go.Figure | None
    shift_book: flip.Flipbook
    mask_grid: np.ndarray
    masked_view: np.ndarray
    mask_info: str
    mask_top5: go.Figure | None
    mask_book: flip.Flipbook
    sweep: SweepPanel  # this photo's sweep and contest if computed, else empty panels that say so
    curves: CurvesPanel
    contest_ran: ContestRun | None = None  # what the contest in `curves` ran with (None: none shown)
    sweep_ran: str | None = None  # the fill the sweep in `sweep` ran with (None: none shown)


SWEEP_NOT_RUN = ("*The shift sweep has not been run on this photo with the {fill} fill yet: press "
                 f"**{SWEEP_BUTTON}**.*")
CURVES_NOT_RUN = ("*The contest has not been run on this photo with {steps} steps and the {mode} fill yet: press "
                  "**Run the contest**.*")


def shown_sweep(ph: Photo, fill: str = sweep.DEFAULT_FILL) -> SweepPanel:
    """The sweep panel as a photo opens: its cached sweep under the tab's fill, or an empty panel saying it was
    not run. The previous photo's sweep stayed on screen under a new photo, its rows naming the old top-1."""
    s = ph.peek(sweep.sweep_name(fill))
    if s is None:
        return SweepPanel(None, {"data": [], "headers": list(SWEEP_HEADERS)}, SWEEP_NOT_RUN.format(fill=fill))
    cnn = ph.wb.cnn
    if cnn is None:
        return sweep_panel(ph.vm, s, None, fill)
    probs = ph.peek(sweep.cnn_sweep_name(cnn.id, fill))  # only when already measured
    return sweep_panel(ph.vm, s, None if probs is None else (cnn.id, probs), fill)


def _shown_contest(ph: Photo, steps: int, mode: str) -> tuple[CurvesPanel, ContestRun | None]:
    """The contest panel as a photo opens, and the ContestRun of the contest in it (None: none): its cached
    contest for these settings, or an empty panel saying it was not run (the previous photo's verdict, "on this
    photo", stayed under a new photo). One run before attention flow was computed is shown with the maps it
    ranks (the panel said it was never run, and hid it)."""
    if not ph.vm.has_classifier:  # no class to track: the contest cannot run (its button says why)
        return CurvesPanel(None, [], ""), None
    shown = contest.peek_shown(ph, steps, mode)
    if shown is None:
        return CurvesPanel(None, [], CURVES_NOT_RUN.format(steps=int(steps), mode=mode)), None
    c, costly = shown
    panel = _contest_panel(c, steps, verdict=_verdict_of(ph, c, contest.curve_maps(ph, 0), int(steps)))
    return panel, contest_run(ph, steps, mode, costly)


def show(ph: Photo, p: ExperimentsParams) -> ExperimentsPage:
    """On open: the shift sliders' range, the shifted view, the masked view, and the sweep and contest of
    this photo if they were run."""
    limits = shift_limits(ph)
    s, m = shift_panel(ph, p.dx, p.dy, p.fill), mask_panel(ph, p.mask, p.mode)
    curves, ran = _shown_contest(ph, p.steps, p.curve_mode)
    swept = shown_sweep(ph, p.fill)
    return ExperimentsPage(limits, s.view, s.cosine, s.cosine_text, s.top5, s.book, m.grid, m.masked, m.text, m.top5,
                           mask_book(ph, p.mask, p.mode, m), swept, curves, ran,
                           None if swept.figure is None else p.fill)
