"""Time where it was spent: the timeline's legend gives each party its own time."""

from __future__ import annotations

import re

import pytest

from primer.book._render import render_traces
from primer.book._source import ChapterTraces, LiveStatus
from primer.runner import run_chapter
from primer.spent import segments, totals


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
    text = " ".join(re.sub(r"<[^>]+>", "", legend[1]).split())
    assert f"agent code {spent_in['pydantic_ai']['code']:.1f}ms" in text
    assert "var(--tr-code)" in html
    from primer.cli import summary_lines

    assert any("· agent code " in line for line in summary_lines(run))
