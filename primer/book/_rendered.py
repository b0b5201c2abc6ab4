"""Rendered markers, kept in their chapter's entry of the one cache (``primer.book._cache``).

The Markdown extension asks before it renders a marker (the plugin hands it
the book's ``Rendered`` as the extension's ``cache``). A marker's HTML
depends on the chapter's traces and the renderer, which the chapter's key
stands for, and on *where it goes*, its slot in the entry: the scenario asked
for, whether the chapter's head is drawn, and the anchors the page used
before it (ids must stay unique within a page, so a second trace of a run on
one page is different HTML). A slot's file is a first line of JSON (the ids
the HTML uses, added to the page's when it is reused) and the HTML as it is.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from primer.book._logs import book_logger

if TYPE_CHECKING:
    from primer.book._cache import TraceCache
    from primer.book._source import ChapterTraces

__all__ = ["Anchors", "Rendered"]

log = book_logger("mkdocs.plugins.primer.book")


class Anchors(Protocol):
    """The ids a page uses so far: ``primer.book._render.Anchors``, or the extension's ``PageIds`` (no renderer)."""

    used: set[str]


def _slot(scenario: str | None, anchors: Anchors, head: bool, variant: str) -> str:
    # ``variant``: what else the HTML depends on (the extension's render options), besides the chapter's key.
    used = "\n".join(sorted(anchors.used)) + (f"\0{variant}" if variant else "")
    page = hashlib.sha256(used.encode()).hexdigest()[:12] if used else "first"
    return f"marker-{scenario or 'all'}-{'head' if head else 'body'}-{page}.html"


class Rendered:
    """Markers' HTML by chapter key and slot; ``key_of`` gives a chapter's key in this build (None: not kept)."""

    def __init__(self, cache: TraceCache, key_of: Callable[[str], str | None]) -> None:
        self.cache = cache
        self.key_of = key_of
        #: Markers rendered and reused since ``reset``, and the seconds spent here.
        self.rendered = 0
        self.reused = 0
        self.seconds = 0.0

    def reset(self) -> None:
        """Start counting a new build."""
        self.rendered = self.reused = 0
        self.seconds = 0.0

    def cached(
        self, chapter: str, scenario: str | None, key: str, *, anchors: Anchors, head: bool, variant: str = ""
    ) -> str | None:
        """The HTML kept for this marker under the chapter's ``key``; None: render it with ``html``."""
        started = time.perf_counter()
        try:
            return self._read(chapter, key, _slot(scenario, anchors, head, variant), anchors)
        finally:
            self.seconds += time.perf_counter() - started

    def _read(self, chapter: str, key: str, slot: str, anchors: Anchors) -> str | None:
        text = self.cache.entry(chapter, key).read(slot)
        if text is None:
            return None
        first, _, html = text.partition("\n")
        try:
            anchors.used.update(json.loads(first)["anchors"])
        except (ValueError, KeyError, TypeError):
            return None  # rendered again and overwritten
        self.reused += 1
        return html

    def html(
        self,
        traces: ChapterTraces,
        scenario: str | None,
        *,
        anchors: Anchors,
        head: bool,
        render: Callable[[], str],
        variant: str = "",
    ) -> str:
        """The HTML ``render()`` gives for this marker, kept in the chapter's entry.

        ``render`` must draw ``traces`` (one ``scenario``, or all) with
        ``anchors`` and ``head`` as given: it is what the slot stands for.
        """
        started = time.perf_counter()
        try:
            key = self.key_of(traces.chapter)
            slot = _slot(scenario, anchors, head, variant)
            if key is not None and (kept := self._read(traces.chapter, key, slot, anchors)) is not None:
                return kept
            before = set(anchors.used)
            html = render()
            self.rendered += 1
            if key is not None:
                head_line = json.dumps({"anchors": sorted(anchors.used - before)})
                self.cache.entry(traces.chapter, key).write(slot, f"{head_line}\n{html}")
            return html
        finally:
            self.seconds += time.perf_counter() - started
