"""What ch09 draws at load and what waits, in headless Chromium (issue 23's Measure).

The figures are ``benchmarks/page_weight.py --browser``'s; these tests hold the
page to what made them. Material restyles the whole page five or six times as it
sets itself up, so every element drawn at load costs five or six times over, and
every task at ``DOMContentLoaded`` delays it:

* a timeline turn is one element, its stretches background layers that tile it
  in the order its time was spent, each at least 0.4 % wide;
* at ``DOMContentLoaded`` traces.js applies a remembered view (before the first
  frame) and leaves its buttons, colours and anchors to a task after it; with every
  run shown (nothing remembered, a chapter with both modes), it writes nothing
  then, its switches and view waiting a task too;
* a payload block not filled in yet is its link alone;
* a scenario below the first screen is not drawn until ``DOMContentLoaded`` is
  over (templates/later.html.j2), though the browser would draw it within one
  and a half screens of it: ch09's first, at 390 px.

The book as published (``built_book``, tests/conftest.py), served from 127.0.0.1;
every other request is refused.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import playwright.sync_api as playwright_api
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-sync"]
PAGE = "/ch09_who_retries/"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        # `?slow`: the page's first scenario, then a pause, then the rest, as a slow network delivers
        # a page: the browser draws its first frame before it has the rest.
        path, _, query = self.path.partition("?")
        if query != "slow":
            return super().do_GET()
        page = (Path(self.directory) / path.strip("/") / "index.html").read_bytes()
        cut = page.index(b"</section>", page.index(b"<script>(function (page)")) + len(b"</section>")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page[:cut])
        self.wfile.flush()
        time.sleep(0.5)
        self.wfile.write(page[cut:])


@pytest.fixture(scope="module")
def url(built_book: tuple[Path, str]) -> Iterator[str]:
    site, _ = built_book
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@contextlib.contextmanager
def opened(
    browser: Any, url: str, width: int = 390, before: str = "", height: int = 844, at: str = "", script: bool = True
) -> Iterator[Any]:
    """ch09 at ``width`` x ``height`` px (``at``: a fragment), ``before`` run ahead of the page's own scripts."""
    context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=script)
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url) else route.abort())
    page = context.new_page()
    if before:
        page.add_init_script(before)
    page.goto(url + PAGE + at, wait_until="load")
    try:
        yield page
    finally:
        context.close()


# Each turn's layers as the browser computed them: where each starts and how wide it is,
# in % of the turn (a layer w % wide placed at p % starts at p * (100 - w) / 100 %).
LAYERS = """() => [...document.querySelectorAll(".tr-tl-turn")].map(turn => {
  const style = getComputedStyle(turn);
  const widths = style.backgroundSize.split(",").map(size => parseFloat(size));
  const places = style.backgroundPositionX.split(",").map(place => parseFloat(place));
  const kinds = turn.style.backgroundImage.match(/--tr-[a-z]+/g).map(name => name.slice(5));
  const legend = [...turn.closest(".tr-timeline").querySelectorAll(".tr-key")].map(key => key.classList[1].slice(3));
  const swatches = [...turn.closest(".tr-timeline").querySelectorAll(".tr-key")]
    .map(key => getComputedStyle(key, "::before").backgroundImage);
  return {
    children: turn.childElementCount, kinds, legend, swatches,
    layers: widths.map((w, i) => [places[i] * (100 - w) / 100, w]),
  };
})"""


@pytest.mark.parametrize("width", [390, 1280])
def test_each_timeline_turn_is_one_element_its_layers_tiling_it_in_order(browser: Any, url: str, width: int) -> None:
    with opened(browser, url, width) as page:
        turns = page.evaluate(LAYERS)
    assert len(turns) >= 8
    for turn in turns:
        assert turn["children"] == 0
        assert len(turn["layers"]) == len(turn["kinds"])
        edge = 0.0
        for start, size in turn["layers"]:
            assert start == pytest.approx(edge, abs=0.02), turn  # no gap, no overlap
            assert size >= 0.39, turn  # a stretch too short to see is still there
            edge = start + size
        assert edge == pytest.approx(100, abs=0.02), turn
        assert set(turn["kinds"]) <= set(turn["legend"]), turn
        assert all("gradient" in swatch for swatch in turn["swatches"]), turn  # each key has its paint
    # The mock run of service_is_busy: the client's wait sits between two visits to the service.
    first = turns[0]["kinds"]
    assert "waited" in first
    assert "service" in first[: first.index("waited")]
    assert "service" in first[first.index("waited") :]


# Before the page's scripts: what the page holds at the end of DOMContentLoaded (a window
# listener runs after the document's, Material's and traces.js's among them) and at the
# first frame after it.
WATCH = """
window.addEventListener("DOMContentLoaded", () => {
  const chapter = document.querySelector(".tr-chapter");
  window.__atDcl = {show: chapter.getAttribute("data-show"), print: !!document.querySelector(".tr-print"),
                    all: !!document.querySelector(".tr-all"),
                    switches: document.querySelectorAll(".tr-switch:not([hidden])").length};
  requestAnimationFrame(() => { window.__firstFrame = chapter.getAttribute("data-show"); });
});
"""


def test_the_view_applies_at_domcontentloaded_and_the_buttons_come_a_task_later(browser: Any, url: str) -> None:
    remembered = 'try { localStorage.setItem("primer.traces.show", "live"); } catch (e) {}'
    with opened(browser, url, before=remembered + WATCH) as page:
        page.wait_for_selector(".tr-print")
        page.wait_for_selector(".tr-all", state="attached")  # the first is a mock run's, hidden
        at_dcl = page.evaluate("window.__atDcl")
        assert at_dcl == {"show": "live", "print": False, "all": False, "switches": 5}
        page.wait_for_function("window.__firstFrame !== undefined")
        assert page.evaluate("window.__firstFrame") == "live"
        # The remembered view is drawn: no mock run of the chapter shows.
        assert page.locator(".tr-run[data-mode='mock']:visible").count() == 0


def test_with_every_run_shown_nothing_is_written_at_domcontentloaded(browser: Any, url: str) -> None:
    with opened(browser, url, before=WATCH) as page:
        page.wait_for_selector(".tr-print")
        assert page.evaluate("window.__atDcl") == {"show": None, "print": False, "all": False, "switches": 0}
        # A task later, as with a view remembered: the switches shown, pressed for both modes.
        assert page.locator(".tr-chapter").first.get_attribute("data-show") == "mock live"
        switch = page.locator(".tr-head .tr-switch")
        assert switch.is_visible()
        assert switch.locator(".tr-mode").evaluate_all("bs => bs.map(b => b.getAttribute('aria-pressed'))") == [
            "true",
            "true",
        ]
        assert page.locator(".tr-run[data-mode='mock']:visible").count() > 0
        assert page.locator(".tr-run[data-mode='live']:visible").count() > 0


def test_a_run_is_its_link_alone_until_it_opens(browser: Any, url: str) -> None:
    # A closed run's turns and calls (most of what its page parsed at load) are on the payload page.
    run = "ch09_who_retries-service_is_busy-mock"
    model = f"{run}-turn-1-model"
    with opened(browser, url, 1280) as page:
        stub = page.locator(f"#{run} > a.tr-load")
        assert stub.evaluate("e => [e.childElementCount, e.id, e.nextElementSibling]") == [0, "", None]
        assert stub.evaluate("e => e.hash") == f"#{run}-body"
        assert page.locator(f"[id='{model}']").count() == 0
        page.evaluate("id => { document.getElementById(id).open = true; }", run)
        page.wait_for_function("id => document.getElementById(id + '-body')?.tagName === 'DIV'", arg=model)
        body = page.locator(f"[id='{model}-body']")
        assert body.get_attribute("data-search-exclude") == ""
        assert body.locator("pre").count() > 0  # the request and response, filled in from the payload page


# Which scenarios wait, and whether each is drawn, at the end of DOMContentLoaded; and whether a
# frame came before it (this callback, asked for first, runs first in the first frame).
AT_DCL = """
requestAnimationFrame(() => { window.__framed = true; });
window.addEventListener("DOMContentLoaded", () => {
  window.__framedAtDcl = !!window.__framed;
  window.__scenarios = [...document.querySelectorAll(".tr-scenario")].map(s => ({
    top: s.getBoundingClientRect().top, waits: getComputedStyle(s).contentVisibility == "hidden",
    drawn: s.querySelector(".tr-run").checkVisibility({contentVisibilityAuto: true}),
  }));
});
"""
DRAWN = """[...document.querySelectorAll(".tr-scenario .tr-run")]
  .map(run => run.checkVisibility({contentVisibilityAuto: true}))"""


@pytest.mark.parametrize("height", [844, 2400])
def test_a_scenario_below_the_first_screen_is_drawn_only_after_domcontentloaded(
    browser: Any, url: str, height: int
) -> None:
    with opened(browser, url, before=AT_DCL, height=height) as page:
        scenarios = page.evaluate("window.__scenarios")
        framed = page.evaluate("window.__framedAtDcl")
        page.wait_for_function("!document.querySelector('[data-tr-later]')")
        drawn = page.evaluate(DRAWN)
    first = scenarios[0]
    # Below the screen it waits; on it (a tall screen), it is drawn from the first frame on (before
    # the first frame nothing is painted, and it may still wait).
    assert first["waits"] is not (first["top"] <= height and framed)
    assert first["drawn"] is not first["waits"]
    assert all(not s["drawn"] for s in scenarios if s["waits"])
    assert drawn[0] is True  # then drawn, as near the screen as it is


def test_nothing_waits_on_a_reload_or_without_javascript(browser: Any, url: str) -> None:
    with opened(browser, url, before=AT_DCL) as page:
        assert page.evaluate("window.__scenarios.map(s => s.waits)") == [True] * 4  # a first visit, at 390 px
        page.wait_for_function("!document.querySelector('[data-tr-later]')")
        page.reload(wait_until="load")  # the browser puts the reader back where they were: all drawn for it
        assert page.evaluate("window.__scenarios.map(s => s.waits)") == [False] * 4
    with opened(browser, url, script=False) as page:
        assert page.locator("[data-tr-later]").count() == 0
        page.locator(".tr-scenario").first.scroll_into_view_if_needed()
        assert page.evaluate(DRAWN)[0] is True


def test_a_scenario_that_arrives_after_the_first_frame_waits_too(browser: Any, url: str) -> None:
    # On a slow network the first frame comes before the page's later scenarios: below the
    # screen like the rest, they wait as the rest do (they were drawn at every restyle).
    with opened(browser, url, before=AT_DCL, at="?slow") as page:
        scenarios = page.evaluate("window.__scenarios")
        page.wait_for_function("!document.querySelector('[data-tr-later]')")
        drawn = page.evaluate(DRAWN)
    assert [s["waits"] for s in scenarios] == [True] * 4
    assert not any(s["drawn"] for s in scenarios)
    assert drawn[0] is True


def test_nothing_waits_when_a_link_names_a_fold(browser: Any, url: str) -> None:
    target = "ch09_who_retries-service_is_busy-mock-turn-1"
    with opened(browser, url, before=AT_DCL, at=f"#{target}") as page:
        assert not any(s["waits"] for s in page.evaluate("window.__scenarios"))
        # The turn is on the payload page: it opens once its run is filled in from there.
        page.wait_for_function("id => document.getElementById(id)?.open === true", arg=target)
