"""The chapter's payload page stands alone: a way back, readable headings, links that land, no icon asked for."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

import pytest

from primer.book._render import render_payloads, render_traces
from tests.test_render_data import FixtureSource, parse

_HREF = re.compile(r'href="([^"]*)"')


def _ids(html: str) -> set[str]:
    return set(re.findall(r' id="([^"]+)"', html))


def test_the_payload_page_links_back_and_heads_each_block_in_words() -> None:
    traces = FixtureSource().traces("ch09_who_retries")
    page = render_payloads(traces, page_url="ch09_who_retries/")
    parse(page)  # well formed
    assert '<link rel="icon" href="data:,">' in page
    # From traces/, the chapter page is one folder up.
    assert (
        '<p><a href="../ch09_who_retries/" data-tr-root-relative="ch09_who_retries/">Back to the chapter page</a>'
        in page
    )
    headings = re.findall(r"<h2>([^<]+)</h2>", page)
    assert headings == [f"scenario {s.name}" for s in traces.mock.scenarios]
    blocks = [b.strip() for b in re.findall(r"<h3 class=\"tr-payload-head\">([^<]+)<", page)]
    # A block per run, its turns and calls each under its line (as on the chapter page), and the comparison.
    assert blocks.count("mock run") == len(traces.mock.scenarios)
    assert "live run" in blocks
    assert "mock and live side by side" in blocks
    lines = re.findall(r'<div class="tr-sum">([^<]+)</div>', page)
    assert any(line.startswith("turn 1 · ") and line.endswith(" · asked for: price_of") for line in lines)
    assert any(line.startswith("tool price_of · ") and "attempts: 2" in line for line in lines)
    assert any(line.startswith("transcript — ") for line in lines)
    assert not any("ch09_who_retries-" in block for block in blocks), "no raw ids for headings"
    # A heading is its words alone: the link to the chapter page stands beside it, not in it.
    assert re.findall(r"<h3 class=\"tr-payload-head\">[^<]+</h3> <a class=\"tr-payload-to\" ", page)
    assert "on the chapter page</a></h3>" not in page


def test_every_link_of_the_payload_page_lands_on_it_or_on_the_chapter_page() -> None:
    traces = FixtureSource().traces("ch09_who_retries")
    payloads = render_payloads(traces, page_url="ch09_who_retries/")
    chapter_page = render_traces(traces)
    here, there = _ids(payloads), _ids(chapter_page)
    checked = 0
    for href in _HREF.findall(payloads):
        address, _, fragment = href.partition("#")
        if address.startswith("data:"):  # the icon it declares empty
            continue
        if not address:
            assert fragment in here, href  # a fragment of this page: its target is here
        elif address.endswith(".json"):
            continue
        else:
            # From traces/, to the chapter page, whose element it names.
            assert posixpath.normpath(posixpath.join("traces", address)) == "ch09_who_retries", href
            assert not fragment or fragment in there, href
        checked += 1
    assert checked > 50
    # Without a known page, nothing points at one.
    alone = render_payloads(traces)
    assert "Back to the chapter page" not in alone
    assert "data-tr-page-link" not in alone


def test_the_home_page_as_chapter_page_is_the_site_root() -> None:
    page = render_payloads(FixtureSource().traces("ch05_loop_endings"), page_url="")
    assert '<a href="../" data-tr-root-relative="./">Back to the chapter page</a>' in page


def test_the_payload_page_draws_the_runs_inside_not_the_lines_the_chapter_page_shows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Its runs' turns and calls under their lines; not the lines the chapter page shows closed (scenario, story).
    from primer import summary

    drawn: list[str] = []

    def counted(name: str) -> Callable[..., str]:
        line = getattr(summary, name)

        def drawing(*args: object, **kwargs: object) -> str:
            drawn.append(name)
            return line(*args, **kwargs)

        return drawing

    for name in ("scenario_line", "scenario_story", "model_line", "tool_line", "chapter_line"):
        monkeypatch.setattr(summary, name, counted(name))
    traces = FixtureSource().traces("ch09_who_retries")
    page = render_payloads(traces, page_url="ch09_who_retries/")
    assert '<h3 class="tr-payload-head">mock run</h3>' in page
    assert set(drawn) == {"model_line", "tool_line"}
    drawn.clear()
    render_traces(traces)
    assert {"scenario_line", "model_line", "tool_line", "chapter_line"} <= set(drawn)
