"""gradio_patch: Gradio's image cache written atomically when sessions produce identical
pictures at once."""

from __future__ import annotations

import threading
import types

import numpy as np
from gradio import processing_utils
from loops import run_apart
from PIL import Image

import app


def test_identical_outputs_written_concurrently_are_never_partial(tmp_path):
    img = Image.fromarray(np.random.default_rng(0).integers(0, 256, (400, 400, 3), dtype=np.uint8))
    expect = processing_utils.encode_pil_to_bytes(img, "png")
    paths, bad = [], []

    def write_and_read():
        p = processing_utils.save_pil_to_cache(img, str(tmp_path), format="png")
        paths.append(p)
        if open(p, "rb").read() != expect:
            bad.append(p)

    threads = [threading.Thread(target=write_and_read) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad and len(set(paths)) == 1


def test_the_queue_sums_no_analytics_after_each_event(monkeypatch):
    """Monitoring is off (app.launch_kwargs), so Gradio's per-event pandas summary of every recorded
    event (issue 52: 5 % of a hall's CPU) is never computed: records of 50 finished events give the
    empty summary, and its pandas step is never reached."""
    import gradio as gr
    from gradio import queueing

    assert app.launch_kwargs()["enable_monitoring"] is False
    with gr.Blocks() as demo:
        gr.Button()
    demo.queue()
    q = demo._queue
    monkeypatch.setattr(queueing.Queue, "_get_df", staticmethod(lambda records: (_ for _ in ()).throw(
        AssertionError("the analytics were summed"))))
    records = [{"function": "f", "status": "success", "process_time": 0.1, "time": 1.0}] * 50
    q.events_recorded = 50
    assert q.compute_analytics_summary(records) == {"functions": {}}


def test_a_new_session_makes_no_block_config_until_one_is_read(monkeypatch):
    """Gradio made every block's config for each new session (60 ms on the page, issue 52); now none
    until needed, and the configs read together (Gradio's deep-link route) equal the eager ones, an
    update made on the way included."""
    import gradio as gr
    from gradio.blocks import BlocksConfig
    from gradio.state_holder import SessionState

    with gr.Blocks() as demo:
        gr.Textbox("a", label="t")
        n = gr.Number(3, label="n")
        gr.State(5)
    # The reference: Gradio's own per-block config, made here for every block, n's value then set.
    expected = {k: BlocksConfig.config_for_block(k, [], v) for k, v in demo.blocks.items()}
    expected[n._id]["props"]["value"] = 7
    made = []
    real = BlocksConfig.config_for_block
    monkeypatch.setattr(BlocksConfig, "config_for_block",
                        staticmethod(lambda k, *a, **kw: made.append(k) or real(k, *a, **kw)))
    state = SessionState(demo)
    assert made == []
    state._update_value_in_config(n._id, 7)  # Gradio's path when an event sets a value
    assert made == [], "an event's value made its block's config before anything read it"
    assert list(state.components) == [c for c in expected.values() if c]
    assert list(state.components) == [c for c in expected.values() if c]  # read again: made once
    assert sorted(made) == sorted(expected)


def test_a_value_noted_before_its_block_is_replaced_gives_way_as_gradios_eager_one_does():
    """Gradio's own order of events on a session's config, replayed on a session made by Gradio's
    code (the reference) and on the lazy one: a value set, the block replaced (its own value wins),
    a value set again (it wins); another block's value set twice (the last wins)."""
    import gradio as gr
    from gradio.state_holder import SessionState

    import gradio_patch

    with gr.Blocks() as demo:
        t = gr.Textbox("a", label="t")
        n = gr.Number(3, label="n")

    def replay(state: SessionState) -> list[dict]:
        state._update_value_in_config(n._id, 7)
        state[n._id] = gr.Number(9, label="n", render=False)
        state._update_value_in_config(t._id, "b")
        state._update_value_in_config(t._id, "c")
        first = [dict(c, props=dict(c["props"])) for c in state.components]
        state._update_value_in_config(n._id, 8)
        return first + list(state.components)

    lazy = SessionState(demo)
    eager = SessionState.__new__(SessionState)
    gradio_patch.GRADIO_SESSION_INIT(eager, demo)
    eager._update_value_in_config = types.MethodType(gradio_patch.GRADIO_VALUE_IN_CONFIG, eager)
    assert replay(lazy) == replay(eager)


def test_a_components_own_refusal_prints_no_traceback():
    """A value no page sends (a Radio's choice that is not one, a slider's -99999999) to a page's event:
    the component refuses it with a gr.Error that printed a 30-line traceback into the server's log, for
    each call, at any stranger's will (an audit's fuzzing of the hidden events: 892 tracebacks). Its
    sentence still reaches the caller, without the traceback."""
    import gradio as gr
    import pytest

    import gradio_patch

    gradio_patch.install()
    with gr.Blocks() as demo:
        radio, slider, out = gr.Radio(["a", "b"], value="a"), gr.Slider(0, 5, step=1), gr.Textbox()
        gr.Button().click(lambda r, s: f"{r}{s}", [radio, slider], out)
    fn = demo.fns[0]
    for bad in (["zz", 1], ["a", -99999999]):
        with pytest.raises(gr.Error) as e:
            run_apart(demo.preprocess_data(fn, bad, None))
        assert not e.value.print_exception and ("choices" in str(e.value) or "minimum" in str(e.value))


def test_a_slider_given_nan_is_refused_before_the_handler():
    """NaN (raw JSON may carry it; no page sends it) passed Gradio's Slider, whose range checks compare
    false, and reached the handler: int(nan) there was "Something went wrong" and a traceback in the log."""
    import gradio as gr
    import pytest

    import gradio_patch
    from page import kit

    gradio_patch.install()
    with gr.Blocks() as demo:
        layer, out = gr.Slider(1, 12, step=1, label="layer"), gr.Textbox()
        gr.Button().click(lambda v: str(int(v)), [layer], out)
        clamped = kit.ClampedSlider(1, 12, step=1, label="depth")  # reads text as float() does: "nan" passed
        gr.Button().click(lambda v: str(int(v)), [clamped], out)
    for fn, said in ((demo.fns[0], "layer takes a number from 1 to 12"), (demo.fns[1], "depth takes")):
        for bad in (float("nan"), float("-inf"), "nan", " NaN "):
            with pytest.raises(gr.Error, match=said) as e:
                run_apart(demo.preprocess_data(fn, [bad], None))
            assert not e.value.print_exception
    assert run_apart(demo.preprocess_data(demo.fns[1], [99], None)) == [12]  # clamped, as before


def test_a_lone_surrogate_or_100_kb_a_caller_sends_never_reaches_the_event_stream_as_sent():
    """Raw JSON may carry a lone surrogate ("\\ud800"; no page sends one): a Dropdown's refusal quoted it
    ("Value: … is not in the list of choices"), Gradio's event stream (orjson) could not write that
    answer, and the session's stream was cut with a traceback in the log; a handler echoing the text
    did the same. Each reaches the stream as U+FFFD; a refusal quoting 100 kB says 300 characters."""
    import gradio as gr
    import orjson
    import pytest

    import gradio_patch

    gradio_patch.install()
    with gr.Blocks() as demo:
        pick, text, out = gr.Dropdown(["a", "b"], value="a"), gr.Textbox(), gr.Textbox()
        gr.Button().click(lambda p: p, [pick], out)
        gr.Button().click(lambda t: t, [text], out)
    for bad in ("\ud800abc", ["x", {"k\udfff": "\ud800"}]):
        with pytest.raises(gr.Error) as e:
            run_apart(demo.preprocess_data(demo.fns[0], [bad], None))
        assert "choices" in e.value.message and orjson.dumps(e.value.message)  # the stream can write it
    with pytest.raises(gr.Error) as e:
        run_apart(demo.preprocess_data(demo.fns[0], ["x" * 100_000], None))
    assert len(e.value.message) <= 300
    assert run_apart(demo.preprocess_data(demo.fns[1], ["a\ud800b"], None)) == ["a\ufffdb"]
    assert run_apart(demo.preprocess_data(demo.fns[1], ["a😀b"], None)) == ["a😀b"], "a whole character stays"


def test_a_slider_given_none_is_refused_before_the_handler():
    """None (JSON null) passes Gradio's Slider and the page's ClampedSlider on to the handler, whose
    int(None) was "Something went wrong" and a traceback in the log."""
    import gradio as gr
    import pytest

    import gradio_patch
    from page import kit

    gradio_patch.install()
    with gr.Blocks() as demo:
        out = gr.Textbox()
        gr.Button().click(lambda v: str(int(v)), [gr.Slider(1, 12, step=1, label="layer")], out)
        gr.Button().click(lambda v: str(int(v)), [kit.ClampedSlider(1, 12, step=1, label="depth")], out)
    for fn, said in ((demo.fns[0], "layer takes a number from 1 to 12"), (demo.fns[1], "depth takes")):
        with pytest.raises(gr.Error, match=said) as e:
            run_apart(demo.preprocess_data(fn, [None], None))
        assert not e.value.print_exception
