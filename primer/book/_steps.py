"""The full way of ``Book.prepare`` for each chapter not shown from its entry.

``Run`` takes each chapter's ``Work`` through ``mock``, ``verify``, ``plan``, ``record`` (one live pool),
``settle`` and ``show``.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from primer.book._cache import CorruptTrace
from primer.book._run import in_worker, verify_in_worker
from primer.book._source import IMPORT_RUN, LiveStatus, Shown, traces_of
from primer.script_check import unused_warnings
from primer.summary import anomalies
from primer.trace import ChapterRun, ErrorInfo

if TYPE_CHECKING:
    from primer.book._book import Book, Stopwatch
    from primer.book._source import ChapterTraces
    from primer.replay import ChapterCheck
    from primer.scenario import Scenario
    from primer.settings import Settings
    from primer.trace import Mode, ScenarioRun

__all__ = ["LIBRARY_CHANGED", "NEVER_RECORDED", "Run", "Work"]

#: Why a chapter has no live trace yet.
NEVER_RECORDED = "no live run has been recorded yet: set PRIMER_API_KEY (live runs on) and build to record one"
#: Why a long-lived process (``mkdocs serve``) waits before recording live.
LIBRARY_CHANGED = "library code changed since this server started: the live refresh waits for a new build"


def _failed(run: ChapterRun) -> bool:
    return any(scenario.ending.failed for scenario in run.scenarios)


@dataclass
class Work:
    """One chapter on the full way: what is known of it so far, and what it counted."""

    name: str
    #: The fingerprint of the chapter's code now (its traces' ``source_hash``).
    code: str
    mock: ChapterRun | None = None
    #: The live trace shown: the frozen one (re-stamped when a replay verified it, ``verified_at``) or its refresh.
    frozen: ChapterRun | None = None
    verified_at: str | None = None
    status: LiveStatus = field(default_factory=lambda: LiveStatus("missing"))
    scenarios: tuple[Scenario, ...] | None = None
    import_error: ScenarioRun | None = None  # why it could not be imported, as the run the page shows
    stale_library: bool = False  # this process runs library code older than the files (``mkdocs serve``)
    check: ChapterCheck | None = None  # what a replay found (None: none tried, or its kept verdict verified)
    record: bool = False
    warnings: list[str] = field(default_factory=list)
    ran: int = 0
    reused: int = 0
    verified: int | None = None
    live_runs: int = 0


@dataclass(frozen=True)
class Run:
    """The full way, through the book's chapters and cache, with this build's settings and key function."""

    book: Book
    settings: Settings
    key: Callable[[str, str], str]
    #: Where the time the chapters' own code takes is counted (``run``), apart from the machinery's.
    clock: Stopwatch
    freeze: bool = False  # one build in this process: what the chapters' code made lasts until it ends

    def full_way(self, works: list[Work]) -> None:
        # One snapshot of the code graph: each file is read once, not once a chapter's look (0.24 s of a cold build).
        with self.book.chapters.graph.snapshot():
            for work in works:
                self.mock(work)
                if self.freeze:  # what it made, frozen: each full collection walked it all again for no garbage
                    gc.freeze()  # (125 ms of this book's cold build after the mocks; 350 -> ~190 ms during them)
            self.fresh_mock(works)
            for work in works:
                self.verify(work)
                self.plan(work)
        self.record(works)

    def warn(self, work: Work, message: str) -> None:
        """Say a warning about a chapter, kept with its entry to be said again by every build that reuses it."""
        self.book.log.warning(message)
        work.warnings.append(message)

    def note(self, work: Work, said: str) -> None:
        # Recorded again now (live runs on), the trace will be current: a note, not a failed --strict build.
        if self.settings.live_enabled:
            self.book.log.info(said)
        else:
            self.warn(work, said)

    def stale(self, work: Work) -> bool:
        # This process runs library code older than the files: seen when it ran the mocks, or looked at now.
        return work.stale_library or bool(self.book.chapters.stale_library(work.name))

    def failures(self, work: Work, runs: list[ScenarioRun]) -> None:
        for run in runs:
            line = f"traces: {work.name} / {run.name} ({run.mode}) failed: {run.ending.label}"
            if run.ending.failed and not any(said.startswith(line) for said in work.warnings):
                self.warn(work, line + (f": {run.ending.detail}" if run.ending.detail else ""))

    def stored(self, work: Work, mode: Mode) -> ChapterRun | None:
        """The stored run, or None (a corrupt file is said and replaced later)."""
        try:
            return self.book.cache.load(work.name, mode, work.code)
        except CorruptTrace as error:
            if mode == "mock":  # the build's own cache, repaired by this build: nothing for --strict to fail on
                self.book.log.info(f"traces: {error.problem} The mock trace of {work.name} runs again and is replaced.")
            else:
                self.warn(work, f"traces: {error} The live trace of {work.name} is refreshed when a key is set.")
            return None

    def load(self, work: Work) -> tuple[Scenario, ...] | None:
        """The chapter's scenarios, imported once (None: it could not be, and ``work.import_error`` says why)."""
        if work.scenarios is not None or work.import_error is not None:
            return work.scenarios
        try:
            with self.clock("run"):
                work.scenarios = tuple(self.book.chapters.scenarios(work.name))
        except Exception as error:  # noqa: BLE001 - a chapter that fails to import is shown, not fatal
            self.unimported(work, error)
        return work.scenarios

    def unimported(self, work: Work, error: BaseException | ErrorInfo) -> None:
        """The chapter could not be imported (here, or in a worker, which describes the error): its pages show why."""
        from primer.runner import error_run

        work.import_error = run = error_run(IMPORT_RUN, "mock", error, self.settings.redactor())
        wrong, where = (run.error.type == "ChapterError", run.error.where()) if run.error else (False, "")
        how = "declares its scenarios wrongly" if wrong else "could not be imported"
        run.title = f"The chapter module {self.book.chapters.module_name(work.name)} {how}."
        self.warn(work, f"traces: {run.title} {run.ending.detail}{where}. Its pages show the error.")

    def ran(self, work: Work, run: ChapterRun) -> None:
        run.source_hash = work.code
        self.book.save(run)
        work.mock, work.ran = run, work.ran + len(run.scenarios)

    def mock(self, work: Work) -> None:
        """Reuse the mock trace made by this code, or run it here (not when library code changed: ``fresh_mock``)."""
        stored = self.stored(work, "mock")
        if stored is not None and stored.source_hash == work.code:
            work.mock, work.reused = stored, work.reused + len(stored.scenarios)
        elif self.book.chapters.stale_library(work.name):
            work.stale_library = True
        elif (scenarios := self.load(work)) is not None:
            from primer.runner import run_mock  # the library's runner: only when something runs

            with self.clock("run"):  # a scenario still running after a while is said to be: a mock never waits
                run = run_mock(work.name, scenarios, self.settings, slow=lambda it: self.book.log.info(f"traces: {it}"))
            self.ran(work, run)

    def fresh_mock(self, works: list[Work]) -> None:
        """Run chapters whose library code changed since this process imported it, in a new interpreter."""
        fresh = [work for work in works if work.stale_library and work.mock is None]
        if not fresh:
            return
        self.book.log.info(f"traces: library code changed under this process; running {len(fresh)} chapter(s) anew")
        names = [work.name for work in fresh]
        with self.clock("run"):
            output = in_worker([self.book.chapters.package, *names], names, self.book.time_limit)
        runs = {run.chapter: run for run in output.runs}
        for work in fresh:
            if work.name in runs:
                self.ran(work, runs[work.name])
            else:
                self.unimported(work, output.errors.get(work.name) or RuntimeError("the worker gave no trace for it"))

    def verify(self, work: Work) -> None:
        """Replay a frozen live trace whose code changed (unless it is recorded again whatever a replay says).

        Shown current, re-stamped, if every request is the same. The verdict is kept by its inputs
        (the frozen file, the code), so a diverged trace is not replayed again by every build.
        """
        work.frozen = frozen = self.stored(work, "live")
        settings, cache = self.settings, self.book.cache
        if frozen is None or frozen.source_hash == work.code:
            return
        if settings.live_enabled and (settings.live == "refresh" or _failed(frozen)):
            return
        if (scenarios := self.load(work)) is None:
            return  # the import error is shown; the live trace stays as it was
        if (kept := cache.verdict(work.name, work.code)) is not None:
            # A verified trace counts as reused (its stamped copy is current); a diverged one keeps its check.
            check, day = kept
            work.check = None if check.verified else check
        else:
            try:
                with self.clock("run"):
                    check = self.replay(work, frozen, scenarios)
            except Exception as error:  # noqa: BLE001 - a replay that breaks is reported, never fatal
                from primer.replay import IncompleteRecording

                why = str(error) if isinstance(error, IncompleteRecording) else f"{type(error).__name__}: {error}"
                said = f"traces: the live trace {cache.path(work.name)} could not be verified by replay: "
                said += settings.redactor().text(why)
                advice = "It is shown as recorded from earlier code; record it again with PRIMER_API_KEY set."
                self.note(work, said if settings.live_enabled else f"{said} {advice}")
                return
            day = datetime.now(UTC).date().isoformat()
            cache.keep_verdict(work.name, work.code, check, day)  # a cache: never fails
            work.check, work.verified = check, sum(c.verified for c in check.scenarios)
        if check.verified:
            # Shown current with the day it verified; only `build --stamp` or a refresh writes the committed file.
            work.frozen = frozen.model_copy(update={"source_hash": work.code, "verified_at": day})
            work.verified_at = day

    def replay(self, work: Work, frozen: ChapterRun, scenarios: tuple[Scenario, ...]) -> ChapterCheck:
        """The replay of the frozen trace, here or (library code changed under this process) in a new interpreter."""
        if self.stale(work):
            self.book.log.info(f"traces: library code changed since this process started; verifying {work.name} anew")
            path = self.book.cache.path(work.name)
            return verify_in_worker(path, self.book.chapters.package, work.name, self.book.time_limit)
        from primer.replay import verify_chapter

        return verify_chapter(frozen, list(scenarios))

    def plan(self, work: Work) -> None:
        """Set the live status, the trace shown (the stored one, re-stamped if verified), whether to record."""
        frozen, settings, check = work.frozen, self.settings, work.check
        when = f" (recorded {frozen.recorded_at})" if frozen and frozen.recorded_at else ""
        divergence = check.divergence if check is not None else None
        changed = frozen is not None and frozen.source_hash != work.code
        if frozen is None:
            status = LiveStatus("missing", NEVER_RECORDED)
        elif not changed:
            status = LiveStatus("current")
        elif divergence is not None:
            why = f"recorded from earlier code{when}, and replayed against the code now it diverged: "
            why += divergence.line()
            status = LiveStatus("stale", f"{why}. Set PRIMER_API_KEY to record it again")
        else:
            status = LiveStatus("stale", f"recorded from earlier code{when}: set PRIMER_API_KEY to refresh it")
        if divergence is not None:
            action = "it is recorded again now" if settings.live_enabled else "it is shown stale"
            said = f"traces: the live trace {self.book.cache.path(work.name)} no longer matches the code: replayed, "
            self.note(work, f"{said}{divergence.line()}; {action}")
        record = settings.live_enabled and (frozen is None or changed or settings.live == "refresh" or _failed(frozen))
        if not record and frozen is not None and not (check is not None and check.verified):
            work.reused += len(frozen.scenarios)  # a trace verified now counts as verified
        if settings.api_key is not None and not settings.live_enabled and changed:
            earlier = status.reason if divergence is not None else f"recorded from earlier code{when}"
            status = LiveStatus("stale", f"{earlier}; PRIMER_LIVE=off")
        if record and self.stale(work):
            status, record = LiveStatus(status.state, LIBRARY_CHANGED), False
        work.status = status
        work.record = record and self.load(work) is not None

    def record(self, works: list[Work]) -> None:
        jobs = [(work, scenario) for work in works if work.record for scenario in work.scenarios or ()]
        if not jobs:
            return
        from primer.live_pool import run_live_jobs

        book = self.book
        with self.clock("run"):
            runs = run_live_jobs(
                [(work.name, scenario) for work, scenario in jobs],
                self.settings,
                book.live_runner,
                time_limit=book.time_limit,
                progress=lambda line: book.log.info(f"traces: live runs: {line}"),
            )
        recorded = datetime.now(UTC).isoformat(timespec="seconds")
        for work in works:
            if mine := [run for (owner, _), run in zip(jobs, runs, strict=True) if owner is work]:
                self.settle(work, mine, recorded)

    def settle(self, work: Work, mine: list[ScenarioRun], recorded: str) -> None:
        """Keep the refresh whole if every scenario succeeded or every frozen one failed; else the frozen trace."""
        model, frozen = self.settings.model, work.frozen
        new = ChapterRun(
            chapter=work.name, mode="live", source_hash=work.code, recorded_at=recorded, model=model, scenarios=mine
        )
        work.ran, work.live_runs = work.ran + len(mine), len(mine)
        self.failures(work, mine)
        bad = [run for run in mine if run.ending.failed]
        if not bad or frozen is None or all(run.ending.failed for run in frozen.scenarios):
            self.book.save(new)
            if frozen is not None:
                self.new_anomalies(work.name, frozen, new)
            work.frozen, work.status, work.verified_at = new, LiveStatus("current"), None
            return
        when = f"recorded {frozen.recorded_at}" if frozen.recorded_at else "recorded earlier"
        names = ", ".join(run.name for run in bad)
        why = f"the live trace shown was {when}: the refresh of {new.recorded_at} failed ({names}), so it was kept"
        failure = ErrorInfo(type=bad[0].ending.reason, message=bad[0].ending.detail or bad[0].ending.label)
        work.status = LiveStatus("stale", why, failure)

    def new_anomalies(self, chapter: str, frozen: ChapterRun, new: ChapterRun) -> None:
        """Warn, once, about what a refreshed trace's model does that the frozen one did not: worth a look."""
        before = {run.name: set(anomalies(run)) for run in frozen.scenarios}
        for run in new.scenarios:
            if found := [what for what in anomalies(run) if what not in before.get(run.name, set())]:
                self.book.log.warning(
                    f"traces: {chapter} / {run.name} (live): in the refreshed trace the model {'; '.join(found)}, "
                    f"which the frozen trace did not show. The refresh replaced "
                    f"{self.book.cache.path(chapter)}: review the change before committing it."
                )

    def show(self, work: Work) -> tuple[Shown, ChapterTraces]:
        """What the pages show of the chapter, and its runs."""
        mock = work.mock
        if mock is None and work.import_error is not None:
            # Not stored: the import is tried again next build, and the trace must not outlive the broken file.
            mock = ChapterRun(chapter=work.name, mode="mock", model="mock", scenarios=[work.import_error])
        runs = mock.scenarios if mock else []
        self.failures(work, [*(() if work.import_error else runs), *(work.frozen.scenarios if work.frozen else [])])
        for unused in [warning for run in runs for warning in unused_warnings(run)]:
            self.warn(work, f"traces: {work.name} / {unused}")  # a mock script the run did not use up
        # Under the key as it is now: a refresh may have rewritten the frozen file.
        key, live = self.key(work.name, work.code), work.frozen
        shown = Shown(
            work.name,
            key,
            work.code,
            tuple(run.name for run in runs),
            tuple(run.name for run in live.scenarios) if live is not None else None,
            work.status,
            work.verified_at,
            work.import_error is None,
            tuple(work.warnings),
        )
        # A live run with a failed scenario is not kept with live runs on: the next build records it again.
        retry = self.settings.live_enabled and live is not None and _failed(live)
        if work.import_error is None and mock is not None and not retry:
            shown.write(self.book.cache.entry(work.name, key))
        return shown, traces_of(work.name, mock, live, work.status)
