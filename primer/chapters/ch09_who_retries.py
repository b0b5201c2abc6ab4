"""Who retries: the library, the model, or nobody.

A failed tool call is classified (``retryable``, ``idempotent``,
``caller_can_fix``) and that decides who acts next: the service client
retries what is safe to repeat, the model is asked to fix what it got wrong,
and what may already have happened is never repeated but reported.
Code: ``primer/service.py`` (attempts, backoff), ``primer/shop.py`` (which
tool call is idempotent) and ``primer/agent.py`` (the message the model is
sent back).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order_by_get as place_order
from primer.shop import price_of
from primer.tools import Tool

# The order goes out as a GET, as this chapter's live run recorded it; the
# retry rules do not look at the method (see primer/shop.py and chapter 13).
TOOLS: list[Tool[Any]] = [place_order, price_of]

service_is_busy = Scenario(
    name="service_is_busy",
    about="The service answers 429 once; the client waits as told and tries again.",
    prompt="How much is milk?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/status/429", "/get"],
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)

order_may_have_landed = Scenario(
    name="order_may_have_landed",
    about="The order times out after it was sent: it is not retried, and the model is told why.",
    prompt="Order 2 bottles of milk.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10"],
    mock=[
        ask(call("place_order", item="milk", quantity=2)),
        say("The order may or may not have been placed. Please check before ordering again."),
    ],
)

arguments_are_wrong = Scenario(
    name="arguments_are_wrong",
    about="The tool refuses a quantity; the model, told how to fix it, calls again.",
    prompt="Order 20 bottles of milk.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("place_order", item="milk", quantity=20)),
        ask(call("place_order", item="milk", quantity=12)),
        say("I ordered 12, the most allowed in one order."),
    ],
)

service_says_no = Scenario(
    name="service_says_no",
    about="The service answers 404: retrying cannot help, so nobody retries.",
    prompt="How much is milk?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/status/404"],
    mock=[ask(call("price_of", item="milk")), say("I could not get the price of milk.")],
)
