"""The commands know the book they stand in: its mkdocs.yml read through MkDocs' own loader (INHERIT, !ENV)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from primer.book._configuration import read_config
from primer.errors import ConfigError
from tests.books import make_book

pytestmark = pytest.mark.slow


def _inherited(book) -> None:
    # The chapters package named through !ENV, in a file the book's mkdocs.yml inherits.
    (book.root / "base.yml").write_text(
        "site_name: A small book\ntheme:\n  name: mkdocs\nplugins:\n  - trace-book:\n"
        "      chapters: !ENV [BOOK_CHAPTERS, no_such_package]\n      traces_dir: frozen\n"
        "      rules: false\n"  # the test book's chapters and page keep none of the book's rules
    )
    (book.root / "mkdocs.yml").write_text("INHERIT: base.yml\nexclude_docs: |\n  frozen/*.live.json\n")


def _run(book, *command: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in book.env(**env).items() if k != "PRIMER_CHAPTERS" or "PRIMER_CHAPTERS" in env}
    return subprocess.run(
        [sys.executable, *command],
        cwd=book.root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_cli_lists_the_chapters_of_the_book_it_stands_in(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book")
    _inherited(book)
    listed = _run(book, "-m", "primer", "list", BOOK_CHAPTERS=book.package)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == ["ch_alpha: asks_price, answers_at_once", "ch_beta: greets"]
    # PRIMER_CHAPTERS wins over what the book names.
    other = _run(book, "-m", "primer", "list", BOOK_CHAPTERS=book.package, PRIMER_CHAPTERS="primer.chapters")
    assert other.stdout.splitlines()[0].startswith("ch01_one_call: ")
    # The frozen traces' folder is the plugin's option; not made yet, nothing is recorded.
    verified = _run(book, "-m", "primer", "verify", BOOK_CHAPTERS=book.package)
    assert not (book.docs / "frozen").exists()
    assert (verified.returncode, verified.stderr) == (0, "")
    assert verified.stdout.splitlines() == ["verified 0 scenarios · 3 without a live trace (--all lists them)"]
    # A folder named that is not there is an error.
    named = _run(book, "-m", "primer", "verify", "--traces", "docs/frozen", BOOK_CHAPTERS=book.package)
    assert named.returncode == 2
    assert "There is no folder docs/frozen" in named.stderr
    # From a folder inside the book: the root is named, not the package's own chapters listed.
    inside = subprocess.run(
        [sys.executable, "-m", "primer", "list"],
        cwd=book.docs,
        env=book.env(BOOK_CHAPTERS=book.package),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert inside.returncode == 2
    assert f"inside the book at {book.root}" in inside.stderr
    assert inside.stdout == ""


def test_the_build_command_reads_env_and_inherit(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book")
    _inherited(book)
    done = _run(book, "-m", "primer.book", "build", "--strict", BOOK_CHAPTERS=book.package)
    assert done.returncode == 0, done.stderr
    assert "traces: ran 3, reused 0" in done.stderr
    assert (book.docs / "traces" / "ch_alpha.json").is_file()
    config, plugin = read_config(book.root / "mkdocs.yml")
    assert plugin is not None
    assert (plugin.config.chapters, plugin.config.traces_dir, config.docs_dir) == (
        "no_such_package",
        "frozen",
        str(book.docs),
    )


def test_a_configuration_mkdocs_rejects_is_an_error_naming_the_file_and_the_option(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", plugin="chapter: x")
    with pytest.raises(ConfigError) as caught:
        read_config(book.root / "mkdocs.yml")
    assert str(book.root / "mkdocs.yml") in str(caught.value)
    assert "trace-book has no option 'chapter'" in str(caught.value)
    done = _run(book, "-m", "primer.book", "build")
    assert done.returncode == 2
    assert "has no option 'chapter'" in done.stderr
