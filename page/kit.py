"""What every tab uses: the context (backend + shared components), `safe`, the empty
result, the dispatch that runs only the open tab's on_show, the charts download."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import logging
import os
import threading
import time
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import gradio as gr
import numpy as np

from vizvit.cancel import Cancel
from vizvit.errors import UserError
from vizvit.model.models import Geometry
from vizvit.pictures import figures, render
from vizvit.readings import methods
from vizvit.service import jobs as jobs_mod
from vizvit.service.jobs import Caller, Jobs, Ticket
from vizvit.session import PhotoKey, Workbench

from . import web

log = logging.getLogger("vizvit.app")


# Gradio 6.31's page, on every status message of every event (pending, started, done: several
# per event), refreshes the loading status of every component that was ever an event's output
# and, for a container among them, re-reads (a deep $state.snapshot of) every component inside
# it. The Tabs container as one output (a deep link's tab) made each event re-read the whole
# page: 130-290 ms of main thread per tab open, measured with Chromium's profiler
# (benchmarks/browser_latency.py --breakdown tabs). So no container is ever an output: page JS
# does what their updates did (web/select_tab.js, web/zero_shot_on.js).
NO_CONTAINER_OUTPUTS = (gr.Tabs, gr.Tab, gr.Row, gr.Column, gr.Group, gr.Accordion)
ZERO_SHOT_ONLY = "vv-zero-shot-only"  # CSS class: shown only while body.vv-zero-shot (CLIP / SigLIP)


def check_no_container_outputs(demo: gr.Blocks) -> None:
    """Raise if any event of `demo` has a layout container among its outputs (see NO_CONTAINER_OUTPUTS)."""
    bad = sorted({f"{type(o).__name__} {o.elem_id or o._id}" for fn in demo.fns.values() for o in fn.outputs
                  if isinstance(o, NO_CONTAINER_OUTPUTS)})
    if bad:
        raise ValueError(f"layout containers as event outputs slow every event of the page: {bad}")


def few_progress_targets(demo: gr.Blocks) -> int:
    """Give every event of `demo` at most one progress target; returns how many events it changed.

    Gradio keeps a loading status for each component that is a progress target of an event that
    has run (by default every output), and on every status message of every event (pending,
    started, completed) writes each of them back into its component's state (Gradio 6.31's
    Blocks: update_loading_stati_state). Once a visitor's events have run that is most of the
    page: 213-228 ms of a tab's first open in Chromium's profiler (issue 27). An event that shows
    no progress needs no target (an empty list: no status is kept for it); one that shows
    progress shows it on its first picture or chart, else on its first output."""
    changed = 0
    for fn in demo.fns.values():
        if fn.show_progress_on is not None:
            continue
        if fn.show_progress == "hidden" or not fn.outputs:
            fn.show_progress_on = []
        else:
            shown = [o for o in fn.outputs if isinstance(o, (gr.Image, gr.Plot))] or list(fn.outputs)
            fn.show_progress_on = shown[:1]
        changed += 1
    return changed


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
    shows: list = field(default_factory=list)  # (tab id, fn, inputs, outputs) of every on_show
    previews: list = field(default_factory=list)  # (tab id, fn, inputs, outputs) of every on_preview
    thens: list = field(default_factory=list)  # (tab id, fn, inputs, outputs) of every on_show's `then`
    then_after: list = field(default_factory=list)  # the pictures each `then` waits for (CSS selectors)
    # Shown only while the model is an image-text one (CLIP / SigLIP), hidden for a plain ViT: each
    # carries the CSS class ZERO_SHOT_ONLY, and the page sets body.vv-zero-shot (see zero_shot_visible).
    zero_shot_only: list = field(default_factory=list)
    routes: list = field(default_factory=list)  # plain HTTP routes a tab serves (fastapi APIRoute), beside Gradio's
    # tab id -> (its first picture, drawn ahead, and the outputs that drawing leaves stale): on_show's first
    firsts: dict = field(default_factory=dict)
    rooms: Any = None  # the server's live rooms (vizvit.classroom.room.Rooms, issue 45): the Lesson tab opens one
    room_opening: Callable[[Any], None] | None = None  # (request): raises when this caller may not open one now (page/guard.py)

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
                raise ValueError(f"tab {tab.id!r}: its first picture and what is sent with it must be among its outputs")
            self.firsts[tab.id] = (first, tuple(first_with))
        shown = tab.select(fn, inputs, outputs, show_progress="minimal")
        if then is not None:
            fn2, ins2, outs2, selector = then
            self.thens.append((tab.id, fn2, ins2, outs2))
            self.then_after.append(selector)
            shown.then(fn2, ins2, outs2, show_progress="hidden", js=web.after_quiet(selector))

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

        def dispatch(current: str, *values: Any) -> list:
            out = _open_tab(self.shows, inputs, outputs, current, values)
            if not self.thens:  # else once the open tab's answer is in the page (dispatch_then)
                prepare(inputs, values)
            return out

        # js: sent once the upload's preview (the patch grid) is painted; Gradio's work for this
        # event would otherwise hold that first picture back (see web/after_paint.js).
        shown = self.key.change(dispatch, [self.tab, *inputs], outputs, show_progress="minimal",
                                js=web.after_paint("#patch-grid img"))
        if self.thens:  # the open tab's slow part (see on_show's then), after its pictures
            then_ins, then_outs = _io(self.thens)

            def dispatch_then(current: str, *values: Any) -> list:
                # Sent once the open tab's first answer is painted: the background work for the
                # other tabs starts now, so it never competes with that answer's encoding.
                prepare(then_ins, values)
                return _open_tab(self.thens, then_ins, then_outs, current, values)

            shown = shown.then(dispatch_then, [self.tab, *then_ins], then_outs, show_progress="hidden",
                               js=web.after_quiet(", ".join(self.then_after)))
        if not self.firsts:
            return None
        firsts = [(tab_id, first, with_) for tab_id, (first, with_) in self.firsts.items()]
        outs = [c for _, first, with_ in firsts for c in (first, *with_)]

        open_tab = gr.Textbox(visible="hidden", elem_id="vv-open-tab")  # set by open_tab.js as it is sent

        def ahead(in_page: str | None, current: str, *values: Any) -> list:
            if not _AHEAD.acquire(blocking=False):  # another visitor's is running: tabs open as before
                return [gr.skip() for _ in outs]
            try:
                opened = in_page if any(in_page == t for t, *_ in self.shows) else current
                return _ahead(self.shows, firsts, inputs, opened, values)
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
               at: tuple[int, int] = (0, 0)) -> Any:
    """A clickable picture of rows × cols cells (web.cells_class: step, at in its own pixels) as an
    update that also gives it its cells' class, so the arrow keys and Enter choose a cell (web/a11y.js).
    An update, not a gr.Image(...): that would encode its own file apart from the component's settings
    (and the work ahead, _ahead, takes an update carrying a picture). No picture: unchanged."""
    if not isinstance(picture, np.ndarray):
        return picture
    return gr.update(value=picture, elem_classes=[web.cells_class(rows, cols, step, at)])


def patch_cells(picture: Any, g: Geometry) -> Any:
    """with_cells for a picture of the model's patch grid enlarged render.display_scale(g) times from its
    top-left corner (the Patches grid, the attention map, the Embeddings pictures, the mask grid)."""
    p = g.patch_size * render.display_scale(g)
    return with_cells(picture, *g.grid, step=(p, p))


def reader(named: dict[str, gr.components.Component]) -> Callable[[tuple], dict[str, Any]]:
    """values (in `named` order, as the event's inputs list them) -> {field: value}."""
    names = list(named)
    return lambda v: dict(zip(names, v))


def _shaped(wrapper: Callable, fn: Callable, lead: int) -> Callable:
    """wrapper, named and signed as `fn` without its first `lead` parameters (the values the wiring
    binds): Gradio reads the signature and the resolved hints to pass gr.Request / gr.EventData."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[lead:]
    names = {p.name for p in params}
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {k: v for k, v in typing.get_type_hints(fn).items() if k in names}
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
            return run(stamp, key, v, (evt.index[0], evt.index[1]))

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


# -- a page this process never served (issue 42: replicas behind nginx, deploy/) ---------------------
RESTARTED = "This server was restarted: reload the page to reconnect."


class Pages:
    """The sessions whose page this process served (a load event of theirs ran here), the `limit`
    most recent. Behind a load balancer, a student whose replica died reaches another replica
    with a session it never had: the photo key is gone, and the tabs answered empty panels with
    no word of why (seen in Chromium through nginx, a replica killed)."""

    def __init__(self, limit: int = 100_000):
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Condition()
        self.limit = limit

    def saw(self, session: str | None) -> None:
        if session:
            with self._lock:
                self._seen[session] = None
                self._seen.move_to_end(session)
                while len(self._seen) > self.limit:
                    self._seen.popitem(last=False)
                self._lock.notify_all()

    def knows(self, session: str | None) -> bool:
        """False only for a session this process never served a page to; True without one (a direct call)."""
        if not session:
            return True
        with self._lock:
            return session in self._seen

    def knows_within(self, session: str | None, timeout: float) -> bool:
        """knows(), waiting up to `timeout` s for the session's load event: a tab clicked as the page
        opens sends its event with the load's, and the queue may run it first (a fresh visitor was told
        the server had restarted)."""
        if not session:
            return True
        with self._lock:
            return self._lock.wait_for(lambda: session in self._seen, timeout)


PAGES = Pages()


def current_session() -> str | None:
    """The session_hash of the Gradio event running in this thread (None outside one)."""
    from gradio.context import LocalContext

    return getattr(LocalContext.request.get(None), "session_hash", None)


def refuse_lost_sessions(demo: gr.Blocks, key: gr.State, fresh: tuple = (), pages: Pages = PAGES) -> int:
    """Every load event of `demo`, and every event of a component in `fresh` (the photo upload: a
    new photo starts afresh), records its session in `pages`; every other event that reads the
    photo `key` answers RESTARTED (a message in the page) for a session `pages` does not know,
    instead of computing on a key that is not there. The public API (gr.api) reads no key:
    untouched. Returns how many events now check."""
    checked = 0
    fresh_ids = {c._id for c in fresh}
    for block_fn in demo.fns.values():
        f = block_fn.fn
        if f is None or inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f):
            continue
        if any(event == "load" or target in fresh_ids for target, event in block_fn.targets):
            block_fn.fn = _before(f, lambda: pages.saw(current_session()))
        elif any(c is key for c in block_fn.inputs):
            block_fn.fn = _before(f, lambda: _refuse_unknown(pages))
            checked += 1
    return checked


LOAD_WAIT_S = 10.0  # how long an event waits for its page's load event before "reload the page"


def _refuse_unknown(pages: Pages) -> None:
    if not pages.knows_within(current_session(), LOAD_WAIT_S):
        raise gr.Error(RESTARTED, print_exception=False)


def _before(fn: Callable, first: Callable[[], None]) -> Callable:
    """fn with first() run before it; the same signature (Gradio reads it to pass gr.Request)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args: Any, **kwargs: Any) -> Any:
            first()
            yield from fn(*args, **kwargs)

        return stream

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        first()
        return fn(*args, **kwargs)

    return call


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


# The costly jobs (the shift sweep, the deletion curves, head importance, attention flow) share
# vizvit.service.jobs' slots (COSTLY_SLOTS) across every caller, taken in turn by address, then by session.
# Their events run in Gradio's concurrency group "costly" with a thread for each slot and each place
# in vizvit.service.jobs' line (LINE_TOTAL): a job waits for its turn in vizvit.service.jobs (fair, its place shown,
# listed in /stats, stopped when the caller leaves), never unseen in Gradio's own first-come queue;
# and a listener that answers at once (attention flow's, for any other method) never waits behind
# the running jobs. They can never take the threads that answer cached photos and controls (issue 28).
COSTLY_THREADS = jobs_mod.COSTLY_SLOTS + jobs_mod.LINE_TOTAL
COSTLY = dict(concurrency_id="costly", concurrency_limit=COSTLY_THREADS)
WATCH_S = 0.2  # how often the watcher looks for callers that have left
# A job whose answer nobody reads (a REST call POSTed whose stream was never opened) is stopped once
# a message for it has waited unread this long: Gradio runs such an event to its end and keeps it
# alive (event.alive turns False only when an open stream closes). An open stream (the page's
# /queue/data, a REST call's GET, gradio_client's) takes each message within milliseconds.
UNREAD_S = 5.0
UNREAD_LOOKS = 5  # and seen unread this many times: a stalled event loop (no reader ran) is not "unread"
PROXY_HOPS_ENV = "VIZVIT_PROXY_HOPS"  # trusted proxies in front that append to X-Forwarded-For


def proxy_hops() -> int:
    """How many trusted proxies stand in front of the server: VIZVIT_PROXY_HOPS, else 1 on a Space
    (SPACE_ID set: HF's proxy, and request.client is the proxy's internal address), else 0."""
    raw = os.environ.get(PROXY_HOPS_ENV, "")
    if raw.strip():
        try:
            return max(0, int(raw))
        except ValueError:
            log.warning("%s=%r is not a whole number: trusting no proxy", PROXY_HOPS_ENV, raw)
            return 0
    return 1 if os.environ.get("SPACE_ID") else 0


def caller_of(request: gr.Request | None, hops: int | None = None) -> str | None:
    """Who a request comes from: its network address (every REST call and every new gradio_client
    is a new session, so the session alone would let one machine hold every slot); the session
    only where there is no address. Behind `hops` trusted proxies (proxy_hops()) the address is
    X-Forwarded-For's entry that the outermost trusted proxy wrote (the hops-th from the right):
    entries left of it are whatever the client sent, and anyone can write those."""
    if request is None:
        return None
    hops = proxy_hops() if hops is None else hops
    host = None
    if hops:
        headers = getattr(request, "headers", None) or {}
        entries = [e.strip() for e in str(headers.get("x-forwarded-for", "")).split(",") if e.strip()]
        if len(entries) >= hops:
            host = entries[-hops]
    elif (client := getattr(request, "client", None)) is not None:  # no proxy: the socket's peer
        host = getattr(client, "host", None)
    if host:
        return f"address {host}"
    session = getattr(request, "session_hash", None)
    return f"session {session}" if session else None


def waiting_text(what: str, ahead: int) -> str:
    """What a waiting job shows in its status line."""
    if ahead == 0:
        return f"Waiting for a free slot: your {what} is next in line."
    return f"Waiting for a free slot: {ahead} ahead of you in line for the {what}."


@dataclass
class _Watched:
    cancel: Cancel
    event: Any  # Gradio's queue Event (its `alive` turns False when its client's stream is gone), or None
    loop: Any  # the server's event loop, to see whether the event's task was cancelled (Stop)
    event_id: str | None
    queue: Any = None  # Gradio's Queue: the event's session's messages show whether anyone reads them
    session: str = ""  # the caller's session (vizvit.service.jobs.Caller): a closed page stops its jobs
    head: Any = None  # the oldest unread message last seen, since when and how many times
    head_since: float = 0.0
    head_looks: int = 0

    def unread(self, head: Any, now: float) -> bool:
        """Whether `head` (the oldest message waiting for this event's session, None: none) has waited
        unread long enough to say nobody reads the answer (UNREAD_S, UNREAD_LOOKS)."""
        if head is None or head is not self.head:
            self.head, self.head_since, self.head_looks = head, now, 1
            return False
        self.head_looks += 1
        return self.head_looks >= UNREAD_LOOKS and now - self.head_since >= UNREAD_S


class _Free:
    """A direct call's ticket (a test, a script): no caller to count, no line, the limit still holds."""

    started = True

    def __init__(self, cancel: Cancel) -> None:
        self.cancel = cancel

    def ahead(self) -> None:
        return None

    def waiting(self) -> Iterator[int]:
        return iter(())


class CostlyJobs:
    """Costly jobs of the page and the API (vizvit.service.jobs.Jobs), and who stops them, waiting or running:
    a job whose caller disconnected, whose page closed, whose answer nobody reads (UNREAD_S) or whose
    event was cancelled (Stop, a new upload) gets its token set within WATCH_S of seeing it; a waiting
    one leaves the line, a running one stops at its next step (vizvit.cancel)."""

    def __init__(self, jobs: Jobs | None = None) -> None:
        self.jobs = jobs if jobs is not None else Jobs(limits=methods.JOB_LIMITS)
        self._watched: dict[int, _Watched] = {}
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    @contextlib.contextmanager
    def hold(self, request: gr.Request | None, what: str) -> Iterator[Cancel]:
        """Wait for the job's turn (vizvit.service.jobs), then yield its token: pass it to the job's loops.
        Set when the caller leaves or the job passes its limit."""
        with self.line(request, what) as ticket:
            for _ in ticket.waiting():
                pass
            yield ticket.cancel

    @contextlib.contextmanager
    def line(self, request: gr.Request | None, what: str) -> Iterator[Ticket | _Free]:
        """Join the fair line and yield the Ticket: `for ahead in ticket.waiting(): show(waiting_text(...))`,
        then run the job with ticket.cancel. Watched from now on, while it waits as while it runs."""
        event, loop, event_id, queue = _gradio_event()
        caller = who(request, event)
        if caller is None:  # a direct call (a test, a script): no caller to count, the limit still holds
            yield _Free(Cancel(self.jobs.limit_of(what), what))
            return
        token = Cancel(what=what)
        key = id(token)
        with self._lock:
            self._watched[key] = _Watched(token, event, loop, event_id, queue, session=caller.session)
            self._start_watcher()
        try:
            with self.jobs.line(caller, what, token) as ticket:
                yield ticket
        finally:  # also when the job is stopped or the visitor leaves (the generator is closed)
            with self._lock:
                self._watched.pop(key, None)

    def left(self, request: gr.Request = None) -> None:
        """A page closed (Ctx.unloads): stop its session's jobs, waiting or running."""
        session = getattr(request, "session_hash", None)
        with self._lock:
            watched = list(self._watched.values())
        for w in watched:
            if session and session in (w.session, getattr(w.event, "session_hash", None)):
                w.cancel.set("the page was closed")

    def _start_watcher(self) -> None:
        if self._watcher is None or not self._watcher.is_alive():
            self._watcher = threading.Thread(target=self._watch, name="vizvit-costly-watch", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        """Every WATCH_S: set the token of each job whose client is gone (Gradio marks its queue event
        not alive once the event's stream, a page's or a REST call's, is closed), whose answer nobody
        reads (a stream never opened: see UNREAD_S), or whose event task is being cancelled (the
        page's Stop button, a new upload's cancels=)."""
        while True:
            time.sleep(WATCH_S)
            with self._lock:
                watched = list(self._watched.values())
            if watched:
                self.look(watched)

    def look(self, watched: list[_Watched]) -> None:
        """One look of the watcher at `watched`."""
        for w in watched:
            if w.event is not None and not getattr(w.event, "alive", True):
                w.cancel.set("the caller left")
        loops = {id(w.loop): w.loop for w in watched if w.loop is not None and not w.cancel.is_set()}
        for loop in loops.values():
            mine = [w for w in watched if w.loop is loop and not w.cancel.is_set()]
            seen = _on_loop(loop, mine)
            if seen is None:  # the loop closed or is busy: look again next time
                continue
            now = time.monotonic()
            for w, (cancelling, head) in zip(mine, seen):
                if cancelling:
                    w.cancel.set("it was stopped")
                elif w.unread(head, now):
                    w.cancel.set("nobody reads its answer")


def who(request: gr.Request | None, event: Any = None) -> Caller | None:
    """The Caller of a costly job: its address (caller_of) and its session, the Gradio event's (a REST
    call with no session of its own is its own event, so each call takes its turn)."""
    address = caller_of(request)
    if address is None:
        return None
    session = getattr(event, "session_hash", None) or getattr(request, "session_hash", None) or ""
    return Caller(address, str(session))


def _gradio_event() -> tuple[Any, Any, str | None, Any]:
    """(the queue Event, the server's loop, the event id, Gradio's Queue) of the event this thread
    runs, where Gradio says so (its LocalContext, as gr.Info reads it); Nones outside an event."""
    from gradio.context import LocalContext

    blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
    queue = getattr(blocks, "_queue", None)
    event = queue.event_ids_to_events.get(event_id) if queue is not None and event_id else None
    try:
        import anyio.from_thread

        loop = anyio.from_thread.run_sync(asyncio.get_running_loop)  # a worker thread of the server's loop
    except Exception:  # noqa: BLE001 - not in a worker thread (a test's direct call): no Stop to see
        loop = None
    return event, loop, event_id, queue


def _on_loop(loop: asyncio.AbstractEventLoop, watched: list[_Watched]) -> list[tuple[bool, Any]] | None:
    """For each of `watched`, read on the server's loop (where Gradio changes them): whether the task
    running its event is being cancelled (Gradio names the task '<session>_<fn><gradio-sep><event
    id>'; a sync handler's thread finishes its step first), and the oldest message waiting unread
    for its event's session (None: none waits). None when the loop does not answer."""
    async def look() -> list[tuple[bool, Any]]:
        tasks = [t for t in asyncio.all_tasks() if t.cancelling()]
        out = []
        for w in watched:
            suffix = f"<gradio-sep>{w.event_id}"
            cancelling = bool(w.event_id) and any(t.get_name().endswith(suffix) for t in tasks)
            pending = getattr(w.queue, "pending_messages_per_session", None)
            messages = pending.get(getattr(w.event, "session_hash", None)) if pending is not None else None
            inner = getattr(messages, "_queue", None)  # asyncio.Queue's deque
            out.append((cancelling, inner[0] if inner else None))
        return out

    try:
        return asyncio.run_coroutine_threadsafe(look(), loop).result(timeout=1.0)
    except Exception:  # noqa: BLE001 - the loop closed or is busy: look again next time
        return None


JOBS = CostlyJobs()
