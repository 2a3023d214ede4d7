"""The page package: app.py is launch settings only, the tab list is one list, and every tab has
one shape (one on_show, handlers answering component -> value dicts, one views call)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import gradio as gr
import pytest
from tiny import EXAMPLES, ROOT

from page import kit, shell
from page.tabs import PAGES
from vizvit import deeplink, vocab
from vizvit.session import PhotoKey, Workbench
from vizvit.views import VIEWS

APP = ROOT / "app.py"
NOT_TABS = {"__init__", "common", "header", "flip", "books", "layout"}  # vizvit/views modules shared by the tabs
# (books: the page's drawing data; layout: the Attention pictures' pixels)


def test_app_py_is_launch_settings_only():
    src = APP.read_text(encoding="utf-8")
    assert len(src.splitlines()) < 150, "app.py: launch settings only (the page lives in page/)"
    tree = ast.parse(src)
    built = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and isinstance(n.func.value, ast.Name) and n.func.value.id == "gr" and n.func.attr[:1].isupper()]
    assert not built, f"app.py builds gradio components: {[ast.unparse(b)[:60] for b in built]}"
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert defs <= {"launch_kwargs", "configure_queue", "main"}, defs


def test_only_the_page_and_app_py_import_gradio():
    hits = [p.relative_to(ROOT).as_posix() for p in (ROOT / "vizvit").rglob("*.py")
            if any(isinstance(n, (ast.Import, ast.ImportFrom))
                   and any((a.name if isinstance(n, ast.Import) else (n.module or "")).startswith("gradio")
                           for a in n.names)
                   for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert hits == [], f"vizvit must never import gradio: {hits}"


def test_the_tab_list_is_one_list_with_a_view_and_a_page_module_per_tab():
    ids = vocab.TAB_IDS
    assert ids == tuple(vocab.TABS) and len(set(ids)) == len(ids)
    assert tuple(v.__name__.rsplit(".", 1)[-1] for v in VIEWS) == ids
    assert tuple(PAGES) == ids
    for tab_id in ids:
        assert callable(getattr(PAGES[tab_id], "build", None)), f"page/tabs/{tab_id}.py lacks build(ctx, tab)"
    # No module left over that the list does not name (a tab half added, or half removed).
    views = {p.stem for p in (ROOT / "vizvit" / "views").glob("*.py")} - NOT_TABS
    pages = {p.stem for p in (ROOT / "page" / "tabs").glob("*.py")} - {"__init__"}
    assert views == set(ids) and pages == set(ids), (views ^ set(ids), pages ^ set(ids))


@pytest.fixture(scope="module")
def built(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    return wb, shell.build_demo(wb, tiny16.id)


def test_the_built_page_has_exactly_the_listed_tabs_in_order(built):
    _, demo = built
    tabs = [b for b in demo.blocks.values() if isinstance(b, gr.Tab)]
    assert [(t.id, t.label) for t in tabs] == list(vocab.TABS.items())


def test_building_the_page_decodes_no_example(tiny16, monkeypatch):
    seen = []
    monkeypatch.setattr(shell, "load_image", lambda p: seen.append(p))
    shell._examples_by_sha1.cache_clear()
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    shell.build_demo(wb, tiny16.id)
    assert seen == [], "build_demo decoded the examples (they are decoded on the first copied link)"
    shell._examples_by_sha1.cache_clear()


def _tabs_ctx(wb: Workbench, model_id: str) -> kit.Ctx:
    """Every tab built into one Blocks, the way shell.build_demo builds them."""
    with gr.Blocks():
        ctx = kit.Ctx(wb=wb, key=gr.State(None), tab=gr.State("patches"), status=gr.Markdown(),
                      default_model=model_id,
                      header=dict(model=gr.Dropdown([model_id], value=model_id), labels=gr.Textbox(),
                                  template=gr.Textbox(), upload=gr.File()))
        with gr.Tabs():
            for tab_id, label in vocab.TABS.items():
                with gr.Tab(label, id=tab_id) as t:
                    PAGES[tab_id].build(ctx, t)
    return ctx


def test_every_tab_registers_one_on_show_and_the_link_controls_by_name(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ctx = _tabs_ctx(wb, tiny16.id)
    assert [tab_id for tab_id, *_ in ctx.shows] == list(vocab.TAB_IDS)
    assert sorted(ctx.links) == sorted(deeplink.VIEW_CONTROLS)


def test_every_on_show_answers_a_dict_of_its_outputs_with_and_without_a_photo(tiny16):
    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    ctx = _tabs_ctx(wb, tiny16.id)
    key = PhotoKey(tiny16.id, wb.add_photo(str(EXAMPLES / "chelsea.jpg")))
    for k in (None, key):
        for tab_id, fn, ins, outs in ctx.shows:
            values = [k if c is ctx.key else c.value for c in ins]
            res = fn(*values)
            assert isinstance(res, dict), f"{tab_id}: on_show answered {type(res).__name__}, not a dict"
            assert res and all(any(c is o for o in outs) for c in res), f"{tab_id}: a key outside its outputs"
            if k is not None:  # a photo: every output of the tab gets a value
                assert len(res) == len(outs), f"{tab_id}: {len(outs) - len(res)} outputs left unset"


def test_the_dispatch_refuses_a_tuple_and_a_second_on_show():
    with gr.Blocks():
        a, b = gr.Markdown(), gr.Markdown()
        with gr.Tabs():
            with gr.Tab("x", id="x") as t:
                pass
    entries = [("x", lambda v: (v, v), [a], [a, b])]
    with pytest.raises(TypeError, match="dict"):
        kit._open_tab(entries, [a], [a, b], "x", ("1",))
    entries = [("x", lambda v: {a: v}, [a], [a, b])]
    out = kit._open_tab(entries, [a], [a, b], "x", ("1",))
    assert out[0] == "1" and isinstance(out[1], dict) and out[1].get("__type__") == "update"  # b: skipped
    ctx = kit.Ctx(wb=None, key=None, tab=None, status=None, default_model="")  # type: ignore[arg-type]
    ctx.shows.append(("x", lambda: {}, [], []))
    with pytest.raises(ValueError, match="twice"):
        ctx.on_show(t, lambda: {}, [], [])


def _returns(path: Path) -> list[ast.AST]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.value for n in ast.walk(tree) if isinstance(n, (ast.Return, ast.Yield)) and n.value is not None]


@pytest.mark.parametrize("module", ["page/shell.py", *(f"page/tabs/{t}.py" for t in vocab.TAB_IDS)])
def test_no_handler_answers_a_positional_tuple(module):
    """Values are sent by component (a dict), so no list of outputs is counted by hand."""
    tuples = [ast.unparse(v)[:70] for v in _returns(ROOT / module)
              if isinstance(v, ast.Tuple) or (isinstance(v, ast.BinOp) and isinstance(v.left, ast.Tuple))]
    assert not tuples, f"{module}: {tuples}"


@pytest.mark.parametrize("tab_id", vocab.TAB_IDS)
def test_each_view_has_params_and_a_page_and_one_show_shape(tab_id):
    import dataclasses
    import inspect

    view = importlib.import_module(f"vizvit.views.{tab_id}")
    params = [c for n, c in vars(view).items() if n.endswith("Params") and dataclasses.is_dataclass(c)]
    pages = [c for n, c in vars(view).items() if n.endswith("Page") and dataclasses.is_dataclass(c)]
    assert len(params) == 1 and callable(getattr(params[0], "from_controls", None)), tab_id
    assert len(pages) == 1, tab_id
    for cls in (*params, *pages):
        assert cls.__dataclass_params__.frozen, f"{cls.__name__} must be frozen"
    sig = inspect.signature(view.show)
    assert list(sig.parameters)[:2] == ["ph", "p"] and len(sig.parameters) == 2, f"{tab_id}.show{sig}"
    assert params[0]().__class__ is params[0]  # every control has a default: the page opens on them


def test_costly_jobs_share_two_slots_and_nothing_else_is_held_to_them(tiny16):
    """The sweep, the curves and head importance (page and API) run at most two at once, for all
    visitors together; every other event keeps the queue's wider limit (issue 28)."""
    import app
    from page import jobs
    from vizvit.session import Workbench

    wb = Workbench(device="cpu")
    wb.add_model(tiny16)
    demo = app.configure_queue(app.build_demo(wb, tiny16.id))
    costly = {fn.name for fn in demo.fns.values() if fn.concurrency_id == jobs.COSTLY["concurrency_id"]}
    assert {"sweep", "curves", "importance"} <= costly, costly
    # Two slots, held in vizvit.service.jobs (issue 42: a class map's listener answers at once beside them).
    assert all(fn.concurrency_limit == jobs.COSTLY_THREADS for fn in demo.fns.values() if fn.name in costly)
    assert jobs.JOBS.jobs.slots == 2
    assert "analyze" not in costly and "new_photo" not in costly


MAX_FUNCTION_LINES = 80  # issue 44: a page function that long is a builder doing a handler's work
# Builders not yet split (issue 44, still to do): each may only shrink, and no other may grow past the limit.
NOT_YET_SPLIT: dict[str, int] = {}  # every builder is split (issue 44); a new long one is not to be listed here


def function_lengths(root: Path) -> dict[str, int]:
    """'path:name' -> lines from its def (decorators not counted) to its last line, for every function and
    closure of every .py file under root (a nested one counts alone, and inside its parent too)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{path.relative_to(root.parent).as_posix()}:{n.name}"
                out[name] = max(out.get(name, 0), n.end_lineno - n.lineno + 1)
    return out


def test_the_length_count_counts_from_the_def_to_the_last_line_nested_ones_too(tmp_path):
    (tmp_path / "page").mkdir()
    (tmp_path / "page" / "m.py").write_text("@deco\ndef f(\n    a,\n):\n"
                                            "    def g():\n        return 1\n\n    return g\n")
    assert function_lengths(tmp_path / "page") == {"page/m.py:f": 7, "page/m.py:g": 2}


def test_no_function_in_page_is_over_80_lines():
    lengths = function_lengths(ROOT / "page")
    long = {k: n for k, n in lengths.items() if n > MAX_FUNCTION_LINES and n > NOT_YET_SPLIT.get(k, 0)}
    assert not long, f"split these into named handlers and small builders (≤ {MAX_FUNCTION_LINES} lines): {long}"
    assert {k: n for k, n in lengths.items() if k in NOT_YET_SPLIT and n <= MAX_FUNCTION_LINES} == {}, \
        "split now: take it out of NOT_YET_SPLIT"
