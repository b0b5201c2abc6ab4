"""Trace blocks set aside while search reads a page (the plugin's on_page_content): each found, each put back."""

from __future__ import annotations

import logging
import re
from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

import pytest

from primer.book._plugin import TraceBookPlugin
from primer.book._render import render_traces
from primer.book.markdown import PAYLOAD, TraceExtension, search_text
from tests.test_render_data import FixtureSource, hostile_chapter, parse

UNUSED: Any = None


class Stash:
    """The plugin's two events around search, on one page whose extension rendered ``blocks``."""

    def __init__(self, *blocks: str) -> None:
        self.plugin = TraceBookPlugin()
        self.plugin.extension = TraceExtension()
        self.plugin.extension.blocks = [(search_text(block), block) for block in blocks]
        self.page: Any = SimpleNamespace(file=SimpleNamespace(src_uri="p.md"), content=None)

    def take(self, html: str) -> str:
        return self.plugin.on_page_content(html, page=self.page, config=UNUSED, files=UNUSED)

    def taken(self) -> list[str]:
        return list(self.plugin.taken[self.page.file.src_uri][1].values())

    def give_back(self, html: str) -> str:
        self.page.content = html
        self.plugin.on_page_context(UNUSED, page=self.page, config=UNUSED, nav=UNUSED)
        assert "p.md" not in self.plugin.taken
        return str(self.page.content)


def _pages() -> dict[str, str]:
    source = FixtureSource()
    linked = source.traces("ch09_who_retries")._replace(payloads_url="traces/ch09_who_retries.payloads.html")
    return {
        "ch05": render_traces(source.traces("ch05_loop_endings")),
        "ch09": render_traces(source.traces("ch09_who_retries")),
        # As a book publishes it: each payload block a link to the payload page, until the script fills it in.
        "ch09 linked": render_traces(linked),
        "hostile": render_traces(hostile_chapter()),
    }


@pytest.mark.parametrize("name", ["ch05", "ch09", "ch09 linked", "hostile"])
def test_every_trace_block_is_set_aside_as_its_summary_text_and_comes_back(name: str) -> None:
    block = _pages()[name]
    html = f"<h1>Page</h1>\n{block}\n<p>after</p>"
    stash = Stash(block)
    emptied = stash.take(html)

    # The templates' promise the summary text relies on: one match per excluded
    # block, and no div inside one (its first </div> closes it).
    blocks = PAYLOAD.findall(html)
    controls = re.findall(r'<(div|p|span) class="tr-(?:head|status|switch)[^>]* data-search-exclude', html)
    assert len(blocks) + len(controls) == html.count("data-search-exclude") > len(blocks) > 0
    assert not any(f"<{tag}" in content for _, tag, content, _ in blocks)
    # What search reads of the block is one paragraph of plain text: no tag to walk.
    assert emptied.startswith("<h1>Page</h1>\n<!--trace-book:0--><p>")
    assert emptied.endswith("</p>\n<p>after</p>")
    marked = emptied.removeprefix("<h1>Page</h1>\n<!--trace-book:0-->").removesuffix("\n<p>after</p>")
    assert marked.startswith("<p>")
    assert marked.endswith("</p>")
    assert "<" not in marked.removeprefix("<p>").removesuffix("</p>")
    (paragraph,) = parse(marked).find("p")
    # ...holding every summary line outside the payloads, and nothing of a payload.
    summaries = [
        s.text
        for s in parse(html).elements()
        if s.is_summary() and not any("data-search-exclude" in a.attrs for a in s.ancestors())
    ]
    squeezed = " ".join(paragraph.text.split())
    for line in summaries:
        assert " ".join(line.split()) in squeezed
    # ...nothing of a payload block's link (search leaves it out: data-search-exclude)...
    if name == "ch09 linked":
        assert "payloads (on their own page)" in html
    assert "payloads (on their own page)" not in squeezed
    # ...nothing of the chapter's head, live status or switches (a result's text read "show: mock live ..."
    # and the download links' labels)...
    assert "show:" not in squeezed
    assert "trace JSON" not in squeezed
    assert "recorded 20" not in squeezed
    assert not re.search(r"\bmock live\b", squeezed)
    # ...and nothing of the renderer's script.
    assert "<script>" in block
    assert "requestAnimationFrame" not in squeezed
    # A payload only the context table holds: the system prompt sent.
    traces = FixtureSource().traces("ch05_loop_endings") if name == "ch05" else None
    if traces is not None and traces.mock is not None:
        system = traces.mock.scenarios[0].transcript[0].content
        assert system in html
        assert system not in squeezed
    assert len(emptied) < len(html) / 3

    assert stash.give_back(emptied) == html


def test_a_page_without_traces_is_left_alone() -> None:
    html = "<p>prose</p>"
    stash = Stash()
    assert stash.take(html) == html
    assert stash.give_back(html) == html


def test_a_block_another_plugin_changed_is_left_for_search_to_read() -> None:
    ch05, ch09 = _pages()["ch05"], _pages()["ch09"]
    html = f"{ch05}<p>between</p>{ch09.replace('<details', '<details data-x', 1)}"
    stash = Stash(ch05, ch09)
    emptied = stash.take(html)
    assert stash.taken() == [ch05]
    assert emptied.endswith(f"<p>between</p>{ch09.replace('<details', '<details data-x', 1)}")
    assert stash.give_back(emptied) == html


def test_search_plugins_changes_are_kept() -> None:
    block = _pages()["ch05"]
    html = '<p data-search-boost="2">x</p>' + block
    stash = Stash(block)
    emptied = stash.take(html)
    # As Material's search plugin does once it has indexed the page.
    indexed = emptied.replace(' data-search-boost="2"', "")
    assert stash.give_back(indexed) == html.replace(' data-search-boost="2"', "")


def test_blocks_lost_meanwhile_give_the_page_back_whole(caplog: pytest.LogCaptureFixture) -> None:
    ch05, ch09 = _pages()["ch05"], _pages()["ch09"]
    stash = Stash(ch05, ch09)
    html = f"{ch05}<p>between</p>{ch09}"
    lost = stash.take(html).replace("<!--trace-book:1-->", "", 1)
    # The plugin then gives the page its HTML from before, and says so.
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.primer"):
        assert stash.give_back(lost) == html
    assert "p.md: a plugin changed the page" in caplog.text


def test_search_text_beyond_latin_1_is_a_reference_that_search_reads_as_the_character() -> None:
    # A page holding one character beyond Latin-1 is two bytes a character for every pass over it.
    block = "<details><summary>price_of: 429 &#8594; waited 1s &#8594; 200 · 1.20 <b>&lt;x&gt;</b></summary></details>"
    said = search_text(block)
    assert said == "price_of: 429 &#8594; waited 1s &#8594; 200 · 1.20 &lt;x&gt;"
    assert max(map(ord, said)) <= 0xFF
    parser = _Text()
    parser.feed(f"<p>{said}</p>")
    assert "".join(parser.found) == "price_of: 429 → waited 1s → 200 · 1.20 <x>"


class _Text(HTMLParser):  # as search reads a page: references decoded
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_data(self, data: str) -> None:
        self.found.append(data)
