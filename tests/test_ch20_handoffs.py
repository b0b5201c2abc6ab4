"""Chapter 20: a triage agent hands the conversation to a specialist (``primer.handoff``).

What the page says the trace shows: whose each call is, what crossed at the
handoff (the history, or only the brief), and who answered.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from primer.chapters.ch20_handoffs import (
    HANDOFFS,
    ORDERS,
    TRIAGE,
    handed_over_with_a_brief,
    handed_over_with_the_history,
    triage_answers_itself,
)
from primer.errors import ChapterError
from primer.handoff import AGENT_NOTE, HANDOFF_NOTE, Handoff, handoff_tool, with_handoffs
from primer.runner import run_scenario
from primer.trace import ScenarioRun

ROOT = Path(__file__).resolve().parent.parent
PAGE = " ".join((ROOT / "docs" / "ch20_handoffs.md").read_text(encoding="utf-8").split())


def _notes(run: ScenarioRun, label: str) -> list[dict[str, object] | None]:
    found = []
    for turn in run.turns:
        data = [n.data for n in turn.model_call.notes if n.label == label]
        found.append(data[0] if data else None)
    return found


def test_the_whole_history_crosses_under_the_specialists_own_system_prompt() -> None:
    run = run_scenario(handed_over_with_the_history)
    assert _notes(run, AGENT_NOTE) == [{"agent": "triage"}, {"agent": "orders"}, {"agent": "orders"}]
    assert _notes(run, HANDOFF_NOTE) == [None, {"from": "triage", "carries": "history", "messages": 3}, None]
    first, second = run.turns[0].model_call, run.turns[1].model_call
    assert [t.name for t in first.tools] == ["transfer_to_orders", "transfer_to_prices"]
    assert first.tools[0].description == (
        "Hand the conversation to the orders agent: the customer wants to order something."
    )
    assert run.turns[0].tools[0].result == "transferred to orders"
    assert [t.name for t in second.tools] == ["place_order"]
    assert second.context[0].content == ORDERS.system
    assert [m.role for m in second.context] == ["system", "human", "ai", "tool"]
    assert second.context[1] == first.context[1], "the customer's own words crossed"
    assert second.context[2].tool_calls[0].name == "transfer_to_orders"
    assert TRIAGE.system not in [m.content for m in second.context]
    assert run.ending.detail == "answered by orders"
    for quoted in (
        '`agent {"agent": "triage"}`',
        f"`{first.tools[0].description}`",
        '`handed over {"from": "triage", "carries": "history", "messages": 3}`',
        "`answered by orders`",
        "`transferred to orders`",
    ):
        assert quoted in PAGE


def test_a_brief_is_all_the_specialist_sees() -> None:
    run = run_scenario(handed_over_with_a_brief)
    declared = {t.name: t for t in run.turns[0].model_call.tools}
    assert list(declared["transfer_to_prices"].parameters["properties"]) == ["brief"]
    assert declared["transfer_to_prices"].description.endswith("It sees only your brief, not the conversation.")
    assert list(declared["transfer_to_orders"].parameters["properties"]) == []
    assert _notes(run, HANDOFF_NOTE)[1] == {"from": "triage", "carries": "brief", "messages": 1}
    context = run.turns[1].model_call.context
    assert [(m.role, m.content) for m in context] == [
        ("system", "You answer questions about prices. Look each price up; never guess."),
        ("human", "What is the current price of butter?"),
    ]
    assert not any("daughter" in (m.content or "") for m in context)
    assert run.turns[1].tools[0].result == "3.10"
    assert run.ending.detail == "answered by prices"
    assert '`handed over {"from": "triage", "carries": "brief", "messages": 1}`' in PAGE
    assert "`brief=What is the current price of butter?`" in PAGE


def test_triage_answers_what_no_specialist_is_for() -> None:
    run = run_scenario(triage_answers_itself)
    assert len(run.turns) == 1
    assert run.turns[0].tools == []
    assert run.ending.detail == "answered by triage"
    assert "`answered by triage`" in PAGE


def test_a_handoff_tool_is_declared_from_the_specialist() -> None:
    tool = handoff_tool(HANDOFFS[1])
    assert tool.name == "transfer_to_prices"
    assert tool.parse({"brief": "butter?"}).model_dump() == {"brief": "butter?"}


def test_agents_need_names_of_their_own() -> None:
    with pytest.raises(ChapterError, match="names of their own"):
        with_handoffs(TRIAGE, [Handoff(ORDERS), Handoff(ORDERS)])


def test_the_agents_sdk_hands_over_the_whole_history_under_the_specialists_instructions() -> None:
    from primer.chapters.ch20_handoffs import handed_over_by_the_agents_sdk

    run = run_scenario(handed_over_by_the_agents_sdk)
    assert run.error is None, run.error
    assert run.ending.label == "answer_received (finish_reason = stop)"
    first, second = (t.model_call.exchanges[0].request.json_body for t in run.turns[:2])
    (handoff,) = first["tools"]
    assert handoff["function"]["name"] == "transfer_to_orders"
    description = handoff["function"]["description"]
    assert description == "Handoff to the orders agent to handle the request. the customer wants to order something"
    assert handoff["function"]["parameters"]["properties"] == {}
    assert handoff["function"]["strict"] is True
    assert run.turns[0].tools[0].result == '{"assistant": "orders"}'
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][0]["content"] == ORDERS.system
    assert second["messages"][1]["content"] == "Could you send over 2 bottles of milk?"
    assert [t["function"]["name"] for t in second["tools"]] == ["place_order"]
    # Nothing on the wire names the agent: the trace has no agent notes.
    assert _notes(run, AGENT_NOTE) == [None, None, None]
    for quoted in (f"`{description}`", '`{"assistant": "orders"}`', '`"strict": true`', "`transfer_to_orders`"):
        assert quoted in PAGE
