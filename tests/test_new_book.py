"""Another author's trace book, made from the installed package alone.

The package is built into a wheel (``pip wheel --no-deps``) and installed
by unpacking it into a folder of its own, which the builds put first on the
import path: the repository's ``primer`` (this checkout's editable install)
is never what they import. The book is written here from scratch, as
``docs/authors.md`` walks an author through it: its own ``mkdocs.yml``, its
own chapters package with two scenarios, a one-line hook file, one page.
Nothing is copied from this repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]

CHAPTER = '''"""Greetings: a model that answers at once, and one that looks a word up first."""

from pydantic import BaseModel, Field

from primer import Scenario, ToolContext, ask, call, say, tool


class Spell(BaseModel):
    """Spell a word out, letter by letter."""

    word: str = Field(description="the word to spell")


@tool(Spell)
def spell(args: Spell, ctx: ToolContext) -> str:
    """Spell the word."""
    return "-".join(args.word.upper())


says_hello = Scenario(
    name="says_hello",
    prompt="Say hello.",
    tools=[],
    mock=[say("Hello, reader.")],
)

spells_a_word = Scenario(
    name="spells_a_word",
    prompt="How do you spell 'trace'?",
    tools=[spell],
    mock=[ask(call("Spell", word="trace")), say("It is spelt T-R-A-C-E.")],
)
'''

CONFIG = """\
site_name: Greetings, traced
theme:
  name: mkdocs
exclude_docs: |
  traces/*.live.json
hooks:
  - hooks/traces.py
markdown_extensions:
  - primer.book.markdown:
      chapters: greetings
"""

PAGE = """\
# Greetings

A model that answers at once:

::: trace ch01_hello says_hello

and one that calls a tool first:

::: trace ch01_hello spells_a_word
"""


@pytest.fixture
def installed(installed_wheel: Path) -> Path:
    # The session's one wheel, unpacked (tests/conftest.py): a pure-Python wheel installs by being unpacked.
    return installed_wheel


def write_book(root: Path) -> Path:
    (root / "greetings").mkdir()
    (root / "greetings" / "__init__.py").write_text('"""My book\'s chapters."""\n')
    (root / "greetings" / "ch01_hello.py").write_text(CHAPTER)
    (root / "hooks").mkdir()
    (root / "hooks" / "traces.py").write_text("from primer.book.mkdocs_hook import *  # noqa: F403\n")
    (root / "docs").mkdir()
    (root / "docs" / "index.md").write_text(PAGE)
    (root / "mkdocs.yml").write_text(CONFIG)
    return root


def run(book: Path, installed: Path, *command: str, **extra: str) -> subprocess.CompletedProcess[str]:
    # Run from elsewhere, the book's folder not on the import path: the machinery finds
    # the chapters beside mkdocs.yml, as it does for `mkdocs serve` run as a command.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env.update(PYTHONPATH=str(installed), NO_MKDOCS_2_WARNING="1", **extra)
    return subprocess.run(
        [sys.executable, *command], cwd=installed, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_wheel_carries_the_hook_the_templates_and_the_assets(installed: Path) -> None:
    book = installed / "primer" / "book"
    for part in ("_plugin.py", "mkdocs_hook.py", "assets/traces.css", "assets/traces.js", "templates/chapter.html.j2"):
        assert (book / part).is_file(), part
    assert (installed / "primer" / "py.typed").is_file()


def test_a_new_book_shows_both_traces_from_the_installed_package(tmp_path: Path, installed: Path) -> None:
    book = write_book(tmp_path)
    where = run(book, installed, "-c", "import primer; print(primer.__file__)")
    assert Path(where.stdout.strip()).is_relative_to(installed), "the build imports the installed package"

    done = run(book, installed, "-m", "mkdocs", "build", "--strict", "--config-file", str(book / "mkdocs.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "traces: ran 2, reused 0" in done.stderr
    page = (book / "site" / "index.html").read_text(encoding="utf-8")
    assert "scenario says_hello" in page
    assert "scenario spells_a_word" in page
    # The script calls the tool by its name (the arguments model's class name), so it ran; the runs' turns and
    # calls are on the chapter's payload page.
    payloads = (book / "site" / "traces" / "ch01_hello.payloads.html").read_text(encoding="utf-8")
    assert "asked for: Spell" in payloads
    assert "returned: T-R-A-C-E" in payloads
    assert "no such tool" not in page + payloads
    assert "It is spelt T-R-A-C-E." in payloads
    # The assets come from the package: the author copied none.
    assert not (book / "docs" / "assets").exists()
    assert 'href="assets/trace-book/traces.css"' in page
    assert 'src="assets/trace-book/traces.js"' in page
    served = book / "site" / "assets" / "trace-book" / "traces.css"
    assert served.read_bytes() == (installed / "primer" / "book" / "assets" / "traces.css").read_bytes()
    assert (book / "site" / "traces" / "ch01_hello.json").is_file()
    assert list((book / ".cache" / "trace-book" / "entries" / "ch01_hello").glob("*/mock.json"))


PLUGIN_CONFIG = """\
site_name: Greetings, traced
theme:
  name: mkdocs
exclude_docs: |
  traces/*.live.json
plugins:
  - search
  - trace-book:
      chapters: greetings
"""


def test_a_new_book_with_only_the_plugin_entry_builds(tmp_path: Path, installed: Path) -> None:
    # No hook file, no extension named: the plugin, found by its entry point in the wheel, adds it.
    book = write_book(tmp_path)
    (book / "hooks" / "traces.py").unlink()
    (book / "mkdocs.yml").write_text(PLUGIN_CONFIG)
    done = run(book, installed, "-m", "mkdocs", "build", "--strict", "--config-file", str(book / "mkdocs.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "traces: ran 2, reused 0" in done.stderr
    page = (book / "site" / "index.html").read_text(encoding="utf-8")
    assert "scenario says_hello" in page
    assert "It is spelt T-R-A-C-E." in (book / "site" / "traces" / "ch01_hello.payloads.html").read_text("utf-8")
    assert 'href="assets/trace-book/traces.css"' in page
    assert (book / "site" / "traces" / "ch01_hello.json").is_file()
    # A mistyped option fails the configuration, naming it.
    (book / "mkdocs.yml").write_text(PLUGIN_CONFIG.replace("chapters: greetings", "chapter: greetings"))
    done = run(book, installed, "-m", "mkdocs", "build", "--config-file", str(book / "mkdocs.yml"))
    assert done.returncode == 1
    assert "Plugin 'trace-book' option 'chapter': trace-book has no option 'chapter'" in done.stderr


def test_the_run_step_command_works_for_the_new_book(tmp_path: Path, installed: Path) -> None:
    book = write_book(tmp_path)
    done = run(book, installed, "-m", "primer.book", "build", "--strict", "--config-file", str(book / "mkdocs.yml"))
    assert done.returncode == 0, done.stderr
    assert "traces: ran 2, reused 0" in done.stderr
    assert (book / "docs" / "traces" / "ch01_hello.json").is_file()
    # The command line finds the book's chapters where PRIMER_CHAPTERS says they are.
    listed = subprocess.run(
        [sys.executable, "-m", "primer", "list"],
        cwd=book,
        env={**os.environ, "PYTHONPATH": str(installed), "PRIMER_CHAPTERS": "greetings"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert listed.stdout.strip() == "ch01_hello: says_hello, spells_a_word", listed.stderr
