"""The loop: ask the model, run the tools it names, ask again.

Each turn sends the context, appends the reply, runs every tool call in it
and appends each tool's answer. The loop goes round while the model asks
for tools, and stops at a turn limit whatever the model does.
Code: ``primer/loop.py`` (``until_no_tool_calls``) and ``primer/agent.py``
(``Agent.ask``, ``Agent.run_tools``).
"""

from __future__ import annotations

from typing import Any

from primer.errors import ArgumentsRejected, quoted
from primer.grocery import MAX_ORDER, PRICES, STOCK, LowestStockItem, PlaceOrder, PriceOf
from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import Tool, ToolContext, tool


@tool(LowestStockItem)
def lowest_stock_item(args: LowestStockItem, ctx: ToolContext) -> str:
    """Look the stock up on the shelf list."""
    return min(STOCK, key=STOCK.__getitem__).value


@tool(PriceOf)
def price_of(args: PriceOf, ctx: ToolContext) -> str:
    """Look the price up on the shelf list."""
    return PRICES[args.item]


@tool(PlaceOrder)
def place_order(args: PlaceOrder, ctx: ToolContext) -> str:
    """Send the order to the service and return its reference."""
    if not 1 <= args.quantity <= MAX_ORDER:
        raise ArgumentsRejected(f"quantity {quoted(args.quantity)} must be between 1 and {MAX_ORDER}")
    body = ctx.require_service().get({"item": args.item.value, "quantity": args.quantity}, idempotent=False)
    reference = body.get("reference") if isinstance(body, dict) else None
    # httpbin only echoes the order back: without a reference, say so.
    return f"ordered {args.quantity} x {args.item.value} (reference {reference or 'not given'})"


TOOLS: list[Tool[Any]] = [lowest_stock_item, place_order, price_of]

one_thing_leads_to_another = Scenario(
    name="one_thing_leads_to_another",
    about="The second tool call needs the first one's answer, so it waits a turn.",
    prompt="Order one more of whatever we have least of.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("lowest_stock_item")),
        ask(call("place_order", item="butter", quantity=1)),
        say("Ordered 1 butter (reference ord-8812): it is what we had least of."),
    ],
)

keeps_asking = Scenario(
    name="keeps_asking",
    about="A model that never stops asking meets the loop's turn limit.",
    prompt="Keep checking the price of milk until it drops below 1.00, then tell me.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    max_turns=3,
    mock=[ask(call("price_of", item="milk")) for _ in range(3)],
)
