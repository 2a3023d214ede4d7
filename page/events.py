"""What every event of the built page keeps to, so that Gradio's page stays quick in the browser
(issue 27): no layout container among any event's outputs, and at most one progress target each.
The shell applies both once every event is registered (page/shell.py: build_demo)."""

from __future__ import annotations

import gradio as gr

# Gradio 6.31's page, on every status message of every event (pending, started, done: several
# per event), refreshes the loading status of every component that was ever an event's output
# and, for a container among them, re-reads (a deep $state.snapshot of) every component inside
# it. The Tabs container as one output (a deep link's tab) made each event re-read the whole
# page: 130-290 ms of main thread per tab open, measured with Chromium's profiler
# (benchmarks/browser_latency.py --breakdown tabs). So no container is ever an output: page JS
# does what their updates did (web/select_tab.js, web/zero_shot_on.js).
NO_CONTAINER_OUTPUTS = (gr.Tabs, gr.Tab, gr.Row, gr.Column, gr.Group, gr.Accordion)


def check_no_container_outputs(demo: gr.Blocks) -> None:
    """Raise if any event of `demo` has a layout container among its outputs (see NO_CONTAINER_OUTPUTS)."""
    bad = sorted({f"{type(o).__name__} {o.elem_id or o._id}" for fn in demo.fns.values() for o in fn.outputs
                  if isinstance(o, NO_CONTAINER_OUTPUTS)})
    if bad:
        raise ValueError(f"layout containers as event outputs slow every event of the page: {bad}")


def few_progress_targets(demo: gr.Blocks) -> int:
    """Give every event of `demo` at most one progress target; returns how many events it changed.

    Gradio keeps a loading status for each component that is a progress target of an event that
    has run (by default every output), and on every status message of every event (pending,
    started, completed) writes each of them back into its component's state (Gradio 6.31's
    Blocks: update_loading_stati_state). Once a visitor's events have run that is most of the
    page: 213-228 ms of a tab's first open in Chromium's profiler (issue 27). An event that shows
    no progress needs no target (an empty list: no status is kept for it); one that shows
    progress shows it on its first picture or chart, else on its first output."""
    changed = 0
    for fn in demo.fns.values():
        if fn.show_progress_on is not None:
            continue
        if fn.show_progress == "hidden" or not fn.outputs:
            fn.show_progress_on = []
        else:
            shown = [o for o in fn.outputs if isinstance(o, (gr.Image, gr.Plot))] or list(fn.outputs)
            fn.show_progress_on = shown[:1]
        changed += 1
    return changed
