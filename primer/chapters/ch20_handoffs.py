"""Handoffs: a triage agent hands the conversation to a specialist, which answers.

Each agent is a ``Step`` of chapter 15: a name, a system prompt and tools.
The triage agent is declared one tool per specialist (``transfer_to_orders``)
and the model decides whether to call one; code decides what the specialist
is given: the whole conversation, or only a brief the triage agent wrote.
The last scenario makes the first handoff with the OpenAI Agents SDK, as
chapter 18 runs it (the ``frameworks`` extra), to show what it sends.
Code: ``primer/handoff.py`` (``Handoff``, ``handoff_tool``, ``with_handoffs``).
"""

from __future__ import annotations

from typing import Any

from primer.code_scenario import CodeScenario, Reach
from primer.errors import MissingExtra
from primer.grocery import GroceryItem, PlaceOrder
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

ORDER = "Could you send over 2 bottles of milk?"
ORDER_SCRIPT = [
    ask(call("transfer_to_orders")),
    ask(call("place_order", item="milk", quantity=2)),
    say("Ordered 2 bottles of milk."),
]

handed_over_with_the_history = Scenario(
    name="handed_over_with_the_history",
    about="Triage hands the order to the orders agent, which gets the whole conversation and places it.",
    prompt=ORDER,
    tools=[],
    loop=with_handoffs(TRIAGE, HANDOFFS),
    mock=ORDER_SCRIPT,
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


async def with_agents_sdk(reach: Reach) -> None:
    """The same two agents in the OpenAI Agents SDK: triage's ``handoffs=[orders]``, on chat completions."""
    try:
        from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    except ImportError as missing:
        raise MissingExtra("Chapter 20's Agents SDK scenario", "frameworks", missing) from None

    # Its tracing would post every run to OpenAI's own trace store: a host that is not this scenario's.
    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(model=reach.model, openai_client=reach.async_openai)

    @function_tool(name_override="place_order", description_override=PlaceOrder.__doc__ or "")
    def order(item: GroceryItem, quantity: int) -> str:
        # Off the shelf list, not the service: this scenario is about the handoff.
        return f"ordered {quantity} x {item.value}"

    orders: Any = Agent(
        name="orders", instructions=ORDERS.system, tools=[order], model=model, handoff_description=ORDERS.about
    )
    triage: Any = Agent(name="triage", instructions=TRIAGE.system, handoffs=[orders], model=model)
    await Runner.run(triage, ORDER)


handed_over_by_the_agents_sdk = CodeScenario(
    name="handed_over_by_the_agents_sdk",
    about="The first handoff again, in the OpenAI Agents SDK: its handoff tool, and the history it hands over.",
    code=with_agents_sdk,
    mock=ORDER_SCRIPT,
)
