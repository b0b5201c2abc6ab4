"""The hand-over between the trace store and the renderer.

The renderer asks a ``TraceSource`` for a chapter's ``ChapterTraces``: the
mock run, the live run if there is one, and the live run's status (why there
is none, or why the one shown is from an earlier run). What a page needs of
a chapter without reading its runs, the scenario names, the live status and
the chapter's key in the one cache (``primer.book._cache``), is its ``Shown``.
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

__all__ = ["ChapterTraces", "LiveStatus", "Shown", "TraceSource"]


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
class Shown:
    """What the pages show of a chapter in this build, without its runs: names, live status, its key.

    The same in every build, warm or cold: a page checks its markers against
    the names and takes its HTML from the chapter's entry in the cache by
    ``key``; the runs are read only when that HTML is missing.
    """

    chapter: str
    #: The chapter's key in the one cache (``primer.book._cache.chapter_key``).
    key: str
    #: The scenarios of the mock run, in order.
    mock: tuple[str, ...]
    #: The scenarios of the live run shown, in order; None if there is none.
    live: tuple[str, ...] | None
    live_status: LiveStatus

    @property
    def names(self) -> list[str]:
        """Every scenario name of both runs, mock first, each once."""
        return list(dict.fromkeys([*self.mock, *(self.live or ())]))

    def write(self, entry: Entry, warnings: list[str]) -> None:
        """Keep this in ``entry``, with the warnings to say again whenever it is shown from there.

        A live status with a failure is not kept: the next build tries the refresh again.
        """
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
    def read(cls, entry: Entry) -> tuple[Shown, list[str], int] | None:
        """What ``entry`` keeps (``write``): the ``Shown``, its warnings, its scenarios; None if it keeps none."""
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
        return shown, warnings, len(shown.mock) + len(shown.live or ())

    @classmethod
    def of(cls, traces: ChapterTraces, key: str) -> Shown:
        """What pages show of ``traces``, kept under ``key``."""
        mock = tuple(s.name for s in traces.mock.scenarios) if traces.mock is not None else ()
        live = tuple(s.name for s in traces.live.scenarios) if traces.live is not None else None
        return cls(traces.chapter, key, mock, live, traces.live_status)


class TraceSource(Protocol):
    """Gives the renderer a chapter's traces."""

    def traces(self, chapter: str) -> ChapterTraces:
        """The traces of a chapter; raises ``primer.errors.NotFound`` if none."""
        ...
