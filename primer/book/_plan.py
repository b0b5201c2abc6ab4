"""What a build does with each chapter's traces, decided from data alone: it reads nothing and runs nothing.

``is_current`` (reuse a mock trace), ``wants_verify`` (replay a frozen live trace whose code
changed), ``plan_live`` (the live status the page shows, and whether to record now) and
``settle_live`` (after a refresh: all or nothing per chapter); ``anomalies`` reads a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from primer.book._source import LiveStatus
from primer.errors import quoted

if TYPE_CHECKING:
    from primer.replay import ChapterCheck
    from primer.settings import Settings
    from primer.trace import ChapterRun, ErrorInfo, ScenarioRun

__all__ = [
    "LIBRARY_CHANGED",
    "NEVER_RECORDED",
    "LivePlan",
    "Settled",
    "anomalies",
    "is_current",
    "plan_live",
    "settle_live",
    "wants_verify",
]

#: Why a chapter has no live trace yet.
NEVER_RECORDED = "no live run has been recorded yet: set PRIMER_API_KEY and build to record one"
#: Why a long-lived process (``mkdocs serve``) waits before recording live.
LIBRARY_CHANGED = "library code changed since this server started: the live refresh waits for a new build"


def is_current(run: ChapterRun | None, key: str) -> bool:
    """Whether a stored run was made by the code now on disk (``key``: its fingerprint)."""
    return run is not None and run.source_hash == key


def wants_verify(frozen: ChapterRun | None, key: str, settings: Settings) -> bool:
    """Whether to replay a frozen live trace: its code changed, and it is not recorded again whatever a replay says."""
    if frozen is None or frozen.source_hash == key:
        return False
    refreshed = settings.live == "refresh" or any(run.ending.failed for run in frozen.scenarios)
    return not (settings.live_enabled and refreshed)


@dataclass(frozen=True)
class LivePlan:
    """What a build does with one chapter's live trace."""

    status: LiveStatus
    #: Whether the chapter is to be recorded live now.
    record: bool
    #: Scenarios of the frozen trace counted as reused by this build.
    reused: int
    #: Where a replay diverged, as a sentence for the log: a warning when the stale trace stays, else a note.
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

    ``frozen`` is the stored trace (re-stamped if a replay verified it), ``check`` the replay's
    finding (None: none tried), ``stale_library`` whether this process runs library code older than
    the files (then the next build records), ``path`` how messages name the frozen file.
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
        or any(run.ending.failed for run in frozen.scenarios)
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

    Replaced only when every scenario succeeded, or when the trace it replaces had nothing better
    (none, or every scenario failed); otherwise the earlier trace stands, and the page says why.
    """
    bad = [run for run in new.scenarios if run.ending.failed]
    if bad and frozen is not None and not all(run.ending.failed for run in frozen.scenarios):
        names = ", ".join(run.name for run in bad)
        when = f"recorded {frozen.recorded_at}" if frozen.recorded_at else "recorded earlier"
        status = LiveStatus(
            "stale",
            f"the live trace shown was {when}: the refresh of {new.recorded_at} failed ({names}), so it was kept",
            _failure(bad[0]),
        )
        return Settled(frozen, save=False, status=status)
    return Settled(new, save=True, status=LiveStatus("current", ""))


def _failure(run: ScenarioRun) -> ErrorInfo:
    from primer.trace import ErrorInfo

    return ErrorInfo(type=run.ending.reason, message=run.ending.detail or run.ending.label)


def anomalies(run: ScenarioRun) -> list[str]:
    """What the model did that no tool could act on (arguments not a JSON object, a tool not given), one phrase each."""
    found: list[str] = []
    for turn in run.turns:
        call = turn.model_call
        declared = {tool.name for tool in call.tools} | set(run.tools)
        for tool_call in call.reply.tool_calls if call.reply is not None else []:
            name = quoted(tool_call.name)  # the model's text, shown inert in the log
            if tool_call.name not in declared:
                found.append(f"asked for {name}, a tool it was not given")
            if tool_call.raw_arguments is not None:
                found.append(f"sent {name} arguments that are not a JSON object")
    return list(dict.fromkeys(found))
