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

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order_for_reference as place_order
from primer.shop import price_of
from primer.tools import Tool

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
