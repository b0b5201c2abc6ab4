"""Tool choice: whether, which and how many tools, and the shape of the answer.

By default the model decides whether to call a tool (``tool_choice="auto"``).
A request can decide instead: ``"none"`` (call nothing), ``"required"``
(call something), or a named function (call that one);
``parallel_tool_calls=False`` allows one call per reply; a strict tool keeps
the model's arguments to its schema, and ``response_format`` asks for the
answer as JSON that matches a schema. A forced choice holds for one turn:
the loop sends ``auto`` after it. And a named choice comes back with
``finish_reason = stop`` *and* a tool call, which the loop must still run.
Code: ``primer/tool_choice.py``, ``primer/structured.py``, ``primer/loop.py``
and ``primer/models/mock.py`` (the script held to what was asked).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from primer.grocery import PRICES, GroceryItem
from primer.loop import until_answer
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import lowest_stock_item
from primer.shop import shelf_price_of as price_of
from primer.structured import answer_format
from primer.tool_choice import named
from primer.tools import Tool, ToolContext, tool

TOOLS: list[Tool[Any]] = [lowest_stock_item, price_of]


class StrictPriceOf(BaseModel):
    """The current shelf price of one of an item, in pounds."""

    # Closed, as strict mode needs: no field but these, every one required.
    model_config = ConfigDict(title="price_of", extra="forbid")
    item: GroceryItem


@tool(StrictPriceOf, strict=True)
def strict_price_of(args: StrictPriceOf, ctx: ToolContext) -> str:
    """Look the price up on the shelf list."""
    return PRICES[args.item]


class PriceAnswer(BaseModel):
    """The answer: the item, its price in pounds, and one short sentence about it."""

    model_config = ConfigDict(title="price_answer", extra="forbid")
    item: GroceryItem
    price: str
    note: str


must_call_a_tool = Scenario(
    name="must_call_a_tool",
    about="tool_choice = required: the first reply must call a tool; the next turn sends auto.",
    prompt="Is milk cheap here?",
    tools=TOOLS,
    loop=until_answer,
    settings={"tool_choice": "required"},
    mock=[
        ask(call("price_of", item="milk")),
        say("Milk is 1.20 a bottle here, which is about what most shops charge."),
    ],
)

named_tool_says_stop = Scenario(
    name="named_tool_says_stop",
    about="tool_choice names price_of: the reply calls it with finish_reason = stop, and the loop still runs it.",
    prompt="What does butter cost?",
    tools=TOOLS,
    loop=until_answer,
    settings={"tool_choice": named("price_of")},
    mock=[
        ask(call("price_of", item="butter"), finish_reason="stop"),
        say("Butter is 3.10."),
    ],
)

no_tools_this_time = Scenario(
    name="no_tools_this_time",
    about="tool_choice = none: the tools are declared, but the reply may only be text.",
    prompt="In one sentence: which of bread, butter, chips and milk go together for breakfast?",
    tools=TOOLS,
    loop=until_answer,
    settings={"tool_choice": "none"},
    mock=[say("Bread and butter with a glass of milk.")],
)

one_call_at_a_time = Scenario(
    name="one_call_at_a_time",
    about="parallel_tool_calls = false: two prices take two replies, one call each.",
    prompt="What do bread and milk cost?",
    tools=TOOLS,
    loop=until_answer,
    settings={"parallel_tool_calls": False},
    mock=[
        ask(call("price_of", item="bread")),
        ask(call("price_of", item="milk")),
        say("Bread is 1.45 and milk 1.20."),
    ],
)

answer_as_json = Scenario(
    name="answer_as_json",
    about="A strict tool, and response_format asks for the answer as JSON that fits price_answer.",
    prompt="What does a bag of chips cost? Answer with the item, its price and a short note.",
    tools=[lowest_stock_item, strict_price_of],
    loop=until_answer,
    settings={"response_format": answer_format(PriceAnswer)},
    mock=[
        ask(call("price_of", item="chips")),
        say('{"item": "chips", "price": "0.95", "note": "The cheapest thing in the shop."}'),
    ],
)
