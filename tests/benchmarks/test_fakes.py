"""benchmarks/fakes.py: a free port and generated photos, shared by the server benchmarks."""

from __future__ import annotations

import socket

import numpy as np
from fakes import free_port, photo
from PIL import Image


def test_free_port_can_be_bound():
    port = free_port()
    assert 1024 <= port < 65536
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # raises if it were taken


def test_photos_are_640x480_jpegs_the_same_per_seed_and_distinct_across_seeds(tmp_path):
    a = photo(7, tmp_path)
    first = np.asarray(Image.open(a))
    assert Image.open(a).format == "JPEG" and first.shape == (480, 640, 3)
    again = np.asarray(Image.open(photo(7, tmp_path / ".." / tmp_path.name)))
    assert np.array_equal(first, again)
    other = np.asarray(Image.open(photo(8, tmp_path))).astype(int)
    assert np.abs(other - first.astype(int)).mean() > 10  # not a near copy: the server must miss its cache
