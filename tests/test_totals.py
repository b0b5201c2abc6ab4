"""Totals a reader expects: tokens per scenario and chapter where counted, trials grouped with their verdicts."""

from __future__ import annotations

import re
from pathlib import Path

from primer.book._render import render_traces
from primer.book._source import ChapterTraces, LiveStatus
from primer.cli import summary_lines
from primer.replay import read_trace
from primer.runner import run_chapter
from primer.summary import chapter_line, scenario_line, tokens_text, turn_line

TRACES = Path(__file__).resolve().parent.parent / "docs" / "traces"


def test_live_lines_add_up_the_tokens_the_provider_counted() -> None:
    live = read_trace(TRACES / "ch09_who_retries.live.json")
    usages = [t.model_call.usage for s in live.scenarios for t in s.turns]
    assert all(u is not None for u in usages)
    tokens_in = sum(u.input_tokens for u in usages if u)
    cached = sum(u.cached_tokens or 0 for u in usages if u)
    assert f"{tokens_in:,} in ({cached:,} cached) / " in chapter_line(live)
    busy = live.scenario("service_is_busy")
    line = scenario_line(busy)
    assert re.search(r"· 2 turns · [\d,]+ in \([\d,]+ cached\) / [\d,]+ out \([\d,]+ reasoning\) · ended:", line), line
    # A mock run counts no tokens: its lines say nothing of them.
    mock = run_chapter("ch09_who_retries")
    assert " in " not in chapter_line(mock)
    assert tokens_text([None, None]) is None


def test_an_evaluations_trials_are_grouped_with_their_verdicts_and_its_pass_rate_in_its_line() -> None:
    run = run_chapter("ch16_evaluation")
    flaky = run.scenario("a_flaky_model")
    assert "· 3 of 5 trials passed (60%) · ended:" in scenario_line(flaky)
    html = render_traces(ChapterTraces("ch16_evaluation", run, None, LiveStatus("missing")))
    trials = re.findall(
        r'<div class="tr-d tr-trial" id="ch16_evaluation-a_flaky_model-mock-trial-\d"><div class="tr-sum">([^<]+)', html
    )
    assert trials[1] == "trial 2 of 5 · failed: price_of was not called; the answer does not say 1.20 · 1 turn"
    assert [t.split(" · ")[1].split(":")[0] for t in trials] == ["passed", "failed", "passed", "failed", "passed"]
    # Every turn sits in its trial; a run that is not an evaluation is not grouped.
    assert sum(int(t.rsplit(" · ", 1)[1].split()[0]) for t in trials) == len(flaky.turns)
    plain = render_traces(
        ChapterTraces("ch09_who_retries", run_chapter("ch09_who_retries"), None, LiveStatus("missing"))
    )
    assert "tr-trial" not in plain
    # The terminal prints the same lines, each over its trial's turns.
    printed = summary_lines(run)
    start = printed.index(scenario_line(flaky))
    at = [printed.index(f"  {trial}", start) for trial in trials]
    assert at == sorted(at)
    assert printed[at[1] + 1] == "    " + turn_line(flaky.turns[2])
