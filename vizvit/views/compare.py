"""The Compare tab: one photo, two models side by side, one layer/head cursor.

Model A is the session's model (its key, heads switched off included); model B is picked here and
passes the same gate (Workbench.model -> Catalog.check). Each side is read through its own Photo
handle, so its analysis, rollout, artifact masks, distances and position pictures are the very
cache entries its own tabs use, and it is drawn by the Attention and Positions tabs' functions
(attention.map_image, positions.positions_panel). The cursor runs over relative depth
(vizvit.readings.compare.matched_layer): the page swaps the two sides' maps from a flipbook at every
position; the verdict line follows from the server.
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from vizvit.deeplink import DeepLink, to_query
from vizvit.errors import UserError, cut
from vizvit.methods import maths as att_mod
from vizvit.model.catalog import Catalog
from vizvit.model.engine import Analysis
from vizvit.model.models import RANDOM_PREFIX, Geometry, VitModel, short_name
from vizvit.pictures import figures, render
from vizvit.readings import attention as ra, compare as cmp
from vizvit.readings.artifacts import artifact_masks
from vizvit.session import Photo, PhotoKey
from vizvit.views import flip, layout, positions
from vizvit.views.common import top5_figure
from vizvit.vocab import FUSIONS, ONE_HEAD

# The tab's last text: model B's box and the teaching pairs are above it at every width ("pick model B here (or
# open a teaching pair below)" sent a reader down, a reviewer on a phone).
TEXT = """**Two models, one photo, one cursor.** Model A is the model chosen at the top of the page; pick
model B in the box at the top of this tab (or open one of the teaching pairs under it). Both read the same photo,
each through its own image processor (a model with random weights has none: it reads A's input, the same pixels),
and each side is exactly what that model's own tabs show. The depth cursor is *relative*:
with 12 and 24 layers, position 6 of 24 is layer 3 of A and layer 6 of B; each picture names its
layer. Maps are read from the token each model's head reads (its *summary*: [CLS], SigLIP's MAP head,
BEiT's patch mean); tokens before the patches ([DIST], registers) are named above each side.
Artifact tokens (cyan) are left out of the colour range, as on the Attention tab."""

DEPTH_CONTROLS = ("depth",)
DEPTH_TARGETS = ("attention_a", "attention_b", "rollout_a", "rollout_b")  # the pictures a cursor move swaps
# px the model-input view is enlarged to (the Attention tab's map: ~600): two maps and their colour
# bars side by side fit a 1366-px projector at about their own size.
MAP_PX = 448
OWN_RANGE = "its own colour range"  # named under each map when the two ranges differ

# Teaching pairs: (title, model A, model B) by hub id; each is offered with what this server lists
# for it (the id, a local copy of the same architecture, or its random twin: see resolve).
TWIN = "<random twin>"
PAIRS: tuple[tuple[str, str, str], ...] = (
    ("trained against its random twin", "", TWIN),
    ("DeiT (distilled) against ViT", "facebook/deit-base-distilled-patch16-224", "google/vit-base-patch16-224"),
    ("DINOv2 against DINOv2 with registers", "facebook/dinov2-small", "facebook/dinov2-with-registers-small"),
    ("ViT-Ti against ViT-B", "WinKawaks/vit-tiny-patch16-224", "google/vit-base-patch16-224"),
)


@dataclass(frozen=True)
class CompareParams:
    """Everything a control on the tab sets."""

    model_b: str | None = None  # None: none picked yet
    depth: int = 0  # cursor position 1..D (D: the deeper model's layers); 0 or beyond D: the last
    head: str = "mean"  # a fusion (vocab.FUSIONS) or a head number 1..K (K: the larger head count)
    shared_range: bool = True  # one colour range for both sides' maps (else each its own, named)
    example: str | None = None  # the photo's name in a link when it is an example (the pairs' links keep it)
    photo: str | None = None  # an uploaded photo's key, which the pairs' links keep where no example names it

    @classmethod
    def from_controls(cls, v: dict[str, Any]) -> CompareParams:
        return cls(model_b=v.get("model_b") or None, depth=int(float(v.get("depth") or 0)),
                   head=str(v.get("head") or "mean"), shared_range=bool(v.get("shared_range", True)),
                   example=v.get("example"), photo=v.get("photo"))


# ------------------------------------------------------------------ the pair and the cursor
@dataclass(frozen=True)
class Pair:
    a: Photo
    b: Photo

    @property
    def positions(self) -> int:
        """D: the cursor's positions (the deeper model's layer count)."""
        return max(self.a.vm.geometry.num_layers, self.b.vm.geometry.num_layers)

    @property
    def heads(self) -> int:
        """K: the larger head count (the head cursor's range)."""
        return max(self.a.vm.geometry.num_heads, self.b.vm.geometry.num_heads)


def pair(ph: Photo, model_b: str) -> Pair:
    """Model A's photo handle and model B's for the same photo. B passes the Workbench's gate (the
    page's list) before it loads. Both models must be held at once: a Workbench that keeps one
    model at a time would load them in turn on every move, so it is refused with the reason."""
    wb = ph.wb
    if wb.max_models < 2:
        raise UserError("This server keeps one model in memory at a time, so it cannot compare two "
                        "(start it with a Workbench of max_models ≥ 2).")
    vm_b = wb.model(model_b)
    labels = (ph.key.labels, ph.key.template) if vm_b.is_zero_shot else ((), "")
    return Pair(ph, wb.handle(PhotoKey(vm_b.id, photo_for_b(ph, vm_b), labels=labels[0], template=labels[1])))


def photo_for_b(ph: Photo, vm_b: VitModel) -> str:
    """The photo model B reads: the same upload, through its own processor; but random weights have no
    processor of their own (ViT's defaults squash the whole photo to a square), so an untrained B
    reads A's model-input view: both see the same pixels (issue 43: the random twin squashed the photo
    while the trained model centre-cropped it, so the maps' cosine compared different pixels). At B's
    input size, B's resize of that view is the identity (PIL returns a copy for an equal size)."""
    if vm_b.is_pretrained or not ph.vm.is_pretrained:
        return ph.key.sha1
    return ph.wb.add_photo(Image.fromarray(ph.input_view()))


@dataclass(frozen=True)
class Cursor:
    position: int  # t, 1..D
    positions: int  # D
    layer_a: int  # 1-based
    layer_b: int
    head_a: int | str  # 1-based head or a fusion
    head_b: int | str


def head_list(heads: int) -> list[str]:
    """The head cursor's choices over `heads` heads: the fusions, then 1..heads."""
    return [*FUSIONS, *(str(k) for k in range(1, heads + 1))]


def head_choices(pr: Pair) -> list[str]:
    return head_list(pr.heads)


def cursor(pr: Pair, p: CompareParams) -> Cursor:
    D, K = pr.positions, pr.heads
    t = p.depth if 1 <= p.depth <= D else D
    ga, gb = pr.a.vm.geometry, pr.b.vm.geometry
    if p.head in FUSIONS:
        ha: int | str = p.head
        hb: int | str = p.head
    else:
        try:
            k = int(p.head)
        except ValueError:
            raise UserError(f"Head must be one of {', '.join(FUSIONS)} or a number 1..{K}.") from None
        if not 1 <= k <= K:
            raise UserError(f"Head must be 1..{K}.")
        ha, hb = cmp.matched_head(k, K, ga.num_heads), cmp.matched_head(k, K, gb.num_heads)
    return Cursor(t, D, cmp.matched_layer(t, D, ga.num_layers), cmp.matched_layer(t, D, gb.num_layers), ha, hb)


def attn_params(layer: int, head: int | str, mode: str) -> ra.AttnParams:
    """The Attention tab's params for this layer and head (or fusion), read from the summary token."""
    if isinstance(head, str):
        return ra.AttnParams(layer=layer, show=head, mode=mode)  # type: ignore[arg-type]
    return ra.AttnParams(layer=layer, head=head, show=ONE_HEAD, mode=mode)  # type: ignore[arg-type]


# ------------------------------------------------------------------ one side's maps
@dataclass(frozen=True)
class SideMaps:
    attention: np.ndarray  # (gh, gw) the summary's raw attention at the layer (head or fused)
    rollout: np.ndarray  # (gh, gw) the summary's mean rollout through the layer
    arts: np.ndarray  # (gh, gw) bool artifact tokens of the layer
    arts_through: np.ndarray  # (gh, gw) bool artifact tokens of any layer up to it (rollout's)
    row: np.ndarray  # (N,) the summary's raw attention row over every token: the cursor's head, or heads averaged


def side_maps(ph: Photo, layer: int, head: int | str) -> SideMaps:
    a = ph.analysis()
    g = a.geometry
    p = attn_params(layer, head, "raw").checked(g)
    m = ra.main_matrix(a, p, ph.derived)  # (N, N)
    summary = ra.summary_of(a)
    attention = att_mod.cls_to_patches(m, g, summary).numpy().astype(np.float32)
    # The verdict's shares read one row that sums to 1: the head the maps show, or the heads' mean for any
    # fusion (a max or min row is no distribution). It said the mean beside a map of head 2 (a walk-through).
    att = ra.full_attentions(a)[layer - 1]  # (H, N, N)
    m_row = att[head - 1] if isinstance(head, int) else att_mod.fuse_heads(att, "mean")  # (N, N)
    row = att_mod.summary_row(m_row, g, summary).numpy()
    per_layer = artifact_masks(a, ph.derived)  # (L, gh, gw)
    through = np.asarray(per_layer[:layer].any(0))  # (gh, gw) bool
    return SideMaps(attention, ra.rollout_through(a, layer, ph.derived), per_layer[layer - 1], through, row)


def _range(values: np.ndarray, arts: np.ndarray, g: Geometry) -> tuple[float, float]:
    return ra.map_range(values, "0 to max", exclude=ra.excluded(arts, ra.AttnParams()), floor=ra.range_floor(g))


def head_words(head: int | str, g: Geometry) -> str:
    return f"head {head} of {g.num_heads}" if isinstance(head, int) else f"{head} of {g.num_heads} heads"


def side_pictures(side: str, ph: Photo, s: SideMaps, layer: int, head: int | str,
                  ranges: tuple[tuple[float, float], ...], own: bool) -> tuple[np.ndarray, np.ndarray]:
    """The attention map and the rollout, each with its colour bar and a caption that names the side and its
    model, then the layer (the Attention tab's map_image: that tab's pixels for these maps, at MAP_PX)."""
    a = ph.analysis()
    g = a.geometry
    L = g.num_layers
    marks = {layout.UNIFORM_MARK: ra.uniform_level(g)}
    scale = render.display_scale(g, MAP_PX)
    att = layout.map_image(a.input_view, s.attention, g, attn_params(layer, head, "raw"), lo_hi=ranges[0], marks=marks,
                       artifacts=s.arts, scale=scale)
    roll = layout.map_image(a.input_view, s.rollout, g, attn_params(layer, "mean", "rolled out"), lo_hi=ranges[1],
                        marks=marks, artifacts=s.arts_through, scale=scale)
    # The side and its model first, on a line of its own: on a phone the sides stack, and a map said only "A"
    # two screens below the model's name (a walk-through)
    name = side_name(side, ph.vm)
    att = render.caption_below(render.caption_below(att, name), f"layer {layer}/{L} · {head_words(head, g)}")
    roll = render.caption_below(render.caption_below(roll, name), f"rollout through layer {layer}/{L}")
    if own:  # named on its own line: each side's bar has its own top
        att, roll = render.caption_below(att, OWN_RANGE), render.caption_below(roll, OWN_RANGE)
    return att, roll


@dataclass(frozen=True)
class DepthChange:
    """A cursor move: both sides' maps (the flipbook's pages) and the verdict."""

    attention_a: np.ndarray
    attention_b: np.ndarray
    rollout_a: np.ndarray
    rollout_b: np.ndarray
    verdict: str


def depth_pictures(pr: Pair, c: Cursor, shared: bool) -> tuple[dict[str, np.ndarray], SideMaps, SideMaps]:
    """{DEPTH_TARGETS field: picture} at the cursor, and both sides' maps."""
    sa, sb = side_maps(pr.a, c.layer_a, c.head_a), side_maps(pr.b, c.layer_b, c.head_b)
    ga, gb = pr.a.vm.geometry, pr.b.vm.geometry
    ra = (_range(sa.attention, sa.arts, ga), _range(sa.rollout, sa.arts_through, ga))
    rb = (_range(sb.attention, sb.arts, gb), _range(sb.rollout, sb.arts_through, gb))
    if shared:  # one range for both: 0 .. the larger top, per kind of map
        ra = rb = tuple((0.0, max(x[1], y[1])) for x, y in zip(ra, rb))  # type: ignore[assignment]
    att_a, roll_a = side_pictures("A", pr.a, sa, c.layer_a, c.head_a, ra, not shared)
    att_b, roll_b = side_pictures("B", pr.b, sb, c.layer_b, c.head_b, rb, not shared)
    return dict(attention_a=att_a, attention_b=att_b, rollout_a=roll_a, rollout_b=roll_b), sa, sb


def change_depth(ph: Photo, p: CompareParams) -> DepthChange:
    pr = pair(ph, _model_b(p))
    c = cursor(pr, p)
    pics, sa, sb = depth_pictures(pr, c, p.shared_range)
    return DepthChange(**pics, verdict=verdict(pr, c, sa, sb))


def depth_look(pr: Pair, p: CompareParams) -> str:
    """What the cursor's pictures depend on besides the position: both keys, the head, the range."""
    return f"{pr.a.key!r}|{pr.b.key!r}|{p.head}|{p.shared_range}"


def depth_book(ph: Photo, p: CompareParams) -> flip.Flipbook:
    """Both sides' maps at every cursor position, for the page to swap as the cursor moves."""
    pr = pair(ph, _model_b(p))
    pages = {}
    for t in range(1, pr.positions + 1):
        pages[flip.page_key(t)] = depth_pictures(pr, cursor(pr, dataclasses.replace(p, depth=t)), p.shared_range)[0]
    return flip.Flipbook(depth_look(pr, p), DEPTH_CONTROLS, pages)


# ------------------------------------------------------------------ the verdict
def top1(vm: VitModel, a: Analysis) -> str | None:
    return a.top5[0].label.split(",")[0] if vm.has_classifier and a.top5 else None


def _pct(x: float) -> str:
    return f"{x:.0%}" if x >= 0.01 or x == 0 else f"{x:.1%}"


def verdict(pr: Pair, c: Cursor, sa: SideMaps, sb: SideMaps) -> str:
    """One line from the maps: the summary's share of attention to artifact tokens (and to the other
    prefix tokens) in each model, the cosine of the two rollouts, and whether top-1 agrees."""
    parts = []
    for side, ph, s, layer, head in (("A", pr.a, sa, c.layer_a, c.head_a), ("B", pr.b, sb, c.layer_b, c.head_b)):
        g = ph.vm.geometry
        n = int(s.arts.sum())
        gives = ([f"**{_pct(cmp.share_to(s.row, g.num_prefix_tokens, s.arts))}** to its {n} artifact token"
                  f"{'s' if n != 1 else ''}"] if n else [])
        si = g.summary_index()
        gives += [f"{_pct(float(s.row[j]))} to {name}" for j, name in enumerate(g.prefix_names) if j != si]
        whose = head_words(head if isinstance(head, int) else "mean", g)  # the row side_maps read
        what = f"{g.summaries[0]} ({whose}) gives " + ", ".join(gives) if gives else ""
        # flagged by their norm entering this layer: on the trained ViT-Ti the corners only pass the rule
        # after block 8, so "layer 8: none" beside [CLS]'s 19% to the corners read as a contradiction
        arts = "" if n else "no artifact tokens among the tokens entering this layer"
        parts.append(f"{side} (layer {layer}/{g.num_layers}): " + "; ".join(x for x in (what, arts) if x))
    cos, r = cmp.map_cosine(sa.rollout, sb.rollout), cmp.centred_cosine(sa.rollout, sb.rollout)
    ga, gb = pr.a.vm.geometry, pr.b.vm.geometry
    fine = cmp.common_grid(ga.grid, gb.grid)
    resampled = "" if ga.grid == gb.grid else f", {'B' if fine == ga.grid else 'A'} resampled to {fine[0]}×{fine[1]}"
    va, vb = pr.a.analysis().input_view, pr.b.analysis().input_view
    same_input = va.shape == vb.shape and np.array_equal(va, vb)
    if pr.a.key.sha1 != pr.b.key.sha1:  # an untrained B reads A's model-input view (photo_for_b), never the upload
        # at another input size B's processor resizes that view: "each model's processor made its own input of
        # the photo" there told a student B saw the whole photo its own way (a walk-through, ViT-B/32-384 twin)
        crops = (" (both read A's model-input view)" if same_input
                 else f" (B read A's model-input view, resized to its {vb.shape[1]}×{vb.shape[0]} px)")
    else:
        crops = "" if same_input else " (each model's processor made its own input of the photo)"
    t_a, t_b = top1(pr.a.vm, pr.a.analysis()), top1(pr.b.vm, pr.b.analysis())
    if t_a is None or t_b is None:
        agree = "top-1: " + ("neither model" if t_a is None and t_b is None else ("A" if t_a is None else "B")) + \
                " has no classifier"
    elif t_a.lower() == t_b.lower():
        agree = f"top-1 **agrees**: {t_a}"
    else:
        agree = f"top-1 **differs**: A {t_a}, B {t_b}"
    return (f"**Verdict at position {c.position} of {c.positions}.** " + "; ".join(parts)
            # each number beside its own words ("cosine 0.96, -0.10 with each map's mean taken out" left it
            # unclear which went with which: a walk-through)
            + f". Rollout maps: cosine **{cos:.2f}** as they are, **{r:.2f}** with each map's mean taken out "
            f"(a correlation){resampled}{crops}. "
            f"{agree}.")


# ------------------------------------------------------------------ the rest of the tab
def title(side: str, vm: VitModel) -> str:
    """Who this side is: name (untrained flagged), family, prefix tokens, the summary, shape."""
    g = vm.geometry
    flag = " ⚠️ **untrained random weights**" if not vm.is_pretrained else ""
    prefix = " ".join(g.prefix_names) or "none"
    return (f"**{side}: {short_name(vm.id)}**{flag} · {vm.family.title} · tokens before the patches: "
            f"{prefix} · maps read from **{g.summaries[0]}** · {g.num_layers} layers × {g.num_heads} heads · "
            f"{g.grid[0]}×{g.grid[1]} patches of {g.patch_size} px")


NAME_CHARS = 36  # of a model's name in a chart's title: plotly cuts a title at the chart's width (a phone's ~370 px)
POSITIONS_LABEL = "position-embedding similarity (Positions tab)"


def model_name(vm: VitModel) -> str:
    """The model's short name, cut to what a phone's chart title holds."""
    return cut(short_name(vm.id), NAME_CHARS)


def side_name(side: str, vm: VitModel) -> str:
    """Whose chart this is, as plain text: "A: vit-tiny-augreg". On a phone the two sides stack (A's row, then
    B's) and both top-5 charts read "Top-5 predictions", both pictures the same label (a walk-through)."""
    return f"{side}: {model_name(vm)}"


def positions_label(side: str, vm: VitModel | None) -> str:
    """The side's position-embedding picture's label; no model yet: the side alone."""
    return f"{side}: {POSITIONS_LABEL}" if vm is None else f"{side_name(side, vm)} · {POSITIONS_LABEL}"


def top5_or_note(side: str, ph: Photo) -> go.Figure:
    """The side's top-5 (the Patches tab's chart; CLIP / SigLIP: the typed labels), titled with its side and
    model, or a short chart that says why there is none (a self-supervised checkpoint has no classifier)."""
    # Two lines: the side first, where it always fits; the model's name (plotly markup: escaped) under it.
    heading = f"{side}: top-5 predictions<br><sub>{html.escape(model_name(ph.vm))}</sub>"
    fig = top5_figure(ph.vm, ph.analysis(), heading=heading)
    if fig is not None:
        return fig
    why = f"{side}: no top-5: {short_name(ph.vm.id)} has no classifier"
    return go.Figure(dict(layout=dict(
        height=110, margin=dict(l=10, r=10, t=10, b=10), xaxis=dict(visible=False), yaxis=dict(visible=False),
        annotations=[dict(text=why[:90], showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                          font=dict(size=14))])))


def distance_figure(pr: Pair) -> go.Figure:
    """Mean attention distance per head against depth, both models in one chart (the Attention tab's
    cached distances). x: the layer when both have as many layers, else relative depth l/L. y: pixels when
    both inputs are as wide, else the share of each model's input width: a 384-px B's pixels are not a
    224-px A's (the random ViT-B/32-384 twin's uniform attention drew at ~200 px above every head of ViT-Ti,
    whose uniform attention is ~117 px: the same distance on the photo)."""
    same = pr.a.vm.geometry.num_layers == pr.b.vm.geometry.num_layers
    in_px = pr.a.vm.geometry.image_size[1] == pr.b.vm.geometry.image_size[1]
    traces = []
    for side, ph, symbol in (("A", pr.a, "circle"), ("B", pr.b, "diamond")):
        d = ra.distances(ph.analysis(), ph.derived).numpy()  # (L, H) pixels
        L, H = d.shape
        layers = np.repeat(np.arange(1, L + 1), H)
        heads = np.tile(np.arange(1, H + 1), L)
        x = layers if same else layers / L
        y = d.reshape(-1) if in_px else d.reshape(-1) / ph.vm.geometry.image_size[1]
        shown = "%{y:.1f} px" if in_px else "%{y:.1%} of its input width (%{customdata[2]:.1f} px)"
        traces.append(dict(type="scatter", mode="markers", name=f"{side}: {short_name(ph.vm.id)}"[:48],
                           x=x.tolist(), y=y.tolist(),
                           customdata=[[int(k), int(h), float(v)] for k, h, v in zip(layers, heads, d.reshape(-1))],
                           marker=dict(size=8, symbol=symbol, opacity=0.75),
                           hovertemplate=f"{side} · layer %{{customdata[0]}} · head %{{customdata[1]}}"
                                         f"<br>{shown}<extra></extra>"))
    xaxis = dict(title="layer", dtick=1) if same else dict(title="relative depth (layer / layers)", tickformat=".0%")
    yaxis = (dict(title="distance (model-input px)") if in_px
             else dict(title="distance ÷ its input width", tickformat=".0%"))
    return go.Figure(dict(data=traces, layout=dict(
        title=dict(text="Mean attention distance per head, both models", font=dict(size=14)),
        xaxis=xaxis, yaxis=yaxis, height=360,
        margin=dict(l=10, r=10, t=50, b=10), legend=figures.LEGEND_BELOW)))


def resolve(catalog: Catalog, hub_id: str) -> str | None:
    """What this server offers for a hub id: the id when listed, else a listed local copy of the same
    architecture, else its random twin when the gate takes it; None when none is."""
    ids = catalog.ids
    if hub_id in ids:
        return hub_id
    arch = catalog.arch(hub_id)
    local = next((m for m in ids if catalog.is_local(m) and arch and catalog.arch(m) == arch), None)
    if local:
        return local
    twin = RANDOM_PREFIX + arch if arch else None
    return twin if twin and (twin in ids or twin in catalog.twins()) else None


def teaching_pairs(catalog: Catalog | None, model_a: str) -> list[tuple[str, str, str]]:
    """(title, model A, model B) of every teaching pair this server can show, as listed names."""
    if catalog is None:
        return []
    out = []
    ra: str | None
    rb: str | None
    for name, a, b in PAIRS:
        if b == TWIN:
            ra, rb = model_a, catalog.twin_of(model_a)
            if rb is None or not model_a or model_a.startswith(RANDOM_PREFIX):
                continue
        else:
            ra, rb = resolve(catalog, a), resolve(catalog, b)
        if ra and rb and ra in catalog.ids:  # a link's model= takes listed names only
            out.append((name, ra, rb))
    return out


def pairs_text(pairs: list[tuple[str, str, str]], example: str | None, photo: str | None = None) -> str:
    """The teaching pairs as deep links (model=A, compare=B, this tab; the photo kept: an example by its
    name, an upload by its key, which ?photo= reopens while the server holds it). A walk-through: an
    upload's pair links kept no photo and opened the tab on none."""
    if not pairs:
        return "Teaching pairs: none of them is on this server's model list."
    links = []
    for name, a, b in pairs:
        q = to_query(DeepLink(example=example, photo=None if example else photo, model=a, tab="compare", compare=b))
        untrained = "" if name.startswith("trained") else untrained_sides(a, b)  # that pair's name says it
        links.append(f"[{name}]({q}){untrained}")
    return "**Teaching pairs** (open with both models): " + " · ".join(links)


def untrained_sides(a: str, b: str) -> str:
    """Which side of a pair is a stand-in with random weights (resolve: the hub model is not on this server):
    " (both untrained)", " (A: untrained twin)", " (B: untrained twin)" or "". B's alone was said, as
    "(untrained twin)": "DeiT (distilled) against ViT (untrained twin)" linked two random models."""
    random_a, random_b = a.startswith(RANDOM_PREFIX), b.startswith(RANDOM_PREFIX)
    if random_a and random_b:
        return " (both untrained)"
    return " (A: untrained twin)" if random_a else " (B: untrained twin)" if random_b else ""


@dataclass(frozen=True)
class ComparePage:
    """What the tab shows on open, each field named like its component."""

    title_a: str
    title_b: str
    top5_a: go.Figure | None
    top5_b: go.Figure | None
    attention_a: np.ndarray | None
    attention_b: np.ndarray | None
    rollout_a: np.ndarray | None
    rollout_b: np.ndarray | None
    positions_a: np.ndarray | None
    positions_b: np.ndarray | None
    positions_label_a: str  # each side's picture named by its side and model (positions_label)
    positions_label_b: str
    distance: go.Figure | None
    verdict: str
    pairs: str
    depth: int  # the cursor's position shown
    positions: int  # the cursor's top (D)
    heads: list[str]  # the head choices
    head: str
    book: flip.Flipbook  # no pages yet (depth_book fills it)


def _model_b(p: CompareParams) -> str:
    if not p.model_b:
        raise UserError("Pick model B to compare with.")
    return p.model_b


def show(ph: Photo, p: CompareParams) -> ComparePage:
    """On open (or a new model B, head or range): both sides at the cursor."""
    pairs = pairs_text(teaching_pairs(ph.wb.catalog, ph.key.model_id), p.example, p.photo)
    if not p.model_b:
        # The cursor runs over A's layers until B is picked: a slider needs a range (1 = 1 is refused,
        # "Slider minimum must be less than maximum"), and a link's position (layer=) is kept for B.
        top = ph.vm.geometry.num_layers
        return ComparePage(title(("A"), ph.vm), "**B:** pick a model to compare with (or open a teaching pair).",
                           top5_or_note("A", ph), None, None, None, None, None, None, None,
                           positions_label("A", None), positions_label("B", None), None,
                           "Pick model B to see the two side by side.", pairs, p.depth if 1 <= p.depth <= top else top,
                           top, list(FUSIONS), "mean", flip.empty(f"{ph.key!r}|", DEPTH_CONTROLS))
    pr = pair(ph, p.model_b)
    head = p.head if p.head in head_choices(pr) else "mean"  # a head number B (or a new A) lacks: fused
    c = cursor(pr, dataclasses.replace(p, head=head))
    pics, sa, sb = depth_pictures(pr, c, p.shared_range)
    return ComparePage(
        title_a=title("A", pr.a.vm), title_b=title("B", pr.b.vm),
        top5_a=top5_or_note("A", pr.a), top5_b=top5_or_note("B", pr.b),
        **pics,
        positions_a=positions.positions_panel(pr.a).grid_img, positions_b=positions.positions_panel(pr.b).grid_img,
        positions_label_a=positions_label("A", pr.a.vm), positions_label_b=positions_label("B", pr.b.vm),
        distance=distance_figure(pr), verdict=verdict(pr, c, sa, sb), pairs=pairs, depth=c.position,
        positions=c.positions, heads=head_choices(pr), head=head,
        book=flip.empty(depth_look(pr, dataclasses.replace(p, head=head)), DEPTH_CONTROLS))


def export_arrays(ph: Photo) -> dict[str, np.ndarray]:
    """Export is of one photo under one model: a comparison needs a second model (nothing here)."""
    return {}


def export_figures(ph: Photo) -> dict[str, np.ndarray]:
    return {}
