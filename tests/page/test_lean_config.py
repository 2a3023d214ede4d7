"""The page's config without the API schemas no caller reads (page/lean_config.py): the API info Gradio
computes from it is Gradio's own (from the untrimmed config), gradio_client still reads every public
endpoint with its parameters and still uploads a file argument, and the page loads from it."""

from __future__ import annotations

import json
import urllib.request

import gradio as gr
from appserver import page_name
from browser import page_at
from gradio_client import Client, handle_file
from settle import settled
from tiny import EXAMPLES

from page import lean_config, shell
from page.endpoints import PUBLIC_ENDPOINTS
from vizvit.session import Workbench


def test_a_constructed_config_loses_the_keys_only_outside_keep():
    full = {key: {"type": "string"} for key in lean_config.API_KEYS}
    config = {"components": [{"id": 1, "type": "file", "props": {"label": "a"}, "skip_api": False, **full},
                             {"id": 2, "type": "image", "props": {"label": "b"}, "skip_api": False, **full},
                             {"id": 3, "type": "row", "props": {}, "skip_api": True}],
              "dependencies": [{"id": 0}]}
    out = lean_config.trimmed(json.loads(json.dumps(config)), keep={2})
    assert out["components"][0] == {"id": 1, "type": "file", "props": {"label": "a"}, "skip_api": False}
    assert out["components"][1] == config["components"][1]
    assert out["components"][2] == config["components"][2] and out["dependencies"] == config["dependencies"]


def test_this_pages_api_info_is_gradios_own(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = shell.build_demo(wb, tiny16.id)
    full = gr.Blocks.get_config_file(demo)  # Gradio's own, untrimmed
    lean = demo.get_config_file()
    kept = [c for c in lean["components"] if "api_info" in c]
    assert len(lean["components"]) > 300 and 0 < len(kept) < 100  # the page, and only its API's components
    assert all(lean_config.API_KEYS[0] not in c for c in lean["components"] if c["type"] not in ("api", "state"))
    assert len(json.dumps(lean, default=str)) < 0.8 * len(json.dumps(full, default=str))
    # Nothing else changed: each component is Gradio's, less those keys.
    assert [{k: v for k, v in c.items() if k not in lean_config.API_KEYS} for c in full["components"]] == \
        [{k: v for k, v in c.items() if k not in lean_config.API_KEYS} for c in lean["components"]]
    infos = []
    for config in (full, lean):
        demo.config = config
        infos.append([demo.get_api_info(), demo.get_api_info(all_endpoints=True)])
    assert infos[1] == infos[0]
    assert sorted(infos[1][0]["named_endpoints"]) == sorted(f"/{n}" for n in PUBLIC_ENDPOINTS)
    parameters = [p for e in infos[1][0]["named_endpoints"].values() for p in e["parameters"]]
    assert len(parameters) > 20 and all(p["type"] and p["python_type"] for p in parameters)


def test_the_served_page_and_config_are_trimmed_and_the_client_reads_the_api(url, tiny16):
    config = json.loads(urllib.request.urlopen(url + "config", timeout=30).read())
    html = urllib.request.urlopen(url, timeout=30).read().decode()
    assert sum("api_info" in c for c in config["components"]) < 100 < len(config["components"])
    assert html.count('"api_info_as_output"') == sum("api_info_as_output" in c for c in config["components"])
    client = Client(url, verbose=False)
    info = client.view_api(return_format="dict", print_info=False)
    assert sorted(info["named_endpoints"]) == sorted(f"/{n}" for n in PUBLIC_ENDPOINTS)
    photo = info["named_endpoints"]["/analyze"]["parameters"][0]
    assert photo["parameter_name"] == "photo" and "path" in json.dumps(photo["type"])
    # The photo goes up as a file (the client reads that from the component's api_info in /config).
    r = client.predict(handle_file(str(EXAMPLES / "chelsea.jpg")), page_name(tiny16), api_name="/analyze")
    assert r["top5"] and r["geometry"]["grid"] == [14, 14]


# Every uncaught error of the page, from its first script on.
ERRORS = "window.__errors = []; addEventListener('error', (e) => window.__errors.push(String(e.message)));"


def test_the_page_loads_from_the_trimmed_config(url):
    with page_at(url, init_script=ERRORS) as page:
        page.wait_for_selector("#upload input[type=file]", state="attached")
        # The tabs render after the upload box under load (CI saw 0 at once): wait for them, at most 30 s.
        page.get_by_role("tab", name="Attention").wait_for(state="attached", timeout=30_000)
        assert page.get_by_role("tab", name="Attention").count() == 1
        settled(page)  # every answer in: the page-load event's (open_link) too
        assert page.locator("#model input").input_value() and page.locator(".toast-body.error").count() == 0
        assert page.evaluate("window.__errors") == []
