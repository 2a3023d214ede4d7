"""What the server benchmarks (hall.py, load_test.py, memory.py) share and neither owns: a free
local port and distinct generated photos. Its own module so those scripts import it, not each
other (hall.py starts the server that load_test.py drives: imports run one way)."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
from PIL import Image


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def photo(seed: int, folder: Path) -> str:
    """A distinct 640×480 photo-like picture (smooth gradients + noise), written to folder as JPEG."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:480, 0:640] / 640.0
    base = np.stack([np.sin(x * rng.uniform(1, 9) + rng.uniform(0, 6)), np.cos(y * rng.uniform(1, 9)),
                     np.sin((x + y) * rng.uniform(1, 9))], -1)
    img = ((base * 0.4 + 0.5 + rng.normal(0, 0.05, base.shape)).clip(0, 1) * 255).astype(np.uint8)
    path = folder / f"photo_{seed}.jpg"
    Image.fromarray(img).save(path, quality=85)
    return str(path)
