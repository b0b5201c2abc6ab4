"""What running mock scenarios costs a build that must run them, and proof that mock mode never really sleeps.

    python benchmarks/mock_runs.py              # 7 fresh processes of each kind, 50 warm rounds
    python benchmarks/mock_runs.py --processes 15 --rounds 200
    python benchmarks/mock_runs.py --check      # exit 1 when a target is missed
    python benchmarks/mock_runs.py --quick      # one of each, for CI (tests/test_benchmarks.py)

A build runs a chapter's scenarios only when something changed, in a
process that has not run any before: it imports the library (a warm build
never does), imports the chapter's module, and pays each first run's set-up
(pydantic's validators and schemas, the templates of the mock replies). So
the figures that matter are a **fresh process**'s (``--child``, a new
interpreter each, interleaved by kind):

* ``one chapter``: ch09's scenarios (as a chapter edit re-runs them);
* ``every chapter``: every scenario of the book (as a library edit or a
  cold build does);
* ``both seed chapters``: ch05 + ch09 (target well under 50 ms);

each split into the library's import, the chapters' imports and the runs,
timed inside the process, per scenario; and the whole process's wall time
next to an interpreter that only starts (``python -c pass``).

Then the **warm loop**, for contrast: every scenario again and again in one
process, after a first round (what the virtual clock makes possible, not
what a build pays). Around it ``time.sleep`` is wrapped: the share of wall
time really spent sleeping must be 0 (backoff and timeouts go on the
virtual clock), next to the simulated seconds the clock stood in for.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import SupportsIndex

from figures import spread, turns

STARTED = time.perf_counter()
ROOT = Path(__file__).resolve().parent.parent
SEED_CHAPTERS = ("ch05_loop_endings", "ch09_who_retries")
ONE_CHAPTER = "ch09_who_retries"
TARGET_SEED_MS = 50.0
KINDS = {"one chapter": "one", "every chapter": "every", "both seed chapters": "seeds"}


class SleepMeter:
    """Wraps ``time.sleep`` to count the calls and the real seconds they took."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self._original: Callable[[float | SupportsIndex], None] = time.sleep

    def __enter__(self) -> SleepMeter:
        def measured(seconds: float | SupportsIndex) -> None:
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


def child(kind: str) -> None:
    """In a new interpreter: import, load the chapters ``kind`` names, run their scenarios; print the times."""
    started = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from primer.chapters import chapter_names, scenarios_of
    from primer.runner import run_scenario

    imported = time.perf_counter()
    names = {"one": [ONE_CHAPTER], "seeds": list(SEED_CHAPTERS), "every": chapter_names()}[kind]
    scenarios = [s for name in names for s in scenarios_of(name)]
    loaded = time.perf_counter()
    with SleepMeter() as sleeps:
        for scenario in scenarios:
            run_scenario(scenario)
    ran = time.perf_counter()
    print(
        json.dumps(
            {
                "interpreter": started - STARTED,
                "library": imported - started,
                "chapters": loaded - imported,
                "runs": ran - loaded,
                "scenarios": len(scenarios),
                "sleeps": sleeps.calls,
            }
        )
    )


def fresh(processes: int) -> tuple[dict[str, list[dict[str, float]]], list[float]]:
    """``processes`` new interpreters of each kind, interleaved; and as many that only start."""
    found: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    empty: list[float] = []
    order = [*KINDS, "python -c pass"]
    for n in range(processes):
        for kind in turns(order, n):
            started = time.perf_counter()
            if kind == "python -c pass":
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                empty.append(time.perf_counter() - started)
                continue
            done = subprocess.run(
                [sys.executable, __file__, "--child", KINDS[kind]], capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"the {kind} process failed:\n{done.stderr}")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            figures["wall"] = time.perf_counter() - started
            found[kind].append(figures)
    return found, empty


def warm_loop(rounds: int) -> tuple[int, float, float, list[float], SleepMeter, float]:
    """Every scenario ``rounds`` times in this process, after one unmeasured round; the seed chapters too."""
    sys.path.insert(0, str(ROOT))
    from primer.chapters import chapter_names, scenarios_of
    from primer.runner import run_chapter, run_scenario

    scenarios = [s for name in chapter_names() for s in scenarios_of(name)]
    for scenario in scenarios:  # imports and pydantic's caches, paid once per process
        run_scenario(scenario)
    simulated = 0.0
    with SleepMeter() as sleeps:
        started = time.perf_counter()
        for _ in range(rounds):
            for scenario in scenarios:
                simulated += run_scenario(scenario).simulated_seconds
        wall = time.perf_counter() - started
        seed_ms = []
        for _ in range(rounds):
            round_started = time.perf_counter()
            for chapter in SEED_CHAPTERS:
                run_chapter(chapter)
            seed_ms.append((time.perf_counter() - round_started) * 1000)
        total = time.perf_counter() - started
    return len(scenarios), wall, simulated, seed_ms, sleeps, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--processes", type=int, default=7, help="fresh processes of each kind (default 7)")
    parser.add_argument("--rounds", "-n", type=int, default=50, help="rounds of the warm loop (default 50)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--quick", action="store_true", help="one process of each kind, two warm rounds: for CI")
    parser.add_argument("--child", choices=sorted(KINDS.values()), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if args.quick:
        args.processes, args.rounds = 1, 2

    found, empty = fresh(max(args.processes, 1))
    print(f"fresh process (a new interpreter each, {args.processes} of each kind, interleaved; medians):")
    print(f"  python -c pass: {statistics.median(empty) * 1000:.0f} ms wall")
    missed = []
    for kind, runs in found.items():
        count = int(runs[0]["scenarios"])
        each = spread([(r["chapters"] + r["runs"]) / count * 1000 for r in runs])
        whole = spread([(r["library"] + r["chapters"] + r["runs"]) / count * 1000 for r in runs])
        library, chapters, ran, process = (
            statistics.median(r[part] for r in runs) * 1000 for part in ("library", "chapters", "runs", "wall")
        )
        print(
            f"  {kind} ({count} scenarios): library import {library:.0f} ms + chapters' imports {chapters:.0f} ms"
            f" + runs {ran:.0f} ms; process wall {process:.0f} ms"
        )
        print(f"    per scenario, its chapter's import and its run: {each.text(1, ' ms')}")
        print(f"    per scenario, the library's import shared out too: {whole.text(1, ' ms')}")
        if any(r["sleeps"] for r in runs):
            missed.append(f"{kind}: mock runs called time.sleep")
        if kind == "both seed chapters":
            seeds = statistics.median((r["chapters"] + r["runs"]) * 1000 for r in runs)
            print(f"    both seed chapters, imports and runs: {seeds:.1f} ms (target < {TARGET_SEED_MS:.0f} ms)")
            if seeds >= TARGET_SEED_MS:
                missed.append(
                    f"the seed chapters took {seeds:.1f} ms in a fresh process, not under {TARGET_SEED_MS:.0f}"
                )

    rounds = max(args.rounds, 1)
    scenarios, wall, simulated, seed_ms, sleeps, total = warm_loop(rounds)
    runs = rounds * scenarios
    print(f"warm loop (one process, after a first round; not what a build pays), {rounds} rounds:")
    print(f"  {scenarios} scenarios: {runs / wall:,.0f} a second ({wall / runs * 1000:.2f} ms each)")
    print(f"  both seed chapters together: {spread(seed_ms).text(1, ' ms')}")
    print(
        f"really sleeping: {sleeps.seconds / total:.1%} of the warm loop's wall time "
        f"({sleeps.calls} sleep calls, {sleeps.seconds:.3f} s; target 0)"
    )
    print(f"simulated instead: {simulated / rounds:g} s per round, {simulated:g} s in all")
    if sleeps.calls:
        missed.append("mock runs called time.sleep")
    for problem in missed:
        print(f"target missed: {problem}", file=sys.stderr)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
