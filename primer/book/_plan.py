"""What a build does with each chapter, decided from data alone.

The plan reads nothing and runs nothing: given a chapter's fingerprint (the
``source_hash`` of its code now), what the store holds, the settings, and
what a replay found, it says what is current and what is to be done::

    mock   is_current(stored, key)   reuse the cached mock trace, or run it
                                     (in this process, or in a new one when
                                     library code changed under a long-lived
                                     process: the executor's choice)
    verify wants_verify(frozen, ...) replay a frozen live trace whose code
                                     changed, unless it is recorded again anyway
    live   plan_live(...)            the live status the page shows, whether to
                                     record the chapter live now, and how many
                                     scenarios count as reused
    settle settle_live(...)          after a live refresh: replace the frozen
                                     trace, or keep it (a refresh is all or
                                     nothing per chapter)

The build (``primer.book._build``) reads the store, asks the plan, has the
executor (``primer.book._execute``) do the work, and hands the results back to
the store. Keeping the decisions here, pure, is what lets them be tested
without a book, and read in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from primer.book._report import failed
from primer.book._source import LiveStatus
from primer.settings import Settings
from primer.trace import ChapterRun, ErrorInfo

if TYPE_CHECKING:
    from primer.replay import ChapterCheck

__all__ = ["LivePlan", "Settled", "is_current", "plan_live", "settle_live", "wants_verify"]

#: Why a chapter has no live trace yet.
NEVER_RECORDED = "no live run has been recorded yet: set PRIMER_API_KEY and build to record one"
#: Why a long-lived process (``mkdocs serve``) waits before recording live.
LIBRARY_CHANGED = "library code changed since this server started: the live refresh waits for a new build"


def is_current(run: ChapterRun | None, key: str) -> bool:
    """Whether a stored run was made by the code now on disk."""
    return run is not None and run.source_hash == key


def wants_verify(frozen: ChapterRun | None, key: str, settings: Settings) -> bool:
    """Whether a frozen live trace is to be verified by replaying its recording.

    Only when its code changed, and not when it is recorded again whatever
    a replay says (a key is set and a refresh is asked for, or it holds a
    failed scenario).
    """
    if frozen is None or frozen.source_hash == key:
        return False
    refreshed = settings.live == "refresh" or any(failed(run) for run in frozen.scenarios)
    return not (settings.live_enabled and refreshed)


@dataclass(frozen=True)
class LivePlan:
    """What a build does with one chapter's live trace."""

    #: What the page says about the live trace it shows.
    status: LiveStatus
    #: Whether the chapter is to be recorded live now.
    record: bool
    #: Scenarios of the frozen trace counted as reused by this build.
    reused: int
    #: Where a replay diverged, as a sentence for the log (None if none did);
    #: a warning when the stale trace stays, a note when it is recorded again.
    divergence: str | None = None


def plan_live(
    frozen: ChapterRun | None,
    key: str,
    check: ChapterCheck | None,
    settings: Settings,
    *,
    stale_library: bool,
    path: str,
) -> LivePlan:
    """Decide a chapter's live trace: its status, and whether to record it now.

    ``frozen`` is the stored live trace (re-stamped already if a replay
    verified it), ``check`` what the replay found (None if none was tried),
    ``stale_library`` whether this process runs library code older than the
    files (then nothing is recorded: the next build does it), ``path`` how
    messages name the frozen file.
    """
    when = f" (recorded {frozen.recorded_at})" if frozen and frozen.recorded_at else ""
    verified = check is not None and check.verified
    divergence = check.divergence if check is not None else None
    if frozen is None:
        status = LiveStatus("missing", NEVER_RECORDED)
    elif frozen.source_hash == key:
        status = LiveStatus("current", "")
    elif divergence is not None:
        status = LiveStatus(
            "stale",
            f"recorded from earlier code{when}, and replayed against the code now it diverged: "
            f"{divergence.line()}. Set PRIMER_API_KEY to record it again",
        )
    else:
        status = LiveStatus("stale", f"recorded from earlier code{when}: set PRIMER_API_KEY to refresh it")
    counted = 0 if verified or frozen is None else len(frozen.scenarios)
    said = None
    if divergence is not None:
        action = "it is recorded again now" if settings.live_enabled else "it is shown stale"
        said = f"traces: the live trace {path} no longer matches the code: replayed, {divergence.line()}; {action}"
    if not settings.live_enabled:
        if settings.api_key is not None and frozen is not None and frozen.source_hash != key:
            earlier = status.reason if divergence is not None else f"recorded from earlier code{when}"
            status = LiveStatus("stale", f"{earlier}; PRIMER_LIVE=off")
        return LivePlan(status, record=False, reused=counted, divergence=said)
    wanted = (
        frozen is None
        or frozen.source_hash != key
        or settings.live == "refresh"
        or any(failed(run) for run in frozen.scenarios)
    )
    if not wanted:
        return LivePlan(status, record=False, reused=counted, divergence=said)
    if stale_library:
        return LivePlan(LiveStatus(status.state, LIBRARY_CHANGED), record=False, reused=0, divergence=said)
    return LivePlan(status, record=True, reused=0, divergence=said)


@dataclass(frozen=True)
class Settled:
    """What a live refresh leaves: the trace shown, whether it replaces the frozen file, and its status."""

    shown: ChapterRun
    save: bool
    status: LiveStatus


def settle_live(frozen: ChapterRun | None, new: ChapterRun) -> Settled:
    """Keep or replace the frozen trace after a refresh: all or nothing per chapter.

    The runs of one file share one ``source_hash``, so the file is replaced
    only when every scenario of the refresh succeeded, or when the trace it
    replaces had nothing better (none, or every scenario failed): then the
    page shows the failure. Otherwise the earlier trace stands, and the page
    says why.
    """
    bad = [run for run in new.scenarios if failed(run)]
    if bad and frozen is not None and not all(failed(run) for run in frozen.scenarios):
        names = ", ".join(run.name for run in bad)
        when = f"recorded {frozen.recorded_at}" if frozen.recorded_at else "recorded earlier"
        status = LiveStatus(
            "stale",
            f"the live trace shown was {when}: the refresh of {new.recorded_at} failed ({names}), so it was kept",
            ErrorInfo(type=bad[0].ending.reason, message=bad[0].ending.detail or bad[0].ending.label),
        )
        return Settled(frozen, save=False, status=status)
    return Settled(new, save=True, status=LiveStatus("current", ""))
