"""Every benchmark runs, in its quick mode, so none rots: a round or two, figures printed, no thresholds.

The figures of a quick run mean nothing (one pair on whatever else the
machine does); what is checked is that each script still runs against
today's code and prints the rows its docstring promises. Speed targets are
read from full runs of the scripts, never from a test. (``phoenix.py`` is
not run here: it needs a virtual environment with arize-phoenix, which the
suite does not install.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"

slow = pytest.mark.slow


def run(script: str, *args: str, timeout: float = 300) -> str:
    """Run ``benchmarks/SCRIPT`` with ``args``; its output, failing the test with it if the script fails."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{script} {' '.join(args)} failed:\n{output[-6000:]}"
    print(output)  # the figures, in the test log (pytest -s or on failure)
    return done.stdout


@pytest.mark.parametrize(
    ("script", "args", "rows"),
    [
        pytest.param("mock_runs.py", ["--quick"], ["fresh process", "warm loop"], id="mock_runs"),
        pytest.param(
            "streaming.py", ["--rounds", "2", "--events", "50"], ["typed recorded", "recording, dicts"], id="streaming"
        ),
        pytest.param("verify.py", ["--quick"], ["ch09 replay", "ch09 mock run"], id="verify"),
        pytest.param(
            "foreign_code.py",
            ["--rounds", "1"],
            ["in process (mock)", "live on loopback", "overhead per exchange", "agents_sdk"],
            marks=slow,
            id="foreign_code",
        ),
        pytest.param("live_pool.py", ["--quick"], ["pool / sequential", "the bound"], marks=slow, id="live_pool"),
        pytest.param("scale.py", ["--quick"], ["warm / off", "off / bare", "zensical --clean"], marks=slow, id="scale"),
        pytest.param("build.py", ["--quick"], ["cold", "after a template edit", "save prose"], marks=slow, id="build"),
        pytest.param(
            "page_weight.py",
            ["--browser", "--quick"],
            ["bytes raw", "DOMContentLoaded", "elements styled", "outside requests blocked", "growth"],
            marks=[slow, pytest.mark.browser],
            id="page_weight",
        ),
    ],
)
def test_benchmark_runs_in_quick_mode(script: str, args: list[str], rows: list[str]) -> None:
    output = run(script, *args)
    missing = [row for row in rows if row not in output]
    assert not missing, f"{script} printed no {missing} row:\n{output}"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_callgrind_counts_instructions(tmp_path: Path) -> None:
    """The instruction counts the fine ratios are checked with (``scale.py --callgrind``) come out as a number."""
    code = (
        f"import books; print(books.callgrind(__import__('pathlib').Path({str(tmp_path)!r}), 'platform').instructions)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=BENCHMARKS, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) > 1_000_000, "a Python start-up runs millions of instructions"


def test_the_edits_of_this_book_find_their_text() -> None:
    """build.py edits this book's copy (quick mode builds a synthetic one): each edit's text is still there."""
    code = (
        "import books, pathlib, json; root = pathlib.Path(books.ROOT); "
        "print(json.dumps([[e.kind, e.path, e.old in (root / e.path).read_text(), e.probe(7), e.new(7)] "
        "for e in books.edits(root, synthetic=False)]))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=BENCHMARKS, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert [kind for kind, *_ in found] == ["prose", "comment", "chapter", "library", "template"]
    missing = [f"{kind}: {path}" for kind, path, there, *_ in found if not there]
    assert not missing, f"edits whose text is gone (update benchmarks/books.py): {missing}"
    # The chapter edit's probe is what the trace shows, never what the source (and its listing) holds.
    [(_, _, _, probe, new)] = [row for row in found if row[0] == "chapter"]
    assert probe not in new
