"""The page builds, serves on 127.0.0.1, and answers gradio_client, bad uploads included."""

from __future__ import annotations

from pathlib import Path

import gradio as gr
import pytest
from appserver import page_name, running
from gradio_client import Client, handle_file
from make_inputs import CASES, write_all
from tiny import EXAMPLES

import app
from page import kit, shell
from page.endpoints import PUBLIC_ENDPOINTS
from vizvit.launch import start_model
from vizvit.session import Workbench

ROOT = Path(__file__).resolve().parents[2]


def test_build_demo_builds(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    assert isinstance(demo, gr.Blocks)
    kw = app.launch_kwargs()
    assert kw["ssr_mode"] is False and kw["run_history"] is False and kw["max_file_size"]


@pytest.fixture(scope="module")
def server(tiny16):
    with running(tiny16) as url:
        yield url


def test_client_analyze_reports_the_prediction(server, tiny16):
    client = Client(server, verbose=False)
    r = client.predict(handle_file(str(EXAMPLES / "chelsea.jpg")), page_name(tiny16), api_name="/analyze")
    assert r["top5"][0]["label"].startswith("thing") and r["geometry"]["num_layers"] == 2
    assert r["geometry"]["grid"] == [14, 14] and r["timings"]["forward_ms"] > 0


def test_bad_uploads_get_messages_and_the_server_keeps_serving(server, tiny16, tmp_path):
    client = Client(server, verbose=False)
    paths = write_all(tmp_path)
    for name, (kind, expect) in CASES.items():
        if name in ("very_wide.png",):
            continue  # covered by the loader test; 20000 px wide is slow to upload here
        if kind == "error":
            with pytest.raises(Exception, match=f"(?i){expect}") as e:
                client.predict(handle_file(str(paths[name])), page_name(tiny16), api_name="/analyze")
            assert str(tmp_path) not in str(e.value), "server paths must not leak into messages"
        else:
            assert client.predict(handle_file(str(paths[name])), page_name(tiny16), api_name="/analyze")["top5"]
    # Still serving after all of that.
    assert client.predict(handle_file(str(EXAMPLES / "coffee.jpg")), page_name(tiny16), api_name="/analyze")["top5"]


def test_only_the_documented_endpoints_are_public(server):
    info = Client(server, verbose=False).view_api(return_format="dict")
    assert sorted(info["named_endpoints"]) == sorted(f"/{n}" for n in PUBLIC_ENDPOINTS)
    assert not info["unnamed_endpoints"]


def test_unreachable_default_model_falls_back_to_random_weights_and_says_so(caplog):
    wb = Workbench(device="cpu")
    model_id = start_model(wb, "google/vit-base-patch16-224")  # HF_HUB_OFFLINE=1 here
    assert model_id == "random:vit-base-patch16-224"
    assert any("Could not load" in r.message for r in caplog.records)  # the reason goes to the log
    demo = shell.build_demo(wb, model_id, offline=True)
    banner = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "banner")
    assert "No internet" in banner.value and "untrained random weights" in banner.value
    assert "Error" not in banner.value and "--model" not in banner.value  # no exception names, no CLI advice


def test_library_errors_are_not_shown_verbatim():
    import numpy as np

    from vizvit.errors import UserError

    @kit.safe
    def ours():
        raise UserError("Please upload a photo.")

    @kit.safe
    def deep():
        np.zeros(3).reshape(2, 2)  # numpy's own ValueError

    with pytest.raises(gr.Error, match="Please upload a photo"):
        ours()
    with pytest.raises(gr.Error, match="Something went wrong") as e:
        deep()
    assert "reshape" not in str(e.value)


def test_every_tab_links_the_methods_page(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    blocks = list(demo.blocks.values())
    assert sum(getattr(b, "value", None) == shell.METHODS_LINK for b in blocks) == len(shell.TABS)
    assert "#methods" in shell.METHODS_LINK
    by_id = {getattr(b, "elem_id", None): b for b in blocks}
    methods, text = by_id["methods"], by_id["methods-text"]
    # Not in the page's config (issue 52): the panel's text comes when it opens.
    assert not any("## Head ablation" in str(getattr(b, "value", "")) for b in blocks)
    opens = [fn for fn in demo.fns.values() if (methods._id, "expand") in fn.targets]
    assert len(opens) == 1 and opens[0].outputs == [text] and not opens[0].inputs
    assert opens[0].fn() == (ROOT / "docs" / "methods.md").read_text(encoding="utf-8")
    for section in ("## Attention rollout", "## Class-specific relevance", "## Logit lens", "## Head ablation"):
        assert section in shell.METHODS_TEXT


def test_the_api_placeholders_stay_out_of_the_page_layout(tiny16):
    """gr.api's argument/result components draw nothing; the page must not build them at load.
    They stay registered, so the public endpoints keep their schema (see the endpoint tests)."""
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    config = demo.get_config_file()
    types = {c["id"]: c["type"] for c in config["components"]}

    def ids(node: dict) -> list[int]:
        return [node["id"]] + [i for ch in node.get("children", []) for i in ids(ch)]

    in_layout = ids(config["layout"])
    assert "api" in types.values(), "the endpoints' components are still registered"
    assert not [i for i in in_layout if types.get(i) == "api"]
    # The page waits for every visible component to mount: one never laid out must be invisible.
    assert all(c["props"].get("visible") is False for c in config["components"] if c["id"] not in in_layout)
    assert any(types.get(i) == "file" for i in in_layout)  # the page itself is all there
