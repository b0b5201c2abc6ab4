"""Testing an agent: a scripted model, a fake service, a virtual clock.

Everything in this book runs twice. The mock run puts a scripted model
(``MockModel``), a service played by an ``httpx.MockTransport``
(``GroceryService``) and a ``VirtualClock`` where the provider, the network
and time would be, and runs the same agent code as the live run. It is fast
and the same every time, so it can be asserted on; what it cannot test is the
model's judgement, which is what the live run is for.
Code: ``primer/models/mock.py``, ``primer/mock_service.py``,
``primer/clock.py`` and ``primer/runner.py`` (``mock_environment``).
"""

from __future__ import annotations

from typing import Any

from primer.errors import ArgumentsRejected, quoted
from primer.grocery import MAX_ORDER, PRICES, PlaceOrder, PriceOf
from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import Tool, ToolContext, tool


@tool(PlaceOrder)
def place_order(args: PlaceOrder, ctx: ToolContext) -> str:
    """Send the order to the service and return its reference."""
    if not 1 <= args.quantity <= MAX_ORDER:
        raise ArgumentsRejected(f"quantity {quoted(args.quantity)} must be between 1 and {MAX_ORDER}")
    body = ctx.require_service().get({"item": args.item.value, "quantity": args.quantity}, idempotent=False)
    reference = body.get("reference") if isinstance(body, dict) else None
    # httpbin only echoes the order back: without a reference, say so.
    return f"ordered {args.quantity} x {args.item.value} (reference {reference or 'not given'})"


@tool(PriceOf)
def price_of(args: PriceOf, ctx: ToolContext) -> str:
    """Ask the service for the price; a lookup is idempotent, so safe to retry."""
    body = ctx.require_service().get({"item": args.item.value}, idempotent=True)
    # httpbin knows nothing of groceries: the shelf list answers for it live.
    price = body.get("price") if isinstance(body, dict) else None
    return str(price or PRICES[args.item])


TOOLS: list[Tool[Any]] = [place_order, price_of]

fake_service_answers = Scenario(
    name="fake_service_answers",
    about="The real service client talks to a MockTransport that answers as httpbin does.",
    prompt="Order 3 bags of chips.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("place_order", item="chips", quantity=3)),
        say("Ordered 3 bags of chips, reference ord-8812."),
    ],
)

waits_are_simulated = Scenario(
    name="waits_are_simulated",
    about="Two 503s, each with Retry-After: 1. The trace says 2 s; the run took milliseconds.",
    prompt="How much is milk?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/status/503", "/status/503", "/get"],
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)

script_does_not_read = Scenario(
    name="script_does_not_read",
    about="The lookup fails, and the scripted reply says the price anyway: a script reads nothing.",
    prompt="How much is milk?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/status/404"],
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)
