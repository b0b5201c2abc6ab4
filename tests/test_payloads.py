"""Payloads set aside while search indexes a page: every one found, every one put back."""

from __future__ import annotations

import logging

import pytest

from primer.book.payloads import PAYLOAD, PayloadStash
from primer.book.render import render_traces
from tests.test_render_data import FixtureSource, hostile_chapter, parse


def _pages() -> dict[str, str]:
    source = FixtureSource()
    return {
        "ch05": render_traces(source.traces("ch05_loop_endings")),
        "ch09": render_traces(source.traces("ch09_who_retries")),
        "hostile": render_traces(hostile_chapter()),
    }


@pytest.mark.parametrize("name", ["ch05", "ch09", "hostile"])
def test_every_excluded_block_is_emptied_and_comes_back(name: str) -> None:
    html = f"<h1>Page</h1>\n{_pages()[name]}\n<p>after</p>"
    stash = PayloadStash()
    emptied = stash.take("page.md", html)

    # The templates' promise the pattern relies on: one match per excluded
    # block, and no div inside one (its first </div> closes it).
    blocks = PAYLOAD.findall(html)
    assert len(blocks) == html.count("data-search-exclude") > 0
    assert not any("<div" in content for _, content, _ in blocks)
    tree = parse(emptied)
    for block in tree.find("div"):
        if "data-search-exclude" in block.attrs:
            assert not block.text.strip()
    # What search indexes is untouched: every summary line outside the payloads stays.
    summaries = [
        s.text for s in parse(html).find("summary") if not any("data-search-exclude" in a.attrs for a in s.ancestors())
    ]
    assert [s.text for s in tree.find("summary")] == summaries
    assert len(emptied) < len(html) / 2

    assert stash.give_back("page.md", emptied) == html
    assert stash.give_back("page.md", emptied) == emptied, "given back once"


def test_a_page_without_traces_is_left_alone() -> None:
    stash = PayloadStash()
    html = "<p>prose</p>"
    assert stash.take("p.md", html) == html
    assert stash.give_back("p.md", html) == html


def test_search_plugins_changes_are_kept() -> None:
    html = '<p data-search-boost="2">x</p>' + _pages()["ch05"]
    stash = PayloadStash()
    emptied = stash.take("p.md", html)
    # As Material's search plugin does once it has indexed the page.
    indexed = emptied.replace(' data-search-boost="2"', "")
    assert stash.give_back("p.md", indexed) == html.replace(' data-search-boost="2"', "")


def test_blocks_lost_meanwhile_give_the_page_back_whole(caplog: pytest.LogCaptureFixture) -> None:
    html = _pages()["ch05"]
    stash = PayloadStash()
    emptied = stash.take("p.md", html)
    block = '<div class="tr-body" data-search-exclude></div>'
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.primer"):
        assert stash.give_back("p.md", emptied.replace(block, "", 1)) == html
    assert "p.md" in caplog.text
