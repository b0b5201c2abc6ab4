"""Several tool calls in one reply.

A reply may ask for more than one tool at once. Each call has its own id;
the agent runs them in the order given and answers each with its own
``tool`` message carrying that id, so the model can tell the answers apart.
One failing call does not stop the others: every call gets an answer.
Code: ``primer/agent.py`` (``Agent.run_tools``) and ``primer/trace.py``
(``ToolCall.id``, ``Message.tool_call_id``).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order, price_of
from primer.tools import Tool

TOOLS: list[Tool[Any]] = [place_order, price_of]

three_prices_at_once = Scenario(
    name="three_prices_at_once",
    about="Three lookups in one reply: two turns instead of four.",
    prompt="What do bread, butter and milk cost?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("price_of", item="bread"), call("price_of", item="butter"), call("price_of", item="milk")),
        say("Bread is 1.45, butter 3.10 and milk 1.20."),
    ],
)

one_of_three_fails = Scenario(
    name="one_of_three_fails",
    about="The second of three lookups gets a 404; the first and third still answer.",
    prompt="What do bread, chips and milk cost?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/get", "/status/404", "/get"],
    mock=[
        ask(call("price_of", item="bread"), call("price_of", item="chips"), call("price_of", item="milk")),
        say("Bread is 1.45 and milk 1.20. I could not get the price of chips."),
    ],
)

split_order = Scenario(
    name="split_order",
    about="The reply says what it will do and asks for two orders in the same message.",
    prompt="Order 20 bottles of milk. One order may hold at most 12.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(
            call("place_order", item="milk", quantity=12),
            call("place_order", item="milk", quantity=8),
            text="One order holds at most 12, so this is two orders: 12 and 8.",
        ),
        say("Ordered 20 bottles of milk as two orders, 12 and 8."),
    ],
)
