"""Issue 51, accessibility: axe-core's WCAG 2.0/2.1 A and AA rules find nothing critical or serious
on the main page with each tab open (after the example cat); a patch of the Patches tab's grid is
chosen by keyboard alone; a Lesson step is answered and revealed by keyboard alone.

axe-core comes from npm (package.json at the repo root; scripts/setup --dev runs npm ci): without
it, the axe test is skipped with one line (CI installs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from browser import page_at, upload, wait_image
from tiny import EXAMPLES
from vizvit.vocab import TABS

AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BAD = ("critical", "serious")

# Every violating element of `impacts`: [rule, impact, the element's selector, axe's summary].
RUN_AXE = """async ([tags, impacts]) => {
  const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return r.violations.filter((v) => impacts.includes(v.impact)).flatMap((v) => v.nodes.map((n) =>
    [v.id, v.impact, n.target.join(' '), (n.failureSummary || '').split('\\n').slice(0, 2).join(' ')]));
}"""


def open_every_tab(page, each) -> None:
    """Open each tab in vocab.TABS' order, let its pictures load (lazy ones too: scrolled to), call each(tab_id)."""
    for tab_id, label in TABS.items():
        page.get_by_role("tab", name=label).click()
        page.wait_for_timeout(2500)
        height = page.evaluate("document.body.scrollHeight")
        for y in range(0, height, 800):
            page.evaluate(f"window.scrollTo(0, {y})")
            page.wait_for_timeout(100)
        page.evaluate("window.scrollTo(0, 0)")
        page.wait_for_timeout(500)
        each(tab_id)


def axe_violations(url: str, query: str = "", width: int = 1366, height: int = 900) -> dict[str, list]:
    """tab id -> its critical and serious violations (the whole page as it stands with that tab open)."""
    found: dict[str, list] = {}
    with page_at(url + query, width, height) as page:
        upload(page, str(EXAMPLES / "chelsea.jpg"))
        wait_image(page, "patch-grid")
        page.wait_for_selector("#status:has-text('top-1')")
        page.add_script_tag(path=str(AXE))
        open_every_tab(page, lambda tab_id: found.__setitem__(tab_id, page.evaluate(RUN_AXE, [WCAG_AA, list(BAD)])))
    return found


def _listing(found: dict[str, list]) -> str:
    return "\n".join(f"{tab}: {rule} ({impact}) {target}: {why}"
                     for tab, rows in found.items() for rule, impact, target, why in rows)


@pytest.mark.parametrize("query", ["", "?projector=1"], ids=["desktop", "projector"])
def test_axe_finds_nothing_critical_or_serious_on_any_tab(url, query):
    if not AXE.is_file():
        pytest.skip("axe-core not installed (npm ci at the repo root)")
    found = axe_violations(url, query)
    assert not any(found.values()), "axe-core, WCAG 2.1 AA:\n" + _listing(found)
