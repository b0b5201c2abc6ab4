"""Where the book machinery's time goes in one build: seconds per named part.

The hook logs ``line()`` at the end of each build, at DEBUG (``mkdocs serve -v`` shows it,
``benchmarks/build.py`` reads it)::

    clock = Stopwatch()
    with clock("prepare"):
        ...
    clock.line()   # "traces: the machinery's share of this build: 12.3 ms (prepare 11.0, ...)"
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Stopwatch"]


class Stopwatch:
    """Seconds spent per named part, since the last ``reset``."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}

    @contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        """Time the ``with`` block and add it to ``part``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(part, time.perf_counter() - started)

    def add(self, part: str, seconds: float) -> None:
        """Add seconds timed elsewhere to ``part``."""
        self.parts[part] = self.parts.get(part, 0.0) + seconds

    def reset(self) -> None:
        """Start a new build."""
        self.parts = {}

    @property
    def total(self) -> float:
        """Seconds over all parts."""
        return sum(self.parts.values())

    def line(self) -> str:
        """``traces: the machinery's share of this build: 12.3 ms (prepare 11.0, pages 0.4, ...)``."""
        parts = ", ".join(f"{part} {seconds * 1000:.1f}" for part, seconds in self.parts.items())
        return f"traces: the machinery's share of this build: {self.total * 1000:.1f} ms ({parts})"
