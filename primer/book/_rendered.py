"""Rendered markers, kept in their chapter's entry of the one cache (``primer.book._cache``).

A marker's HTML depends on the chapter's traces and the renderer (which the chapter's key stands
for) and on where it goes, its slot: the scenario asked for, whether the chapter's head is drawn,
and the ids the page used before it (a second trace of a run on one page is different HTML). A
slot's file is a line of JSON (the ids the HTML uses, added to the page's when it is reused), then
the HTML as it is.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from primer.book._cache import TraceCache
    from primer.book._source import ChapterTraces

__all__ = ["Rendered"]


def _slot(scenario: str | None, used: set[str], head: bool, variant: str) -> str:
    # ``used``: the ids the page used so far; ``variant``: what else the HTML depends on (the extension says).
    said = "\n".join(sorted(used)) + (f"\0{variant}" if variant else "")
    page = hashlib.sha256(said.encode()).hexdigest()[:12] if said else "first"
    return f"marker-{scenario or 'all'}-{'head' if head else 'body'}-{page}.html"


class Rendered:
    """Markers' HTML by chapter key and slot; ``key_of`` gives a chapter's key in this build (None: not kept)."""

    def __init__(self, cache: TraceCache, key_of: Callable[[str], str | None]) -> None:
        self.cache = cache
        self.key_of = key_of
        self.reset()

    def reset(self) -> None:
        """Start counting a new build: markers rendered and reused, and the seconds spent on them."""
        self.rendered = self.reused = 0
        self.seconds = 0.0

    def cached(
        self, chapter: str, scenario: str | None, key: str, *, used: set[str], head: bool, variant: str = ""
    ) -> str | None:
        """The HTML kept for this marker under the chapter's ``key``; None: render it with ``html``."""
        started = time.perf_counter()
        text = self.cache.entry(chapter, key).read(_slot(scenario, used, head, variant))
        self.seconds += time.perf_counter() - started
        if text is None:
            return None
        first, _, html = text.partition("\n")
        try:
            used.update(json.loads(first)["anchors"])
        except (ValueError, KeyError, TypeError):
            return None  # rendered again and overwritten
        self.reused += 1
        return html

    def html(
        self,
        traces: ChapterTraces,
        scenario: str | None,
        *,
        used: set[str],
        head: bool,
        render: Callable[[], str],
        variant: str = "",
    ) -> str:
        """The HTML ``render()`` gives for this marker (drawing ``traces`` as the slot says), kept in the entry."""
        chapter, key = traces.chapter, self.key_of(traces.chapter)
        kept = self.cached(chapter, scenario, key, used=used, head=head, variant=variant) if key else None
        if kept is not None:
            return kept
        started = time.perf_counter()
        slot, before = _slot(scenario, used, head, variant), set(used)
        html = render()
        self.rendered += 1
        if key is not None:
            ids = json.dumps({"anchors": sorted(used - before)})
            self.cache.entry(chapter, key).write(slot, f"{ids}\n{html}")
        self.seconds += time.perf_counter() - started
        return html
