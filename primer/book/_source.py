"""The hand-over to the renderer: a ``TraceSource`` gives a chapter's ``ChapterTraces`` (its runs and live status).

What a page needs of a chapter without reading its runs (its scenario names, live status and key
in the one cache, ``primer.book._cache``) is its ``Shown``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:  # the trace models are not loaded with traces off, nor by a warm build
    from primer.book._cache import Entry
    from primer.trace import ChapterRun, ErrorInfo

#: The part of a chapter's entry in the cache that keeps its ``Shown``.
SHOWN = "shown.json"

__all__ = ["Chapter", "ChapterTraces", "LiveStatus", "Shown", "TraceSource"]


@dataclass(frozen=True)
class LiveStatus:
    """Where the live run of a chapter stands, and why (``reason``).

    ``current``: recorded from the chapter's code now; ``stale``: from earlier code, kept because no
    key is set or the refresh failed (``failure`` says how); ``missing``: never recorded.
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
    #: Where its payload page is: with one, a page's payload blocks link to it (traces.js fills them in).
    payloads_url: str | None = None


@dataclass(frozen=True)
class Shown:
    """What the pages show of a chapter, without its runs: the same in every build, warm or cold.

    A page checks its markers against the scenario names and takes its HTML from the chapter's
    entry in the cache by ``key``; the runs are read only when that HTML is missing.
    """

    chapter: str
    key: str
    #: The scenarios of the mock run, and of the live run shown (None: there is none), in order.
    mock: tuple[str, ...]
    live: tuple[str, ...] | None
    live_status: LiveStatus

    @property
    def names(self) -> list[str]:
        """Every scenario name of both runs, mock first, each once."""
        return list(dict.fromkeys([*self.mock, *(self.live or ())]))

    def write(self, entry: Entry, warnings: list[str]) -> None:
        """Keep this in ``entry`` with the warnings to say again (not with a failure: the next build tries again)."""
        if self.live_status.failure is not None:
            return
        data = {
            "mock": list(self.mock),
            "live": list(self.live) if self.live is not None else None,
            "status": [self.live_status.state, self.live_status.reason],
            "warnings": warnings,
        }
        entry.write(SHOWN, json.dumps(data, separators=(",", ":")))

    @classmethod
    def read(cls, entry: Entry) -> tuple[Shown, list[str]] | None:
        """What ``entry`` keeps (``write``): the ``Shown`` and its warnings; None if it keeps none."""
        text = entry.read(SHOWN)
        if text is None:
            return None
        try:
            data = json.loads(text)
            live = tuple(data["live"]) if data["live"] is not None else None
            shown = cls(entry.chapter, entry.key, tuple(data["mock"]), live, LiveStatus(*data["status"]))
            warnings = [str(warning) for warning in data["warnings"]]
        except (ValueError, KeyError, TypeError):
            return None  # made again, and the file replaced
        return shown, warnings

    @classmethod
    def of(cls, traces: ChapterTraces, key: str) -> Shown:
        """What pages show of ``traces``, kept under ``key``."""
        mock = tuple(s.name for s in traces.mock.scenarios) if traces.mock is not None else ()
        live = tuple(s.name for s in traces.live.scenarios) if traces.live is not None else None
        return cls(traces.chapter, key, mock, live, traces.live_status)


@dataclass(frozen=True)
class Chapter:
    """What the pages show of one chapter, as a build prepared it."""

    shown: Shown
    #: Its runs, when the build has them (None: read from its entry when a page asks).
    traces: ChapterTraces | None
    #: The scenarios markers may name (None: the chapter could not be imported).
    names: tuple[str, ...] | None
    #: What the build warned about it (said again by every build that shows it from its entry).
    warnings: tuple[str, ...] = ()


class TraceSource(Protocol):
    """Gives the renderer a chapter's traces."""

    def traces(self, chapter: str) -> ChapterTraces:
        """The traces of a chapter; raises ``primer.errors.NotFound`` if none."""
        ...
