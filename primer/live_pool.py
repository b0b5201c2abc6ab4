"""Running scenarios live, a few at a time over one set of connections, each within a time limit.

A live scenario waits on the network: the book's build runs four at once (``run_live_jobs``), and one
that takes longer than its limit gives its place to the next and ends in ``scenario_error`` saying
so. ``python -m primer run --mode live`` runs a chapter's one at a time, in order, under the same limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from primer.runner import error_run
from primer.trace import ScenarioRun

if TYPE_CHECKING:
    from primer.scenario import Scenario
    from primer.settings import Settings

__all__ = ["LiveRunner", "run_bounded", "run_live_jobs", "shared_live"]

#: Runs one scenario live; injected so tests can stand in for the network.
LiveRunner = Callable[["Scenario", "Settings"], ScenarioRun]
T = TypeVar("T")


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
    runner: LiveRunner | None = None,
    *,
    time_limit: float,
    progress: Callable[[str], None] | None = None,
    workers: int = 4,
) -> list[ScenarioRun]:
    """Run ``(chapter, scenario)`` jobs live, ``workers`` at once, each in ``time_limit`` (shared if no ``runner``)."""
    if runner is None:
        with shared_live() as shared:
            return run_live_jobs(jobs, settings, shared, time_limit=time_limit, progress=progress, workers=workers)

    # A label is for progress lines only: an outcome is matched to its scenario by position.
    labelled = [(f"{chapter}/{scenario.name}", partial(runner, scenario, settings)) for chapter, scenario in jobs]
    outcomes = run_bounded(labelled, limit=time_limit, workers=workers, progress=progress)
    timed_out = f"no result within the {time_limit:g}s wall-clock limit"
    return [
        outcome
        if isinstance(outcome, ScenarioRun)
        else error_run(scenario.name, "live", timed_out if outcome is None else outcome, settings.redactor())
        for (_, scenario), outcome in zip(jobs, outcomes, strict=True)
    ]
