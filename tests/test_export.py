"""`python -m vizvit export` writes summary.json, arrays.npz and the figures."""

from __future__ import annotations

import json
import re

import numpy as np
from tiny import ROOT, run_export

# A row of docs/export.md's table of arrays.npz that says when its key is written: a key absent from an
# export must have one (a family's, a flag's or a classifier's), or the table names a key no export writes.
WHEN = re.compile(r"only|absent|with `--|CLIP|SigLIP|BEiT")


def documented_arrays() -> dict[str, str]:
    """docs/export.md's table of arrays.npz: each key -> its row (a row may name several keys)."""
    rows = {}
    for line in (ROOT / "docs" / "export.md").read_text().splitlines():
        if line.startswith("| `"):
            for key in re.findall(r"`([a-z0-9_]+)`", line.split("|")[1]):
                rows[key] = line
    return rows


def check_documented(arrays) -> None:
    """What a user reads in docs/export.md is what arrays.npz holds: every key written has its row (map_attnlrp
    had none), every row of a key not written says when it is, and deletion_curve_maps' row names every map."""
    rows = documented_arrays()
    assert set(arrays.files) <= set(rows), sorted(set(arrays.files) - set(rows))
    unsaid = [k for k in set(rows) - set(arrays.files) if not WHEN.search(rows[k])]
    assert not unsaid, f"docs/export.md rows that never say when they are written: {sorted(unsaid)}"
    maps_row = rows["deletion_curve_maps"].split("|")[3]
    missing = [str(m) for m in arrays["deletion_curve_maps"] if str(m) not in maps_row]
    assert not missing, f"deletion_curve_maps' row does not name {missing}"


def test_export_cli_writes_everything(tiny_dirs, tmp_path):
    r = run_export(tiny_dirs["p32"], tmp_path, "--mask", "3,17,40", "--mask-mode", "black")
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["geometry"]["grid"] == [7, 7] and summary["num_parameters"] > 0
    assert len(summary["top5"]) == 5 and summary["timings_s"]["forward"] > 0
    # the command line loads the model before the export: its time was read as ~1e-6 s
    t = summary["timings_s"]
    assert t["load_model"] > 1e-3 and t["total"] > t["load_model"] + t["forward"]
    arrays = np.load(tmp_path / "arrays.npz")
    assert arrays["input_view"].shape == (224, 224, 3) and arrays["input_view"].dtype == np.uint8
    assert arrays["probs"].shape == (7,) and arrays["probs"].dtype == np.float32
    assert abs(arrays["probs"].sum() - 1) < 1e-5
    assert arrays["masked_probs"].shape == (7,)
    assert not np.allclose(arrays["masked_probs"], arrays["probs"])
    for name in summary["figures"]:
        assert (tmp_path / name).stat().st_size > 100
    # Every tab's pictures and charts, ready for slides.
    expect = {"patch_grid", "sequence_strip", "top5_chart", "embedding_filters_pca", "token_scatter_last_layer",
              "attention_heads_grid", "rollout_strip", "attention_distance_chart", "relevance_top1",
              "pos_similarity_grid", "cls_pos_similarity_chart", "shift_sweep_chart", "deletion_chart",
              "insertion_chart"}
    assert expect <= {n[:-4] for n in summary["figures"]}, expect - {n[:-4] for n in summary["figures"]}
    assert summary["charts_as_png"] and "plotly" in (tmp_path / "charts.html").read_text()[:5_000_000]
    assert set(summary["arrays"]) == set(arrays.files)
    check_documented(arrays)
    assert summary["methods"]["discard_mode"] == "per row" and "2021b" in summary["methods"]["relevance"]


def test_export_cli_bad_model_is_a_clean_error(tmp_path, capsys):
    """In this process (any other exception than the command's own error would raise here)."""
    from tiny import EXAMPLES

    from vizvit.__main__ import main

    assert main(["export", str(EXAMPLES / "coffee.jpg"), "--model", str(tmp_path / "nothing-here"), "--device", "cpu",
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_export_inside_the_model_keys_and_no_charts_as_png(tiny_dirs, tmp_path, capsys):
    """logit_lens (L+1, C) whose last row is probs; head_importance (L, H); ablated_probs with --ablate.
    In this process, with --no-png: the charts only in charts.html, the pictures still as PNG."""
    from tiny import EXAMPLES

    from vizvit.__main__ import main

    args = ["export", str(EXAMPLES / "coffee.jpg"), "--model", str(tiny_dirs["p32"]), "--device", "cpu", "--quiet",
            "--no-png"]
    assert main(args + ["--out", str(tmp_path), "--ablate", "2.1,1.2", "--ablate-mode", "mean"]) == 0
    arrays = np.load(tmp_path / "arrays.npz")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert arrays["logit_lens"].shape == (3, 7) and arrays["logit_lens"].dtype == np.float32
    np.testing.assert_array_equal(arrays["logit_lens"][-1], arrays["probs"])
    assert arrays["head_importance"].shape == (2, 2) and arrays["head_importance"].dtype == np.float32
    assert arrays["ablated_probs"].shape == (7,) and not np.allclose(arrays["ablated_probs"], arrays["probs"])
    assert summary["ablation"]["heads"] == "1.2,2.1" and summary["ablation"]["mode"] == "mean"
    check_documented(arrays)
    charts = {"top5_chart", "attention_distance_chart", "shift_sweep_chart", "deletion_chart", "contest_chart"}
    pictures = {"patch_grid", "attention_heads_grid", "rollout_strip", "relevance_top1"}
    written = {p.stem for p in tmp_path.glob("*.png")}
    assert pictures <= written and not charts & written, written
    assert {n[:-4] for n in summary["figures"]} == written and summary["charts_as_png"] is False
    html = (tmp_path / "charts.html").read_text()
    assert all(f"<h2>{n}</h2>" in html for n in charts), [n for n in charts if f"<h2>{n}</h2>" not in html]
    capsys.readouterr()
    assert main(args + ["--out", str(tmp_path / "bad"), "--ablate", "3.1"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_export_progress_goes_to_stderr_and_the_json_alone_to_stdout(tiny_dirs, tmp_path, capsys, monkeypatch):
    """In-process `python -m vizvit export`: a bar per stage on stderr (the costly readings named), stdout
    exactly the JSON summary; --quiet draws none. Charts as PNG (a browser) are not this test's subject."""
    from tiny import EXAMPLES

    from vizvit.__main__ import main
    from vizvit.pictures import figures

    monkeypatch.setattr(figures, "charts_png", lambda charts, folder: [])
    args = ["export", str(EXAMPLES / "coffee.jpg"), "--model", str(tiny_dirs["p32"]), "--device", "cpu"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    out, err = capsys.readouterr()
    assert set(json.loads(out)) == {"model", "top5", "timings_s", "figures"}
    for stage in ("forward", "shift sweep", "contest maps", "contest views (black fill)", "contest views (blur fill)",
                  "head importance", "arrays", "figures"):
        assert f"{stage}: 100%" in err, (stage, err[-2000:])
    assert main(args + ["--out", str(tmp_path / "b"), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) and "contest views" not in err and "shift sweep" not in err
    np.testing.assert_array_equal(np.load(tmp_path / "a" / "arrays.npz")["contest_auc"],
                                  np.load(tmp_path / "b" / "arrays.npz")["contest_auc"])
