"""Clocks: the real one, and a virtual one for mock runs.

Everything that waits (backoff) or measures (timings) goes through a clock
that is injected, never through ``time`` directly. A mock run gets a
``VirtualClock``: a sleep advances simulated time at once, so a scenario that
backs off for a second and waits out a ten-second delay finishes in
microseconds, and gives the same trace every time.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "RealClock", "VirtualClock"]


class Clock(Protocol):
    """What the library needs of time."""

    def now(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait, really or virtually."""
        ...


class RealClock:
    """Wall-clock time: ``perf_counter`` and ``time.sleep``."""

    def now(self) -> float:
        """Seconds from ``time.perf_counter``."""
        return time.perf_counter()

    def sleep(self, seconds: float) -> None:
        """Really sleep."""
        if seconds > 0:
            time.sleep(seconds)


class VirtualClock:
    """Real elapsed time plus simulated time that sleeps add instead of waiting.

    >>> clock = VirtualClock()
    >>> clock.sleep(10.0)      # returns at once
    >>> clock.simulated
    10.0
    """

    def __init__(self) -> None:
        self.simulated = 0.0

    def now(self) -> float:
        """Real elapsed time with the simulated seconds added on."""
        return time.perf_counter() + self.simulated

    def sleep(self, seconds: float) -> None:
        """Advance simulated time; never block."""
        if seconds > 0:
            self.simulated += seconds
