"""What verifying a frozen live trace by replay costs, next to running the chapter in mock mode.

    python benchmarks/verify.py               # 7 fresh processes of each, 20 warm rounds
    python benchmarks/verify.py --processes 15 --rounds 50
    python benchmarks/verify.py --quick       # one of each, for CI (tests/test_benchmarks.py)

A build verifies ch09's frozen live trace only after a change to code the
chapter uses, in a process that has replayed nothing before. So the figures
that matter are a **fresh process**'s (a new interpreter each, interleaved):

* ``replay``: import the replay module (and with it the ``openai`` SDK the
  replay answers), read the frozen trace, replay it
  (``primer.replay.verify_chapter``);
* ``mock run``: import the runner, run ch09 in mock mode
  (``primer.runner.run_chapter``), what a build that re-runs the chapter pays;

each split into imports, reading and the run, timed inside the process.
Then both again and again in one process (**warm**, after the first):
what the code itself costs, not what a build pays.

What a whole build pays after a library edit (every mock scenario runs and
both live traces are verified) is ``build.py``'s ``after a library edit``
row, next to the warm and cold builds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from figures import spread, turns

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "ch09_who_retries"
FROZEN = ROOT / "docs" / "traces" / f"{CHAPTER}.live.json"


def child(kind: str) -> None:
    """In a new interpreter: one replay or one mock run of ch09, timed in parts; printed as JSON."""
    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    if kind == "replay":
        from primer.chapters import scenarios_of
        from primer.replay import read_trace, verify_chapter

        imported = time.perf_counter()
        frozen, scenarios = read_trace(FROZEN), scenarios_of(CHAPTER)
        read = time.perf_counter()
        check = verify_chapter(frozen, scenarios)
        ok = check.verified
    else:
        from primer.runner import run_chapter

        imported = read = time.perf_counter()
        ok = bool(run_chapter(CHAPTER, "mock").scenarios)
    done = time.perf_counter()
    figures = {"imports": imported - started, "read": read - imported, "run": done - read, "ok": ok}
    print(json.dumps(figures))


def fresh(processes: int) -> dict[str, list[dict[str, float]]]:
    """``processes`` new interpreters of each kind, interleaved."""
    found: dict[str, list[dict[str, float]]] = {"replay": [], "mock run": []}
    for n in range(processes):
        for kind in turns(list(found), n):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, __file__, "--child", kind.split()[0]], capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"the {kind} process failed:\n{done.stderr}")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            figures["wall"] = time.perf_counter() - started
            found[kind].append(figures)
    return found


def warm(rounds: int) -> None:
    """Replay ch09 and run it in mock mode, again and again in this process."""
    sys.path.insert(0, str(ROOT))
    from primer.chapters import scenarios_of
    from primer.replay import read_trace, verify_chapter
    from primer.runner import run_chapter

    frozen = read_trace(FROZEN)
    scenarios = scenarios_of(CHAPTER)
    check = verify_chapter(frozen, scenarios)
    run_chapter(CHAPTER, "mock")
    if not check.verified:
        print("note: ch09 did not verify:", check.divergence.line() if check.divergence else "")
    replays, mocks = [], []
    for n in range(rounds):
        for kind in turns(["replay", "mock"], n):
            started = time.perf_counter()
            if kind == "replay":
                verify_chapter(frozen, scenarios)
                replays.append((time.perf_counter() - started) * 1000)
            else:
                run_chapter(CHAPTER, "mock")
                mocks.append((time.perf_counter() - started) * 1000)
    requests = sum(c.requests for c in check.scenarios)
    print(f"warm, in one process after the first ({rounds} rounds, interleaved; not what a build pays):")
    print(f"  ch09 replay ({requests} requests): {spread(replays).text(1, ' ms')}")
    print(f"  ch09 mock run:            {spread(mocks).text(1, ' ms')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--processes", type=int, default=7, help="fresh processes of each kind (default 7)")
    parser.add_argument("--rounds", type=int, default=20, help="warm rounds in one process (default 20)")
    parser.add_argument("--quick", action="store_true", help="one process of each, two warm rounds: for CI")
    parser.add_argument("--child", choices=["replay", "mock"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if args.quick:
        args.processes, args.rounds = 1, 2
    found = fresh(max(args.processes, 1))
    print(f"fresh process, a new interpreter each ({args.processes} of each, interleaved; medians):")
    for kind, runs in found.items():
        imports, read, run, wall = (
            statistics.median(r[p] for r in runs) * 1000 for p in ("imports", "read", "run", "wall")
        )
        whole = spread([(r["imports"] + r["read"] + r["run"]) * 1000 for r in runs])
        verdict = "" if all(r["ok"] for r in runs) else "  (did not verify)"
        reading = f" + reading {read:.0f} ms" if kind == "replay" else ""
        print(f"  ch09 {kind}: imports {imports:.0f} ms{reading} + {kind} {run:.0f} ms{verdict}")
        print(f"    together: {whole.text(0, ' ms')}; process wall {wall:.0f} ms")
    warm(max(args.rounds, 1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
