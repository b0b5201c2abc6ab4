"""What a reader sees in the browser: remembered views, mode prose, deep links into payloads, copies.

The sites, the browser and the page opener are those of ``tests/test_browser.py``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.test_browser import (  # noqa: F401 - fixtures, used by name
    Book,
    book,
    browser,
    open_page,
    site,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]


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
