"""The public API: a few calls a notebook or another app makes against a running page.

Every call names a photo (a file path the server already holds, or a photo it keeps, by its
key: Held) and a model id. The model id goes through the Workbench's gate (the page's list)
before anything loads, and every other value is checked here, in the backend, so one request
can never cost more than the page itself can make it cost. Results are plain JSON: numbers,
lists and strings (maps as nested lists, row-major, rows = patch rows).
"""

from __future__ import annotations

import io
import logging
import math
import queue
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import numpy as np
from PIL import Image

from vizvit import vocab
from vizvit.cancel import NEVER, Cancel
from vizvit.classroom import room as room_mod
from vizvit.classroom.lesson import MEASURED
from vizvit.errors import NO_CLASS, UserError
from vizvit.model.engine import Analysis, Prediction, mask_token
from vizvit.model.images import View
from vizvit.model.models import Geometry
from vizvit.readings import (
    attention as ra,
    compare as cmp,
    lesson as rlesson,
    methods,
    positions as rpos,
    sweep as rsweep,
)
from vizvit.service.jobs import Jobs
from vizvit.session import Photo, PhotoGone, PhotoKey, Workbench

MAX_DISCARD = 0.99
# Rooms measured ahead at once. Each measure holds its own readings, batched forwards and figures while it
# runs, outside the cache's budget: twelve rooms opened together (what one address may hold) measured in a
# thread each took the trained ViT-Ti server from 637 to 1,138 MB of RSS and 18 to 45 threads (the budgets'
# line: 1,033 MB). The others wait their turn; a reveal before its step is measured measures it itself.
ROOMS_MEASURED_AT_ONCE = 2
log = logging.getLogger(__name__)
ROOM_PHOTO_TRIES = 3  # a room's model view (or an upload) kept again in the Workbench after other work pushed it out
T = TypeVar("T")
C = TypeVar("C", bound=str)
PHOTO_SHA1 = re.compile(r"[0-9a-f]{40}")  # a photo's key: images.image_sha1, as /analyze answers it
NOT_A_SHA1 = 'photo_sha1 must be the 40 hex digits /analyze answered as "photo_sha1".'
NOT_HELD = ("This server holds no photo with that photo_sha1 (never uploaded here, or pushed out by newer "
            "photos since): send the photo itself again.")


@dataclass(frozen=True)
class Held:
    """A photo this server keeps, named by its key: the "photo_sha1" /analyze answered (issue 52). A client
    reads it again by this key instead of uploading the same file for every call.

    Whoever names a key reads that photo's maps and predictions (never its pixels: no endpoint returns the
    photo). The key is the SHA-1 of the photo's size, mode and pixels (images.image_sha1): 160 bits that
    only its uploader was told, and that only someone holding the same pixels can compute, so a stranger
    cannot guess another visitor's key. What a key does tell, to whoever has a photo, is whether this
    server still holds it (an answer, or NOT_HELD): the same as the page's ?photo= links and as an upload
    answered from the cache. A photo is only as private as the key its uploader shares."""

    sha1: str

    @staticmethod
    def parse(value: object) -> Held:
        """A caller's value as a key (40 hex digits, any case), else a UserError that says what one is."""
        if not isinstance(value, str) or not PHOTO_SHA1.fullmatch(value.lower()):
            raise UserError(NOT_A_SHA1)
        return Held(value.lower())


Source = str | Held  # a photo: the server path of an uploaded file, or a photo the server holds


def _int(name: str, value: object, low: int, high: int) -> int:
    """An integer in [low, high], or a UserError that says so (floats with a fraction refused; so are
    true/false and text, which float() would read as 1, 0 or the number they spell)."""
    # an int is compared as it is: math.isfinite(10**400) raises OverflowError (a "Something went wrong")
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or (isinstance(value, float) and (not math.isfinite(value) or value != int(value)))
            or not low <= value <= high):
        raise UserError(f"{name} must be a whole number from {low} to {high}.")
    return int(value)


def _choice(name: str, value: object, allowed: Sequence[C]) -> C:
    """The allowed choice equal to value (typed as the choices are), or a UserError naming them."""
    for choice in allowed:
        if value == choice:
            return choice
    raise UserError(f"{name} must be one of: {', '.join(map(str, allowed))}.")


def _top5(preds: Sequence[Prediction]) -> list[dict[str, Any]]:
    return [{"index": p.index, "label": p.label, "prob": round(p.prob, 6)} for p in preds]


def _grid(values: np.ndarray) -> list[list[float]]:
    return np.round(np.asarray(values, dtype=np.float64), 7).tolist()


def _num(v: float) -> float | None:
    """JSON has no NaN: a value that does not exist (no classifier) is null."""
    return round(float(v), 7) if math.isfinite(v) else None


def geometry_json(g: Geometry) -> dict[str, Any]:
    return {"image_size": list(g.image_size), "patch_size": g.patch_size, "grid": list(g.grid),
            "num_prefix_tokens": g.num_prefix_tokens, "num_patches": g.num_patches, "seq_len": g.seq_len,
            "num_layers": g.num_layers, "num_heads": g.num_heads, "hidden_size": g.hidden_size}


class Measurers:
    """At most `n` daemon threads that run the rooms' measures ahead in turn, started as work comes (daemon:
    a server that stops drops what waits, as the thread each room had before did)."""

    def __init__(self, n: int) -> None:
        self.n, self.jobs, self.threads = n, queue.SimpleQueue[Callable[[], None]](), 0
        self.lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        self.jobs.put(job)
        with self.lock:
            if self.threads >= self.n:
                return
            self.threads += 1
            threading.Thread(target=self._work, name=f"room-measure-{self.threads}", daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job()
            except Exception as e:  # noqa: BLE001 - one room's failure must not stop the others' measures
                log.warning("a room's steps could not be measured ahead: %s", e)


class PublicApi:
    """Bound to one Workbench. Each method is one endpoint; see app.py for the names."""

    def __init__(self, wb: Workbench, jobs: Jobs | None = None, rooms: room_mod.Rooms | None = None):
        self.wb = wb
        self.jobs = jobs  # the costly jobs' slots, limits and queue, reported by stats()
        self.rooms = rooms if rooms is not None else room_mod.Rooms()  # the live rooms (issue 45)

    def _photo(self, photo: Source, model: str) -> tuple[Photo, Analysis]:
        """The photo's handle and its analysis. An uploaded file pushed out of the photos' budget between
        its keeping and its forward (other uploads at once, a small --photo-mb) is kept again and its
        forward tried again: the caller sent it, it is not gone (an audit: a fresh upload answered "no
        longer in memory"). A photo named by its key (Held) is what it is: PhotoGone is the answer."""
        vm = self.wb.model(model)  # the gate: refuses anything not on the page's list, before loading
        tries = 1 if isinstance(photo, Held) else ROOM_PHOTO_TRIES
        for attempt in range(tries):
            ph = self.wb.handle(PhotoKey(vm.id, self._sha1(photo)))
            try:
                return ph, ph.analysis()
            except PhotoGone:
                if attempt == tries - 1:
                    raise
        raise AssertionError("unreachable")  # the last try returns or raises

    def _sha1(self, photo: Source) -> str:
        """The photo's key: an uploaded file decoded and kept (add_photo), or a held photo's own key once
        the Workbench is found to keep it (pushed out since, or never kept: NOT_HELD)."""
        if not isinstance(photo, Held):
            return self.wb.add_photo(photo)
        if not self.wb.touch_photo(photo.sha1):
            raise UserError(NOT_HELD)
        return photo.sha1

    def analyze(self, photo: Source, model: str) -> dict[str, Any]:
        ph, a = self._photo(photo, model)
        vm = ph.vm
        return {"model": vm.display_name, "untrained": not vm.is_pretrained, "has_classifier": vm.has_classifier,
                "geometry": geometry_json(a.geometry), "top5": _top5(a.top5),
                "timings": {"forward_ms": round(a.seconds * 1000, 2)}, "photo_sha1": ph.key.sha1}

    def attention(self, photo: Source, model: str, layer: int, head: int | str, mode: str = "raw",
                  query_row: int = -1, query_col: int = -1) -> dict[str, Any]:
        ph, a = self._photo(photo, model)
        g = a.geometry
        layer = _int("layer", layer, 1, g.num_layers)
        how = _choice("mode", mode, vocab.MODES)
        show: str
        if isinstance(head, str) and head.strip().isdecimal():  # "1": the endpoint's head is int | str
            head = int(head.strip())
        if isinstance(head, str) and head in vocab.FUSIONS:
            show, h = head, 1
        else:
            show, h = vocab.ONE_HEAD, _int("head", head, 1, g.num_heads)
        query = None
        if (query_row, query_col) != (-1, -1):
            query = (_int("query_row", query_row, 0, g.grid[0] - 1), _int("query_col", query_col, 0, g.grid[1] - 1))
        p = ra.AttnParams(layer=layer, head=h, show=show, mode=how, query=query).checked(g)
        m = ra.main_matrix(a, p, ph.derived)
        values = ra.query_maps(a, p, m)  # as the Attention tab reads it: SigLIP's from its MAP head
        # No patch asked: the family's summary ([CLS]; BEiT's patch mean; SigLIP's MAP head)
        return {"layer": layer, "head": head, "mode": mode, "query": list(query) if query else p.who(g),
                "uniform_level": 1.0 / g.seq_len, "map": _grid(values.numpy())}

    def rollout(self, photo: Source, model: str, fusion: str = "mean", discard: float = 0.0) -> dict[str, Any]:
        ph, a = self._photo(photo, model)
        fused = _choice("fusion", fusion, vocab.FUSIONS)
        try:
            discard = float(discard)
        except (TypeError, ValueError, OverflowError):  # OverflowError: a JSON int past a float's range (10**400)
            discard = float("nan")
        if not 0.0 <= discard <= MAX_DISCARD:
            raise UserError(f"discard must be a fraction from 0 to {MAX_DISCARD}.")
        maps = ra.rollout_maps(a, fused, discard, ph.derived)  # (L, gh, gw)
        return {"fusion": fused, "discard": discard, "summary": a.geometry.summaries[0], "maps": _grid(maps.numpy())}

    def compare(self, photo: Source, model_a: str, model_b: str, depth: float = 1.0) -> dict[str, Any]:
        """Two models on one photo at one relative depth (0 < depth <= 1: layer ceil(depth·L) of each,
        as the Compare tab's cursor names them): each one's top-5 and its mean rollout (no discard)
        through that layer, the very map /rollout returns for that layer of that model alone."""
        if self.wb.catalog is not None:  # both through the gate before either loads
            for m in (model_a, model_b):
                self.wb.catalog.check(m)
        try:  # float() overflows on a JSON int past a float's range (10**400): refused as any other non-depth
            d = float(depth) if isinstance(depth, (int, float)) and not isinstance(depth, bool) else float("nan")
        except OverflowError:
            d = float("nan")
        if not 0.0 < d <= 1.0:
            raise UserError("depth must be a relative depth above 0 and at most 1 (1: each model's last layer).")
        sides = {}
        maps = []
        for name, model in (("a", model_a), ("b", model_b)):
            ph, a = self._photo(photo, model)
            g = a.geometry
            layer = cmp.layer_at_depth(d, g.num_layers)
            maps.append(ra.rollout_through(a, layer, ph.derived))
            sides[name] = {"model": ph.vm.display_name, "untrained": not ph.vm.is_pretrained, "layer": layer,
                           "num_layers": g.num_layers, "summary": g.summaries[0],
                           "prefix_tokens": list(g.prefix_names), "top5": _top5(a.top5), "rollout": _grid(maps[-1])}
        return {"depth": d, **sides, "rollout_cosine": _num(cmp.map_cosine(*maps)),
                "rollout_centred_cosine": _num(cmp.centred_cosine(*maps))}

    def positions(self, model: str, row: int, col: int) -> dict[str, Any]:
        vm = self.wb.model(model)
        g = vm.geometry
        row, col = _int("row", row, 0, g.grid[0] - 1), _int("col", col, 0, g.grid[1] - 1)
        r = rpos.report(vm, partial(self.wb.per_model, vm.id))
        k = row * g.grid[1] + col
        return {"row": row, "col": col, "similarity": _grid(r.sim[k].reshape(g.grid)),
                "cls_similarity": None if r.cls_sim is None else _grid(r.cls_sim)}  # SigLIP: no [CLS]

    def predict(self, photo: Source, model: str, dx: int = 0, dy: int = 0, fill: str = "edge",
                mask: Sequence[int] = (), mask_mode: str = "drop") -> dict[str, Any]:
        ph, base = self._photo(photo, model)
        g = base.geometry
        lim = 2 * g.patch_size
        dx, dy = _int("dx", dx, -lim, lim), _int("dy", dy, -lim, lim)
        if not isinstance(mask, (list, tuple)) or len(mask) > g.num_patches:
            raise UserError(f"mask must be a list of at most {g.num_patches} patch indices.")
        mask = tuple(_int("mask index", i, 0, g.num_patches - 1) for i in mask)
        # Checked here, not by View: its message quotes the value, and a caller's value may be anything.
        fill, mask_mode = _choice("fill", fill, vocab.FILLS), _choice("mask mode", mask_mode, vocab.MASK_MODES)
        if mask_mode == "drop" and len(set(mask)) == g.num_patches:
            raise UserError("Token drop needs at least one patch left unmasked.")
        if mask_mode == "mask":
            mask_token(ph.vm)  # a family without a [MASK] token is refused here, before any forward
        a = ph.analysis(View(dx=dx, dy=dy, fill=fill, mask=mask, mask_mode=mask_mode))  # type: ignore[arg-type]
        return {"dx": dx, "dy": dy, "fill": fill, "mask": list(a.view.mask), "mask_mode": mask_mode,
                "top5": _top5(a.top5), "unperturbed_top5": _top5(base.top5)}

    def sweep(self, photo: Source, model: str, cancel: Cancel = NEVER) -> dict[str, Any]:
        """The shift sweep (edge fill); `cancel` is checked between batches (Cancelled)."""
        ph, _ = self._photo(photo, model)
        s = rsweep.full_sweep(ph, cancel)  # the Experiments tab's own cached sweep under its default fill, edge
        return {"rows": [{"k": r.k, "patches_moved_back": r.moved_back, "mean_cos": _num(r.mean_cos),
                          "min_cos": _num(r.min_cos), "top1_label": r.top1_label, "top1_prob": _num(r.top1_prob),
                          "unshifted_top1_prob": _num(r.base_class_prob)} for r in s.rows]}

    def check_job(self, photo: Source, model: str, method: str, limit_s: float | None) -> None:
        """Refuse a costly method on this photo and model before it waits for a slot: its record's check
        (attention flow: a graph too large, or one this server's measured speed cannot finish within
        `limit_s`: a UserError naming a smaller model). Nothing to refuse once its result is cached."""
        m = methods.get(method, methods.COSTLY)
        ph, a = self._photo(photo, model)
        if m.check is not None and ph.peek(m.cached_as) is None:
            m.check(a, limit_s)

    def relevance(self, photo: Source, model: str, class_index: int = -1,
                  method: str = methods.MENU[0].name, cancel: Cancel = NEVER) -> dict[str, Any]:
        """One map of the Attention tab's method menu (readings.methods.MENU) for a class (-1: the top-1);
        a method without a class (attention flow) ignores class_index; a costly one runs only where its
        check passes (attention flow: its graph within its size; its estimated time within `cancel`'s
        limit, see check_job); `cancel` is checked as it runs (Cancelled)."""
        m = methods.get(_choice("method", method, tuple(x.name for x in methods.MENU)), methods.MENU)
        ph, a = self._photo(photo, model)
        vm = ph.vm
        if not m.needs_class:
            if m.check is not None:
                m.check(a, None)
            return {"class_index": None, "label": None, "method": m.caption,
                    "map": _grid(m(vm, a, None, ph.derived, cancel=cancel))}
        if not vm.has_classifier:
            raise UserError(NO_CLASS)
        c = a.top5[0].index if class_index in (-1, None) else _int("class_index", class_index, 0, len(vm.labels) - 1)
        values = m(vm, a, c, ph.derived)
        return {"class_index": c, "label": vm.labels[c], "method": m.caption, "map": _grid(values)}

    def stats(self) -> dict[str, Any]:
        """The model's queue: forwards (batches) run, images analysed, the largest batch, requests
        waiting now, and the last forward's seconds per image (a lecturer's check under load)."""
        st = self.wb.forwards.stats()
        out: dict[str, Any] = {"forwards": st.forwards, "images": st.images, "largest_batch": st.largest_batch,
                               "waiting": st.waiting, "seconds_per_image": round(st.image_s, 4)}
        if self.jobs is not None:  # the costly jobs: slots, limits, running, waiting (the queue), recent
            out["costly"] = self.jobs.stats().as_json()
        return out

    # ------------------------------------------------------------------ live rooms (issue 45)
    def room_open(self, path: str, model: str, owner: str = "", lecturer_key: object = None) -> dict[str, Any]:
        """A room on this photo and model: the lecturer key is checked, where the server has one, then the
        photo is analysed (a bad photo or model is refused before any room exists). owner: the caller's
        address (rooms per owner are limited). -> {"code", "host_key", "steps"}."""
        self.rooms.check_lecturer(lecturer_key)  # a stranger costs no analysis
        ph, _ = self._photo(path, model)
        return self.room_open_photo(ph, owner, lecturer_key)

    def room_open_photo(self, ph: Photo, owner: str = "", lecturer_key: object = None) -> dict[str, Any]:
        """A room on a photo the Workbench holds (the main page's Lesson tab opens one on its photo).
        The room keeps only the model's input view (PNG: the exact pixels the model saw) and its JPEG for
        the phones, in its store: never the full photo, which may be 39 megapixels and outside any budget."""
        view = ph.analysis().input_view  # (H, W, 3) uint8
        code, key = self.rooms.open(ph.vm.id, png(view), room_mod.questions_of(rlesson.steps()), owner,
                                    lecturer_key, shown=jpeg(view))  # both pictures kept, or no room left open
        # Every step's truth and figure, measured now in the background (seconds on a CPU) while the
        # lecturer talks: a reveal then does no model work, and its push is a store update (issue 45).
        self.room_measure_ahead(code)
        return {"code": code, "host_key": key, "steps": len(rlesson.steps())}

    _measuring: set[str] = set()  # rooms whose steps this process measures ahead now, or will in the pool
    _measuring_lock = threading.Lock()
    _measurers = Measurers(ROOMS_MEASURED_AT_ONCE)  # one pool for the process

    def room_measure_ahead(self, code: str) -> None:
        """room_prepare in the measurers' pool, unless it runs or waits there for this room or every step is measured.
        Called at the opening and at each host call: a server restarted (or killed) before its thread had
        measured every step measured no more, and each reveal after waited on its own measure."""
        if self.rooms.measured(code):
            return
        with self._measuring_lock:
            if code in self._measuring:
                return
            self._measuring.add(code)
        self._measurers.submit(partial(self.room_prepare, code))

    def room_prepare(self, code: str) -> None:
        """Measure every step's truth and draw its figure ahead, in step order; stops once the room is gone."""
        try:
            for n in range(1, len(rlesson.steps()) + 1):
                self._room_ready(code, n)
        except UserError:  # the room closed meanwhile
            return
        finally:
            with self._measuring_lock:
                self._measuring.discard(code)

    def _room_ready(self, code: str, n: int) -> dict[str, Any]:
        """Step n's truth, measured and kept in the room unless it is there already. Two threads (or two
        replicas) may measure the same step once each: the same numbers, kept twice."""
        if not self.rooms.prepared(code, n):
            truth = self.room_truth(code, n)
            self.rooms.prepare(code, n, truth, self.room_figure(code, n))
        return self.rooms.view(code)["shown"].get(str(n), {})

    def _on_room_photo(self, code: str, fn: Callable[[Photo], T]) -> T:
        """fn(the room's photo): its model view, from the room's store, kept again in the Workbench
        (any replica, any time after a restart). Other work may push it out of the Workbench's photos
        between the keeping and the forward: then it is kept again and fn retried."""
        st = self.rooms.state(code)
        data = self.rooms.model_view(code)
        if data is None:
            raise UserError("This room keeps no picture of its photo: open a new room on the photo.")
        vm = self.wb.model(st.model)  # the gate
        for _ in range(ROOM_PHOTO_TRIES):
            ph = self.wb.handle(PhotoKey(vm.id, self.wb.add_model_view(data)))
            try:
                return fn(ph)
            except PhotoGone:
                continue
        raise UserError("The server is too busy to measure this room's step now: try again in a minute.")

    def room_figure(self, code: str, step: int) -> bytes | None:
        """Step `step`'s figure on the room's photo (the Lesson tab's reveal picture, Workbench.step_picture:
        none on a Workbench without the views attached) as JPEG, or None (its truth says why: room_truth)."""
        s = rlesson.steps()[step - 1]
        draw = self.wb.step_picture
        if not s.picture or draw is None:
            return None

        def figure(ph: Photo) -> bytes | None:
            picture = draw(ph, s)
            return None if picture is None else jpeg(picture)

        return self._on_room_photo(code, figure)

    def room_truth(self, code: str, step: int) -> dict[str, Any]:
        """A revealed step's truth on the room's photo, measured as the Lesson tab measures it:
        {"truth": the right option's key or number as text, "line": the measured sentence}."""
        s = rlesson.steps()[step - 1]

        def measure(ph: Photo) -> dict[str, Any]:
            try:
                m = rlesson.MEASURES[s.measure](ph, s)
            except PhotoGone:
                raise
            except UserError as e:
                return {"truth": None, "line": f"This step cannot be measured on {ph.vm.display_name}: {e}"}
            right = m.right if s.answer == MEASURED else s.answer
            text = room_mod.number_text(float(right)) if s.is_number else str(right)
            return {"truth": text, "line": m.line}

        return self._on_room_photo(code, measure)

    def room_step(self, code: str, host_key: str, step: int, reveal: bool = False) -> dict[str, Any]:
        """The lecturer moves the room to `step` (and with reveal, shows its answer); with reveal,
        the step's truth and tally come back too."""
        if reveal is True and not self.rooms.prepared(code, step):
            # Not measured ahead (the server restarted before its background measure reached this step, or
            # the lecturer was quicker): measured before the move, so every page woken by the reveal has its
            # truth and figure; moved first, the phones showed bars without a truth for the seconds it took.
            self.rooms.check_host(code, host_key)  # a stranger costs no forward
            self._room_ready(code, self.rooms.step_number(code, step))
        st = self.rooms.move(code, host_key, step, reveal)  # reveal checked there: true or false
        out = {k: v for k, v in st.as_json().items()}
        if st.step in st.revealed:
            shown = self._room_ready(code, st.step)  # measured ahead at the opening: no model work
            out.update({k: v for k, v in shown.items() if k in ("truth", "line")})
            out["tally"] = self.rooms.tally(code, host_key, st.step).as_json()
        return out

    def room_answer(self, code: str, step: int, answer: Any, student: str, addr: str = "") -> dict[str, Any]:
        """addr: the caller's address (a new student counts toward its share of the room)."""
        ok, why = self.rooms.answer(code, student, step, answer, addr)
        return {"accepted": ok, "reason": why, **({"answer": self.rooms.kept(code, step, answer)} if ok else {})}

    def room_tally(self, code: str, host_key: str, step: int) -> dict[str, Any]:
        return self.rooms.tally(code, host_key, step).as_json()

    def room_close(self, code: str, host_key: str) -> dict[str, Any]:
        self.rooms.close(code, host_key)
        return {"closed": True}


ROOM_JPEG_QUALITY = 85  # a step's picture on a phone: a few tens of kB, sharp enough for a patch grid


def png(picture: np.ndarray) -> bytes:
    """(H, W, 3) uint8 -> PNG bytes: lossless, so the room's model view re-analysed is the same forward."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(picture, dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def jpeg(picture: np.ndarray) -> bytes:
    """(H, W, 3) uint8 -> JPEG bytes (a room's pictures: kept per step, sent to every phone)."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(picture, dtype=np.uint8)).save(buf, "JPEG", quality=ROOM_JPEG_QUALITY)
    return buf.getvalue()

