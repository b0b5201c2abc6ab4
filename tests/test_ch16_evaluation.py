"""Chapter 16: a scenario run many times (``primer.evaluate``), and the chapter's two evaluations.

The figures the page quotes (the pass rates, the characters, the estimate,
why a trial failed) are computed here from the runs, so a change that moves
them fails until the page says what the trace shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from primer.agent import Agent
from primer.chapters.ch16_evaluation import CHECK, TRIALS, a_flaky_model, same_script_every_time
from primer.clock import VirtualClock
from primer.errors import ChapterError
from primer.evaluate import (
    Evaluation,
    Trial,
    TrialResult,
    all_of,
    answer_contains,
    called,
    evaluation_of,
    repeated,
)
from primer.models.mock import MockModel, ask, call, say
from primer.runner import run_scenario
from primer.shop import shelf_price_of
from primer.trace import Ending, Message, ModelCall, ToolRun, Turn, Usage

ROOT = Path(__file__).resolve().parent.parent
PAGE = " ".join((ROOT / "docs" / "ch16_evaluation.md").read_text(encoding="utf-8").split())


def _trial(answer: str, tools: list[str]) -> Trial:
    call_ = ModelCall(kind="mock", context=[])
    turn = Turn(number=1, model_call=call_)
    turn.tools = [ToolRun(call_id=f"c{i}", name=name, message="") for i, name in enumerate(tools)]
    return Trial(1, [turn], [Message(role="ai", content=answer)], Ending(reason="no_tool_calls"))


def test_checks_say_why_a_trial_failed() -> None:
    check = all_of(called("price_of"), answer_contains("1.20"))
    assert check(_trial("Milk is 1.20.", ["price_of"])) is None
    assert check(_trial("Milk is 1.00.", [])) == "price_of was not called; the answer does not say 1.20"
    assert check(_trial("Milk is 1.20.", [])) == "price_of was not called"


def test_each_trial_starts_from_the_first_context() -> None:
    clock = VirtualClock()
    script = [ask(call("price_of", item="milk")), say("Milk is 1.20."), say("No idea.")]
    agent = Agent(model=MockModel(script, clock), tools=[shelf_price_of], clock=clock)
    context = [Message(role="system", content="s"), Message(role="human", content="Milk?")]
    ending = repeated(2, CHECK)(agent, context, 4)
    assert [len(t.model_call.context) for t in agent.turns] == [2, 4, 2]
    assert agent.turns[2].model_call.context == agent.turns[0].model_call.context
    assert ending.reason == "no_tool_calls"
    assert ending.detail is not None
    assert ending.detail.startswith("1 of 2 trials passed (50%)")
    assert context[-1].content == "No idea.", "the transcript is the last trial's"


def test_a_broken_trial_stops_the_evaluation_with_its_ending() -> None:
    clock = VirtualClock()
    agent = Agent(model=MockModel([say("Milk is 1.20.")], clock, scenario="two"), tools=[], clock=clock)
    context = [Message(role="system", content="s"), Message(role="human", content="Milk?")]
    ending = repeated(2, answer_contains("1.20"))(agent, context, 4)
    assert ending.reason == "scenario_error"
    assert ending.detail is not None
    assert ending.detail.startswith("trial 2 of 2: The mock model of two was asked for reply 2")


def test_repeated_needs_a_trial() -> None:
    with pytest.raises(ChapterError, match="at least one trial"):
        repeated(0, CHECK)


def test_tokens_are_the_providers_when_it_counted_every_call() -> None:
    def result(tokens: int | None) -> TrialResult:
        return TrialResult(1, True, None, 1, 40, tokens, 5 if tokens else None, 128 if tokens else None)

    counted = Evaluation([result(300), result(320)])
    assert counted.tokens("input") == 620
    assert counted.summary() == "2 of 2 trials passed (100%) · 620 tokens in, 10 out, counted by the provider " + (
        "(256 of the input cached)"
    )
    partly = Evaluation([result(300), result(None)])
    assert partly.tokens("input") is None
    assert "about 20 tokens (estimated at 4 characters a token" in partly.summary()
    assert Evaluation([]).pass_rate == 0.0


def test_a_live_trials_usage_is_added_up() -> None:
    clock = VirtualClock()
    agent = Agent(model=MockModel([say("Milk is 1.20.")], clock), tools=[], clock=clock)
    context = [Message(role="system", content="s"), Message(role="human", content="Milk?")]

    def counted(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        turn = agent.ask(context)
        turn.model_call.usage = Usage(input_tokens=400, output_tokens=9, cached_tokens=256)
        return Ending(reason="no_tool_calls")

    ending = repeated(1, answer_contains("1.20"), counted)(agent, context, 4)
    assert ending.detail == (
        "1 of 1 trials passed (100%) · 400 tokens in, 9 out, counted by the provider (256 of the input cached)"
    )
    (note,) = [n for n in agent.turns[0].model_call.notes if n.label == "trial 1 of 1"]
    assert note.data == {
        "passed": True,
        "turns": 1,
        "characters_sent": 6,
        "input_tokens": 400,
        "output_tokens": 9,
        "cached_tokens": 256,
    }


# --- the chapter's stories ------------------------------------------------------------------


def test_one_script_five_times_passes_five_times_and_the_page_says_why() -> None:
    run = run_scenario(same_script_every_time)
    evaluation = evaluation_of(run)
    assert len(run.turns) == 2 * TRIALS
    assert (evaluation.passed, len(evaluation.trials)) == (5, 5)
    assert run.ending.detail == evaluation.summary()
    assert f"`{evaluation.summary()}`" in PAGE
    first = run.turns[1].model_call.notes[-1]
    assert first.label == "trial 1 of 5"
    assert f'`trial 1 of 5 {{"passed": true, "turns": 2, "characters_sent": {first.data["characters_sent"]}}}`' in PAGE
    assert all(t.input_tokens is None for t in evaluation.trials), "the mock model counts no tokens"
    assert 'CHECK = all_of(called("price_of"), answer_contains("1.20"))' in PAGE, "the page shows the check as written"


def test_a_flaky_script_passes_three_of_five_for_the_reasons_the_page_gives() -> None:
    run = run_scenario(a_flaky_model)
    evaluation = evaluation_of(run)
    assert [t.passed for t in evaluation.trials] == [True, False, True, False, True]
    assert f"`{evaluation.passed} of {len(evaluation.trials)} trials passed ({evaluation.pass_rate:.0%})`" in PAGE
    second, fourth = evaluation.trials[1], evaluation.trials[3]
    assert second.turns == 1
    assert f'"why": "{second.why}"' in PAGE
    assert f'"why": "{fourth.why}"' in PAGE
    # The turns the page sends the reader to.
    assert run.turns[2].model_call.notes[-1].label == "trial 2 of 5"
    assert [n.label for n in run.turns[6].model_call.notes if n.label.startswith("trial")] == ["trial 4 of 5"]
    assert [t.arguments for t in run.turns[5].tools] == [{"item": "butter"}]
    assert f"sent {second.characters_sent} characters" in PAGE
    assert f"sent {evaluation.trials[0].characters_sent} each" in PAGE
