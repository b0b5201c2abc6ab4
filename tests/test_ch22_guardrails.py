"""Chapter 22: input and output checks around the loop (``primer.guardrails``).

What the page says the trace shows: each verdict as a note on its call, a
message stopped before any model call (and in no context), a reply rejected
and answered again, a borderline case let through with a note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from primer.agent import Agent
from primer.chapters.ch22_guardrails import card_number_stopped, loyalty_number_let_through, promise_rejected
from primer.clock import VirtualClock
from primer.errors import ChapterError
from primer.guardrails import (
    INPUT_NOTE,
    OUTPUT_NOTE,
    Verdict,
    guarded,
    luhn_valid,
    no_card_numbers,
    no_discount_promises,
)
from primer.models.mock import MockModel, say
from primer.runner import run_scenario
from primer.trace import Message, ScenarioRun

ROOT = Path(__file__).resolve().parent.parent
PAGE = " ".join((ROOT / "docs" / "ch22_guardrails.md").read_text(encoding="utf-8").split())


def _checks(run: ScenarioRun, turn: int) -> list[str]:
    """The check notes of a turn's model call, as the page shows them: ``label {json}``."""
    notes = run.turns[turn - 1].model_call.notes
    return [f"{n.label} {json.dumps(n.data)}" for n in notes if n.label in (INPUT_NOTE, OUTPUT_NOTE)]


def test_a_card_number_is_stopped_before_any_model_call_and_reaches_no_context() -> None:
    run = run_scenario(card_number_stopped)
    assert len(run.turns) == 2
    assert _checks(run, 1) == ['input check {"check": "no_card_numbers", "verdict": "passed"}']
    assert _checks(run, 2) == ['output check {"check": "no_discount_promises", "verdict": "passed"}']
    assert run.ending.reason == "guardrail_tripped"
    assert run.ending.detail == (
        "input check no_card_numbers: the message holds a payment card number (16 digits); "
        "nothing was sent to the model"
    )
    sent = json.dumps([t.model_call.model_dump() for t in run.turns]) + run.model_dump_json()
    assert "4111" not in sent, "the card number is in no call and no transcript"
    for note in _checks(run, 1) + _checks(run, 2):
        assert f"`{note}`" in PAGE
    assert f"`{run.ending.detail}`" in PAGE


def test_a_rejected_reply_is_answered_again_with_the_reason_in_the_context() -> None:
    run = run_scenario(promise_rejected)
    assert len(run.turns) == 3
    (stopped,) = _checks(run, 2)
    assert stopped == (
        'output check {"check": "no_discount_promises", "verdict": "stopped", '
        '"why": "it promises [\'10% off\'], which the shop does not give"}'
    )
    assert f"`{stopped}`" in PAGE
    context = run.turns[2].model_call.context
    assert context[-2].content == "Yes! Buy ten and you get 10% off: ten bottles for 10.80."
    assert (context[-1].role, context[-1].content) == (
        "human",
        "Your reply was not sent to the customer: it promises ['10% off'], which the shop does not give. Answer again.",
    )
    assert f"`{context[-1].content}`" in PAGE
    assert f"`{context[-2].content}`" in PAGE
    assert _checks(run, 3) == ['output check {"check": "no_discount_promises", "verdict": "passed"}']
    assert run.ending.reason == "no_tool_calls"
    assert run.ending.detail == "answered after 1 reply rejected by the output checks"
    assert f"`{run.ending.detail}`" in PAGE


def test_a_borderline_number_is_let_through_with_a_note() -> None:
    run = run_scenario(loyalty_number_let_through)
    (note,) = _checks(run, 1)
    assert note == (
        'input check {"check": "no_card_numbers", "verdict": "let through", '
        '"why": "16 digits that fail the Luhn check: not a payment card number"}'
    )
    assert f"`{note}`" in PAGE
    assert run.turns[0].tools[0].result == "ordered 2 x milk"
    assert run.ending.reason == "no_tool_calls"


def test_a_second_rejection_of_one_answer_stops_the_run() -> None:
    clock = VirtualClock()
    promises = [say("10% off today!"), say("Still 10% off.")]
    agent = Agent(model=MockModel(promises, clock), tools=[], clock=clock)
    context = [Message(role="system", content="s"), Message(role="human", content="Cheaper?")]
    ending = guarded(output_checks=[no_discount_promises])(agent, context, 8)
    assert ending.reason == "guardrail_tripped"
    assert ending.detail is not None
    assert ending.detail.endswith("; not sent to the customer")
    assert len(agent.turns) == 2


def test_the_checks() -> None:
    assert luhn_valid("4111111111111111")
    assert not luhn_valid("6012345678901235")
    assert no_card_numbers("call me on 0123 456 789") == Verdict(allowed=True)
    assert not no_card_numbers("card 4111-1111-1111-1111").allowed
    assert no_discount_promises("Milk is 1.20.").allowed
    assert not no_discount_promises("We can refund you.").allowed
    with pytest.raises(ChapterError):
        guarded(asks_again=-1)
