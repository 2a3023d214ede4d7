"""The Attention tab's class menu in a real browser: type part of a label outside the top-5, pick
it, and the class-specific map is that class's (issue 43: class maps for any class)."""

from __future__ import annotations

import pytest
from browser import page_at, shot, upload_and_open, wait_image
from tiny import EXAMPLES

import vizvit


@pytest.mark.slow
def test_a_class_outside_the_top5_is_found_by_typing_and_explained(url, tiny16):
    a = vizvit.analyze(tiny16, vizvit.load_image(str(EXAMPLES / "chelsea.jpg")))
    top = {p.index for p in a.top5}
    other = next(i for i in range(len(tiny16.labels)) if i not in top)
    label = tiny16.labels[other]  # "thing 6": the tiny model's labels
    with page_at(url) as page:
        upload_and_open(page, str(EXAMPLES / "chelsea.jpg"), "Attention")
        wait_image(page, "attn-main")
        box = page.locator("#attn-class input")
        box.click()
        box.fill("")  # the top-1's name was in the box
        box.press_sequentially(label)  # the menu filters its options as one types
        options = page.get_by_role("option")
        page.wait_for_function("() => document.querySelectorAll('[role=option]').length === 1")
        names = options.all_inner_texts()
        assert len(names) == 1 and names[0].startswith(label + " ("), names
        options.first.click()
        page.get_by_role("button", name="Compute the map").click()
        wait_image(page, "attn-relevance")
        page.wait_for_function("([l]) => document.querySelector('#attn-relevance-text').innerText.includes(l)",
                               arg=[f"Relevance for {label} (class {other})"])
        shot(page, "attention_class_search", full_page=False)
