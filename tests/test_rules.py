"""A book's rules (``primer.book._markers.broken_rules``): each broken one named, with what to do; this book
keeps them all.
"""

from __future__ import annotations

from pathlib import Path

from primer.book._markers import broken_rules as check
from primer.locator import ChapterLocator

ROOT = Path(__file__).resolve().parent.parent
PAGE = "# 1. Hello\n\n::: trace ch01_hello\n"


def test_a_book_that_keeps_every_rule_gets_no_warning() -> None:
    scenarios = {"ch01_hello": ["greets", "spells"], "ch02_more": ["more"]}
    pages = {
        "docs/index.md": "# Home\n\nNo traces here.\n",
        "docs/ch01_hello.md": "# 1. Hello\n\n::: trace ch01_hello greets\n\n::: trace ch01_hello spells\n",
        # A marker inside an admonition places its scenario too; a chapter page may sit in a folder.
        "docs/part/ch02_more.md": "# 2. More\n\n!!! note\n\n    ::: trace ch02_more more\n",
    }
    assert check("mybook", scenarios, pages) == []


def test_chapter_modules_are_named_chnn_name_and_numbered_with_no_gap() -> None:
    scenarios: dict[str, list[str] | None] = {
        "ch01_hello": [],
        "helpers": [],
        "ch1_typo": [],
        "ch03_later": [],
        "ch03_twin": [],
    }
    problems = check("mybook", scenarios, {})
    assert problems[0].startswith("mybook.ch1_typo: a chapter module is named chNN_name")
    assert problems[1].startswith("mybook.helpers: a chapter module is named chNN_name")
    assert "a helper) has a name that starts with `_`" in problems[1]
    assert problems[2] == (
        "mybook.ch03_twin: chapter 03 is ch03_later already, and each chapter has a place of its own: "
        "renumber ch03_twin."
    )
    assert problems[3].startswith("mybook.ch03_later: the chapters are numbered ch01, ch02, ... with no gap")
    assert "rename it ch02_later." in problems[3]
    assert len(problems) == 4
    # Three digits for a book of a hundred chapters or more.
    assert check("big", {f"ch{n:03d}_x": [] for n in range(1, 101)}, {}) == []


def test_a_scenario_on_no_page_is_named_with_the_marker_that_places_it() -> None:
    scenarios = {"ch01_hello": ["greets", "spells", "waves"]}
    pages = {
        "docs/ch01_hello.md": "# 1. Hello\n\n::: trace ch01_hello greets\n\n```\n::: trace ch01_hello spells\n```\n"
    }
    [problem] = check("mybook", scenarios, pages)
    assert problem == (
        "mybook.ch01_hello: scenarios spells, waves are on no page, so no reader sees them. Place each on "
        "docs/ch01_hello.md with a marker line `::: trace ch01_hello spells`, or `::: trace ch01_hello` for "
        "every scenario of the chapter."
    )
    # Placing the whole chapter places every scenario; a chapter that could not be imported is not judged.
    assert check("mybook", {**scenarios, "ch02_broken": None}, {"docs/ch01_hello.md": PAGE}) == []


def test_a_page_places_its_own_chapters_traces_only() -> None:
    scenarios = {"ch01_hello": ["greets"], "ch02_more": ["more"]}
    pages = {
        "docs/ch01_hello.md": PAGE + "\n::: trace ch02_more more\n",
        "docs/ch02_more.md": "# 2. More\n",
        # A page named after no chapter shows one chapter's traces, the first it places.
        "docs/index.md": "# Home\n\n::: trace ch01_hello\n\n::: trace ch09_unknown\n\n::: trace ch02_more\n",
    }
    problems = check("mybook", scenarios, pages)
    assert problems == [
        "docs/ch01_hello.md line 5: the marker `::: trace ch02_more more` places ch02_more's traces on a page that "
        "is ch01_hello's. A page places its own chapter's traces only: move the marker to docs/ch02_more.md, "
        "the page named after the chapter.",
        "docs/index.md line 7: the marker `::: trace ch02_more` places ch02_more's traces on a page that is "
        "ch01_hello's. A page places its own chapter's traces only: move the marker to docs/ch02_more.md, the "
        "page named after the chapter.",
    ]  # ch09_unknown names no chapter: the page check says so, naming page and line
    assert check("mybook", {"ch01_hello": ["greets"]}, {"docs/index.md": PAGE}) == []


def test_this_book_keeps_its_own_rules() -> None:
    chapters = ChapterLocator("primer.chapters")
    scenarios: dict[str, list[str] | None] = {
        name: [s.name for s in chapters.scenarios(name)] for name in chapters.names()
    }
    docs = ROOT / "docs"
    pages = {f"docs/{p.relative_to(docs).as_posix()}": p.read_text(encoding="utf-8") for p in docs.rglob("*.md")}
    assert check("primer.chapters", scenarios, pages) == []
