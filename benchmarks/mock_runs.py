"""How fast mock mode is, and proof that it never really sleeps.

    python benchmarks/mock_runs.py              # 50 rounds
    python benchmarks/mock_runs.py --rounds 200
    python benchmarks/mock_runs.py --check      # exit 1 when a target is missed

Runs every mock scenario of every chapter ROUNDS times and prints:

* scenarios per second;
* the mean time of both seed chapters' mock runs together (ch05 + ch09, as a
  build runs them; target well under 50 ms);
* the share of wall time spent really sleeping, measured by wrapping
  ``time.sleep`` (target 0: backoff and timeouts go on the virtual clock),
  next to the simulated seconds the virtual clock stood in for.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# Runnable from a checkout without installing: the repository root holds `primer`.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from primer.chapters import chapter_names, scenarios_of
from primer.runner import run_chapter, run_scenario

SEED_CHAPTERS = ("ch05_loop_endings", "ch09_who_retries")
TARGET_SEED_MS = 50.0


class SleepMeter:
    """Wraps ``time.sleep`` to count the calls and the real seconds they took."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self._original: Callable[[float], None] = time.sleep

    def __enter__(self) -> SleepMeter:
        def measured(seconds: float) -> None:
            started = time.perf_counter()
            try:
                self._original(seconds)
            finally:
                self.calls += 1
                self.seconds += time.perf_counter() - started

        time.sleep = measured
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep = self._original


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", "-n", type=int, default=50, help="how many times to run everything (default 50)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    rounds = max(args.rounds, 1)

    scenarios = [s for name in chapter_names() for s in scenarios_of(name)]
    # One round first, unmeasured: imports and pydantic's schema caches are paid once per process.
    for scenario in scenarios:
        run_scenario(scenario)
    for chapter in SEED_CHAPTERS:
        run_chapter(chapter)

    simulated = 0.0
    with SleepMeter() as sleeps:
        started = time.perf_counter()
        for _ in range(rounds):
            for scenario in scenarios:
                simulated += run_scenario(scenario).simulated_seconds
        all_wall = time.perf_counter() - started

        seed_ms = []
        for _ in range(rounds):
            round_started = time.perf_counter()
            for chapter in SEED_CHAPTERS:
                run_chapter(chapter)
            seed_ms.append((time.perf_counter() - round_started) * 1000)
        total_wall = time.perf_counter() - started

    runs = rounds * len(scenarios)
    mean = statistics.fmean(seed_ms)
    sleeping = sleeps.seconds / total_wall
    print(f"mock scenarios: {len(scenarios)} in {len(chapter_names())} chapters, {rounds} rounds")
    print(f"scenarios per second: {runs / all_wall:,.0f} ({all_wall / runs * 1000:.2f} ms each)")
    print(
        f"both seed chapters together ({' + '.join(SEED_CHAPTERS)}): mean {mean:.1f} ms, "
        f"median {statistics.median(seed_ms):.1f}, min {min(seed_ms):.1f}, max {max(seed_ms):.1f} "
        f"(target < {TARGET_SEED_MS:.0f} ms)"
    )
    print(
        f"really sleeping: {sleeping:.1%} of {total_wall:.2f} s wall time "
        f"({sleeps.calls} sleep calls, {sleeps.seconds:.3f} s; target 0)"
    )
    print(f"simulated instead: {simulated / rounds:g} s per round, {simulated:g} s in all")

    missed = []
    if sleeps.calls:
        missed.append("mock runs called time.sleep")
    if mean >= TARGET_SEED_MS:
        missed.append(f"the seed chapters took {mean:.1f} ms, not under {TARGET_SEED_MS:.0f}")
    for problem in missed:
        print(f"target missed: {problem}", file=sys.stderr)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
