"""A deep link's values are shown literally in the page's "About this link" note, in Chromium: no
element is created from them (no <script>, <img>, <a>), nothing they name is fetched or run, and
the note shows their characters as typed."""

from __future__ import annotations

from urllib.parse import urlencode, urlparse

from browser import page_at, shot

HOSTILE = {
    "tab": "<script>window.vvPwned=1</script>",
    "<img src=x onerror=window.vvPwned=2>": "1",  # an unknown parameter: its NAME is shown
    "example": "[a](http://evil.example)",
    "head": "![i](http://evil.example/i.png)",
    "mask": "<a href=http://evil.example>go</a>",
    "mode": "www.evil.example",
}


def test_hostile_link_values_create_no_element_and_show_literally(url):
    fetched: list[str] = []
    with page_at(url + "?" + urlencode(HOSTILE)) as page:
        page.on("request", lambda r: fetched.append(r.url))
        page.wait_for_selector("#notice:has-text('About this link')", timeout=60_000)
        note = page.locator("#notice")
        shot(page, "link_literal_note", full_page=False)
        made = page.evaluate("""() => {
            const n = document.querySelector('#notice');
            return {tags: [...n.querySelectorAll('img, a, script, iframe, svg, object, embed')].map(e => e.outerHTML),
                    onerror: document.querySelectorAll('[onerror]').length,
                    pwned: window.vvPwned === undefined ? null : window.vvPwned};
        }""")
        assert made == {"tags": [], "onerror": 0, "pwned": None}, made
        text = note.inner_text()
        for name, value in HOSTILE.items():
            shown = value if name in ("tab", "example", "head", "mask", "mode") else name
            assert shown in text, (name, value, text)  # shown as typed, every character
        # nothing named by a value was asked for (the page's own calls carry the query string: not those)
        named = [u for u in fetched if "evil" in urlparse(u).netloc or urlparse(u).path.endswith(("/x", "i.png"))]
        assert not named, named
