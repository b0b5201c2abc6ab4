"""Running scenarios: mock in this process or a new one, live through a bounded pool with time limits.

* ``run_mock``: a chapter's mock scenarios here, on the virtual clock; an exception that escapes a
  scenario becomes its ``scenario_error`` run (``error_run``).
* ``in_worker`` / ``verify_in_worker``: the same, or a replay of a frozen live trace, in a new
  interpreter (``main``): ``mkdocs serve`` cannot re-import library code changed on disk
  (``importlib.reload`` would leave two versions of each class)::

      python -B -m primer.book._run primer.chapters ch05_loop_endings ch09_who_retries
      python -B -m primer.book._run --verify FILE PACKAGE CHAPTER

* ``run_live_jobs``: live scenarios through ``run_bounded``, at most ``workers`` at a time, each
  within a wall-clock limit from its start, sharing one SDK import and one set of connections
  (``primer.book._shared_live``).
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field

from primer.redact import Redactor
from primer.settings import Settings
from primer.trace import ChapterRun, Ending, ErrorInfo, Mode, ScenarioRun

if TYPE_CHECKING:
    from primer.replay import ChapterCheck
    from primer.scenario import Scenario

__all__ = [
    "LiveRunner",
    "Progress",
    "WorkerOutput",
    "error_run",
    "in_worker",
    "main",
    "run_bounded",
    "run_live_jobs",
    "run_mock",
    "verify_in_worker",
]

#: Runs one scenario live; injected so tests can stand in for the network.
LiveRunner = Callable[["Scenario", Settings], ScenarioRun]
T = TypeVar("T")


class WorkerOutput(BaseModel):
    """What the worker prints: the runs, why a chapter has none, and replays (a ``ChapterCheck`` as JSON)."""

    runs: list[ChapterRun]
    errors: dict[str, str]
    checks: dict[str, dict[str, Any]] = Field(default_factory=dict)


class _WorkerFailed(Exception):
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
        name=name, mode=mode, ending=Ending(reason="scenario_error", detail=f"{info.type}: {info.message}"), error=info
    )


def run_mock(chapter: str, scenarios: Sequence[Scenario], settings: Settings) -> ChapterRun:
    """Run a chapter's scenarios in mock mode, in this process."""
    from primer.runner import run_scenario  # a warm build runs nothing, and need not load the library

    runs = []
    for scenario in scenarios:
        try:
            runs.append(run_scenario(scenario, "mock", settings))
        except Exception as error:  # noqa: BLE001 - shown on the page, never fatal
            runs.append(error_run(scenario.name, "mock", error, settings.redactor()))
    return ChapterRun(chapter=chapter, mode="mock", model="mock", scenarios=runs)


def _worker(arguments: Sequence[str], time_limit: float) -> WorkerOutput:
    command = [sys.executable, "-B", "-m", "primer.book._run", *arguments]
    # The same import path as here: the chapters' package may live beside the book.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and module
            command, capture_output=True, text=True, timeout=time_limit, env=env, check=True
        )
        return WorkerOutput.model_validate_json(done.stdout)
    except (subprocess.SubprocessError, ValueError, OSError) as error:
        raise _WorkerFailed((getattr(error, "stderr", None) or str(error)).strip()[-2000:]) from None


def in_worker(package: str, chapters: Sequence[str], time_limit: float) -> WorkerOutput:
    """Run chapters' mock scenarios in a new interpreter; a failed worker is every chapter's error."""
    try:
        return _worker([package, *chapters], time_limit)
    except _WorkerFailed as error:
        return WorkerOutput(runs=[], errors=dict.fromkeys(chapters, str(error)))


def verify_in_worker(path: Path, package: str, chapter: str, time_limit: float) -> ChapterCheck:
    """Replay a frozen live trace in a new interpreter; raises ``IncompleteRecording`` saying why not."""
    from primer.replay import ChapterCheck, IncompleteRecording

    try:
        output = _worker(["--verify", str(path), package, chapter], time_limit)
    except _WorkerFailed as error:
        raise IncompleteRecording(f"the replay in a new interpreter failed: {error}") from None
    if chapter not in output.checks:
        raise IncompleteRecording(output.errors.get(chapter, "the replay gave no result"))
    return ChapterCheck.model_validate(output.checks[chapter])


def main(argv: Sequence[str] | None = None) -> int:
    """The worker: run each named chapter of the package in mock mode (or ``--verify``); print JSON."""
    from primer.book._chapters import Chapters

    args = list(sys.argv[1:] if argv is None else argv)
    output = WorkerOutput(runs=[], errors={})
    settings = Settings.from_env()
    redactor = settings.redactor()
    if args[:1] == ["--verify"]:
        from primer.replay import verify_chapter
        from primer.trace_file import read_trace

        path, package, chapter = args[1:4]
        try:
            check = verify_chapter(read_trace(Path(path)), Chapters(package).scenarios(chapter))
            output.checks[chapter] = check.model_dump(mode="json")
        except Exception as error:  # noqa: BLE001 - reported to the build, which warns naming the file
            output.errors[chapter] = redactor.text(f"{type(error).__name__}: {error}")
    else:
        package, *names = args
        chapters = Chapters(package)
        for name in names:
            try:
                output.runs.append(run_mock(name, chapters.scenarios(name), settings))
            except Exception as error:  # noqa: BLE001 - reported to the build, which shows it
                output.errors[name] = redactor.text("".join(traceback.format_exception(error)))
    sys.stdout.write(output.model_dump_json())
    return 0


@dataclass(frozen=True)
class Progress:
    """Where a pool stands, for a progress line."""

    done: int
    total: int
    running: list[str]
    elapsed: float

    def line(self, what: str = "jobs") -> str:
        """``live runs: 2 of 6 done after 3s; running ch09/service_is_busy, ...``."""
        running = f"; running {', '.join(self.running)}" if self.running else ""
        return f"{what}: {self.done} of {self.total} done after {self.elapsed:.0f}s{running}"


def run_bounded(
    jobs: Sequence[tuple[str, Callable[[], T]]],
    *,
    limit: float,
    on_timeout: Callable[[str], T],
    on_error: Callable[[str, Exception], T],
    workers: int = 4,
    progress: Callable[[Progress], None] | None = None,
    every: float = 1.0,
) -> list[T]:
    """Run labelled jobs, ``workers`` at a time, each within ``limit`` seconds; results in the order of ``jobs``.

    A job that raises gets ``on_error(label, exception)``; one past its limit ``on_timeout(label)``,
    and its slot goes to the next (a thread cannot be killed: it is a daemon, its result ignored).
    ``progress`` is called every ``every`` seconds while jobs remain, so quick pools stay quiet.
    """
    results: dict[int, T] = {}
    outcomes: dict[int, T] = {}
    finished: queue.Queue[int] = queue.Queue()
    pending = list(reversed(range(len(jobs))))
    running: dict[int, float] = {}
    start = time.monotonic()
    next_report = start + every

    def work(index: int) -> None:
        label, job = jobs[index]
        try:
            outcome = job()
        except Exception as error:  # noqa: BLE001 - one failed job is that job's result
            outcome = on_error(label, error)
        outcomes[index] = outcome
        finished.put(index)

    while pending or running:
        while pending and len(running) < max(workers, 1):
            index = pending.pop()
            running[index] = time.monotonic()
            threading.Thread(target=work, args=(index,), name=f"primer-{jobs[index][0]}", daemon=True).start()
        first_deadline = min(started + limit for started in running.values())
        wait = min(first_deadline, next_report if progress else first_deadline) - time.monotonic()
        try:
            index = finished.get(timeout=max(wait, 0.0))
        except queue.Empty:
            pass
        else:
            if running.pop(index, None) is not None:  # a job given up on may still finish: ignored
                results[index] = outcomes[index]
        now = time.monotonic()
        for index, started in list(running.items()):
            if now - started >= limit:
                del running[index]
                results[index] = on_timeout(jobs[index][0])
        if progress and now >= next_report and (pending or running):
            progress(Progress(len(results), len(jobs), [jobs[i][0] for i in sorted(running)], now - start))
            next_report += every * (1 + int((now - next_report) // every))
    return [results[index] for index in range(len(jobs))]


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

    # A label is for progress lines only: an outcome is matched to its scenario by position.
    outcomes = run_bounded(
        [(f"{chapter}/{scenario.name}", job(scenario)) for chapter, scenario in jobs],
        limit=time_limit,
        workers=workers,
        on_timeout=lambda _label: None,
        on_error=lambda _label, error: error,
        progress=progress,
    )
    timed_out = f"no result within the {time_limit:g}s wall-clock limit"
    return [
        outcome
        if isinstance(outcome, ScenarioRun)
        else error_run(scenario.name, "live", timed_out if outcome is None else outcome, settings.redactor())
        for (_, scenario), outcome in zip(jobs, outcomes, strict=True)
    ]


if __name__ == "__main__":
    raise SystemExit(main())
