"""The trace pages in a real browser: a small Material book built here, served on 127.0.0.1.

Headless Debian Chromium through Playwright. The book is built with the
extension given the tests' ``FixtureSource`` (mock runs, live runs rebuilt
from the recorded provider traffic, the hostile corpus), Material's instant
navigation on, and the same palettes as the book. Every request that does not
go to the local server is refused, so nothing here reaches another host.
"""

from __future__ import annotations

import functools
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

playwright_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
SCREENS = Path("/tmp/screens")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

MKDOCS_YML = """\
site_name: Trace book test
site_url: http://127.0.0.1/
theme:
  name: material
  font: false
  features: [navigation.instant, content.code.copy]
  palette:
    - media: "(prefers-color-scheme: light)"
      scheme: default
      primary: teal
      accent: amber
      toggle: {icon: material/weather-night, name: Switch to dark mode}
    - media: "(prefers-color-scheme: dark)"
      scheme: slate
      primary: teal
      accent: amber
      toggle: {icon: material/weather-sunny, name: Switch to light mode}
plugins: [search]
extra_css: [assets/traces.css]
extra_javascript: [assets/traces.js]
nav: [index.md, ch05.md, ch09.md, hostile.md]
"""

PAGES = {
    "index.md": "# Home\n\n[A turn of arguments_are_wrong](ch09.md#ch09_who_retries-arguments_are_wrong-mock-turn-2)\n",
    "ch05.md": (
        "# Loop endings\n\nWhen does the loop stop?\n\n::: trace ch05_loop_endings within_token_limit\n\n"
        "And when tokens run out:\n\n::: trace ch05_loop_endings tokens_exhausted\n"
    ),
    "ch09.md": "# Who retries\n\nWho acts after a failure?\n\n::: trace ch09_who_retries\n",
    "hostile.md": "# Hostile\n\n::: trace hostile\n",
}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from tests.test_render_data import FixtureSource

    root = tmp_path_factory.mktemp("book")
    docs = root / "docs"
    (docs / "assets").mkdir(parents=True)
    for name in ("traces.css", "traces.js"):
        shutil.copy(ROOT / "docs" / "assets" / name, docs / "assets" / name)
    for name, text in PAGES.items():
        (docs / name).write_text(text, "utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root / "site")))
    url = f"http://127.0.0.1:{server.server_port}"
    # Instant navigation only takes links listed in the sitemap, written from site_url.
    (root / "mkdocs.yml").write_text(MKDOCS_YML.replace("http://127.0.0.1/", url + "/"), "utf-8")
    extension = {"primer.book.markdown": {"source": FixtureSource()}}
    build(load_config(str(root / "mkdocs.yml"), markdown_extensions=["tables", extension]))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: tests/run.sh installs it (apt-get install chromium).")
    with playwright_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


@dataclass
class Watched:
    """A page and everything that went wrong on it."""

    page: Any
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def open_page(browser: Any, site: str, path: str, scheme: str = "light") -> Watched:
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, color_scheme=scheme)
    page = context.new_page()
    watched = Watched(page)

    def guard(route: Any) -> None:
        if route.request.url.startswith(site):
            route.continue_()
        else:
            watched.refused.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page.on("console", lambda message: watched.errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: watched.errors.append(str(error)))

    def dialog(d: Any) -> None:
        watched.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    page.goto(site + path)
    page.wait_for_selector(".tr-switch:not([hidden])")
    return watched


def is_open(page: Any, anchor: str) -> bool:
    return bool(page.evaluate("id => document.getElementById(id).open", anchor))


def test_pages_load_clean(browser: Any, site: str) -> None:
    for path in ("/ch05/", "/ch09/"):
        watched = open_page(browser, site, path)
        assert watched.page.locator("details.tr-scn").count() > 0
        assert watched.errors == []
        assert watched.refused == []
        watched.page.context.close()


def test_the_hostile_corpus_executes_nothing(browser: Any, site: str) -> None:
    watched = open_page(browser, site, "/hostile/")
    page = watched.page
    page.evaluate("document.querySelectorAll('.tr details').forEach(d => d.open = true)")
    for summary in page.locator(".tr-whole > summary").all():
        summary.click()  # copies transcript rows: still text
    page.wait_for_timeout(200)
    assert watched.dialogs == []
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator(".tr script, .tr img, .tr svg, .tr [onerror], .tr [onload]").count() == 0
    assert page.locator(".tr a[href^='javascript']").count() == 0
    assert "<script>window.__pwned = 1;" in page.locator(".tr").first.inner_text()
    assert watched.errors == []
    page.context.close()


def test_expand_and_collapse_by_mouse_and_keyboard(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    run = "ch09_who_retries-service_is_busy-mock"
    assert not is_open(page, run)
    page.locator(f"#{run} > summary").click()
    assert is_open(page, run)
    turn = f"{run}-turn-1"
    page.locator(f"#{turn} > summary").focus()
    page.keyboard.press("Enter")
    assert is_open(page, turn)
    assert page.locator(f"#{turn}-model > summary").is_visible()
    page.keyboard.press("Space")
    assert not is_open(page, turn)
    page.locator(f"#{run} > summary").click()
    assert not is_open(page, run)
    page.context.close()


def test_the_switch_is_remembered_across_instant_navigation(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    live_runs = page.locator(".tr-run[data-mode='live']")
    assert live_runs.first.is_visible()
    chapter_live = page.locator(".tr-head .tr-mode[data-tr-mode='live']")
    assert chapter_live.get_attribute("aria-label") == "show the live runs of ch09_who_retries"
    chapter_live.click()
    assert chapter_live.get_attribute("aria-pressed") == "false"
    assert not live_runs.first.is_visible()
    assert page.locator(".tr-run[data-mode='mock']").first.is_visible()
    page.evaluate("window.__samePage = true")
    page.get_by_role("link", name="Loop endings").first.click()
    page.wait_for_url("**/ch05/")
    page.wait_for_selector(".tr-chapter[data-tr-chapter='ch05_loop_endings'][data-show] >> nth=1")
    assert page.evaluate("window.__samePage") is True  # Material swapped the page in, no reload
    assert page.locator(".tr-head .tr-mode[data-tr-mode='live']").get_attribute("aria-pressed") == "false"
    # Two markers on this page, one chapter head: the switch governs both.
    assert page.locator(".tr-chapter").count() == 2
    assert page.locator(".tr-head").count() == 1
    assert page.locator(".tr-run[data-mode='live']:visible").count() == 0
    assert page.locator(".tr-run[data-mode='mock']:visible").count() == 2
    # Turning the only mode shown off shows the other one instead.
    page.locator(".tr-head .tr-mode[data-tr-mode='mock']").click()
    assert page.locator(".tr-chapter").last.get_attribute("data-show") == "live"
    page.reload()
    page.wait_for_selector(".tr-chapter[data-show]")
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "live"
    page.locator(".tr-head .tr-mode[data-tr-mode='mock']").click()
    assert page.locator(".tr-chapter").last.get_attribute("data-show") == "mock live"
    page.context.close()


def test_a_scenario_switch_changes_that_scenario_only(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    page.evaluate("localStorage.clear()")
    busy = page.locator("#ch09_who_retries-service_is_busy")
    busy.locator(".tr-mode[data-tr-mode='mock']").click()
    assert not busy.locator(".tr-run[data-mode='mock']").is_visible()
    assert busy.locator(".tr-run[data-mode='live']").is_visible()
    other = page.locator("#ch09_who_retries-service_says_no")
    assert other.locator(".tr-run[data-mode='mock']").is_visible()
    assert page.evaluate("localStorage.getItem('primer.traces.show')") is None
    page.context.close()


def test_a_deep_link_opens_every_details_around_its_target(browser: Any, site: str) -> None:
    target = "ch09_who_retries-service_is_busy-live-turn-2"
    page = open_page(browser, site, f"/ch09/#{target}").page
    assert is_open(page, target)
    assert is_open(page, "ch09_who_retries-service_is_busy-live")
    assert page.locator(f"#{target} > summary").is_visible()
    # hashchange, to a tool call two levels down in another run
    tool = "ch09_who_retries-order_may_have_landed-mock-turn-1-tool-1"
    page.evaluate(f"location.hash = '#{tool}'")
    page.wait_for_function(f"document.getElementById('{tool}').open === true")
    assert is_open(page, "ch09_who_retries-order_may_have_landed-mock-turn-1")
    assert page.locator(f"#{tool} > summary").is_visible()
    page.context.close()


def test_a_deep_link_followed_by_instant_navigation(browser: Any, site: str) -> None:
    context = browser.new_context()
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(site) else route.abort())
    page = context.new_page()
    page.goto(site + "/")
    page.evaluate("window.__samePage = true")
    page.get_by_role("link", name="A turn of arguments_are_wrong").click()
    target = "ch09_who_retries-arguments_are_wrong-mock-turn-2"
    page.wait_for_function(f"document.getElementById('{target}') && document.getElementById('{target}').open")
    assert page.evaluate("window.__samePage") is True
    assert is_open(page, "ch09_who_retries-arguments_are_wrong-mock")
    context.close()


def test_a_deep_link_into_a_hidden_run_shows_it(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    page.locator(".tr-head .tr-mode[data-tr-mode='live']").click()
    target = "ch09_who_retries-service_says_no-live-turn-1"
    page.evaluate(f"location.hash = '#{target}'")
    page.wait_for_function(f"document.getElementById('{target}').open === true")
    assert page.locator(f"#{target} > summary").is_visible()
    page.evaluate("localStorage.clear()")
    page.context.close()


def test_the_whole_context_is_one_click_away(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/#ch09_who_retries-arguments_are_wrong-mock-turn-3-model").page
    whole = page.locator("#ch09_who_retries-arguments_are_wrong-mock-turn-3-model .tr-whole")
    count = int(whole.get_attribute("data-tr-count") or 0)
    whole.locator("summary").click()
    rows = whole.locator("tbody > tr")
    rows.first.wait_for()
    assert rows.count() == count
    assert rows.nth(0).inner_text().startswith("[0]")
    page.context.close()


def test_the_trace_json_link_is_relative_to_the_site_root(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    href = page.locator(".tr-download").evaluate("a => a.href")
    assert href == f"{site}/traces/ch09_who_retries.json"
    page.context.close()


def test_printing_opens_everything(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    closed = page.locator(".tr details:not([open])").count()
    assert closed > 0
    # What the browser fires around printing (Material's print$ listens for it).
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    page.wait_for_function("document.querySelectorAll('.tr details:not([open])').length === 0")
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    page.wait_for_function(f"document.querySelectorAll('.tr details:not([open])').length === {closed}")
    # And the print stylesheet shows every run, whatever the switch says.
    page.locator(".tr-head .tr-mode[data-tr-mode='live']").click()
    page.emulate_media(media="print")
    assert page.locator(".tr-run[data-mode='live']").first.is_visible()
    page.evaluate("localStorage.clear()")
    page.context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots(browser: Any, site: str, scheme: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page = open_page(browser, site, "/ch09/", scheme=scheme).page
    assert page.locator("body").get_attribute("data-md-color-scheme") == ("slate" if scheme == "dark" else "default")
    collapsed = SCREENS / f"ch09-{scheme}-collapsed.png"
    page.screenshot(path=str(collapsed))
    page.evaluate("document.querySelectorAll('#ch09_who_retries-service_is_busy details').forEach(d => d.open = true)")
    page.evaluate("document.getElementById('ch09_who_retries-service_is_busy-mock-turn-1').scrollIntoView()")
    page.wait_for_timeout(400)  # Material's header title fades on scroll
    expanded = SCREENS / f"ch09-{scheme}-expanded.png"
    page.screenshot(path=str(expanded))
    summary_colour = page.locator("#ch09_who_retries-service_is_busy-mock > summary").evaluate(
        "s => getComputedStyle(s).color"
    )
    channels = [
        int(c) for c in summary_colour[summary_colour.index("(") + 1 : summary_colour.index(")")].split(",")[:3]
    ]
    # Text is dark on the light palette and light on the dark one.
    assert (sum(channels) / 3 > 128) == (scheme == "dark")
    assert collapsed.stat().st_size > 10_000
    assert expanded.stat().st_size > 10_000
    page.context.close()
