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
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"

slow = pytest.mark.slow


#: The test whose runs are started together (``started``).
QUICK_TEST = "test_benchmark_runs_in_quick_mode"


class Quick:
    """One benchmark's quick run, started in the background; its output collected when the test asks."""

    def __init__(self, script: str, args: list[str], folder: Path) -> None:
        self.name = f"{script} {' '.join(args)}"
        self.log = folder / f"{script}.log"
        self.out = folder / f"{script}.out"
        with self.out.open("w") as out, self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(BENCHMARKS / script), *args],
                cwd=REPO,
                stdout=out,
                stderr=log,
                text=True,
                start_new_session=True,  # its own process group: stop() ends its servers and builds too
            )

    def result(self, timeout: float = 900) -> str:
        """Its standard output once it ended, failing the test with its whole output if it failed."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
        output = self.out.read_text() + self.log.read_text()
        print(output)  # the figures, in the test log (pytest -s or on failure)
        assert self.process.returncode == 0, f"{self.name} failed ({self.process.returncode}):\n{output[-6000:]}"
        return self.out.read_text()

    def stop(self) -> None:
        """End the run and what it started, if it is still going (a test failed or timed out first)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


class Runs:
    """The quick runs started, by script, their logs in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: dict[str, Quick] = {}

    def start(self, script: str, args: list[str]) -> Quick:
        """The run of ``script``, started now unless it already was."""
        if script not in self.started:
            self.started[script] = Quick(script, args, self.folder)
        return self.started[script]


def arguments(script: str, args: list[str], request: pytest.FixtureRequest) -> list[str]:
    """A run's arguments; page_weight.py weighs the suite's built book (tests/conftest.py) instead of building it."""
    if script != "page_weight.py":
        return args
    site, _log = request.getfixturevalue("built_book")
    return [*args, "--site", str(site)]


@pytest.fixture(scope="module")
def started(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Every selected quick run, started at once, so that they share the machine's cores.

    Each is a chain of builds and servers, mostly one process at a time:
    run one after another they took 130 s on two cores, run together they
    take about half. Their figures mean nothing either way. Under pytest-xdist
    (a worker collects every test but runs few) each starts when its test runs.
    """
    runs = Runs(tmp_path_factory.mktemp("quick"))
    if not hasattr(request.config, "workerinput"):
        for item in request.session.items:
            if getattr(item, "originalname", "") == QUICK_TEST:
                params = item.callspec.params  # type: ignore[attr-defined]
                runs.start(params["script"], arguments(params["script"], params["args"], request))
    try:
        yield runs
    finally:
        for run in runs.started.values():
            run.stop()


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_callgrind_counts_instructions(tmp_path: Path, started: Runs) -> None:
    """The instruction counts the fine ratios are checked with (``scale.py --callgrind``) come out as a number.

    First, and with the quick runs started (``started``): its count goes on while they do.
    """
    code = (
        f"import books; print(books.callgrind(__import__('pathlib').Path({str(tmp_path)!r}), 'platform').instructions)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=BENCHMARKS, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) > 1_000_000, "a Python start-up runs millions of instructions"


@pytest.mark.parametrize(
    ("script", "args", "rows"),
    [
        # Fresh Pythons that run every chapter, chapter 18's frameworks too: 14 s of CPU, slow.
        pytest.param("mock_runs.py", ["--quick"], ["fresh process", "warm loop"], marks=slow, id="mock_runs"),
        pytest.param(
            "streaming.py", ["--rounds", "2", "--events", "50"], ["typed recorded", "recording, dicts"], id="streaming"
        ),
        pytest.param("verify.py", ["--quick"], ["ch09 replay", "ch09 mock run"], id="verify"),
        pytest.param("size.py", [], ["machinery lines", "largest module", "modules over 400"], id="size"),
        pytest.param(
            "foreign_code.py",
            ["--rounds", "1"],
            ["in process (mock)", "live on loopback", "overhead per exchange", "agents_sdk"],
            marks=slow,
            id="foreign_code",
        ),
        pytest.param("live_pool.py", ["--quick"], ["pool / sequential", "the bound"], marks=slow, id="live_pool"),
        pytest.param("scale.py", ["--quick"], ["warm / off", "off / bare", "zensical --clean"], marks=slow, id="scale"),
        pytest.param(
            "build.py",
            ["--quick"],
            [
                "cold",
                "with a diverged live trace",
                "warned 1/1",
                "after a template edit",
                "the machinery's timing line, cold builds",
                "as the README installs the book",
                "save prose",
                "seen by MkDocs' poll",
            ],
            marks=slow,
            id="build",
        ),
        pytest.param(
            "dirty_serve.py",
            ["--quick"],
            ["trace book", "ours / markdown-exec", "seen by MkDocs' poll", "from the poll on"],
            marks=slow,
            id="dirty_serve",
        ),
        pytest.param(
            "new_book.py",
            ["--no-install", "--repeat", "1"],  # the wheel's install is tests/test_new_book.py's
            ["lines an author writes", "new` wrote", "the writing loop", "mkdocs serve --dirty", "zensical serve"],
            marks=slow,
            id="new_book",
        ),
        pytest.param(
            "page_weight.py",
            ["--browser", "--quick"],
            [
                "bytes raw",
                "DOMContentLoaded",
                "elements styled",
                "outside requests blocked",
                "of loads alone",
                "on / off, blocks",
                "growth",
            ],
            marks=[slow, pytest.mark.browser],
            id="page_weight",
        ),
    ],
)
def test_benchmark_runs_in_quick_mode(
    script: str, args: list[str], rows: list[str], started: Runs, request: pytest.FixtureRequest
) -> None:
    output = started.start(script, arguments(script, args, request)).result()
    missing = [row for row in rows if row not in output]
    assert not missing, f"{script} printed no {missing} row:\n{output}"


def printed(code: str) -> str:
    """What ``python -c code`` prints, run among the benchmarks (their modules importable)."""
    done = subprocess.run([sys.executable, "-c", code], cwd=BENCHMARKS, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_edits_of_this_book_find_their_text() -> None:
    """build.py edits this book's copy (quick mode builds a synthetic one): each edit's text is still there."""
    code = (
        "import books, pathlib, json; root = pathlib.Path(books.ROOT); "
        "print(json.dumps([[e.kind, e.path, e.old in (root / e.path).read_text(), e.probe(7), e.new(7)] "
        "for e in books.edits(root, synthetic=False)]))"
    )
    found = json.loads(printed(code))
    assert [kind for kind, *_ in found] == ["prose", "comment", "chapter", "library", "template"]
    missing = [f"{kind}: {path}" for kind, path, there, *_ in found if not there]
    assert not missing, f"edits whose text is gone (update benchmarks/books.py): {missing}"
    # The chapter edit's probe is what the trace shows, never what the source (and its listing) holds.
    [(_, _, _, probe, new)] = [row for row in found if row[0] == "chapter"]
    assert probe not in new


def test_build_compares_the_cold_share_with_the_baseline_round_by_round() -> None:
    """With ``--baseline`` (the issue's code), the cold share's target is judged as a ratio: 0.8 s of 2.23 s."""
    code = (
        "from types import SimpleNamespace as B; import build\n"
        "ours = B(label='this', cold_share=[700, 720, 760, 800, 690, 730], cold_share_readme=[600], runs={})\n"
        "theirs = B(label='baseline', cold_share=[2100, 2000, 2200, 2300, 2050, 2150], cold_share_readme=[], runs={})\n"
        "build.compare([ours, theirs], 2)\n"
        "build.compare([ours], 1)\n"
        # With cold and off builds timed, each whole build's cold - off too (3.0 - 2.0 over 5.0 - 2.0, ...).
        "walls = lambda *w: [B(wall=x) for x in w]\n"
        "ours.runs = {'cold': walls(3.0, 3.2), 'off': walls(2.0, 2.0)}\n"
        "theirs.runs = {'cold': walls(5.0, 6.0), 'off': walls(2.0, 2.2)}\n"
        "build.compare([ours, theirs], 2)\n"
    )
    lines = printed(code).strip().splitlines()
    assert lines[0] == "this over baseline, the machinery's share of cold builds in the same rounds:"
    # The pairs' ratios (700/2100, 720/2000, ...) sorted: 0.333 0.337 0.339 0.345 0.348 0.360; the median 0.342.
    assert lines[1].startswith("  with the otel extra:")
    assert "0.342 (95 %" in lines[1]
    assert "target <= 0.358744" in lines[1]
    # No pairs as the README installs it; one checkout: nothing to compare; then the whole builds' row too.
    assert len(lines) == 6
    assert lines[2:4] == ["", lines[0]]
    # 1.0/3.0 and 1.2/3.8: the median of two pairs is their mean, 0.325.
    assert lines[5].startswith("  cold - off, the whole build:")
    assert "0.325 (min-max 0.316-0.333" in lines[5]


def test_page_weight_judges_domcontentloaded_by_its_blocks_not_its_pooled_pairs() -> None:
    """Each block of loads alone runs in a browser of its own; the verdict is the median of the blocks' ratios."""
    code = (
        "from collections import Counter; import page_weight as pw\n"
        "load = lambda ms: pw.Load(1, ms, ms, 0, 1)\n"
        "work = {k: [pw.Work(1, 1)] for k in ('on', 'off')}\n"
        # Six blocks, their ratios 1.01 to 1.06: pooled, the pairs' median is 1.035 whatever the blocks say.
        "blocks = [{'on': [100 + r] * 3, 'off': [100.0] * 3} for r in (1, 2, 3, 4, 5, 6)]\n"
        "pw.report_browser({'x': pw.Compared([load(1)], [load(1)], work, blocks)}, Counter(), 1)\n"
    )
    lines = [line.strip() for line in printed(code).splitlines()]
    assert "each block's: 1.010, 1.020, 1.030, 1.040, 1.050, 1.060" in lines
    [verdict] = [line for line in lines if line.startswith("on / off, blocks:")]
    # Six blocks give a 95 % interval of their lowest to their highest: across the target.
    assert verdict.startswith("on / off, blocks: 1.035 (95 % 1.010-1.060")
    assert "n=6)" in verdict
    assert "not resolved" in verdict
    assert "blocks would tell it apart" in verdict


def test_same_chapters_keeps_only_the_baselines_chapters(tmp_path: Path) -> None:
    """``--same-chapters``: the copy loses the chapters the baseline has no page for, and every line naming them."""
    book = tmp_path / "book"
    (book / "docs" / "traces").mkdir(parents=True)
    (book / "primer" / "chapters").mkdir(parents=True)
    for name in ("ch01_one", "ch02_two"):
        (book / "docs" / f"{name}.md").write_text(f"# {name}\n")
        (book / "primer" / "chapters" / f"{name}.py").write_text("SCENARIOS = []\n")
        (book / "docs" / "traces" / f"{name}.live.json").write_text("{}")
    (book / "mkdocs.yml").write_text("nav:\n  - index.md\n  - ch01_one.md\n  - ch02_two.md\n")
    (book / "docs" / "index.md").write_text("| [1](ch01_one.md) |\n| [2](ch02_two.md) |\nend\n")
    baseline = tmp_path / "baseline"
    (baseline / "docs").mkdir(parents=True)
    (baseline / "docs" / "ch01_one.md").write_text("# one\n")
    code = (
        "import books, pathlib, sys; book, baseline = map(pathlib.Path, sys.argv[1:]); "
        "books.keep_chapters(book, books.chapters_of(baseline)); print(sorted(books.chapters_of(book)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(book), str(baseline)],
        cwd=BENCHMARKS,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['ch01_one']"
    left = sorted(str(p.relative_to(book)) for p in book.rglob("*") if p.is_file())
    assert left == [
        "docs/ch01_one.md",
        "docs/index.md",
        "docs/traces/ch01_one.live.json",
        "mkdocs.yml",
        "primer/chapters/ch01_one.py",
    ]
    assert (book / "mkdocs.yml").read_text() == "nav:\n  - index.md\n  - ch01_one.md\n"
    assert (book / "docs" / "index.md").read_text() == "| [1](ch01_one.md) |\nend\n"


def test_same_chapters_without_a_baseline_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "build.py", "--same-chapters"], cwd=BENCHMARKS, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert "--same-chapters keeps the chapters of the baseline's book: give it with --baseline DIR" in done.stderr
