"""Gradio's walks over an event's values for files, skipped where a value cannot hold one.

Gradio 6.31 walks every input and output value of every event looking for file objects, twice for
an output (processing_utils.async_move_files_to_cache, one coroutine per node; add_root_url): for a
JSON answer such as /attention's map that is a few Python calls per number, on the server's event
loop, for every call (issue 52: server CPU a student). A file object is a dict whose meta._type is
"gradio.FileData" (gradio_client.utils.is_file_obj_with_meta, is_file_obj_with_url), so a value
that orjson writes without that string holds none, and comes back as it is: the walk would only
have copied it (each component's postprocess already hands it a value of its own, a model's dump).
A value orjson cannot write (an array, a model, a non-string key) is walked as before, and so is one
with that string anywhere in it, or with a "meta" key: a caller's malformed file ({"path": ...,
"meta": null}) still meets Gradio's walk and its refusal.

install() wraps the two functions in processing_utils, where blocks.py and route_utils.py look them
up at each call. Idempotent.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson
from gradio import processing_utils

FILE_TYPE = b'"gradio.FileData"'  # meta._type of every file object, as orjson writes the string
META = b'"meta":'  # the key that holds it, as orjson writes a key


def holds_no_file(value: Any) -> bool:
    """True only when `value` is plain JSON (str keys, lists, numbers, strings, None) without the
    string "gradio.FileData" or a "meta" key anywhere: no node of it is, or claims to be, a file."""
    try:
        written = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: a type it does not write, so the walk decides
        return False
    return FILE_TYPE not in written and META not in written


def _skipping_async(walk: Any) -> Any:
    @functools.wraps(walk)
    async def wrapper(data: Any, *args: Any, **kwargs: Any) -> Any:
        return data if holds_no_file(data) else await walk(data, *args, **kwargs)

    wrapper.vizvit_skips = True  # type: ignore[attr-defined]
    return wrapper


def _skipping(walk: Any) -> Any:
    @functools.wraps(walk)
    def wrapper(data: Any, *args: Any, **kwargs: Any) -> Any:
        return data if holds_no_file(data) else walk(data, *args, **kwargs)

    wrapper.vizvit_skips = True  # type: ignore[attr-defined]
    return wrapper


def install() -> None:
    """processing_utils' two walks wrapped (idempotent)."""
    if not getattr(processing_utils.async_move_files_to_cache, "vizvit_skips", False):
        processing_utils.async_move_files_to_cache = _skipping_async(processing_utils.async_move_files_to_cache)
    if not getattr(processing_utils.add_root_url, "vizvit_skips", False):
        processing_utils.add_root_url = _skipping(processing_utils.add_root_url)
