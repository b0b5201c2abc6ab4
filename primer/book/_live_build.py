"""The frozen live traces' part of a build: verify, plan, record, settle.

For each chapter, after its mock trace is settled, ``Book.prepare``
(``primer.book._build``) calls, in order::

    verify  a frozen live trace whose code changed, key or no key: replay
            its own recording against the code now (``primer.replay``, no
            network, milliseconds), unless the verdict on that file under
            that code is kept (``TraceStore.verdict``). Every request the
            same: shown current, stamped with the new fingerprint and the
            day it was verified (the committed file is left as it is:
            ``python -m primer.book build --stamp`` writes the stamps);
            otherwise shown stale, with where it diverged (a warning)
    plan    the live status the page shows, and whether to record the chapter
            live now (``primer.book._plan.plan_live``)

and then, for every chapter at once::

    record  the live runs, only with a key (``PRIMER_API_KEY``, ``PRIMER_LIVE``
            not ``off``): the frozen trace is refreshed when what its code
            sends changed, when it holds a failed scenario, or when
            ``PRIMER_LIVE=refresh``; the runs go through a bounded pool
            (``Book.workers`` at a time), each with a wall-clock limit
    settle  all or nothing per chapter (``primer.book._plan.settle_live``)
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from primer.book._execute import run_live_jobs, verify_in_worker
from primer.book._plan import plan_live, settle_live, wants_verify
from primer.book._report import Report, anomalies, failed
from primer.book._state import ChapterState
from primer.settings import Settings
from primer.trace import ChapterRun

if TYPE_CHECKING:
    from primer.book._build import Book
    from primer.scenario import Scenario

__all__ = ["plan", "record", "verify"]

#: A chapter's scenarios to record live, each with its chapter's state.
Jobs = list[tuple[ChapterState, "Scenario"]]


def verify(book: Book, state: ChapterState, settings: Settings, report: Report) -> None:
    """Replay a frozen live trace whose code changed; re-stamp it if every request is the same."""
    state.frozen = frozen = book.stored(state.name, "live", state.entry)
    if frozen is None or not wants_verify(frozen, state.key, settings):
        return
    if not state.load(book.chapters, settings) or state.scenarios is None:
        return  # the import error is shown; the live trace stays as it was
    # Here, not at the top: it loads the openai SDK's HTTP stack, which a
    # build with nothing to replay does without.
    from primer.replay import IncompleteRecording, verify_chapter

    path = book.store.path(state.name, "live")
    kept = book.store.verdict(state.name, state.entry, state.key)
    if kept is not None:
        # Not replayed now: a verified trace counts as reused, as a current one does
        # (its stamped copy is current); a diverged one keeps its check, for its status and warning.
        check, day, _ = kept
        state.check = None if check.verified else check
    else:
        try:
            if state.stale_library or book.chapters.stale_library(state.name):
                book.log.info(f"traces: library code changed since this process started; verifying {state.name} anew")
                check = verify_in_worker(path, book.chapters.package, state.name, book.time_limit)
            else:
                check = verify_chapter(frozen, state.scenarios)
        except Exception as error:  # noqa: BLE001 - a replay that breaks is reported, never fatal
            why = str(error) if isinstance(error, IncompleteRecording) else f"{type(error).__name__}: {error}"
            why = settings.redactor().text(why)
            if settings.live_enabled:  # recorded again now: a note, not a failed --strict build
                book.log.info(f"traces: the live trace {path} could not be verified by replay: {why}")
            else:
                book.warn(
                    state.name,
                    f"traces: the live trace {path} could not be verified by replay: {why} "
                    "It is shown as recorded from earlier code; record it again with PRIMER_API_KEY set.",
                )
            return
        report.verified = (report.verified or 0) + sum(c.verified for c in check.scenarios)
        state.check, day = check, datetime.now(UTC).date().isoformat()
        book.store.keep_verdict(state.name, state.entry, state.key, check, day)  # a cache: never fails
    if check.verified:
        # Shown current with the day it verified; the committed file is written only by
        # `python -m primer.book build --stamp` (or a refresh), so a build leaves a checkout clean.
        state.frozen = book.store.stamped(frozen, state.key, day)


def plan(book: Book, state: ChapterState, settings: Settings, report: Report) -> Jobs:
    """Set the chapter's live status and trace shown; the scenarios to record live now, if any."""
    decided = plan_live(
        state.frozen,
        state.key,
        state.check,
        settings,
        stale_library=state.stale_library,
        path=str(book.store.path(state.name, "live")),
    )
    state.status, state.live = decided.status, state.frozen
    report.reused += decided.reused
    if decided.divergence is not None:
        # Recorded again at once, it will be current: worth a note, not a failed --strict build.
        if settings.live_enabled:
            book.log.info(decided.divergence)
        else:
            book.warn(state.name, decided.divergence)
    if not decided.record or not state.load(book.chapters, settings) or state.scenarios is None:
        return []
    return [(state, scenario) for scenario in state.scenarios]


def record(book: Book, states: list[ChapterState], jobs: Jobs, settings: Settings, report: Report) -> None:
    """Run every chapter's live jobs in one pool, then settle each chapter's frozen trace."""
    if not jobs:
        return
    runs = run_live_jobs(
        [(state.name, scenario) for state, scenario in jobs],
        settings,
        book.live_runner,
        workers=book.workers,
        time_limit=book.time_limit,
        progress=lambda progress: book.log.info(progress.line("traces: live runs")),
    )
    recorded = datetime.now(UTC).isoformat(timespec="seconds")
    report.ran += len(runs)
    report.live = (report.live or 0) + len(runs)
    for state in states:
        mine = [run for (owner, _), run in zip(jobs, runs, strict=True) if owner is state]
        if not mine:
            continue
        new = ChapterRun(
            chapter=state.name,
            mode="live",
            source_hash=state.key,
            recorded_at=recorded,
            model=settings.model,
            scenarios=mine,
        )
        for run in mine:
            if failed(run) and (warning := report.failure(state.name, run)) is not None:
                book.warn(state.name, warning)
        settled = settle_live(state.frozen, new)
        state.live, state.status = settled.shown, settled.status
        if settled.save:
            book.save(new, state.entry)
            if state.frozen is not None:
                _warn_anomalies(book, state.name, state.frozen, new)


def _warn_anomalies(book: Book, chapter: str, frozen: ChapterRun, new: ChapterRun) -> None:
    # A refresh replaces a committed trace: a model that now sends what no
    # tool can act on is worth a look before the new file is committed.
    before = {run.name: set(anomalies(run)) for run in frozen.scenarios}
    for run in new.scenarios:
        found = [what for what in anomalies(run) if what not in before.get(run.name, set())]
        if found:
            # Said once, by the build that refreshed: not kept with the new entry.
            book.log.warning(
                f"traces: {chapter} / {run.name} (live): in the refreshed trace the model {'; '.join(found)}, "
                f"which the frozen trace did not show. The refresh replaced "
                f"{book.store.path(chapter, 'live')}: review the change before committing it."
            )
