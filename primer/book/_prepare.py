"""Preparing a book's traces: from each chapter's key to one immutable value of what every page shows.

``prepare(chapters, store, setup)`` goes through every chapter, along the data's way::

    key      the chapter's one key (primer.book._cache): its code's fingerprint, its
             frozen live trace's bytes, the options, the renderer's version. A chapter
             whose entry is in the cache is shown from it (its warnings said again);
             the others take the full way
    mock     the cached mock trace if made by the code now (``is_current``), else run:
             in this process, or in a new one when library code changed under a
             long-lived process (primer.book._run)
    verify   a frozen live trace whose code changed is replayed against the code now
             (``wants_verify``; primer.replay, no network), unless its verdict is kept
    plan     the live status the page shows, and whether to record live now (``plan_live``)
    record   the live runs, with a key, through the bounded pool (primer.book._run)
    settle   all or nothing per chapter (``settle_live``): if any scenario of a refresh
             failed, the earlier frozen file stands whole and the page says why
    show     what the page shows, kept in the chapter's entry with its warnings

Each step takes a chapter's ``_Work`` and returns a new one; the plan's decisions
(``is_current``, ``wants_verify``, ``plan_live``, ``settle_live``) read nothing and run nothing.
It logs one line, ``traces: ran N, reused M`` (``, verified K`` when a replay was tried,
``, live: L`` when live runs are on), counting scenarios. Every failed scenario shown is a
warning through the ``mkdocs.plugins.primer`` logger, on every build (so ``--strict`` fails for
as long as it stays broken); nothing a scenario does stops the build.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book._cache import chapter_key, environ_options, renderer_version, settings_options
from primer.book._source import ChapterTraces, LiveStatus, Shown
from primer.errors import quoted
from primer.variables import VARIABLES, traces_off, unknown_variables

if TYPE_CHECKING:  # the engine (pydantic, the trace models) only on the full way
    from primer.book._chapters import Chapters
    from primer.book._run import LiveRunner
    from primer.book._store import TraceStore
    from primer.replay import ChapterCheck
    from primer.scenario import Scenario
    from primer.settings import Settings
    from primer.trace import ChapterRun, ErrorInfo, Mode, ScenarioRun

__all__ = [
    "Chapter",
    "LivePlan",
    "Prepared",
    "Report",
    "Settled",
    "Setup",
    "anomalies",
    "failed",
    "is_current",
    "plan_live",
    "prepare",
    "settle_live",
    "wants_verify",
]

#: Why a chapter has no live trace yet.
NEVER_RECORDED = "no live run has been recorded yet: set PRIMER_API_KEY and build to record one"
#: Why a long-lived process (``mkdocs serve``) waits before recording live.
LIBRARY_CHANGED = "library code changed since this server started: the live refresh waits for a new build"


@dataclass(frozen=True)
class Report:
    """What one build did, counted in scenarios."""

    ran: int = 0
    reused: int = 0
    #: Live scenarios verified by replay, or None when no replay was tried.
    verified: int | None = None
    #: Live scenario runs, or None when live runs are off.
    live: int | None = None
    off: bool = False

    def line(self) -> str:
        """``traces: ran 2, reused 4`` (``, verified 4`` after a replay, ``, live: 2`` when live runs are on)."""
        if self.off:
            return "traces: off (PRIMER_TRACES=off), nothing ran"
        verified = f", verified {self.verified}" if self.verified is not None else ""
        live = f", live: {self.live}" if self.live is not None else ""
        return f"traces: ran {self.ran}, reused {self.reused}{verified}{live}"


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
class Prepared:
    """What every page of one build shows, each chapter's; the renderer's, the checks' and publishing's source."""

    report: Report
    by_chapter: Mapping[str, Chapter] = field(default_factory=dict)
    #: Where the runs of a chapter shown from its entry are read, when first asked for.
    store: TraceStore | None = None
    _read: dict[str, ChapterTraces] = field(default_factory=dict, compare=False, repr=False)

    @property
    def enabled(self) -> bool:
        """Whether traces are on for this build (``PRIMER_TRACES`` not ``off``)."""
        return not self.report.off

    def chapters(self) -> list[str]:
        """The chapters shown, sorted."""
        return sorted(self.by_chapter)

    def summary(self, chapter: str) -> Shown | None:
        """What the pages show of a chapter, without reading a run (None: it shows none)."""
        found = self.by_chapter.get(chapter)
        return found.shown if found is not None else None

    def traces(self, chapter: str) -> ChapterTraces:
        """A chapter's runs (read from its entry on first use); raises ``NotFound`` naming what exists."""
        found = self.by_chapter.get(chapter)
        if found is None or (found.traces is None and self.store is None):
            from primer.errors import NotFound

            chapters = ", ".join(self.chapters()) or "none"
            raise NotFound(f"There are no traces for chapter {chapter!r}. The chapters are: {chapters}.")
        if found.traces is not None:
            return found.traces
        if chapter not in self._read and self.store is not None:
            self._read[chapter] = self.store.read(found.shown)
        return self._read[chapter]


@dataclass(frozen=True)
class Setup:
    """How a book's traces are prepared, besides its chapters and store."""

    #: None: the ``PRIMER_*`` settings of ``environ`` (by default the process's), read at every build.
    settings: Settings | None = None
    environ: Mapping[str, str] | None = None
    #: Inputs of the renderer besides the traces and its files (the prices), part of every key.
    options: Mapping[str, str] = field(default_factory=dict)
    #: None runs live scenarios over one shared SDK client (``primer.book._shared_live``).
    live_runner: LiveRunner | None = None
    workers: int = 4
    #: Seconds one live scenario may take, from its start.
    time_limit: float = 300.0
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("mkdocs.plugins.primer"))

    def settings_now(self) -> Settings:
        """The given settings, else the environment's (warning about what is wrong)."""
        from primer.errors import ConfigError
        from primer.settings import Settings

        if self.settings is not None:
            return self.settings
        try:
            return Settings.from_env(self.environ, warn=lambda message: self.log.warning(f"traces: {message}"))
        except ConfigError as error:
            self.log.warning(f"traces: {error} Live runs are off for this build.")
            return Settings.without_live(self.environ)


def prepare(chapters: Chapters, store: TraceStore, setup: Setup) -> Prepared:
    """What every page shows: each chapter from its entry in the cache, or made the full way and kept."""
    environ = setup.environ if setup.environ is not None else os.environ
    log = setup.log
    # Settings (and pydantic) only when they decide more than the key: a given one, or a secret to validate.
    secrets = (VARIABLES["api_key"], VARIABLES["service_key"])
    settings = setup.settings_now() if setup.settings is not None or any(environ.get(s) for s in secrets) else None
    if (settings.traces == "off") if settings is not None else traces_off(environ):
        log.info(Report(off=True).line())
        return Prepared(Report(off=True))
    if settings is None:
        for message in unknown_variables(environ):
            log.warning(f"traces: {message}")
    live = 0 if settings is not None and settings.live_enabled else None
    try:
        names = chapters.names()
    except Exception as error:  # noqa: BLE001 - a broken package is reported, not fatal
        why = (settings or setup.settings_now()).redactor().text(str(error))
        log.warning(f"traces: the chapters' package {chapters.package} could not be imported: {why}")
        return Prepared(Report(live=live), store=store)
    renderer = renderer_version()
    options = {
        **(settings_options(setup.settings) if setup.settings is not None else environ_options(environ)),
        **setup.options,
    }

    def key(chapter: str, code: str) -> str:
        return chapter_key(chapter, code, store.frozen_bytes(chapter), options, renderer)

    codes = chapters.fingerprints(names)
    keys = {name: key(name, codes[name]) for name in names}
    found: dict[str, Chapter] = {}
    reused = 0
    for name in names:
        if (kept := Shown.read(store.entry(name, keys[name]))) is not None:
            shown, warnings, count = kept
            for warning in warnings:
                log.warning(warning)
            found[name] = Chapter(shown, None, shown.mock, tuple(warnings))
            reused += count
    works = [_Work(name, codes[name], keys[name]) for name in names if name not in found]
    if works:
        run = _Run(chapters, store, settings or setup.settings_now(), setup, key)
        works = run.full_way(works)
        found |= {work.name: run.show(work) for work in works}
    verified = [work.verified for work in works if work.verified is not None]
    report = Report(
        ran=sum(work.ran for work in works),
        reused=reused + sum(work.reused for work in works),
        verified=sum(verified) if verified else None,
        live=None if live is None else sum(work.live_runs for work in works),
    )
    log.info(report.line())
    return Prepared(report, {name: found[name] for name in names}, store)


# -- the plan: decisions from data alone -----------------------------------------


def failed(run: ScenarioRun) -> bool:
    """Whether a scenario run failed (an error in it, or at its provider)."""
    return run.ending.failed


def is_current(run: ChapterRun | None, key: str) -> bool:
    """Whether a stored run was made by the code now on disk (``key``: its fingerprint)."""
    return run is not None and run.source_hash == key


def wants_verify(frozen: ChapterRun | None, key: str, settings: Settings) -> bool:
    """Whether to replay a frozen live trace: its code changed, and it is not recorded again whatever a replay says."""
    if frozen is None or frozen.source_hash == key:
        return False
    refreshed = settings.live == "refresh" or any(failed(run) for run in frozen.scenarios)
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

    ``frozen`` is the stored live trace (re-stamped already if a replay verified it), ``check``
    what the replay found (None if none was tried), ``stale_library`` whether this process runs
    library code older than the files (then nothing is recorded: the next build does it),
    ``path`` how messages name the frozen file.
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

    The file is replaced only when every scenario of the refresh succeeded, or when the trace
    it replaces had nothing better (none, or every scenario failed). Otherwise the earlier
    trace stands, and the page says why.
    """
    bad = [run for run in new.scenarios if failed(run)]
    if bad and frozen is not None and not all(failed(run) for run in frozen.scenarios):
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


# -- the full way: each step takes a chapter's work and returns it, further on ----


@dataclass(frozen=True)
class _Work:
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
class _Run:
    """What the full way reads and writes through: the chapters, the store, the settings."""

    chapters: Chapters
    store: TraceStore
    settings: Settings
    setup: Setup
    key: Callable[[str, str], str]

    def full_way(self, works: list[_Work]) -> list[_Work]:
        """Mock, verify, plan, record and settle each chapter."""
        works = [self.mock(work) for work in works]
        works = self.fresh_mock(works)
        works = [self.plan(self.verify(work)) for work in works]
        return self.record(works)

    def warn(self, work: _Work, message: str) -> _Work:
        """Say a warning about a chapter, kept with its entry to be said again by every build that reuses it."""
        self.setup.log.warning(message)
        return replace(work, warnings=(*work.warnings, message))

    def failures(self, work: _Work, runs: list[ScenarioRun]) -> _Work:
        """Warn about each failed run, once per build."""
        for run in runs:
            line = f"traces: {work.name} / {run.name} ({run.mode}) failed: {run.ending.label}"
            if failed(run) and not any(said.startswith(line) for said in work.warnings):
                work = self.warn(work, line + (f": {run.ending.detail}" if run.ending.detail else ""))
        return work

    def stored(self, work: _Work, mode: Mode) -> tuple[ChapterRun | None, _Work]:
        """The stored run, or None (a corrupt file is warned about and replaced later)."""
        from primer.book._store import CorruptTrace

        try:
            return self.store.load(work.name, mode, work.entry), work
        except CorruptTrace as error:
            if mode == "mock":  # the build's own cache: said by this build only
                self.setup.log.warning(
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
            self.setup.log.warning(f"traces: the {run.mode} trace of {run.chapter} could not be written: {error}")

    def load(self, work: _Work) -> _Work:
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

    def ran(self, work: _Work, run: ChapterRun) -> _Work:
        run.source_hash = work.code
        self.save(run, work.entry)
        return replace(work, mock=run, ran=work.ran + len(run.scenarios))

    def mock(self, work: _Work) -> _Work:
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

    def fresh_mock(self, works: list[_Work]) -> list[_Work]:
        """Run chapters whose library code changed since this process imported it, in a new interpreter."""
        fresh = [work.name for work in works if work.stale_library and work.mock is None]
        if not fresh:
            return works
        from primer.book._run import error_run, in_worker

        self.setup.log.info(
            f"traces: library code changed since this process started; running {len(fresh)} chapter(s) anew"
        )
        output = in_worker(self.chapters.package, fresh, self.setup.time_limit)
        runs = {run.chapter: run for run in output.runs}

        def settled(work: _Work) -> _Work:
            if work.name in runs:
                return self.ran(work, runs[work.name])
            if work.name not in fresh:
                return work
            why = RuntimeError(output.errors.get(work.name, "the worker gave no trace for it"))
            return replace(work, import_error=error_run("import", "mock", why, self.settings.redactor()))

        return [settled(work) for work in works]

    def verify(self, work: _Work) -> _Work:
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
                    self.setup.log.info(said)
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

    def replay(self, work: _Work, frozen: ChapterRun, scenarios: tuple[Scenario, ...], path: Path) -> ChapterCheck:
        """The replay of the frozen trace, here or, when library code changed under this process, in a new one."""
        if work.stale_library or self.chapters.stale_library(work.name):
            from primer.book._run import verify_in_worker

            self.setup.log.info(f"traces: library code changed since this process started; verifying {work.name} anew")
            return verify_in_worker(path, self.chapters.package, work.name, self.setup.time_limit)
        from primer.replay import verify_chapter

        return verify_chapter(frozen, list(scenarios))

    def plan(self, work: _Work) -> _Work:
        """Set the chapter's live status and trace shown, and whether to record it now."""
        path = str(self.store.path(work.name, "live"))
        decided = plan_live(
            work.frozen, work.code, work.check, self.settings, stale_library=work.stale_library, path=path
        )
        work = replace(work, status=decided.status, live=work.frozen, reused=work.reused + decided.reused)
        if decided.divergence is not None:
            # Recorded again at once, it will be current: worth a note, not a failed --strict build.
            if self.settings.live_enabled:
                self.setup.log.info(decided.divergence)
            else:
                work = self.warn(work, decided.divergence)
        if not decided.record:
            return work
        work = self.load(work)
        return replace(work, record=work.scenarios is not None)

    def record(self, works: list[_Work]) -> list[_Work]:
        """Run every chapter's live scenarios in one pool, then settle each chapter's frozen trace."""
        jobs = [(work.name, scenario) for work in works if work.record for scenario in work.scenarios or ()]
        if not jobs:
            return works
        from primer.book._run import run_live_jobs

        setup = self.setup
        runs = run_live_jobs(
            jobs,
            self.settings,
            setup.live_runner,
            workers=setup.workers,
            time_limit=setup.time_limit,
            progress=lambda progress: setup.log.info(progress.line("traces: live runs")),
        )
        recorded = datetime.now(UTC).isoformat(timespec="seconds")
        mine = {
            work.name: [run for (owner, _), run in zip(jobs, runs, strict=True) if owner == work.name] for work in works
        }
        return [self.settle(work, mine[work.name], recorded) if mine[work.name] else work for work in works]

    def settle(self, work: _Work, mine: list[ScenarioRun], recorded: str) -> _Work:
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
                self.setup.log.warning(
                    f"traces: {chapter} / {run.name} (live): in the refreshed trace the model {'; '.join(found)}, "
                    f"which the frozen trace did not show. The refresh replaced "
                    f"{self.store.path(chapter, 'live')}: review the change before committing it."
                )

    def show(self, work: _Work) -> Chapter:
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
        retry = self.settings.live_enabled and work.live is not None and any(map(failed, work.live.scenarios))
        if work.import_error is None and mock is not None and not retry:
            if key != work.entry:
                self.save(mock, key)
            summary.write(store.entry(work.name, key), list(work.warnings))
        names = None if work.import_error else tuple(run.name for run in shown)
        return Chapter(summary, traces, names, work.warnings)
