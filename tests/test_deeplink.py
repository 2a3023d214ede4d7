"""Deep-link parsing: good links select the view, bad values fall back with a notice."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from vizvit import deeplink
from vizvit.deeplink import DeepLink, fit, literal, parse, to_query
from vizvit.model.models import Geometry

EXAMPLES = ["/x/assets/examples/astronaut.jpg", "/x/assets/examples/chelsea.jpg"]
MODELS = ["google/vit-base-patch16-224", "random:vit-base-patch16-224"]
TABS = ["patches", "embeddings", "attention", "positions", "experiments"]
B16 = Geometry(image_size=(224, 224), patch_size=16, grid=(14, 14), num_prefix_tokens=1, num_layers=12,
               num_heads=12, hidden_size=768)


def go(**params):
    link, notes = parse(params, EXAMPLES, MODELS, TABS)
    link, more = fit(link, B16)
    return link, notes + more


def test_lecturer_link_layer6_head3_of_the_cat():
    link, notes = go(example="chelsea", tab="attention", layer="6", head="3")
    assert notes == []
    assert link == DeepLink(example=EXAMPLES[1], tab="attention", layer=6, head=3)


def test_shift_mask_model_and_fusion():
    link, notes = go(model="random:vit-base-patch16-224", dx="-8", dy="32", mask="40,3,17,3", head="max")
    assert notes == [] and (link.dx, link.dy, link.mask, link.head) == (-8, 32, (3, 17, 40), "max")


def test_bad_values_fall_back_with_notices():
    link, notes = go(example="dog", model="evil/remote", tab="nope", layer="13", head="99", dx="33",
                     dy="abc", mask="1,x", colour="red")
    assert link == DeepLink()
    assert len(notes) == 9, notes
    assert any("Layer 13" in n for n in notes) and any("Head 99" in n for n in notes)
    link, notes = go(mask="5,196,200")
    assert link.mask == (5,) and "196" in notes[0]
    link, notes = go(layer="0")
    assert link.layer is None and notes


def test_query_patch_direction_and_mode():
    link, notes = go(tab="attention", query="4,7", direction="column", mode="rollout")
    assert notes == [] and (link.query, link.direction, link.mode) == ((4, 7), "column", "rolled out")
    # Rows and columns count from 0, as the page shows them: (13, 13) is the last of 14×14.
    assert go(query="13,13")[0].query == (13, 13)
    for bad in ("14,0", "0,-1", "4", "4,x", "1,2,3"):
        link, notes = go(query=bad)
        assert link.query is None and len(notes) == 1 and "[CLS]" in notes[0], bad
    link, notes = go(direction="diagonal", mode="cooked")
    assert (link.direction, link.mode) == (None, None) and len(notes) == 2


def test_round_trip():
    link = DeepLink(example=EXAMPLES[1], model=MODELS[1], tab="attention", layer=6, head=3, dx=4, mask=(1, 2),
                    query=(4, 7), direction="column", mode="rolled out")
    q = to_query(link)
    assert q.startswith("?example=chelsea&model=random:vit-base-patch16-224&tab=attention&layer=6&head=3")
    params = dict(kv.split("=") for kv in q[1:].split("&"))
    assert go(**params) == (link, [])
    assert to_query(DeepLink()) == ""
    assert to_query(DeepLink(direction="row", mode="raw")) == "", "defaults are left out"
    assert to_query(DeepLink(fill="edge", mask_mode="drop")) == "", "the Experiments tab's defaults too"


def test_the_experiments_border_fill_and_mask_mode_travel_in_a_link():
    link = DeepLink(example=EXAMPLES[1], tab="experiments", dx=5, dy=-7, fill="wrap", mask=(3, 17), mask_mode="blur")
    q = to_query(link)
    assert q == "?example=chelsea&tab=experiments&dx=5&dy=-7&fill=wrap&mask=3,17&mask_mode=blur"
    assert go(**dict(kv.split("=") for kv in q[1:].split("&"))) == (link, [])
    link, notes = go(fill="mirror", mask_mode="erase")
    assert (link.fill, link.mask_mode) == (None, None) and len(notes) == 2
    assert "edge, wrap, constant" in notes[0] and "drop, mask, black, mean, blur" in notes[1]


def test_plan_resolves_head_choice_and_falls_back_on_an_unloadable_model():
    from vizvit.deeplink import plan
    from vizvit.vocab import ONE_HEAD

    def geometry_of(m):
        if m.startswith("google/"):
            raise ValueError("offline")
        return B16

    p = plan({"model": "google/vit-base-patch16-224", "layer": "6", "head": "3", "projector": "1"},
             EXAMPLES, MODELS, TABS, "random:vit-base-patch16-224", geometry_of)
    assert p.model == "random:vit-base-patch16-224" and "offline" in p.notice_text
    assert (p.link.layer, p.link.head, p.show, p.link.projector) == (6, 3, ONE_HEAD, True)
    p = plan({"head": "min"}, EXAMPLES, MODELS, TABS, "random:vit-base-patch16-224", geometry_of)
    assert p.show == "min" and p.notices == ()


def test_ablated_heads_travel_in_links_counted_from_one(tiny16):
    from vizvit.model.ablation import Ablation

    g = tiny16.geometry
    link, notes = deeplink.parse({"ablate": "1.2,2.1", "ablate_mode": "mean"}, [], [], [])
    assert link.ablate == ((0, 1), (1, 0)) and link.ablate_mode == "mean" and not notes
    q = deeplink.to_query(deeplink.fit(link, g)[0])
    assert "ablate=1.2,2.1" in q and "ablate_mode=mean" in q
    far, notes = deeplink.fit(deeplink.parse({"ablate": "1.2,9.9"}, [], [], [])[0], g)
    assert far.ablate == ((0, 1),) and "9.9" in notes[0]
    bad, notes = deeplink.parse({"ablate": "three.five", "ablate_mode": "half"}, [], [], [])
    assert bad.ablate == () and bad.ablate_mode is None and len(notes) == 2
    # a whole layer, as the page's box takes it ("7 = all of layer 7"): every head of it once the model is
    # known (a walk-through: the box took "12", the link dropped it); a layer the model lacks, said
    whole, notes = deeplink.fit(deeplink.parse({"ablate": "1.2,2"}, [], [], [])[0], g)
    assert whole.ablate == ((0, 1), (1, 0), (1, 1)) and not notes
    assert "ablate=1.2,2.1,2.2" in deeplink.to_query(whole)
    none, notes = deeplink.fit(deeplink.parse({"ablate": "9"}, [], [], [])[0], g)
    assert none.ablate == () and notes == ["Layer 9 does not exist (1–2); nothing was switched off for it."]
    two, notes = deeplink.fit(deeplink.parse({"ablate": "1.1,8,9"}, [], [], [])[0], g)
    assert two.ablate == ((0, 0),) and notes == ["Layers 8, 9 do not exist (1–2); nothing was switched off for them."]
    v = deeplink.of_view(None, "m", "inside", 1, 1, "mean", None, "row", "raw", 0, 0, (), False,
                         Ablation(((1, 1),), "zero"))
    assert deeplink.to_query(v).endswith("ablate=2.2")


def test_a_lesson_step_on_an_example_or_on_an_uploaded_photos_key():
    sha1 = "04df4a330a958e484458f444e156302526270816"
    link, notes = parse(dict(lesson="1", step="5", photo=sha1.upper()), EXAMPLES, MODELS, [*TABS, "lesson"])
    assert notes == [] and (link.lesson, link.step, link.photo, link.tab) == (True, 5, sha1, "lesson")
    assert to_query(link) == f"?lesson=1&step=5&photo={sha1}"  # the tab is implied by lesson=1
    assert to_query(deeplink.lesson_link(3, EXAMPLES[1], sha1)) == "?example=chelsea&lesson=1&step=3"
    link, notes = parse(dict(lesson="maybe", step="0", photo="../etc/passwd"), EXAMPLES, MODELS, [*TABS, "lesson"])
    assert (link.lesson, link.step, link.photo) == (False, None, None) and len(notes) == 3
    assert any("40 hex digits" in n for n in notes) and any("step number" in n for n in notes)


def test_compare_names_model_b_from_its_own_list_and_round_trips_on_the_compare_tab():
    twins = [*MODELS, "random:vit-tiny-patch16-224"]
    link, notes = parse({"tab": "compare", "compare": "random:vit-tiny-patch16-224"}, EXAMPLES, MODELS,
                        [*TABS, "compare"], compare_models=twins)
    assert notes == [] and link.compare == "random:vit-tiny-patch16-224"
    assert to_query(link) == "?tab=compare&compare=random:vit-tiny-patch16-224"
    link, notes = parse({"compare": "evil/remote"}, EXAMPLES, MODELS, TABS, compare_models=twins)
    assert link.compare is None and "compare=evil/remote" in notes[0]
    view = dict(example=None, model=MODELS[0], layer=12, head=1, show="mean", query=None, direction="row",
                mode="raw", dx=0, dy=0, mask=(), projector=False, compare=MODELS[1])
    assert "compare=" in to_query(deeplink.of_view(tab="compare", **view))
    assert "compare=" not in to_query(deeplink.of_view(tab="attention", **view))  # kept on its own tab only



def test_the_copied_link_of_an_uploaded_photo_names_it_by_its_key_and_an_example_by_its_name():
    """A walk-through: "Copy link to this view" on an upload read ?model=...&tab=compare&layer=12&head=mean and
    opened with no photo. An upload goes by its key (photo=, as the Lesson's and the Camera's links);
    an example keeps its name (example=), the key left out."""
    sha1 = "04df4a330a958e484458f444e156302526270816"
    view = dict(model=MODELS[0], layer=12, head=1, show="mean", query=None, direction="row", mode="raw", dx=0,
                dy=0, mask=(), projector=False, compare=MODELS[1], cursor=(12.0, "mean"))
    q = to_query(deeplink.of_view(example=None, photo=sha1, tab="compare", **view))
    assert q == f"?model={MODELS[0]}&tab=compare&compare={MODELS[1]}&layer=12&head=mean&photo={sha1}", q
    assert go(**dict(kv.split("=", 1) for kv in q[1:].split("&")))[0].photo == sha1, "the link reopens the key"
    q = to_query(deeplink.of_view(example=EXAMPLES[1], photo=sha1, tab="attention", **view))
    assert q.startswith("?example=chelsea&") and "photo=" not in q, q
    assert "photo=" not in to_query(deeplink.of_view(example=None, tab="attention", **view)), "no photo: no key"

HOSTILE_NUMBERS = ["13", "-1", "nan", "NaN", "inf", "1.5", "1e3", "abc", "9" * 5000, "-" + "9" * 40, "0x3", " "]


def test_the_embeddings_depth_travels_in_a_link_from_0_and_a_hostile_one_is_refused_with_a_notice():
    """A student's copied link on the Embeddings tab lost its depth l (0 = after the embedding stage)."""
    for d in (0, 5, 12):
        link = DeepLink(example=EXAMPLES[1], tab="embeddings", depth=d)
        q = to_query(link)
        assert q == f"?example=chelsea&tab=embeddings&depth={d}", q
        assert go(**dict(kv.split("=") for kv in q[1:].split("&"))) == (link, [])
    for bad in HOSTILE_NUMBERS:
        link, notes = go(tab="embeddings", depth=bad)
        assert link == DeepLink(tab="embeddings") and len(notes) == 1, (bad[:20], notes)
        assert notes[0].startswith(("Depth ", "'depth=")), notes
    assert go(depth="13")[1] == ["Depth 13 does not exist (0–12); showing depth 0."]
    assert go(depth="-1")[1] == ["Depth -1 does not exist (0–12); showing depth 0."]
    view = dict(example=None, model=MODELS[0], layer=12, head=1, show="mean", query=None, direction="row",
                mode="raw", dx=0, dy=0, mask=(), projector=False, depth=3.0)
    assert to_query(deeplink.of_view(tab="embeddings", **view)).endswith("&depth=3")
    assert "depth=" not in to_query(deeplink.of_view(tab="attention", **view)), "kept on its own tab only"
    assert to_query(deeplink.of_view(tab="embeddings", **(view | {"depth": 0}))).endswith("&depth=0")


B16_BIG = Geometry(image_size=(224, 224), patch_size=16, grid=(14, 14), num_prefix_tokens=1, num_layers=24,
                   num_heads=16, hidden_size=1024)  # a ViT-L/16 as model B: deeper, more heads than A


def test_the_compare_tabs_head_travels_in_a_link_over_both_models_heads():
    """On the Compare tab layer= and head= are its cursor's: over the deeper model's layers and the larger
    head count (A: 12 layers x 12 heads; B: 24 x 16), a fusion or a head number; beyond them, a notice."""
    from vizvit.deeplink import plan

    models = [*MODELS, "b/large"]
    geometry = {"b/large": B16_BIG}

    def open_(**params):
        return plan(params, EXAMPLES, models, [*TABS, "compare"], MODELS[0], lambda m: geometry.get(m, B16))

    p = open_(tab="compare", compare="b/large", layer="20", head="16")
    assert (p.link.layer, p.link.head, p.notices) == (20, 16, ())
    assert open_(tab="compare", compare="b/large", head="max").link.head == "max"
    for bad, said in (("17", "Head 17 does not exist (1–16); showing the mean of the heads."),
                      ("0", "Head 0 does not exist (1–16); showing the mean of the heads.")):
        p = open_(tab="compare", compare="b/large", head=bad)
        assert p.link.head is None and p.notices == (said,), p.notices
    p = open_(tab="compare", compare="b/large", layer="25")
    assert p.link.layer is None and p.notices == ("Layer 25 does not exist (1–24); showing the last layer.",)
    for bad in ("nan", "-3", "9" * 5000, "2.5", "mean;"):
        p = open_(tab="compare", compare="b/large", head=bad)
        assert p.link.head is None and len(p.notices) == 1, (bad[:20], p.notices)
    # elsewhere, or without a model B, A's own ranges hold
    assert open_(tab="attention", compare="b/large", head="16").link.head is None
    assert open_(tab="compare", head="16").link.head is None
    # what the page's Compare tab shows -> the link: its cursor's depth and head, not the Attention tab's
    view = dict(example=None, model=MODELS[0], layer=6, head=2, show="one head", query=None, direction="row",
                mode="raw", dx=0, dy=0, mask=(), projector=False, compare="b/large")
    q = to_query(deeplink.of_view(tab="compare", cursor=(20.0, "16"), **view))
    assert q.endswith("tab=compare&compare=b/large&layer=20&head=16"), q
    assert to_query(deeplink.of_view(tab="compare", cursor=(3.0, "min"), **view)).endswith("&layer=3&head=min")
    assert to_query(deeplink.of_view(tab="attention", cursor=(3.0, "min"), **view)).endswith("&layer=6&head=2")


# ---- formerly tests/test_deeplink_literal.py
# A deep link's values reach the page only as literal text: the "About this link" notices are
# Markdown, and no character of a link's value may make HTML, a link or an image there. Rendered
# here by markdown-it (CommonMark, an independent renderer; the page's own, in Chromium, is
# tests/page/test_link_literal.py).

# The literal tests' own lists, apart from the module's EXAMPLES, MODELS and TABS above.
LIT_EXAMPLES = ["assets/examples/chelsea.jpg"]
LIT_MODELS = ["random:vit-base-patch16-224"]
LIT_TABS = ["attention", "compare"]
HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[a](http://evil.example)",
           "![i](http://evil.example/x.png)", "http://evil.example", "www.evil.example", "a@evil.example",
           "<http://evil.example>", "&lt;b&gt;", "**bold** _em_ `code`", "$x^2$", "\\<i>", "# heading",
           "line\n<b>two</b>", "[x]: http://evil.example"]


def rendered(markdown: str) -> str:
    return MarkdownIt("commonmark", {"linkify": False}).render(markdown)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_value_renders_as_its_own_characters_and_nothing_else(value):
    out = rendered(f"- '{literal(value)}'")
    assert out.startswith("<ul>\n<li>") and not re.search(r"<(?!/?(ul|li)>)", out), out  # no tag but the list's
    text = html.unescape(re.sub(r"</?(ul|li)>", "", out)).strip()
    assert text == f"'{value}'".replace("\n", " "), text


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("param", ["tab", "example", "layer", "head", "query", "mask", "ablate", "mode", "lesson",
                                   "step", "photo", "projector", "model", "compare", "direction", "ablate_mode",
                                   "dx", "depth"])
def test_every_notice_of_a_hostile_link_is_plain_text(param, value):
    _, notices = parse({param: value, value: "1"}, LIT_EXAMPLES, LIT_MODELS, LIT_TABS)  # a hostile name too
    assert len(notices) == 2, notices
    for n in notices:
        out = rendered(f"- {n}")
        assert not re.search(r"<(?!/?(ul|li|p)>)", out), out
        assert "evil" not in out or "evil.example" in html.unescape(out)


def test_a_long_value_is_cut():
    assert literal("x" * 500).startswith("x" * 48) and len(literal("x" * 500)) < 60


def test_a_model_that_fails_in_a_link_is_named_without_the_servers_paths():
    from vizvit.deeplink import plan
    from vizvit.model.models import Geometry

    def geometry_of(m):
        if m == "local-cut":
            raise ValueError("Cannot load weights of '/srv/models/local-cut': SafetensorError.")
        return Geometry(image_size=(224, 224), patch_size=16, grid=(14, 14), num_prefix_tokens=1, num_layers=2,
                        num_heads=2, hidden_size=8)

    p = plan({"model": "local-cut"}, LIT_EXAMPLES, ["local-cut", "random:vit-base-patch16-224"], LIT_TABS,
             "random:vit-base-patch16-224", geometry_of)
    assert p.model == "random:vit-base-patch16-224"
    assert "local\\-cut" in p.notice_text and "/srv" not in p.notice_text and "Safetensor" not in p.notice_text


def test_a_step_past_the_lesson_is_said_and_shows_the_last_step():
    """A walk-through: ?lesson=1&step=99 showed step 13 of 13 with no word (step=0 earns a notice)."""
    from vizvit.deeplink import plan

    p = plan({"lesson": "1", "step": "99"}, EXAMPLES, MODELS, [*TABS, "lesson"], "m", lambda m: B16, n_steps=13)
    assert p.link.step == 13
    assert p.notices == ("The lesson has 13 steps: step 99 does not exist; showing the last step.",)
    p = plan({"lesson": "1", "step": "13"}, EXAMPLES, MODELS, [*TABS, "lesson"], "m", lambda m: B16, n_steps=13)
    assert (p.link.step, p.notices) == (13, ())


def test_copy_link_takes_any_number_a_rest_caller_sends():
    """'Copy link to this view' is an event a REST caller may send anything: a slider's nan passes Gradio's
    range check, and int(nan) raised in of_view (the page's 'Something went wrong', a traceback in the log).
    A value that is no whole number is left out of the link, as the link's own reader leaves it out."""
    nan, inf = float("nan"), float("inf")
    view = dict(example=None, model=MODELS[0], head=2, show="one head", query=None, direction="row",
                mode="raw", mask=(), projector=False)
    for bad in (nan, inf, -inf, "x", None):
        for tab in ("attention", "embeddings", "compare"):
            link = deeplink.of_view(tab=tab, layer=bad, dx=bad, dy=bad, depth=bad, cursor=(bad, bad), **view)
            q = to_query(link)
            assert "nan" not in q and "inf" not in q and "layer=" not in q and "depth=" not in q, (bad, tab, q)
            assert (link.dx, link.dy) == (0, 0), (bad, tab)
        link = deeplink.of_view(tab="attention", layer=3, dx=0, dy=0, **(view | {"head": bad}))
        assert link.head is None and to_query(link).endswith("&layer=3"), (bad, to_query(link))
        link = deeplink.of_view(tab="compare", layer=3, dx=0, dy=0, cursor=(5.0, "x" if bad is None else str(bad)),
                                **view)
        assert (link.layer, link.head) == (5, "mean"), (bad, link)
    # whole numbers as before
    link = deeplink.of_view(tab="embeddings", layer=4.0, dx=3.0, dy=-2.0, depth=2.0, **view)
    assert (link.layer, link.dx, link.dy, link.depth, link.head) == (4, 3, -2, 2, 2)


@pytest.mark.parametrize("query", ["layer=" + "9" * 4000, "depth=" + "9" * 4000, "head=" + "9" * 4000,
                                   "dx=" + "9" * 4000, "query=" + "9" * 4000 + ",1",
                                   "mask=" + ",".join(map(str, range(200, 3000))),
                                   "ablate=" + ",".join(f"{l}.1" for l in range(30, 3000))])
def test_a_links_numbers_are_cut_in_its_notices(query):
    """A stranger's link wrote out a 4,000-digit number, or 2,800 patches, whole in the page's notice (16 kB
    of digits); now a few, cut, and how many in all."""
    name, value = query.split("=", 1)
    _, notes = go(tab="embeddings", **{name: value})
    assert notes and all(len(n) < 400 for n in notes), [len(n) for n in notes]
