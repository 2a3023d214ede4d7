"""Deep links: URL query parameters <-> a view of the page.

    ?example=chelsea&model=google/vit-base-patch16-224&tab=attention&layer=6&head=3
    &query=4,7&direction=column&mode=rollout&dx=8&dy=-4&fill=wrap&mask=3,17,40&mask_mode=blur
    &ablate=3.2,7.1&ablate_mode=mean
    ?lesson=1&step=5&photo=<the photo's key>     (a lesson step, on a photo the server holds)
    ?example=chelsea&model=facebook/dinov2-small&tab=compare&compare=facebook/dinov2-with-registers-small
        &layer=9&head=2                             (on the Compare tab: its depth cursor and its head)
    ?example=chelsea&tab=embeddings&depth=0         (the Embeddings tab's depth l: 0 = after the embedding stage)

Parsing never fails: an unknown or out-of-range value falls back to the default and
adds a notice, so a lecturer's typo never produces an error page.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlencode

from vizvit.errors import cut
from vizvit.model.ablation import Ablation
from vizvit.model.models import Geometry
from vizvit.vocab import (
    ABLATE_MODES,
    DIRECTIONS,
    FILLS,
    FUSIONS,
    HEADS_EXAMPLE,
    MASK_MODES,
    MODE_FROM_URL,
    MODE_URL,
    ONE_HEAD,
)

LESSON_TAB = "lesson"  # the tab lesson=1 opens
# Every ASCII punctuation character but '/' (no markup starts with it: a tag needs '<', an autolink
# ':' or "www."): CommonMark lets a backslash make each one literal text.
_MARKDOWN_PUNCTUATION = re.compile(r"([!-.:-@\[-`{-~])")
SHOWN_CHARS = 48  # of a link's value in a notice: enough to recognise a typo
PHOTO_KEY = re.compile(r"[0-9a-f]{40}")  # a photo's key: the SHA-1 of its pixels (images.image_sha1)


@dataclass(frozen=True)
class DeepLink:
    """A view of the page. None means "the default". Layer and head are 1-based, as shown."""

    example: str | None = None
    model: str | None = None
    tab: str | None = None
    layer: int | None = None
    head: int | str | None = None  # 1..H, or a fusion: mean, max, min
    query: tuple[int, int] | None = None  # attention query patch (row, col), 0-based as shown; None = [CLS]
    direction: str | None = None  # the query's row (what it attends to) or column
    mode: str | None = None  # "raw" or "rolled out"
    dx: int = 0
    dy: int = 0
    fill: str | None = None  # what enters at the border of a shift (vocab.FILLS); None = edge
    mask: tuple[int, ...] = ()
    mask_mode: str | None = None  # how a masked patch is removed (vocab.MASK_MODES); None = drop
    projector: bool = False  # large fonts, high contrast
    ablate: tuple[tuple[int, int], ...] = ()  # heads switched off, 0-based (layer, head); 1-based in the URL
    ablate_mode: str | None = None  # "zero" or "mean"; None = zero
    lesson: bool = False  # the guided lesson (the Lesson tab)
    step: int | None = None  # its step, counted from 1; None = the first
    photo: str | None = None  # an uploaded photo's key (its content hash), instead of an example
    compare: str | None = None  # the Compare tab's model B (a listed model or a listed model's random twin)
    depth: int | None = None  # the Embeddings tab's depth l, 0..L (0: after the embedding stage); None = 0


# The page's controls a link sets and "Copy link to this view" reads, in THE order: the page's
# events list them so (page/shell.py), each tab registers its own by these names (ctx.links).
VIEW_CONTROLS: tuple[str, ...] = ("layer", "head", "show", "query", "direction", "mode", "dx", "dy", "fill", "mask",
                                  "mask_mode", "ablate", "ablate_mode", "compare", "depth")
COMPARE_TAB, EMBEDDINGS_TAB = "compare", "embeddings"  # the tabs whose own cursor a link's values set
DEFAULT_FILL, DEFAULT_MASK_MODE = "edge", "drop"  # the Experiments tab's, left out of a link


def literal(value: object, limit: int = SHOWN_CHARS) -> str:
    """A value from a link as Markdown that renders exactly as its characters: its ASCII
    punctuation backslash-escaped (so no `<tag>`, `[text](url)`, `![img](src)`, `&entity;`,
    autolink, emphasis or `$maths$` can form), control characters as spaces, cut at `limit`.
    The notices are Markdown (the page shows them in a gr.Markdown); a link is anyone's to write."""
    text = cut("".join(c if c.isprintable() else " " for c in str(value)), limit)
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)


def _int(value: str) -> int | None:
    try:
        return int(value.strip())
    except (ValueError, AttributeError):
        return None


_KNOWN = {"example", "model", "tab", "layer", "head", "query", "direction", "mode", "dx", "dy", "fill", "mask",
          "mask_mode", "projector", "ablate", "ablate_mode", "lesson", "step", "photo", "compare", "depth"}
_YES, _NO = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def parse(params: Mapping[str, str], examples: Sequence[str], models: Sequence[str],
          tabs: Sequence[str], compare_models: Sequence[str] | None = None) -> tuple[DeepLink, list[str]]:
    """Query parameters -> (DeepLink, notices). Geometry-free checks only; see `fit`.
    compare_models: what `compare` may name (default: `models`). The notices come in the order the
    parameters are read here."""
    r = _Reader(params)
    for k in params:
        if k not in _KNOWN and k != "__theme":
            r.notices.append(f"Unknown link parameter '{literal(k)}' ignored.")
    example = _example(r, examples)
    model, tab, direction = r.choice("model", models), r.choice("tab", tabs), r.choice("direction", DIRECTIONS)
    compare = r.choice("compare", models if compare_models is None else compare_models)
    mode, query = _mode(r), _query(r)
    layer, dx, dy, depth = r.number("layer"), r.number("dx") or 0, r.number("dy") or 0, r.number("depth")
    fill = r.choice("fill", FILLS)
    head, mask, mask_mode = _head(r), _mask(r), r.choice("mask_mode", MASK_MODES)
    ablate_mode = r.choice("ablate_mode", ABLATE_MODES)
    ablate = _ablate(r)
    lesson = r.flag("lesson")
    if lesson:
        tab = tab or (LESSON_TAB if LESSON_TAB in tabs else None)
    step, photo, projector = _step(r), _photo(r), r.flag("projector")
    return DeepLink(example=example, model=model, tab=tab, layer=layer, head=head, query=query, direction=direction,
                    mode=mode, dx=dx, dy=dy, fill=fill, mask=mask, mask_mode=mask_mode, projector=projector,
                    ablate=ablate, ablate_mode=ablate_mode,
                    lesson=lesson, step=step, photo=photo, compare=compare, depth=depth), r.notices


class _Reader:
    """The query parameters of one link, read one value at a time; what a bad value earns is a notice."""

    def __init__(self, params: Mapping[str, str]) -> None:
        self.params = params
        self.notices: list[str] = []

    def get(self, name: str) -> str | None:
        return self.params.get(name)

    def choice(self, name: str, allowed: Sequence[str]) -> str | None:
        """One of `allowed`, or None (missing, empty or not allowed: a notice)."""
        v = self.params.get(name)
        if v is None or v == "":
            return None
        if v in allowed:
            return v
        self.notices.append(f"'{name}={literal(v)}' is not one of {', '.join(allowed)}; using the default.")
        return None

    def number(self, name: str) -> int | None:
        """A whole number, or None (missing, empty or not a number: a notice)."""
        v = self.params.get(name)
        if v is None or v == "":
            return None
        i = _int(v)
        if i is None:
            self.notices.append(f"'{name}={literal(v)}' is not a whole number; using the default.")
        return i

    def flag(self, name: str) -> bool:
        """1 / true / yes / on; anything but 0 / false / no / off earns a notice."""
        v = self.params.get(name)
        if not v:
            return False
        if v.lower() in _YES:
            return True
        if v.lower() not in _NO:
            self.notices.append(f"'{name}={literal(v)}' should be 1 or 0; ignored.")
        return False


def _example(r: _Reader, examples: Sequence[str]) -> str | None:
    """An example photo named by its file's stem (chelsea), as its path in `examples`."""
    ex = r.get("example")
    if not ex:
        return None
    stems = {e.rsplit("/", 1)[-1].rsplit(".", 1)[0]: e for e in examples}
    if ex in stems:
        return stems[ex]
    r.notices.append(f"Unknown example '{literal(ex)}'; choose one of {', '.join(stems)}.")
    return None


def _mode(r: _Reader) -> str | None:
    mode = r.get("mode")
    if not mode:
        return None
    if mode in MODE_FROM_URL:
        return MODE_FROM_URL[mode]
    r.notices.append(f"'mode={literal(mode)}' is not raw or rollout; using raw.")
    return None


def _query(r: _Reader) -> tuple[int, int] | None:
    """A query patch as row,col (4,7)."""
    query = r.get("query")
    if not query:
        return None
    rc = [_int(s) for s in query.split(",")]
    row, col = rc if len(rc) == 2 else (None, None)
    if row is not None and col is not None:
        return row, col
    r.notices.append(f"'query={literal(query)}' must be a patch's row,col (e.g. 4,7); using [CLS].")
    return None


def _head(r: _Reader) -> int | str | None:
    """A head number (1-based) or a fusion of the heads (mean, max, min)."""
    head = r.get("head")
    if not head:
        return None
    if head in FUSIONS:
        return head
    if _int(head) is not None:
        return _int(head)
    r.notices.append(f"'head={literal(head)}' is neither a head number nor one of {', '.join(FUSIONS)}.")
    return None


def _mask(r: _Reader) -> tuple[int, ...]:
    """Patch numbers separated by commas -> sorted, each once; () if any is not a number."""
    mask = r.get("mask")
    if not mask:
        return ()
    items = [_int(s) for s in mask.split(",") if s.strip()]
    patches = [i for i in items if i is not None]
    if len(patches) < len(items):
        r.notices.append(f"'mask={literal(mask)}' must be patch numbers separated by commas; ignored.")
        return ()
    return tuple(sorted(set(patches)))


# A whole layer in a link ("ablate=7", as the page's box takes it): every head of layer 7, once the model's
# head count is known (fit). A walk-through: the box took "12" and the link dropped it.
WHOLE_LAYER = -1


def _ablate(r: _Reader) -> tuple[tuple[int, int], ...]:
    """Heads as layer.head counted from 1 (3.5,7.1), or a whole layer (7) -> 0-based (layer, head), sorted,
    each once; a whole layer as (layer, WHOLE_LAYER) until fit expands it."""
    ablate = r.get("ablate")
    if not ablate:
        return ()
    cells = [tuple(_int(x) for x in part.split(".")) for part in ablate.split(",") if part.strip()]
    heads = [(c[0], c[1]) if len(c) == 2 else (c[0], WHOLE_LAYER + 1) for c in cells if len(c) in (1, 2)]
    pairs = [(l, h) for l, h in heads if l is not None and h is not None]
    if len(pairs) == len(cells):
        return tuple(sorted({(l - 1, h - 1) for l, h in pairs}))
    r.notices.append(f"'ablate={literal(ablate)}' must be heads as layer.head counted from 1, or whole layers "
                     f"(e.g. {HEADS_EXAMPLE},9); ignored.")
    return ()


def _step(r: _Reader) -> int | None:
    """A lesson step, counted from 1."""
    step = r.get("step")
    if not step:
        return None
    i = _int(step)
    if i is None or i < 1:
        r.notices.append(f"'step={literal(step)}' is not a step number (1, 2, …); showing the first step.")
        return None
    return i


def _photo(r: _Reader) -> str | None:
    """An uploaded photo's key: 40 hex digits, in any case."""
    photo = r.get("photo")
    if not photo:
        return None
    if PHOTO_KEY.fullmatch(photo.strip().lower()):
        return photo.strip().lower()
    r.notices.append(f"'photo={literal(photo)}' is not a photo's key (40 hex digits); ignored.")
    return None


def _cut(number: object) -> str:
    """A number from a link in a notice (digits, "-", "."; no Markdown to escape), cut at SHOWN_CHARS: a
    4,000-digit layer= was written out whole."""
    return cut(str(number), SHOWN_CHARS)


FEW_SHOWN = 8  # of a link's numbers in one notice: a stranger's link of 3,000 patches is no 16 kB wall of digits


def _few(items: Sequence[object]) -> str:
    """A link's numbers in a notice: the first FEW_SHOWN, each cut as _cut does, then how many in all."""
    shown = ", ".join(_cut(i) for i in items[:FEW_SHOWN])
    return shown if len(items) <= FEW_SHOWN else f"{shown}, … ({len(items)} in all)"


def fit(link: DeepLink, g: Geometry, b: Geometry | None = None) -> tuple[DeepLink, list[str]]:
    """Drop the values that do not exist on this model (layer 13 of 12, ...), with notices. b: model B's
    geometry, on the Compare tab, where layer= and head= are its cursor's, over the deeper model's layers
    and the larger head count (views.compare.Pair)."""
    notices: list[str] = []
    pair = b is not None and link.tab == COMPARE_TAB
    n_layers = max(g.num_layers, b.num_layers) if b is not None and pair else g.num_layers
    n_heads = max(g.num_heads, b.num_heads) if b is not None and pair else g.num_heads
    if link.layer is not None and not 1 <= link.layer <= n_layers:
        notices.append(f"Layer {_cut(link.layer)} does not exist (1–{n_layers}); showing the last layer.")
        link = replace(link, layer=None)
    if isinstance(link.head, int) and not 1 <= link.head <= n_heads:
        notices.append(f"Head {_cut(link.head)} does not exist (1–{n_heads}); showing the mean of the heads.")
        link = replace(link, head=None)
    if link.depth is not None and not 0 <= link.depth <= g.num_layers:
        notices.append(f"Depth {_cut(link.depth)} does not exist (0–{g.num_layers}); showing depth 0.")
        link = replace(link, depth=None)
    if link.query is not None and not (0 <= link.query[0] < g.grid[0] and 0 <= link.query[1] < g.grid[1]):
        notices.append(f"Patch (row {_cut(link.query[0])}, col {_cut(link.query[1])}) is outside the "
                       f"{g.grid[0]}×{g.grid[1]} grid (rows and columns count from 0); using [CLS].")
        link = replace(link, query=None)
    lim = 2 * g.patch_size

    def shift(name: str, v: int) -> int:
        if -lim <= v <= lim:
            return v
        notices.append(f"{name}={_cut(v)} is outside ±{lim} pixels; no shift used.")
        return 0

    link = replace(link, dx=shift("dx", link.dx), dy=shift("dy", link.dy))
    bad = [i for i in link.mask if not 0 <= i < g.num_patches]
    if bad:
        notices.append(f"Mask patches {_few(bad)} are outside 0–{g.num_patches - 1}; they were left out.")
        link = replace(link, mask=tuple(i for i in link.mask if 0 <= i < g.num_patches))
    whole = {l for l, h in link.ablate if h == WHOLE_LAYER}
    if whole:
        gone = sorted(l for l in whole if not 0 <= l < g.num_layers)
        if gone:
            many = len(gone) > 1
            notices.append(f"Layer{'s' * many} {_few([l + 1 for l in gone])} "
                           f"{'do' if many else 'does'} not exist (1–{g.num_layers}); nothing was switched off "
                           f"for {'them' if many else 'it'}.")
        heads = {c for c in link.ablate if c[1] != WHOLE_LAYER}
        heads |= {(l, h) for l in whole if 0 <= l < g.num_layers for h in range(g.num_heads)}
        link = replace(link, ablate=tuple(sorted(heads)))
    off = [(l, h) for l, h in link.ablate if not (0 <= l < g.num_layers and 0 <= h < g.num_heads)]
    if off:
        notices.append(f"Heads {_few([f'{l + 1}.{h + 1}' for l, h in off])} do not exist "
                       f"({g.num_layers} layers × {g.num_heads} heads); they stay on.")
        link = replace(link, ablate=tuple(c for c in link.ablate if c not in off))
    return link, notices


def of_view(example: str | None, model: str, tab: str, layer: float | None, head: float | None, show: str,
            query: Sequence[int] | None, direction: str, mode: str, dx: float, dy: float, mask: Sequence[int],
            projector: bool, ablation: Ablation | None = None, compare: str | None = None,
            fill: str | None = None, mask_mode: str | None = None, depth: float | None = None,
            cursor: tuple[float, str | None] | None = None, photo: str | None = None) -> DeepLink:
    """The page's controls -> the DeepLink that reopens them ("Copy link to this view"). photo: an uploaded
    photo's key, kept where no example names the photo (a walk-through: an upload's link opened with no
    photo; ?photo= opens one the server holds, as the Lesson's and the Camera's links do). compare
    (the Compare tab's model B) and depth (the Embeddings tab's) are kept on their tab only: elsewhere
    they would only lengthen the link. cursor: the Compare tab's (depth, head: a fusion or "k"), its
    layer= and head= on that tab."""
    if tab == COMPARE_TAB and cursor is not None:
        picked = str(cursor[1] or FUSIONS[0])
        one = None if picked in FUSIONS else _whole(picked)
        fusion = picked if picked in FUSIONS else FUSIONS[0]
        layer, (show, head) = cursor[0], ((fusion, 1) if one is None else (ONE_HEAD, one))
    one_head = _whole(head) if show == ONE_HEAD else None
    return DeepLink(example=example, photo=None if example else photo, model=model, tab=tab, layer=_whole(layer),
                    compare=compare if tab == COMPARE_TAB else None,
                    depth=_whole(depth) if tab == EMBEDDINGS_TAB else None,
                    head=one_head if show == ONE_HEAD else show,
                    query=(query[0], query[1]) if query else None,
                    direction=direction, mode=mode, dx=_whole(dx) or 0, dy=_whole(dy) or 0, fill=fill, mask=tuple(mask),
                    mask_mode=mask_mode,
                    projector=bool(projector), ablate=ablation.heads if ablation else (),
                    ablate_mode=ablation.mode if ablation else None)


def _whole(value: object) -> int | None:
    """A control's number as a whole number, None where it is none (nan, inf, text: a REST caller may send any
    of them, and int() raised on each: the page's 'Something went wrong' and a traceback in the log)."""
    try:
        f = float(value)  # type: ignore[arg-type]  # any value: what float() refuses is none
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) else None


def to_query(link: DeepLink) -> str:
    """DeepLink -> '?example=chelsea&tab=attention&layer=6&head=3' (defaults left out)."""
    q: dict[str, str] = {}
    if link.example:
        q["example"] = link.example.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    for name in ("model", "tab", "compare", "layer", "head", "depth"):
        v = getattr(link, name)
        if v is not None:
            q[name] = str(v)
    if link.query is not None:
        q["query"] = f"{link.query[0]},{link.query[1]}"
    if link.direction not in (None, "row"):
        q["direction"] = link.direction
    if link.mode not in (None, "raw"):
        q["mode"] = MODE_URL[link.mode]
    if link.dx:
        q["dx"] = str(link.dx)
    if link.dy:
        q["dy"] = str(link.dy)
    if link.fill not in (None, DEFAULT_FILL):
        q["fill"] = link.fill
    if link.mask:
        q["mask"] = ",".join(map(str, link.mask))
    if link.mask_mode not in (None, DEFAULT_MASK_MODE):
        q["mask_mode"] = link.mask_mode
    if link.projector:
        q["projector"] = "1"
    if link.ablate:
        q["ablate"] = ",".join(f"{l + 1}.{h + 1}" for l, h in link.ablate)
        if link.ablate_mode not in (None, "zero"):
            q["ablate_mode"] = link.ablate_mode
    if link.lesson:
        q["lesson"] = "1"
        if q.get("tab") == LESSON_TAB:
            del q["tab"]  # lesson=1 opens it
    if link.step is not None:
        q["step"] = str(link.step)
    if link.photo and not link.example:
        q["photo"] = link.photo
    return "?" + urlencode(q, safe=",/:") if q else ""


def lesson_link(step: int, example: str | None, photo: str | None, model: str | None = None) -> DeepLink:
    """A lesson step's link: the step on an example (by name) or on an uploaded photo (its key)."""
    return DeepLink(example=example, model=model, lesson=True, step=int(step),
                    photo=None if example else photo)


@dataclass(frozen=True)
class LinkPlan:
    """What the page sets when it opens a deep link: every value resolved and checked."""

    link: DeepLink
    model: str  # the model to use (the link's, or the default when it cannot be loaded)
    show: str | None  # attention tab's head choice: ONE_HEAD or a fusion; None = unchanged
    notices: tuple[str, ...]

    @property
    def notice_text(self) -> str:
        """The notices as a Markdown list; each value from the link in it is `literal`."""
        return "\n".join(f"- {n}" for n in self.notices)


def plan(params: Mapping[str, str], examples: Sequence[str], models: Sequence[str], tabs: Sequence[str],
         default_model: str, geometry_of: Callable[[str], Geometry],
         compare_models: Sequence[str] | None = None, n_steps: int | None = None) -> LinkPlan:
    """Query parameters -> LinkPlan. geometry_of(model) may raise ValueError (offline):
    the default model is then used, with a notice. n_steps: the lesson's steps, where a step past them
    is said (the page showed the last one with no word, while step=0 earned a notice)."""
    link, notices = parse(params, examples, models, tabs, compare_models)
    model = link.model or default_model
    try:
        g = geometry_of(model)
    except ValueError as e:
        # The loader's words may name the server's files: those are not the visitor's to read.
        why = str(e) if not re.search(r"[\\/]", str(e)) else "its files are missing or damaged here"
        notices.append(f"Model '{literal(model)}' could not be loaded ({literal(why, 120)}); "
                       f"using {literal(default_model)}.")
        model = default_model
        g = geometry_of(model)
    b = None  # model B's geometry, for the Compare tab's cursor (its layers and heads may outnumber A's)
    if link.tab == COMPARE_TAB and link.compare:
        try:
            b = geometry_of(link.compare)
        except ValueError:
            b = None  # the tab says why when it opens: here A's ranges alone are checked
    link, more = fit(link, g, b)
    if n_steps is not None and link.step is not None and link.step > n_steps:
        more.append(f"The lesson has {n_steps} steps: step {link.step} does not exist; showing the last step.")
        link = replace(link, step=n_steps)
    show = ONE_HEAD if isinstance(link.head, int) else link.head
    return LinkPlan(link=link, model=model, show=show, notices=tuple(notices + more))
