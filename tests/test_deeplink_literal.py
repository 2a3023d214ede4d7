"""A deep link's values reach the page only as literal text: the "About this link" notices are
Markdown, and no character of a link's value may make HTML, a link or an image there. Rendered
here by markdown-it (CommonMark, an independent renderer; the page's own, in Chromium, is
tests/page/test_link_literal.py)."""

from __future__ import annotations

import html
import re

import pytest
from markdown_it import MarkdownIt

from vizvit.deeplink import literal, parse

EXAMPLES = ["assets/examples/chelsea.jpg"]
MODELS = ["random:vit-base-patch16-224"]
TABS = ["attention", "compare"]
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
                                   "dx"])
def test_every_notice_of_a_hostile_link_is_plain_text(param, value):
    _, notices = parse({param: value, value: "1"}, EXAMPLES, MODELS, TABS)  # a hostile name too
    assert len(notices) == 2, notices
    for n in notices:
        out = rendered(f"- {n}")
        assert not re.search(r"<(?!/?(ul|li|p)>)", out), out
        assert "evil" not in out or "evil.example" in html.unescape(out)


def test_a_long_value_is_cut():
    assert literal("x" * 500).startswith("x" * 48) and len(literal("x" * 500)) < 60


def test_a_model_that_fails_in_a_link_is_named_without_the_servers_paths():
    from vizvit.deeplink import plan
    from vizvit.models import Geometry

    def geometry_of(m):
        if m == "local-cut":
            raise ValueError("Cannot load weights of '/srv/models/local-cut': SafetensorError.")
        return Geometry(image_size=(224, 224), patch_size=16, grid=(14, 14), num_prefix_tokens=1, num_layers=2,
                        num_heads=2, hidden_size=8)

    p = plan({"model": "local-cut"}, EXAMPLES, ["local-cut", "random:vit-base-patch16-224"], TABS,
             "random:vit-base-patch16-224", geometry_of)
    assert p.model == "random:vit-base-patch16-224"
    assert "local\\-cut" in p.notice_text and "/srv" not in p.notice_text and "Safetensor" not in p.notice_text
