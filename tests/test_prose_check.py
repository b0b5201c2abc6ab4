"""Prose says what the traces show, in each mode it shows in: ``primer.book._prose``'s check and mode blocks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import markdown
import pytest

from primer.book import _prose as prose
from primer.book._book import Prepared, Report
from primer.book._cache import TraceCache
from primer.book._markers import check, scan
from primer.book._prose import corpora, facts, kept_corpora
from primer.book._source import ChapterTraces, LiveStatus, Shown
from primer.book.markdown import TraceExtension
from primer.chapters import chapter_names
from primer.errors import NotFound
from primer.replay import read_trace
from primer.runner import run_chapter
from primer.trace import ChapterRun
from tests.books import make_book

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def problems(page: str, text: str, traces: Callable[[str], ChapterTraces | None]) -> list[str]:
    """The checks of a page's mode blocks and quoted facts against these traces (the blocks' names not checked)."""
    return check(page, text, dict.fromkeys(chapter_names()) | {"ch_a": None}) + prose.problems(
        page, text, _corpora(traces)
    )


def _corpora(traces: Callable[[str], ChapterTraces | None]) -> Callable[[str], prose.Corpora | None]:
    return lambda chapter: None if (found := traces(chapter)) is None else corpora(found)


def _book_traces(chapter: str) -> ChapterTraces | None:
    if chapter not in chapter_names():
        return None
    live_file = DOCS / "traces" / f"{chapter}.live.json"
    live = read_trace(live_file) if live_file.is_file() else None
    return ChapterTraces(chapter, run_chapter(chapter), live, LiveStatus("current" if live else "missing"))


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_every_page_quotes_only_what_its_traces_show_in_each_mode(page: str) -> None:
    # The mock runs made now and the frozen live traces: what a keyless build shows.
    assert problems(f"docs/{page}", (DOCS / page).read_text(encoding="utf-8"), _book_traces) == []


def test_the_chapter_nine_prose_is_checked_in_both_modes() -> None:
    text = (DOCS / "ch09_who_retries.md").read_text(encoding="utf-8")
    quoted = {(f.text, f.mode) for f in facts(text)}
    # Mode-true: the mock's retry-after in the mock block, the live backoff in the live one.
    assert ("retry-after: 1", "mock") in quoted
    assert ('"seconds": 0.05, "before_attempt": 2, "source": "backoff"', "live") in quoted
    # Both modes show the price: checked in each.
    assert ("1.20", None) in quoted
    # What the prose said before: outside a mode block, false for the live run beside it.
    old = text.replace("::: mock ch09_who_retries service_is_busy\n", "").replace("::: end mock\n", "", 1)
    [warning] = [w for w in problems("docs/ch09.md", old, _book_traces) if "retry-after: 1" in w]
    assert warning.startswith("docs/ch09.md line 35: the prose quotes `retry-after: 1`, which the live runs")
    assert "`::: mock ch09_who_retries`" in warning


def test_what_is_a_name_is_not_a_fact_and_ellipses_stand_for_text() -> None:
    page = """\
# A page

`1.20` in a section without a marker is not checked.

## Traces

::: trace ch_a

`primer/service.py`, `ServiceCall._send`, `retry_delay()`, `Retry-After`, `max_attempts=3`,
`RetryPolicy(attempt_deadline=2.0)`, `[3]`, `mkdocs build` and `127.0.0.1` name code.
The reply says `Milk ... fresh`, and the tool `returned:
1.20`, but not `1.25`.

## The code

`a figure: 9.99` in a section without a marker speaks of code.
"""
    assert [(f.line, f.text) for f in facts(page)] == [(11, "Milk ... fresh"), (11, "returned: 1.20"), (12, "1.25")]


def _run(chapter: str, mode: str, reply: str) -> ChapterRun:
    from primer.trace import Ending, Message, ModelCall, ScenarioRun, Turn

    call = ModelCall(kind=mode, context=[], reply=Message(role="ai", content=reply))  # type: ignore[arg-type]
    scenario = ScenarioRun(
        name="asks",
        mode=mode,  # type: ignore[arg-type]
        turns=[Turn(number=1, model_call=call)],
        ending=Ending(reason="no_tool_calls"),
    )
    return ChapterRun(chapter=chapter, mode=mode, scenarios=[scenario])  # type: ignore[arg-type]


def _traces(live: bool) -> ChapterTraces:
    mock = _run("ch_a", "mock", "Milk is 1.20 and fresh.")
    run = _run("ch_a", "live", "Milk costs 1.25 today.") if live else None
    return ChapterTraces("ch_a", mock, run, LiveStatus("current" if live else "missing"))


def test_a_fact_must_hold_in_every_mode_it_shows_in() -> None:
    page = (
        "::: trace ch_a\n\nThe answer: `is 1.20 and`.\n\n"
        "::: mock ch_a\nThe mock: `Milk is 1.20`.\n::: end mock\n\n"
        "::: live ch_a asks\nThe live: `costs 1.25`, not `is 1.20`.\n::: end live\n"
    )
    with_live = problems("p.md", page, lambda chapter: _traces(live=True))
    assert with_live == [
        "p.md line 3: the prose quotes `is 1.20 and`, which the live runs do not show: "
        "put the sentence in a `::: mock ch_a` block, or say what both show.",
        "p.md line 10: the prose quotes `is 1.20`, which the live runs do not show: say what the trace shows.",
    ]
    # Without a live run, only the mock is seen: the sentence beside it holds.
    assert problems("p.md", page, lambda chapter: _traces(live=False)) == []


def test_what_the_runs_show_is_kept_in_the_chapters_entry_by_its_key(tmp_path: Path) -> None:
    def store(key: str, traces: ChapterTraces | None) -> Prepared:
        shown = Shown("ch_a", key, "code", ("asks",), ("asks",), LiveStatus("current"))
        entries = TraceCache(tmp_path / "entries", tmp_path / "traces")
        return Prepared(Report(), {"ch_a": shown}, entries, runs={"ch_a": traces} if traces else None)

    shown = kept_corpora(store("k1", _traces(live=True)), "ch_a", None)
    assert shown == corpora(_traces(live=True))
    [warning] = prose.problems("p.md", "::: trace ch_a\n\nThe answer: `is 1.20 and`.\n", lambda c: shown)
    assert "which the live runs do not show" in warning
    # A later build finds it in the entry: no run is read (this store has none to read).
    assert kept_corpora(store("k1", None), "ch_a", None) == shown
    assert [p.parent.name for p in (tmp_path / "entries").glob("ch_a/*/prose.json")] == ["k1"]
    assert kept_corpora(store("k2", None), "ch_a", None) == {}, "a new key: made again, from the runs it has"
    assert kept_corpora(store("k1", None), "ch_b", None) is None, "a chapter the build does not show"
    # A chapter that no longer imports shows its error, and its prose is not held to the runs it has none of
    # (the build told the author to change a sentence that was right, beside the import error).
    broken = Shown("ch_a", "k3", "code", ("asks",), None, LiveStatus("missing"), None, False)
    entries = TraceCache(tmp_path / "entries", tmp_path / "traces")
    assert kept_corpora(Prepared(Report(), {"ch_a": broken}, entries), "ch_a", None) is None


# -- mode blocks --------------------------------------------------------------------


class Source:
    def __init__(self, live: bool) -> None:
        self.live = live

    def traces(self, chapter: str) -> ChapterTraces:
        if chapter != "ch_a":
            raise NotFound(f"There is no chapter {chapter!r}.")
        return _traces(self.live)


MODE_PAGE = """\
::: trace ch_a

::: mock ch_a
MOCK-PROSE: the mock says 1.20.
::: end mock

::: live ch_a asks
LIVE-PROSE: the live model says 1.25.
::: end live
"""


def test_a_mode_block_shows_labelled_with_its_mode_where_its_runs_are() -> None:
    html = markdown.markdown(MODE_PAGE, extensions=[TraceExtension(source=Source(live=True))])
    assert (
        '<div class="tr-prose" data-mode="mock" data-tr-chapter="ch_a"><p class="tr-prose-mode">'
        '<span class="tr-badge">mock</span> about the mock run</p>\n<p>MOCK-PROSE' in html
    )
    assert 'data-mode="live" data-tr-chapter="ch_a" data-tr-scenario="asks">' in html
    assert "about the live run of asks</p>\n<p>LIVE-PROSE" in html
    assert ":::" not in html
    without = markdown.markdown(MODE_PAGE, extensions=[TraceExtension(source=Source(live=False))])
    assert "MOCK-PROSE" in without
    assert "LIVE-PROSE" not in without
    off = markdown.markdown(MODE_PAGE, extensions=[TraceExtension(source=Source(live=True), traces_off=True)])
    assert "PROSE" not in off, "no traces shown: no prose about them"


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("::: live ../x", "`::: live ../x`"),
        (":::live x", "`:::live x`"),
        ("::: Mock x", "`::: Mock x`"),
        ("::: live x y z", "`::: live x y z`"),
        ("::: end  live now", "`::: end  live now`"),
        ("    ::: live x", "`::: live x`"),
        ("::: lvie x", "`::: lvie x`"),  # a misspelled word before a name
        ("::: mokc x", "`::: mokc x`"),
        ("::: lve x", "`::: lve x`"),
    ],
)
def test_a_line_meant_as_a_mode_block_that_is_not_one_is_warned_about(line: str, why: str) -> None:
    page = f"Before.\n\n{line}\nProse.\n::: end live\n\n```\n::: live ../x\n```\n::: lively x\n::: evil x\n"
    [warning, *rest] = check("docs/p.md", page, {"x": None})
    assert warning.startswith(f"docs/p.md line 3: {why} looks like the line of a mode block but is not one.")
    assert all(f"line {n}" not in each for each in rest for n in (8, 10, 11)), "code and other words are not ours"


def test_a_closing_line_with_no_block_open_is_said() -> None:
    # Its opening line misspelled, say: both are said, and the page shows neither as prose about a mode.
    page = "::: lvie x\nProse.\n::: end live\n\n::: live x\nMore.\n::: end live\n"
    assert [w[: w.index(". ")] for w in check("p.md", page, {"x": None})] == [
        "p.md line 1: `::: lvie x` looks like the line of a mode block but is not one",
        "p.md line 3: `::: end live` closes no block",
    ]
    assert [(b.start, b.end) for b in scan(page).blocks] == [(5, 7)]


def test_a_block_closed_by_the_other_modes_line_is_said() -> None:
    page = "::: mock x\nProse.\n::: end live\n"
    assert check("p.md", page, {"x": None}) == [
        "p.md line 1: the mock block `::: mock x` is closed on line 3 by the other mode's line: write `::: end mock`."
    ]


# -- in a book build ------------------------------------------------------------------


@pytest.mark.slow
def test_a_chapter_quoting_what_its_trace_does_not_show_fails_a_strict_build(tmp_path: Path) -> None:
    page = "# The book\n\n::: trace ch_alpha asks_price\n\nThe tool `returned: 1.25`, the model said `Milk is`.\n"
    book = make_book(tmp_path, pages={"index": page})
    done = book.build("--strict")
    assert done.returncode != 0
    [warning] = done.lines("the prose quotes")
    assert "docs/index.md line 5: the prose quotes `returned: 1.25`, which the mock runs do not show" in warning
    (book.docs / "index.md").write_text(page.replace("1.25", "1.20"), encoding="utf-8")
    done = book.build("--strict")
    assert done.returncode == 0, done.log
