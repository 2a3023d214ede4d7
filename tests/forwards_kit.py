"""A stand-in forward runner for the forward worker's tests: it holds the first batch until released."""

from __future__ import annotations

import threading

from vizvit.model import engine


class HeldForwards:
    """run_batch for a ForwardQueue: records each batch, and holds the first until released."""

    def __init__(self):
        self.batches: list[int] = []
        self.release = threading.Event()
        self.started = threading.Event()

    def __call__(self, vm, requests):
        self.batches.append(len(requests))
        self.started.set()
        self.release.wait(30)
        return engine.analyze_batch(vm, requests)
