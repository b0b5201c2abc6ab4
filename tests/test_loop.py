"""The two loops: when they stop, and what they run before stopping.

Each test drives a real ``Agent`` with the scripted ``MockModel`` and real
tools off the shelf list; what is asserted is the ending and which calls were
answered, the things a loop can get wrong.
"""

from __future__ import annotations

from typing import Any

import pytest

from primer.agent import Agent
from primer.clock import VirtualClock
from primer.loop import Loop, until_answer, until_no_tool_calls
from primer.models.mock import MockModel, MockReply, ask, call, say
from primer.shop import lowest_stock_item, shelf_price_of
from primer.tool_choice import named
from primer.trace import Ending, Message

TOOLS = [lowest_stock_item, shelf_price_of]


def run(loop: Loop, replies: list[MockReply], settings: dict[str, Any] | None = None) -> tuple[Agent, Ending]:
    clock = VirtualClock()
    agent = Agent(model=MockModel(replies, clock, scenario="test"), tools=TOOLS, clock=clock, settings=settings or {})
    context = [Message(role="system", content="S"), Message(role="human", content="How much is butter?")]
    return agent, loop(agent, context, 4)


def test_until_answer_runs_tool_calls_that_come_with_finish_reason_stop() -> None:
    # What OpenAI-compatible servers send when tool_choice names a function.
    agent, ending = run(until_answer, [ask(call("price_of", item="butter"), finish_reason="stop"), say("3.10")])

    assert ending == Ending(reason="answer_received", finish_reason="stop")
    first, second = agent.turns
    assert first.model_call.finish_reason == "stop"
    assert [run.result for run in first.tools] == ["3.10"]
    # Every call was answered before the next request: the context is one a provider accepts.
    reply = first.model_call.reply
    assert reply is not None
    sent = second.model_call.context
    assert (sent[-1].role, sent[-1].tool_call_id) == ("tool", reply.tool_calls[0].id)


def test_until_answer_still_stops_at_stop_without_tool_calls_and_at_length_whatever_it_asked() -> None:
    agent, ending = run(until_answer, [say("3.10")])
    assert (ending.reason, len(agent.turns)) == ("answer_received", 1)
    # A reply cut off by the token limit is not an answer, and its calls may be cut off too: not run.
    cut_calls = MockReply(calls=(call("price_of", item="butter"),), finish_reason="length")
    agent, ending = run(until_answer, [cut_calls])
    assert ending.reason == "tokens_exhausted"
    assert agent.turns[0].tools == []


@pytest.mark.parametrize("loop", [until_answer, until_no_tool_calls])
@pytest.mark.parametrize("choice", ["required", named("price_of")])
def test_a_forced_tool_choice_is_relaxed_to_auto_after_its_turn(loop: Loop, choice: Any) -> None:
    agent, ending = run(loop, [ask(call("price_of", item="butter")), say("Butter is 3.10.")], {"tool_choice": choice})

    assert ending.reason in ("answer_received", "no_tool_calls")
    assert [turn.model_call.settings["tool_choice"] for turn in agent.turns] == [choice, "auto"]
    assert agent.settings["tool_choice"] == "auto"


@pytest.mark.parametrize("choice", ["auto", "none"])
def test_a_choice_that_forces_nothing_is_sent_unchanged_on_every_turn(choice: str) -> None:
    replies = [ask(call("price_of", item="butter")), say("Butter is 3.10.")] if choice == "auto" else [say("No.")]
    agent, _ = run(until_answer, replies, {"tool_choice": choice, "max_tokens": 50})
    assert all(turn.model_call.settings == {"tool_choice": choice, "max_tokens": 50} for turn in agent.turns)
