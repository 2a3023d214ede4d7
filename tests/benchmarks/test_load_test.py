"""Robustness under load: the load-test script against the real app."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_load_script_zero_errors_queue_full_and_bounded_memory(capsys):
    import load_test

    rc = load_test.main(["--clients", "3", "--seconds", "6", "--burst", "30", "--queue-size", "4",
                         "--concurrency", "1", "--uploads", "40"])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0, out
    assert '"queue_full"' in out, "a burst past the queue must be answered 'queue full'"
