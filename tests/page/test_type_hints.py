"""page/type_hints.py: a handler's type hints are looked up once, and every answer is the one
typing.get_type_hints gives (the reference), for functions, callables, partials and hints that
cannot be resolved yet."""

from __future__ import annotations

import functools
import gc
import typing

import gradio as gr
import pytest
from gradio import helpers, utils

from page import type_hints

type_hints.install()


def handler(request: gr.Request, x: int, evt: gr.EventData | None = None) -> str:
    return str(x)


def later(x: NotYetDefined) -> None:  # noqa: F821 (a name defined after the first look)
    return None


def counting():
    """type_hints.kept over a counting reference lookup (typing.get_type_hints, {} on NameError)."""
    calls = []

    def lookup(fn):
        calls.append(fn)
        try:
            return typing.get_type_hints(fn)
        except NameError:
            return {}

    return type_hints.kept(lookup), calls


def test_hints_are_looked_up_once_and_each_caller_gets_its_own_copy():
    hints, calls = counting()
    want = typing.get_type_hints(handler)
    for copy in (hints(handler), hints(handler)):  # the first answer, then a kept one
        copy["x"] = "scribbled"  # a caller that changes its copy changes no one else's
    assert hints(handler) == want
    assert calls == [handler]


def test_an_empty_or_unresolvable_answer_is_asked_again():
    hints, calls = counting()
    assert hints(later) == {}
    globals()["NotYetDefined"] = int
    try:
        assert hints(later) == {"x": int, "return": type(None)}
    finally:
        del globals()["NotYetDefined"]
    assert calls == [later, later]


def test_a_callable_that_cannot_be_weakly_referenced_is_answered_every_time():
    hints, calls = counting()
    method = str.upper  # a method descriptor: no weak reference
    assert hints(method) == typing.get_type_hints(method)
    hints(method)
    assert len(calls) == 2


def test_a_gone_handler_takes_its_hints_with_it():
    hints = type_hints.kept(typing.get_type_hints)

    def short_lived(x: int) -> int:
        return x

    hints(short_lived)
    found, = (c.cell_contents for c in hints.__closure__  # the kept answers live in the wrapper's closure
              if isinstance(c.cell_contents, type_hints.weakref.WeakKeyDictionary))
    assert len(found) == 1
    del short_lived
    gc.collect()
    assert len(found) == 0


def with_event(evt: gr.EventData, x: int, request: gr.Request) -> None:
    return None


@pytest.mark.filterwarnings("ignore:Unexpected argument")  # Gradio's, for a fn given more values than it takes
def test_gradios_special_args_answers_as_with_its_own_lookup(monkeypatch):
    """Gradio's own special_args, through the kept lookup, fills the request and the event data
    where it does with Gradio's own lookup (the reference), each handler asked twice."""
    assert getattr(utils.get_type_hints, "vizvit_kept", False)
    request, event = gr.Request(), gr.EventData(None, {})
    fns = [handler, with_event, functools.partial(with_event), later, lambda a, b: None, handler, with_event]

    def answers():
        """What special_args gives each fn: its inputs as types (it copies the event data), its indices."""
        return [([type(v).__name__ for v in ins], *rest)
                for ins, *rest in (helpers.special_args(fn, [5, 6], request=request, event_data=event) for fn in fns)]

    kept = answers()
    monkeypatch.setattr(utils, "get_type_hints", utils.get_type_hints.__wrapped__)
    assert kept == answers()
    assert kept[1][0] == ["EventData", "int", "Request", "int"]  # the reference found them: not an empty check
