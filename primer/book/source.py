"""The hand-over between the trace store and the renderer.

A chapter page marks where traces go with one line of its own::

    ::: trace ch09_who_retries                    every scenario of the chapter
    ::: trace ch09_who_retries service_is_busy    one scenario

The renderer asks a ``TraceSource`` for a chapter's ``ChapterTraces``: the
mock run, the live run if there is one, and the live run's status (why there
is none, or why the one shown is from an earlier run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from primer.trace import ChapterRun, ErrorInfo

__all__ = ["MARKER", "ChapterTraces", "LiveStatus", "Marker", "TraceSource", "find_markers"]

#: A marker line: ``::: trace CHAPTER [SCENARIO]``, alone on its line.
MARKER = re.compile(
    r"^:::[ \t]+trace[ \t]+(?P<chapter>[A-Za-z0-9_]+)(?:[ \t]+(?P<scenario>[A-Za-z0-9_]+))?[ \t]*$", re.M
)


@dataclass(frozen=True)
class Marker:
    """One marker found in a page."""

    chapter: str
    scenario: str | None
    line: int


def find_markers(markdown: str) -> list[Marker]:
    """Every marker in a page's Markdown, with its line number (from 1)."""
    return [
        Marker(m["chapter"], m["scenario"], markdown.count("\n", 0, m.start()) + 1) for m in MARKER.finditer(markdown)
    ]


@dataclass(frozen=True)
class LiveStatus:
    """Where the live run of a chapter stands.

    ``state``:
    * ``current``: recorded from the chapter's current code;
    * ``stale``: recorded from earlier code, kept because no key is set or
      the refresh failed (``failure`` then says how);
    * ``missing``: never recorded (``reason`` says why: no key yet, or the
      run failed).
    """

    state: Literal["current", "stale", "missing"]
    reason: str = ""
    failure: ErrorInfo | None = None


@dataclass(frozen=True)
class ChapterTraces:
    """Everything the renderer needs for one chapter."""

    chapter: str
    mock: ChapterRun | None
    live: ChapterRun | None
    live_status: LiveStatus
    #: Where the chapter's trace JSON is published, relative to the site root.
    download_url: str | None = None


class TraceSource(Protocol):
    """Gives the renderer a chapter's traces."""

    def traces(self, chapter: str) -> ChapterTraces:
        """The traces of a chapter; raises ``primer.errors.NotFound`` if none."""
        ...
