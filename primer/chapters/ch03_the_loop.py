"""The loop: ask the model, run the tools it names, ask again.

Each turn sends the context, appends the reply, runs every tool call in it
and appends each tool's answer. The loop goes round while the model asks
for tools, and stops at a turn limit whatever the model does.
Code: ``primer/loop.py`` (``until_no_tool_calls``) and ``primer/agent.py``
(``Agent.ask``, ``Agent.run_tools``).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import lowest_stock_item
from primer.shop import place_order_for_reference as place_order
from primer.shop import shelf_price_of as price_of
from primer.tools import Tool

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
