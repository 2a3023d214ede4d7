"""Panel functions of the Experiments tab: (photo handle, UI params) -> what the
components show. Every single perturbed view is one cached forward (``Photo.analysis``);
the sweep and the curves are batched (vizvit.perturb) and cached as derived results.
No gradio here; app.py only wires these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import plotly.graph_objects as go

from .. import artifacts as art_mod
from .. import engine, maps, perturb, render
from ..cancel import NEVER, Cancel
from ..cnn import cnn_shift_probs
from ..errors import UserError
from ..images import View
from ..models import Geometry, VitModel
from . import flip
from .common import artifact_masks, top5_figure
from ..patches import patch_at
from ..vocab import FILLS, MASK_MODES, TOKEN_MODES
from ..session import ATTENTION_FLOW, SHIFT_SWEEP, Photo, cnn_sweep_name, curves_name, ranking_maps_name

EXPERIMENTS_TEXT = """**Shift** the photo by a few pixels and watch the predictions: a ViT cuts a fixed grid, so a
shift that is not a whole number of patches gives every patch different pixels. The cosine map compares
each original patch's embedding (before position embeddings) with the shifted photo's patch at
(i + dy/P, j + dx/P), each rounded toward 0: the grid moved back by the whole patches the photo moved
(so −3 px and +3 px both compare a patch with itself). Grey = no partner.
At a shift of exactly P (edge fill) every compared patch is identical: cosine 1."""

MASKS_TEXT = """**Masks.** Click patches on the left grid to mask them. *black / mean / blur* replace the pixels,
so the model still gets a token there; *drop* removes those tokens from the sequence after the embedding
stage (each kept token keeps its own position embedding), which only a transformer allows; *[MASK] token*
keeps every token but replaces each masked patch's embedding by one learned vector, as BERT, BEiT and the
ViT paper's masked-patch pre-training do (its position embedding is still added)."""

CURVES_TEXT = """**Faithfulness contest** (Petsiuk et al. 2018, RISE): for every map (rollout, raw attention, the
class-specific maps of the Attention tab's menu for the top-1 class, attention flow once computed there),
remove patches most-important-first and follow the probability of the photo's top-1 class (deletion: a
low area under the curve means the map found what matters); insertion starts from everything removed and
adds patches back (a high area is better). The table ranks the maps by insertion − deletion. A map that is
no better than *random* should not be believed on this photo."""


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
    figure: go.Figure
    table: dict  # {"data": rows, "headers": columns} for gr.Dataframe
    text: str


@dataclass(frozen=True)
class CurvesPanel:
    """The faithfulness contest as shown: one chart of every map's deletion and insertion curves, the
    AUC table in rank order, and the text (progress, cost, verdict, what the ranking means)."""

    chart: go.Figure | None  # None: nothing computed yet (only `text` is news)
    table: list[list]
    text: str


SWEEP_HEADERS = ["k (px right)", "whole patches moved back", "mean cos", "min cos", "top-1 label",
                 "top-1 prob", "p(unshifted top-1)"]
CURVES_HEADERS = ["rank", "map", "deletion AUC (lower = better)", "insertion AUC (higher = better)",
                  "insertion − deletion (higher = better)"]
# Measured by benchmarks/methods_effects.py (trained ViT-Ti/16, chelsea.jpg, 10 steps, black fill, this
# project's 2-core CPU): what one contest costs, said on its button.
CONTEST_COST = "7 maps: 4 backward passes + 140 forward views, 12–20 s for ViT-Ti on 2 CPU cores"
CONTEST_BUTTON = f"Run the contest ({CONTEST_COST})"
RANKING_NOTE = ("**What the ranking means:** on this photo, with this fill, removing patches in the order of the "
                "maps near the top lowered p({label}) sooner and adding them back raised it sooner (rank by "
                "insertion − deletion AUC; *random order* is the baseline to beat). **What it does not:** it is one "
                "photo and one way of removing patches ({fill}: a pixel fill the model never saw in training, or a "
                "token drop), so it ranks these maps here, not the methods in general.")


def _short(label: str) -> str:
    return label.split(",")[0]


def _grid_image(view: np.ndarray, g: Geometry, marked: tuple[int, ...] = ()) -> np.ndarray:
    return render.draw_grid(render.enlarge(view, render.display_scale(g)), g, marked=marked)


# ------------------------------------------------------------------ shift
def _two_decimals(v: float) -> str:
    """0.973 -> '.97', 0.9999 -> '1', -0.41 -> '-.4' (one decimal below 0: a minus sign and two
    decimals do not fit a 48 px tile at a size a lecture hall can read)."""
    if v < -0.05:
        t = f"{v:.1f}".replace("0.", ".", 1)
        return "-1" if t == "-1.0" else t
    t = f"{max(v, 0.0):.2f}".replace("0.", ".", 1)
    return "1" if t == "1.00" else t


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
    cos = perturb.shift_cosine(base.patch_embeddings, a.patch_embeddings, int(dx), int(dy), g)
    mean, low = perturb.cos_summary(cos)
    di, dj = perturb.patches_moved_back(int(dy), g.patch_size), perturb.patches_moved_back(int(dx), g.patch_size)
    n = int(np.isfinite(cos).sum())
    text = (f"Shift dx = {dx}, dy = {dy} px ({fill} fill) · grid moved back by ({dj}, {di}) whole patches "
            f"(columns, rows) · **mean cos {mean:.3f}**, **min cos {low:.3f}** over {n} of {g.num_patches} "
            f"patches that have a partner (red 1, white 0, blue −1, grey: no partner)")
    if a.top5 and base.top5:
        text += (f" · top-1 **{_short(a.top5[0].label)}** {a.top5[0].prob:.1%} "
                 f"(unshifted: {_short(base.top5[0].label)} {base.top5[0].prob:.1%})")
    view, cos_img, top5 = _grid_image(a.input_view, g), cosine_image(cos, g), top5_figure(vm, a, base)
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
SWEEP_NAME = SHIFT_SWEEP


def sweep_panel(vm: VitModel, s: perturb.ShiftSweep, cnn: tuple[str, np.ndarray] | None = None) -> SweepPanel:
    """The sweep so far; cnn: (name, probability of its unshifted top-1 per k) beside the ViT."""
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
    fig.update_layout(
        title=f"Shift sweep, k = 0..{2 * p} px right, edge fill ({len(s.rows)}/{s.total} views)",
        xaxis=dict(title="k (pixels shifted right)", range=[-0.5, 2 * p + 0.5]),
        yaxis=dict(title="cosine", range=[-1.05, 1.05]),
        # Fixed ticks: left to plotly, an exported chart got 2/26/50/74/98 % (issue 17).
        yaxis2=dict(title="probability", overlaying="y", side="right", range=[0, 1], tickformat=".0%",
                    tickmode="array", tickvals=[0, 0.25, 0.5, 0.75, 1.0]),
        legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=40, b=10), height=340)
    rows = [[r.k, r.moved_back, round(r.mean_cos, 4), round(r.min_cos, 4), _short(r.top1_label),
             round(r.top1_prob, 4), round(r.base_class_prob, 4)] for r in s.rows]
    headers = list(SWEEP_HEADERS)
    if cnn is not None:
        headers.append("CNN p(top-1)")
        rows = [row + [round(float(c), 4)] for row, c in zip(rows, cnn[1])]
    text = ("Done: " if s.done else "Running… ") + f"{len(s.rows)} of {s.total} shifted views (batched forwards)."
    return SweepPanel(fig, {"data": rows, "headers": headers}, text)


def full_sweep(ph: Photo, cancel: Cancel = NEVER) -> perturb.ShiftSweep:
    """The complete sweep, cached under the same name as the streamed one (Cancelled: nothing cached)."""
    return ph.derived(SWEEP_NAME, lambda: perturb.shift_sweep(ph.vm, ph.analysis().input_view, "edge",
                                                              cancel=cancel))


def sweep_progress(ph: Photo, chunk: int = perturb.DEFAULT_CHUNK, cancel: Cancel = NEVER) -> Iterator[SweepPanel]:
    """Yields the growing sweep after each batched chunk; cached once complete. `cancel` is checked
    between chunks (Cancelled)."""
    vm = ph.vm
    name = SWEEP_NAME
    done = ph.peek(name)
    if done is None:
        for s in perturb.shift_sweep_steps(vm, ph.analysis().input_view, "edge", chunk, cancel):
            yield sweep_panel(vm, s)
        done = s
        ph.derived(name, lambda: done)
    if ph.wb.cnn is None:
        yield sweep_panel(vm, done)
        return
    ks = [r.k for r in done.rows]
    probs = ph.derived(cnn_sweep_name(ph.wb.cnn.id),
                       lambda: cnn_shift_probs(ph.wb.cnn, ph.analysis().input_view, ks, "edge"))
    yield sweep_panel(vm, done, (ph.wb.cnn.id, probs))


# ------------------------------------------------------------------ masks
def rollout_map(ph: Photo) -> np.ndarray:
    """(gh, gw) rollout through all layers of the unmasked photo (the cached mean rollout)."""
    return maps.method_map("rollout", ph.vm, ph.analysis(), ph.derived)


def clean_mask(mask: tuple[int, ...] | list[int] | None, g: Geometry) -> tuple[int, ...]:
    """Keep valid patch ids only (a model change can shrink the grid)."""
    return tuple(sorted({int(i) for i in (mask or ()) if 0 <= int(i) < g.num_patches}))


def toggle_at(ph: Photo, mask: tuple[int, ...] | None, x: float, y: float) -> tuple[int, ...]:
    """A click at (x, y) on the enlarged mask grid toggles that patch."""
    g = ph.vm.geometry
    r, c = patch_at(x, y, g, render.display_scale(g))
    return perturb.toggle(clean_mask(mask, g), r * g.grid[1] + c)


# The maps "top / bottom k %" can rank the patches by (vizvit.maps.MAP_METHODS but random, which has
# its own button, and attention flow, minutes long); class-specific ones for the top-1 class.
MASK_MAPS = tuple(n for n, m in maps.MAP_METHODS.items() if n != "random" and not m.slow)


def mask_action(ph: Photo, mask: tuple[int, ...] | None, action: str, percent: float,
                seed: int = 0, rank_by: str = "rollout") -> tuple[int, ...]:
    """clear | invert | random | top | bottom (by the map `rank_by`, MASK_MAPS) -> the new mask."""
    g = ph.vm.geometry
    mask = clean_mask(mask, g)
    f = float(percent) / 100.0
    if action == "clear":
        return ()
    if action == "invert":
        return perturb.invert(mask, g.num_patches)
    if action == "random":
        return perturb.random_mask(g.num_patches, f, seed)
    if action in ("top", "bottom"):
        if rank_by not in MASK_MAPS:
            raise UserError(f"Rank patches by one of: {', '.join(MASK_MAPS)}.")
        if not maps.applies(rank_by, ph.vm, ph.analysis()):
            raise UserError(f"{rank_by} needs a class to explain, and this model has no classifier.")
        values = maps.method_map(rank_by, ph.vm, ph.analysis(), ph.derived)
        return perturb.mask_by_map(values, f, top=action == "top")
    raise UserError(f"Unknown mask action {action!r}.")


MASK_CONTROLS = ("mode",)


def mask_book(ph: Photo, mask: tuple[int, ...] | None, mode: str, panel: MaskPanel, clicked: bool = False) -> flip.Flipbook:
    """The mask pictures just drawn and their top-5, for the page to keep (a toggle back to a mask
    seen before is then drawn at once), and the click rule: a click toggles the patch under it (toggle_at). The
    page keeps its own mask through clicks (clicked: this answer is a click's, maybe not the last)."""
    g = ph.vm.geometry
    mask = clean_mask(mask, g)
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
        return clean_mask([int(t) for t in text[len(PAGE_MASK):].split(",") if t.strip()], g)
    except ValueError:
        raise UserError(f"A mask is patch numbers separated by commas, not {text!r}.") from None


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
    mask = clean_mask(mask, g)
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
        what = (f"the model gets {a.kept_tokens.numel()} tokens ({' '.join(g.prefix_names)} + "
                f"{g.num_patches - len(mask)} patches)")
    elif token is not None:
        what = (f"the model still gets all {g.seq_len} tokens; each masked patch's embedding is the [MASK] token "
                f"(‖[MASK]‖ = {float(token.vector.norm()):.3g}) plus its own position embedding: {token.source}")
    else:
        what = f"pixels filled with {mode}; the model still gets all {g.seq_len} tokens"
    text = f"**{len(mask)} of {g.num_patches}** patches masked ({mode}): {what}"
    if a.top5 and base.top5:
        b0 = base.top5[0]
        now = float(a.probs[b0.index])
        text += (f" · top-1 **{_short(a.top5[0].label)}** {a.top5[0].prob:.1%} · unmasked top-1 "
                 f"{_short(b0.label)}: {b0.prob:.1%} → {now:.1%} (Δ {now - b0.prob:+.1%})")
    return MaskPanel(grid, masked, text, top5_figure(vm, a, base))


# ------------------------------------------------------------------ faithfulness
def curve_maps(ph: Photo, seed: int = 0) -> dict[str, np.ndarray]:
    """name -> (gh, gw) map for the curves, cached per photo: every map method of vizvit.maps (the
    class-specific ones for the top-1 class, shared with the Attention tab's cache so each is
    computed once), and attention flow once the Attention tab has computed it (minutes: a job)."""
    out = dict(ph.derived(ranking_maps_name(seed), lambda: maps.ranking_maps(ph.vm, ph.analysis(), ph.derived, seed)))
    if ph.peek(ATTENTION_FLOW) is not None:
        out["attention flow"] = maps.flow_map(ph.analysis(), ph.derived)
    return out


def curves_figure(c: perturb.Curves, insertion: bool) -> go.Figure:
    ys, auc = (c.insertion, c.insertion_auc) if insertion else (c.deletion, c.deletion_auc)
    fig = go.Figure()
    for name, y, area in zip(c.names, ys, auc):
        fig.add_scatter(x=c.fractions, y=y, name=f"{name} (AUC {area:.3f})", mode="lines+markers")
    what = "added back" if insertion else "removed"
    fig.update_layout(title=f"{'Insertion' if insertion else 'Deletion'}: p({_short(c.target_label)}) "
                            f"as patches are {what} ({c.mode})",
                      # a little room left of 0 %: its tick label overlapped the y axis's "0"
                      xaxis=dict(title=f"fraction of patches {what}", range=[-0.04, 1.02], tickformat=".0%"),
                      yaxis=dict(title="probability", rangemode="tozero"),
                      legend=dict(orientation="h", y=-0.3), margin=dict(l=10, r=10, t=40, b=10), height=360)
    return fig


def contest_order(c: perturb.Curves) -> np.ndarray:
    """Map indices best first: by insertion − deletion AUC, descending (ties by registry order)."""
    return np.argsort(-(c.insertion_auc - c.deletion_auc), kind="stable")


def contest_rows(c: perturb.Curves) -> list[list]:
    """The AUC table: [rank, map, deletion AUC, insertion AUC, insertion − deletion], best first."""
    d, i = c.deletion_auc, c.insertion_auc
    return [[r + 1, c.names[k] + (" (baseline)" if c.names[k] == "random" else ""), round(float(d[k]), 4),
             round(float(i[k]), 4), round(float(i[k] - d[k]), 4)] for r, k in enumerate(contest_order(c))]


def contest_figure(c: perturb.Curves) -> go.Figure:
    """Every map's deletion (solid) and insertion (dashed) curve in one chart, one colour per map,
    legend in rank order; random order grey."""
    fig = go.Figure()
    for r, k in enumerate(contest_order(c)):
        name = c.names[k]
        col = "#888888" if name == "random" else CONTEST_COLOURS[k % len(CONTEST_COLOURS)]
        label = f"{r + 1}. {name} (del {c.deletion_auc[k]:.3f}, ins {c.insertion_auc[k]:.3f})"
        fig.add_scatter(x=c.fractions, y=c.deletion[k], name=label, legendgroup=name, mode="lines",
                        line=dict(color=col, width=2))
        fig.add_scatter(x=c.fractions, y=c.insertion[k], name=label, legendgroup=name, mode="lines",
                        line=dict(color=col, width=2, dash="dash"), showlegend=False)
    fig.update_layout(title=f"p({_short(c.target_label)}) as patches are removed (solid) or added back (dashed), "
                            f"{c.mode}",
                      xaxis=dict(title="fraction of patches removed / added back", range=[-0.04, 1.02],
                                 tickformat=".0%"),
                      yaxis=dict(title="probability", rangemode="tozero"),
                      legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=40, b=10), height=460)
    return fig


# One colour per map, in registry order (plotly's qualitative set, random drawn grey).
CONTEST_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                   "#bcbd22")


def _curves_key(steps: int, mode: str, seed: int, maps: dict[str, np.ndarray]) -> tuple:
    return curves_name(steps, mode, seed, tuple(maps))


def compute_curves(ph: Photo, steps: int = 10, mode: str = "black",
                   seed: int = 0) -> perturb.Curves:
    """All maps' curves in one batched run, cached per photo."""
    vm = ph.vm
    maps = curve_maps(ph, seed)
    return ph.derived(_curves_key(steps, mode, seed, maps),
                      lambda: perturb.faithfulness_curves(vm, ph.analysis().input_view, maps, int(steps),
                                                          mode))  # type: ignore[arg-type]


def curves_panel(ph: Photo, steps: int = 10, mode: str = "black", seed: int = 0) -> CurvesPanel:
    return _curves_panel(compute_curves(ph, steps, mode, seed), steps, verdict=curves_verdict(ph, steps, mode, seed))


# Deletion AUCs closer to random's than this share of the unmasked probability are "about random":
# one photo is noisy, and on random weights p(top-1) is 0.003 to begin with.
TIE_SHARE = 0.02


def first_removed(m: np.ndarray, steps: int) -> np.ndarray:
    """(gh, gw) map -> the patch ids the deletion curve removes at its first step (the same
    order as perturb.faithfulness_curves: descending, ties by patch number)."""
    n = max(1, round(m.size / steps))
    return np.argsort(-m.ravel(), kind="stable")[:n]


def deletion_verdict(names: tuple[str, ...] | list[str], auc: np.ndarray, fill: str, label: str, p0: float,
                     artifacts_first: dict[str, int] | None = None, where: str = "", first_n: int = 0) -> str:
    """One verdict from this photo's deletion AUCs (lower = better): which map wins, which beat
    random (by more than TIE_SHARE·p0, p0 = the probability with nothing removed), and the caveat
    of one photo and one fill. artifacts_first: map -> how many of the first_n patches it removes
    first are artifact tokens (`where` names them)."""
    auc = np.asarray(auc, float)
    tie = TIE_SHARE * p0
    order = np.argsort(auc, kind="stable")
    best = names[int(order[0])]
    out = [f"**Verdict on this photo ({fill} fill):**"]
    if "random" not in names:
        out.append(f"**{best}** removes p({label}) fastest (deletion AUC {auc[order[0]]:.3g}, lower is better).")
    else:
        r = float(auc[list(names).index("random")])
        maps = [(n, float(a)) for n, a in zip(names, auc) if n != "random"]
        better = [f"{n} ({a:.3g})" for n, a in maps if a < r - tie]
        tied = [f"{n} ({a:.3g})" for n, a in maps if abs(a - r) <= tie]
        worse = [f"{n} ({a:.3g})" for n, a in maps if a > r + tie]
        if best == "random" or not better:
            out.append(f"no map beats **random order** (AUC {r:.3g}, lower is better): on this photo none of them "
                       f"ranks the patches that p({label}) needs better than chance.")
        else:
            out.append(f"**{best}** removes p({label}) fastest (deletion AUC {auc[order[0]]:.3g}, lower is better); "
                       f"better than random ({r:.3g}): {', '.join(better)}.")
        if tied:
            out.append(f"About random (within {tie:.2g}, {TIE_SHARE:.0%} of p = {p0:.3g} with nothing removed): "
                       f"{', '.join(tied)}.")
        if worse:
            out.append(f"Worse than random: {', '.join(worse)}.")
        rank_r = int(np.where(order == list(names).index("random"))[0][0]) + 1
        out.append(f"Random ranks {rank_r} of {len(names)}.")
    hit = {n: k for n, k in (artifacts_first or {}).items() if k}
    if hit:
        lose = "random" in names and all(
            auc[list(names).index(n)] >= auc[list(names).index("random")] - tie for n in hit)
        out.append(f"Among the first {first_n} patches each map removes are artifact tokens ("
                   + ", ".join(f"{n} {k}" for n, k in hit.items())
                   + f"; this photo has {where}): high-norm patches that draw attention because a trained ViT "
                   "uses them as scratch space (Darcet et al. 2024), so attention ranks them high whatever they show"
                   + ("; a likely reason these maps do no better than random here." if lose else "."))
    if p0 < 0.05:
        out.append(f"p({label}) is only {p0:.2%} with nothing removed, so every curve stays near 0.")
    out.append("One photo and one fill: a verdict on these maps for this photo, not on the methods.")
    return " ".join(out)


def curves_verdict(ph: Photo, steps: int, mode: str, seed: int = 0) -> str:
    """deletion_verdict for this photo's cached curves and maps."""
    c = compute_curves(ph, steps, mode, seed)
    return _verdict_of(ph, c, curve_maps(ph, seed), steps)


def _verdict_of(ph: Photo, c: perturb.Curves, maps: dict[str, np.ndarray], steps: int) -> str:
    a = ph.analysis()
    art = art_mod.through_layers(artifact_masks(a, ph.derived))[-1].reshape(-1)  # (P,) any layer's artifacts
    counts = {n: int(art[first_removed(maps[n], steps)].sum()) for n in c.names if n != "random" and n in maps}
    n_first = max(1, round(art.size / steps))
    where = f"{int(art.sum())} artifact token{'s' if art.sum() != 1 else ''}: {art_mod.describe(art.reshape(a.geometry.grid))}"
    return deletion_verdict(c.names, c.deletion_auc, c.mode, _short(c.target_label), float(c.deletion[0, 0]), counts,
                            where if art.any() else "", n_first)


def curves_progress(ph: Photo, steps: int = 10, mode: str = "black",
                    seed: int = 0, cancel: Cancel = NEVER) -> Iterator[CurvesPanel]:
    """The curves map by map (each map's views batched), so the page shows them as they
    come; the complete set is cached like compute_curves'. `cancel` is checked between batches."""
    maps = curve_maps(ph, seed)
    name = _curves_key(steps, mode, seed, maps)
    done = ph.peek(name)
    if done is not None:
        yield _curves_panel(done, steps, verdict=_verdict_of(ph, done, maps, int(steps)))
        return
    vm = ph.vm
    view = ph.analysis().input_view
    # Say at once what is coming: the first map's views take seconds on a CPU.
    # No view count here: views shared between deletion and insertion are run once, and the
    # final line gives the true total (it once promised "22 views each" and ended with 80).
    yield CurvesPanel(None, [], f"Computing: {len(maps)} maps ({', '.join(maps)}), {int(steps)} steps "
                                      f"each, deletion and insertion, batched. The curves appear map by map…")
    parts: list[perturb.Curves] = []
    for map_name, m in maps.items():
        target = parts[0].target if parts else None
        parts.append(perturb.faithfulness_curves(vm, view, {map_name: m}, int(steps), mode,  # type: ignore[arg-type]
                                                 target=target, cancel=cancel))
        merged = perturb.merge_curves(parts)
        if len(parts) < len(maps):
            yield _curves_panel(merged, steps, (len(parts), len(maps)))
    final = merged
    ph.derived(name, lambda: final)
    # The last map's panel carries the verdict: it needs every map's AUC.
    yield _curves_panel(final, steps, (len(parts), len(maps)), verdict=_verdict_of(ph, final, maps, int(steps)))


def _curves_panel(c: perturb.Curves, steps: int, progress: tuple[int, int] | None = None,
                  verdict: str = "") -> CurvesPanel:
    done = "" if progress is None or progress[0] == progress[1] else f"{progress[0]} of {progress[1]} maps so far · "
    text = (f"{done}Tracking p({_short(c.target_label)}), the unmasked top-1 · {steps} steps · patches removed "
            f"by {c.mode} · {c.forwards} views in all, batched." + (f"\n\n{verdict}" if verdict else ""))
    if verdict:
        best = contest_rows(c)[0][1]
        text += (f"\n\n**Ranking:** {' > '.join(str(r[1]) for r in contest_rows(c))} (best: **{best}**).\n\n"
                 + RANKING_NOTE.format(label=_short(c.target_label), fill=c.mode))
    return CurvesPanel(contest_figure(c), contest_rows(c), text)


# ------------------------------------------------------------------ export
def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    """arrays.npz: shift_sweep (2P+1, 4) and deletion_curves (maps × steps) of the unperturbed
    view; the same cached sweep and curves as the page's buttons."""
    out = {"shift_sweep": full_sweep(ph).array()}
    if ph.vm.has_classifier:
        c = compute_curves(ph)
        out["deletion_curves"] = c.deletion.astype(np.float32)
        out["insertion_curves"] = c.insertion.astype(np.float32)
        out["deletion_curve_maps"] = np.array(c.names)
        # (maps, 3): deletion AUC, insertion AUC, insertion − deletion, in deletion_curve_maps order
        out["contest_auc"] = np.stack([c.deletion_auc, c.insertion_auc, c.insertion_auc - c.deletion_auc], 1
                                      ).astype(np.float32)
        out["contest_ranking"] = np.array([c.names[k] for k in contest_order(c)])  # best first
    return out


def export_figures(ph: Photo) -> dict[str, "np.ndarray | go.Figure"]:
    """The sweep chart and the deletion / insertion charts, for `python -m vizvit export`."""
    out: dict[str, np.ndarray | go.Figure] = {"shift_sweep_chart": sweep_panel(ph.vm, full_sweep(ph)).figure}
    if ph.vm.has_classifier:
        c = compute_curves(ph)
        out["deletion_chart"] = curves_figure(c, insertion=False)
        out["insertion_chart"] = curves_figure(c, insertion=True)
        out["contest_chart"] = contest_figure(c)
    return out


@dataclass(frozen=True)
class ExperimentsParams:
    """Everything a control on the tab sets."""

    dx: int = 0  # shift right (pixels)
    dy: int = 0  # shift down
    fill: str = "edge"  # what enters at the border (vocab.FILLS)
    mask: tuple[int, ...] = ()  # row-major patch ids
    mode: str = "drop"  # how a masked patch is removed (vocab.MASK_MODES)

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> "ExperimentsParams":
        """The page's control values by field name -> ExperimentsParams (missing: the default)."""
        d = cls()
        return cls(dx=int(v.get("dx", d.dx)), dy=int(v.get("dy", d.dy)), fill=v.get("fill", d.fill),
                   mask=v.get("mask", d.mask), mode=v.get("mode", d.mode))


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


def show(ph: Photo, p: ExperimentsParams) -> ExperimentsPage:
    """On open: the shift sliders' range, the shifted view and the masked view."""
    limits = shift_limits(ph)
    s, m = shift_panel(ph, p.dx, p.dy, p.fill), mask_panel(ph, p.mask, p.mode)
    return ExperimentsPage(limits, s.view, s.cosine, s.cosine_text, s.top5, s.book, m.grid, m.masked, m.text, m.top5,
                           mask_book(ph, p.mask, p.mode, m))
