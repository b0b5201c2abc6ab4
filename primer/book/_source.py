"""The hand-over to the renderer: a ``TraceSource`` gives a chapter's ``ChapterTraces`` (its runs and live status).

What a build shows of a chapter without reading its runs (its scenario names, live status, warnings
and key in the one cache, ``primer.book._cache``) is its ``Shown``: the same value warm or cold.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

from primer.book._links import PAYLOADS_SUFFIX, PUBLISHED_DIR

if TYPE_CHECKING:  # the trace models are not loaded with traces off, nor by a warm build
    from primer.book._cache import Entry
    from primer.trace import ChapterRun, ErrorInfo

#: The part of a chapter's entry in the cache that keeps its ``Shown``.
SHOWN = "shown.json"
#: The one run of a chapter that could not be imported: its error, which every marker of the chapter shows.
IMPORT_RUN = "import"

__all__ = ["IMPORT_RUN", "SHOWN", "ChapterTraces", "LiveStatus", "Shown", "TraceSource", "traces_of"]


# Named tuples, not frozen dataclasses: made at every build's import, these three and ``Prepared`` took
# 19 M instructions as dataclasses, 3 M so (a warm build's machinery at 100 chapters is about 300 M).
class LiveStatus(NamedTuple):
    """Where the live run of a chapter stands, and why (``reason``).

    ``current``: recorded from the chapter's code now; ``stale``: from earlier code, kept because no
    key is set or the refresh failed (``failure`` says how); ``missing``: never recorded.
    """

    state: Literal["current", "stale", "missing"]
    reason: str = ""
    failure: ErrorInfo | None = None


class ChapterTraces(NamedTuple):
    """Everything the renderer needs for one chapter."""

    chapter: str
    mock: ChapterRun | None
    live: ChapterRun | None
    live_status: LiveStatus
    #: Where the chapter's trace JSON is published, relative to the site root.
    download_url: str | None = None
    #: Where its payload page is: with one, a page's payload blocks link to it (traces.js fills them in).
    payloads_url: str | None = None


class Shown(NamedTuple):
    """What the pages show of one chapter, as a build prepared it, kept in its entry under ``key``.

    A page checks its markers against the scenario names and takes its HTML from the entry; the
    runs are read (the mock run by ``code``, the fingerprint of the chapter's code) only on a miss.
    """

    chapter: str
    key: str
    code: str
    #: The scenarios of the mock run, and of the live run shown (None: there is none), in order.
    mock: tuple[str, ...]
    live: tuple[str, ...] | None
    live_status: LiveStatus
    #: The day a replay verified the frozen live trace under ``code``: shown so stamped (``build --stamp``).
    verified_at: str | None = None
    #: False: the chapter could not be imported (its markers can name no scenario), and is kept nowhere.
    importable: bool = True
    #: What the build warned about it (said again by every build that shows it from its entry).
    warnings: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys([*self.mock, *(self.live or ())]))

    def write(self, entry: Entry) -> None:
        """Keep this in ``entry`` (not with a failure: the next build tries again)."""
        if self.live_status.failure is not None:
            return
        data = [self.code, self.mock, self.live, self.live_status.state, self.live_status.reason]
        entry.write(SHOWN, json.dumps([*data, self.verified_at, self.warnings], separators=(",", ":")))

    @classmethod
    def read(cls, entry: Entry) -> Shown | None:
        try:
            code, mock, live, state, reason, day, warnings = json.loads(entry.read(SHOWN) or "null")
            live = tuple(map(str, live)) if live is not None else None
            said = tuple(map(str, warnings))
            status = LiveStatus(state, reason)
            return cls(entry.chapter, entry.key, str(code), tuple(map(str, mock)), live, status, day, warnings=said)
        except (ValueError, TypeError):
            return None  # made again, and the file replaced


class TraceSource(Protocol):
    """Gives the renderer a chapter's traces."""

    def traces(self, chapter: str) -> ChapterTraces:
        """The traces of a chapter; raises ``primer.errors.NotFound`` if none."""
        ...


def traces_of(chapter: str, mock: ChapterRun | None, live: ChapterRun | None, status: LiveStatus) -> ChapterTraces:
    """A chapter's runs with the places ``publish`` puts its files, relative to the site root."""
    where = f"{PUBLISHED_DIR}/{chapter}"
    return ChapterTraces(chapter, mock, live, status, f"{where}.json", f"{where}{PAYLOADS_SUFFIX}")
