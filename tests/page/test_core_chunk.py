"""Gradio's core chunk, served patched (page/core_chunk.py): the patch applies to the pinned Gradio,
gives every node of this page the names Gradio's own method gives (both run in node), and is served
as Gradio serves its assets. The page on the patched chunk: tests/page/test_fresh_links.py,
tests/page/test_shell.py and every other browser test (the shared server serves it)."""

from __future__ import annotations

import gzip
import json
import logging
import re
import subprocess
import urllib.request
from pathlib import Path

import gradio
from browser import page_at

from page import core_chunk, shell
from vizvit.session import Workbench

ROOT = Path(__file__).resolve().parents[2]

# Both methods, as methods of two bare classes, over the same nodes and dependencies (stdin: JSON).
# A node is what the method reads and writes of Gradio's: {id, props: {shared_props}}. The patched
# method runs twice over the nodes: a second layout pass, after the dependencies were changed in
# place, must not read the first pass's Map.
NODE_SCRIPT = r"""
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const Original = eval("(class {" + input.original + "})");
const Patched = eval("(class {" + input.patched + "})");
function pass(tree, ids, deps) {
  const out = {};
  for (const id of ids) {
    const node = {id, props: {shared_props: {}}};
    out[id] = tree.find_attached_events(node, deps).props.shared_props.attached_events;
  }
  return out;
}
(async () => {
  const deps = input.dependencies, original = new Original(), patched = new Patched();
  const first = [pass(original, input.ids, deps), pass(patched, input.ids, deps)];
  await Promise.resolve();
  deps.push({targets: [[input.ids[0], "vizvit_added"]]}, ...deps.slice(0, 3));
  const second = [pass(original, input.ids, deps), pass(patched, input.ids, deps)];
  process.stdout.write(JSON.stringify({first, second}));
})();
"""


def both_methods(ids: list[int], dependencies: list[dict]) -> dict:
    """Gradio's method and the patched one, per node id, in node; see NODE_SCRIPT."""
    data = dict(original=core_chunk.ORIGINAL, patched=core_chunk.PATCHED, ids=ids, dependencies=dependencies)
    done = subprocess.run(["node", "-e", NODE_SCRIPT], input=json.dumps(data), capture_output=True, text=True,
                          check=True, timeout=60)
    return json.loads(done.stdout)


def layout_ids(node: dict) -> list[int]:
    return [node["id"]] + [i for child in node.get("children", []) for i in layout_ids(child)]


def test_the_patch_applies_to_the_pinned_gradio():
    pin = re.search(r"^gradio==([\w.]+)", (ROOT / "requirements.txt").read_text(), re.M)
    assert pin and gradio.__version__ == pin.group(1)
    source = core_chunk.chunk_file().read_text(encoding="utf-8")
    patched = core_chunk.patch(source)
    assert patched is not None, f"Gradio {gradio.__version__}'s {core_chunk.CHUNK} no longer holds the method"
    for original, replacement in core_chunk.PATCHES:
        assert original not in patched and patched.count(replacement) == 1
    growth = sum(len(replacement) - len(original) for original, replacement in core_chunk.PATCHES)
    assert len(patched) - len(source) == growth  # nothing else changed
    assert len(core_chunk.routes()) == 1


def test_the_patched_chunk_parses(tmp_path):
    chunk = tmp_path / "core.mjs"
    chunk.write_text(core_chunk.patch(core_chunk.chunk_file().read_text(encoding="utf-8")) or "", encoding="utf-8")
    subprocess.run(["node", "--check", str(chunk)], check=True, capture_output=True, timeout=60)


def test_another_gradio_gets_its_own_file_and_one_log_line(tmp_path, monkeypatch, caplog):
    other = tmp_path / core_chunk.CHUNK
    monkeypatch.setattr(core_chunk, "chunk_file", lambda: other)
    for text in (None, "find_attached_events(e,t){return e}", core_chunk.ORIGINAL * 2,
                 core_chunk.ORIGINAL, core_chunk.FIND_ORIGINAL + core_chunk.ORIGINAL * 2):
        if text is not None:
            other.write_text(text, encoding="utf-8")
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="vizvit.app"):
            assert core_chunk.routes() == []
        assert len(caplog.records) == 1 and "served unpatched" in caplog.records[0].getMessage()


def test_the_names_of_a_constructed_case():
    """A node named twice by one event counts it once (its first target); empty names are dropped."""
    deps = [{"targets": [[1, "click"], [1, "change"], [2, ""], [2, "input"]]},
            {"targets": [[2, None], [3, "change"]]},
            {"targets": [[1, "submit"], [3, "change"]]},
            {"targets": []}]
    result = both_methods([1, 2, 3, 4], deps)
    original, patched = result["first"]
    assert original == {"1": ["click", "submit"], "2": [], "3": ["change", "change"], "4": []}
    assert patched == original
    again = {"1": ["click", "submit", "vizvit_added", "click", "submit"], "2": [], "3": ["change"] * 4, "4": []}
    assert result["second"][1] == result["second"][0] == again


def test_the_patched_method_names_this_pages_events_as_gradios(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    config = shell.build_demo(wb, tiny16.id).get_config_file()
    ids = layout_ids(config["layout"])
    assert len(ids) > 300 and len(config["dependencies"]) > 150  # the page, not a stub
    ids += [c["id"] for c in config["components"] if c["id"] not in ids] + [10**6]
    result = both_methods(ids, json.loads(json.dumps(config["dependencies"])))
    for original, patched in (result["first"], result["second"]):
        assert patched == original
    assert sum(map(len, result["first"][0].values())) > 100  # names to compare: most events name a target


# Gradio's get_state (with its Z) and the patched one, as methods of two bare classes over the same
# tree (stdin: JSON {original, patched, z, layout, ids}); the patched class gets Z too, for its
# fallback. The tree is changed as Gradio changes it, within one synchronous run and across runs:
# children replaced (rerender), a node's id changed, a new root (reload). At each step every id's
# node must be the very node Z finds (or null for both), and get_state's answers must agree.
FIND_SCRIPT = r"""
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const Z = eval("(" + input.z + ")");
const make = body => eval("(class { #s = new Map; root; " + body + " })");
const Original = make(input.original), Patched = make(input.patched);
const tree = n => ({id: n.id, props: {props: {value: "v" + n.id}}, children: (n.children || []).map(tree)});
let steps = 0;
const failures = [];
async function check(original, patched, ids, label) {
  for (const id of ids) {
    const want = Z(original.root, id), got = patched.vizvit_find(id);
    if (got !== Z(patched.root, id) || (want === null) !== (got === null)) failures.push([label, id]);
    const [a, b] = [original.get_state(id), patched.get_state(id)];
    if (JSON.stringify(await a) !== JSON.stringify(await b)) failures.push([label, id, "state"]);
  }
  steps++;
}
(async () => {
  const original = new Original(), patched = new Patched(), ids = input.ids;
  original.root = patched.root = tree(input.layout);
  await check(original, patched, ids, "first");
  await check(original, patched, ids, "again");
  // Within one run: a subtree's children replaced by new nodes (a rerender), then an id changed.
  const find = id => Z(patched.root, id);
  for (const id of ids) patched.vizvit_find(id);  // the index of this run, built before the changes
  const host = ids.map(find).find(n => n !== patched.root && n.children.length > 1), moved = host.children;
  host.children = [tree({id: 10 ** 6, children: []}), ...moved.map(n => tree({id: n.id, children: []}))];
  for (const id of [...ids, 10 ** 6]) if (find(id) !== patched.vizvit_find(id)) failures.push(["rerender", id]);
  const renamed = find(input.layout_ids[input.layout_ids.length - 1]);
  renamed.id = -7;
  for (const id of [...ids, -7]) if (find(id) !== patched.vizvit_find(id)) failures.push(["renamed", id]);
  steps++;
  // A new root (reload), looked up in the same run and the next; one more node, last in preorder,
  // has the id of one before it (Z finds the first).
  original.root = patched.root = tree(input.layout);
  patched.root.children.push(tree({id: input.layout_ids[2], children: []}));
  await check(original, patched, [...ids, -7, 10 ** 6], "reload");
  process.stdout.write(JSON.stringify({steps, failures}));
})();
"""


def test_the_patched_get_state_finds_this_pages_nodes_as_gradios(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    config = shell.build_demo(wb, tiny16.id).get_config_file()
    source = core_chunk.chunk_file().read_text(encoding="utf-8")
    z = re.search(r"function Z\(e,t\)\{.*?return null\}", source).group(0)  # Gradio's search, as the chunk has it
    in_layout = layout_ids(config["layout"])
    assert len(in_layout) > 300 and len(set(in_layout)) == len(in_layout)
    ids = in_layout + [c["id"] for c in config["components"] if c["id"] not in in_layout] + [10**7]
    data = dict(original=core_chunk.FIND_ORIGINAL, patched=core_chunk.FIND_PATCHED, z=z, layout=config["layout"],
                ids=ids, layout_ids=in_layout)
    done = subprocess.run(["node", "-e", FIND_SCRIPT], input=json.dumps(data), capture_output=True, text=True,
                          check=True, timeout=60)
    assert json.loads(done.stdout) == {"steps": 4, "failures": []}


def test_the_chunk_is_served_patched_as_gradio_serves_its_assets(url):
    def get(path: str, encoding: str) -> tuple[dict, bytes]:
        request = urllib.request.Request(url.rstrip("/") + path, headers={"Accept-Encoding": encoding})
        with urllib.request.urlopen(request, timeout=30) as response:
            return {k.lower(): v for k, v in response.headers.items()}, response.read()

    own = re.search(r"assets/(index-[\w-]+\.js)", get("/", "identity")[1].decode()).group(1)
    for encoding, name in (("gzip, deflate, br", "br"), ("gzip", "gzip")):
        ours, body = get(core_chunk.PATH, encoding)
        gradios, _ = get("/assets/" + own, encoding)
        assert ours["content-encoding"] == gradios["content-encoding"] == name
        for header in ("content-type", "vary", "cache-control"):
            assert ours.get(header) == gradios.get(header), header
        assert ours["etag"] and ours["last-modified"]
    ours, body = get(core_chunk.PATH, "gzip")
    served = gzip.decompress(body).decode()
    assert all(replacement in served for _, replacement in core_chunk.PATCHES)


def test_the_page_loads_the_chunk_from_the_patched_route(url):
    """The browser asks for the chunk at the route's path (not another URL of the same file), so the
    page and every browser test here run on the patched text."""
    with page_at(url) as page:
        loaded = page.evaluate("performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)")
        assert page.locator("#upload input[type=file]").count() == 1
    assert core_chunk.PATH in loaded
