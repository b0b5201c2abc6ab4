"""The hand-over between the trace store and the renderer.

The renderer asks a ``TraceSource`` for a chapter's ``ChapterTraces``: the
mock run, the live run if there is one, and the live run's status (why there
is none, or why the one shown is from an earlier run). A warm build that
finds nothing changed hands out ``TraceSummary`` objects instead
(``primer.book.manifest``).

The one marker parser (``::: trace CHAPTER [SCENARIO]``) is
``primer.book.markers``; its names are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from primer.book.markers import MARKER_FORM, Marker, NearMiss, find_markers, find_near_misses, parse_line, scan

if TYPE_CHECKING:  # the trace models are not loaded with traces off, nor by a warm build
    from primer.trace import ChapterRun, ErrorInfo

__all__ = [
    "MARKER_FORM",
    "ChapterTraces",
    "LiveStatus",
    "Marker",
    "NearMiss",
    "TraceSource",
    "TraceSummary",
    "find_markers",
    "find_near_misses",
    "parse_line",
    "scan",
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
    #: Where the chapter's payload page is published, relative to the site root: with
    #: one, a page's payload blocks link to it (traces.js fills them in when opened).
    payloads_url: str | None = None


@dataclass(frozen=True)
class TraceSummary:
    """What a page needs of a chapter's traces when they have not been read: names and keys.

    A warm build that finds every trace current (``primer.book.manifest``)
    hands these out instead of reading the trace files: a page checks its
    markers against the names and takes its HTML from the cache by ``html``;
    the runs themselves are read only if that HTML is missing.
    """

    chapter: str
    #: The scenarios of the mock run, in order.
    mock: tuple[str, ...]
    #: The scenarios of the live run shown, in order; None if there is none.
    live: tuple[str, ...] | None
    live_status: LiveStatus
    #: The key the rendered HTML is kept by (``primer.book.html_cache.HtmlCache.traces_key``).
    html: str
    #: The key the published JSON is kept by in the cache (``primer.book.store``); None if unknown.
    published: str | None

    @property
    def names(self) -> list[str]:
        """Every scenario name of both runs, mock first, each once."""
        return list(dict.fromkeys([*self.mock, *(self.live or ())]))


class TraceSource(Protocol):
    """Gives the renderer a chapter's traces."""

    def traces(self, chapter: str) -> ChapterTraces:
        """The traces of a chapter; raises ``primer.errors.NotFound`` if none."""
        ...
