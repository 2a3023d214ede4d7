"""The user's exception (vizvit/errors.py): a UserError is a ValueError (code that catches bad input
as ValueError still catches it) whose text is the message shown; and every place in vizvit/ that
raises one gives it a message written there, so no person is shown an empty or a bare one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vizvit.errors import UserError

PACKAGE = Path(__file__).resolve().parent.parent / "vizvit"


def test_a_user_error_is_a_value_error_whose_text_is_the_message():
    with pytest.raises(ValueError) as caught:
        raise UserError("Pick a layer from 1 to 12.")
    assert type(caught.value) is UserError and str(caught.value) == "Pick a layer from 1 to 12."


def user_error_raises(source: str) -> list[tuple[int, ast.Call | None]]:
    """(line, the call) for each `raise UserError(...)` or bare `raise UserError` in source."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc
            call = exc if isinstance(exc, ast.Call) else None
            name = (call.func if call else exc)
            if isinstance(name, ast.Name) and name.id == "UserError":
                out.append((node.lineno, call))
    return out


def bare(source: str) -> list[int]:
    """Lines where a UserError is raised without a message."""
    return [line for line, call in user_error_raises(source) if call is None or not (call.args or call.keywords)]


def test_the_finder_sees_a_constructed_bare_raise():
    src = ('def f():\n    raise UserError("say what to do")\n\n'
           'def g():\n    raise UserError\n\n'
           'def h():\n    raise UserError()\n')
    assert [line for line, _ in user_error_raises(src)] == [2, 5, 8]
    assert bare(src) == [5, 8]


def test_every_user_error_in_the_package_carries_a_message():
    found, empty = 0, []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        found += len(user_error_raises(source))
        empty += [f"{path.relative_to(PACKAGE.parent)}:{line}" for line in bare(source)]
    assert found > 20, "the finder reads the package"  # dozens today
    assert not empty, f"UserError raised without a message: {empty}"
