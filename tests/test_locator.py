"""One chapter locator and one Settings, honoured by every front end.

The chapters' package is named in one place each: ``PRIMER_CHAPTERS`` (a
setting) and the trace extension's ``chapters`` option; the environment wins.
The command line, the runner, the extension on its own and the book all
find a chapter of another package the same way, and say the same thing
about one that is not there.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import markdown
import pytest

from primer.book._markers import check
from primer.book.markdown import TraceExtension
from primer.errors import ConfigError, NotFound
from primer.locator import ChapterLocator, no_scenario, unknown
from primer.runner import run_chapter
from primer.settings import VARIABLES, Settings
from primer.variables import BOOK_VARIABLES
from tests.books import ALPHA, BETA, make_book

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def altchapters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A chapters package of its own name beside the book, on the import path."""
    package = f"altchapters_{os.getpid()}_{tmp_path.name}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text('"""Another book\'s chapters."""\n')
    (tmp_path / package / "ch_x.py").write_text(ALPHA)
    (tmp_path / package / "ch_y.py").write_text(BETA)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in os.environ if n.startswith("PRIMER_")]:
        monkeypatch.delenv(name)
    return package


def _cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    clean.update(PYTHONPATH=os.pathsep.join([str(root), str(REPO)]), **env)
    return subprocess.run(
        [sys.executable, "-m", "primer", *args], env=clean, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_locator_finds_a_packages_chapters_and_scenarios(altchapters: str) -> None:
    chapters = ChapterLocator(altchapters)
    assert chapters.names() == ["ch_x", "ch_y"]
    assert [s.name for s in chapters.scenarios("ch_x")] == ["asks_price", "answers_at_once"]
    assert chapters.scenario("ch_y", "greets").name == "greets"
    with pytest.raises(NotFound, match=r"^There is no chapter 'ch_z'\. The chapters are: ch_x, ch_y\.$"):
        chapters.load("ch_z")
    with pytest.raises(NotFound, match=r"^Chapter ch_y has no scenario 'waves'\. Its scenarios are: greets\.$"):
        chapters.scenario("ch_y", "waves")
    with pytest.raises(ConfigError, match=r"no_such_package_here could not be imported.*PRIMER_CHAPTERS"):
        ChapterLocator("no_such_package_here").names()
    # A typo is answered with the name it most likely meant; a name near none (above) with the list alone.
    with pytest.raises(NotFound, match=r"ch_x, ch_y\. Did you mean ch_x\?$"):
        chapters.load("ch__x")
    with pytest.raises(NotFound, match=r"Its scenarios are: asks_price, answers_at_once\. Did you mean asks_price\?$"):
        chapters.scenario("ch_x", "ask_price")


def test_a_marker_with_a_typo_is_told_the_name_it_likely_meant() -> None:
    from primer.locator import unknown

    known = {"ch03_weather": ["oslo", "paris"], "ch04_shop": None}
    assert (
        unknown("ch03_weathr", None, known)
        == "names no chapter. The chapters are: ch03_weather, ch04_shop. Did you mean ch03_weather?"
    )
    assert (
        unknown("ch03_weather", "osloo", known)
        == "names no scenario of ch03_weather. Its scenarios are: oslo, paris. Did you mean oslo?"
    )
    assert (
        unknown("ch03_weather", "rome", known) == "names no scenario of ch03_weather. Its scenarios are: oslo, paris."
    )
    assert unknown("ch04_shop", "any", known) is None  # not importable: its scenarios are not known


@pytest.mark.slow
def test_primer_chapters_is_honoured_by_the_command_line(altchapters: str, tmp_path: Path) -> None:
    listed = _cli(tmp_path, "list", PRIMER_CHAPTERS=altchapters)
    assert listed.stdout.splitlines() == ["ch_x: asks_price, answers_at_once", "ch_y: greets"], listed.stderr
    ran = _cli(tmp_path, "run", "ch_x", "--scenario", "answers_at_once", PRIMER_CHAPTERS=altchapters)
    assert ran.returncode == 0, ran.stderr
    assert "scenario answers_at_once" in ran.stdout
    missing = _cli(tmp_path, "run", "ch_x", "--scenario", "waves", PRIMER_CHAPTERS=altchapters)
    assert missing.returncode == 2
    assert missing.stderr.strip() == (
        "error: Chapter ch_x has no scenario 'waves'. Its scenarios are: asks_price, answers_at_once."
    )
    # Without it, the book's own chapters: ch_x is not one of them.
    assert "There is no chapter 'ch_x'" in _cli(tmp_path, "run", "ch_x").stderr


def test_primer_chapters_and_the_option_are_honoured_by_the_extension_alone(
    altchapters: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_option = markdown.Markdown(extensions=[TraceExtension(chapters=altchapters)]).convert("::: trace ch_y")
    assert "scenario greets" in by_option
    monkeypatch.setenv("PRIMER_CHAPTERS", altchapters)
    by_name = markdown.markdown("::: trace ch_x answers_at_once", extensions=["primer.book.markdown"])
    assert "scenario answers_at_once" in by_name
    # The environment wins over the option.
    overridden = markdown.Markdown(extensions=[TraceExtension(chapters="primer.chapters")]).convert("::: trace ch_y")
    assert "scenario greets" in overridden


def test_the_environment_wins_over_the_books_configuration() -> None:
    assert Settings().chapters_package() == "primer.chapters"
    assert Settings().chapters_package("mybook.chapters") == "mybook.chapters"
    assert Settings.from_env({"PRIMER_CHAPTERS": "alt.ch"}).chapters_package("mybook.chapters") == "alt.ch"
    with pytest.raises(ConfigError, match="chapters option must name a Python package"):
        Settings().chapters_package("my book")
    with pytest.raises(ConfigError, match=r"^PRIMER_CHAPTERS must name a Python package"):
        Settings.from_env({"PRIMER_CHAPTERS": "my-book"})


def test_the_runner_uses_the_settings_package(altchapters: str) -> None:
    run = run_chapter("ch_y", settings=Settings(chapters=altchapters))
    assert [s.name for s in run.scenarios] == ["greets"]
    with pytest.raises(NotFound, match=r"^There is no chapter 'ch_y'"):
        run_chapter("ch_y")


def test_one_check_says_what_a_reference_names_that_does_not_exist() -> None:
    known = {"ch_a": ["one", "two"], "ch_b": None}
    assert unknown("ch_a", "one", known) is None
    assert unknown("ch_b", "anything", known) is None, "a chapter that could not be imported: its own warning says so"
    assert unknown("ch_c", None, known) == "names no chapter. The chapters are: ch_a, ch_b."
    assert unknown("ch_a", "three", known) == "names no scenario of ch_a. Its scenarios are: one, two."
    assert check("docs/p.md", "::: trace ch_a three\n", known) == [
        "docs/p.md line 1: the marker `::: trace ch_a three` names no scenario of ch_a. Its scenarios are: one, two."
    ]
    assert str(no_scenario("ch_a", "three", ["one", "two"])) == (
        "Chapter ch_a has no scenario 'three'. Its scenarios are: one, two."
    )


def test_an_unknown_primer_variable_is_named_with_the_closest_known_one() -> None:
    said: list[str] = []
    typos = {"PRIMER_API_KY": "sk-never-shown-0123456789", "PRIMER_TRACE": "off"}
    settings = Settings.from_env(typos, warn=said.append)
    assert settings.api_key is None
    assert said == [
        "PRIMER_API_KY is set, but no setting reads it, so it changes nothing. Did you mean PRIMER_API_KEY?",
        "PRIMER_TRACE is set, but no setting reads it, so it changes nothing. Did you mean PRIMER_TRACES?",
    ]
    [far] = Settings.unknown_variables({"PRIMER_ZZZ": "1"})
    known = sorted([*VARIABLES.values(), *BOOK_VARIABLES.values()])
    assert far.endswith(f"The variables are: {', '.join(known)}.")


@pytest.mark.slow
def test_the_command_line_and_the_book_warn_about_an_unknown_variable(tmp_path: Path) -> None:
    cli = _cli(tmp_path, "list", PRIMER_LIVES="off")
    assert cli.returncode == 0
    assert "warning: PRIMER_LIVES is set, but no setting reads it" in cli.stderr
    assert "Did you mean PRIMER_LIVE?" in cli.stderr
    book = make_book(tmp_path / "book")
    done = book.build("--strict", PRIMER_API_KY="sk-never-shown-0123456789")
    assert done.returncode == 1, "a typo that leaves a setting at its default fails a strict build"
    assert "WARNING -  traces: PRIMER_API_KY is set, but no setting reads it" in done.log
    assert "sk-never-shown" not in done.log


def test_settings_give_the_one_redactor() -> None:
    settings = Settings(api_key="sk-redact-me-0123456789", service_key="svc-redact-me-0123")
    text = settings.redactor().text("key sk-redact-me-0123456789 and svc-redact-me-0123")
    assert "redact-me" not in text


def test_the_readme_lists_every_variable() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(PRIMER_[A-Z_]+)` \|", readme, flags=re.M))
    assert listed == {*VARIABLES.values(), *BOOK_VARIABLES.values()}


def test_no_primer_variable_is_read_outside_settings() -> None:
    # Settings is the one reader: grep the package and the hook for another.
    reading = re.compile(r"""(environ\s*(\.get\(|\[)|getenv\()\s*["']PRIMER_""")
    found = [
        f"{path.relative_to(REPO)}:{number}"
        for path in [*sorted((REPO / "primer").rglob("*.py")), REPO / "hooks" / "traces.py"]
        if path.name not in ("settings.py", "variables.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if reading.search(line)
    ]
    assert found == []


def test_a_warning_from_settings_goes_to_its_logger_by_default(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="primer.settings"):
        Settings.from_env({"PRIMER_MODELL": "x"})
    assert "Did you mean PRIMER_MODEL?" in caplog.text
