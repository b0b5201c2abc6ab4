"""Time where it was spent: the timeline's legend gives each party its own time."""

from __future__ import annotations

import re

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
