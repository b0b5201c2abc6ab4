"""Handoffs: a triage agent hands the conversation to a specialist, which answers.

Each agent is a ``Step`` of chapter 15: a name, a system prompt and tools.
The triage agent is declared one tool per specialist (``transfer_to_orders``)
and the model decides whether to call one; code decides what the specialist
is given: the whole conversation, or only a brief the triage agent wrote.
Code: ``primer/handoff.py`` (``Handoff``, ``handoff_tool``, ``with_handoffs``).
"""

from __future__ import annotations

from primer.handoff import Handoff, with_handoffs
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order, shelf_price_of
from primer.workflows import Step

TRIAGE = Step(
    name="triage",
    system=(
        "You are the grocery shop's front desk. Hand orders to the orders agent and questions about prices "
        "to the prices agent. Answer anything else yourself, briefly."
    ),
)
ORDERS = Step(
    name="orders",
    about="the customer wants to order something",
    system="You place the orders customers ask for. Use the tools you are given, then confirm briefly.",
    tools=[place_order],
)
PRICES = Step(
    name="prices",
    about="the customer asks what something costs",
    system="You answer questions about prices. Look each price up; never guess.",
    tools=[shelf_price_of],
)

#: Orders get the whole conversation; prices only the brief the triage agent writes.
HANDOFFS = [Handoff(ORDERS), Handoff(PRICES, carries="brief")]

handed_over_with_the_history = Scenario(
    name="handed_over_with_the_history",
    about="Triage hands the order to the orders agent, which gets the whole conversation and places it.",
    prompt="Could you send over 2 bottles of milk?",
    tools=[],
    loop=with_handoffs(TRIAGE, HANDOFFS),
    mock=[
        ask(call("transfer_to_orders")),
        ask(call("place_order", item="milk", quantity=2)),
        say("Ordered 2 bottles of milk."),
    ],
)

handed_over_with_a_brief = Scenario(
    name="handed_over_with_a_brief",
    about="Triage hands a price question over with a brief: the prices agent sees the brief and nothing else.",
    prompt="Hi! My daughter is baking tonight and I promised to check: what does butter cost at the moment?",
    tools=[],
    loop=with_handoffs(TRIAGE, HANDOFFS),
    mock=[
        ask(call("transfer_to_prices", brief="What is the current price of butter?")),
        ask(call("price_of", item="butter")),
        say("Butter is 3.10."),
    ],
)

triage_answers_itself = Scenario(
    name="triage_answers_itself",
    about="A question for no specialist: triage answers it, and nothing is handed over.",
    prompt="Do you deliver on Sundays?",
    tools=[],
    loop=with_handoffs(TRIAGE, HANDOFFS),
    mock=[say("I cannot check deliveries from here: please ask at the counter.")],
)
