"""When the model gets a call wrong: bad arguments, a tool that does not exist.

The model's arguments are validated against the same pydantic model that
declared the tool. What fails validation, and a call to a tool that was never
declared, is the caller's to fix (``caller_can_fix``): the model is told what
was wrong and asked to call again. Nothing is sent to the service.
Code: ``primer/tools.py`` (``Tool.parse``), ``primer/agent.py``
(``Agent.run_tool``, ``Agent._find``, ``message_for_model``) and
``primer/errors.py`` (``ArgumentsRejected``).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import lowest_stock_item, place_order
from primer.shop import shelf_price_of as price_of
from primer.tools import Tool

TOOLS: list[Tool[Any]] = [lowest_stock_item, place_order, price_of]

item_not_sold = Scenario(
    name="item_not_sold",
    about="The schema lists four items; the model asks for a fifth and is told which exist.",
    prompt="How much is cheese?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("price_of", item="cheese")),
        say("We do not sell cheese. The shop has bread, butter, chips and milk."),
    ],
)

quantity_missing = Scenario(
    name="quantity_missing",
    about="A required argument is left out; told so, the model calls again with it.",
    prompt="Order some milk.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("place_order", item="milk")),
        ask(call("place_order", item="milk", quantity=1)),
        say("Ordered 1 bottle of milk."),
    ],
)

tool_that_does_not_exist = Scenario(
    name="tool_that_does_not_exist",
    about="The model calls a tool nobody declared; the answer lists the tools there are.",
    prompt="Which item are we lowest on?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    # The model asks for a tool nobody declared: on purpose here, so not warned about.
    undeclared=["stock_levels"],
    mock=[
        ask(call("stock_levels")),
        ask(call("lowest_stock_item")),
        say("Butter: we hold less of it than of anything else."),
    ],
)
