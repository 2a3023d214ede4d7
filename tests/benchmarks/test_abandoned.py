"""Two abandoned attention-flow calls do not delay a third caller (issue 42), on a real server on
127.0.0.1 over plain HTTP (Gradio's /gradio_api/call/<name> REST), as benchmarks/abandoned.py runs it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from appserver import page_name, serving

ROOT = Path(__file__).resolve().parents[2]


def abandoned_module():
    spec = importlib.util.spec_from_file_location("abandoned", ROOT / "benchmarks" / "abandoned.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_abandoned_flows_stop_and_a_third_caller_is_answered(tiny16, tmp_path):
    ab = abandoned_module()
    with serving(tiny16) as (url, _):
        # The tiny ViT's flow graph (197 tokens, 2 layers): 197 max-flows, far longer than 2 s here.
        res = ab.run(url, page_name(tiny16), tmp_path, abandon_s=2.0, timeout=60.0, settle_s=30.0)
    assert res["relevance"]["outcome"] == "complete", res
    assert res["sweep"]["outcome"] == "complete", res
    # Seconds after the callers left, no flow runs or waits (both stopped), per /stats.
    assert res["flows_gone_after_s"] is not None and res["flows_gone_after_s"] < 10, res
    flows = [r for r in res["stats"]["recent"] if r["job"] == "attention flow"]
    assert len(flows) == 2 and all(r["outcome"].startswith(("stopped: the caller left", "not started")) for r in flows), res
    running = [r for r in flows if r["outcome"].startswith("stopped")]
    assert running and all(r["stop_s"] is not None and r["stop_s"] < 2.0 for r in running), res
