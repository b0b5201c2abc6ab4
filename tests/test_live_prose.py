"""Prose about a live run shows only when there is a live run: ``::: live CHAPTER [SCENARIO]`` blocks."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import markdown
import pytest

from primer.book._markers import check, scan
from primer.book._prose import select
from primer.book._source import ChapterTraces, LiveStatus
from primer.book.markdown import TraceExtension
from primer.errors import NotFound
from primer.trace import ChapterRun, Ending, ScenarioRun
from tests.books import BETA, make_book

# A shown block's two lines dropped, not wrapped in an element.
UNWRAPPED = lambda block: ("", "")  # noqa: E731

PAGE = """\
# A chapter

Before.

::: live ch_beta
In the **live** run, the model greets back.

!!! tip "Look"
    Open turn 1.
::: end live

Between.

::: live ch_beta greets
Only with a live `greets`.
::: end live

::: live ch_beta other
Only with a live `other`.
::: end live

An example, which is not a block:

```markdown
::: live ch_beta
Shown as code, always.
::: end live
```

After.
"""


def test_a_block_is_kept_without_its_two_lines_or_dropped_whole() -> None:
    assert [(b.chapter, b.scenario, b.start, b.end) for b in scan(PAGE).blocks] == [
        ("ch_beta", None, 5, 10),
        ("ch_beta", "greets", 14, 16),
        ("ch_beta", "other", 18, 20),
    ]
    shown = select(PAGE, lambda chapter, scenario: scenario != "other", True, UNWRAPPED)
    assert "In the **live** run" in shown
    assert "Only with a live `greets`." in shown
    assert "Only with a live `other`." not in shown
    assert "::: live ch_beta\n" not in shown.split("```")[0], "the block's own lines never show"
    assert "```markdown\n::: live ch_beta\nShown as code, always.\n::: end live\n```" in shown
    hidden = select(PAGE, lambda chapter, scenario: False, True, UNWRAPPED)
    assert "live** run" not in hidden
    assert "Open turn 1." not in hidden
    assert "Shown as code, always." in hidden
    assert hidden.count("\n") == PAGE.count("\n"), "lines are blanked, so line numbers stay"


@pytest.mark.parametrize("opening", ["::: live ch_beta", "   :::\tlive\tch_beta greets", "::: live ch_beta \r"])
def test_a_block_however_spaced_is_found_and_a_page_without_one_is_left_as_it_is(opening: str) -> None:
    # A page with no line that could open or close a block is not read line by line.
    for closing in ("::: end live", "  :::  end \t live "):
        page = f"Before.\n\n{opening}\nLive prose.\n{closing}\n\nAfter."
        assert [(b.start, b.end) for b in scan(page).blocks] == [(3, 5)], repr(page)
        assert "Live prose." not in select(page, lambda chapter, scenario: False, True, UNWRAPPED)
    lines = ["# Page", "", "::: trace ch_beta", "", "::: lively ch_beta", "::: ending live"]
    md = markdown.Markdown(extensions=[TraceExtension(traces_off=True)])
    assert md.preprocessors["primer_live_prose"].run(lines) is lines


def test_what_is_wrong_with_a_block_is_said_naming_page_and_line() -> None:
    page = "::: live ch_nope\nx\n::: end live\n\n::: live ch_beta nobody\ny\n::: end live\n\n::: live ch_beta\nz\n"
    assert check("docs/p.md", page, {"ch_beta": ["greets"]}) == [
        "docs/p.md line 1: the live block `::: live ch_nope` names no chapter. The chapters are: ch_beta.",
        "docs/p.md line 5: the live block `::: live ch_beta nobody` names no scenario of ch_beta. "
        "Its scenarios are: greets.",
        "docs/p.md line 9: the live block `::: live ch_beta` is not closed: end it with a line `::: end live`.",
    ]
    # Not closed: left as written, rather than guess what it hides.
    assert select(page, lambda c, s: False, True, UNWRAPPED).endswith("::: live ch_beta\nz\n")
    nested = "::: live ch_beta\n::: live ch_beta greets\nx\n::: end live\n"
    assert check("p.md", nested, {"ch_beta": ["greets"]}) == [
        "p.md line 1: the live block `::: live ch_beta` holds another one (line 2): live blocks do not nest."
    ]


@dataclass
class Source:
    """A chapter with a mock run, and a live one only when ``live``."""

    live: bool
    asked: list[str] = field(default_factory=list)

    def traces(self, chapter: str) -> ChapterTraces:
        self.asked.append(chapter)
        if chapter != "ch_beta":
            raise NotFound(f"There is no chapter {chapter!r}.")
        run = ChapterRun(chapter=chapter, mode="live", scenarios=[])
        if self.live:
            run.scenarios = [ScenarioRun(name="greets", mode="live", ending=Ending(reason="no_tool_calls"))]
        return ChapterTraces(
            chapter, None, run if self.live else None, LiveStatus("current" if self.live else "missing")
        )


def render(source: Source, text: str = PAGE) -> str:
    return markdown.markdown(text, extensions=["admonition", "fenced_code", TraceExtension(source=source)])


def test_the_extension_renders_a_block_only_when_there_is_a_live_run() -> None:
    with_live = render(Source(live=True))
    assert "In the <strong>live</strong> run" in with_live
    assert '<div class="admonition tip">' in with_live
    assert "Only with a live <code>greets</code>." in with_live
    assert "Only with a live <code>other</code>" not in with_live
    assert "::: live" not in with_live.split("<pre>")[0]
    without = render(Source(live=False))
    assert "live</strong> run" not in without
    assert "Open turn 1." not in without
    assert "<p>Before.</p>" in without
    assert "<p>Between.</p>" in without
    assert "Shown as code, always." in without


def test_a_block_naming_an_unknown_chapter_is_hidden_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    html = render(Source(live=True), "::: live ch_nope\nHidden.\n::: end live\n")
    assert "Hidden." not in html
    assert any("::: live ch_nope" in r.getMessage() and "no chapter" in r.getMessage() for r in caplog.records)


# -- in a book build --------------------------------------------------------------


BOOK_PAGE = """\
# The book

::: trace ch_beta

::: live ch_beta
LIVE-PROSE: compare the live run.
::: end live
"""


@pytest.mark.slow
@pytest.mark.parametrize("renderer", [True, False], ids=["extension", "hook-listing"])
def test_a_book_shows_live_prose_once_its_chapter_has_a_live_trace(tmp_path: Path, renderer: bool) -> None:
    # Laid out as the book's rules ask (primer.book._markers): a hook-only book (no extension)
    # has no option to turn them off.
    book = make_book(
        tmp_path, {"ch01_beta": BETA}, {"index": BOOK_PAGE.replace("ch_beta", "ch01_beta")}, renderer=renderer
    )
    done = book.build("--strict")
    assert done.returncode == 0, done.log
    assert "LIVE-PROSE" not in book.page()
    assert ":::" not in book.page()

    # A frozen live trace appears (as a key-holder's build would commit one).
    mock = ChapterRun.model_validate(json.loads((book.root / "site" / "traces" / "ch01_beta.json").read_text())["mock"])
    live = mock.model_copy(update={"mode": "live", "model": "some-model"})
    live.scenarios = [s.model_copy(update={"mode": "live"}) for s in live.scenarios]
    (book.docs / "traces").mkdir()
    (book.docs / "traces" / "ch01_beta.live.json").write_text(live.model_dump_json(indent=2))
    done = book.build("--strict")
    assert done.returncode == 0, done.log
    assert "LIVE-PROSE: compare the live run." in book.page()
    assert "::: end live" not in book.page()


@pytest.mark.slow
def test_a_book_warns_about_a_block_naming_no_chapter(tmp_path: Path) -> None:
    page = "# The book\n\n::: live ch_gamma\nNothing.\n::: end live\n"
    book = make_book(tmp_path, pages={"index": page})
    done = book.build("--strict")
    assert done.returncode != 0
    [warning] = done.lines("the live block")
    assert "docs/index.md line 3: the live block `::: live ch_gamma` names no chapter." in warning
