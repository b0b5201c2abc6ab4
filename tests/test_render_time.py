"""Time where it was spent: the timeline's legend gives each party its own time."""

from __future__ import annotations

import re

import pytest

from primer.book._render import render_traces
from primer.book._source import ChapterTraces, LiveStatus
from primer.runner import run_chapter
from primer.spent import before, segments, totals


def test_a_mock_stream_is_the_mock_models_time_not_the_librarys() -> None:
    run = run_chapter("ch11_streaming", only="words_as_they_come")
    scenario = run.scenarios[0]
    spent = totals(s for t in scenario.turns for s in segments(t))
    assert spent["provider"] == 1150.0  # its last event, on the virtual clock
    # The library's share is the run's real time: milliseconds, tens on a loaded machine; never the stream's 1150.
    assert spent["library"] < 200
    assert abs(sum(spent.values()) - sum(t.timing.total_ms for t in scenario.turns)) < 0.2
    html = render_traces(ChapterTraces("ch11_streaming", run, None, LiveStatus("missing")))
    legend = re.search(r'<span class="tr-tl-legend">(.*?)</span>\n</div>', html, re.S)
    assert legend is not None
    text = re.sub(r"<[^>]+>", "", legend[1])
    assert "mock model 1150.0ms" in text
    assert "model provider" not in text
    # The terminal gives the same parties the same time, under the scenario's line.
    from primer.cli import summary_lines

    line = summary_lines(run)[3]
    assert line.startswith("  time: mock model 1150.0ms · library ")
    assert f"library {spent['library']:.1f}ms" in line


def test_a_mock_run_without_a_stream_spends_its_time_in_the_library() -> None:
    run = run_chapter("ch09_who_retries", only="service_is_busy")
    turn = run.scenarios[0].turns[0]
    assert [s.kind for s in segments(turn)][:1] == ["library"]


def test_a_run_rebuilt_from_the_wire_gives_the_time_between_its_calls_to_the_agents_code() -> None:
    # pydantic-ai's own code between its calls was neither drawn nor named: a turn of 27 ms painted a third
    # model and two thirds service, from 0.6 ms of them.
    run = run_chapter("ch18_three_ways")
    spent_in: dict[str, dict[str, float]] = {}
    for name in ("pydantic_ai", "agents_sdk"):
        scenario = run.scenario(name)
        for turn in scenario.turns:
            inside = turn.model_call.timing.total_ms + sum(tool.timing.total_ms for tool in turn.tools)
            assert turn.code_ms == pytest.approx(turn.timing.total_ms - inside, abs=0.002)
            # The stretches tile the whole turn: the bar's colours are each party's share of it.
            assert sum(s.ms for s in segments(turn)) == pytest.approx(turn.timing.total_ms, abs=0.01)
        spent = spent_in[name] = totals(s for t in scenario.turns for s in segments(t))
        assert spent["code"] > spent["provider"]  # a framework's own work outweighs a scripted reply
    # primer's own loop has no such part: its moment between calls is its library's, and tiny.
    assert all(turn.code_ms is None for turn in run.scenario("own_loop").turns)
    html = render_traces(ChapterTraces("ch18_three_ways", run, None, LiveStatus("missing")), "pydantic_ai")
    legend = re.search(r'<span class="tr-tl-legend">(.*?)</span>\n</div>', html, re.S)
    assert legend is not None
    # And the time before its first call (building the agent, importing pydantic-ai if this process had not).
    code = spent_in["pydantic_ai"]["code"] + getattr(before(run.scenario("pydantic_ai")), "ms", 0.0)
    assert _legend(legend[1])["agent code"] == pytest.approx(code, abs=0.051)
    assert "var(--tr-code)" in html
    from primer.cli import summary_lines

    assert any("· agent code " in line for line in summary_lines(run))


def test_the_time_before_a_frameworks_first_call_is_its_agents_code_drawn_first() -> None:
    # pydantic-ai's first run in a process imports it before its first call: 1.4 s of a 1.46 s scenario
    # that its timeline neither drew nor named (its legend summed to 64 ms).
    run = run_chapter("ch18_three_ways", only="pydantic_ai")
    scenario = run.scenarios[0]
    # As a first run in a process finds it: a second before the first call (shifted, so the test does not
    # depend on whether this process imported pydantic-ai already).
    offset = 1000.0 + (scenario.turns[0].timing.start_ms or 0.0)
    for turn in scenario.turns:
        turn.timing = turn.timing.model_copy(update={"start_ms": (turn.timing.start_ms or 0.0) + 1000.0})
    total = scenario.timing.total_ms + 1000.0
    scenario.timing = scenario.timing.model_copy(update={"total_ms": total})
    assert before(scenario) == ("code", pytest.approx(offset))
    html = render_traces(ChapterTraces("ch18_three_ways", run, None, LiveStatus("missing")))
    bar = re.search(r'<span class="tr-tl-bar">\s*<span class="tr-tl-before" ([^>]*)>', html)
    assert bar is not None, "drawn first, before the turns"
    assert "var(--tr-code)" in bar[1]
    assert f"before the first turn · {offset:.1f}ms: agent code" in bar[1]
    legend = re.search(r'<span class="tr-tl-legend">(.*?)</span>\n</div>', html, re.S)
    assert legend is not None
    shown = _legend(legend[1])
    code = offset + sum(turn.code_ms or 0.0 for turn in scenario.turns)
    assert shown["agent code"] == pytest.approx(code, abs=0.051)
    # The legend now accounts for the scenario's time, but for what follows its last call.
    assert sum(shown.values()) == pytest.approx(total, abs=max(1.0, total * 0.02))
    from primer.cli import summary_lines

    lines = summary_lines(run)
    said = [float(found[1]) for line in lines if (found := re.search(r"agent code ([0-9.]+)ms", line))]
    assert said == [pytest.approx(code, abs=0.051)]  # the time line: the legend's
    # The terminal names the stretch on its own line, before the first turn's, as the page draws it first.
    first = next(index for index, line in enumerate(lines) if line.startswith("  before the first turn · "))
    assert lines[first] == f"  before the first turn · {offset:.1f}ms: agent code"
    assert lines[first + 1].startswith("  turn 1 · ")


def _legend(html: str) -> dict[str, float]:
    """A timeline legend's figures, by party."""
    return {name: float(ms) for name, ms in re.findall(r'class="tr-key [^"]*">([a-z ]+) ([0-9.]+)ms<', html)}


def test_primers_own_loop_has_nothing_before_its_first_call() -> None:
    run = run_chapter("ch18_three_ways", only="own_loop")
    assert before(run.scenarios[0]) is None
    from primer.cli import summary_lines

    assert not any(line.startswith("  before turn") for line in summary_lines(run))
    assert "tr-tl-before" not in render_traces(ChapterTraces("ch18_three_ways", run, None, LiveStatus("missing")))
