"""Start the real page on 127.0.0.1 in this process, for gradio_client and browser tests."""

from __future__ import annotations

import functools
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import app
from vizvit.session import Workbench


def page_name(vm) -> str:
    """The name the page lists a model under: a local directory (every tiny test model) by its
    folder's name, never its path (vizvit.model.catalog)."""
    return Path(vm.id).name if Path(vm.id).is_dir() else vm.id


def held(monkeypatch, module, name: str, seconds: float) -> tuple[threading.Event, threading.Event]:
    """Hold the page handler `module.name` back `seconds` (set before the page is built: the wiring
    binds the function then); returns (asked, done): set as a call starts and as it ends."""
    asked, done = threading.Event(), threading.Event()
    fn = getattr(module, name)

    @functools.wraps(fn)  # its signature: Gradio passes the inputs as before
    def slow(*args, **kwargs):
        asked.set()
        time.sleep(seconds)
        try:
            return fn(*args, **kwargs)
        finally:
            done.set()

    monkeypatch.setattr(module, name, slow)
    return asked, done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(vm, **build_kw) -> Iterator[tuple[str, Workbench]]:
    """Serve build_demo() for `vm` with the production launch settings; yields (URL, Workbench)."""
    wb = Workbench(cache_bytes=256 << 20, device="cpu")
    wb.add_model(vm)
    demo = app.configure_queue(app.build_demo(wb, vm.id, **build_kw))
    for attempt in range(3):
        port = free_port()
        try:
            demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        **app.launch_kwargs(demo))
            break
        except (ValueError, OSError) as e:
            # Gradio's one HEAD check of the new server gives up after 3 s ("localhost is not
            # accessible"): on a loaded 2-core machine the first page can take longer. And under
            # pytest-xdist another worker may take the free port between free_port and launch
            # (OSError: "Cannot find empty port"). Start it again on another port.
            busy = isinstance(e, OSError) and "empty port" in str(e)
            if not (busy or "localhost is not accessible" in str(e)) or attempt == 2:
                raise
            demo.close()
    try:
        yield f"http://127.0.0.1:{port}/", wb
    finally:
        demo.close()


@contextmanager
def running(vm, **build_kw) -> Iterator[str]:
    """As `serving`, yielding the URL only."""
    with serving(vm, **build_kw) as (url, _):
        yield url


def photos_read_late(wb: Workbench, seconds: float = 3.0) -> None:
    """Every photo the page sends is read `seconds` late from now on (a loaded machine): the handler reads
    wb's method when it runs, so this holds from the first upload."""
    add = wb.add_photo

    def late(*args, **kwargs):
        time.sleep(seconds)
        return add(*args, **kwargs)

    wb.add_photo = late
