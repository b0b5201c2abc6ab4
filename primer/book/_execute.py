"""Running what the plan asks for: mock in this process or a new one, live in a bounded pool.

* ``run_mock_chapter``: a chapter's mock scenarios here, on the virtual clock; an exception that
  escapes a scenario becomes its ``scenario_error``.
* ``in_worker`` / ``verify_in_worker``: the same, or a replay of a frozen live trace, in a new
  interpreter (``primer.book._worker``): ``mkdocs serve`` cannot re-import code changed on disk.
* ``run_live_jobs``: live scenarios through ``primer.book._pool``, each within a wall-clock limit,
  sharing one SDK import and one set of connections (``primer.book._shared_live``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from primer.book._pool import Progress, run_bounded
from primer.redact import Redactor
from primer.settings import Settings
from primer.trace import ChapterRun, Ending, ErrorInfo, Mode, ScenarioRun

if TYPE_CHECKING:
    from primer.book._chapters import Chapters
    from primer.replay import ChapterCheck
    from primer.scenario import Scenario

__all__ = [
    "LiveRunner",
    "WorkerFailed",
    "WorkerOutput",
    "error_run",
    "in_worker",
    "run_live",
    "run_live_jobs",
    "run_mock_chapter",
    "verify_in_worker",
]

#: Runs one scenario live; injected so tests can stand in for the network.
LiveRunner = Callable[["Scenario", Settings], ScenarioRun]


class WorkerOutput(BaseModel):
    """What ``primer.book._worker`` prints: the runs, why a chapter has none, and replays (``--verify``).

    A replay is a ``primer.replay.ChapterCheck`` as JSON: that module is imported only when needed.
    """

    runs: list[ChapterRun]
    errors: dict[str, str]
    checks: dict[str, dict[str, Any]] = Field(default_factory=dict)


class WorkerFailed(Exception):
    """The worker process failed or printed what is not its output; the message says how."""


def error_run(name: str, mode: Mode, error: BaseException | str, redactor: Redactor) -> ScenarioRun:
    """A scenario run that ended in ``scenario_error``: an exception, or a sentence saying why (a time limit)."""
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
    """Run every scenario of a chapter in mock mode, in this process."""
    # Here, not at the top: a warm build runs nothing, and need not load the library.
    from primer.runner import run_scenario

    redactor = settings.redactor()
    runs = []
    for scenario in chapters.scenarios(chapter):
        try:
            runs.append(run_scenario(scenario, "mock", settings))
        except Exception as error:  # noqa: BLE001 - shown on the page, never fatal
            runs.append(error_run(scenario.name, "mock", error, redactor))
    return ChapterRun(chapter=chapter, mode="mock", model="mock", scenarios=runs)


def _worker(arguments: Sequence[str], time_limit: float) -> WorkerOutput:
    command = [sys.executable, "-B", "-m", "primer.book._worker", *arguments]
    # The same import path as here: the chapters' package may live beside the book.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and module
            command, capture_output=True, text=True, timeout=time_limit, env=env, check=True
        )
        return WorkerOutput.model_validate_json(done.stdout)
    except (subprocess.SubprocessError, ValueError, OSError) as error:
        raise WorkerFailed((getattr(error, "stderr", None) or str(error)).strip()[-2000:]) from None


def in_worker(package: str, chapters: Sequence[str], time_limit: float) -> WorkerOutput:
    """Run chapters' mock scenarios in a new interpreter; a failed worker is every chapter's error."""
    try:
        return _worker([package, *chapters], time_limit)
    except WorkerFailed as error:
        return WorkerOutput(runs=[], errors=dict.fromkeys(chapters, str(error)))


def verify_in_worker(path: Path, package: str, chapter: str, time_limit: float) -> ChapterCheck:
    """Replay a frozen live trace in a new interpreter; raises ``IncompleteRecording`` saying why not."""
    from primer.replay import ChapterCheck, IncompleteRecording

    try:
        output = _worker(["--verify", str(path), package, chapter], time_limit)
    except WorkerFailed as error:
        raise IncompleteRecording(f"the replay in a new interpreter failed: {error}") from None
    if chapter not in output.checks:
        raise IncompleteRecording(output.errors.get(chapter, "the replay gave no result"))
    return ChapterCheck.model_validate(output.checks[chapter])


def run_live(scenario: Scenario, settings: Settings) -> ScenarioRun:
    """Run one scenario live, setting up its own SDK client and connections (``SharedLive`` shares them)."""
    from primer.runner import run_scenario

    return run_scenario(scenario, "live", settings)


def run_live_jobs(
    jobs: Sequence[tuple[str, Scenario]],
    settings: Settings,
    runner: LiveRunner | None,
    *,
    workers: int,
    time_limit: float,
    progress: Callable[[Progress], None],
) -> list[ScenarioRun]:
    """Run ``(chapter, scenario)`` jobs live, in order (``runner`` None: a ``SharedLive``); failures are error runs."""
    if not jobs:
        return []
    if runner is None:
        from primer.book._shared_live import SharedLive  # the SDK and its HTTP stack: only for live runs

        with SharedLive() as shared:
            return run_live_jobs(jobs, settings, shared, workers=workers, time_limit=time_limit, progress=progress)

    def job(scenario: Scenario) -> Callable[[], ScenarioRun | Exception | None]:
        return lambda: runner(scenario, settings)

    # A label is for progress lines only: an outcome is matched to its
    # scenario by position, so the name recorded is the scenario's own, whole.
    outcomes = run_bounded(
        [(f"{chapter}/{scenario.name}", job(scenario)) for chapter, scenario in jobs],
        limit=time_limit,
        workers=workers,
        on_timeout=lambda _label: None,
        on_error=lambda _label, error: error,
        progress=progress,
    )
    redactor = settings.redactor()
    timed_out = f"no result within the {time_limit:g}s wall-clock limit"
    return [
        outcome
        if isinstance(outcome, ScenarioRun)
        else error_run(scenario.name, "live", timed_out if outcome is None else outcome, redactor)
        for (_, scenario), outcome in zip(jobs, outcomes, strict=True)
    ]
