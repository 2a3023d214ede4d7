"""The public API (gradio_client): the documented endpoints, everything else private."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gradio as gr
from gradio.data_classes import FileData
from gradio.utils import get_upload_folder, is_in_or_equal

from vizvit.api import Held, PublicApi
from vizvit.classroom.room import Rooms
from vizvit.errors import UserError
from vizvit.readings import methods
from vizvit.session import Workbench

from .guard import Guard
from .jobs import COSTLY, JOBS, caller_of, network_of
from .kit import safe

PUBLIC_ENDPOINTS = ("analyze", "attention", "rollout", "compare", "positions", "predict", "sweep", "relevance",
                    "stats", "room_open", "room_step", "room_answer", "room_tally", "room_close")
# The live room's endpoints (issue 45): none takes a photo but room_open.
ROOM_ENDPOINTS = ("room_open", "room_step", "room_answer", "room_tally", "room_close")


NOT_A_FILE = "photo must be an uploaded file (gradio_client: handle_file(path))."


def uploaded(photo: Any) -> str:
    """The server path of a photo argument that is a file uploaded to this server, else a UserError.

    Gradio checks a file argument only when it carries FileData's meta: a bare {"path": ...}
    reaches the handler unchecked, naming any file on the server. So the path must lie in
    Gradio's upload folder (where /gradio_api/upload writes; GRADIO_TEMP_DIR), whatever the meta."""
    path = photo.get("path") if isinstance(photo, dict) else None
    if not isinstance(path, str) or not path or not is_in_or_equal(path, get_upload_folder()):
        raise UserError(NOT_A_FILE)
    return path  # one since cleaned away: load_image says "upload it again", after the model's gate


NEITHER = NOT_A_FILE[:-1] + ", or photo_sha1: the \"photo_sha1\" of /analyze's answer on it."
BOTH = "Send either photo or photo_sha1, not both."


def photo_of(photo: Any, photo_sha1: Any) -> str | Held:
    """The photo a reading names: an uploaded file (`uploaded`), or with photo_sha1 (not both) a photo this
    server keeps, by the key /analyze answered (its format, whether it is kept, and who can know a key:
    vizvit.api.Held). An empty photo_sha1 (or None, as a REST caller may send it) is none."""
    if photo_sha1 is None or photo_sha1 == "":
        if photo is None:
            raise UserError(NEITHER)
        return uploaded(photo)
    if photo is not None:
        raise UserError(BOTH)
    return Held.parse(photo_sha1)


def public_api(wb: Workbench, default_model: str, rooms: Rooms | None = None, guard: Guard | None = None) -> None:
    """The documented endpoints. Each is one backend call; the photo is a file uploaded by the
    client (gradio_client's handle_file), the model one of the page's list. Maps are nested lists
    (patch rows × patch columns); layer and head count from 1, rows and columns from 0.
    guard: the room routes' (page/guard.py), so a caller's wrong codes count on every surface."""
    api = PublicApi(wb, JOBS.jobs, rooms)
    guard = guard if guard is not None else Guard(api.rooms)
    # relevance too: only attention flow takes a costly slot (vizvit.service.jobs), and a class map is answered
    # at once even while every slot is taken (COSTLY has more threads than slots).
    costly = ("sweep", "relevance")
    for fn in (*reading_endpoints(api, default_model), *room_endpoints(api, default_model, guard)):
        gr.api(safe(fn), api_name=fn.__name__, **(COSTLY if fn.__name__ in costly else {}))


def reading_endpoints(api: PublicApi, default_model: str) -> tuple[Callable[..., dict], ...]:
    """The endpoints that read a photo or a model, in the order /gradio_api/info lists them.
    Gradio documents each from its signature and docstring, so they are plain functions.
    Every one that reads a photo but /analyze takes it as a file (`photo`) or, in its last argument
    `photo_sha1`, as the key /analyze answered for a photo this server keeps: no upload again."""

    def analyze(photo: FileData, model: str = default_model) -> dict:
        """Analyze a photo: top-5 predictions, the model's geometry, the forward's time, and "photo_sha1":
        the photo's key, for the other endpoints' photo_sha1 (no upload again while the server keeps it)."""
        return api.analyze(uploaded(photo), model)

    def positions(model: str = default_model, row: int = 0, col: int = 0) -> dict:
        """Cosine similarity of the position embedding of patch (row, col) with every patch's."""
        return api.positions(model, row, col)

    def stats() -> dict:
        """The model's queue: forwards run (each a batch of waiting photos), images analysed, the
        largest batch, photos waiting now, seconds per image of the last forward; and the costly
        jobs ("costly"): slots, wall-time limits, jobs running and waiting, the last ones ended."""
        return api.stats()

    attention, rollout, compare = map_endpoints(api, default_model)
    predict, sweep, relevance = view_endpoints(api, default_model)
    return analyze, attention, rollout, compare, positions, predict, sweep, relevance, stats


def map_endpoints(api: PublicApi, default_model: str) -> tuple[Callable[..., dict], ...]:
    """/attention, /rollout and /compare: maps of a photo (a file, or photo_sha1: see photo_of)."""

    def attention(photo: FileData | None = None, model: str = default_model, layer: int = 1,
                  head: int | str = "mean", mode: str = "raw", query_row: int = -1, query_col: int = -1,
                  photo_sha1: str = "") -> dict:
        """The attention map of one layer: head 1..H or a fusion (mean, max, min); mode raw or
        'rolled out'; from the model's summary ([CLS]; BEiT: the patch mean; SigLIP: the MAP head) (query -1, -1)
        or from the patch at (query_row, query_col)."""
        return api.attention(photo_of(photo, photo_sha1), model, layer, head, mode, query_row, query_col)

    def rollout(photo: FileData | None = None, model: str = default_model, fusion: str = "mean",
                discard: float = 0.0, photo_sha1: str = "") -> dict:
        """The attention rollout stack (Abnar & Zuidema 2020): the summary's map after each layer, (L, gh, gw)."""
        return api.rollout(photo_of(photo, photo_sha1), model, fusion, discard)

    def compare(photo: FileData | None = None, model_a: str = default_model, model_b: str = default_model,
                depth: float = 1.0, photo_sha1: str = "") -> dict:
        """Two models on one photo at relative depth 0 < depth <= 1 (layer ceil(depth·L) of each): both
        top-5 lists and both rollout maps at those layers (each equal to /rollout's map of that layer)."""
        return api.compare(photo_of(photo, photo_sha1), model_a, model_b, depth)

    return attention, rollout, compare


def view_endpoints(api: PublicApi, default_model: str) -> tuple[Callable[..., dict], ...]:
    """/predict, /sweep and /relevance: a photo seen otherwise (a file, or photo_sha1: see photo_of)."""

    def predict(photo: FileData | None = None, model: str = default_model, dx: int = 0, dy: int = 0,
                fill: str = "edge", mask: list[int] | None = None, mask_mode: str = "drop",
                photo_sha1: str = "") -> dict:
        """Top-5 under a shift (dx, dy within ±2P pixels; fill edge, wrap or constant) and/or
        masked patches (0-based, row-major; mask_mode drop, black, mean or blur)."""
        return api.predict(photo_of(photo, photo_sha1), model, dx, dy, fill, mask or [], mask_mode)

    def sweep(photo: FileData | None = None, model: str = default_model, photo_sha1: str = "",
              request: gr.Request = None) -> dict:
        """Shift the photo k = 0..2P pixels right: cosine of patch embeddings and the top-1 per k."""
        source = photo_of(photo, photo_sha1)
        with JOBS.hold(request, "shift sweep") as cancel:
            return api.sweep(source, model, cancel)

    def relevance(photo: FileData | None = None, model: str = default_model, class_index: int = -1,
                  method: str = methods.MENU[0].name, photo_sha1: str = "", request: gr.Request = None) -> dict:
        """A map of a class (-1: the top-1) by one method of the Attention tab's menu, each as its
        caption names it; a costly one (attention flow: exact, any class; minutes on a 12-layer model)
        runs as a job, refused at once when this server would not finish it within its limit."""
        source = photo_of(photo, photo_sha1)
        if not methods.is_costly(method):  # one backward pass: answered on the ordinary threads
            return api.relevance(source, model, class_index, method)
        api.check_job(source, model, method, JOBS.jobs.limit_of(method))  # before any wait
        with JOBS.hold(request, method) as cancel:
            return api.relevance(source, model, class_index, method, cancel)

    return predict, sweep, relevance


def room_endpoints(api: PublicApi, default_model: str, guard: Guard | None = None) -> tuple[Callable[..., dict], ...]:
    """The live room's endpoints (issue 45): the lecturer's (with the host key) and the students'.
    Each checks its caller first (issue 50, page/guard.py): a malformed code, too many wrong codes,
    new students or rooms from one address are refused with a sentence before anything else."""
    guard = guard if guard is not None else Guard(api.rooms)

    def room_open(photo: FileData, model: str = default_model, lecturer_key: str = "",
                  request: gr.Request = None) -> dict:
        """Open a live room on this photo and model (issue 45): {"code": the short code students type,
        "host_key": the lecturer's secret for room_step, room_tally and room_close, "steps": n}.
        At most 3 open rooms per caller's address once the server is half full (12 before); a room closes
        after 30 minutes without its host. lecturer_key: the server's, where it was started with one
        (VIZVIT_LECTURER_KEY); else ignored."""
        path = uploaded(photo)
        guard.may_open(request)
        try:
            api.rooms.check_lecturer(lecturer_key)
        except UserError:
            guard.opened(request)  # a wrong key costs one of the address's tries: no guessing at speed
            raise
        opened = api.room_open(path, model, caller_of(request) or "", lecturer_key)
        guard.opened(request)  # counted once open: a refused photo or model costs no try
        return opened

    def room_step(code: str, host_key: str, step: int = 1, reveal: bool = False, request: gr.Request = None) -> dict:
        """The lecturer moves the room to step 1..n (reveal=True: shows its answer, closes its
        answers, and returns its truth on the room's photo and its tally): the room's state."""
        return api.room_step(guard.code(request, code), host_key, step, reveal)

    def room_answer(code: str, step: int = 1, answer: str | float = "", student: str = "",
                    request: gr.Request = None) -> dict:
        """A student's answer to the lecturer's open step: an option key, or a number.
        student: a random id of 8-64 letters/digits/-/_ (a letter or digit first) the caller keeps (empty: this client's
        session). One answer per student per step; a new one replaces it. -> {"accepted", "reason"}."""
        code = guard.code(request, code)
        who = student or (getattr(request, "session_hash", None) or "")
        guard.join(request, code, who)
        return api.room_answer(code, step, answer, who, network_of(request))

    def room_tally(code: str, host_key: str, step: int = 1, request: gr.Request = None) -> dict:
        """The answers to one step so far: {"step": n, "answers": {answer: count}, "total": n}, and on a number
        step its bars, most given first, with "others" (students whose number has no bar of its own)."""
        return api.room_tally(guard.code(request, code), host_key, step)

    def room_close(code: str, host_key: str, request: gr.Request = None) -> dict:
        """The lecturer closes the room: every answer in it is forgotten."""
        return api.room_close(guard.code(request, code), host_key)

    return room_open, room_step, room_answer, room_tally, room_close


def private_except(demo: gr.Blocks, public: tuple[str, ...]) -> None:
    """Every page event stays callable by the page but hidden from /gradio_api/info and from
    named-endpoint clients; only the documented endpoints are public."""
    for fn in demo.fns.values():
        if fn.api_name not in public:
            fn.api_visibility = "private"

