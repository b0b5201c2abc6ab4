"""What verifying a frozen live trace by replay costs, next to a mock run and a whole build.

    python benchmarks/verify.py               # 20 rounds, 3 builds of each kind
    python benchmarks/verify.py --rounds 50 --builds 5

Prints, in milliseconds (medians):

* replaying ch09's frozen live trace (``primer.replay.verify_chapter``): the
  first replay of a process (it imports the ``openai`` SDK) and the next ones;
* running ch09 in mock mode (``primer.runner.run_chapter``), what every build
  that re-runs the chapter pays;
* whole ``mkdocs build`` runs of the book, in a temporary copy of the
  project: warm with nothing changed; after a refactor of ``primer/loop.py``
  (every mock scenario runs, and both live traces are verified); and cold
  (no cache at all). The builds' log lines are printed with them, so the
  ``verified`` count shows what each did.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Runnable from a checkout without installing: the repository root holds `primer`.
sys.path.insert(0, str(ROOT))

CHAPTER = "ch09_who_retries"
REFACTOR = (
    "def _failed(agent: Agent) -> Ending | None:\n",
    "def _ask(agent: Agent, context: list[Message]) -> Turn:\n    return agent.ask(context)\n\n\n"
    "def _failed(agent: Agent) -> Ending | None:\n",
)


def _ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:8.1f} ms"


def replay_and_mock(rounds: int) -> None:
    """Replay ch09 and run it in mock mode, in this process."""
    from primer.chapters import scenarios_of
    from primer.replay import read_trace, verify_chapter
    from primer.runner import run_chapter

    frozen = read_trace(ROOT / "docs" / "traces" / f"{CHAPTER}.live.json")
    scenarios = scenarios_of(CHAPTER)
    started = time.perf_counter()
    check = verify_chapter(frozen, scenarios)
    first = time.perf_counter() - started
    if not check.verified:
        print("note: ch09 did not verify:", check.divergence.line() if check.divergence else "")
    replays, mocks = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        verify_chapter(frozen, scenarios)
        replays.append(time.perf_counter() - started)
        started = time.perf_counter()
        run_chapter(CHAPTER, "mock")
        mocks.append(time.perf_counter() - started)
    requests = sum(c.requests for c in check.scenarios)
    print(f"ch09 replay, first in a process:  {first * 1000:8.1f} ms  ({requests} requests, openai SDK imported)")
    print(f"ch09 replay:                      {_ms(replays)}")
    print(f"ch09 mock run:                    {_ms(mocks)}")


def _copy() -> Path:
    target = Path(tempfile.mkdtemp(prefix="primer-verify-bench-"))
    ignore = shutil.ignore_patterns(".venv", ".git", "site", ".cache", "__pycache__", "*.pyc")
    for item in ROOT.iterdir():
        if item.name in (".venv", ".git", "site", ".cache"):
            continue
        if item.is_dir():
            shutil.copytree(item, target / item.name, ignore=ignore)
        else:
            shutil.copy2(item, target / item.name)
    return target


def _build(root: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(root), "NO_MKDOCS_2_WARNING": "1"}
    env = {k: v for k, v in env.items() if k != "PRIMER_API_KEY"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build"], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    elapsed = time.perf_counter() - started
    line = next((line for line in done.stderr.splitlines() if "traces: ran" in line), "?")
    return elapsed, line[line.index("traces:") :] if "traces:" in line else line


def builds(count: int) -> None:
    """Whole builds of the book in a copy: warm, after a refactor (replays), and cold."""
    root = _copy()
    try:
        _build(root)  # settle: caches made, live traces stamped for this code
        kinds: dict[str, tuple[list[float], str]] = {"warm": ([], ""), "refactor": ([], ""), "cold": ([], "")}
        loop = root / "primer" / "loop.py"
        original = loop.read_text()
        for _ in range(count):
            seconds, line = _build(root)
            kinds["warm"][0].append(seconds)
            kinds["warm"] = (kinds["warm"][0], line)
            loop.write_text(original.replace(*REFACTOR) if "def _ask(" not in loop.read_text() else original)
            seconds, line = _build(root)
            kinds["refactor"][0].append(seconds)
            kinds["refactor"] = (kinds["refactor"][0], line)
            shutil.rmtree(root / ".cache", ignore_errors=True)
            seconds, line = _build(root)
            kinds["cold"][0].append(seconds)
            kinds["cold"] = (kinds["cold"][0], line)
        for kind, (times, line) in kinds.items():
            print(f"mkdocs build, {kind + ':':<22}{_ms(times)}  ({line})")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--builds", type=int, default=3)
    args = parser.parse_args(argv)
    replay_and_mock(args.rounds)
    builds(args.builds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
