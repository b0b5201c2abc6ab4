"""The authors' guide: its worked example passes the suite as written, and it states every per-chapter rule.

The example's files are read out of ``docs/authors.md`` (one tab per file),
added to a temporary copy of the book exactly where the guide says, and the
chapter tests, the book tests (a real ``mkdocs build --strict`` included) and
the example's own test are run on the copy. The guide also has a table of
the rules the shared tests check for every chapter; a per-chapter test that
is not in it fails here, so a new rule cannot be added without telling
authors.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from primer.chapters import chapter_names

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "authors.md"
EXAMPLE = "ch23_price_checks"

# A tab of the guide: `=== "path"`, a blank line, then its content indented by four spaces.
_TAB = re.compile(r'^=== "(?P<path>[^"]+)"\n\n(?P<body>(?:(?: {4}.*)?\n)+)', re.M)

#: Every test of the shared suite that checks each chapter, and the words of the guide's row for it.
RULES = {
    "test_chapters_cli.py::test_the_book_has_ten_chapters_in_order_with_the_seeds_in_their_places": "with no gap",
    "test_chapters_cli.py::test_every_chapter_has_at_least_two_scenarios_each_explained": "At least two scenarios",
    "test_chapters_cli.py::test_the_command_line_runs_every_chapter_without_a_key": "prints nothing on stderr",
    "test_chapters_cli.py::test_every_scenario_ends_as_its_chapter_intends": "Every scenario ends as `ENDINGS` says",
    "test_chapters_cli.py::test_every_scenario_uses_its_whole_mock_script": "uses its whole mock script",
    "test_chapters_cli.py::test_mock_runs_are_the_same_every_time_apart_from_timings": "apart from timings",
    "test_book.py::test_the_navigation_lists_home_every_chapter_in_order_and_the_authors_page": "`nav` lists Home",
    "test_book.py::test_every_chapter_page_places_every_scenario_and_names_its_code": "places only its own chapter",
    "test_book.py::test_the_home_page_links_every_chapter": "The home page links the chapter",
    "test_book.py::test_no_page_writes_inline_code_that_starts_with_three_colons": "No inline code starting with",
    "test_book.py::test_the_strict_build_raises_no_warning": "`mkdocs build --strict` passes",
    "test_book.py::test_every_chapter_page_is_built_with_its_traces": "shows each scenario's line",
}


def _section(start: str, end: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    begin = text.index(start)
    return text[begin : text.index(end, begin)]


def example_files() -> dict[str, str]:
    """The worked example's tabs: path -> the code inside the tab's fence."""
    return _tabs(_section("### A worked example", "### What the tests check"))


def own_code_files() -> dict[str, str]:
    """The tabs of the guide's "Your own agent code" example."""
    return _tabs(_section("## Your own agent code", "## Run it in the terminal"))


def _tabs(text: str) -> dict[str, str]:
    files = {}
    for tab in _TAB.finditer(text):
        lines = textwrap.dedent(tab["body"]).strip("\n").split("\n")
        fence = re.match(r"^(`{3,})", lines[0])
        assert fence is not None, f"the tab {tab['path']} holds a fenced block"
        assert lines[-1] == fence[1], f"the tab {tab['path']} is one fenced block"
        files[tab["path"]] = "\n".join(lines[1:-1]) + "\n"
    return files


def _added(snippet: str) -> str:
    """The one line a snippet adds; its other lines are comments saying where."""
    (line,) = [line for line in snippet.splitlines() if line.strip() and not line.lstrip().startswith(("#", "<!--"))]
    return line


def _insert_after_last(text: str, pattern: str, line: str) -> str:
    matches = list(re.finditer(pattern, text, re.M))
    assert matches, f"nothing matches {pattern!r}"
    end = matches[-1].end()
    return text[:end] + "\n" + line + text[end:]


def test_the_example_has_every_file_a_chapter_needs() -> None:
    files = example_files()
    assert set(files) == {
        f"primer/chapters/{EXAMPLE}.py",
        f"docs/{EXAMPLE}.md",
        f"tests/test_{EXAMPLE}.py",
        "tests/test_chapters_cli.py",
        "mkdocs.yml",
        "docs/index.md",
    }
    # On the guide's page the include line is escaped, so it is shown, not included.
    assert f';--8<-- "primer/chapters/{EXAMPLE}.py"' in files[f"docs/{EXAMPLE}.md"]


def test_the_example_is_the_next_chapter() -> None:
    number = int(EXAMPLE[2:4])
    chapters = chapter_names()
    assert number == len(chapters) + 1, (
        f"docs/authors.md's worked example is chapter {number}, but the book has {len(chapters)} chapters: "
        f"renumber the example (and EXAMPLE here) to ch{len(chapters) + 1:02d}."
    )
    assert f"Adding chapter {number}" in GUIDE.read_text(encoding="utf-8")


def _tests() -> dict[str, str]:
    """Every test of the two shared modules: its id -> its source."""
    found = {}
    for name in ("test_chapters_cli.py", "test_book.py"):
        tree = ast.parse((ROOT / "tests" / name).read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                found[f"{name}::{node.name}"] = ast.unparse(node)
    return found


def test_the_guide_states_every_rule_the_shared_tests_check() -> None:
    tests = _tests()
    # A test that goes over the chapters (or their endings) checks a rule every chapter must keep.
    per_chapter = {name for name, text in tests.items() if "chapter_names()" in text or "ENDINGS[chapter]" in text}
    assert per_chapter - set(RULES) == set(), "per-chapter tests missing from RULES (and the guide's table)"
    assert set(RULES) - set(tests) == set(), "RULES names tests that do not exist"
    guide = " ".join(GUIDE.read_text(encoding="utf-8").split())
    table = guide[guide.index("### What the tests check") :]
    for test, words in RULES.items():
        assert words in table, f"docs/authors.md's table of rules does not state what {test} checks"


def _copy_of_the_book(target: Path) -> Path:
    ignore = shutil.ignore_patterns(
        ".git", ".venv", ".cache", "site", "node_modules", "__pycache__", "*.pyc", ".pytest_cache", "benchmarks"
    )
    shutil.copytree(ROOT, target, ignore=ignore)
    return target


@pytest.mark.slow
def test_the_worked_example_passes_the_suite_in_a_copy_of_the_book(tmp_path: Path) -> None:
    files = example_files()
    book = _copy_of_the_book(tmp_path / "book")
    for path in (f"primer/chapters/{EXAMPLE}.py", f"tests/test_{EXAMPLE}.py"):
        (book / path).write_text(files[path], encoding="utf-8")
    page = re.sub(r"^(\s*);--8<--", r"\1--8<--", files[f"docs/{EXAMPLE}.md"], flags=re.M)
    (book / "docs" / f"{EXAMPLE}.md").write_text(page, encoding="utf-8")

    cli = book / "tests" / "test_chapters_cli.py"
    text = cli.read_text(encoding="utf-8")
    endings = text.index("ENDINGS: dict")
    close = text.index("\n}\n", endings)
    cli.write_text(text[:close] + "\n" + _added(files["tests/test_chapters_cli.py"]) + text[close:], encoding="utf-8")

    config = book / "mkdocs.yml"
    nav = _added(files["mkdocs.yml"])
    config.write_text(_insert_after_last(config.read_text(encoding="utf-8"), r"^ +- ch\d\d_\w+\.md$", nav))
    home = book / "docs" / "index.md"
    row = _added(files["docs/index.md"])
    home.write_text(_insert_after_last(home.read_text(encoding="utf-8"), r"^\| \[\d+\. .*\(ch\d\d_\w+\.md\).*$", row))

    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env["NO_MKDOCS_2_WARNING"] = "1"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"tests/test_{EXAMPLE}.py",
            "tests/test_chapters_cli.py",
            "tests/test_book.py",
            "-q",
            "-x",
            "-p",
            "no:randomly",
        ],
        cwd=book,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{EXAMPLE}" in (book / "mkdocs.yml").read_text(encoding="utf-8")
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed is not None
    assert int(passed[1]) > 50


@pytest.mark.slow
def test_the_own_code_example_builds_strict_and_passes_its_test(tmp_path: Path) -> None:
    files = own_code_files()
    assert set(files) == {"weather/ch01_weather.py", "docs/index.md", "mkdocs.yml", "tests/test_weather.py"}
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    (tmp_path / "weather" / "__init__.py").write_text('"""The weather chapters."""\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env.update(NO_MKDOCS_2_WARNING="1", PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
        )

    tested = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_weather.py")
    assert tested.returncode == 0, tested.stdout[-3000:]
    built = run("-m", "mkdocs", "build", "--strict")
    assert built.returncode == 0, built.stderr[-3000:]
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "scenario umbrella" in page
    # The run's turns and calls, and their wire requests, are in the chapter's payload page, which the page links to.
    payloads = (tmp_path / "site" / "traces" / "ch01_weather.payloads.html").read_text(encoding="utf-8")
    assert "No umbrella: it is sunny in Paris." in payloads
    assert "https://weather.example/today?city=Paris" in payloads
    assert "https://provider.mock/v1/chat/completions" in payloads
