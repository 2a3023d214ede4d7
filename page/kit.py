"""What every tab uses: the context (backend + shared components) with the dispatch that runs only
the open tab's on_show, the named handlers' wiring (answer, in_line), `safe`, the empty result
(skip), a view's result as the page's values, the charts download."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import numpy as np

from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.pictures import figures, render
from vizvit.session import PhotoKey, Workbench

from . import web

log = logging.getLogger("vizvit.app")
ZERO_SHOT_ONLY = "vv-zero-shot-only"  # CSS class: shown only while body.vv-zero-shot (CLIP / SigLIP)


@dataclass(frozen=True)
class Ctx:
    """What every tab needs: the backend and the shared components."""

    wb: Workbench
    key: gr.State  # PhotoKey | None: the session's photo, never tensors
    tab: gr.State  # id of the visible tab, so hidden tabs don't compute
    status: gr.Markdown  # the one-line status under the model box
    default_model: str  # the model the page opens with
    # The header's inputs a tab may read (model, labels, template) or clear (upload), by name.
    header: dict[str, gr.components.Component] = field(default_factory=dict)
    unloads: list = field(default_factory=list)  # fn(request) run when a visitor's page closes
    links: dict[str, gr.components.Component] = field(default_factory=dict)  # deep-link targets
    # Each tab's controls by its Params field names (tab id -> name -> component), where a tab
    # registers them: the lesson sets a step's controls before it opens that tab.
    controls: dict[str, dict[str, gr.components.Component]] = field(default_factory=dict)
    example_of: Callable[[str], str | None] = lambda sha1: None  # the example a photo is (a link names it)
    long_work: list = field(default_factory=list)  # events a new upload cancels (sweeps, curves)
    # Events that may compute a costly contest map (the Attention tab's attention flow; built before the
    # Experiments tab, which follows each: the contest on show may then rank fewer maps than there are)
    maps_added: list = field(default_factory=list)
    shows: list = field(default_factory=list)  # (tab id, fn, inputs, outputs) of every on_show
    previews: list = field(default_factory=list)  # (tab id, fn, inputs, outputs) of every on_preview
    thens: list = field(default_factory=list)  # (tab id, fn, inputs, outputs) of every on_show's `then`
    then_after: list = field(default_factory=list)  # the pictures each `then` waits for (CSS selectors)
    # The event ids of those follow-ups (each tab's, and the open tab's after a new photo): a newer
    # answer to the same output wins over theirs (page/follow_up.py).
    follow_ups: list[int] = field(default_factory=list)
    # Each tab with a follow-up (on_show's `then`): (key, by) of its last drawing, by its open ("open") or
    # by a new key's dispatch ("photo"). One state a tab: tabs opened in turn answer in any order.
    drawn: dict[str, gr.State] = field(default_factory=dict)
    # The tab open in the page, set by open_tab.js as an event is sent: the session's tab state may not
    # have heard yet of a tab opened a moment ago. A deep link's tab is opened by a click once the link
    # is read, and the Patches tab's own first select can reach the server after that answer: a new
    # key's dispatch then read "patches" and drew the hidden tab, and the linked tab's map never came
    # (seen with its empty open slow to answer, as on a busy server).
    open_tab: gr.Textbox = field(default_factory=lambda: gr.Textbox(visible="hidden", elem_id="vv-open-tab"))
    unguarded: list = field(default_factory=list)  # their outputs a newer answer does not hold back (follow_up.py)
    # Shown only while the model is an image-text one (CLIP / SigLIP), hidden for a plain ViT: each
    # carries the CSS class ZERO_SHOT_ONLY, and the page sets body.vv-zero-shot (see zero_shot_visible).
    zero_shot_only: list = field(default_factory=list)
    routes: list = field(default_factory=list)  # plain HTTP routes a tab serves (fastapi APIRoute), beside Gradio's
    # tab id -> (its first picture, drawn ahead, and the outputs that drawing leaves stale): on_show's first
    firsts: dict = field(default_factory=dict)
    rooms: Any = None  # the server's live rooms (vizvit.classroom.room.Rooms, issue 45): the Lesson tab opens one
    # (request): raises when this caller may not open a room now (page/guard.py)
    room_opening: Callable[[Any], None] | None = None

    def on_show(self, tab: gr.Tab, fn: Callable, inputs: list, outputs: list,
                then: tuple[Callable, list, list, str] | None = None,
                first: gr.components.Component | None = None, first_with: tuple = ()) -> None:
        """Run fn(*inputs) -> {output: value} when the tab is opened, and when the photo or model
        changes while it is open (see show_visible). Hidden tabs compute nothing (lazy tabs).
        Once per tab: its one views `show` call fills the whole tab.

        then: (fn2, inputs2, outputs2, selector): the tab's slow part (e.g. a forward at another
        size), answered by a second event once the pictures under `selector` are painted and the
        person pauses (web/after_quiet.js), so neither the tab's first picture nor a control moved
        right after the open waits for it.

        first: the tab's first picture (one of `outputs`). While the tab is closed, it is drawn
        ahead for each new photo (see show_visible): the tab then opens with it in place.
        first_with: outputs sent with it, as the tab's fn draws them for the new photo (None where it
        draws none): what the page draws from as the tab opens, which would otherwise be the photo
        before's until the tab's own answer: the Attention tab's map book (with it, a layer moved
        right after the first open is drawn at once, not after that answer; issue 52)."""
        if any(tab_id == tab.id for tab_id, *_ in self.shows):
            raise ValueError(f"tab {tab.id!r} registers on_show twice: one show per tab")
        self.shows.append((tab.id, fn, inputs, outputs))
        if first is not None:
            if any(all(c is not o for o in outputs) for c in (first, *first_with)):
                raise ValueError(f"tab {tab.id!r}: its first picture and what is sent with it must be among its "
                                 "outputs")
            self.firsts[tab.id] = (first, tuple(first_with))
        if then is None:
            tab.select(fn, inputs, outputs, show_progress="minimal")
            return
        fn2, ins2, outs2, selector = then
        if inputs[:1] != [self.key] or ins2[:1] != [self.key] or _specials(fn) or _specials(fn2):
            raise ValueError(f"tab {tab.id!r}: a tab with a follow-up takes the key first and no gr.Request")
        self.thens.append((tab.id, fn2, ins2, outs2))
        self.then_after.append(selector)
        drawn = self.drawn[tab.id] = gr.State(None)
        # Each wrapped handler keeps its own fn's concurrency group (Gradio's default: the fn's id), which
        # another event of the tab may share (the Positions tab's size change runs its follow-up's fn).
        shown = tab.select(_drawing(fn, drawn), inputs, [*outputs, drawn], show_progress="minimal",
                           concurrency_id=str(id(fn)))
        follow = _after_quiet(shown, selector, outs2, f"then-{tab.id}").then(
            _if_drawn(tab.id, fn2, outs2), [self.open_tab, *ins2, drawn], outs2, show_progress="minimal",
            trigger_mode="always_last", concurrency_id=str(id(fn2)), js=web.asset("open_tab.js"))
        self.follow_ups.append(follow["id"])
        _done(follow, f"then-{tab.id}")


    def on_preview(self, tab: gr.Tab, fn: Callable, inputs: list, outputs: list) -> None:
        """fn(new key, *inputs) -> outputs: what the tab shows of a new photo before its forward
        pass (e.g. the model-input view's grid), sent by the upload's event in the same message
        as the new key, while the forward runs (see new_photo). Drawn exactly as on_show's fn
        draws it afterwards, so the same pictures arrive twice and nothing flickers."""
        self.previews.append((tab.id, fn, inputs, outputs))

    def show_visible(self) -> gr.events.Dependency | None:
        """ONE event when the session's key changes (a photo, a model, heads switched off): it
        computes the open tab's views and skips every other output. One event per tab would cost
        a queue round trip each in the browser, for tabs nobody sees.

        Once the open tab is answered, one more event draws each closed tab's first picture
        (on_show's `first`, see _ahead): opening that tab then shows it at once, as the tab
        mounts, instead of after its own round trip (Gradio's handling of a tab's select event
        costs this page's browser 250-450 ms, issue 27). Returns that event: opening any tab,
        or a new key, must cancel it (page/shell.py), so an answer for controls or a photo the
        page has left never lands."""
        inputs, outputs = _io(self.shows)

        def prepare(ins: list, values: tuple) -> None:
            """The other tabs' work for this photo, in the background (Workbench.prepare_later)."""
            key = next((v for c, v in zip(ins, values) if c is self.key), None)
            if isinstance(key, PhotoKey):
                self.wb.prepare_later(key)

        open_tab, tab_ids = self.open_tab, {t for t, *_ in self.shows}
        states = list(self.drawn.items())

        def opened(in_page: str | None, current: str) -> str:
            """The tab open in the page where it says (open_tab.js), else the session's tab state."""
            return in_page if in_page in tab_ids else current

        def dispatch(in_page: str | None, current: str, *values: Any) -> list:
            current = opened(in_page, current)
            out = _open_tab(self.shows, inputs, outputs, current, values)
            if not self.thens:  # else once the open tab's answer is in the page (dispatch_then)
                prepare(inputs, values)
            # inputs[0] is the key (checked below): the open tab drew it
            return [*out, *((values[0], "photo") if t == current else gr.skip() for t, _ in states)]

        # Sent once the patch grid is painted (else Gradio's work holds that first picture back: after_paint.js),
        # the wait a step of its own: the dispatch then gathers the controls and open tab as they are when it ends
        # (as its own js= it sent them as they were before it: a Compare cursor moved, or a link's model B come,
        # during the wait was overwritten). always_last: a second key's dispatch runs after the first, not never.
        if inputs[:1] != [self.key]:
            raise ValueError("every tab's show takes the key first")
        painted = self.key.change(None, None, None, js=web.after_paint("#patch-grid img"), show_progress="hidden")
        shown = painted.then(dispatch, [open_tab, self.tab, *inputs], [*outputs, *(d for _, d in states)],
                             show_progress="minimal", trigger_mode="always_last", js=web.asset("open_tab.js"))
        if self.thens:  # the open tab's slow part (see on_show's then), after its pictures
            then_ins, then_outs = _io(self.thens)

            def dispatch_then(in_page: str | None, current: str, *values: Any) -> list:
                # Sent once the open tab's first answer is painted: the background work for the
                # other tabs starts now, so it never competes with that answer's encoding.
                current = opened(in_page, current)
                drawn = dict(zip((t for t, _ in states), values[len(then_ins):]))
                values = values[:len(then_ins)]
                prepare(then_ins, values)
                if drawn.get(current) == (values[0], "open"):  # the tab's open drew it: its own follow-up comes
                    return [gr.skip() for _ in then_outs]
                return _open_tab(self.thens, then_ins, then_outs, current, values)

            shown = _after_quiet(shown, ", ".join(self.then_after), then_outs, "then-new-photo").then(
                dispatch_then, [open_tab, self.tab, *then_ins, *(d for _, d in states)], then_outs,
                show_progress="hidden",
                trigger_mode="always_last", js=web.asset("open_tab.js"))
            self.follow_ups.append(shown["id"])
            _done(shown, "then-new-photo")
        if not self.firsts:
            return None
        firsts = [(tab_id, first, with_) for tab_id, (first, with_) in self.firsts.items()]
        outs = [c for _, first, with_ in firsts for c in (first, *with_)]

        def ahead(in_page: str | None, current: str, *values: Any) -> list:
            if not _AHEAD.acquire(blocking=False):  # another visitor's is running: tabs open as before
                return [gr.skip() for _ in outs]
            try:
                return _ahead(self.shows, firsts, inputs, opened(in_page, current), values)
            finally:
                _AHEAD.release()

        drawn = shown.then(ahead, [open_tab, self.tab, *inputs], outs, show_progress="hidden",
                           js=web.asset("open_tab.js"))
        drawn.then(None, [first for _, first, _ in firsts], None, js=web.asset("preload.js"))
        return drawn

    def preview_io(self) -> tuple[list, list]:
        """The inputs and outputs of every preview, each once (see preview)."""
        return _io(self.previews)

    def preview(self, current: str, key: PhotoKey, values: tuple) -> dict:
        """The open tab's preview of `key`: {output: value} for preview_io()'s outputs (gr.skip() for the rest)."""
        inputs, outputs = self.preview_io()
        return dict(zip(outputs, _open_tab(self.previews, inputs, outputs, current, values, key)))


class ClampedSlider(gr.Slider):
    """A slider whose top follows the model (layers, heads: built for 12, then 2 for a tiny model)
    that clamps a value outside its range instead of refusing the event. An event sent before the
    browser heard of the new top (a photo uploaded as the page opens, while the load's answer that
    sets it is under way; the Compare tab's model B) still carries the old position, and Gradio's own
    Slider refuses it ("Value 12 is greater than maximum value 2"), failing the event: its pictures
    never came (seen in the browser tests, an upload right after the page opened). The views read the
    clamped value: the last layer, as the page's 12 meant.
    is_template: drawn by the page as a plain slider (Gradio's mechanism for template components)."""

    is_template = True

    def preprocess(self, payload: float | None) -> float | None:
        if payload is None:
            return None
        return super().preprocess(min(max(float(payload), self.minimum), self.maximum))


def _drawing(fn: Callable, drawn: gr.State) -> Callable:
    """fn (a tab's select, the key first), whose answer also sets the tab's `drawn` to (key, "open"). An
    open with no photo yet draws nothing, and says nothing: it may land after the photo's own."""
    def drawing(*args: Any) -> dict:
        return {**fn(*args), drawn: gr.skip() if args[0] is None else (args[0], "open")}

    drawing.__name__ = getattr(fn, "__name__", "drawing")
    return drawing


def _if_drawn(tab_id: str, fn2: Callable, outs2: list) -> Callable:
    """fn2 (a tab's follow-up: the tab open in the page first, then fn2's inputs, the key first, then the
    tab's drawn), run only while its tab is open and its open drew the key it is sent with. A tab opened
    by a deep link before its photo came drew nothing, and its follow-up, sent once the photo's key was
    in, computed the charts ahead of the tab's map, then the new photo's own follow-up again after it;
    a new photo meanwhile has its own follow-up too; a tab left for another is drawn again on its reopen."""
    def if_drawn(in_page: str | None, *args: Any) -> Any:
        *values, drawn = args
        still_open = in_page in (None, "", tab_id)  # none: a page without the tab strip (a test's)
        return fn2(*values) if still_open and drawn == (values[0], "open") else skip(outs2)

    if_drawn.__name__ = getattr(fn2, "__name__", "if_drawn")
    return if_drawn


def _specials(fn: Callable) -> list[str]:
    """The parameters of fn that Gradio fills itself (a gr.Request, gr.EventData)."""
    try:
        return [n for n, h in typing.get_type_hints(fn).items() if _is_special(h)]
    except (NameError, TypeError):
        return []


def _busy(outputs: list) -> list[str]:
    """A follow-up's pictures and charts, by CSS selector: marked on screen while it is on its way."""
    return [f"#{o.elem_id}" for o in outputs if isinstance(o, (gr.Image, gr.Plot)) and o.elem_id]


def _done(follow: gr.events.Dependency, key: str) -> None:
    """After the follow-up (answered or failed), the marks its wait put under `key` end (web/follow_done.js)."""
    follow.then(None, None, None, js=web.follow_done(key), show_progress="hidden")


def _after_quiet(event: gr.events.Dependency, selector: str, outputs: list, key: str) -> gr.events.Dependency:
    """A step after `event` that only waits in the page (web/after_quiet.js) until the pictures under
    `selector` are painted and the person pauses. The follow-up chained after it gathers its inputs
    only then: as the wait's own js= it would send the controls as they were when the wait began,
    and a slider moved meanwhile would be drawn, then overwritten by the follow-up's answer for the
    old position (issue 52: the Experiments tab's top-5 chart showed dx = 0 beside dx = 1's picture).
    The follow-ups are always_last: one whose last run is still going (a new photo's, right after the
    photo before's) runs again once it ends, with the controls then, instead of being dropped.
    From the wait's start, the follow-up's pictures and charts among `outputs` are marked as being
    redrawn (under `key`: one per follow-up), until _done's step after it."""
    return event.then(None, None, None, js=web.after_quiet(selector, _busy(outputs), key), show_progress="hidden")


def _io(entries: list) -> tuple[list, list]:
    """The union of the entries' inputs and of their outputs, each component once, in order."""
    return (list({id(c): c for _, _, ins, _ in entries for c in ins}.values()),
            list({id(c): c for _, _, _, outs in entries for c in outs}.values()))


def _open_tab(entries: list, inputs: list, outputs: list, current: str, values: tuple, *lead: Any) -> list:
    """Run the entries of tab `current` (fn(*lead, *its inputs)) on `values` of `inputs`; the
    values for `outputs`, gr.skip() where no entry of that tab writes."""
    given = {id(c): v for c, v in zip(inputs, values)}
    out = {id(c): gr.skip() for c in outputs}
    for tab_id, fn, ins, outs in entries:
        if tab_id == current:
            res = fn(*lead, *(given[id(c)] for c in ins))
            if not isinstance(res, dict):
                raise TypeError(f"{getattr(fn, '__name__', fn)} of tab {tab_id!r} must return a component -> "
                                f"value dict, not {type(res).__name__}")
            stray = [c for c in res if all(c is not o for o in outs)]
            if stray:
                raise ValueError(f"{getattr(fn, '__name__', fn)} of tab {tab_id!r} returned values for components "
                                 f"outside its outputs: {stray}")
            out.update({id(c): v for c, v in res.items()})
    return [out[id(c)] for c in outputs]


# One visitor's closed tabs drawn ahead at a time, over all visitors: it is work nobody waits for
# yet, and a lecture hall's uploads must not put many of it before anyone's next answer. Not on a
# thread of lower priority: what it computes (a photo's derived results, a forward) others may
# wait for under the cache's per-key locks and the model's lock, and a starved holder made a tab's
# own answer wait for it (a priority inversion: the browser tests timed out under load).
_AHEAD = threading.Semaphore(1)


def _ahead(shows: list, firsts: list, inputs: list, current: str, values: tuple) -> list:
    """For each tab in `firsts` ((tab id, first picture, what is sent with it)) but `current`: its first
    picture as its on_show fn draws it from `values` of `inputs` (the very value, and so the same
    file, that its select event will bring; an array, or an update carrying one), then the fn's value
    for each output sent with it (None where the fn gives none). gr.skip() for
    all of the open tab's, and of a tab whose fn fails or has no photo: its own event says why."""
    given = {id(c): v for c, v in zip(inputs, values)}
    fns = {tab_id: (fn, ins) for tab_id, fn, ins, _ in shows}
    out: list = []
    for tab_id, first, with_ in firsts:
        pic: Any = None
        res: Any = {}
        if tab_id != current:
            fn, ins = fns[tab_id]
            try:
                res = fn(*(given[id(c)] for c in ins))
                pic = next((v for c, v in res.items() if c is first), None) if isinstance(res, dict) else None
            except Exception:
                log.debug("drawing tab %s ahead failed", tab_id, exc_info=True)
        drawn = isinstance(pic, np.ndarray) or (isinstance(pic, dict) and isinstance(pic.get("value"), np.ndarray))
        out += ([pic, *(next((v for c, v in res.items() if c is w), None) for w in with_)] if drawn
                else [gr.skip() for _ in (first, *with_)])
    return out


CLICK_REFUSED = "A click's place must be two numbers (x, y), as the page sends them."
CLICK_LIMIT = 1 << 31  # far beyond any picture's side or table's rows: a bigger one is no click the page made


def click_at(evt: gr.SelectData) -> tuple[int, int]:
    """A select event's place (x, y) (a picture's pixel; a table's (row, col)), read from event data a
    caller writes as it likes: two numbers, else a UserError (a sentence). The handlers read
    evt.index[0] and [1] as they came, and {"index": {}} or [1e308, "a"] was "Something went wrong"
    and a traceback in the log, at any stranger's will."""
    index = evt.index
    if not (isinstance(index, (list, tuple)) and len(index) == 2):
        raise UserError(CLICK_REFUSED)
    # abs(v) < limit is False for NaN and the infinities too; a bool is an int to Python, not to the page
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < CLICK_LIMIT for v in index):
        raise UserError(CLICK_REFUSED)
    return int(index[0]), int(index[1])


def skip(outputs: list) -> dict:
    """Nothing changes: the answer to an event with no photo yet. A tab's show for no photo has
    nothing to clear either (the key is never unset), and clearing would race the photo's answer:
    a deep link clicks its tab open while the photo loads, and that show (key None) could land
    after the photo's own and blank the tab (seen in CI: the Compare tab's verdict stayed empty)."""
    return {c: gr.skip() for c in outputs}


def values(result: Any, shown: dict[str, gr.components.Component]) -> dict:
    """A view's result (a frozen dataclass) -> {component: value} for each field named in `shown`
    (the page module's field -> component mapping). A field `shown` names and the result lacks
    is a mistake, not a blank."""
    names = {f.name for f in dataclasses.fields(result)}
    missing = [n for n in shown if n not in names]
    if missing:
        raise AttributeError(f"{type(result).__name__} has no field(s) {missing}")
    return {c: getattr(result, n) for n, c in shown.items()}


def with_cells(picture: Any, rows: int, cols: int, step: tuple[int, int] | None = None,
               at: tuple[int, int] = (0, 0), **props: Any) -> Any:
    """A clickable picture of rows × cols cells (web.cells_class: step, at in its own pixels) as an
    update that also gives it its cells' class, so the arrow keys and Enter choose a cell (web/a11y.js).
    An update, not a gr.Image(...): that would encode its own file apart from the component's settings
    (and the work ahead, _ahead, takes an update carrying a picture). props: more of the update (a label
    that says what the picture shows now). No picture: unchanged."""
    if not isinstance(picture, np.ndarray):
        return picture
    return gr.update(value=picture, elem_classes=[web.cells_class(rows, cols, step, at)], **props)


def patch_cells(picture: Any, g: Geometry) -> Any:
    """with_cells for a picture of the model's patch grid enlarged render.display_scale(g) times from its
    top-left corner (the Patches grid, the attention map, the Embeddings pictures, the mask grid)."""
    p = g.patch_size * render.display_scale(g)
    return with_cells(picture, *g.grid, step=(p, p))


def reader(named: dict[str, gr.components.Component]) -> Callable[[tuple], dict[str, Any]]:
    """values (in `named` order, as the event's inputs list them) -> {field: value}."""
    names = list(named)
    return lambda v: dict(zip(names, v))


def _is_special(hint: Any) -> bool:
    """Whether Gradio fills a parameter with this hint itself (a gr.Request, gr.EventData or one of its kinds)."""
    kinds = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return any(k is gr.Request or (isinstance(k, type) and issubclass(k, gr.EventData)) for k in kinds)


def _shaped(wrapper: Callable, fn: Callable, lead: int) -> Callable:
    """wrapper, named and signed as `fn` without its first `lead` parameters (the values the wiring
    binds): Gradio reads the signature and the resolved hints to pass gr.Request / gr.EventData."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[lead:]
    names = {p.name for p in params}
    hints = typing.get_type_hints(fn)
    late = [p.name for p in params if p.kind is p.KEYWORD_ONLY and _is_special(hints.get(p.name))]
    if late:  # Gradio's special_args reads the positional parameters only: these would stay None
        raise TypeError(f"{fn.__qualname__}: Gradio passes {late} only before *args (make it positional)")
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {k: v for k, v in hints.items() if k in names}
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(wrapper, attr, getattr(fn, attr))
    return wrapper


def answer(fn: Callable, comps: dict[str, gr.components.Component], *lead: Any) -> Callable:
    """The event handler for fn(*lead, *event values) -> {name: value} (a module-level handler that
    names what it sets): it answers {comps[name]: value}, Gradio's form, and is `safe`. `lead`: the
    values the page binds (the Workbench). Generators (streamed progress) stay generators."""
    def shown(res: Any) -> Any:  # a component among the names (another part's answer, merged) stays itself
        return {comps[n] if isinstance(n, str) else n: v for n, v in res.items()} if isinstance(res, dict) else res

    if inspect.isgeneratorfunction(fn):
        def stream(*args: Any, **kwargs: Any) -> Any:
            for res in fn(*lead, *args, **kwargs):
                yield shown(res)

        return safe(_shaped(stream, fn, len(lead)))

    def call(*args: Any, **kwargs: Any) -> Any:
        return shown(fn(*lead, *args, **kwargs))

    return safe(_shaped(call, fn, len(lead)))


def in_line(order: Any, names: list[str], fn: Callable, comps: dict[str, gr.components.Component],
            outputs: list[str], wb: Workbench, sets: tuple[str, ...] = (), select: bool = False) -> Callable:
    """A view event of `order`'s line (page/ordered.py AnswerOrder): the one place its guard is
    applied. The handler Gradio calls takes (stamp, key, *control values in `names` order), with a
    gr.SelectData first where `select`; it runs fn(wb, key, controls[, the clicked (x, y)]) ->
    {name: value} only for an event no older than one answered (and with a photo), else skips
    `outputs` and the stamp. The values fn returns for the controls named in `sets` are recorded as
    set by this answer (AnswerOrder.sets); the stamp box says the answer landed."""
    skipped = [comps[n] for n in outputs] + [order.stamp]

    def run(stamp: str, key: PhotoKey | None, v: tuple, *extra: Any) -> dict:
        c = None if key is None else order.take(stamp, dict(zip(names, v)))
        if c is None:
            return skip(skipped)
        res = fn(wb, key, c, *extra)
        if sets:
            order.sets(stamp, **{n: res[n] for n in sets})
        return {**{comps[n]: val for n, val in res.items()}, **order.answered(stamp)}

    if select:
        def clicked(evt: gr.SelectData, stamp: str, key: PhotoKey | None, *v: Any) -> dict:
            return run(stamp, key, v, click_at(evt))

        handler = clicked
    else:
        def handler(stamp: str, key: PhotoKey | None, *v: Any) -> dict:  # type: ignore[misc]
            return run(stamp, key, v)

    handler.__name__ = handler.__qualname__ = fn.__name__  # the log names the tab's handler
    return safe(handler)


def _user_error(fn: Callable, e: Exception) -> gr.Error:
    if isinstance(e, gr.Error):
        return e
    if isinstance(e, UserError):  # expected (a bad file, a wrong value): a message, no traceback
        return gr.Error(str(e), print_exception=False)
    log.exception("handler %s failed", fn.__name__)
    return gr.Error("Something went wrong on the server with this request. "
                    "Please try again or upload another photo.")


def safe(fn: Callable) -> Callable:
    """Turn a UserError into a message in the page; log anything else, show a generic message.
    Works for plain handlers and for generators (streamed progress)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - every failure becomes a message
                raise _user_error(fn, e) from None

        return stream

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            raise _user_error(fn, e) from None

    return wrapper


def charts_download(tab: gr.Tab) -> None:
    """A button that saves every plotly chart of the tab as one standalone HTML file."""
    plots = [b for b in _descendants(tab) if isinstance(b, gr.Plot)]
    if not plots:
        return
    btn = gr.Button("Download this tab's charts (HTML)", size="sm", elem_id=f"charts-btn-{tab.id}")
    out = gr.File(label="charts (HTML)", visible=False, interactive=False, elem_id=f"charts-file-{tab.id}")
    names = [p.label or f"chart {i + 1}" for i, p in enumerate(plots)]

    @safe
    def save(*values: Any):
        charts = [(n, v.plot) for n, v in zip(names, values) if v is not None and v.type == "plotly"]
        path = figures.save_charts_html(charts, f"vizvit: {tab.label}", f"vizvit-{tab.id}-charts")
        return gr.File(str(path), visible=True)

    # Then start the download, so one click downloads (the file box stays, to download again):
    # wait until the box links the NEW file (each save has its own name), then click that link.
    btn.click(save, plots, out).success(None, None, None, js=web.click_new_file(f"#charts-file-{tab.id}"))


def _descendants(block: gr.blocks.BlockContext) -> list:
    out = []
    for child in getattr(block, "children", []):
        out.append(child)
        out.extend(_descendants(child))
    return out
