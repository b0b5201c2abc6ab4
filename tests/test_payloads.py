"""Payloads set aside while search indexes a page: every one found, every one put back."""

from __future__ import annotations

import logging

import pytest

from primer.book._payloads import BLOCK_END, BLOCK_START, PAYLOAD, PayloadStash
from primer.book._render import render_traces
from tests.test_render_data import FixtureSource, hostile_chapter, parse


def _pages() -> dict[str, str]:
    source = FixtureSource()
    return {
        "ch05": render_traces(source.traces("ch05_loop_endings")),
        "ch09": render_traces(source.traces("ch09_who_retries")),
        "hostile": render_traces(hostile_chapter()),
    }


@pytest.mark.parametrize("name", ["ch05", "ch09", "hostile"])
def test_every_trace_block_is_set_aside_as_its_summary_text_and_comes_back(name: str) -> None:
    html = f"<h1>Page</h1>\n{_pages()[name]}\n<p>after</p>"
    stash = PayloadStash()
    emptied = stash.take("page.md", html)

    # The templates' promise the summary text relies on: one match per excluded
    # block, and no div inside one (its first </div> closes it).
    blocks = PAYLOAD.findall(html)
    assert len(blocks) == html.count("data-search-exclude") > 0
    assert not any("<div" in content for _, content, _ in blocks)
    # What search reads of the block is one paragraph of plain text: no tag to walk.
    marked = emptied.split(BLOCK_START, 1)[1].split(BLOCK_END, 1)[0]
    assert marked.startswith("<p>")
    assert marked.endswith("</p>")
    assert "<" not in marked.removeprefix("<p>").removesuffix("</p>")
    (paragraph,) = parse(marked).find("p")
    # ...holding every summary line outside the payloads, and nothing of a payload.
    summaries = [
        s.text for s in parse(html).find("summary") if not any("data-search-exclude" in a.attrs for a in s.ancestors())
    ]
    squeezed = " ".join(paragraph.text.split())
    for line in summaries:
        assert " ".join(line.split()) in squeezed
    # A payload only the context table holds: the system prompt sent.
    traces = FixtureSource().traces("ch05_loop_endings") if name == "ch05" else None
    if traces is not None and traces.mock is not None:
        system = traces.mock.scenarios[0].transcript[0].content
        assert system in html
        assert system not in squeezed
    assert len(emptied) < len(html) / 3

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
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.primer"):
        assert stash.give_back("p.md", emptied.replace(BLOCK_END, "", 1)) == html
    assert "p.md" in caplog.text
