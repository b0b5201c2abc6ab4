"""The committed live traces are the seed pages' live runs, imported as they were.

``docs/traces/ch09_who_retries.live.json`` and ``docs/traces/ch05_loop_endings.live.json``
are written by ``tests/fixtures/import_seed_live.py`` from the seed pages
(``tests/fixtures/seed_pages``). These tests read
the committed files as the book does and hold them to the seeds' live stories: the summary
lines the seeds print, the parallel orders, the cut-off reply, the reasoning, and no secret.
Where a seed line differs, it is one of the seeds' known defects, and only that is allowed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from primer.book._book import Book
from primer.book._chapters import Chapters
from primer.book._links import PUBLISHED_DIR
from primer.settings import Settings
from primer.summary import chapter_line, model_line, scenario_line, timing_text, tool_line, turn_line
from primer.trace import Attempt, ChapterRun, ToolRun
from tests.fixtures.extract_seed_traffic import SEED_DIR
from tests.fixtures.import_seed_live import SEED_PAGES, SeedPage, parse_page

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "docs" / PUBLISHED_DIR
SCRIPT = ROOT / "tests" / "fixtures" / "import_seed_live.py"
CHAPTERS = sorted(SEED_PAGES)


def live_file(chapter: str) -> Path:
    return TRACES / f"{chapter}.live.json"


@pytest.fixture(scope="module")
def runs() -> dict[str, ChapterRun]:
    return {chapter: ChapterRun.model_validate_json(live_file(chapter).read_bytes()) for chapter in CHAPTERS}


@pytest.fixture(scope="module")
def seeds() -> dict[str, SeedPage]:
    return {chapter: parse_page(SEED_DIR / page) for chapter, page in SEED_PAGES.items()}


# -- the chapter ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("chapter", "line"),
    [("ch09_who_retries", "live turns=9 · messages=23"), ("ch05_loop_endings", "live turns=4 · messages=10")],
)
def test_the_totals_are_the_seeds_live_totals(runs: dict[str, ChapterRun], chapter: str, line: str) -> None:
    run = runs[chapter]
    assert (run.chapter, run.mode, run.model) == (chapter, "live", "deepseek-flash")
    # The seeds' totals, then the tokens the provider counted (issue 23: totals a reader expects).
    assert chapter_line(run).startswith(f"{line} · ")
    assert _without_tokens(chapter_line(run)) == line


# The tokens a chapter's or a scenario's line adds up, which the seed pages did not print.
_TOKENS = re.compile(r" · [\d,]+ in(?: \([\d,]+ cached\))? / [\d,]+ out(?: \([\d,]+ reasoning\))?")


def _without_tokens(line: str) -> str:
    assert _TOKENS.search(line), line
    return _TOKENS.sub("", line)


def test_each_chapter_is_dated_by_its_first_live_response(runs: dict[str, ChapterRun]) -> None:
    assert runs["ch05_loop_endings"].recorded_at == "2026-09-13T21:51:27+00:00"
    assert runs["ch09_who_retries"].recorded_at == "2026-09-13T21:52:02+00:00"


# -- every summary line of the seeds' live runs --------------------------------------


def seed_style_tool_line(run: ToolRun) -> str:
    """Our tool line with the seed's timing label: ``model provider`` for the service, waiting in library."""
    line = tool_line(run)
    timing = run.timing
    if timing.outside_ms is None:
        return line
    ours = timing_text(timing, "service")
    assert ours in line, "a tool's outside party is the service"
    library = timing.total_ms - timing.outside_ms
    seed = f"{timing.total_ms:.1f}ms (model provider {timing.outside_ms:.1f} · library {library:.1f})"
    return line.replace(ours, seed)


def assert_tool_line(seed: str, run: ToolRun) -> None:
    ours = seed_style_tool_line(run)
    if " · raised: " in seed:
        # The seed cut a raised message short without saying so; ours is whole (or marked).
        seed_head, seed_raised = seed.split(" · raised: ")
        ours_head, ours_raised = ours.split(" · raised: ")
        assert ours_head == seed_head
        assert ours_raised.startswith(seed_raised)
        assert run.failure is not None
        assert ours_raised == run.failure.message or ours_raised.endswith(" more characters)")
    else:
        assert ours == seed


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_summary_line_of_the_seeds_live_runs_is_reproduced(
    runs: dict[str, ChapterRun], seeds: dict[str, SeedPage], chapter: str
) -> None:
    run, page = runs[chapter], seeds[chapter]
    assert _without_tokens(chapter_line(run)) == page.totals["live"]
    seed_runs = page.live()
    assert [s.name for s in run.scenarios] == [s.name for s in seed_runs]
    for scenario, seed in zip(run.scenarios, seed_runs, strict=True):
        ours = _without_tokens(scenario_line(scenario))
        if "tools=" not in seed.line:
            # The ch05 seed page left out the scenario's tools; the book names them.
            ours = ours.replace(f"tools={', '.join(scenario.tools)} · ", "")
        assert ours == seed.line
        assert len(scenario.turns) == len(seed.turns)
        for turn, seed_turn in zip(scenario.turns, seed.turns, strict=True):
            assert turn_line(turn) == seed_turn.line
            # The seed said `library` of a time that holds the connection's set-up, untimed: ours says so.
            assert " · library and set-up " in model_line(turn.model_call)
            assert model_line(turn.model_call).replace("library and set-up", "library") == seed_turn.model_line
            assert len(turn.tools) == len(seed_turn.tools)
            for tool, seed_tool in zip(turn.tools, seed_turn.tools, strict=True):
                assert_tool_line(seed_tool.line, tool)


def test_tool_times_name_the_service_and_the_wait(runs: dict[str, ChapterRun]) -> None:
    [price_of] = runs["ch09_who_retries"].scenario("service_is_busy").turns[0].tools
    assert price_of.timing.waited_ms == 50.0, "the 0.05 s backoff is waiting, not library time"
    assert tool_line(price_of).startswith("tool price_of · 574.2ms (service 323.0 · waited 50.0 · library 201.2)")
    lines = [tool_line(t) for run in runs.values() for s in run.scenarios for turn in s.turns for t in turn.tools]
    assert not any("model provider" in line for line in lines)


# -- the stories ------------------------------------------------------------------


def test_the_model_asked_for_two_orders_at_once_and_both_were_placed(runs: dict[str, ChapterRun]) -> None:
    scenario = runs["ch09_who_retries"].scenario("arguments_are_wrong")
    first, second, third = scenario.turns
    [refused] = first.tools
    assert refused.failure is not None
    assert refused.failure.caller_can_fix
    assert refused.service is None, "refused before anything went out"
    assert refused.message == (
        "['place_order'] rejected the arguments: quantity ['20'] must be between 1 and 12. "
        "Correct them and call it again."
    )
    reply = second.model_call.reply
    assert reply is not None
    assert reply.content == "The max per order is 12, so I'll split it into two orders (12 + 8 = 20)."
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("place_order", {"item": "milk", "quantity": 12}),
        ("place_order", {"item": "milk", "quantity": 8}),
    ]
    ids = [c.id for c in reply.tool_calls]
    assert len(set(ids)) == 2
    assert [t.call_id for t in second.tools] == ids
    assert [t.result for t in second.tools] == ["ordered 12 x milk", "ordered 8 x milk"]
    assert all(t.service == "https://httpbin.org" and len(t.attempts) == 1 for t in second.tools)
    # Both answers went back in one context, each to its own call.
    answered = [(m.tool_call_id, m.content) for m in third.model_call.context if m.role == "tool"][1:]
    assert answered == [(ids[0], "ordered 12 x milk"), (ids[1], "ordered 8 x milk")]
    assert third.model_call.context == scenario.transcript[:-1]


def test_tokens_exhausted_at_24_with_the_rest_left_to_the_provider(runs: dict[str, ChapterRun]) -> None:
    scenario = runs["ch05_loop_endings"].scenario("tokens_exhausted")
    assert scenario.settings == {"max_tokens": 24}
    assert (scenario.ending.reason, scenario.ending.finish_reason) == ("tokens_exhausted", "length")
    [turn] = scenario.turns
    call = turn.model_call
    assert call.settings == {"max_tokens": 24}
    [exchange] = call.exchanges
    assert exchange.request.json_body["max_tokens"] == 24
    assert exchange.request.defaulted == ["temperature", "top_p", "stop", "seed", "tool_choice"]
    assert call.finish_reason == "length"
    assert call.usage is not None
    assert (call.usage.output_tokens, call.usage.reasoning_tokens) == (24, 24)
    assert call.reply is not None
    assert not call.reply.content
    assert not call.reply.tool_calls
    # All 24 tokens went to reasoning, cut mid-sentence: kept as it came.
    assert call.reply.reasoning == (
        "We need to find lowest stock item, then price of it. Then explain why it's low \u2014 but we have no"
    )


def test_reasoning_is_kept_and_sent_back(runs: dict[str, ChapterRun]) -> None:
    scenario = runs["ch05_loop_endings"].scenario("within_token_limit")
    first, second, _third = scenario.turns
    reasoning = first.model_call.reply.reasoning if first.model_call.reply else None
    assert reasoning is not None
    assert reasoning.startswith("The user asks: whatever we're lowest on")
    [ai] = [m for m in second.model_call.context if m.role == "ai"]
    assert ai.reasoning == reasoning
    sent = second.model_call.exchanges[0].request.json_body["messages"][2]
    assert sent["reasoning_content"] == reasoning
    usage = first.model_call.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens) == (381, 102, 128, 77)


def test_model_exchanges_are_the_recorded_wire(runs: dict[str, ChapterRun]) -> None:
    for run in runs.values():
        for scenario in run.scenarios:
            for turn in scenario.turns:
                [exchange] = turn.model_call.exchanges
                request, response = exchange.request, exchange.response
                assert (exchange.attempt, request.method) == (1, "POST")
                assert request.url == "https://api.deepseek.com/v1/chat/completions"
                assert ("authorization", "not recorded") in request.headers
                assert request.defaulted is not None
                assert response is not None
                assert response.status == 200
                assert response.json_body["model"] == "deepseek-flash"
                assert exchange.timing.outside_ms == turn.model_call.timing.outside_ms


# -- secrets and the seeds' defects -------------------------------------------------


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_service_key_is_nowhere_in_the_file(chapter: str) -> None:
    data = live_file(chapter).read_bytes()
    assert b"primer-demo-key" not in data
    assert b"Bearer" not in data


def test_no_service_request_lists_sampling_parameters(runs: dict[str, ChapterRun]) -> None:
    attempts = [
        step
        for run in runs.values()
        for scenario in run.scenarios
        for turn in scenario.turns
        for tool in turn.tools
        for step in tool.steps
        if isinstance(step, Attempt) and step.request is not None
    ]
    assert len(attempts) == 6  # busy: 2, the order that timed out: 1, the two orders: 2, not found: 1
    for attempt in attempts:
        assert attempt.request is not None
        assert attempt.request.method == "GET"
        assert attempt.request.defaulted is None
        assert ("accept", "*/*") in attempt.request.headers
        assert ("authorization", "not recorded") in attempt.request.headers
    echoed = [a.response.json_body for a in attempts if a.response and a.response.json_body]
    assert echoed, "httpbin echoed the request headers back"
    assert all(body["headers"]["Authorization"] == "not recorded" for body in echoed)


# -- the book reads them as current, and they do not drift from the seeds ------------


@pytest.mark.slow
def test_the_book_shows_them_as_current_or_says_they_are_from_earlier_code(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for chapter in CHAPTERS:
        (docs / PUBLISHED_DIR).mkdir(parents=True, exist_ok=True)
        shutil.copy(live_file(chapter), docs / PUBLISHED_DIR / live_file(chapter).name)
    book = Book(docs, tmp_path / ".cache", settings=Settings())
    prepared = book.prepare()
    chapters = Chapters()
    for chapter in CHAPTERS:
        traces = prepared.traces(chapter)
        assert traces.live is not None
        # Stamped current when imported; any later edit of the code it depends on
        # makes it stale, which the page then says (and is true): both are right.
        current = traces.live.source_hash == chapters.fingerprint(chapter)
        assert traces.live_status.state == ("current" if current else "stale")
        if not current:
            assert "earlier" in traces.live_status.reason


@pytest.mark.slow
def test_re_importing_the_seeds_gives_the_committed_files_byte_for_byte(tmp_path: Path) -> None:
    # The committed hashes are stamped again: a later code change is staleness, not drift.
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--seeds", str(SEED_DIR), "--out", str(tmp_path), "--hashes-from", str(TRACES)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    for chapter in CHAPTERS:
        assert (tmp_path / live_file(chapter).name).read_bytes() == live_file(chapter).read_bytes()


def test_the_import_reads_only_fixtures_the_repository_holds_and_they_hold_no_secret() -> None:
    assert SEED_DIR.is_relative_to(ROOT / "tests" / "fixtures")
    for page in SEED_PAGES.values():
        text = (SEED_DIR / page).read_text(encoding="utf-8")
        assert "primer-demo-key" not in text
        assert "Bearer" not in text
