"""Chapter 15: workflows built from the same loop (``primer.workflows``), and the chapter's stories.

The shapes run on real agents with the mock model; each test checks the
path the code took (which step ran, in which turn, with which tools and
context), how it ended, and what its ending's detail says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from primer.agent import Agent
from primer.chapters.ch15_workflows import (
    ROUTES,
    label_reviewed_until_right,
    routed_to_orders,
    router_answers_no_route,
)
from primer.clock import VirtualClock
from primer.errors import ChapterError
from primer.loop import until_answer
from primer.models.mock import MockModel, MockReply, cut, say
from primer.runner import run_scenario
from primer.shop import shelf_price_of
from primer.trace import Ending, Message, ScenarioRun
from primer.workflows import STEP_NOTE, Step, chain, evaluator_optimizer, router_prompt, routing

ROOT = Path(__file__).resolve().parent.parent
PAGE = " ".join((ROOT / "docs" / "ch15_workflows.md").read_text(encoding="utf-8").split())

WRITER = Step(name="writer", system="Write.", tools=[shelf_price_of])
CHECKER = Step(name="checker", system="Check. Answer PASS or FIX: what to change.")


def run(loop: object, replies: list[MockReply], question: str = "Do it.") -> tuple[Ending, Agent, list[Message]]:
    clock = VirtualClock()
    agent = Agent(model=MockModel(replies, clock), tools=[], clock=clock)
    context = [Message(role="system", content="not sent"), Message(role="human", content=question)]
    ending = loop(agent, context, 4)  # type: ignore[operator]
    return ending, agent, context


def steps(agent: Agent) -> list[str]:
    return [n.data["step"] for t in agent.turns for n in t.model_call.notes if n.label == STEP_NOTE]


# --- the library ----------------------------------------------------------------------------


def test_a_chain_feeds_each_answer_to_the_next_step() -> None:
    first = Step(name="first", system="One.")
    second = Step(name="second", system="Two.")
    ending, agent, context = run(chain(first, second), [say("middle"), say("last")])
    assert ending == Ending(reason="no_tool_calls", detail="chained first → second")
    assert steps(agent) == ["first", "second"]
    assert agent.turns[1].model_call.context == [
        Message(role="system", content="Two."),
        Message(role="human", content="middle"),
    ]
    assert context[-1].content == "last", "the transcript is the last step's context"
    assert all(m.content != "not sent" for t in agent.turns for m in t.model_call.context)


def test_routing_sends_the_question_to_the_step_the_router_names() -> None:
    ending, agent, _ = run(routing(ROUTES, default="other"), [say(" Prices. "), say("It is 1.20.")], "Milk?")
    assert ending.detail == "routed to prices"
    assert steps(agent) == ["router", "prices"]
    router, prices = (t.model_call for t in agent.turns)
    assert router.tools == []
    assert router.context[0].content == router_prompt(ROUTES)
    assert [t.name for t in prices.tools] == ["price_of"]
    assert prices.context[-1] == Message(role="human", content="Milk?")


def test_routing_to_a_default_that_is_no_route_is_an_error_naming_the_routes() -> None:
    with pytest.raises(ChapterError, match=r"routing\(default='nowhere'\) names no route. The routes are: orders"):
        routing(ROUTES, default="nowhere")


def test_a_step_that_breaks_stops_the_workflow_with_its_ending() -> None:
    careful = {"other": Step(name="other", system="Answer.", loop=until_answer)}
    ending, _, _ = run(routing(careful, default="other"), [say("other"), cut()])
    assert (ending.reason, ending.finish_reason) == ("tokens_exhausted", "length")
    assert ending.detail == "step other ended tokens_exhausted (finish_reason = length)"
    ran_out, _, _ = run(routing(ROUTES, default="other"), [say("other")])
    assert ran_out.reason == "scenario_error"
    assert ran_out.detail is not None
    assert ran_out.detail.startswith("step other ended scenario_error: The mock model of this scenario was asked")


def test_a_step_can_use_another_loop() -> None:
    answering = Step(name="answering", system="Answer.", loop=until_answer)
    ending, _, _ = run(chain(answering), [say("Done.")])
    assert (ending.reason, ending.finish_reason) == ("answer_received", "stop")


def test_the_writer_revises_until_the_evaluator_passes_or_the_rounds_run_out() -> None:
    ending, agent, context = run(
        evaluator_optimizer(WRITER, CHECKER, rounds=2),
        [say("draft 1"), say("FIX: shorter"), say("draft 2"), say("FIX: shorter still")],
    )
    assert ending.detail == "not accepted in 2 rounds: the last draft stands"
    assert steps(agent) == ["writer", "checker", "writer", "checker"]
    assert context[-1].content == "draft 2"
    # The writer keeps its own context: the feedback comes after its first draft.
    second = agent.turns[2].model_call.context
    assert [m.role for m in second] == ["system", "human", "ai", "human"]
    assert second[-1].content == "A reviewer read your draft and said:\nFIX: shorter\n\nWrite it again."
    with pytest.raises(ChapterError, match="at least one round"):
        evaluator_optimizer(WRITER, CHECKER, rounds=0)


def test_chain_needs_a_step() -> None:
    with pytest.raises(ChapterError, match="at least one step"):
        chain()


# --- the chapter's stories ------------------------------------------------------------------


def _detail(scenario: ScenarioRun) -> str:
    return scenario.ending.detail or ""


def test_routed_to_orders_offers_the_orders_step_only_its_tool() -> None:
    scenario = run_scenario(routed_to_orders)
    router, orders, answer = (t.model_call for t in scenario.turns)
    assert router.reply is not None
    assert router.reply.content == "orders"
    assert "- orders: the customer wants to order something" in (router.context[0].content or "")
    assert router.tools == []
    assert [t.name for t in orders.tools] == ["place_order"]
    (order,) = scenario.turns[1].tools
    assert order.failure is None
    assert _detail(scenario) == "routed to orders"
    assert '`ended {"reason": "no_tool_calls", "detail": "routed to orders"}`' in PAGE
    assert '`workflow step {"workflow": "routing", "step": "router"}`' in PAGE
    assert router.notes[-1].data == {"workflow": "routing", "step": "router"}
    assert answer.context == scenario.transcript[: len(answer.context)]


def test_an_answer_that_names_no_route_goes_to_the_default() -> None:
    scenario = run_scenario(router_answers_no_route)
    assert scenario.turns[0].model_call.reply is not None
    assert scenario.turns[0].model_call.reply.content == "delivery"
    assert scenario.turns[1].model_call.tools == []
    detail = _detail(scenario)
    assert detail == "routed to other: the router answered ['delivery'], which names no route, so the default"
    assert f"`{detail}`" in PAGE


def test_the_label_is_revised_once_and_passes_in_round_two() -> None:
    scenario = run_scenario(label_reviewed_until_right)
    assert len(scenario.turns) == 5
    assert [n.data["step"] for t in scenario.turns for n in t.model_call.notes if n.label == STEP_NOTE] == [
        "writer",
        "evaluator",
        "writer",
        "writer",
        "evaluator",
    ]
    feedback = scenario.turns[2].model_call.context[-1]
    assert feedback.role == "human"
    assert "FIX: the label gives no price." in (feedback.content or "")
    assert [t.name for t in scenario.turns[2].tools] == ["price_of"]
    assert (scenario.turns[3].model_call.reply.content or "").endswith("3.10")  # type: ignore[union-attr]
    assert _detail(scenario) == "accepted in round 2"
    assert "`accepted in round 2`" in PAGE
    assert "`FIX: the label gives no price.`" in PAGE
