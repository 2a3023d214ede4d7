"""A throwaway redis-server for tests (issue 50): on a free loopback port, in its own temp folder,
nothing saved to disk; stopped at the end. Tests that need it skip with one line where it is not
installed (and fail under CI, which installs it: .ci/run)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

MISSING = "redis-server is not installed (Debian: apt-get install redis-server; .ci/run installs it)"


def find_redis() -> str | None:
    return shutil.which("redis-server") or (shutil.which("/usr/bin/redis-server"))


def need_redis() -> str:
    """redis-server's path, or the test skips (fails under CI)."""
    path = find_redis()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(MISSING)
        pytest.skip(MISSING)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def redis_server(binary: str) -> Iterator[str]:
    """A fresh redis-server -> its URL (redis://127.0.0.1:PORT/0) while the block runs."""
    folder = tempfile.mkdtemp(prefix="vizvit-redis-")
    port = _free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", folder, "--save", "",
                             "--appendonly", "no", "--protected-mode", "yes"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while True:
            with contextlib.suppress(OSError):
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        break
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"redis-server did not start on port {port}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
