"""Running scenarios: mock here or in a new interpreter, live through a bounded pool with time limits.

The worker (``main``, ``in_worker``, ``verify_in_worker``) is for ``mkdocs serve``, which cannot
re-import library code changed on disk (``importlib.reload`` would leave two versions of each class).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, Field

from primer.redact import Redactor
from primer.settings import Settings
from primer.trace import ChapterRun, Ending, ErrorInfo, Mode, ScenarioRun

if TYPE_CHECKING:
    from primer.replay import ChapterCheck
    from primer.scenario import Scenario

__all__ = ["LiveRunner", "error_run", "in_worker", "run_bounded", "run_live_jobs", "run_mock", "verify_in_worker"]

#: Runs one scenario live; injected so tests can stand in for the network.
LiveRunner = Callable[["Scenario", Settings], ScenarioRun]
T = TypeVar("T")


class WorkerOutput(BaseModel):
    """What the worker prints: the runs, why a chapter has none, and replays (a ``ChapterCheck`` as JSON)."""

    runs: list[ChapterRun] = Field(default_factory=list)
    errors: dict[str, str] = Field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = Field(default_factory=dict)


def error_run(name: str, mode: Mode, error: BaseException | str, redactor: Redactor) -> ScenarioRun:
    """A scenario run that ended in ``scenario_error``: an exception, or a sentence saying why (a time limit)."""
    if isinstance(error, BaseException):
        trace = redactor.text("".join(traceback.format_exception(error)))
        info = ErrorInfo(type=type(error).__name__, message=redactor.text(str(error)), traceback=trace)
    else:
        info = ErrorInfo(type="TimeoutError", message=redactor.text(error))
    ending = Ending(reason="scenario_error", detail=f"{info.type}: {info.message}")
    return ScenarioRun(name=name, mode=mode, ending=ending, error=info)


def run_mock(chapter: str, scenarios: Sequence[Scenario], settings: Settings) -> ChapterRun:
    from primer.runner import run_scenario  # a warm build runs nothing, and need not load the library

    runs = []
    for scenario in scenarios:
        try:
            runs.append(run_scenario(scenario, "mock", settings))
        except Exception as error:  # noqa: BLE001 - shown on the page, never fatal
            runs.append(error_run(scenario.name, "mock", error, settings.redactor()))
    return ChapterRun(chapter=chapter, mode="mock", model="mock", scenarios=runs)


def in_worker(arguments: Sequence[str], chapters: Sequence[str], time_limit: float) -> WorkerOutput:
    """Run the worker (``main``) in a new interpreter; one that fails is every chapter's error."""
    command = [sys.executable, "-B", "-m", "primer.book._run", *arguments]
    # The same import path as here: the chapters' package may live beside the book.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        done = subprocess.run(  # noqa: S603 - our own interpreter and module
            command, capture_output=True, text=True, timeout=time_limit, env=env, check=True
        )
        return WorkerOutput.model_validate_json(done.stdout)
    except (subprocess.SubprocessError, ValueError, OSError) as error:
        why = (getattr(error, "stderr", None) or str(error)).strip()[-2000:]
        return WorkerOutput(errors=dict.fromkeys(chapters, f"the worker in a new interpreter failed: {why}"))


def verify_in_worker(path: Path, package: str, chapter: str, time_limit: float) -> ChapterCheck:
    """Replay a frozen live trace in a new interpreter; raises ``IncompleteRecording`` saying why not."""
    from primer.replay import ChapterCheck, IncompleteRecording

    output = in_worker(["--verify", str(path), package, chapter], [chapter], time_limit)
    if chapter not in output.checks:
        raise IncompleteRecording(output.errors.get(chapter, "the replay gave no result"))
    return ChapterCheck.model_validate(output.checks[chapter])


def main(argv: Sequence[str] | None = None) -> int:
    """The worker: run each named chapter of the package in mock mode (or ``--verify FILE PACKAGE CHAPTER``)."""
    from primer.book._chapters import Chapters

    args = list(sys.argv[1:] if argv is None else argv)
    output = WorkerOutput()
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


def run_bounded(
    jobs: Sequence[tuple[str, Callable[[], T]]],
    *,
    limit: float,
    workers: int = 4,
    progress: Callable[[str], None] | None = None,
    every: float = 1.0,
) -> list[T | Exception | None]:
    """Run labelled jobs, ``workers`` at a time, each within ``limit`` seconds; results in the order of ``jobs``.

    A job that raises gives its exception; one past its limit None, its slot given to the next (a thread
    cannot be killed: a daemon, its result ignored). ``progress`` gets a line every ``every`` seconds.
    """
    running = [False] * len(jobs)

    def slot(index: int) -> T | Exception | None:
        outcome: list[T | Exception] = []

        def work() -> None:
            try:
                outcome.append(jobs[index][1]())
            except Exception as error:  # noqa: BLE001 - one failed job is that job's result
                outcome.append(error)

        running[index] = True
        job = threading.Thread(target=work, name=f"primer-{jobs[index][0]}", daemon=True)
        job.start()
        job.join(limit)
        running[index] = False
        return outcome[0] if outcome else None

    start = time.monotonic()
    with ThreadPoolExecutor(max(workers, 1)) as pool:
        futures = [pool.submit(slot, index) for index in range(len(jobs))]
        while progress is not None and wait(futures, timeout=every).not_done:
            names = ", ".join(label for (label, _), on in zip(jobs, running, strict=True) if on)
            said = f"{sum(f.done() for f in futures)} of {len(jobs)} done after {time.monotonic() - start:.0f}s"
            progress(f"{said}; running {names}" if names else said)
    return [future.result() for future in futures]


@contextmanager
def shared_live() -> Iterator[LiveRunner]:
    """A live runner over one SDK import and one set of (thread-safe) connections: each cost 1.5 s a scenario.

    Each scenario still wraps them in a recording client of its own: its trace holds its own exchanges.
    """
    import httpx
    import httpx2
    import openai  # noqa: F401 - the SDK, imported here once rather than in every thread

    from primer.runner import live_environment, run_scenario

    # A scenario's client closing its transport leaves it open for the others: closed at the end.
    class Model(httpx2.HTTPTransport):
        def close(self) -> None:
            pass

    class Service(httpx.HTTPTransport):
        def close(self) -> None:
            pass

    model, service = Model(), Service()

    def run(scenario: Scenario, settings: Settings) -> ScenarioRun:
        environment = live_environment(scenario, settings, model_transport=model, service_transport=service)
        return run_scenario(scenario, "live", settings, environment=environment)

    try:
        yield run
    finally:
        httpx2.HTTPTransport.close(model)
        httpx.HTTPTransport.close(service)


def run_live_jobs(
    jobs: Sequence[tuple[str, Scenario]],
    settings: Settings,
    runner: LiveRunner | None,
    *,
    time_limit: float,
    progress: Callable[[str], None],
) -> list[ScenarioRun]:
    """Run ``(chapter, scenario)`` jobs live, 4 at a time, each within ``time_limit`` (``runner`` None: shared)."""
    if runner is None:
        with shared_live() as shared:
            return run_live_jobs(jobs, settings, shared, time_limit=time_limit, progress=progress)

    # A label is for progress lines only: an outcome is matched to its scenario by position.
    labelled = [(f"{chapter}/{scenario.name}", partial(runner, scenario, settings)) for chapter, scenario in jobs]
    outcomes = run_bounded(labelled, limit=time_limit, progress=progress)
    timed_out = f"no result within the {time_limit:g}s wall-clock limit"
    return [
        outcome
        if isinstance(outcome, ScenarioRun)
        else error_run(scenario.name, "live", timed_out if outcome is None else outcome, settings.redactor())
        for (_, scenario), outcome in zip(jobs, outcomes, strict=True)
    ]


if __name__ == "__main__":
    raise SystemExit(main())
