"""Counting what each turn sends: primer.context_cost on real runs and hand-made traces."""

from __future__ import annotations

import doctest

import primer.context_cost
from primer.chapters.ch04_context_grows import long_tool_answer, one_price_per_turn
from primer.chapters.ch06_several_calls import three_prices_at_once
from primer.context_cost import context_cost
from primer.runner import run_scenario
from primer.trace import Ending, Message, ModelCall, ScenarioRun, Turn, Usage


def test_one_call_per_turn_sends_two_more_messages_each_turn() -> None:
    cost = context_cost(run_scenario(one_price_per_turn))
    assert [t.messages for t in cost.turns] == [2, 4, 6, 8]
    assert [t.new_messages for t in cost.turns] == [2, 2, 2, 2]
    assert cost.messages_sent == 20
    assert cost.transcript_messages == 9
    assert cost.input_tokens is None  # a mock run has no provider count


def test_several_calls_in_one_reply_send_fewer_messages_over_the_run() -> None:
    batched = context_cost(run_scenario(three_prices_at_once))
    assert [t.messages for t in batched.turns] == [2, 6]
    assert [t.new_messages for t in batched.turns] == [2, 4]
    assert batched.messages_sent < context_cost(run_scenario(one_price_per_turn)).messages_sent


def test_a_long_tool_answer_is_counted_again_in_every_later_turn() -> None:
    run = run_scenario(long_tool_answer)
    report = run.turns[0].tools[0].result or ""
    cost = context_cost(run)
    growth = [after.characters - before.characters for before, after in zip(cost.turns, cost.turns[1:], strict=False)]
    assert growth[0] >= len(report)  # turn 2 carries the report (and the call that asked for it)
    assert all(g < len(report) for g in growth[1:])  # later turns add little, but resend it all
    assert cost.characters_sent == sum(t.characters for t in cost.turns)


def _call(messages: int, tokens: int | None) -> ModelCall:
    return ModelCall(
        kind="live",
        context=[Message(role="human", content="x" * 10)] * messages,
        usage=Usage(input_tokens=tokens, output_tokens=1) if tokens is not None else None,
    )


def test_input_tokens_are_summed_only_when_every_turn_has_them() -> None:
    def scenario(*tokens: int | None) -> ScenarioRun:
        turns = [Turn(number=n + 1, model_call=_call(2 * (n + 1), t)) for n, t in enumerate(tokens)]
        return ScenarioRun(name="s", mode="live", turns=turns, ending=Ending(reason="no_tool_calls"))

    assert context_cost(scenario(100, 150)).input_tokens == 250
    assert context_cost(scenario(100, None)).input_tokens is None
    assert context_cost(scenario()).input_tokens is None
    assert [t.characters for t in context_cost(scenario(1, 1)).turns] == [20, 40]


def test_the_module_example_holds() -> None:
    result = doctest.testmod(primer.context_cost)
    assert result.attempted > 0
    assert result.failed == 0
