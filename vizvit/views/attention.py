"""The Attention tab's presenter: readings (vizvit.readings.attention, cached through the photo's
`Photo.derived`) -> pictures (vizvit.views.layout), texts, figures, the page's books (views.books), a Page.
No gradio here; page/tabs/attention.py only wires these. Nothing here runs the model except
`relevance_panel` (one backward pass, on request).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import torch

from vizvit.cancel import NEVER, Cancel
from vizvit.errors import NO_CLASS, UserError
from vizvit.methods import maps, maths as att_mod
from vizvit.methods.maps import Cache, no_cache, relevance_map
from vizvit.model.engine import Analysis
from vizvit.model.models import PATCH_MEAN, Geometry, VitModel
from vizvit.model.patches import patch_at
from vizvit.pictures import figures, render
from vizvit.readings import artifacts_rule as art_mod, methods
from vizvit.readings.artifacts import artifact_masks, artifacts_through
from vizvit.readings.attention import (
    NEAR_ZERO,
    AttnParams,
    artifact_stack,
    distances,
    excluded,
    full_attentions,
    fusion_of,
    grid_maps,
    head_rollout,
    main_map,
    main_matrix,
    map_range,
    query_token,
    range_floor,
    strip_maps,
    summary_of,
    uniform_level,
)
from vizvit.session import Photo
from vizvit.views.books import page_book, page_matrix
from vizvit.views.layout import (
    UNIFORM_MARK,
    compose_grid,
    compose_strip,
    grid_bar,
    map_image,
    outline_grid_cell,
    outline_strip_tile,
    tile_tops,
)
from vizvit.vocab import DISTANCE_NORMS, ONE_HEAD, DistanceNorm

# ------------------------------------------------------------------ texts
MAP_SENSE_RAW = ("SigLIP has no [CLS]: its summary is the **MAP head** (a learned probe that attends once, after "
                 "the last block). Shown: the MAP head's weights read back through this layer's attention, s·A "
                 "(at the last layer, what the patches that the MAP head reads were attending to)")
MAP_SENSE_ROLLOUT = ("SigLIP has no [CLS]: the rollout ends with the **MAP head**'s attention s, so the map is "
                     "s·R through this layer")
MAIN_TEXT = """**Main map.** By default: how much the **[CLS] token** attends to each patch, in the chosen layer
and head (or the heads fused by mean / max / min), drawn over exactly the pixels the model saw. Each row
of attention sums to 1 over *all* tokens, [CLS] included, so the table with the map says how much
went to [CLS] itself. **Click a patch** to use it as the query: *row* = what that patch attends to,
*column* = how much every patch attends to it. **Rolled out**: instead of one layer's attention, the
attention composed through all layers up to the chosen one (see the strip). **Colour scale**: *0 to max*
(the default) shows near-uniform attention as near-uniform; *this map's range* stretches the smallest
difference over the whole colour map (noise then looks like structure: the line under the table says
how narrow the range is); *fixed across layers and heads* keeps one range while you move the sliders.
The blue line on the colour bar is the uniform level 1/N (N tokens); when 1/N lies outside the map's range the bar
says *1/N above* or *below* instead, with no line. A clicked patch's weight on itself
is left out of the range (in rollout it would make every other patch dark): it shows in the top colour,
and the table gives it."""

GRID_TEXT = f"""**All layers × heads.** One small map per (layer, head), rows = layers from the first (top) to the
last, columns = heads. It shows the same query and direction as the main map. **Click a cell** to open that layer and
head above (the main map's cell is outlined in yellow; when it fuses the heads, the whole layer is). By default each
cell runs from **0 to its own 99th percentile**, or half its max if that is higher (the bar says *tile p99* and, under
it, that top's value for the outlined cell); the patches above the top take the top colour. So a head's pattern shows
whatever its level against the other heads', but where a few patches get far more than the rest, they set the tile's
top and the rest of it is dark. A near-uniform cell still looks near-uniform (it starts at 0, not at its minimum).
A top is never below **{NEAR_ZERO:.0%} of the uniform level 1/N**: a cell whose patches all get less than that (a head
whose query keeps nearly all of its attention; the main map says *Nearly zero everywhere*) is drawn against that
floor, dark or black, with no pattern made up from nothing.
*One shared colour scale*: one range for every cell, from 0 to the bar's top (compare heads; the blue line is the
uniform level 1/N). Artifact tokens (cyan) are left out of every range unless you tick *artifact tokens in the colour
range*. *Rolled out*: per-head rollout, R(l, h) = Â(l, h) · R(l − 1): head h of layer l on top of the mean rollout of
the layers below; its mean over the heads is exactly the layer's rollout."""

ROLLOUT_TEXT = """**Attention rollout** (Abnar & Zuidema 2020), one map per layer. Each layer's heads are fused
(mean, max or min), optionally the lowest fraction of the weights is discarded (*per row*: each row's
lowest patch weights, [CLS] never discarded; *global (vit-explain)*: the lowest of the whole matrix,
only [CLS]→[CLS] kept, as jacobgil/vit-explain does), the residual connection is modelled by
Â = ½F + ½I (rows renormalised), and the layers are multiplied in order, R = Â(l) ⋯ Â(1). Tile *≤l* is
the [CLS] row of R through layer l. Formulas, sources and how peers differ: docs/methods.md."""

DISTANCE_TEXT = """**Mean attention distance** (ViT paper, Fig. 7), on this photo: for each head, the average over
query patches of the attention-weighted distance (in model-input pixels) to the patches it attends to
([CLS] left out, and by default the remaining weights renormalised to sum to 1; *raw (probing-vits)*
leaves them as they are). Low = local heads (like convolutions), high = global ones. Hover a dot for its head;
**click a dot** (or choose a head in the list) to open its map."""


RELEVANCE_TEXT = methods.menu_text()  # each menu method's sentence, from its record

# The methods of the Attention tab's map menu (vizvit.readings.methods.MENU, in registry order).
EXPLAIN_METHODS = tuple(m.name for m in methods.MENU)


# ------------------------------------------------------------------ main map
@dataclass(frozen=True)
class MainPanel:
    image: np.ndarray | None  # (s·H, s·W, 3) uint8; None: not drawn (main_panel with_image=False)
    values: np.ndarray  # (gh, gw) float32: the map drawn
    readout: str  # markdown with exact numbers



def scale_note(values: np.ndarray, lo: float, hi: float, scale: str, g: Geometry,
               elsewhere: str = "the prefix tokens", exclude: np.ndarray | None = None) -> str:
    """One line under the map: the colour range, and how narrow the map's own spread is (or that
    it is nearly zero everywhere). elsewhere: where the rest of the row's attention goes. exclude:
    (gh, gw) bool, the patches the colour range leaves out (the artifact tokens): the note reads the
    patches the colours are read from, as the range does."""
    u = uniform_level(g)
    shown = values[~exclude] if exclude is not None and not exclude.all() else values.ravel()
    vmin, vmax, mean = float(shown.min()), float(shown.max()), float(shown.mean())
    note = f"Colours: **{scale}**, {range_number(lo)} … {range_number(hi)}; " + uniform_note(u, lo, hi, g.seq_len)
    besides = " (the artifact tokens left out)" if shown.size < values.size else ""
    if vmax < range_floor(g):  # nothing to see: say so instead of calling it uniform
        rest = f"{elsewhere} and the artifact tokens" if besides else elsewhere
        note += (f" ⚠️ **Nearly zero everywhere**: every patch{besides} gets at most {bound(vmax, up=True)} (in all "
                 f"{float(shown.sum()):.2g}); the rest goes to {rest}. The colours start at "
                 f"{NEAR_ZERO:.0%} of 1/N, so no pattern is made up from it.")
    # Uniform is a spread small against the patches' own level, not against 1/N: a column (what
    # every query gives this patch) can sit far below 1/N everywhere and still be 30x brighter in one
    # place than another.
    elif vmax - vmin < 0.5 * mean:
        note += (f" ⚠️ This map is nearly uniform: all patches{besides} lie within {bound(vmin, up=False, digits=3)} … "
                 f"{bound(vmax, up=True, digits=3)}, "
                 f"a spread of {(vmax - vmin) / mean:.0%} of their mean")
        note += ("; *this map's range* stretches that to the whole colour map." if scale == "this map's range"
                 else ".")
    return note


def uniform_note(u: float, lo: float, hi: float, n: int) -> str:
    """Where the uniform level 1/N stands against the colour range lo … hi: a line on the bar, or
    (as render.colorbar_labels draws it) off the bar, above or below the whole range, with no line.
    A grey photo's [CLS] map tops out at 0.000552, 9x under 1/197: "the blue line on the bar" was none."""
    level = f"1/N = 1/{n} = {u:.3g}"
    if lo <= u <= hi:
        return f"the blue line on the bar is the uniform level {level}."
    where = "above" if u > hi else "below"
    return (f"the uniform level {level} is {where} this map's whole range, so the bar draws no line for it "
            f"(it says *1/N {where}*).")


def bound(x: float, up: bool, digits: int = 2) -> str:
    """x to `digits` significant figures, rounded away from the values it bounds (up for a maximum,
    down for a minimum): a maximum of 1.1229e-07 printed as "less than 1.1e-07" (rounded to nearest)
    was false. Decimal: exact, where x / 10**e in floats can land on the wrong side of an integer."""
    if x == 0 or not math.isfinite(x):
        return f"{x:.{digits}g}"
    d = Decimal(x)  # the float's exact value
    e = d.adjusted() - digits + 1
    q = d.scaleb(-e).to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR).scaleb(e)
    return f"{float(q):.{digits}g}"  # the string's decimal is q: the float's last bit does not matter


def table_number(v: float) -> str:
    """A readout table's value: 4 decimals from 0.01 up, 3 significant figures below (scientific below 1e-4):
    4 decimals printed layer 1 head 3's max (1.12e-07) and min alike as "0.0000" (chelsea), and chelsea's
    layer-11 rollout top, 0.00647 on the colour bar and in the sentence, as "0.0065"."""
    return f"{v:.4f}" if v == 0 or abs(v) >= 0.01 else f"{v:#.3g}"


def range_number(v: float) -> str:
    """A colour range's end in a sentence, as the readout table beside it writes it ("0 … 0.0750", not
    "0 … 0.075" beside the table's "max outside them 0.0750"); a whole number (0, a fixed scale's 1) as one."""
    return f"{v:g}" if v == round(v) else table_number(v)


def _where(values: np.ndarray, fn: Callable) -> tuple[float, int, int]:
    i = int(fn(values))
    r, c = divmod(i, values.shape[1])
    return float(values.flat[i]), r, c


def main_panel(vm: VitModel, a: Analysis, p: AttnParams, cache: Cache = no_cache,
               fixed_max: float | None = None, scale: int | None = None, with_image: bool = True) -> MainPanel:
    """fixed_max: the top of the "fixed across layers and heads" scale (default: computed from
    every layer and head of this query and direction); scale: the picture's enlargement (see map_image).
    with_image False: the values and readout only (image None), for a map the page draws itself."""
    g = vm.geometry
    p = p.checked(g)
    m = main_matrix(a, p, cache)  # (N, N)
    mm = main_map(a, p, cache, fixed_max, m)
    values, arts, (lo, hi) = mm.values, mm.artifacts, mm.lo_hi
    lines = _readout(a, p, m, values, arts)
    lines += ["", scale_note(values, lo, hi, p.scale, g, " and ".join(g.prefix_names) or "the MAP head",
                             excluded(arts, p)),
              artifact_note(arts, p, "through layer" if p.mode != "raw" else "in layer", p.layer, values)
              or early_artifact_note(values, artifact_masks(a, cache), p.layer, range_floor(g))]
    image = map_image(a.input_view, values, g, p, highlight=p.query, lo_hi=(lo, hi),
                      marks={UNIFORM_MARK: uniform_level(g)}, artifacts=arts, scale=scale) if with_image else None
    return MainPanel(image=image, values=values, readout="\n".join(lines).rstrip())


def _readout(a: Analysis, p: AttnParams, m: torch.Tensor, values: np.ndarray, arts: np.ndarray) -> list[str]:
    """The main map's readout table: what it shows, the summary's and the prefix tokens' shares, the
    query's, the map's sum, max and min, the artifact tokens' share, the patches holding τ."""
    g = a.geometry
    t = query_token(p, g)
    pooling = g.pools_with_map_head and p.query is None  # SigLIP's summary: the MAP head, not a token
    pre = g.num_prefix_tokens
    what = "head " + str(p.head) if p.show == ONE_HEAD else f"{p.show} of {g.num_heads} heads"
    kind = ("attention" if p.mode == "raw" else
            ("per-head rollout" if p.show == ONE_HEAD else
             f"{att_mod.rollout_label(p.show, p.discard, p.discard_mode)} through layers 1–{p.layer}"))
    s_name = p.who(g)
    s = g.summary_index(s_name)
    who = s_name if p.query is None else f"patch (row {p.query[0]}, col {p.query[1]})"
    sense = (f"what {who} attends to (its row)" if p.direction == "row"
             else f"how much each patch attends to {who} (its column)")
    if pooling:
        sense = (MAP_SENSE_RAW if p.mode == "raw" else MAP_SENSE_ROLLOUT)
    vmax, rmax, cmax = _where(values, np.argmax)
    vmin, rmin, cmin = _where(values, np.argmin)
    lines = [
        f"**Layer {p.layer} · {what} · {kind}** — {sense}.",
        "",
        "| number | value |", "|---|---|",
    ]
    if pooling:
        if a.summary_weights is not None:
            top = float(a.summary_weights.max())
            lines.append(f"| MAP head's largest weight (after block {g.num_layers}) | {table_number(top)} |")
    elif s >= 0:
        lines.append(f"| {s_name}→{s_name} | {table_number(float(m[s, s]))} |")
    else:
        patch_sum = float(m[pre:, pre:].sum(-1).mean())
        lines.append(f"| patch mean→patches (its row's patch sum) | {table_number(patch_sum)} |")
    # Every prefix token's share of the patches' attention: registers show here what they receive.
    lines += [f"| mean patch→{name} | {table_number(float(m[pre:, j].mean()))} |"
              for j, name in enumerate(g.prefix_names)]
    if p.query is not None:
        if s >= 0:
            lines += [f"| this patch→{s_name} | {table_number(float(m[t, s]))} |",
                      f"| {s_name}→this patch | {table_number(float(m[s, t]))} |"]
        lines.append(f"| this patch→itself | {table_number(float(m[t, t]))} |")
    lines += [
        f"| map sum over patches | {table_number(float(values.sum()))} |",
        f"| max | {table_number(vmax)} at (row {rmax}, col {cmax}) |",
        f"| min | {table_number(vmin)} at (row {rmin}, col {cmin}) |",
    ]
    if s < 0 and p.query is None and not pooling:
        reads = ("the mean of the patch tokens, not [CLS]" if g.summaries[0] == PATCH_MEAN  # BEiT
                 else "[CLS] ⊕ the mean of the patch tokens")  # a DINOv2 classifier
        lines.append(f"| note | this model's head reads {reads}: the map is the mean of the patch queries' rows |")
    if arts.any():
        rest = np.where(arts, -np.inf, values)
        v2, r2, c2 = _where(rest, np.argmax)
        # Their sum, and what share of the map's sum that is: called "share" alone, the sum (0.3860 on
        # chelsea's column of patch (0, 0), a map summing to 33.9) stood beside the caption's 1.1 %.
        held, total = float(values[arts].sum()), float(values.sum())
        share = f" = {held / total:.1%} of the map's sum" if total > 0 and values.min() >= 0 else ""
        lines += [f"| artifact tokens' sum | {table_number(held)}{share} ({int(arts.sum())} patches) |",
                  f"| max outside them | {table_number(v2)} at (row {r2}, col {c2}) |"]
    if p.tau > 0:
        k = int(att_mod.mass_threshold(torch.from_numpy(values), p.tau).sum())
        lines.append(f"| patches holding τ={p.tau:.2f} of the mass | {k} of {g.num_patches} |")
    return lines


# Artifact tokens "stand out" in a map when they hold at least this many times their even share of it.
STAND_OUT = 2.0


def times_text(times: float, threshold: float = STAND_OUT) -> str:
    """A ratio to `threshold` at one decimal ("1.6"), or with as many more (up to 4) as keep it on its own side
    of the threshold: the rolled-out map of a strip photo holds 1.975x the corners' even share and read
    "2.0x" under "they do not stand out", a verdict taken against 2.0 (chelsea's layer 11: 1.996x)."""
    for d in range(1, 5):
        text = f"{times:.{d}f}"
        if (float(text) >= threshold) == (times >= threshold):
            return text
    return text


def artifact_share(arts: np.ndarray, values: np.ndarray | None) -> str:
    """What the artifact tokens hold of THIS map, against their even share ('' for a signed or empty map):
    the caption's "soak up attention" is true of a trained ViT's late raw attention (chelsea, layer 12:
    0.57 on 4 of 196 patches) but not of every map (its rollout: 4.1 %, 2.0x their share; a column map: 1.1 %)."""
    if values is None or values.min() < 0 or values.sum() <= 0:
        return ""
    n, total = int(arts.sum()), float(values.sum())
    share = float(values[arts].sum()) / total
    times = share / (n / arts.size)
    held = f"they hold **{share:.1%}** of its total over the patches, {times_text(times)}× what {n} of {arts.size} " \
           "patches hold when it is spread evenly"
    if times >= STAND_OUT:
        return f" On this map {held}."
    r, c = divmod(int(np.argmax(values)), values.shape[1])
    if arts[r, c]:  # astronaut's rollout: 1.6x in all, yet its max at corner (0, 0) (the table's max row)
        return (f" On this map they do not stand out in total: {held}; but the map's largest value, at "
                f"(row {r}, col {c}), is one of them.")
    return f" On this map they do not stand out: {held}."


def early_artifact_note(values: np.ndarray, masks: np.ndarray, layer: int, floor: float = 0.0) -> str:
    """For a map of `layer` (1-based) with no artifact token yet: the patches that are artifact tokens from
    a later layer on (masks: (L, gh, gw), artifact_masks), when they already stand out in THIS map ('' if
    not). Why: layer l reads the tokens entering block l, so the ViT-Ti's corners are artifact tokens from
    layer 9 on, yet in layer 8 [CLS] already gives them 25 % of its patch attention on chelsea (12× their
    even share), the map's max at a corner and its colour range set by it, and nothing named them.
    floor: the least value the colours show (range_floor). A share of a map that is nearly zero everywhere
    draws nothing: layer 1 head 3 gives the patches 1.3e-05 in all on coffee.jpg, and its corners' 6.4 % of
    that (about 8e-07) was called "already drawing attention" under the note that said nearly zero."""
    later = [k for k in range(layer, len(masks)) if masks[k].any()]
    if not later or values.min() < 0 or values.sum() <= 0:
        return ""
    soon = masks[later[0]]
    n = int(soon.sum())
    if float(values[soon].max()) < floor:  # each of them below what the colours show: no attention drawn
        return ""
    held, total = float(values[soon].sum()), float(values.sum())
    share = held / total
    times = share / (n / soon.size)
    if times < STAND_OUT:
        return ""
    r, c = divmod(int(np.argmax(values)), values.shape[1])
    top = f" and set its top (the max, at (row {r}, col {c}), is one)" if soon[r, c] else ""
    return (f"**Not artifact tokens yet, already drawing attention:** {art_mod.describe(soon)} "
            f"{'are artifact tokens' if n > 1 else 'is an artifact token'} from layer {later[0] + 1} on (the "
            f"tokens entering that block are high-norm: the Embeddings tab's table, depth {later[0]}). On this "
            f"map they already hold **{share:.1%}** of its total over the patches, {times_text(times)}× what {n} of "
            f"{soon.size} patches hold when it is spread evenly ({held:.3g} of {total:.3g}); here they are in the "
            f"colour range{top}.")


def artifact_note(arts: np.ndarray, p: AttnParams, where: str, layer: int, values: np.ndarray | None = None) -> str:
    """The caption naming a map's artifact tokens and what the colours do with them ('' if none);
    with the map's values, what the artifact tokens hold of it (artifact_share)."""
    n = int(arts.sum())
    if not n:
        return ""
    kept = ("are **in the colour range** (untick *artifact tokens in the colour range* to leave them out)"
            if p.artifacts_in_range else
            "are **not in the colour range**: the range is set by the other patches, and an artifact token above "
            "it is clipped to the top colour (tick *artifact tokens in the colour range* to put them back)")
    return (f"**{n} artifact token{'s' * (n > 1)}** {where} {layer}, {art_mod.describe(arts)}, outlined in cyan, "
            f"{kept}. "
            "A trained ViT turns a few low-information patches into scratch space with very long tokens that soak "
            f"up attention (Darcet et al. 2024, *Vision Transformers Need Registers*).{artifact_share(arts, values)} "
            f"Artifact token: {art_mod.ARTIFACT_SHORT}. A patch that only receives much attention is not one: "
            "it is what the model looks at, and keeps its colour.")


# ------------------------------------------------------------------ everything a control changes
def grid_image_name(*look: Hashable) -> tuple:
    """Cache name of the layers × heads picture for one look (controls other than layer and head)."""
    return ("grid image", *look)


def strip_image_name(*look: Hashable) -> tuple:
    """Cache name of the rollout strip picture for one look."""
    return ("strip image", *look)


@dataclass(frozen=True)
class AttentionView:
    main: np.ndarray | None  # None: not drawn (attention_view's with_main_image)
    readout: str
    grid: np.ndarray
    strip: np.ndarray


def attention_view(vm: VitModel, a: Analysis, p: AttnParams, cache: Cache = no_cache,
                   with_main_image: bool = True) -> AttentionView:
    """Main map, readout, layers × heads grid and rollout strip for one set of controls.
    with_main_image False: the main map not drawn (main None), its readout still made."""
    p = p.checked(vm.geometry)
    # First: the fixed scale reads the same cached stacks.
    main = main_panel(vm, a, p, cache, with_image=with_main_image)
    gmaps = grid_maps(a, p, cache).numpy()
    smaps = strip_maps(a, p, cache).numpy()
    g = vm.geometry
    arts = artifact_stack(a, p, cache)  # (L, gh, gw) for the grid's mode
    strip_arts = artifacts_through(a, cache)  # the strip is always rolled out
    vmax = None
    if p.shared_scale:  # strip and grid share one scale on request (issue 10)
        # The query's attention to itself would set the scale alone (see map_image), and so
        # would the artifact tokens: drawn (clipped to the top colour), but not counted.
        scale_maps = gmaps.copy()
        out = excluded(arts, p)
        if out is not None:
            scale_maps[np.broadcast_to(out[:, None], scale_maps.shape)] = 0.0
        if p.query is not None:
            scale_maps[..., p.query[0], p.query[1]] = 0.0
        strip_max = float(np.where(strip_arts, 0.0, smaps).max() if not p.artifacts_in_range else smaps.max())
        vmax = float(scale_maps.max()) if p.mode == "raw" else float(max(scale_maps.max(), strip_max))
    # The pictures without their yellow outline are cached per look (controls other than
    # layer and head), so moving the layer or head slider only outlines a copy.
    grid_key = grid_image_name(p.mode, p.query, p.direction, p.cmap, p.shared_scale, vmax, p.who(g),
                p.artifacts_in_range)
    marks = {UNIFORM_MARK: uniform_level(g)}
    grid = cache(grid_key, lambda: compose_grid(gmaps, p.cmap, p.shared_scale, None, vmax, marks, arts,
                                                excluded(arts, p), range_floor(g), bar=False))
    # The grid shows the main map's cell; fused heads are no one cell, so the whole layer is outlined.
    selected = (p.layer - 1, p.head - 1 if p.show == ONE_HEAD else None)
    tops = None if p.shared_scale else tile_tops(gmaps, excluded(arts, p), range_floor(g))
    strip_vmax = vmax if p.shared_scale and p.mode != "raw" else None
    strip_key = strip_image_name(fusion_of(p.show), p.discard, p.discard_mode, p.alpha,
                 p.cmap, strip_vmax, p.who(g), p.artifacts_in_range)
    strip = cache(strip_key, lambda: compose_strip(a.input_view, smaps, p, None, strip_vmax, artifacts=strip_arts,
                                                   floor=range_floor(g), g=g))
    return AttentionView(main.image, main.readout,
                         grid_bar(outline_grid_cell(grid, gmaps.shape, selected), p.cmap, vmax, marks, tops, selected),
                         outline_strip_tile(strip, len(smaps), p.layer - 1))


def clicked_query(g: Geometry, x: float, y: float) -> tuple[int, int]:
    """A click at (x, y) on the enlarged main map -> patch (row, col)."""
    return patch_at(x, y, g, render.display_scale(g))


# ------------------------------------------------------------------ attention distance
def distance_figure(d: np.ndarray, model_id: str = "", norm: DistanceNorm = "renormalised") -> go.Figure:
    """(L, H) distances -> plotly scatter: x = layer, y = distance in px, hover = head."""
    n_l, n_h = d.shape
    layers = np.repeat(np.arange(1, n_l + 1), n_h)
    heads = np.tile(np.arange(1, n_h + 1), n_l)
    # Heads are categories, not a quantity: one colour each and a legend (a continuous bar had
    # ticks at 1.5 and 2.5). The points stay ONE trace (page.js reads a click's x and customdata);
    # the legend's entries are point-less traces.
    colors = head_colors(n_h)
    fig = go.Figure(go.Scatter(
        x=layers, y=d.reshape(-1), mode="markers", customdata=heads, showlegend=False,
        marker=dict(size=8, color=[colors[h - 1] for h in heads], opacity=0.85),
        hovertemplate="layer %{x} · head %{customdata}<br>%{y:.1f} px<extra></extra>"))
    for h in range(n_h):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"head {h + 1}", hoverinfo="skip",
                                 marker=dict(size=8, color=colors[h])))
    short = model_id if len(model_id) <= 64 else "…" + model_id[-63:]
    how = "" if norm == "renormalised" else " ([CLS] weight not renormalised, probing-vits)"
    # The model on a second, smaller line: one line was cut at the chart's width.
    title, top = figures.title_lines("Mean attention distance per head" + how, top=20 + (22 if model_id else 0))
    fig.update_layout(title=title + (f"<br><sub>{short}</sub>" if model_id else ""),
                      xaxis=dict(title="layer", dtick=1), yaxis=dict(title="distance (model-input px)"),
                      margin=dict(l=10, r=10, t=top, b=10), height=276 + top,
                      # Below the axis: a legend on the right took a phone's plot width.
                      legend=dict(title=dict(text="head"), **figures.LEGEND_BELOW))
    return fig


def head_colors(n: int) -> list[str]:
    """n distinct colours, one per head (plotly's qualitative palettes: 10, then 24 colours)."""
    q = plotly.colors.qualitative
    palette = q.Plotly if n <= len(q.Plotly) else q.Dark24
    return [palette[h % len(palette)] for h in range(n)]


def distance_view(vm: VitModel, a: Analysis, norm: DistanceNorm = "renormalised",
                  cache: Cache = no_cache) -> tuple[go.Figure, list[tuple[str, str]]]:
    """The distance chart and the 'open a head' list for one normalisation (its control's change)."""
    if norm not in DISTANCE_NORMS:
        raise UserError(f"Distance normalisation must be {' or '.join(DISTANCE_NORMS)}.")
    d = distances(a, cache, norm).numpy()
    return distance_figure(d, vm.display_name, norm), distance_choices(d)


def layer_label(mode: str) -> str:
    """The layer slider's label: what the layer means in this mode. Layer l (1..L) attends over the
    tokens block l-1 wrote: the Embeddings tab's depth l-1 (0 = the embedding stage), so a token that
    turns odd at depth 8 shows in the attention of layer 9 on."""
    if mode == "raw":  # "n", not "l": in the page's font "l − 1" reads as "1 − 1"
        return "layer (layer n attends over the tokens at depth n − 1 of the Embeddings tab)"
    return "layer (rolled out through this layer)"


def distance_choices(d: np.ndarray) -> list[tuple[str, str]]:
    """(label, "layer,head") pairs for the 'open a head' list, nearest-looking heads first."""
    n_l, n_h = d.shape
    order = sorted((float(d[l, h]), l, h) for l in range(n_l) for h in range(n_h))
    return [(f"layer {l + 1} · head {h + 1} · {v:.1f} px", f"{l + 1},{h + 1}") for v, l, h in order]


def parse_choice(value: str) -> tuple[int, int]:
    """"layer,head" from distance_choices, or "layer,head,n" from a chart click -> (layer, head),
    1-based. (n counts clicks, so clicking the same dot again is still a change.)"""
    try:
        l, h, *rest = (int(x) for x in value.split(","))
        if len(rest) > 1:
            raise ValueError(value)
    except (AttributeError, ValueError):
        raise UserError("Choose a head from the list.") from None
    return l, h


# ------------------------------------------------------------------ class relevance
def class_choices(a: Analysis, labels: tuple[str, ...] | list[str] = ()) -> list[tuple[str, int]]:
    """(name, class index) for the class menu: the top-5 first ("Egyptian cat (82.2%)"), then every
    other class of `labels` in index order, named in full with its probability to two significant
    digits ("tabby, tabby cat (0.0031%)"), so a search for any of its names finds it. Empty without a classifier."""
    shown = figures.percents([p.prob for p in a.top5])  # told apart where they differ (an untrained model's ~0.2 %)
    top = [(f"{p.label.split(',')[0]} ({s})", p.index) for p, s in zip(a.top5, shown)]
    if a.probs is None or not top:
        return top
    seen = {i for _, i in top}
    probs = a.probs.reshape(-1).tolist()
    # Two significant digits: most of the 1000 classes are far below 0.01 % and would all read "0.00%".
    return top + [(f"{name} ({100 * probs[i]:.2g}%)", i) for i, name in enumerate(labels[:len(probs)]) if i not in seen]


def relevance_panel(vm: VitModel, a: Analysis, class_index: int, p: AttnParams,
                    cache: Cache = no_cache) -> tuple[np.ndarray, str]:
    g = vm.geometry
    values = relevance_map(vm, a, class_index, cache, p.summary)
    name = vm.labels[int(class_index)].split(",")[0]
    v, r, c = _where(values, np.argmax)
    arts = art_mod.through_layers(artifact_masks(a, cache))[-1]  # relevance runs through every layer
    text = (f"Relevance for **{name}** (class {class_index}) from {p.who(g)}'s row: sum over patches "
            f"{values.sum():.4f}, max {v:.4f} at (row {r}, col {c}). Method: {att_mod.RELEVANCE_METHOD}.")
    if arts.any():
        v2, r2, c2 = _where(np.where(arts, -np.inf, values), np.argmax)
        top = np.argsort(values, axis=None)[::-1][:int(arts.sum())]
        hit = int(arts.reshape(-1)[top].sum())
        text += (f" Outside the artifact tokens the max is {v2:.4f} at (row {r2}, col {c2}); {hit} of the "
                 f"{int(arts.sum())} most relevant patches are artifact tokens.\n\n"
                 + artifact_note(arts, p, "through layer", g.num_layers, values))
    lo_hi = map_range(values, p.scale, None, exclude=excluded(arts, p))
    return map_image(a.input_view, values, g, p, lo_hi=lo_hi, artifacts=arts), text


def method_panel(vm: VitModel, a: Analysis, method: str, class_index: int | None, p: AttnParams,
                 cache: Cache = no_cache) -> tuple[np.ndarray, str]:
    """The map of one EXPLAIN_METHODS method (for `class_index`; attention flow has no class), drawn
    as the relevance map is, with its readout."""
    m = methods.get(method, methods.MENU)
    if m.needs_class and class_index is None:
        raise UserError(NO_CLASS)
    if m.reads_summary:  # the relevance panel: read from the tab's chosen summary token
        return relevance_panel(vm, a, int(class_index), p, cache)  # type: ignore[arg-type]
    g = vm.geometry
    values = m(vm, a, class_index, cache)
    about = ("from the summary token, any class" if not m.needs_class or class_index is None
             else f"for **{vm.labels[int(class_index)].split(',')[0]}** (class {class_index})")
    v, r, c = _where(values, np.argmax)
    arts = art_mod.through_layers(artifact_masks(a, cache))[-1]
    text = (f"**{method}** {about}: sum over patches {values.sum():.4g}, max {v:.4g} at (row {r}, col {c}). "
            f"Method: {m.caption}.")
    if m.note is not None:
        text += m.note(values)
    if arts.any():
        top = np.argsort(values, axis=None)[::-1][:int(arts.sum())]
        hits = int(arts.reshape(-1)[top].sum())
        are = "is an artifact token" if hits == 1 else "are artifact tokens"
        text += (f" {hits} of the {int(arts.sum())} highest patches {are}.\n\n"
                 + artifact_note(arts, p, "through layer", g.num_layers, values))
    lo_hi = map_range(values, p.scale, None, exclude=excluded(arts, p))
    if (values < 0).any():  # how a signed map's negative patches are drawn depends on the scale chosen
        text += (f" On this colour scale the patches below 0 take the bar's colours under 0 (it starts at "
                 f"{lo_hi[0]:.3g})." if lo_hi[0] < 0 else " On this colour scale the patches below 0 are drawn as 0.")
    return map_image(a.input_view, values, g, p, lo_hi=lo_hi, artifacts=arts), text


# The class-map text once Stop ends a costly map's job (page/tabs/attention.py stop_job).
STOPPED_TEXT = ("Stopped: nothing was kept (a costly map is kept only once it is done). "
                "Press “Compute the map” to start it again.")


def job_progress(ph: Photo, method: str, p: AttnParams,
                 cancel: Cancel = NEVER) -> Iterator[tuple[np.ndarray | None, str]]:
    """A costly method as a job: its record's progress lines (no picture), then the map; from the cache at
    once once computed. Closing the generator (Stop) ends the job, and so does `cancel` (Cancelled)."""
    m = methods.get(method, methods.COSTLY)
    a = ph.analysis()
    if ph.peek(m.cached_as) is None and m.progress is not None:
        for line in m.progress(a, ph.derived, cancel):
            yield None, line
    yield method_panel(ph.vm, a, m.name, None, p, ph.derived)


# ------------------------------------------------------------------ export
def attention_arrays(vm: VitModel, a: Analysis, cache: Cache = no_cache) -> dict[str, np.ndarray]:
    """arrays.npz keys of the Attention tab (see README)."""
    g = vm.geometry
    att = full_attentions(a)
    stack = maps.mean_rollout(a, cache)  # (L, N, N)
    s = summary_of(a)  # SigLIP: the MAP head's weights (N,); else the default summary's name
    out: dict[str, np.ndarray] = {
        "attentions": att.numpy().astype(np.float16),  # (L, H, N, N)
        "cls_attention": att_mod.cls_to_patches(att.float(), g, s if g.pools_with_map_head else "[CLS]"
                                                ).numpy().astype(np.float32),  # (L, H, gh, gw)
        "rollout": att_mod.cls_to_patches(stack, g, s).numpy().astype(np.float32),  # (L, gh, gw), default summary
        # (T, L, gh, gw) / (L, H, T, gh, gw): rollout and raw attention from every prefix token
        # ([CLS], [DIST], [REG1..R]); the rollout from [CLS] is prefix_rollout[0]; SigLIP: T = 0
        "prefix_rollout": np.stack([att_mod.cls_to_patches(stack, g, n).numpy() for n in g.prefix_names]
                                   ).astype(np.float32) if g.prefix_names
        else np.zeros((0, g.num_layers, *g.grid), np.float32),
        "prefix_attention": att[:, :, :g.num_prefix_tokens, g.num_prefix_tokens:].float().reshape(
            *att.shape[:2], g.num_prefix_tokens, *g.grid).numpy().astype(np.float32),
        "rollout_heads": att_mod.cls_to_patches(head_rollout(a, cache), g, s).numpy().astype(np.float32),
        "attention_distance": distances(a, cache).numpy().astype(np.float32),  # (L, H)
    }
    if a.summary_attention is not None:  # (H, gh, gw) SigLIP: the MAP head's attention per head
        out["summary_attention"] = a.summary_attention[:, g.num_prefix_tokens:].reshape(-1, *g.grid).numpy()
    if vm.has_classifier and a.top5:
        for m in methods.EXPORTED:  # (gh, gw) each, top-1 class: relevance, map_gradient_rollout, ...
            out[m.export_key] = m(vm, a, a.top5[0].index, cache)  # type: ignore[index]
    return out


def attention_figures(vm: VitModel, a: Analysis, cache: Cache = no_cache) -> dict[str, np.ndarray | go.Figure]:
    p = AttnParams()
    v = attention_view(vm, a, p, cache)
    out: dict[str, np.ndarray | go.Figure] = {
        "attention_cls_mean": v.main, "attention_heads_grid": v.grid, "rollout_strip": v.strip,
        "attention_distance_chart": distance_figure(distances(a, cache).numpy(), vm.display_name),
    }
    if vm.has_classifier and a.top5:
        out["relevance_top1"] = relevance_panel(vm, a, a.top5[0].index, p, cache)[0]
    return out


# ------------------------------------------------------------------ what opening the tab shows
@dataclass(frozen=True)
class AttentionPage:
    """Everything the tab shows when opened or when the photo/model changes, each field named
    like the component that shows it."""

    params: AttnParams  # the controls clipped to this model (layer, head, query, summary)
    main: np.ndarray
    readout: str
    grid: np.ndarray
    strip: np.ndarray
    # The heads by mean attention distance (the chart itself follows the first picture: distance_view;
    # drawn here, it was dropped by the page).
    distance_choices: list[tuple[str, str]]
    classes: list[tuple[str, int]]  # (label, class index): top-5 first, then every class; empty without a classifier
    book: str | None  # every layer × head of the main map, for the page to draw (None: the server draws)
    matrix: str | None  # the matrix behind the main map, for a click drawn in the page (None: drawn here)

    @property
    def view(self) -> AttentionView:
        return AttentionView(self.main, self.readout, self.grid, self.strip)


def attention_page(vm: VitModel, a: Analysis, p: AttnParams, cache: Cache = no_cache,
                   book: str | None = None, matrix: str | None = None) -> AttentionPage:
    """Everything the tab shows when opened or when the photo/model changes."""
    d = distances(a, cache, p.distance_norm).numpy()
    v = attention_view(vm, a, p, cache)
    assert v.main is not None  # drawn (attention_view's with_main_image)
    return AttentionPage(p, v.main, v.readout, v.grid, v.strip, distance_choices(d), class_choices(a, vm.labels),
                         book, matrix)


def clip_params(p: AttnParams, g: Geometry) -> AttnParams:
    """The same controls, with layer/head/query pulled inside a (possibly new) model's range, and a
    summary token this model lacks back to its default."""
    from dataclasses import replace

    q = p.query if p.query is not None and p.query[0] < g.grid[0] and p.query[1] < g.grid[1] else None
    summary = p.summary if p.summary in g.summaries else None
    return replace(p, layer=min(max(1, p.layer), g.num_layers), head=min(max(1, p.head), g.num_heads), query=q,
                   summary=summary)


@dataclass(frozen=True)
class AttentionChange:
    """A control change: what it redraws, each field named like its component."""

    main: np.ndarray | None  # None: unchanged (a layer, head or fusion change the page draws from its book)
    readout: str
    grid: np.ndarray
    strip: np.ndarray
    matrix: str | None
    book: str | None  # only when asked for (a new look or query); None also when drawn by the server


# ------------------------------------------------------------------ entry points
def warm_photo(ph: Photo) -> None:
    """The photo's work for this tab, after its forward, in the background (Workbench.photo_work):
    the heads' mean attention distances (~400 ms on ViT-B/16 on 2 cores), which the tab's first
    answer would otherwise compute while the visitor waits for the map."""
    distances(ph.analysis(), ph.derived, DISTANCE_NORMS[0])


def show(ph: Photo, p: AttnParams) -> AttentionPage:
    """On open (a new photo or model): the whole tab, for the params clipped to this model."""
    p = clip_params(p, ph.vm.geometry)
    return attention_page(ph.vm, ph.analysis(), p, ph.derived, page_book(ph, p), page_matrix(ph, p))


def change(ph: Photo, p: AttnParams, drawn_in_page: bool = False, with_book: bool = False) -> AttentionChange:
    """On a control change: the main map, its readout, the layers × heads grid, the strip and the
    matrix behind the map. drawn_in_page: a layer, head or fusion change, which the page draws
    itself from its book (when it has one). with_book: a new look or query, a new book too."""
    m = page_matrix(ph, p)
    # A map the page draws itself is not drawn here only to be dropped (issue 52: each layer move
    # drew the enlarged map, ~a third of the change's time).
    view = attention_view(ph.vm, ph.analysis(), p, ph.derived, with_main_image=not (drawn_in_page and m is not None))
    return AttentionChange(view.main, view.readout, view.grid,
                           view.strip, m, page_book(ph, p) if with_book else None)


def relevance(ph: Photo, class_index: int, p: AttnParams) -> tuple[np.ndarray, str]:
    """On request: the class-specific relevance map (one backward pass, then cached)."""
    return relevance_panel(ph.vm, ph.analysis(), int(class_index), p, ph.derived)


def explain(ph: Photo, method: str, class_index: int | None, p: AttnParams) -> tuple[np.ndarray, str]:
    """On request: one EXPLAIN_METHODS map (a costly one: only once computed, see job_progress)."""
    m = methods.get(method, methods.MENU)
    if m.costly and ph.peek(m.cached_as) is None:
        raise UserError(f"{m.name[0].upper()}{m.name[1:]} runs as a job: use job_progress.")
    return method_panel(ph.vm, ph.analysis(), method, class_index, p, ph.derived)


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    return attention_arrays(ph.vm, ph.analysis(), ph.derived)


def export_figures(ph: Photo) -> dict[str, np.ndarray | go.Figure]:
    return attention_figures(ph.vm, ph.analysis(), ph.derived)
