"""The page builds, serves on 127.0.0.1, and answers gradio_client, bad uploads included."""

from __future__ import annotations

import gradio as gr
import pytest
from gradio_client import Client, handle_file

import app
from appserver import running
from conftest import EXAMPLES
from make_inputs import CASES, write_all
from vizvit.session import Workbench


def test_build_demo_builds(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = app.build_demo(wb, tiny16.id)
    assert isinstance(demo, gr.Blocks)
    kw = app.launch_kwargs()
    assert kw["ssr_mode"] is False and kw["run_history"] is False and kw["max_file_size"]


@pytest.fixture(scope="module")
def server(tiny16):
    with running(tiny16) as url:
        yield url


def test_client_upload_reports_the_prediction(server, tiny16):
    client = Client(server, verbose=False)
    status = client.predict(handle_file(str(EXAMPLES / "chelsea.jpg")), tiny16.id, api_name="/upload")
    assert "top-1" in status and "thing" in status and "2 layers × 2 heads" in status


def test_bad_uploads_get_messages_and_the_server_keeps_serving(server, tiny16, tmp_path):
    client = Client(server, verbose=False)
    paths = write_all(tmp_path)
    for name, (kind, expect) in CASES.items():
        if name in ("very_wide.png",):
            continue  # covered by the loader test; 20000 px wide is slow to upload here
        if kind == "error":
            with pytest.raises(Exception, match=f"(?i){expect}") as e:
                client.predict(handle_file(str(paths[name])), tiny16.id, api_name="/upload")
            assert str(tmp_path) not in str(e.value), "server paths must not leak into messages"
        else:
            assert "top-1" in client.predict(handle_file(str(paths[name])), tiny16.id, api_name="/upload")
    # Still serving after all of that.
    assert "top-1" in client.predict(handle_file(str(EXAMPLES / "coffee.jpg")), tiny16.id, api_name="/upload")


def test_unknown_model_from_the_api_is_refused(server, tiny16):
    client = Client(server, verbose=False)
    with pytest.raises(Exception, match="Choose a model from the list") as e:
        client.predict("evil/remote-code-model", None, api_name="/model")
    assert "Traceback" not in str(e.value)


def test_offline_curated_model_keeps_the_current_one(server, tiny16):
    client = Client(server, verbose=False)
    status, model = client.predict("google/vit-base-patch16-224", None, api_name="/model")
    assert "cannot be loaded here" in status and "Still showing" in status
    assert model["value"] == tiny16.id  # the dropdown goes back to the model that works
    assert "google/vit-base-patch16-224" not in [v for _, v in model["choices"]]  # and drops the failed one
    assert "/tmp" not in status and "pytest" not in status


def test_unreachable_default_model_falls_back_to_random_weights_and_says_so(caplog):
    wb = Workbench(device="cpu")
    model_id, notice = app.start_model(wb, "google/vit-base-patch16-224")  # HF_HUB_OFFLINE=1 here
    assert model_id == "random:vit-base-patch16-224"
    assert "Could not load" in notice and "UNTRAINED" in notice
    assert any("Could not load" in r.message for r in caplog.records)
    demo = app.build_demo(wb, model_id, notice)
    assert any(getattr(b, "value", None) == notice for b in demo.blocks.values())


def test_library_errors_are_not_shown_verbatim():
    import numpy as np

    from vizvit.errors import UserError

    @app.safe
    def ours():
        raise UserError("Please upload a photo.")

    @app.safe
    def deep():
        np.zeros(3).reshape(2, 2)  # numpy's own ValueError

    with pytest.raises(gr.Error, match="Please upload a photo"):
        ours()
    with pytest.raises(gr.Error, match="Something went wrong") as e:
        deep()
    assert "reshape" not in str(e.value)
