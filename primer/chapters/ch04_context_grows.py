"""The context grows every turn, and every turn sends all of it.

A model keeps nothing between calls: each turn sends the whole context
again, the tool answers of earlier turns included. Messages sent over a run
grow with the square of its turns, and a long tool answer is paid for on
every turn after it.
Code: ``primer/agent.py`` (``Agent.ask`` appends to the one context list)
and ``primer/context_cost.py`` (``context_cost`` counts what was sent).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from primer.grocery import PRICES, STOCK, GroceryItem
from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order
from primer.shop import shelf_price_of as price_of
from primer.tools import Tool, ToolContext, tool

#: Where each item sits and who brings it: detail a report carries whether
#: or not the question needs it.
SHELVES = {
    GroceryItem.bread: ("aisle 1, top shelf", "Hearth & Sons bakery", "delivered daily before 7"),
    GroceryItem.butter: ("chiller 2", "Vale Dairy cooperative", "delivered Mondays and Thursdays"),
    GroceryItem.chips: ("aisle 3, bottom shelf", "Crisp Brothers", "delivered every other Friday"),
    GroceryItem.milk: ("chiller 1", "Vale Dairy cooperative", "delivered daily before 7"),
}


class ShelfReport(BaseModel):
    """The full shelf report: every item with its price, stock, place and supplier."""

    model_config = ConfigDict(title="shelf_report")


@tool(ShelfReport)
def shelf_report(args: ShelfReport, ctx: ToolContext) -> str:
    """Write the whole report, one line per item."""
    return "\n".join(
        f"{item.value}: price {PRICES[item]}, {STOCK[item]} in stock, {place}; supplier {supplier}, {delivery}."
        for item, (place, supplier, delivery) in SHELVES.items()
    )


TOOLS: list[Tool[Any]] = [place_order, price_of, shelf_report]

one_price_per_turn = Scenario(
    name="one_price_per_turn",
    about="Three prices, one per turn: the context sent grows by two messages each time.",
    prompt="What do bread, butter and milk cost? Look them up one at a time.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("price_of", item="bread")),
        ask(call("price_of", item="butter")),
        ask(call("price_of", item="milk")),
        say("Bread is 1.45, butter 3.10 and milk 1.20."),
    ],
)

long_tool_answer = Scenario(
    name="long_tool_answer",
    about="One long tool answer in turn 1 is sent again in every turn after it.",
    prompt="Bring everything we hold fewer than 10 of back up to 10.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[
        ask(call("shelf_report")),
        ask(call("place_order", item="butter", quantity=9)),
        ask(call("place_order", item="milk", quantity=1)),
        say("Ordered 9 butter and 1 milk: both are back to 10. Bread and chips were above 10."),
    ],
)
