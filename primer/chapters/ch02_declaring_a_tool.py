"""Declaring a tool: the schema the model reads comes from a pydantic model.

A tool is a function and a pydantic model of its arguments. The model's
title is the tool's name, its docstring the description, and its fields (with
their ``Field(description=...)``) the JSON schema. Declaring a tool offers it;
the model decides whether to call it.
Code: ``primer/tools.py`` (``tool``, ``Tool.declared``, ``Tool.parse``) and
``primer/grocery.py`` (``PriceOf``, ``GroceryItem``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from primer.grocery import PRICES, STOCK, GroceryItem, PriceOf
from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import Tool, ToolContext, tool


# --8<-- [start:declaration]
class StockOf(BaseModel):
    """How many of an item are on the shelf right now."""

    model_config = ConfigDict(title="stock_of")
    item: GroceryItem = Field(description="The item to count. The shop sells nothing else.")


@tool(PriceOf)
def price_of(args: PriceOf, ctx: ToolContext) -> str:
    """Look the price up on the shelf list."""
    return PRICES[args.item]


@tool(StockOf)
def stock_of(args: StockOf, ctx: ToolContext) -> str:
    """Count what is on the shelf."""
    return str(STOCK[args.item])


# --8<-- [end:declaration]


TOOLS: list[Tool[Any]] = [price_of, stock_of]

tool_it_needs = Scenario(
    name="tool_it_needs",
    about="The question needs a price: the model calls price_of, then answers from its result.",
    prompt="How much is a bag of chips?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[ask(call("price_of", item="chips")), say("A bag of chips is 0.95.")],
)

tool_it_ignores = Scenario(
    name="tool_it_ignores",
    about="The same two tools are declared, and neither helps: the model answers without them.",
    prompt="What is butter made from?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[say("Cream, churned until the fat comes away from the buttermilk.")],
)

how_many_left = Scenario(
    name="how_many_left",
    about="stock_of is declared in this chapter: its docstring and field description are what the model reads.",
    prompt="Ten customers each want one bottle of milk. Do we have enough?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[ask(call("stock_of", item="milk")), say("No: there are 9 bottles, one short of ten.")],
)
