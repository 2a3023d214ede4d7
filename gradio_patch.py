"""Workarounds for Gradio 6.31, used by app.py.

install(): Gradio writes a cached output image in place, at a path named by its content hash:
two sessions producing the same picture at once could serve a half-written file. Write under
a temporary name and rename, as Gradio already does for files.

unlaid(): components that only carry an API's schema (gr.api's) need no place on the page.

install() also makes Gradio's own refusals plain (see plain_preprocess): a bad argument that Gradio
refuses before the app's handler runs (a file not uploaded, too few values, a value its component
cannot read) would otherwise reach the caller as its message, with server paths and object reprs,
and the log as a traceback. HTTP_HANDLERS does the same for Gradio's routes' HTTPException details
(launch's app_kwargs). And an upload whose client drops mid-body leaves no partial file
(see _parse_or_clean). An event index that names no event (queue/join's fn_index) is refused with a
sentence and HTTP 404 instead of a KeyError's traceback (see _known_fn). And an error Gradio's own
code raises around a handler's call (a select event without its event data) is one sentence, not
its Python message and a traceback (see plain_call).
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import re
import tempfile
from collections.abc import Sequence
from copy import copy
from pathlib import Path
from typing import Any

from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from gradio import processing_utils, route_utils
from gradio.blocks import Blocks
from gradio.components import Slider
from gradio.exceptions import Error, InvalidPathError
from gradio.state_holder import SessionState
from gradio_client.utils import is_http_url_like
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

log = logging.getLogger("vizvit.app")

# The same words as page/endpoints.py's check of a photo that is not a file: Gradio refuses a file
# argument outside its upload folder before the handler runs, the handler refuses the rest.
NOT_UPLOADED = "photo must be an uploaded file (gradio_client: handle_file(path))."
# What a caller may be shown of a message: its first line, no path, no repr (see plain()).
_REPR = re.compile(r"<[^<>]* at 0x[0-9a-fA-F]+>|\b0x[0-9a-fA-F]{6,}\b")
# A path: a token that starts with / or \\ (or C:\\, ./, ../) after a space, a quote, ':' or '='.
_PATH = re.compile(r"""(?:^|(?<=[\s'"(=:]))(?:[A-Za-z]:)?(?:\.\.?)?[\\/][^\s'"]*""")


def _atomic_save_pil_to_cache(img: Any, cache_dir: str, name: str = "image", format: str = "webp") -> str:
    """processing_utils.save_pil_to_cache, writing atomically."""
    data = processing_utils.encode_pil_to_bytes(img, format)
    folder = Path(cache_dir) / processing_utils.hash_bytes(data)
    folder.mkdir(exist_ok=True, parents=True)
    target = (folder / f"{name}.{format}").resolve()
    if not target.exists():
        fd, staging = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(staging, target)
    return str(target)


# Gradio's queue sums every recorded event (up to 10,000) with pandas after EACH event, for its
# monitoring page (GRADIO_ANALYTICS_CACHE_FREQUENCY=1); the page runs without it (launch_kwargs:
# enable_monitoring=False), so the sum is never read: 5 % of the server's CPU in a hall (issue 52),
# growing with the events recorded. Summed once in a billion events instead (read when a queue is made).
ANALYTICS_EVERY = str(10**9)


def _lazy_session_init(self: SessionState, blocks: Blocks) -> None:
    """SessionState.__init__ of Gradio 6.31, less its config of every block (config_for_block, each
    component's get_config through inspect.signature): made for every new session, 60 ms of CPU on
    this page's 400-odd components, 0.06 s of each student's 0.16 s in a hall (issue 52). Made on
    first need instead: one block at a time as Gradio updates it (it fills what is missing), all of
    them when read together (`components`: Gradio's own deep-link route, which the page does not use)."""
    self.blocks_config = copy(blocks.default_config)
    self.vizvit_config_keys = [k for k in self.blocks_config.blocks if k in blocks.blocks]  # as Gradio's filter
    self.config_values = {}
    self.state_data = {}
    self._state_ttl = {}
    self.is_closed = False
    self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600


# Gradio's own SessionState methods: what the lazy ones fall back on, and the tests' reference.
GRADIO_COMPONENTS = SessionState.components
GRADIO_SESSION_INIT = SessionState.__init__
GRADIO_VALUE_IN_CONFIG = SessionState._update_value_in_config


def _lazy_value_in_config(self: SessionState, key: int, value: Any) -> None:
    """SessionState._update_value_in_config of Gradio 6.31, made lazy like __init__: Gradio made the
    output block's whole config to set its value in it after every event of a new session (each REST
    call is one: ~1 ms of the event loop, through inspect.signature). Its value is noted instead and
    set when the configs are read (_lazy_components); a config made meanwhile (__setitem__,
    _update_config: the block replaced) is kept as it is, as Gradio's would have been."""
    made = self.config_values.get(key)
    if made is None:
        self.__dict__.setdefault("vizvit_values", {})[key] = value
    elif "props" in made:
        made["props"]["value"] = value


def _lazy_components(self: SessionState) -> Any:
    """Every block's config, those not made yet made now (from the session's blocks, as __init__
    made them eagerly), in Gradio's order."""
    made, blocks = self.config_values, self.blocks_config.blocks
    noted = {k: v for k, v in self.__dict__.pop("vizvit_values", {}).items() if k not in made}
    full = {k: made[k] if k in made else self.blocks_config.config_for_block(k, [], blocks[k])
            for k in dict.fromkeys([*getattr(self, "vizvit_config_keys", ()), *noted]) if k in blocks or k in made}
    for k, value in noted.items():
        if "props" in full.get(k, {}):
            full[k]["props"]["value"] = value
    self.config_values = {**full, **made}
    return GRADIO_COMPONENTS.fget(self)  # type: ignore[attr-defined]


def install() -> None:
    """Replace Gradio's save_pil_to_cache with the atomic one, its preprocessing's refusals and its
    own errors in a handler's call with plain ones, and its upload parser with one that cleans up
    after a dropped client (idempotent). Also turns off the queue's per-event analytics
    (ANALYTICS_EVERY) unless the environment sets it."""
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", ANALYTICS_EVERY)
    processing_utils.save_pil_to_cache = _atomic_save_pil_to_cache
    if not getattr(Blocks.preprocess_data, "vizvit_plain", False):
        Blocks.preprocess_data = plain_preprocess(Blocks.preprocess_data)  # type: ignore[method-assign]
    if not getattr(Blocks.call_function, "vizvit_plain", False):
        Blocks.call_function = plain_call(Blocks.call_function)  # type: ignore[method-assign]
    parser = route_utils.GradioMultiPartParser
    if not getattr(parser.parse, "vizvit_clean", False):
        parser.parse = _parse_or_clean(parser.parse)  # type: ignore[method-assign]
    if not getattr(route_utils.get_fn, "vizvit_known", False):
        route_utils.get_fn = _known_fn(route_utils.get_fn)  # queueing.py and routes.py call it through the module
    SessionState.__init__ = _lazy_session_init  # type: ignore[method-assign]
    SessionState.components = property(_lazy_components)  # type: ignore[method-assign]
    SessionState._update_value_in_config = _lazy_value_in_config  # type: ignore[method-assign]


def unlaid(blocks: Any, children: Sequence[Any]) -> None:
    """Take `children` (direct children of `blocks`) out of the page's layout; they stay
    registered, so events and the API schema still find them. The page builds every laid-out
    component at load, and waits for every component it does not know to be invisible to mount:
    each is marked invisible in its config (gr.api's Api has no `visible` argument to set)."""
    for child in children:
        def config(get=child.get_config) -> dict:
            return {**get(), "visible": False}

        child.get_config = config
    blocks.children = [c for c in blocks.children if all(c is not x for x in children)]


def plain(message: str) -> str:
    """A message as a caller may see it: the first line, with every absolute or relative path
    and every object repr (`<... at 0x...>`) cut out. The last guard, for a message whose words
    this module does not know; a known one is rewritten whole (see plain_preprocess)."""
    first = str(message).strip().splitlines()[0] if str(message).strip() else ""
    first = _REPR.sub("…", first)
    return _PATH.sub("…", first)


def _refusal(fn: Any, inputs: list[Any]) -> str | None:
    """Why Gradio's preprocessing would refuse these inputs, in plain words; None: it would not."""
    name = getattr(fn, "api_name", None) or getattr(fn, "name", None) or "this endpoint"
    if len(inputs) < len(fn.inputs):
        return (f"{name} takes {len(fn.inputs)} values, in order ({_names(fn)}); got {len(inputs)}. "
                "Send them all (gradio_client fills in the defaults; its view_api() lists them).")
    # A file argument that names a URL: Gradio would download it, from the server, before the
    # handler runs (anything the server can reach). Only uploads are photos here.
    if any(isinstance(v, dict) and isinstance(v.get("path"), str) and is_http_url_like(v["path"]) for v in inputs):
        return NOT_UPLOADED
    # NaN passes Gradio's Slider (its range checks compare false) on to the handler, whose int() then failed
    # with "Something went wrong" and a traceback in the log; no page sends one (JSON.stringify writes null)
    # (and "nan" as text through the page's ClampedSlider, which reads text as float() does). None too: Gradio's
    # Slider passes it on, and the handler's int(None) was "Something went wrong" and a traceback
    for block, v in zip(fn.inputs, inputs):
        if isinstance(block, Slider) and (v is None or _not_finite(v)):
            return f"{block.label or 'A slider'} takes a number from {block.minimum} to {block.maximum}."
    return None


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
WELL_FORMED_DEPTH = 32  # no page sends values nested deeper; below it a value is left as it came
SAID_CHARS = 300  # a refusal's sentence, quoting the caller's value, at most


def _well_formed(value: Any, depth: int = 0) -> Any:
    """value with each lone surrogate in its text (and its dicts' keys) made U+FFFD. Raw JSON may carry
    one ("\\ud800"); no page sends one, and Gradio's event stream cannot write one: an answer or a
    refusal that quoted it (a Dropdown's "Value: … is not in the list") raised in the stream's encoder
    (orjson), a traceback in the log, and the session's stream cut before its other answers."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if depth >= WELL_FORMED_DEPTH:
        return value
    if isinstance(value, list):
        return [_well_formed(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_well_formed(k, depth + 1): _well_formed(v, depth + 1) for k, v in value.items()}
    return value


def _clipped(message: Any) -> Any:
    """A refusal's sentence, its quote of the caller's value cut to SAID_CHARS in all."""
    if isinstance(message, str) and len(message) > SAID_CHARS:
        return message[:SAID_CHARS - 1] + "…"
    return message


def _not_finite(value: Any) -> bool:
    """Whether value reads as NaN or an infinity; anything else that is no number is its component's to refuse."""
    try:
        return isinstance(value, (float, str)) and not math.isfinite(float(value))
    except (ValueError, OverflowError):
        return False


def _names(fn: Any) -> str:
    """The parameter names of fn's API, as /gradio_api/info lists them (no component reprs)."""
    try:
        params = [p.name for p in inspect.signature(fn.fn).parameters.values()
                  if p.annotation not in ("gr.Request", "Request") and p.name != "request"]
        if len(params) == len(fn.inputs):
            return ", ".join(params)
    except (TypeError, ValueError):
        pass
    return ", ".join(getattr(b, "label", None) or type(b).__name__ for b in fn.inputs)


def plain_preprocess(original: Any) -> Any:
    """Blocks.preprocess_data, its refusals turned into gr.Error with plain words (no traceback
    printed: print_exception=False). Gradio raises these before the app's handler (and its
    `safe` wrapper) runs, and queueing.py prints a traceback and shows str(error) otherwise."""
    async def preprocess_data(self: Blocks, block_fn: Any, inputs: list[Any], *args: Any, **kwargs: Any) -> Any:
        inputs = _well_formed(inputs)
        why = _refusal(block_fn, inputs)
        if why is not None:
            raise Error(why, print_exception=False)
        try:
            return await original(self, block_fn, inputs, *args, **kwargs)
        except Error as e:
            # A component's own refusal (a Radio's value not among its choices, a slider's -99999999): the
            # caller's mistake, told in its sentence; its traceback (30 lines in the log for each call, at any
            # stranger's will) is not printed. The sentence quotes the value ("Value: … is not in the list
            # of choices"): a value nested past _well_formed's depth, or 100 kB of it, is not sent back whole
            e.print_exception = False
            e.message = _well_formed(_clipped(e.message))
            raise
        except InvalidPathError:
            raise Error(NOT_UPLOADED, print_exception=False) from None
        except Exception as e:  # noqa: BLE001 - a value its component cannot read: the caller's mistake
            name = getattr(block_fn, "api_name", None) or getattr(block_fn, "name", "")
            log.info("refused arguments of %s: %s", name, type(e).__name__)
            raise Error(f"An argument of {name} has the wrong type or shape: gradio_client's view_api() "
                        "lists what each one takes.", print_exception=False) from None

    preprocess_data.vizvit_plain = True  # type: ignore[attr-defined]
    return preprocess_data


EVENT_REFUSED = ("This event's values are not what the page sends: reload the page, or call a named endpoint "
                 "(gradio_client's view_api() lists them).")


def plain_call(original: Any) -> Any:
    """Blocks.call_function, any error that is not a gr.Error told in one plain sentence (logged at
    info, one line). The app's handlers answer every error of theirs as a gr.Error (`safe`), so what
    reaches here is Gradio's own code tripping on values no page sends: a select event without its
    event data answered "'NoneType' object is not subscriptable", an example's load "cannot unpack
    non-iterable NoneType object", each with a traceback in the log, for any caller at will."""
    async def call_function(self: Blocks, block_fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await original(self, block_fn, *args, **kwargs)
        except Error:
            raise
        except Exception as e:  # noqa: BLE001
            fn = self.fns.get(block_fn) if isinstance(block_fn, int) else block_fn
            log.info("refused event %s: %s: %s", getattr(fn, "api_name", None) or getattr(fn, "name", ""),
                     type(e).__name__, plain(str(e)))
            raise Error(EVENT_REFUSED, print_exception=False) from None

    call_function.vizvit_plain = True  # type: ignore[attr-defined]
    return call_function


# Gradio's HTTPException details that go on to name a path (routes.py, route_utils.py).
_NAMES_A_PATH = ("File not allowed", "Invalid file name", "Error reading file", "Error writing file")


async def _plain_http_error(request: Request, exc: Exception) -> Response:
    """Gradio's HTTPException, its detail shown without paths ("File not allowed: /srv/app.py.")."""
    assert isinstance(exc, HTTPException)
    detail = exc.detail
    if isinstance(detail, str):  # Gradio's own words about a path the caller sent: the words alone
        known = next((k for k in _NAMES_A_PATH if detail.startswith(k)), None)
        detail = f"{known}." if known else plain(detail)
    return await http_exception_handler(request, HTTPException(exc.status_code, detail, exc.headers))


async def _plain_validation_error(request: Request, exc: Exception) -> Response:
    """FastAPI's 422 lists the body's values back (any path a caller sent, any repr): say what fits."""
    return await http_exception_handler(request, HTTPException(
        422, 'The request body must be JSON like {"data": [photo, model, ...]}: gradio_client\'s view_api() '
             'lists each endpoint\'s values.'))


# launch(app_kwargs={"exception_handlers": HTTP_HANDLERS}): FastAPI's handlers, on the app Gradio builds.
HTTP_HANDLERS = {HTTPException: _plain_http_error, RequestValidationError: _plain_validation_error}


def _parse_or_clean(original: Any) -> Any:
    """GradioMultiPartParser.parse, also deleting its partial files when the body stops for any
    other reason than a bad body (Gradio deletes them only then): a client that closes mid-upload
    raises ClientDisconnect from the request stream, and left up to max_file_size on disk each."""
    async def parse(self: Any) -> Any:
        try:
            return await original(self)
        except BaseException:
            for f in self._files_to_close_on_error:
                try:
                    f.close()
                    Path(f.name).unlink(missing_ok=True)
                except OSError:
                    log.warning("could not delete a partial upload")
            raise

    parse.vizvit_clean = True  # type: ignore[attr-defined]
    return parse


NO_SUCH_EVENT = "There is no event with that fn_index on this page: reload the page, or call a named endpoint."


def _known_fn(original: Any) -> Any:
    """route_utils.get_fn, an unknown fn_index refused as an HTTP 404 with a sentence. Gradio reads
    `fns[body.fn_index]` unchecked (queue/join, run/predict): a made-up index raised KeyError, a 500
    and a traceback in the log. (A fn_index that is not an integer FastAPI refuses already: 422.)"""
    def get_fn(blocks: Any, api_name: str | None, body: Any) -> Any:
        try:
            return original(blocks, api_name, body)
        except KeyError:
            if getattr(body, "fn_index", None) is None:
                raise
            raise HTTPException(404, NO_SUCH_EVENT) from None

    get_fn.vizvit_known = True  # type: ignore[attr-defined]
    return get_fn
