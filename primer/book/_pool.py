"""Run slow jobs side by side: a bounded pool, a time limit each, progress.

At most ``workers`` jobs run at a time, each within a wall-clock limit from its start. A job past
it is given up (its result is ``on_timeout``'s) and its slot goes to the next; a thread cannot be
killed, so it is a daemon, left to finish or die with the process, its result ignored::

    >>> run_bounded([("a", lambda: 1), ("b", lambda: 2)], limit=5.0,
    ...             on_timeout=lambda label: -1, on_error=lambda label, exc: -2)
    [1, 2]
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Progress", "run_bounded"]

T = TypeVar("T")


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
    """Run labelled jobs, ``workers`` at a time, each within ``limit`` seconds.

    Results come back in the order of ``jobs``. A job that raises gets
    ``on_error(label, exception)``; one past its limit ``on_timeout(label)``.
    ``progress`` is called every ``every`` seconds while jobs remain, the
    first time after ``every`` seconds, so quick pools stay quiet.
    """
    results: dict[int, T] = {}
    outcomes: dict[int, T] = {}
    finished: queue.Queue[int] = queue.Queue()
    pending = list(range(len(jobs)))
    pending.reverse()
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
            # A job given up on may still finish: its result is ignored.
            if running.pop(index, None) is not None:
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
