"""The public API through gradio_client, as another program meets it: the documented endpoints
answer with plain JSON, and every one refuses a model off the page's list (before loading it)
and values that would make one request expensive."""

from __future__ import annotations

import numpy as np
import pytest
from gradio_client import Client, handle_file

from page.endpoints import PUBLIC_ENDPOINTS
from appserver import page_name, serving
from tiny import EXAMPLES

PHOTO = str(EXAMPLES / "chelsea.jpg")


@pytest.fixture(scope="module")
def served(tiny16):
    with serving(tiny16) as (url, wb):
        yield Client(url, verbose=False), wb


def photo_args(name: str) -> dict:
    """The photo argument of each endpoint that takes one."""
    return {} if name == "positions" else {"photo": handle_file(PHOTO)}


@pytest.mark.parametrize("bad_model", ["/tmp", "../", "openai/clip-vit-large-patch14",
                                       "random:vit-large-patch16-384", "", 42])
@pytest.mark.parametrize("endpoint", [e for e in PUBLIC_ENDPOINTS if e != "stats"])  # stats: no model
def test_every_endpoint_refuses_a_model_off_the_list_before_loading_it(served, endpoint, bad_model, tiny_dirs):
    client, wb = served
    if bad_model == "/tmp":
        bad_model = str(tiny_dirs["p32"])  # a real checkpoint on the server, but not on the page's list
    with pytest.raises(Exception, match="Choose a model from the page's list") as e:
        client.predict(**photo_args(endpoint), model=bad_model, api_name=f"/{endpoint}")
    assert "Traceback" not in str(e.value)
    assert list(wb._models) == [app_model_id(wb)], "nothing else was loaded"


def app_model_id(wb) -> str:
    return next(iter(wb._models))


@pytest.mark.parametrize("endpoint, kwargs, message", [
    ("attention", dict(layer=0), "layer must be"),
    ("attention", dict(layer=3), "layer must be"),
    ("attention", dict(layer=1.5), "layer must be"),
    ("attention", dict(head=3), "head must be"),
    ("attention", dict(head="median"), "head must be"),
    ("attention", dict(mode="sideways"), "mode must be"),
    ("attention", dict(query_row=14, query_col=0), "query_row must be"),
    ("rollout", dict(discard=1.0), "discard must be"),
    ("rollout", dict(fusion="sum"), "fusion must be"),
    ("positions", dict(row=-1), "row must be"),
    ("positions", dict(col=10 ** 9), "col must be"),
    ("predict", dict(dx=33), "dx must be"),
    ("predict", dict(dy=-10 ** 6), "dy must be"),
    ("predict", dict(mask=list(range(197))), "mask must be a list of at most 196"),
    ("predict", dict(mask=[196]), "mask index must be"),
    ("predict", dict(mask=list(range(196))), "at least one patch"),
    ("predict", dict(fill="mirror"), "fill"),
    ("predict", dict(mask_mode="erase"), "mask mode"),
    ("relevance", dict(class_index=7), "class_index must be"),
    ("relevance", dict(method="AttnLRP"), "method must be one of"),
])
def test_out_of_range_values_are_refused_in_the_backend(served, tiny16, endpoint, kwargs, message):
    client, _ = served
    with pytest.raises(Exception, match=f"(?i){message}"):
        client.predict(**photo_args(endpoint), model=page_name(tiny16), **kwargs, api_name=f"/{endpoint}")


def test_attention_map_equals_the_cached_analysis(served, tiny16):
    """The JSON map is [CLS]'s row of that layer and head, rows of the patch grid."""
    client, wb = served
    r = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), layer=2, head=2, api_name="/attention")
    a = vizvit_analysis(tiny16)
    expected = a.attentions[1, 1, 0, 1:].reshape(14, 14).numpy()
    assert np.allclose(np.array(r["map"]), expected, atol=1e-6)
    assert r["uniform_level"] == pytest.approx(1 / 197)


def vizvit_analysis(vm):
    import vizvit

    return vizvit.analyze(vm, vizvit.load_image(PHOTO))


def test_predict_under_a_mask_and_the_rest_answer_json(served, tiny16):
    client, _ = served
    r = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), dx=3, mask=[0, 5, 5], api_name="/predict")
    assert r["mask"] == [0, 5] and len(r["top5"]) == 5 and r["top5"] != r["unperturbed_top5"]
    roll = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), api_name="/rollout")
    assert np.array(roll["maps"]).shape == (2, 14, 14)
    pos = client.predict(model=page_name(tiny16), row=3, col=4, api_name="/positions")
    assert np.array(pos["similarity"])[3, 4] == pytest.approx(1.0, abs=1e-5)  # a position with itself
    sweep = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), api_name="/sweep")
    assert [row["k"] for row in sweep["rows"]] == list(range(33))
    rel = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), api_name="/relevance")
    assert np.array(rel["map"]).shape == (14, 14) and "2021b" in rel["method"]
    from vizvit import maps
    a = vizvit_analysis(tiny16)
    for method in ("gradient rollout", "LeGrad", "Grad-CAM"):  # the same maps as the Attention tab's menu
        r = client.predict(photo=handle_file(PHOTO), model=page_name(tiny16), class_index=2, method=method,
                           api_name="/relevance")
        assert np.allclose(np.array(r["map"]), maps.class_map(method, tiny16, a, 2), atol=1e-5), method

