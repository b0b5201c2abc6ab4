"""The full way of ``primer.book._book.Book.prepare``: each step takes a chapter's ``Work`` and returns it, further on.

``mock`` (reuse or run), ``fresh_mock`` (in a new interpreter when library code changed under this
process), ``verify`` (replay a frozen live trace), ``plan``, ``record`` (the live pool) and
``settle`` (all or nothing per chapter), then ``show``: what the pages show of the chapter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book._plan import anomalies, is_current, plan_live, settle_live, wants_verify
from primer.book._source import ChapterTraces, LiveStatus, Shown

if TYPE_CHECKING:
    from primer.book._book import Book
    from primer.book._chapters import Chapters
    from primer.book._store import TraceStore
    from primer.replay import ChapterCheck
    from primer.scenario import Scenario
    from primer.settings import Settings
    from primer.trace import ChapterRun, Mode, ScenarioRun

__all__ = ["Chapter", "Run", "Work"]


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


@dataclass(frozen=True)
class Work:
    """One chapter on the full way: what is known of it so far, and what it counted."""

    name: str
    #: The fingerprint of the chapter's code now (its traces' ``source_hash``).
    code: str
    #: The chapter's key in the cache as the build found it: its entry.
    entry: str
    mock: ChapterRun | None = None
    #: The frozen live trace as stored (re-stamped when a replay verified it).
    frozen: ChapterRun | None = None
    #: The live trace the page shows, and its status.
    live: ChapterRun | None = None
    status: LiveStatus = field(default_factory=lambda: LiveStatus("missing"))
    scenarios: tuple[Scenario, ...] | None = None
    #: Why the chapter could not be imported, as the run the page shows instead.
    import_error: ScenarioRun | None = None
    #: Whether this process runs library code older than the files (``mkdocs serve``).
    stale_library: bool = False
    #: What a replay of the frozen trace found (None: none was tried, or its kept verdict verified).
    check: ChapterCheck | None = None
    record: bool = False
    warnings: tuple[str, ...] = ()
    ran: int = 0
    reused: int = 0
    verified: int | None = None
    live_runs: int = 0


@dataclass(frozen=True)
class Run:
    """What the full way reads and writes through: the chapters, the store, the settings."""

    book: Book
    settings: Settings
    key: Callable[[str, str], str]

    @property
    def chapters(self) -> Chapters:
        """The book's chapters."""
        return self.book.chapters

    @property
    def store(self) -> TraceStore:
        """The book's store."""
        return self.book.store

    def full_way(self, works: list[Work]) -> list[Work]:
        """Mock, verify, plan, record and settle each chapter."""
        works = [self.mock(work) for work in works]
        works = self.fresh_mock(works)
        works = [self.plan(self.verify(work)) for work in works]
        return self.record(works)

    def warn(self, work: Work, message: str) -> Work:
        """Say a warning about a chapter, kept with its entry to be said again by every build that reuses it."""
        self.book.log.warning(message)
        return replace(work, warnings=(*work.warnings, message))

    def failures(self, work: Work, runs: list[ScenarioRun]) -> Work:
        """Warn about each failed run, once per build."""
        for run in runs:
            line = f"traces: {work.name} / {run.name} ({run.mode}) failed: {run.ending.label}"
            if run.ending.failed and not any(said.startswith(line) for said in work.warnings):
                work = self.warn(work, line + (f": {run.ending.detail}" if run.ending.detail else ""))
        return work

    def stored(self, work: Work, mode: Mode) -> tuple[ChapterRun | None, Work]:
        """The stored run, or None (a corrupt file is warned about and replaced later)."""
        from primer.book._store import CorruptTrace

        try:
            return self.store.load(work.name, mode, work.entry), work
        except CorruptTrace as error:
            if mode == "mock":  # the build's own cache: said by this build only
                self.book.log.warning(
                    f"traces: {error.problem} The mock trace of {work.name} runs again and the file is replaced."
                )
                return None, work
            message = f"traces: {error} The live trace of {work.name} is refreshed when a key is set."
            return None, self.warn(work, message)

    def save(self, run: ChapterRun, key: str = "") -> None:
        """Write a run to the store (a mock one under ``key``); one not written is warned about, and still shown."""
        try:
            self.store.save(run, key)
        except OSError as error:
            self.book.log.warning(f"traces: the {run.mode} trace of {run.chapter} could not be written: {error}")

    def load(self, work: Work) -> Work:
        """The work with the chapter's scenarios imported, or its ``import_error``."""
        if work.scenarios is not None or work.import_error is not None:
            return work
        from primer.book._run import error_run
        from primer.errors import ChapterError

        try:
            return replace(work, scenarios=tuple(self.chapters.scenarios(work.name)))
        except Exception as error:  # noqa: BLE001 - a chapter that fails to import is shown, not fatal
            module = self.chapters.module_name(work.name)
            broken = error_run("import", "mock", error, self.settings.redactor())
            broken.title = (
                f"The chapter module {module} declares its scenarios wrongly."
                if isinstance(error, ChapterError)
                else f"The chapter module {module} could not be imported."
            )
            return replace(work, import_error=broken)

    def ran(self, work: Work, run: ChapterRun) -> Work:
        run.source_hash = work.code
        self.save(run, work.entry)
        return replace(work, mock=run, ran=work.ran + len(run.scenarios))

    def mock(self, work: Work) -> Work:
        """Reuse the mock trace made by this code, or run it here (not when library code changed: ``fresh_mock``)."""
        stored, work = self.stored(work, "mock")
        if not is_current(stored, work.code):
            stored = self.store.earlier_mock(work.name, work.entry, work.code)
        if stored is not None and is_current(stored, work.code):
            return replace(work, mock=stored, reused=work.reused + len(stored.scenarios))
        if self.chapters.stale_library(work.name):
            return replace(work, stale_library=True)
        work = self.load(work)
        if work.scenarios is None:
            return work
        from primer.book._run import run_mock

        return self.ran(work, run_mock(work.name, work.scenarios, self.settings))

    def fresh_mock(self, works: list[Work]) -> list[Work]:
        """Run chapters whose library code changed since this process imported it, in a new interpreter."""
        fresh = [work.name for work in works if work.stale_library and work.mock is None]
        if not fresh:
            return works
        from primer.book._run import error_run, in_worker

        self.book.log.info(
            f"traces: library code changed since this process started; running {len(fresh)} chapter(s) anew"
        )
        output = in_worker(self.chapters.package, fresh, self.book.time_limit)
        runs = {run.chapter: run for run in output.runs}

        def settled(work: Work) -> Work:
            if work.name in runs:
                return self.ran(work, runs[work.name])
            if work.name not in fresh:
                return work
            why = RuntimeError(output.errors.get(work.name, "the worker gave no trace for it"))
            return replace(work, import_error=error_run("import", "mock", why, self.settings.redactor()))

        return [settled(work) for work in works]

    def verify(self, work: Work) -> Work:
        """Replay a frozen live trace whose code changed; shown current, re-stamped, if every request is the same."""
        frozen, work = self.stored(work, "live")
        work = replace(work, frozen=frozen)
        if frozen is None or not wants_verify(frozen, work.code, self.settings):
            return work
        work = self.load(work)
        if (scenarios := work.scenarios) is None:
            return work  # the import error is shown; the live trace stays as it was
        path = self.store.path(work.name, "live")
        kept = self.store.verdict(work.name, work.entry, work.code)
        if kept is not None:
            # A verified trace counts as reused (its stamped copy is current); a diverged one keeps its check.
            check, day, _ = kept
            work = replace(work, check=None if check.verified else check)
        else:
            try:
                check = self.replay(work, frozen, scenarios, path)
            except Exception as error:  # noqa: BLE001 - a replay that breaks is reported, never fatal
                from primer.replay import IncompleteRecording

                why = str(error) if isinstance(error, IncompleteRecording) else f"{type(error).__name__}: {error}"
                why = self.settings.redactor().text(why)
                said = f"traces: the live trace {path} could not be verified by replay: {why}"
                if self.settings.live_enabled:  # recorded again now: a note, not a failed --strict build
                    self.book.log.info(said)
                    return work
                return self.warn(
                    work, f"{said} It is shown as recorded from earlier code; record it again with PRIMER_API_KEY set."
                )
            day = datetime.now(UTC).date().isoformat()
            self.store.keep_verdict(work.name, work.entry, work.code, check, day)  # a cache: never fails
            verified = (work.verified or 0) + sum(c.verified for c in check.scenarios)
            work = replace(work, check=check, verified=verified)
        if check.verified:
            # Shown current with the day it verified; only `python -m primer.book build --stamp` (or a
            # refresh) writes the committed file, so a build leaves a checkout clean.
            work = replace(work, frozen=self.store.stamped(frozen, work.code, day))
        return work

    def replay(self, work: Work, frozen: ChapterRun, scenarios: tuple[Scenario, ...], path: Path) -> ChapterCheck:
        """The replay of the frozen trace, here or, when library code changed under this process, in a new one."""
        if work.stale_library or self.chapters.stale_library(work.name):
            from primer.book._run import verify_in_worker

            self.book.log.info(f"traces: library code changed since this process started; verifying {work.name} anew")
            return verify_in_worker(path, self.chapters.package, work.name, self.book.time_limit)
        from primer.replay import verify_chapter

        return verify_chapter(frozen, list(scenarios))

    def plan(self, work: Work) -> Work:
        """Set the chapter's live status and trace shown, and whether to record it now."""
        path = str(self.store.path(work.name, "live"))
        decided = plan_live(
            work.frozen, work.code, work.check, self.settings, stale_library=work.stale_library, path=path
        )
        work = replace(work, status=decided.status, live=work.frozen, reused=work.reused + decided.reused)
        if decided.divergence is not None:
            # Recorded again at once, it will be current: worth a note, not a failed --strict build.
            if self.settings.live_enabled:
                self.book.log.info(decided.divergence)
            else:
                work = self.warn(work, decided.divergence)
        if not decided.record:
            return work
        work = self.load(work)
        return replace(work, record=work.scenarios is not None)

    def record(self, works: list[Work]) -> list[Work]:
        """Run every chapter's live scenarios in one pool, then settle each chapter's frozen trace."""
        jobs = [(work.name, scenario) for work in works if work.record for scenario in work.scenarios or ()]
        if not jobs:
            return works
        from primer.book._run import run_live_jobs

        book = self.book
        runs = run_live_jobs(
            jobs,
            self.settings,
            book.live_runner,
            workers=book.workers,
            time_limit=book.time_limit,
            progress=lambda progress: book.log.info(progress.line("traces: live runs")),
        )
        recorded = datetime.now(UTC).isoformat(timespec="seconds")
        mine = {
            work.name: [run for (owner, _), run in zip(jobs, runs, strict=True) if owner == work.name] for work in works
        }
        return [self.settle(work, mine[work.name], recorded) if mine[work.name] else work for work in works]

    def settle(self, work: Work, mine: list[ScenarioRun], recorded: str) -> Work:
        """Keep the chapter's refresh, or its frozen trace: all or nothing."""
        from primer.trace import ChapterRun

        new = ChapterRun(
            chapter=work.name,
            mode="live",
            source_hash=work.code,
            recorded_at=recorded,
            model=self.settings.model,
            scenarios=mine,
        )
        work = self.failures(replace(work, ran=work.ran + len(mine), live_runs=len(mine)), mine)
        settled = settle_live(work.frozen, new)
        if settled.save:
            self.save(new, work.entry)
            if work.frozen is not None:
                self.new_anomalies(work.name, work.frozen, new)
        return replace(work, live=settled.shown, status=settled.status)

    def new_anomalies(self, chapter: str, frozen: ChapterRun, new: ChapterRun) -> None:
        """Warn, once, about what a refreshed trace's model does that the frozen one did not: worth a look."""
        before = {run.name: set(anomalies(run)) for run in frozen.scenarios}
        for run in new.scenarios:
            found = [what for what in anomalies(run) if what not in before.get(run.name, set())]
            if found:
                self.book.log.warning(
                    f"traces: {chapter} / {run.name} (live): in the refreshed trace the model {'; '.join(found)}, "
                    f"which the frozen trace did not show. The refresh replaced "
                    f"{self.store.path(chapter, 'live')}: review the change before committing it."
                )

    def show(self, work: Work) -> Chapter:
        """What the pages show of the chapter, kept in its entry under its key as it is now."""
        from primer.script_check import unused_warnings
        from primer.trace import ChapterRun

        mock = work.mock
        if mock is None and work.import_error is not None:
            # Not stored: the import is tried again next build, and the trace must not outlive the broken file.
            mock = ChapterRun(chapter=work.name, mode="mock", model="mock", scenarios=[work.import_error])
        shown = mock.scenarios if mock else []
        work = self.failures(work, [*shown, *(work.live.scenarios if work.live else [])])
        for unused in [warning for run in shown for warning in unused_warnings(run)]:
            work = self.warn(work, f"traces: {work.name} / {unused}")  # a mock script the run did not use up
        # Under the key as it is now: a refresh may have rewritten the frozen file.
        key, store = self.key(work.name, work.code), self.store
        traces = ChapterTraces(
            work.name, mock, work.live, work.status, store.download_url(work.name), store.payloads_url(work.name)
        )
        summary = Shown.of(traces, key)
        # A live run with a failed scenario is recorded again by the next build with a key
        # (``plan_live``): with live runs on, it is not kept, so that build takes the full way.
        live_failed = work.live is not None and any(run.ending.failed for run in work.live.scenarios)
        retry = self.settings.live_enabled and live_failed
        if work.import_error is None and mock is not None and not retry:
            if key != work.entry:
                self.save(mock, key)
            summary.write(store.cache.entry(work.name, key), list(work.warnings))
        names = None if work.import_error else tuple(run.name for run in shown)
        return Chapter(summary, traces, names, work.warnings)
