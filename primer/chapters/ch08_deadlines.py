"""Deadlines: how long a tool may take, and what a timeout means.

The service client waits a fixed time for an answer (``RetryPolicy.timeout``,
2 seconds). A timeout is not a "no": the service may still be working on the
call. A lookup can simply be asked again; an order cannot, since the first
one may have landed. The worst case of a lookup is every attempt timing out:
attempts times the timeout, plus the waits between them.
Code: ``primer/service.py`` (``RetryPolicy``, ``ServiceCall.get``) and
``primer/mock_service.py`` (``/delay/N`` on the virtual clock).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order, price_of
from primer.tools import Tool

TOOLS: list[Tool[Any]] = [place_order, price_of]

slow_but_in_time = Scenario(
    name="slow_but_in_time",
    about="The service takes a second, inside the two-second timeout: one attempt, one answer.",
    prompt="How much is bread?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/1"],
    mock=[ask(call("price_of", item="bread")), say("Bread is 1.45.")],
)

lookup_retried_after_timeout = Scenario(
    name="lookup_retried_after_timeout",
    about="The first lookup times out; asking again is harmless, and the second answers.",
    prompt="How much is butter?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10", "/get"],
    mock=[ask(call("price_of", item="butter")), say("Butter is 3.10.")],
)

lookup_never_answers = Scenario(
    name="lookup_never_answers",
    about="Every attempt times out: three timeouts and two waits before the model hears anything.",
    prompt="How much is a bag of chips?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10"],
    mock=[
        ask(call("price_of", item="chips")),
        say("The price list is not answering right now, so I cannot tell you what chips cost."),
    ],
)

order_not_retried = Scenario(
    name="order_not_retried",
    about="The order times out once and is not sent again: it may have landed.",
    prompt="Order 3 loaves of bread.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10"],
    mock=[
        ask(call("place_order", item="bread", quantity=3)),
        say("I sent the order for 3 loaves, but it was not confirmed in time. Check before ordering again."),
    ],
)
