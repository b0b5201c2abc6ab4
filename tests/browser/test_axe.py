"""axe-core's WCAG checks on the book's pages: every page, folded and open, both schemes.

axe-core (``tests/node_modules``, installed by ``tests/run.sh`` from the npm
registry) is injected into the pages; without it these tests fail rather than
skip. Each page state is audited once (``Audits``), with every rule any test
here asserts on, and each test reads what decides its own assertion: axe was
57 % of the browser tests' time, run twice on the same states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.browser.pages import AXE, SCHEMES, Book, open_everything, open_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
#: The rules whose outcome a colour scheme can change. The schemes differ in colours only
#: (measured on ch05, all open: the same 3,377 elements, attributes and boxes, but for which of
#: Material's two twin palette toggles shows), so in the dark one these decide; the light
#: scheme's audit has every rule.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
#: What the traces put on a page (a chapter's or its payload page).
OURS = ".tr, .tr-prose, main .tr-payload"

# Every finding, with what each test filters it by: its impact, whether a WCAG rule made
# it, and whether it is in the trace markup.
RUN = """async ([context, wcag, rules, ours]) => {
  const only = rules ? {type: "rule", values: rules} : {type: "tag", values: [...wcag, "best-practice"]};
  const result = await axe.run(context || document, {runOnly: only, resultTypes: ["violations"]});
  return result.violations.flatMap(v => v.nodes.map(n => {
    const node = document.querySelector(n.target[0]);
    return {
      rule: `${v.id} (${v.impact}): ${n.target.join(" ")}`,
      why: n.failureSummary,
      impact: v.impact,
      wcag: v.tags.some(tag => wcag.includes(tag)),
      ours: !!(node && node.closest(ours)),
    };
  }));
}"""


@dataclass(frozen=True)
class Finding:
    """One node axe found wanting."""

    rule: str
    why: str
    impact: str
    wcag: bool
    ours: bool

    @property
    def serious(self) -> bool:
        return self.wcag and self.impact in ("serious", "critical")


@dataclass(frozen=True)
class Audit:
    """What axe found on one page in one scheme, by state, and what the payload page test reads."""

    states: dict[str, list[Finding]]
    payloads: tuple[int, int] = (0, 0)  # payload blocks in the main landmark, and in all
    background: str = ""


def rendered_in_full(page: Any) -> None:
    """Every scenario drawn, as each is once the reader nears it.

    Off screen, the browser skips a scenario (content-visibility: auto): it
    has no colours or boxes for axe to measure until it is drawn.
    """
    page.add_style_tag(content=".md-typeset .tr-scenario { content-visibility: visible !important; }")


def _run(page: Any, context: dict[str, list[str]] | None, rules: list[str] | None) -> list[Finding]:
    found = page.evaluate(RUN, [context, WCAG, rules, OURS])
    return [Finding(**finding) for finding in found]


class Audits:
    """axe's findings on the served book, audited once per page and scheme for every test that asks."""

    def __init__(self, browser: Any, book: Book) -> None:
        self.browser, self.book = browser, book
        self.done: dict[tuple[str, str], Audit] = {}

    def __call__(self, path: str, scheme: str = "light") -> Audit:
        if (path, scheme) not in self.done:
            self.done[path, scheme] = self._audit(path, scheme)
        return self.done[path, scheme]

    def _audit(self, path: str, scheme: str) -> Audit:
        rules = COLOUR_RULES if scheme == "dark" else None
        page = open_page(self.browser, self.book.url, f"/{path}", scheme).page
        rendered_in_full(page)
        page.add_script_tag(path=str(AXE))
        try:
            if path.endswith(".payloads.html"):
                # Where a payload link takes a reader without JavaScript: everything open.
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
                return Audit(
                    {"everything open": _run(page, None, rules)},
                    (page.locator("main .tr-payload").count(), page.locator(".tr-payload").count()),
                    page.evaluate("getComputedStyle(document.body).backgroundColor"),
                )
            # The whole page folded: the traces, and Material's header, navigation, code
            # listings and footer in the book's palette (docs/stylesheets/book.css).
            states = {"folded": _run(page, None, rules)}
            if page.locator(".tr").count():
                # Opening the traces changes nothing else: open, their markup is what is audited again.
                open_everything(page)
                states["everything open"] = _run(page, {"include": [".tr", ".tr-prose"]}, rules)
            return Audit(states)
        finally:
            page.context.close()


@pytest.fixture(scope="module")
def audits(browser: Any, book: Book) -> Audits:
    if not AXE.exists():
        pytest.fail(f"axe-core is missing ({AXE}): tests/run.sh installs it (npm ci --prefix tests).")
    return Audits(browser, book)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_page_meets_wcag_aa(audits: Audits, book: Book, scheme: str) -> None:
    # Serious and critical findings of the WCAG A and AA rules, on the whole page.
    checked = 0
    for path in book.pages:
        audit = audits(path, scheme)
        for state, found in audit.states.items():
            assert [f"{f.rule}: {f.why}" for f in found if f.serious] == [], f"{path}, {scheme}, {state}"
        checked += "everything open" in audit.states
    assert checked >= 17  # every chapter page
    # Where a payload link takes a reader without JavaScript: everything in one main landmark.
    audit = audits("traces/ch09_who_retries.payloads.html", scheme)
    in_main, blocks = audit.payloads
    assert in_main == blocks > 10
    [found] = audit.states.values()
    assert [f"{f.rule}: {f.why}" for f in found if f.serious] == [], f"the ch09 payload page, {scheme}"
    # In the reader's scheme: dark where the system is dark, as the book is.
    assert audit.background == ("rgb(30, 33, 41)" if scheme == "dark" else "rgb(255, 255, 255)"), scheme


def test_axe_finds_nothing_in_the_trace_markup_at_any_impact(audits: Audits) -> None:
    # Every impact, minor included, best practices too; what axe finds in the theme's own
    # markup is listed apart, not failed. ch05: a live reply's Markdown, rendered, with its raw text.
    theirs: set[str] = set()
    for path in (
        "ch05_loop_endings/",
        "ch09_who_retries/",
        "ch11_streaming/",
        "ch16_evaluation/",
        "traces/ch09_who_retries.payloads.html",
        "traces/ch05_loop_endings.payloads.html",
    ):
        audit = audits(path)
        assert audit.states, path
        for state, found in audit.states.items():
            ours = [f.rule for f in found if f.ours]
            assert ours == [], f"{path}, {state}: {ours[:5]}"
            theirs |= {f.rule for f in found if not f.ours}
    print("axe, the theme's own markup:", *sorted(theirs), sep="\n  ")
