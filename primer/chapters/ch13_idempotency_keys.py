"""Idempotency keys: making "the order may have landed" safe to send again.

An order that timed out may have been placed (chapters 8 and 9), so it is not
sent again. Unless it carries an idempotency key: one value per intended
operation, sent with every attempt of it (``Idempotency-Key``), which a
service that keeps keys uses to answer a repeat with the first answer instead
of acting twice. The key is sent with every order; the client only relies on
it when the service is known to keep keys (``trust_idempotency_keys``).
Each new call is a new key: two orders for the same thing are two orders.
Code: ``primer/service.py`` (``ServiceCall.post``, ``RetryPolicy``),
``primer/mock_service.py`` (the keys the shop keeps) and ``primer/shop.py``.
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.service import RetryPolicy
from primer.shop import place_order_for_reference as place_order
from primer.shop import price_of
from primer.tools import Tool

TOOLS: list[Tool[Any]] = [place_order, price_of]

#: A service whose documentation promises it keeps idempotency keys.
KEYS_KEPT = RetryPolicy(trust_idempotency_keys=True)

key_alone_changes_nothing = Scenario(
    name="key_alone_changes_nothing",
    about="The order carries a key, but nothing says the service keeps keys: it is not sent again.",
    prompt="Order 2 bottles of milk.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10"],
    mock=[
        ask(call("place_order", item="milk", quantity=2)),
        say("The order may or may not have been placed. Please check before ordering again."),
    ],
)

retried_with_the_same_key = Scenario(
    name="retried_with_the_same_key",
    about="The order lands but its answer is lost; sent again with the same key, the shop answers from the first.",
    prompt="Order 2 bottles of milk.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10", "/post"],
    policy=KEYS_KEPT,
    mock=[
        ask(call("place_order", item="milk", quantity=2)),
        say("Ordered 2 bottles of milk, reference ord-8812."),
    ],
)

two_orders_two_keys = Scenario(
    name="two_orders_two_keys",
    about="Two calls for the same order are two operations: each has its own key, and both are placed.",
    prompt="Order 2 bottles of milk for the cafe, and another 2 for the shop floor, as two separate orders.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    policy=KEYS_KEPT,
    mock=[
        ask(call("place_order", item="milk", quantity=2), call("place_order", item="milk", quantity=2)),
        say("Placed two orders of 2 bottles of milk: ord-8812 for the cafe and ord-8813 for the shop floor."),
    ],
)
