"""The Method record (vizvit/methods/base.py): a class-specific record's checks, its per-class cache."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import vizvit
from vizvit.errors import NO_CLASS, UserError
from vizvit.methods.base import Method, of_class
from vizvit.methods.maps import method_map_name


def _record(calls: list, **kw) -> Method:
    """A class-specific record whose map is its class number everywhere (and that counts its runs)."""
    def fn(vm, a, c):
        calls.append(c)
        return np.full(a.geometry.grid, float(c), np.float32)
    return Method("constructed", of_class(fn), "a constructed map", "this test", needs_class=True, **kw)


def test_a_class_specific_record_reads_the_top1_class_checks_it_and_caches_per_class(tiny16, cat):
    a = vizvit.analyze(tiny16, cat)
    calls: list = []
    m = _record(calls, per_class=True)
    store: dict = {}
    cache = lambda name, compute: store[name] if name in store else store.setdefault(name, compute())  # noqa: E731
    top1 = a.top5[0].index
    assert (m(tiny16, a, None, cache) == top1).all()  # None: the top-1 class
    assert (m(tiny16, a, top1, cache) == top1).all() and calls == [top1]  # cached: computed once
    assert method_map_name("constructed", top1) in store
    m(tiny16, a, 2, cache)
    assert calls == [top1, 2]
    with pytest.raises(UserError, match="outside 0..6"):
        m(tiny16, a, 7)
    assert calls == [top1, 2]  # refused before any work


def test_a_class_specific_record_without_a_classifier_says_the_one_sentence(tiny16, cat):
    a = dataclasses.replace(vizvit.analyze(tiny16, cat), top5=())
    m = _record([])
    assert not m.applies(tiny16, a)
    with pytest.raises(UserError) as e:
        m(tiny16, a)
    assert str(e.value) == NO_CLASS == "This model has no classifier, so there is no class to explain."


def test_a_record_without_per_class_is_not_cached(tiny16, cat):
    a = vizvit.analyze(tiny16, cat)
    calls: list = []
    m = _record(calls)
    m(tiny16, a, 1, lambda name, compute: pytest.fail("cached"))  # type: ignore[arg-type]
    assert calls == [1]
