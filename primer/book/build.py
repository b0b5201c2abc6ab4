"""The book build: decide what runs, run it, keep it, and say what happened.

Before the pages render, ``Book.prepare`` goes through every chapter::

    mock   always: reused if its stored trace was made by the code now on
           disk (same ``source_hash``), run in-process otherwise (milliseconds)
    verify a frozen live trace whose code changed, key or no key: replay
           its own recording against the code now (``primer.replay``, no
           network, milliseconds). Every request the same: re-stamped with
           the new fingerprint and the day it was verified, otherwise kept
           byte for byte and shown stale, with where it diverged (a warning)
    live   only with a key (``PRIMER_API_KEY``, ``PRIMER_LIVE`` not ``off``):
           the frozen trace is refreshed when what its code sends changed,
           when it holds a failed scenario, or when ``PRIMER_LIVE=refresh``;
           the runs go through a bounded pool (4 at a time), each with a
           wall-clock limit

and logs one line, ``traces: ran N, reused M`` (``, verified K`` when a
replay was tried, ``, live: L`` when live runs are on), counting scenarios.

A live refresh is all or nothing per chapter: the chapter's frozen file is
replaced only when every scenario of the refresh succeeded, because the runs
of one file share one ``source_hash``. If any failed (ended in
``scenario_error`` or ``provider_failure``, or hit the time limit), the
earlier file stands whole, the page says the live trace is from an earlier
run and why, and a warning names chapter and scenario. A chapter that had no
live trace yet gets the failed one, so the page shows the failure.

Every failed scenario of the traces a build shows is a warning through the
``mkdocs.plugins.primer`` logger, on every build (so ``mkdocs build --strict``
fails for as long as it stays broken); nothing a scenario does stops the build.

``Book.shared`` keeps one ``Book`` per ``mkdocs.yml`` for the life of the
process: ``mkdocs serve`` re-reads its configuration, and so re-runs the hook
module, on every rebuild, while the book (and its in-memory traces) stays.

What a warm build costs beyond MkDocs' own work is kept small on purpose:
the rendered HTML of every marker is cached by what it depends on
(``primer.book.html_cache``, on disk with ``html_dir``), payloads are set
aside while the search plugin indexes a page (``primer.book.payloads``), and
each build's own share of the time is logged at DEBUG
(``primer.book.stopwatch``). Under ``mkdocs serve --dirty``, which rebuilds
only pages whose Markdown changed, ``expire`` has the pages whose traces
changed rebuilt too.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from primer.book import live_prose
from primer.book.chapters import Chapters
from primer.book.html_cache import HtmlCache
from primer.book.logs import book_logger
from primer.book.pages import check, listing, malformed, placeholder, replace
from primer.book.payloads import PayloadStash
from primer.book.pool import run_bounded
from primer.book.source import ChapterTraces, LiveStatus, find_markers
from primer.book.stopwatch import Stopwatch
from primer.book.store import PUBLISHED_DIR, CorruptTrace, TraceStore
from primer.errors import ChapterError, ConfigError, quoted
from primer.redact import Redactor
from primer.runner import run_scenario
from primer.scenario import Scenario
from primer.settings import Settings
from primer.trace import ChapterRun, Ending, ErrorInfo, Mode, ScenarioRun

if TYPE_CHECKING:
    from primer.replay import ChapterCheck

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "DEFAULT_WORKERS",
    "LOGGER_NAME",
    "Book",
    "LiveRunner",
    "Report",
    "WorkerOutput",
    "anomalies",
    "failed",
    "run_live",
    "run_mock_chapter",
]

#: The logger MkDocs counts in ``--strict`` (any ``mkdocs.*`` logger is).
LOGGER_NAME = "mkdocs.plugins.primer"
#: Live runs at a time.
DEFAULT_WORKERS = 4
#: Seconds one live scenario may take, from its start.
DEFAULT_TIME_LIMIT = 300.0

#: Runs one scenario live; injected so tests can stand in for the network.
LiveRunner = Callable[[Scenario, Settings], ScenarioRun]


class WorkerOutput(BaseModel):
    """What ``primer.book.worker`` prints: the runs, and why a chapter has none.

    With ``--verify``, ``checks`` holds each chapter's replay instead of runs
    (a ``primer.replay.ChapterCheck`` as JSON: that module is imported only
    when a replay is needed).
    """

    runs: list[ChapterRun]
    errors: dict[str, str]
    checks: dict[str, dict[str, Any]] = Field(default_factory=dict)


def run_live(scenario: Scenario, settings: Settings) -> ScenarioRun:
    """The default live runner: ``primer.runner.run_scenario`` in live mode."""
    return run_scenario(scenario, "live", settings)


def _differ(before: ChapterTraces | None, after: ChapterTraces | None) -> bool:
    # The store hands out one object per version of a trace, so identity
    # says "unchanged" cheaply; a false "changed" only rebuilds a page more.
    if before is None or after is None:
        return before is not after
    return before.mock is not after.mock or before.live is not after.live or before.live_status != after.live_status


def failed(run: ScenarioRun) -> bool:
    """Whether a scenario run failed (an error in it, or at its provider)."""
    return run.ending.failed


def anomalies(run: ScenarioRun) -> list[str]:
    """What the model did in a run that no tool could act on, one phrase each.

    Tool calls whose arguments are not a JSON object, and tool calls naming a
    tool the model was not given: the model's doing, not the scenario's.
    """
    found: list[str] = []
    for turn in run.turns:
        call = turn.model_call
        declared = {tool.name for tool in call.tools} | set(run.tools)
        for tool_call in call.reply.tool_calls if call.reply is not None else []:
            # quoted(): the name is the model's text, shown inert in the log.
            name = quoted(tool_call.name)
            if tool_call.name not in declared:
                found.append(f"asked for {name}, a tool it was not given")
            if tool_call.raw_arguments is not None:
                found.append(f"sent {name} arguments that are not a JSON object")
    return list(dict.fromkeys(found))


def _error_run(name: str, mode: Mode, error: BaseException | str, redactor: Redactor) -> ScenarioRun:
    if isinstance(error, BaseException):
        info = ErrorInfo(
            type=type(error).__name__,
            message=redactor.text(str(error)),
            traceback=redactor.text("".join(traceback.format_exception(error))),
        )
    else:
        info = ErrorInfo(type="TimeoutError", message=redactor.text(error))
    return ScenarioRun(
        name=name,
        mode=mode,
        ending=Ending(reason="scenario_error", detail=f"{info.type}: {info.message}"),
        error=info,
    )


def run_mock_chapter(chapters: Chapters, chapter: str, settings: Settings) -> ChapterRun:
    """Run every scenario of a chapter in mock mode, in this process.

    An exception that escapes a scenario (``run_scenario`` records those of
    the scenario's own loop) becomes that scenario's ``scenario_error``.
    """
    redactor = Redactor(settings.secrets())
    runs = []
    for scenario in chapters.scenarios(chapter):
        try:
            runs.append(run_scenario(scenario, "mock", settings))
        except Exception as error:  # noqa: BLE001 - shown on the page, never fatal
            runs.append(_error_run(scenario.name, "mock", error, redactor))
    return ChapterRun(chapter=chapter, mode="mock", model="mock", scenarios=runs)


@dataclass
class Report:
    """What one build did, counted in scenarios."""

    ran: int = 0
    reused: int = 0
    #: Live scenarios verified by replay, or None when no replay was tried.
    verified: int | None = None
    #: Live scenario runs, or None when live runs are off.
    live: int | None = None
    #: ``chapter / scenario (mode): ending`` of every failed scenario shown.
    failures: list[str] = field(default_factory=list)
    off: bool = False

    def line(self) -> str:
        """``traces: ran 2, reused 4`` (``, verified 4`` after a replay, ``, live: 2`` when live runs are on)."""
        if self.off:
            return "traces: off (PRIMER_TRACES=off), nothing ran"
        verified = f", verified {self.verified}" if self.verified is not None else ""
        live = f", live: {self.live}" if self.live is not None else ""
        return f"traces: ran {self.ran}, reused {self.reused}{verified}{live}"


@dataclass
class _Chapter:
    """One chapter's state during a build."""

    name: str
    key: str
    mock: ChapterRun | None = None
    frozen: ChapterRun | None = None
    live: ChapterRun | None = None
    status: LiveStatus = field(default_factory=lambda: LiveStatus("missing"))
    scenarios: list[Scenario] | None = None
    import_error: ScenarioRun | None = None
    stale_library: bool = False
    #: What a replay of the frozen live trace found: None if none was tried.
    check: ChapterCheck | None = None


class Book:
    """One book: its chapters, its trace store, and how its live runs go."""

    _shared: ClassVar[dict[str, Book]] = {}

    def __init__(
        self,
        docs_dir: Path,
        cache_dir: Path,
        *,
        chapters: Chapters | None = None,
        settings: Settings | None = None,
        live_runner: LiveRunner = run_live,
        workers: int = DEFAULT_WORKERS,
        time_limit: float = DEFAULT_TIME_LIMIT,
        logger: logging.Logger | None = None,
        html_dir: Path | None = None,
    ) -> None:
        # Parsed imports are kept beside the mock traces, so a new process
        # parses only the modules edited since.
        self.chapters = chapters or Chapters(imports_cache=cache_dir / "imports.json")
        self.store = TraceStore(docs_dir / PUBLISHED_DIR, cache_dir)
        #: Rendered markers, for the Markdown extension (on disk in ``html_dir``, if given).
        self.rendered = HtmlCache(html_dir, fingerprint_file=cache_dir / "renderer.json")
        self.payloads = PayloadStash()
        #: This build's own time, per part.
        self.clock = Stopwatch()
        #: Chapters whose traces shown changed in the last ``prepare``.
        self.changed: set[str] = set()
        # page -> chapters its markers name, as last rendered (for --dirty).
        self._page_chapters: dict[str, set[str]] = {}
        #: Fixed settings, or None to read the environment at every build.
        self.settings = settings
        self.live_runner = live_runner
        self.workers = workers
        self.time_limit = time_limit
        self.log = book_logger(logger or LOGGER_NAME)
        self.enabled = True
        #: Chapter -> scenario names (None if the chapter cannot be imported).
        self.scenario_names: dict[str, list[str] | None] = {}
        self._warned: list[str] = []

    @classmethod
    def shared(cls, key: str, make: Callable[[], Book]) -> Book:
        """The book registered under ``key`` (a ``mkdocs.yml`` path), made on first use."""
        if key not in cls._shared:
            cls._shared[key] = make()
        return cls._shared[key]

    @classmethod
    def register(cls, key: str, book: Book | None) -> None:
        """Set (or with None, drop) the book ``shared`` returns for ``key``."""
        if book is None:
            cls._shared.pop(key, None)
        else:
            cls._shared[key] = book

    # -- the build ---------------------------------------------------------

    def _settings(self) -> Settings:
        if self.settings is not None:
            return self.settings
        try:
            return Settings.from_env()
        except ConfigError as error:
            self.log.warning(f"traces: {error} Live runs are off for this build.")
            return Settings(traces="off" if os.environ.get("PRIMER_TRACES", "").strip() == "off" else "on")

    def prepare(self) -> Report:
        """Run what is needed and hand every chapter's traces to the store."""
        self.clock.reset()
        self.rendered.reset()
        self.payloads.clear()
        with self.clock("prepare"):
            return self._prepare()

    def _prepare(self) -> Report:
        before = {chapter: self.store.traces(chapter) for chapter in self.store.chapters()}
        report = self._run_and_show()
        after = {chapter: self.store.traces(chapter) for chapter in self.store.chapters()}
        self.changed = {
            chapter for chapter in before.keys() | after.keys() if _differ(before.get(chapter), after.get(chapter))
        }
        return report

    def _run_and_show(self) -> Report:
        settings = self._settings()
        self.store.clear_shown()
        self.scenario_names = {}
        self._warned = []
        if settings.traces == "off":
            self.enabled = False
            report = Report(off=True)
            self.log.info(report.line())
            return report
        self.enabled = True
        report = Report(live=0 if settings.live_enabled else None)
        redactor = Redactor(settings.secrets())
        try:
            names = self.chapters.names()
        except Exception as error:  # noqa: BLE001 - a broken package is reported, not fatal
            why = redactor.text(str(error))
            self.log.warning(f"traces: the chapters' package {self.chapters.package} could not be imported: {why}")
            return report
        with self.chapters.snapshot():
            keys = {name: self.chapters.fingerprint(name) for name in names}
        states = [self._mock(_Chapter(name, keys[name]), settings, report) for name in names]
        self._fresh_mock([s for s in states if s.mock is None], settings, report)
        for state in states:
            self._verify(state, settings, report)
        jobs = [job for state in states for job in self._live_plan(state, settings, report)]
        self._run_live(states, jobs, settings, report, redactor)
        for state in states:
            self._show(state)
        report.failures = list(self._warned)
        self.log.info(report.line())
        return report

    def _stored(self, chapter: str, mode: Mode) -> ChapterRun | None:
        try:
            return self.store.load(chapter, mode)
        except CorruptTrace as error:
            action = "runs again and the file is replaced" if mode == "mock" else "is refreshed when a key is set"
            self.log.warning(f"traces: {error} The {mode} trace of {chapter} {action}.")
            return None

    def _load(self, state: _Chapter, settings: Settings) -> bool:
        if state.scenarios is not None or state.import_error is not None:
            return state.scenarios is not None
        try:
            state.scenarios = self.chapters.scenarios(state.name)
        except Exception as error:  # noqa: BLE001 - a chapter that fails to import is shown, not fatal
            state.import_error = _error_run("import", "mock", error, Redactor(settings.secrets()))
            module = self.chapters.module_name(state.name)
            state.import_error.title = (
                f"The chapter module {module} declares its scenarios wrongly."
                if isinstance(error, ChapterError)
                else f"The chapter module {module} could not be imported."
            )
            return False
        return True

    def _mock(self, state: _Chapter, settings: Settings, report: Report) -> _Chapter:
        stored = self._stored(state.name, "mock")
        if stored is not None and stored.source_hash == state.key:
            state.mock = stored
            report.reused += len(stored.scenarios)
            return state
        self.store.forget(state.name)
        state.stale_library = bool(self.chapters.stale_library(state.name))
        if state.stale_library:
            return state  # run in a fresh interpreter with the others, below
        if not self._load(state, settings):
            return state
        run = run_mock_chapter(self.chapters, state.name, settings)
        self._keep(state, run, report)
        return state

    def _keep(self, state: _Chapter, run: ChapterRun, report: Report) -> None:
        run.source_hash = state.key
        state.mock = run
        report.ran += len(run.scenarios)
        self._save(run)

    def _save(self, run: ChapterRun) -> None:
        try:
            self.store.save(run)
        except OSError as error:
            # The run still shows: the store kept it in memory.
            self.log.warning(f"traces: the {run.mode} trace of {run.chapter} could not be written: {error}")

    def _fresh_mock(self, states: list[_Chapter], settings: Settings, report: Report) -> None:
        """Run chapters whose library code changed since this process imported it, in a new interpreter."""
        fresh = [s for s in states if s.stale_library]
        if not fresh:
            return
        redactor = Redactor(settings.secrets())
        command = [sys.executable, "-B", "-m", "primer.book.worker", self.chapters.package, *(s.name for s in fresh)]
        # The same import path as here: the chapters' package may live beside the book.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.log.info(f"traces: library code changed since this process started; running {len(fresh)} chapter(s) anew")
        try:
            done = subprocess.run(  # noqa: S603 - our own interpreter and module
                command, capture_output=True, text=True, timeout=self.time_limit, env=env, check=True
            )
            output = WorkerOutput.model_validate_json(done.stdout)
        except (subprocess.SubprocessError, ValueError, OSError) as error:
            detail = (getattr(error, "stderr", None) or str(error)).strip()[-2000:]
            output = WorkerOutput(runs=[], errors={state.name: detail for state in fresh})
        runs = {run.chapter: run for run in output.runs}
        for state in fresh:
            if state.name in runs:
                self._keep(state, runs[state.name], report)
            else:
                why = output.errors.get(state.name, "the worker gave no trace for it")
                state.import_error = _error_run("import", "mock", RuntimeError(why), redactor)

    def _verify(self, state: _Chapter, settings: Settings, report: Report) -> None:
        """Replay a frozen live trace whose code changed; re-stamp it if every request is the same."""
        state.frozen = frozen = self._stored(state.name, "live")
        if frozen is None or frozen.source_hash == state.key:
            return
        if settings.live_enabled and (settings.live == "refresh" or any(failed(run) for run in frozen.scenarios)):
            return  # recorded again whatever a replay says
        if not self._load(state, settings) or state.scenarios is None:
            return  # the import error is shown; the live trace stays as it was
        # Here, not at the top: it loads the openai SDK's HTTP stack, which a
        # build with nothing to replay does without.
        from primer.replay import IncompleteRecording, verify_chapter

        path = self.store.path(state.name, "live")
        try:
            if state.stale_library or self.chapters.stale_library(state.name):
                check = self._verify_fresh(state.name, path)
            else:
                check = verify_chapter(frozen, state.scenarios)
        except Exception as error:  # noqa: BLE001 - a replay that breaks is reported, never fatal
            why = str(error) if isinstance(error, IncompleteRecording) else f"{type(error).__name__}: {error}"
            why = Redactor(settings.secrets()).text(why)
            if settings.live_enabled:  # recorded again now: a note, not a failed --strict build
                self.log.info(f"traces: the live trace {path} could not be verified by replay: {why}")
            else:
                self.log.warning(
                    f"traces: the live trace {path} could not be verified by replay: {why} "
                    "It is shown as recorded from earlier code; record it again with PRIMER_API_KEY set."
                )
            return
        report.verified = (report.verified or 0) + sum(c.verified for c in check.scenarios)
        state.check = check
        if not check.verified:
            return
        # Only the stamp changes: the recording (timings, usage, answers) stays the provider's.
        day = datetime.now(UTC).date().isoformat()
        state.frozen = frozen.model_copy(update={"source_hash": state.key, "verified_at": day})
        self._save(state.frozen)

    def _verify_fresh(self, chapter: str, path: Path) -> ChapterCheck:
        """Replay in a new interpreter: this one runs library code that changed on disk since."""
        from primer.replay import ChapterCheck, IncompleteRecording

        command = [sys.executable, "-B", "-m", "primer.book.worker", "--verify", str(path), self.chapters.package]
        self.log.info(f"traces: library code changed since this process started; verifying {chapter} by replay anew")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        try:
            done = subprocess.run(  # noqa: S603 - our own interpreter and module
                [*command, chapter], capture_output=True, text=True, timeout=self.time_limit, env=env, check=True
            )
            output = WorkerOutput.model_validate_json(done.stdout)
        except (subprocess.SubprocessError, ValueError, OSError) as error:
            detail = (getattr(error, "stderr", None) or str(error)).strip()[-2000:]
            raise IncompleteRecording(f"the replay in a new interpreter failed: {detail}") from None
        if chapter not in output.checks:
            raise IncompleteRecording(output.errors.get(chapter, "the replay gave no result"))
        return ChapterCheck.model_validate(output.checks[chapter])

    def _live_plan(self, state: _Chapter, settings: Settings, report: Report) -> list[tuple[_Chapter, Scenario]]:
        frozen = state.frozen
        when = f" (recorded {frozen.recorded_at})" if frozen and frozen.recorded_at else ""
        verified = state.check is not None and state.check.verified
        divergence = state.check.divergence if state.check is not None else None
        if frozen is None:
            reason = "no live run has been recorded yet: set PRIMER_API_KEY and build to record one"
            state.status = LiveStatus("missing", reason)
        elif frozen.source_hash == state.key:
            state.status = LiveStatus("current", "")
        elif divergence is not None:
            state.status = LiveStatus(
                "stale",
                f"recorded from earlier code{when}, and replayed against the code now it diverged: "
                f"{divergence.line()}. Set PRIMER_API_KEY to record it again",
            )
        else:
            state.status = LiveStatus("stale", f"recorded from earlier code{when}: set PRIMER_API_KEY to refresh it")
        state.live = frozen
        counted = 0 if verified or frozen is None else len(frozen.scenarios)
        if divergence is not None:
            action = "it is recorded again now" if settings.live_enabled else "it is shown stale"
            message = (
                f"traces: the live trace {self.store.path(state.name, 'live')} no longer matches the code: "
                f"replayed, {divergence.line()}; {action}"
            )
            # Recorded again at once, it will be current: worth a note, not a failed --strict build.
            (self.log.info if settings.live_enabled else self.log.warning)(message)
        if not settings.live_enabled:
            if settings.api_key is not None and frozen is not None and frozen.source_hash != state.key:
                earlier = state.status.reason if divergence is not None else f"recorded from earlier code{when}"
                state.status = LiveStatus("stale", f"{earlier}; PRIMER_LIVE=off")
            report.reused += counted
            return []
        wanted = (
            frozen is None
            or frozen.source_hash != state.key
            or settings.live == "refresh"
            or any(failed(run) for run in frozen.scenarios)
        )
        if not wanted and frozen is not None:
            report.reused += counted
            return []
        if state.stale_library:
            reason = "library code changed since this server started: the live refresh waits for a new build"
            state.status = LiveStatus(state.status.state, reason)
            return []
        if not self._load(state, settings) or state.scenarios is None:
            return []
        return [(state, scenario) for scenario in state.scenarios]

    def _run_live(
        self,
        states: list[_Chapter],
        jobs: list[tuple[_Chapter, Scenario]],
        settings: Settings,
        report: Report,
        redactor: Redactor,
    ) -> None:
        if not jobs:
            return

        def job(scenario: Scenario) -> Callable[[], ScenarioRun | Exception | None]:
            return lambda: self.live_runner(scenario, settings)

        limit = self.time_limit
        # A label is for progress lines only: an outcome is matched to its
        # scenario by position, so the name recorded is the scenario's own, whole.
        outcomes = run_bounded(
            [(f"{state.name}/{scenario.name}", job(scenario)) for state, scenario in jobs],
            limit=limit,
            workers=self.workers,
            on_timeout=lambda _label: None,
            on_error=lambda _label, error: error,
            progress=lambda progress: self.log.info(progress.line("traces: live runs")),
        )
        timed_out = f"no result within the {limit:g}s wall-clock limit"
        runs = [
            outcome
            if isinstance(outcome, ScenarioRun)
            else _error_run(scenario.name, "live", timed_out if outcome is None else outcome, redactor)
            for (_, scenario), outcome in zip(jobs, outcomes, strict=True)
        ]
        recorded = datetime.now(UTC).isoformat(timespec="seconds")
        report.ran += len(runs)
        report.live = (report.live or 0) + len(runs)
        for state in states:
            mine = [run for (owner, _), run in zip(jobs, runs, strict=True) if owner is state]
            if mine:
                self._settle(state, mine, settings, recorded)

    def _settle(self, state: _Chapter, runs: list[ScenarioRun], settings: Settings, recorded: str) -> None:
        new = ChapterRun(
            chapter=state.name,
            mode="live",
            source_hash=state.key,
            recorded_at=recorded,
            model=settings.model,
            scenarios=runs,
        )
        bad = [run for run in runs if failed(run)]
        for run in bad:
            self._warn_failed(state.name, run)
        frozen = state.frozen
        if bad and frozen is not None and not all(failed(run) for run in frozen.scenarios):
            names = ", ".join(run.name for run in bad)
            when = f"recorded {frozen.recorded_at}" if frozen.recorded_at else "recorded earlier"
            state.status = LiveStatus(
                "stale",
                f"the live trace shown was {when}: the refresh of {recorded} failed ({names}), so it was kept",
                ErrorInfo(type=bad[0].ending.reason, message=bad[0].ending.detail or bad[0].ending.label),
            )
            state.live = frozen
            return
        self._save(new)
        if frozen is not None:
            self._warn_anomalies(state.name, frozen, runs)
        state.live = new
        state.status = LiveStatus("current", "")

    def _warn_anomalies(self, chapter: str, frozen: ChapterRun, runs: list[ScenarioRun]) -> None:
        # A refresh replaces a committed trace: a model that now sends what no
        # tool can act on is worth a look before the new file is committed.
        before = {run.name: set(anomalies(run)) for run in frozen.scenarios}
        for run in runs:
            new = [what for what in anomalies(run) if what not in before.get(run.name, set())]
            if new:
                self.log.warning(
                    f"traces: {chapter} / {run.name} (live): in the refreshed trace the model {'; '.join(new)}, "
                    f"which the frozen trace did not show. The refresh replaced "
                    f"{self.store.path(chapter, 'live')}: review the change before committing it."
                )

    def _show(self, state: _Chapter) -> None:
        mock = state.mock
        if mock is None and state.import_error is not None:
            # Not stored: the import is tried again next build, and the
            # trace must not outlive the broken file.
            mock = ChapterRun(chapter=state.name, mode="mock", model="mock", scenarios=[state.import_error])
        self.scenario_names[state.name] = (
            None if state.import_error else [s.name for s in (mock.scenarios if mock else [])]
        )
        for run in [*(mock.scenarios if mock else []), *(state.live.scenarios if state.live else [])]:
            if failed(run):
                self._warn_failed(state.name, run)
        self.store.show(
            ChapterTraces(
                chapter=state.name,
                mock=mock,
                live=state.live,
                live_status=state.status,
                download_url=self.store.download_url(state.name),
            )
        )

    def _warn_failed(self, chapter: str, run: ScenarioRun) -> None:
        line = f"{chapter} / {run.name} ({run.mode}) failed: {run.ending.label}"
        if line not in self._warned:
            self._warned.append(line)
            detail = f": {run.ending.detail}" if run.ending.detail else ""
            self.log.warning(f"traces: {line}{detail}")

    # -- pages and the site -------------------------------------------------

    def page(self, name: str, markdown: str, *, renderer: bool) -> str:
        """A page's Markdown as it goes to the renderer.

        Markers naming what does not exist, and lines meant as markers that
        are not valid ones, are warned about (naming page and line). With traces off
        they become a placeholder; without the renderer (``renderer=False``)
        a plain listing of summary lines.
        """
        with self.clock("pages"):
            self._page_chapters[name] = {marker.chapter for marker in find_markers(markdown)} | {
                block.chapter for block in live_prose.blocks(markdown)
            }
            return self._page(name, markdown, renderer=renderer)

    def _page(self, name: str, markdown: str, *, renderer: bool) -> str:
        if not self.enabled:
            # What exists is not known with traces off, but a malformed marker is malformed all the same.
            for warning in malformed(name, markdown):
                self.log.warning(f"traces: {warning}")
            # No live run is shown, so no prose about one.
            return replace(live_prose.select(markdown, lambda _chapter, _scenario: False), placeholder)
        for warning in check(name, markdown, self.scenario_names) + live_prose.problems(
            name, markdown, self.scenario_names
        ):
            self.log.warning(f"traces: {warning}")
        if renderer:
            return markdown  # the extension keeps or drops the live blocks
        shown = set(self.store.chapters())
        markdown = live_prose.select(markdown, self._has_live)
        return replace(markdown, lambda m: listing(self.store.traces(m.chapter) if m.chapter in shown else None, m))

    def _has_live(self, chapter: str, scenario: str | None) -> bool:
        if chapter not in self.store.chapters():
            return False
        live = self.store.traces(chapter).live
        return live is not None and (scenario is None or any(s.name == scenario for s in live.scenarios))

    def expire(self, built: Mapping[str, Path]) -> list[str]:
        """Date back the built pages that show traces changed since the last build.

        For ``mkdocs serve --dirty``, which rebuilds only pages whose source
        is newer than their built file: a page's traces can change while its
        Markdown does not (its chapter's code was saved). ``built`` maps page
        names (as given to ``page``) to their built files; the ones to
        rebuild are dated to 1970, older than any source. Returns their names.
        """
        expired = []
        for name, path in built.items():
            if self._page_chapters.get(name, set()) & self.changed:
                try:
                    os.utime(path, ns=(0, 0))
                except FileNotFoundError:
                    continue  # not built yet: MkDocs builds it anyway
                expired.append(name)
        return expired

    def hide_payloads(self, name: str, html: str) -> str:
        """A page's HTML with its trace payloads set aside, for a search plugin to index."""
        with self.clock("search"):
            return self.payloads.take(name, html)

    def restore_payloads(self, name: str, html: str) -> str:
        """A page's HTML with the payloads ``hide_payloads`` set aside put back."""
        with self.clock("search"):
            return self.payloads.give_back(name, html)

    def publish(self, site_dir: Path) -> list[Path]:
        """Write each chapter's trace JSON into the site, for download."""
        with self.clock("publish"):
            return self.store.publish(site_dir) if self.enabled else []

    def log_share(self) -> None:
        """Log this build's own share of the time, per part, at DEBUG."""
        self.clock.add("render", self.rendered.seconds)
        self.rendered.seconds = 0.0
        counted = f"; markers rendered {self.rendered.rendered}, reused {self.rendered.reused}"
        self.log.debug(self.clock.line() + counted)

    def watched_dirs(self) -> Iterable[Path]:
        """The folders of code ``mkdocs serve`` should watch."""
        return self.chapters.watched_dirs()
