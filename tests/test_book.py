"""The book as a whole: every chapter has its page, its traces, and a clean strict build.

The fast tests read the Markdown and ``mkdocs.yml``; the slow one runs the real
``mkdocs build --strict`` in mock mode (no key) into a temporary folder and
reads the built pages as a reader's browser would get them.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import yaml

from primer.book._markers import scan
from primer.chapters import chapter_names, scenarios_of
from primer.cli import summary_lines
from primer.runner import run_chapter
from tests.test_chapters_cli import ENDINGS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CONFIG = ROOT / "mkdocs.yml"


def markdown(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def nav() -> list[object]:
    # mkdocs.yml may use MkDocs' own tags (!ENV) and Python ones (primer.book.quiet_theme): ignore them.
    class Loader(yaml.SafeLoader):
        pass

    for prefix in ("!", "tag:yaml.org,2002:python/"):
        Loader.add_multi_constructor(prefix, lambda loader, suffix, node: None)
    config = yaml.load(CONFIG.read_text(encoding="utf-8"), Loader=Loader)
    return list(config["nav"])


# --- fast: the sources of the book ---------------------------------------------------------


def test_the_navigation_lists_home_every_chapter_in_order_and_the_authors_page() -> None:
    entries = nav()
    assert entries[0] == {"Home": "index.md"}
    assert entries[-1] == {"For authors": "authors.md"}
    (chapters,) = [entry["Chapters"] for entry in entries if isinstance(entry, dict) and "Chapters" in entry]
    assert chapters == [f"{name}.md" for name in chapter_names()]


@pytest.mark.parametrize("chapter", chapter_names())
def test_every_chapter_page_places_every_scenario_and_names_its_code(chapter: str) -> None:
    text = markdown(f"{chapter}.md")
    assert text.startswith(f"# {int(chapter[2:4])}. "), "the title carries the chapter's number"
    markers = scan(text).markers
    assert markers, f"docs/{chapter}.md has no trace marker"
    assert {m.chapter for m in markers} == {chapter}
    placed = {m.scenario for m in markers}
    names = {s.name for s in scenarios_of(chapter)}
    assert None in placed or names <= placed, f"scenarios without a place: {names - placed}"
    assert placed - {None} <= names
    assert "primer/" in text, "the page names the code it explains"
    assert f'--8<-- "primer/chapters/{chapter}.py"' in text, "the page shows its scenarios' module"


def test_the_front_pages_place_no_traces() -> None:
    # Examples of marker lines there are indented inside tabs, so they are shown, not run.
    for page in ("index.md", "authors.md"):
        assert scan(markdown(page)).markers == ()
    assert "::: trace ch23_price_checks price_answered" in markdown("authors.md")


def test_no_page_writes_inline_code_that_starts_with_three_colons() -> None:
    # pymdownx.inlinehilite reads `:::lang code` as a language prefix and drops it:
    # a marker quoted inline would reach the reader without its `:::`.
    for page in sorted(DOCS.glob("*.md")):
        assert "`:::" not in page.read_text(encoding="utf-8"), page.name


def test_the_home_page_links_every_chapter() -> None:
    text = markdown("index.md")
    for chapter in chapter_names():
        assert f"]({chapter}.md)" in text


def _shape(line: str) -> str:
    # Timings differ from run to run; everything else must read the same.
    line = re.sub(r"\d+\.\dms", "Tms", line)
    return re.sub(r"\((service|model provider) [^)]*\)", r"(\1 ...)", line)


def test_the_home_pages_example_reads_as_the_command_line_prints_it() -> None:
    text = markdown("index.md")
    block = re.search(r'```text title="(?P<command>[^"]+)"\n(?P<body>.*?)\n```', text, re.S)
    assert block is not None
    command = block["command"].split()
    assert command[:4] == ["python", "-m", "primer", "run"]
    chapter, scenario = command[4], command[command.index("--scenario") + 1]
    printed = summary_lines(run_chapter(chapter, only=scenario))[2:]  # without the chapter's two lines
    assert [_shape(line) for line in block["body"].splitlines()] == [_shape(line) for line in printed]


# --- slow: the built book ------------------------------------------------------------------


def _visible_text(page: Path) -> str:
    source = page.read_text(encoding="utf-8")
    source = re.sub(r"<(script|style)\b.*?</\1>", " ", source, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", source)).split())


# `built_book` (tests/conftest.py): the book copied and built once a session, shared with the browser tests.


@pytest.mark.slow
def test_the_strict_build_raises_no_warning(built_book: tuple[Path, str]) -> None:
    _, log = built_book
    assert not [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))], log
    # Built with NO_MKDOCS_2_WARNING unset: mkdocs.yml silences Material's end-of-life notice, and
    # the log begins with the machinery's line.
    assert "end of life" not in log, log
    assert "NO_MKDOCS_2_WARNING" not in log, log
    assert log.lstrip().startswith("INFO    -  traces: "), log
    ran = re.search(r"traces: ran (\d+), reused (\d+)", log)
    assert ran is not None, log
    assert int(ran[1]) + int(ran[2]) >= sum(len(scenarios_of(c)) for c in chapter_names())


@pytest.mark.slow
@pytest.mark.parametrize("chapter", chapter_names())
def test_every_chapter_page_is_built_with_its_traces(built_book: tuple[Path, str], chapter: str) -> None:
    site, _ = built_book
    page = site / chapter / "index.html"
    assert page.exists()
    text = _visible_text(page)
    assert "::: trace" not in text, "every marker was replaced"
    for name, reason in ENDINGS[chapter].items():
        line = re.search(rf"scenario {name} · [^·]+(?: · [^·]+)*? · ended: (\w+)", text)
        assert line is not None, f"{chapter}: no summary line for {name}"
        assert line[1] == reason
    # The included code is there, not the include line.
    assert "--8<--" not in text
    first = scenarios_of(chapter)[0].name
    assert re.search(rf'name = "{first}"', text), "the chapter's module is shown on its page"


@pytest.mark.slow
def test_the_front_pages_are_built(built_book: tuple[Path, str]) -> None:
    site, _ = built_book
    home = _visible_text(site / "index.html")
    authors = _visible_text(site / "authors" / "index.html")
    assert "How to read a trace" in home
    assert "scenario service_is_busy · tools=place_order, price_of" in home
    assert "::: trace ch23_price_checks price_answered" in authors, "the example marker is shown as code"
    # Shown as the line a chapter page writes, not included: the guide escapes it (`;--8<--`).
    # The example is highlighted, so the line is read with the highlighter's tags taken out.
    shown = html.unescape(re.sub(r"<[^>]+>", "", (site / "authors" / "index.html").read_text(encoding="utf-8")))
    assert '    --8<-- "primer/chapters/ch23_price_checks.py"' in shown
    assert ';--8<-- "primer/chapters/ch23_price_checks.py"' not in shown
    chapter10 = _visible_text(site / "ch10_testing_agents" / "index.html")
    assert "def test_a_busy_service_is_waited_for_on_the_virtual_clock" in chapter10
