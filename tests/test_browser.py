"""The trace pages in a real browser, as a reader gets them.

Headless Debian Chromium through Playwright, on two sites served from
127.0.0.1:

* ``site``: a small Material book built here with the extension given the
  tests' ``FixtureSource`` (mock runs, live runs rebuilt from the recorded
  provider traffic, the hostile corpus), Material's instant navigation and
  copy buttons on, the book's palettes;
* ``book``: the book itself, built from this checkout as the publisher
  builds it (``mkdocs build --strict`` with the hook: frozen live traces,
  published trace JSON, links made relative to each page).

Every request that does not go to the local server is refused, so nothing
here reaches another host. axe-core (``tests/node_modules``, installed by
``tests/run.sh`` from the npm registry) is injected into the pages for the
WCAG checks; without it those tests fail rather than skip. Screenshots go
to /tmp/screens.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import playwright.sync_api as playwright_api  # a test dependency: missing, the suite fails rather than skips
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
AXE = ROOT / "tests" / "node_modules" / "axe-core" / "axe.min.js"
SCREENS = Path("/tmp/screens")
WIDTHS = [320, 390, 768, 1280]
SCHEMES = ["light", "dark"]
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


@contextlib.contextmanager
def serving(directory: Path) -> Iterator[str]:
    """``directory`` served on 127.0.0.1 while the block runs; its URL, without a final slash."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(directory)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from primer.book._render import render_payloads
    from primer.book._source import ChapterTraces
    from primer.book._store import TraceStore
    from tests.test_render_data import FixtureSource

    class Published(FixtureSource):
        """The fixture chapters as a book shows them: payload blocks link to the chapter's payload page."""

        def traces(self, chapter: str) -> ChapterTraces:
            traces = super().traces(chapter)
            return dataclasses.replace(traces, payloads_url=TraceStore.payloads_url(chapter))

    root = tmp_path_factory.mktemp("book")
    docs = root / "docs"
    (docs / "assets").mkdir(parents=True)
    for name in ("traces.css", "traces.js"):
        shutil.copy(ROOT / "primer" / "book" / "assets" / name, docs / "assets" / name)
    for name, text in PAGES.items():
        (docs / name).write_text(text, "utf-8")
    (root / "site").mkdir()
    with serving(root / "site") as url:
        # Instant navigation only takes links listed in the sitemap, written from site_url.
        (root / "mkdocs.yml").write_text(MKDOCS_YML.replace("http://127.0.0.1/", url + "/"), "utf-8")
        source = Published()
        extension = {"primer.book.markdown": {"source": source}}
        build(load_config(str(root / "mkdocs.yml"), markdown_extensions=["tables", extension]))
        # Published as the book's hook publishes them.
        (root / "site" / "traces").mkdir(exist_ok=True)
        for chapter in ("ch05_loop_endings", "ch09_who_retries", "hostile"):
            page = root / "site" / TraceStore.payloads_url(chapter)
            page.write_text(render_payloads(source.traces(chapter)), "utf-8")
        yield url


@dataclass(frozen=True)
class Book:
    """The book as published, served: its URL and the paths of its pages."""

    url: str
    pages: list[str]

    @property
    def trace_pages(self) -> list[str]:
        return [p for p in self.pages if p.startswith("ch")]


@pytest.fixture(scope="module")
def book(built_book: tuple[Path, str]) -> Iterator[Book]:
    site, _ = built_book  # the book built once a session, no key: the frozen live traces (tests/conftest.py)
    pages = sorted(
        str(index.parent.relative_to(site)) + "/"
        for index in site.glob("*/index.html")
        if index.parent.name != "search"
    )
    with serving(site) as url:
        yield Book(url, ["", *pages])


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


def open_page(
    browser: Any, site: str, path: str, scheme: str = "light", *, width: int = 1280, javascript: bool = True
) -> Watched:
    context = browser.new_context(
        viewport={"width": width, "height": 1000}, color_scheme=scheme, java_script_enabled=javascript
    )
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
    if javascript and page.locator(".tr").count():
        page.wait_for_selector(".tr-switch:not([hidden])")
    return watched


def open_everything(page: Any) -> None:
    """Open every <details> of the traces, as a reader who clicked them all would."""
    page.evaluate("document.querySelectorAll('.tr details').forEach(d => d.open = true)")
    # The payloads are filled in from the chapter's payload page: then open what they hold.
    page.wait_for_function("!document.querySelector('.tr-body[data-tr-payload]')")
    page.evaluate("document.querySelectorAll('.tr details').forEach(d => d.open = true)")
    page.wait_for_timeout(100)  # the toggle events: colours, copied rows, rebuilt bodies


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


def test_a_scenario_off_screen_costs_nothing_until_the_reader_nears_it(browser: Any, site: str) -> None:
    # On a phone the last scenario is far below the fold: the browser skips it
    # (content-visibility) until it is scrolled near, and a link into it still lands.
    rendered = "id => document.getElementById(id).checkVisibility({contentVisibilityAuto: true})"
    page = open_page(browser, site, "/ch09/", width=390).page
    page.set_viewport_size({"width": 390, "height": 300})  # a short screen: the last is far below
    page.reload()
    last = page.evaluate("[...document.querySelectorAll('.tr-scenario')].pop().id")
    assert page.evaluate("id => document.getElementById(id).getBoundingClientRect().top", last) > 900
    assert page.evaluate(rendered, f"{last}-mock") is False
    page.locator(f"#{last}").scroll_into_view_if_needed()
    page.wait_for_function(f"({rendered})('{last}-mock')")
    page.context.close()
    target = f"{last}-live-turn-1"
    page = open_page(browser, site, f"/ch09/#{target}", width=390).page
    page.wait_for_function(f"document.getElementById('{target}').open === true")
    assert page.evaluate(rendered, target)
    top = page.evaluate("id => document.getElementById(id).getBoundingClientRect().top", target)
    assert 0 <= top < 1000  # in view, where the link said
    page.context.close()


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


def test_printing_prints_what_is_open(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    run = "ch09_who_retries-service_is_busy-mock"
    page.locator(f"#{run} > summary").click()
    closed = page.locator(".tr details:not([open])").count()
    assert closed > 0
    # What the browser fires around printing. Material opens every <details>
    # to print; what the reader had folded stays folded on paper.
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    page.emulate_media(media="print")
    assert page.locator(".tr details[data-tr-folded]").count() == closed
    turn = page.locator(f"#{run}-turn-1")
    assert turn.locator("> summary").is_visible()
    assert not turn.locator(f"#{run}-turn-1-model").is_visible()
    assert page.locator(f"#{run}-turn-2 > summary").is_visible()
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    page.emulate_media(media="screen")
    page.wait_for_function(f"document.querySelectorAll('.tr details:not([open])').length === {closed}")
    assert page.locator(".tr details[data-tr-folded]").count() == 0
    page.context.close()


def test_print_all_prints_every_run_with_everything_open(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    # No dialog in a test. A function, not an assignment: Playwright calls what
    # an expression evaluates to when it is a function, which would "print" at once.
    page.evaluate("() => { window.print = () => { window.__printed = true; }; }")
    assert page.evaluate("window.__printed") is None
    page.locator(".tr-head .tr-mode[data-tr-mode='live']").click()  # live runs hidden on screen
    opened = page.locator(".tr details[open]").count()
    button = page.get_by_role("button", name="print all traces of ch09_who_retries, every part open")
    button.click()
    # Once every payload is filled in from the chapter's payload page.
    page.wait_for_function("window.__printed === true")
    assert page.locator(".tr-body[data-tr-payload]").count() == 0
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    page.emulate_media(media="print")
    # Everything, but the views that repeat what is printed anyway.
    assert page.locator(".tr details:not([open]):not([data-tr-folded])").count() == 0
    folded = page.locator(".tr details[data-tr-folded]")
    assert folded.count() == page.locator(".tr-whole, .tr-sent").count()
    assert not folded.first.locator("p.tr-note").is_visible()
    assert page.locator(".tr-run[data-mode='live']").first.is_visible()
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    page.emulate_media(media="screen")
    assert page.locator(".tr details[open]").count() == opened
    assert not page.locator(".tr-run[data-mode='live']").first.is_visible()
    page.evaluate("localStorage.clear()")
    page.context.close()


# -- the checks: every width, every state, both schemes ------------------

# Everything inside a trace box ends inside it; the page never scrolls sideways.
OVERFLOW = """() => {
  const found = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth) found.push(`the page: ${doc.scrollWidth} px in ${doc.clientWidth}`);
  for (const box of document.querySelectorAll(".tr")) {
    if (box.scrollWidth > box.clientWidth + 1) found.push(`${box.id}: ${box.scrollWidth} px in ${box.clientWidth}`);
    const right = box.getBoundingClientRect().right + 0.5;
    for (const element of box.querySelectorAll("*")) {
      const edge = element.getBoundingClientRect();
      if (edge.width && edge.right > right) {
        const what = element.id || element.className || element.tagName;
        found.push(`${what} ends at ${edge.right} px, past its box (${right}): ${element.textContent.slice(0, 60)}`);
      }
    }
  }
  return found;
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_scrolls_sideways(browser: Any, site: str, book: Book, width: int) -> None:
    pages = [(book.url, "ch09_who_retries/"), (book.url, "ch05_loop_endings/"), (site, "/hostile/")]
    for scheme in SCHEMES:
        for url, path in pages:
            page = open_page(browser, url, f"/{path.lstrip('/')}", scheme, width=width).page
            states = {"folded": page.evaluate(OVERFLOW)}
            open_everything(page)
            states["everything open"] = page.evaluate(OVERFLOW)
            for mode in ("mock", "live"):  # the other mode's runs hidden by the switch
                other = "live" if mode == "mock" else "mock"
                page.locator(f".tr-head .tr-mode[data-tr-mode='{other}']").click()
                states[f"{mode} only"] = page.evaluate(OVERFLOW)
                page.locator(f".tr-head .tr-mode[data-tr-mode='{other}']").click()
            page.evaluate("localStorage.clear()")
            page.context.close()
            for state, found in states.items():
                assert found == [], f"{path} at {width} px, {scheme}, {state}: {found[:5]}"


def test_targets_are_at_least_24_px(browser: Any, book: Book) -> None:
    for width in (390, 1280):
        page = open_page(browser, book.url, "/ch09_who_retries/", width=width).page
        open_everything(page)
        small = page.evaluate(
            """() => [...document.querySelectorAll(".tr button, .tr summary, .tr .tr-tl-turn")]
              .filter(e => e.offsetParent)
              .map(e => [e.getAttribute("aria-label") || e.textContent.slice(0, 30), e.getBoundingClientRect()])
              .filter(([, r]) => r.width < 24 || r.height < 24)
              .map(([name, r]) => `${name}: ${r.width} x ${r.height}`)"""
        )
        assert small == [], f"at {width} px: {small[:5]}"
        page.context.close()


# One block of each kind, by page: the id the renderer gave it. A payload block
# keeps it, so a link to it lands; one on the page at load Material renames "__code_" and it.
COPY_KINDS = {
    "/ch09/": {
        "a model request body": "[id='ch09_who_retries-service_is_busy-live-turn-1-model-req-1']",
        "a model response body": "[id='ch09_who_retries-service_is_busy-live-turn-1-model-res-1']",
        "a whole body as sent, rebuilt": "[id='ch09_who_retries-service_is_busy-live-turn-2-model-req-1-whole']",
        "a service response body": "[id='ch09_who_retries-service_is_busy-mock-turn-1-tool-1-res-2']",
        "a declared tool's schema": ".tr-tooldefs pre >> nth=1",
    },
    "/hostile/": {
        "a text body": "[id='hostile-hostile-mock-turn-1-model-res-1']",
        "an error and its traceback": "[id='hostile-hostile_error-mock-turn-1-tool-1-error']",
        "the last live run's failure": "[id='__code_hostile-traces-failure']",
    },
}


def test_every_copy_button_copies_its_own_block(browser: Any, site: str) -> None:
    for path, kinds in COPY_KINDS.items():
        watched = open_page(browser, site, path)
        page = watched.page
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
        open_everything(page)
        # Every block has an id of its own, which its button names.
        ids = page.evaluate("[...document.querySelectorAll('.tr pre')].map(p => p.id)")
        assert ids
        assert all(ids), ids
        assert len(ids) == len(set(ids))
        buttons = page.locator(".tr pre > .md-code__nav > button[data-md-type='copy']")
        assert buttons.count() == len(ids)
        targets = buttons.evaluate_all("bs => bs.map(b => b.getAttribute('data-clipboard-target'))")
        assert targets == [f"#{i} > code" for i in ids]
        for kind, selector in kinds.items():
            block = page.locator(selector)
            assert block.count() == 1, kind
            block.scroll_into_view_if_needed()
            block.hover()
            block.locator("> .md-code__nav > button[data-md-type='copy']").click()
            copied = page.evaluate("navigator.clipboard.readText()")
            assert copied.strip(), kind
            assert copied.strip() == (block.locator("code").text_content() or "").strip(), kind
            page.evaluate("navigator.clipboard.writeText('')")
        assert watched.errors == []
        page.context.close()


def test_every_trace_link_works_without_javascript(browser: Any, book: Book) -> None:
    for path in book.trace_pages:
        page = open_page(browser, book.url, f"/{path}", javascript=False).page
        links = page.evaluate("[...document.querySelectorAll('.tr a[href]')].map(a => a.getAttribute('href'))")
        assert links, path
        followed = set()
        for href in links:
            if href in followed:
                continue
            followed.add(href)
            assert not href.startswith("/"), f"{path}: {href} would not work under a project site's prefix"
            if href.startswith("#"):
                # Chromium opens the <details> around a fragment's target.
                page.goto(f"{book.url}/{path}{href}")
                target = page.locator(f"[id='{href[1:]}']")
                assert target.count() == 1, f"{path}: {href} has no target"
                shown = target.locator("> summary") if target.evaluate("e => e.tagName") == "DETAILS" else target
                assert shown.is_visible(), f"{path}: {href} is not shown when followed"
            else:
                address, _, fragment = href.partition("#")
                response = page.context.request.get(urljoin(f"{book.url}/{path}", address))
                assert response.status == 200, f"{path}: {href} -> {response.status}"
                if address.endswith(".payloads.html"):
                    # A payload block's link lands on the payload in the chapter's payload page.
                    assert address.endswith(f"traces/{path.rstrip('/')}.payloads.html"), href
                    assert f'id="{fragment}"' in response.text(), f"{path}: {href} has no target"
                    continue
                data = json.loads(response.body())
                if href.endswith(f"traces/{path.rstrip('/')}.json"):
                    assert data["chapter"] == path.rstrip("/")
        # What the script fills in says where it is without it.
        for filled in page.locator(".tr-whole, .tr-sent").all():
            assert filled.locator("p.tr-note a").count() >= 1
        page.context.close()


def rendered_in_full(page: Any) -> None:
    """Every scenario drawn, as each is once the reader nears it.

    Off screen, the browser skips a scenario (content-visibility: auto): it
    has no colours or boxes for axe to measure until it is drawn.
    """
    page.add_style_tag(content=".md-typeset .tr-scenario { content-visibility: visible !important; }")


def _axe(page: Any) -> list[str]:
    rendered_in_full(page)
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => {
          const result = await axe.run(document, {
            runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]},
          });
          return result.violations
            .filter(v => v.impact === "serious" || v.impact === "critical")
            .flatMap(v => v.nodes.map(n => `${v.id} (${v.impact}): ${n.target.join(" ")}: ${n.failureSummary}`));
        }"""
    )
    return list(found)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_page_meets_wcag_aa(browser: Any, book: Book, scheme: str) -> None:
    # The whole page: the traces, and Material's header, navigation, code
    # listings and footer in the book's palette (docs/stylesheets/book.css).
    if not AXE.exists():
        pytest.fail(f"axe-core is missing ({AXE}): tests/run.sh installs it (npm ci --prefix tests).")
    checked = 0
    for path in book.pages:
        page = open_page(browser, book.url, f"/{path}", scheme).page
        assert _axe(page) == [], f"{path}, {scheme}, folded"
        if page.locator(".tr").count():
            open_everything(page)
            assert _axe(page) == [], f"{path}, {scheme}, everything open"
            checked += 1
        page.context.close()
    assert checked >= 17  # every chapter page
    # Where a payload link takes a reader without JavaScript: everything in one main landmark.
    page = open_page(browser, book.url, "/traces/ch09_who_retries.payloads.html", scheme).page
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert page.locator("main .tr-payload").count() == page.locator(".tr-payload").count() > 10
    assert _axe(page) == [], f"the ch09 payload page, {scheme}"
    # In the reader's scheme: dark where the system is dark, as the book is.
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == ("rgb(30, 33, 41)" if scheme == "dark" else "rgb(255, 255, 255)"), (scheme, background)
    page.context.close()


def test_folded_ch09_scenarios_tell_their_story(browser: Any, book: Book) -> None:
    from tests.test_render import CH09_STORIES

    page = open_page(browser, book.url, "/ch09_who_retries/").page
    for name, story in CH09_STORIES.items():
        for mode, wait in (("mock", "1s"), ("live", "50ms")):
            summary = page.locator(f"#ch09_who_retries-{name}-{mode} > summary")
            summary.scroll_into_view_if_needed()  # as a reader would: off screen, it is not drawn
            assert summary.is_visible()
            lines = summary.inner_text().split("\n")
            assert lines[0].startswith(f"{mode} scenario {name} · tools=place_order, price_of · "), lines
            assert lines[0].endswith(" · ended: no_tool_calls"), lines
            assert lines[1] == story.format(wait=wait)
    page.context.close()


def test_json_is_coloured_when_its_block_is_opened(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/#ch09_who_retries-service_is_busy-live-turn-1-model").page
    block = page.locator("#ch09_who_retries-service_is_busy-live-turn-1-model-req-1 code")
    text = block.text_content()
    assert block.locator("span").count() == 0  # its request is still folded
    page.locator("#ch09_who_retries-service_is_busy-live-turn-1-model .tr-wire > summary").first.click()
    page.wait_for_function(
        "document.querySelector('#ch09_who_retries-service_is_busy-live-turn-1-model-req-1 code span')"
    )
    assert block.locator("span.nt").first.text_content() == '"messages"'
    assert block.text_content() == text
    page.context.close()


def test_the_whole_body_as_sent_is_rebuilt(browser: Any, site: str) -> None:
    from tests.test_render_data import live_chapter

    model = "ch09_who_retries-service_is_busy-live-turn-2-model"
    page = open_page(browser, site, f"/ch09/#{model}").page
    sent = page.locator(f"#{model} details.tr-sent")
    sent.evaluate("d => { d.parentElement.open = true; d.open = true; }")
    sent.locator("pre code").wait_for()
    body = json.loads(sent.locator("pre code").text_content() or "")
    turn = live_chapter("ch09_who_retries").scenario("service_is_busy").turns[1]
    assert body == turn.model_call.exchanges[0].request.json_body
    assert list(body) == list(turn.model_call.exchanges[0].request.json_body)  # in the order sent
    page.context.close()


def test_open_all_and_fold_all(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    run = "#ch09_who_retries-arguments_are_wrong-live"
    button = page.get_by_role("button", name="open all of the live run of arguments_are_wrong")
    button.click()
    assert page.locator(f"{run}, {run} details").evaluate_all("ds => ds.every(d => d.open)")
    page.wait_for_function(
        "document.querySelector('.tr-all[aria-controls$=\"arguments_are_wrong-live\"]').textContent === 'fold all'"
    )
    page.get_by_role("button", name="fold all of the live run of arguments_are_wrong").click()
    assert page.locator(f"{run}, {run} details").evaluate_all("ds => ds.every(d => !d.open)")
    # A turn: its own button, once it is open.
    turn = "#ch09_who_retries-service_is_busy-mock-turn-1"
    page.locator(f"{turn} > summary").evaluate("s => { s.closest('.tr-scn').open = true; }")
    page.locator(f"{turn} > summary").click()
    page.get_by_role("button", name="open all of turn 1 of the mock run of service_is_busy").click()
    assert page.locator(f"{turn}, {turn} details").evaluate_all("ds => ds.every(d => d.open)")
    page.context.close()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_screenshots(browser: Any, book: Book, scheme: str) -> None:
    # Left in /tmp/screens to be looked at: phone and desktop, folded and open.
    SCREENS.mkdir(parents=True, exist_ok=True)
    for width in (390, 1280):
        page = open_page(browser, book.url, "/ch09_who_retries/", scheme, width=width).page
        assert page.locator("body").get_attribute("data-md-color-scheme") == (
            "slate" if scheme == "dark" else "default"
        )
        page.locator("#ch09_who_retries-service_is_busy").scroll_into_view_if_needed()
        page.wait_for_timeout(400)  # Material's header title fades on scroll
        folded = SCREENS / f"ch09-{width}-{scheme}-folded.png"
        page.screenshot(path=str(folded))
        page.evaluate(
            "document.querySelectorAll('#ch09_who_retries-service_is_busy details').forEach(d => d.open = true)"
        )
        page.evaluate("document.getElementById('ch09_who_retries-service_is_busy-live-turn-1').scrollIntoView()")
        page.wait_for_timeout(400)
        expanded = SCREENS / f"ch09-{width}-{scheme}-open.png"
        page.screenshot(path=str(expanded))
        summary_colour = page.locator("#ch09_who_retries-service_is_busy-mock > summary").evaluate(
            "s => getComputedStyle(s).color"
        )
        channels = [
            int(c) for c in summary_colour[summary_colour.index("(") + 1 : summary_colour.index(")")].split(",")[:3]
        ]
        # Text is dark on the light palette and light on the dark one.
        assert (sum(channels) / 3 > 128) == (scheme == "dark")
        assert folded.stat().st_size > 10_000
        assert expanded.stat().st_size > 10_000
        page.context.close()


# -- views a reader chooses, prose about one mode ------------------------------------


def _visible(page: Any, selector: str) -> int:
    return int(page.locator(f"{selector} >> visible=true").count())


def test_a_remembered_view_never_blanks_a_chapter_without_its_runs(browser: Any, book: Book) -> None:
    page = open_page(browser, book.url, "/ch09_who_retries/").page
    page.evaluate("localStorage.clear()")
    assert _visible(page, ".tr-prose[data-mode='mock']") >= 1
    assert _visible(page, ".tr-prose[data-mode='live']") >= 1
    # Live only: the chapter's mock runs and the prose about them go.
    page.locator(".tr-head .tr-mode[data-tr-mode='mock']").click()
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "live"
    assert _visible(page, ".tr-run[data-mode='mock']") == 0
    assert _visible(page, ".tr-prose[data-mode='mock']") == 0
    assert _visible(page, ".tr-prose[data-mode='live']") >= 1
    assert page.evaluate("localStorage.getItem('primer.traces.show')") == "live"

    # ch11 has no live run: it shows its mock runs, presses mock, and says why.
    page.goto(f"{book.url}/ch11_streaming/")
    page.wait_for_selector(".tr-chapter[data-show]")
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "mock"
    runs = page.locator(".tr-run[data-mode='mock']")
    assert runs.count() >= 3
    assert _visible(page, ".tr-run[data-mode='mock']") == runs.count()
    head = page.locator(".tr-head").first
    assert head.locator(".tr-mode[data-tr-mode='mock']").get_attribute("aria-pressed") == "true"
    assert head.locator(".tr-mode[data-tr-mode='live']").is_disabled()
    why = head.locator(".tr-why")
    assert why.is_visible()
    assert why.text_content() == "Showing the mock runs: this chapter has no live run (you chose live)."
    # Pressing mock there neither blanks the page nor changes what was chosen.
    head.locator(".tr-mode[data-tr-mode='mock']").click()
    assert _visible(page, ".tr-run[data-mode='mock']") == runs.count()
    assert page.evaluate("localStorage.getItem('primer.traces.show')") == "live"

    # Back on ch09, the choice still holds where it can.
    page.goto(f"{book.url}/ch09_who_retries/")
    page.wait_for_selector(".tr-chapter[data-show]")
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "live"
    assert page.locator(".tr-head .tr-why").count() == 0
    page.evaluate("localStorage.clear()")
    page.context.close()


def test_mode_prose_is_labelled_without_javascript(browser: Any, book: Book) -> None:
    page = open_page(browser, book.url, "/ch09_who_retries/", javascript=False).page
    labels = page.locator(".tr-prose .tr-prose-mode").all_text_contents()
    assert "mock about the mock run of service_is_busy" in labels
    assert "live about the live run of service_is_busy" in labels
    assert _visible(page, ".tr-prose") == page.locator(".tr-prose").count()
    page.context.close()


def test_copy_on_an_abridged_request_copies_the_whole_body_as_sent(browser: Any, site: str) -> None:
    from tests.test_render_data import live_chapter

    model = "ch09_who_retries-service_is_busy-live-turn-2-model"
    watched = open_page(browser, site, f"/ch09/#{model}")
    page = watched.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
    block = page.locator(f"[id='{model}-req-1']")
    block.wait_for(state="attached")
    shown = json.loads(block.locator("code").text_content() or "")
    page.locator(f"#{model} details.tr-wire").first.evaluate("d => d.open = true")
    block.hover()
    button = block.locator("> .md-code__nav > button[data-md-type='copy']")
    assert "the whole body as sent" in (button.get_attribute("title") or "")
    button.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    sent = live_chapter("ch09_who_retries").scenario("service_is_busy").turns[1].model_call.exchanges[0].request
    assert json.loads(copied) == sent.json_body, "what was sent, not the part shown"
    assert list(json.loads(copied)) == list(sent.json_body)
    assert len(copied) > len(json.dumps(shown, indent=2))
    assert watched.errors == []
    page.context.close()


def test_a_deep_link_to_a_payload_block_opens_it(browser: Any, site: str, book: Book) -> None:
    # A service response's body, two folds deep in a tool call, filled in from the payload page.
    target = "ch09_who_retries-service_is_busy-mock-turn-1-tool-1-res-2"
    for url, path in ((site, "/ch09/"), (book.url, "/ch09_who_retries/")):
        page = open_page(browser, url, f"{path}#{target}").page
        page.wait_for_function(f"document.getElementById('{target}') !== null")
        block = page.locator(f"[id='{target}']")
        block.wait_for(state="visible")
        assert block.evaluate("e => e.tagName") == "PRE"
        assert is_open(page, "ch09_who_retries-service_is_busy-mock-turn-1-tool-1")
        # Each turn and call of an opened run carries its own link to copy.
        anchor = page.locator("a.tr-anchor[href='#ch09_who_retries-service_is_busy-mock-turn-1-tool-1']")
        assert anchor.get_attribute("href") == "#ch09_who_retries-service_is_busy-mock-turn-1-tool-1"
        assert anchor.get_attribute("aria-label") == "link to this tool call"
        # Clicked as the element, not at a point: the payload filled in above it and off-screen
        # scenarios drawn for the first time move the page, and under load a click at the point
        # Playwright measured landed on the heading's permalink instead.
        anchor.evaluate("a => a.click()")
        assert page.evaluate("location.hash") == "#ch09_who_retries-service_is_busy-mock-turn-1-tool-1"
        assert is_open(page, "ch09_who_retries-service_is_busy-mock-turn-1-tool-1"), "a click leaves it open"
        page.context.close()


def test_the_payload_page_links_land_without_javascript(browser: Any, book: Book) -> None:
    for chapter in ("ch09_who_retries", "ch05_loop_endings"):
        page = open_page(browser, book.url, f"/traces/{chapter}.payloads.html", javascript=False).page
        links = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
        assert len(links) > 10
        back = page.get_by_role("link", name="Back to the chapter page")
        assert back.get_attribute("href") == f"../{chapter}/"
        chapter_ids: set[str] = set()
        for href in dict.fromkeys(links):
            address, _, fragment = href.partition("#")
            if address.endswith(f"/traces/{chapter}.payloads.html"):
                assert page.locator(f"[id='{fragment}']").count() == 1, href
            elif address.endswith(".json"):
                assert page.context.request.get(href).status == 200, href
            else:
                assert address == f"{book.url}/{chapter}/", href
                if not chapter_ids:
                    response = page.context.request.get(address)
                    assert response.status == 200
                    chapter_ids = set(re.findall(r' id="([^"]+)"', response.text()))
                assert not fragment or fragment in chapter_ids, href
        assert page.locator("h3.tr-payload-head").count() == page.locator(".tr-payload").count()
        page.context.close()


def test_a_hand_edited_payload_page_runs_nothing_when_filled_in(browser: Any, site: str) -> None:
    # The payload page is fetched and copied in element by element: only what the renderer emits.
    watched = open_page(browser, site, "/ch09/")
    page = watched.page
    hostile = (
        '<div class="tr-payload" id="{id}"><p class="tr-note" onclick="window.__ran=1" '
        'onmouseover="window.__ran=1">evil <img src=x onerror="window.__ran=1"><a href="javascript:window.__ran=1" '
        'class="tr-evil">link</a><svg onload="window.__ran=1"></svg><script>window.__ran=1</script></p></div>'
    )

    def edited(route: Any) -> None:
        stub_ids = page.evaluate("[...document.querySelectorAll('.tr-body[data-tr-payload]')].map(s => s.id)")
        route.fulfill(status=200, content_type="text/html", body="".join(hostile.format(id=i) for i in stub_ids))

    page.route("**/*.payloads.html", edited)
    page.evaluate("document.querySelectorAll('.tr details').forEach(d => d.open = true)")
    page.wait_for_function("!document.querySelector('.tr-body[data-tr-payload]')")
    note = page.locator(".tr-body .tr-note").first
    note.hover()
    note.click()
    assert page.evaluate("window.__ran") is None
    assert page.locator(".tr-body img, .tr-body svg, .tr-body script").count() == 0
    assert page.locator(".tr-body [onclick], .tr-body [onmouseover]").count() == 0
    assert page.locator(".tr-body a.tr-evil").first.get_attribute("href") is None
    assert "evil" in (note.text_content() or "")
    page.context.close()


def test_axe_finds_nothing_in_the_trace_markup_at_any_impact(browser: Any, book: Book) -> None:
    # Every impact, minor included; what axe finds in the theme's own markup is listed apart, not failed.
    if not AXE.exists():
        pytest.fail(f"axe-core is missing ({AXE}): tests/run.sh installs it (npm ci --prefix tests).")
    theirs: set[str] = set()
    # ch05: a live reply's Markdown, rendered (render_markdown), with its raw text.
    for path in (
        "ch05_loop_endings/",
        "ch09_who_retries/",
        "ch11_streaming/",
        "ch16_evaluation/",
        "traces/ch09_who_retries.payloads.html",
        "traces/ch05_loop_endings.payloads.html",
    ):
        page = open_page(browser, book.url, f"/{path}").page
        if page.locator(".tr").count():
            open_everything(page)
        rendered_in_full(page)
        page.add_script_tag(path=str(AXE))
        found = page.evaluate(
            """async () => {
              const result = await axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa",
                "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]}});
              return result.violations.flatMap(v => v.nodes.map(n => {
                const node = document.querySelector(n.target[0]);
                const ours = !!(node && (node.closest(".tr, .tr-prose, main .tr-payload")));
                return [ours, `${v.id} (${v.impact}): ${n.target.join(" ")}`];
              }));
            }"""
        )
        ours = [what for mine, what in found if mine]
        assert ours == [], f"{path}: {ours[:5]}"
        theirs |= {what for mine, what in found if not mine}
        page.context.close()
    print("axe, the theme's own markup:", *sorted(theirs), sep="\n  ")


def test_a_replys_markdown_is_rendered_with_and_without_javascript(browser: Any, book: Book) -> None:
    # Filled in from the payload page (traces.js copies only what the renderer makes), and on that page itself.
    anchor = "ch05_loop_endings-within_token_limit-live-turn-3-model"
    watched = open_page(browser, book.url, "/ch05_loop_endings/")
    page = watched.page
    open_everything(page)
    reply = page.locator(f"#{anchor} section.tr-md")
    assert reply.locator("strong").all_text_contents()[:1] == ["butter"]
    raw = page.locator(f"#{anchor} details.tr-raw")
    assert raw.locator("summary").text_content() == "raw text"
    assert "We're lowest on **butter**" in (raw.locator("pre").text_content() or "")
    assert reply.evaluate("e => getComputedStyle(e).whiteSpace") == "normal"
    page.context.close()
    without = open_page(browser, book.url, f"/traces/ch05_loop_endings.payloads.html#{anchor}-body", javascript=False)
    block = without.page.locator(f"#{anchor}-body")
    assert block.locator("section.tr-md strong").first.text_content() == "butter"
    assert block.locator("details.tr-raw pre").count() == 1
    without.page.context.close()


def test_a_payload_block_whose_page_cannot_be_fetched_keeps_a_link_to_it(browser: Any, book: Book) -> None:
    # The links of the payload blocks are made root-relative when their block opens, not at
    # load (one per call: that pass was a share of the page's setup), and keep their fragment.
    watched = open_page(browser, book.url, "/ch09_who_retries/")
    page = watched.page
    page.route("**/*.payloads.html", lambda route: route.abort())
    model = "ch09_who_retries-service_is_busy-mock-turn-1-model"
    link = page.locator(f"a[id='{model}-body'].tr-load")
    assert link.get_attribute("data-tr-root-relative") == "traces/ch09_who_retries.payloads.html"
    opened = "id => { const d = document.getElementById(id); d.closest('.tr-scn').open = true; d.open = true; }"
    page.evaluate(opened, model)
    page.wait_for_function("id => !document.querySelector(`a[id='${id}-body'][data-tr-root-relative]`)", arg=model)
    assert link.evaluate("a => a.href") == f"{book.url}/traces/ch09_who_retries.payloads.html#{model}-body"
    assert page.locator(f"[id='{model}-body'][data-tr-payload]").count() == 1, "the block stays a link"
    page.context.close()
