"""Fixtures of the tabs' handler tests: a tiny ViT's Workbench with the cat, bare or with the built page."""

from __future__ import annotations

import pytest

from page import shell
from vizvit.session import PhotoKey, Workbench


@pytest.fixture(scope="module")
def photo(tiny16, cat) -> tuple[Workbench, PhotoKey]:
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    return wb, PhotoKey(tiny16.id, wb.add_photo(cat))


@pytest.fixture(scope="module")
def built(tiny16, cat):
    wb = Workbench(cache_bytes=64 << 20, device="cpu")
    demo = shell.build_demo(wb, tiny16.id)
    return wb, demo, PhotoKey(wb.catalog.ids[0], wb.add_photo(cat))
