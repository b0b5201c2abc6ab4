"""The cache of rendered traces: the same HTML as rendering, rendered only when something it shows changed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import markdown
import pytest

from primer.book.html_cache import HtmlCache, renderer_fingerprint, traces_digest
from primer.book.markdown import TraceExtension
from primer.book.render import Anchors, render_traces
from primer.book.source import ChapterTraces, LiveStatus
from tests.test_render_data import HOSTILE, FixtureSource, hostile_chapter

pytestmark = pytest.mark.slow  # a second or two of CPU each: the renderer's fingerprint and whole renders

# Two markers of one chapter and one of another: heads, and ids made unique across markers.
PAGE = """# Page

::: trace ch09_who_retries service_is_busy

::: trace ch05_loop_endings

::: trace ch09_who_retries

::: trace ch09_who_retries service_is_busy
"""


def _convert(source: FixtureSource, cache: HtmlCache | None, text: str = PAGE) -> str:
    return markdown.Markdown(extensions=["tables", TraceExtension(source=source, cache=cache)]).convert(text)


def test_cached_pages_are_the_rendered_pages(tmp_path: Path) -> None:
    source = FixtureSource()
    rendered = _convert(source, None)
    cache = HtmlCache(tmp_path)

    assert _convert(source, cache) == rendered
    assert (cache.rendered, cache.reused) == (4, 0)
    cache.reset()
    assert _convert(source, cache) == rendered, "reused from memory, the ids a page's later markers get included"
    assert (cache.rendered, cache.reused) == (0, 4)

    # A new process: from the files alone.
    again = HtmlCache(tmp_path)
    assert _convert(source, again) == rendered
    assert (again.rendered, again.reused) == (0, 4)
    assert len(list(tmp_path.iterdir())) == 4, "one file per marker slot"


class _Moved(FixtureSource):
    """ch05's JSON published elsewhere: its HTML changes, no id does."""

    def traces(self, chapter: str) -> ChapterTraces:
        traces = super().traces(chapter)
        return dataclasses.replace(traces, download_url="elsewhere.json") if chapter == "ch05_loop_endings" else traces


def test_a_change_to_the_traces_renders_that_chapter_again(tmp_path: Path) -> None:
    cache = HtmlCache(tmp_path)
    _convert(FixtureSource(), cache)
    cache.reset()

    changed = _convert(_Moved(), cache)
    assert changed == _convert(_Moved(), None)
    assert "elsewhere.json" in changed
    assert (cache.rendered, cache.reused) == (1, 3)
    assert len(list(tmp_path.iterdir())) == 4, "a slot whose key changed is overwritten, not added"


def test_the_key_covers_what_the_renderer_reads() -> None:
    traces = FixtureSource().traces("ch05_loop_endings")
    digest = traces_digest(traces)
    assert traces_digest(dataclasses.replace(traces)) == digest
    assert traces_digest(dataclasses.replace(traces, live=None)) != digest
    assert traces_digest(dataclasses.replace(traces, live_status=LiveStatus("stale", "why"))) != digest
    assert traces_digest(dataclasses.replace(traces, download_url=None)) != digest
    assert len(renderer_fingerprint()) == 64


def test_a_file_that_cannot_be_read_is_rendered_again(tmp_path: Path) -> None:
    source = FixtureSource()
    rendered = _convert(source, HtmlCache(tmp_path))
    for path in tmp_path.iterdir():
        path.write_bytes(b'{"key": "truncated')
    cache = HtmlCache(tmp_path)
    assert _convert(source, cache) == rendered
    assert cache.rendered == 4
    # ... and the files were replaced whole.
    fresh = HtmlCache(tmp_path)
    assert _convert(source, fresh) == rendered
    assert fresh.reused == 4


def test_a_folder_that_cannot_be_written_leaves_the_page_whole(tmp_path: Path) -> None:
    # A file where the folder should be: no one, root included, can write there.
    (tmp_path / "blocked").write_text("")
    cache = HtmlCache(tmp_path / "blocked" / "html")
    assert _convert(FixtureSource(), cache) == _convert(FixtureSource(), None)
    assert cache.rendered == 4


def test_html_comes_back_byte_for_byte(tmp_path: Path) -> None:
    # Markup, line ends of every kind and text beyond ASCII in what the model said.
    traces = hostile_chapter((*HOSTILE, "one\r\ntwo\rthree\u2028four ünïcödé 🧾"))
    expected = render_traces(traces, anchors=Anchors())
    assert "\r" in expected
    anchors = Anchors()
    HtmlCache(tmp_path).html(
        traces, None, anchors=anchors, head=True, render=lambda: render_traces(traces, anchors=anchors)
    )
    replayed = Anchors()
    html = HtmlCache(tmp_path).html(traces, None, anchors=replayed, head=True, render=lambda: "not used")
    assert html == expected
    assert replayed.used == anchors.used


def test_prune_drops_the_slots_a_full_build_did_not_use(tmp_path: Path) -> None:
    cache = HtmlCache(tmp_path)
    _convert(FixtureSource(), cache)
    cache.reset()
    # The page now places one marker: the three others' files are stale.
    _convert(FixtureSource(), cache, "::: trace ch09_who_retries service_is_busy\n")
    assert len(cache.prune()) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["ch09_who_retries-service_is_busy-head-first.html"]
    cache.reset()
    assert cache.prune() == [], "a build that rendered nothing prunes nothing"
    assert len(list(tmp_path.iterdir())) == 1
