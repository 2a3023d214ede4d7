"""Issue 27, a tab's first open: no layout container is an event output (Gradio then re-reads every
component inside it on every status message), and a tab's slow part follows its first picture."""

from __future__ import annotations

import gradio as gr
import pytest

from page import kit, shell
from vizvit.session import Workbench


def test_the_built_page_has_no_container_among_any_events_outputs(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)  # build_demo runs the check itself; and again here
    kit.check_no_container_outputs(demo)
    outs = [o for fn in demo.fns.values() for o in fn.outputs]
    assert outs and not any(isinstance(o, kit.NO_CONTAINER_OUTPUTS) for o in outs)


@pytest.mark.parametrize("container", [gr.Tabs, gr.Group, gr.Accordion])
def test_the_check_refuses_a_container_output(container):
    with gr.Blocks() as demo:
        with container() as box:
            with (gr.Tab("x") if container is gr.Tabs else gr.Column()):
                md = gr.Markdown()
        gr.Button().click(lambda: None, None, [md, box])
    with pytest.raises(ValueError, match="containers"):
        kit.check_no_container_outputs(demo)
