"""The browser tests' fixtures: the two sites, served, and one Chromium per test file.

``site``: a small Material book built here with the extension given the tests'
``FixtureSource`` (mock runs, live runs rebuilt from the recorded provider traffic, the
hostile corpus), Material's instant navigation and copy buttons on, the book's palettes.
``book``: the book itself as the publisher builds it (``built_book``, tests/conftest.py:
frozen live traces, published trace JSON, links made relative to each page). Both are made
once a worker and served for the session; the browser is one per file.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import playwright.sync_api as playwright_api  # a test dependency: missing, the suite fails rather than skips
import pytest

from tests.browser.pages import ARGS, CHROMIUM, MKDOCS_YML, PAGES, ROOT, Book, serving


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from primer.book._links import PAYLOADS_SUFFIX, PUBLISHED_DIR
    from primer.book._render import render_payloads
    from primer.book._source import ChapterTraces
    from tests.test_render_data import FixtureSource

    class Published(FixtureSource):
        """The fixture chapters as a book shows them: payload blocks link to the chapter's payload page."""

        def traces(self, chapter: str) -> ChapterTraces:
            traces = super().traces(chapter)
            return traces._replace(payloads_url=f"{PUBLISHED_DIR}/{chapter}{PAYLOADS_SUFFIX}")

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
            page = root / "site" / PUBLISHED_DIR / f"{chapter}{PAYLOADS_SUFFIX}"
            page.write_text(render_payloads(source.traces(chapter)), "utf-8")
        yield url


@pytest.fixture(scope="session")
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
