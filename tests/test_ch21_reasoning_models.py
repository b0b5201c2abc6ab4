"""Chapter 21: reasoning tokens in usage, reasoning in a stream, a limit spent thinking (``primer.reasoning``).

The figures the page quotes are computed here from the runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from primer.chapters.ch21_reasoning_models import (
    limit_spent_thinking,
    reasoning_streams_first,
    thinks_a_little,
    thinks_hard,
)
from primer.errors import ChapterError
from primer.models.mock import MockModel, say
from primer.reasoning import Thinking, effort, thinking
from primer.runner import run_scenario
from primer.streaming import Assembler
from primer.trace import ScenarioRun, Usage

ROOT = Path(__file__).resolve().parent.parent
PAGE = " ".join((ROOT / "docs" / "ch21_reasoning_models.md").read_text(encoding="utf-8").split())
NOTE = "usage scripted for the mock model"


def _usages(run: ScenarioRun) -> list[Usage]:
    return [t.model_call.usage for t in run.turns if t.model_call.usage is not None]


def _note(run: ScenarioRun, turn: int) -> dict[str, object]:
    (data,) = [n.data for n in run.turns[turn - 1].model_call.notes if n.label == NOTE]
    return data


def test_reasoning_tokens_are_part_of_the_output_and_named_as_the_api_names_them() -> None:
    low, high = run_scenario(thinks_a_little), run_scenario(thinks_hard)
    assert low.settings == {"reasoning_effort": "low"}
    assert high.settings == {"reasoning_effort": "high"}
    assert _note(low, 1) == {
        "prompt_tokens": 182,
        "completion_tokens": 58,
        "total_tokens": 240,
        "completion_tokens_details": {"reasoning_tokens": 16},
    }
    assert "`182 in / 58 out`" in PAGE
    assert '`"completion_tokens": 58`' in PAGE
    assert '`"completion_tokens_details": {"reasoning_tokens": 16}`' in PAGE
    assert low.turns[0].model_call.reply.reasoning == "I need both prices."  # type: ignore[union-attr]
    assert "`reasoning: I need both prices.`" in PAGE
    low_out = sum(u.output_tokens for u in _usages(low))
    high_out = sum(u.output_tokens for u in _usages(high))
    high_reasoning = sum(u.reasoning_tokens or 0 for u in _usages(high))
    assert f"{high_out:,} output tokens against {low_out}" in PAGE
    assert f"{high_reasoning:,} of them reasoning" in PAGE
    for usage in _usages(high):
        assert f"`{usage.output_tokens} out`" in PAGE
        assert f'`"reasoning_tokens": {usage.reasoning_tokens}`' in PAGE
    # The same calls and the same answer, whatever the effort.
    assert low.transcript[-1].content == high.transcript[-1].content


def test_a_stream_brings_the_reasoning_first_and_the_counts_last() -> None:
    run = run_scenario(reasoning_streams_first)
    call = run.turns[0].model_call
    assert call.stream is not None
    events = call.stream.events
    kinds = [
        next(iter(e.data["choices"][0]["delta"].keys() - {"role"}), None) if e.data and e.data["choices"] else None
        for e in events
    ]
    first_answer = kinds.index("content")
    assert set(kinds[:first_answer]) == {"reasoning_content"}
    assert (events[0].at_ms, events[first_answer].at_ms) == (800.0, 1150.0)
    assert events[first_answer].data["choices"][0]["delta"]["content"] == "Two bottles, "
    assert "from `800.0ms`" in PAGE
    assert "`1150.0ms`" in PAGE
    assert "`Two bottles,`" in PAGE
    assert call.stream.first_token_ms == 800.0
    assert "`first token 800.0ms`" in PAGE
    last = events[-2]
    assert last.data["choices"] == []
    assert last.data["usage"]["completion_tokens_details"] == {"reasoning_tokens": 40}
    assert events[-1].done
    assert call.reply is not None
    assert call.reply.content == "Two bottles, with 1.15 left over."
    assert call.reply.reasoning == "5.00 - 1.45 = 3.55. Three bottles cost 3.60: too much. Two cost 2.40."


def test_the_assembler_puts_a_mock_stream_back_together() -> None:
    # The same library code that assembles a live stream reads the mock's chunks into the same reply.
    run = run_scenario(reasoning_streams_first)
    stream = run.turns[0].model_call.stream
    assert stream is not None
    assembler = Assembler()
    for event in stream.events:
        if event.data is not None:
            assembler.add(event.data)
    completion = assembler.completion()
    assert completion["usage"]["completion_tokens_details"] == {"reasoning_tokens": 40}
    message = completion["choices"][0]["message"]
    assert message["content"] == "Two bottles, with 1.15 left over."
    assert message["reasoning_content"] == run.turns[0].model_call.reply.reasoning  # type: ignore[union-attr]


def test_a_limit_spent_on_reasoning_leaves_the_reply_empty_and_the_ending_says_why() -> None:
    run = run_scenario(limit_spent_thinking)
    (turn,) = run.turns
    assert turn.model_call.finish_reason == "length"
    assert turn.model_call.reply is not None
    assert not turn.model_call.reply.content
    assert thinking(turn.model_call.usage) == Thinking(reasoning=64, answer=0)
    assert run.ending.reason == "tokens_exhausted"
    assert run.ending.detail == "all 64 output tokens went to reasoning: the reply is empty"
    assert f"`{run.ending.detail}`" in " ".join(PAGE.split())
    assert "`61 in / 64 out`" in PAGE


def test_effort_is_checked_and_thinking_split() -> None:
    assert effort("minimal", stream=True) == {"reasoning_effort": "minimal", "stream": True}
    with pytest.raises(ChapterError, match="use one of minimal, low, medium, high"):
        effort("maximal")
    assert thinking(Usage(input_tokens=1, output_tokens=10)) is None
    split = thinking(Usage(input_tokens=1, output_tokens=10, reasoning_tokens=4))
    assert split == Thinking(reasoning=4, answer=6)
    assert split.share == 0.4


def test_a_mock_reply_without_usage_reports_none() -> None:
    record = MockModel([say("Hi.")]).complete([], [], {})
    assert record.usage is None
    assert [n.label for n in record.notes if n.label == NOTE] == []
