"""A book of one's own, from the wheel alone: started by ``new``, checked by its build, published by its workflow.

Everything runs in a temporary folder outside the checkout, with the built
wheel unpacked first on ``PYTHONPATH`` (``installed_wheel``): what an author
who installed the wheel gets. ``python -m primer.book new`` writes the book;
``mkdocs build --strict`` passes on it as written and its chapter page shows
both scenarios' traces; each of the book's rules it is then made to break
fails the strict build with its own message; the workflow it carries passes
the checks this project's own workflows pass; ``mkdocs serve`` shows a save.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.books import edit
from tests.test_serve import serving
from tests.test_workflows import CURRENT_MAJORS, actionlint, load, steps

pytestmark = pytest.mark.slow

PACKAGE = "greetings"
CHAPTER = "ch01_first_steps"


@dataclass
class NewBook:
    """A book ``new`` wrote, and how to run commands on it with the wheel alone."""

    root: Path
    installed: Path
    package: str = PACKAGE

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
        env.update(PYTHONPATH=str(self.installed), NO_MKDOCS_2_WARNING="1")
        return env

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *command],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def build(self) -> subprocess.CompletedProcess[str]:
        return self.run("-m", "mkdocs", "build", "--strict")

    def warnings(self, done: subprocess.CompletedProcess[str]) -> list[str]:
        return [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("WARNING")]

    def page(self, chapter: str = CHAPTER) -> str:
        return (self.root / "site" / chapter / "index.html").read_text(encoding="utf-8")

    def chapter(self, name: str = CHAPTER) -> Path:
        return self.root / self.package / f"{name}.py"


def new(folder: Path, installed: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env["PYTHONPATH"] = str(installed)
    return subprocess.run(
        [sys.executable, "-m", "primer.book", "new", str(folder), *args],
        cwd=folder.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, installed_wheel: Path) -> Path:
    """The book ``new`` wrote, once for the module (a fresh Python each): tests edit copies."""
    folder = tmp_path_factory.mktemp("new") / PACKAGE
    done = new(folder, installed_wheel)
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture
def book(tmp_path: Path, written: Path, installed_wheel: Path) -> NewBook:
    shutil.copytree(written, tmp_path / PACKAGE)
    return NewBook(tmp_path / PACKAGE, installed_wheel)


def test_the_new_book_builds_strict_at_once_and_shows_both_scenarios(book: NewBook) -> None:
    where = book.run("-c", "import primer; print(primer.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(book.installed), "the wheel's primer, not the checkout's"
    written = sorted(p.relative_to(book.root).as_posix() for p in book.root.rglob("*") if p.is_file())
    assert written == [
        ".github/workflows/publish.yml",
        ".gitignore",
        "docs/ch01_first_steps.md",
        "docs/index.md",
        f"{PACKAGE}/__init__.py",
        f"{PACKAGE}/ch01_first_steps.py",
        "mkdocs.yml",
        "requirements.txt",
        "tests/test_ch01_first_steps.py",
    ]
    config = (book.root / "mkdocs.yml").read_text()
    assert "theme:\n  name: material" in config
    assert "plugins:\n  - search\n  # " in config
    assert f"  - trace-book:\n      chapters: {PACKAGE}\n" in config

    # As an author's shell has it, with Material's switch unset: the new book's mkdocs.yml silences
    # the theme's end-of-life notice, and the log begins with the machinery's line.
    env = {k: v for k, v in book.env().items() if k != "NO_MKDOCS_2_WARNING"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=book.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert book.warnings(done) == []
    assert "NO_MKDOCS_2_WARNING" not in done.stderr, done.stderr
    assert done.stderr.lstrip().startswith("INFO    -  traces: "), done.stderr
    assert "traces: ran 2, reused 0" in done.stderr
    # The page, and its chapter's payload page with each run's turns and calls.
    page = book.page() + (book.root / "site" / "traces" / f"{CHAPTER}.payloads.html").read_text(encoding="utf-8")
    # On the library: primer's Agent and a tool.
    assert "scenario calls_a_tool" in page
    assert "asked for: spell" in page
    assert "returned: T-R-A-C-E" in page
    # On the openai SDK by hand, with its own mock service: the trace rebuilt from the wire.
    assert "scenario weather_by_hand" in page
    assert "asked for: weather_in" in page
    assert "tool weather_in" in page
    assert "returned: sunny" in page
    assert "It is sunny in Paris." in page
    assert "raised" not in page, "the scripts call the tools by their declared names"
    assert (book.root / "site" / "traces" / f"{CHAPTER}.json").is_file()
    # The page includes its chapter's module.
    assert f"{PACKAGE}/{CHAPTER}.py</span>" in page

    tests = book.run("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "2 passed" in tests.stdout


def test_new_refuses_a_folder_that_is_not_empty_and_writes_nothing(tmp_path: Path, installed_wheel: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.md").write_text("my notes\n")
    done = new(folder, installed_wheel)
    assert done.returncode == 2
    assert f"{folder} is not empty" in done.stderr
    assert "Name another folder." in done.stderr
    assert [p.name for p in folder.iterdir()] == ["notes.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"], "no staging folder left behind"
    # A package name that is the library's, or importable already, is refused too.
    taken = new(tmp_path / "other", installed_wheel, "--package", "json")
    assert taken.returncode == 2
    assert "A package named json is importable already" in taken.stderr
    assert not (tmp_path / "other").exists()


def _helper_module(book: NewBook) -> str:
    (book.root / PACKAGE / "helpers.py").write_text('"""Shared helpers."""\n')
    return f"{PACKAGE}.helpers: a chapter module is named chNN_name"


def _gap(book: NewBook) -> str:
    book.chapter().rename(book.chapter("ch02_first_steps"))
    (book.root / "docs" / f"{CHAPTER}.md").rename(book.root / "docs" / "ch02_first_steps.md")
    for name in ("docs/ch02_first_steps.md", "docs/index.md", "mkdocs.yml", f"tests/test_{CHAPTER}.py"):
        path = book.root / name
        path.write_text(path.read_text().replace(CHAPTER, "ch02_first_steps"))
    return f"{PACKAGE}.ch02_first_steps: the chapters are numbered ch01, ch02, ... with no gap"


def _unplaced(book: NewBook) -> str:
    edit(book.root / "docs" / f"{CHAPTER}.md", f"::: trace {CHAPTER} calls_a_tool\n", "")
    return f"{PACKAGE}.{CHAPTER}: scenario calls_a_tool is on no page"


def _not_its_own_page(book: NewBook) -> str:
    (book.root / PACKAGE / "ch02_more.py").write_text(book.chapter().read_text())
    page = "# 2. More\n\n::: trace ch02_more\n\n::: trace ch01_first_steps calls_a_tool\n"
    (book.root / "docs" / "ch02_more.md").write_text(page)
    return "docs/ch02_more.md line 5: the marker `::: trace ch01_first_steps calls_a_tool` places"


def _undeclared_tool(book: NewBook) -> str:
    # The class's name, not the tool's: a tool's name is its model's title.
    edit(book.chapter(), 'ask(call("spell", word="trace"))', 'ask(call("Spell", word="trace"))')
    return "calls_a_tool: the mock script calls 'Spell' in turn 1, which is not a declared tool"


@pytest.mark.parametrize("breaks", [_helper_module, _gap, _unplaced, _not_its_own_page, _undeclared_tool])
def test_each_broken_rule_fails_strict_with_its_message(book: NewBook, breaks: object) -> None:
    assert callable(breaks)
    expected = breaks(book)
    done = book.build()
    assert done.returncode != 0
    # The rule's warning first (a wrong tool name also leaves the page's prose quoting a result
    # the trace no longer shows: the prose check says so too).
    warnings = book.warnings(done)
    assert expected in warnings[0], done.stderr
    assert len(warnings) == (2 if breaks is _undeclared_tool else 1), warnings


PLUGIN = (
    "  # The trace machinery: runs every chapter's scenarios and puts their traces in the pages.\n  - trace-book:\n"
)


def test_markers_without_the_plugin_say_it_is_not_enabled_and_show_the_entry_to_add(book: NewBook) -> None:
    config = book.root / "mkdocs.yml"
    text = config.read_text()
    assert f"{PLUGIN}      chapters: {PACKAGE}\n" in text
    # The extension named (as for Zensical), the plugin left out.
    text = text.replace(f"{PLUGIN}      chapters: {PACKAGE}\n", "")
    config.write_text(
        text.replace(
            "markdown_extensions:\n", f"markdown_extensions:\n  - primer.book.markdown:\n      chapters: {PACKAGE}\n"
        )
    )
    done = book.build()
    assert done.returncode != 0
    entry = f"`- trace-book: {{chapters: {PACKAGE}}}`"
    warnings = book.warnings(done)
    assert len(warnings) == 2, warnings  # one per marker
    for warning in warnings:
        assert "The trace machinery is not enabled for this book" in warning
        assert entry in warning
    assert "The trace machinery is not enabled for this book" in book.page()
    # Named nowhere at all, the markers stay text: the command says why.
    config.write_text(text)
    command = book.run("-m", "primer.book", "build", "--strict")
    assert command.returncode == 2
    assert "does not enable the trace machinery" in command.stderr
    assert "`- trace-book: {chapters: mybook}`" in command.stderr  # it names no package either


def test_a_book_that_names_no_chapters_package_is_told_so_and_builds_no_other_books(book: NewBook) -> None:
    config = book.root / "mkdocs.yml"
    config.write_text(config.read_text().replace(f"{PLUGIN}      chapters: {PACKAGE}\n", PLUGIN.rstrip(":\n") + "\n"))
    done = book.build()
    assert done.returncode == 1
    assert "ERROR   -  The book names no chapters package, so it has no chapters to show." in done.stderr
    assert "`- trace-book: {chapters: mybook}`" in done.stderr
    assert "ch01_one_call" not in done.stdout + done.stderr, "this project's chapters are no default"
    assert not (book.root / "site" / "index.html").exists()


def test_the_books_workflow_passes_the_checks_this_projects_own_pass(book: NewBook) -> None:
    path = book.root / ".github" / "workflows" / "publish.yml"
    schema = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr
    linted = actionlint(book.root)
    assert linted.returncode == 0, linted.stdout + linted.stderr

    workflow = load(path)
    for step in steps(workflow):
        if "uses" in step:
            action, _, ref = str(step["uses"]).partition("@")
            assert ref == CURRENT_MAJORS[action], step["uses"]
    # The key reaches the two steps that need it, through env, and no other.
    with_key = [s["name"] for s in steps(workflow) if "secrets.PRIMER_API_KEY" in str(s.get("env", {}))]
    assert with_key == ["Is there a provider key?", "Refresh live traces"]
    assert all("secrets." not in str(s.get("run", "")) for s in steps(workflow))
    # A book has no pyproject.toml: its tools come from requirements.txt.
    installs = [str(s["run"]) for s in steps(workflow) if "pip install" in str(s.get("run", ""))]
    assert installs
    assert all(run == "python -m pip install -r requirements.txt" for run in installs)
    jobs = workflow["jobs"]
    build = [str(s.get("run", s.get("uses", ""))) for s in jobs["build"]["steps"]]
    assert any(run.startswith("mkdocs build --strict") for run in build)
    assert jobs["deploy"]["steps"][0]["uses"].startswith("actions/deploy-pages@")
    # Only the job that pushes keeps the checkout's credentials.
    writers = {name for name, job in jobs.items() if job.get("permissions", {}).get("contents") == "write"}
    assert writers == {"commit"}
    for name, job in jobs.items():
        for step in job["steps"]:
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                kept = step.get("with", {}).get("persist-credentials", True)
                assert kept is (name in writers), f"{name}: persist-credentials {kept}"


def test_serve_on_the_new_book_shows_a_saved_edit(book: NewBook) -> None:
    with serving(book) as server:  # type: ignore[arg-type]  # a book with root and env(), as SmallBook has
        assert "scenario calls_a_tool" in server.get(f"{CHAPTER}/")
        start = len(server.lines)
        edit(book.root / "docs" / f"{CHAPTER}.md", "A loop of its own", "A hand-written loop of its own")
        server.wait_for("Reloading browsers", after=start)
        assert "A hand-written loop of its own" in server.get(f"{CHAPTER}/")
