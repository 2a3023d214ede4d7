"""page/file_walk.py: Gradio's walks for files skip a value that cannot hold one, and still find every
file in one that can. Compared with Gradio's own walks (the functions the wrappers call), on
constructed values with known answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from gradio import processing_utils
from gradio.data_classes import FileData
from gradio_client import utils as client_utils
from loops import run_apart

from page import file_walk

file_walk.install()
MOVE = processing_utils.async_move_files_to_cache
GRADIO_MOVE = MOVE.__wrapped__  # Gradio's own, as the wrapper calls it
ROOT = processing_utils.add_root_url
GRADIO_ROOT = ROOT.__wrapped__

PLAIN = {"top5": [["tabby", 0.5], ["tiger cat", 0.25]], "map": [[0.1] * 14] * 14, "layer": 3,
         "note": "a FileData is not this", "nothing": None}


def a_file(folder: Path, url: str | None = None) -> dict:
    path = folder / "cat.txt"
    path.write_text("meow")
    file = FileData(path=str(path)).model_dump()
    if url is not None:
        file["url"] = url
    return file


@pytest.mark.parametrize("value, plain", [
    (PLAIN, True),
    ([1, 2.5, "x", None, [True]], True),
    ({"meta": {"_type": "gradio.FileData"}}, False),  # the string anywhere: walked
    ({"label": "gradio.FileData"}, False),
    ({"photo": {"path": "/etc/passwd", "meta": None}}, False),  # a malformed file: Gradio's walk refuses it
    ({"meta": "x"}, False),
    (np.zeros(3), False),  # orjson writes no array without an option: walked
    ({1: "a"}, False),  # a key that is not a string
    ({"x": {1, 2}}, False),
    (FileData(path="/tmp/x"), False),  # a model, not plain JSON
])
def test_only_plain_json_without_the_file_type_is_plain(value, plain):
    assert file_walk.holds_no_file(value) is plain


def test_a_plain_answer_comes_back_as_it_is_without_a_walk(monkeypatch):
    walked = []
    original = client_utils.async_traverse

    async def counting(*args, **kwargs):
        walked.append(1)
        return await original(*args, **kwargs)

    monkeypatch.setattr(client_utils, "async_traverse", counting)
    block = gr.JSON(render=False)
    got = run_apart(MOVE(PLAIN, block, postprocess=True))
    assert got is PLAIN and not walked
    assert run_apart(GRADIO_MOVE(PLAIN, block, postprocess=True)) == PLAIN  # what Gradio's walk made of it
    assert walked, "the counter never saw Gradio's walk"
    assert ROOT([PLAIN], "http://host/", None) == GRADIO_ROOT([PLAIN], "http://host/", None) == [PLAIN]


def test_a_file_inside_an_answer_is_still_moved_and_given_its_url(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "cache"))
    block = gr.JSON(render=False)
    block.GRADIO_CACHE = str(tmp_path / "cache")
    folder = Path(block.GRADIO_CACHE) / "src"
    folder.mkdir(parents=True)
    value = {"maps": [1, 2], "deep": [{"file": a_file(folder)}]}
    ours = run_apart(MOVE(value, block, postprocess=True))
    theirs = run_apart(GRADIO_MOVE(value, block, postprocess=True))
    assert ours == theirs
    assert ours["deep"][0]["file"]["url"].startswith("/gradio_api/file="), ours
    shutil.rmtree(folder)


def test_a_file_url_in_an_answer_still_gets_the_root():
    value = [{"deep": [{"file": {"path": "/x/cat.txt", "url": "/gradio_api/file=/x/cat.txt",
                                 "meta": {"_type": "gradio.FileData"}}}]}]
    ours = ROOT(value, "http://host", None)
    assert ours == GRADIO_ROOT(value, "http://host", None)
    assert ours[0]["deep"][0]["file"]["url"] == "http://host/gradio_api/file=/x/cat.txt"


def test_install_is_idempotent():
    file_walk.install()
    assert processing_utils.async_move_files_to_cache is MOVE and processing_utils.add_root_url is ROOT


def test_a_file_outside_the_upload_folder_is_still_refused(tmp_path):
    """An input's file that was never uploaded meets Gradio's check as before (the walk is not skipped
    for it), and so does a malformed one."""
    from types import SimpleNamespace

    from gradio.context import LocalContext
    from gradio.exceptions import InvalidPathError

    # Gradio checks a file's folder only for a launched app: one, as far as its check reads it.
    token = LocalContext.blocks.set(SimpleNamespace(has_launched=True, blocked_paths=[], allowed_paths=[]))
    block = gr.JSON(render=False)
    block.GRADIO_CACHE = str(tmp_path / "cache")
    outside = tmp_path / "secret.txt"
    outside.write_text("no")
    value = {"photo": FileData(path=str(outside)).model_dump()}
    with pytest.raises(InvalidPathError):
        run_apart(MOVE(value, block, check_in_upload_folder=True))
    with pytest.raises(AttributeError):  # Gradio's own walk on a "meta" that is not a dict
        run_apart(MOVE({"photo": {"path": str(outside), "meta": None}}, block, check_in_upload_folder=True))
    LocalContext.blocks.reset(token)
