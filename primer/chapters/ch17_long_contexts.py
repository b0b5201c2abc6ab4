"""Long contexts: what resending costs, what a prompt cache saves, and sending less.

Every turn resends the whole context, so a run with long tool answers pays
for them again each turn. A provider's prompt cache makes the repeated start
of a context cheaper, but only while that start stays the same. Trimming the
history or summarising it sends less, and changes the start. The three
scenarios ask the same thing, with the same script, and differ only in what
each turn sends.
Code: ``primer/history.py`` (``with_history``, ``keep_last``,
``summarise_over``) and ``primer/context_cost.py`` (``repeated_characters``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from primer.grocery import PRICES, STOCK, GroceryItem
from primer.history import keep_last, summarise_over, with_history
from primer.loop import until_no_tool_calls
from primer.models.mock import MockReply, ask, call, say
from primer.scenario import Scenario
from primer.tools import Tool, ToolContext, tool
from primer.workflows import Step


class ShelfCard(BaseModel):
    """The shelf card of an item: price, stock, supplier, storage and where it is in the shop."""

    model_config = ConfigDict(title="shelf_card")
    item: GroceryItem


_CARDS = {
    GroceryItem.bread: ("a loaf", "Northgate Bakery, every morning", "Keep dry, at room temperature", "aisle 1"),
    GroceryItem.butter: ("a block", "Hill Farm Dairy, Mondays and Thursdays", "Keep below 5 C", "aisle 3, chiller 1"),
    GroceryItem.chips: ("a bag", "Crisp & Co, every other Tuesday", "Keep dry, away from sunlight", "aisle 2"),
    GroceryItem.milk: ("a bottle", "Hill Farm Dairy, Mondays and Thursdays", "Keep below 5 C", "aisle 3, chiller 2"),
}


@tool(ShelfCard)
def shelf_card(args: ShelfCard, ctx: ToolContext) -> str:
    """The card as printed: a long answer, resent with every later turn."""
    unit, supplier, storage, place = _CARDS[args.item]
    return (
        f"Shelf card: {args.item.value}. Price: {PRICES[args.item]} for {unit}. In stock: {STOCK[args.item]}. "
        f"Supplier: {supplier}. Storage: {storage}. Where: {place}. "
        "Check dates at every delivery; report damaged stock to the manager."
    )


TOOLS: list[Tool[Any]] = [shelf_card]
PROMPT = "Look up the shelf cards of bread, butter, chips and milk, one at a time, then tell me what each costs."
ANSWER = "Bread is 1.45, butter 3.10, chips 0.95 and milk 1.20."


def _cards(*items: str) -> list[MockReply]:
    return [ask(call("shelf_card", item=item)) for item in items]


#: Writes the summary that replaces the older messages.
SUMMARISER = Step(
    name="summariser",
    system=(
        "You summarise a shop assistant's work so far, for the assistant itself: every fact it found that "
        "the customer's question needs, in as few words as possible."
    ),
)

whole_history = Scenario(
    name="whole_history",
    about="Four long tool answers, each resent with every later turn: the start of each context is the last one.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=until_no_tool_calls,
    mock=[*_cards("bread", "butter", "chips", "milk"), say(ANSWER)],
)

last_messages_only = Scenario(
    name="last_messages_only",
    about="Each turn sends the question and the last two messages: short, and forgetful.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=with_history(keep_last(2)),
    mock=[*_cards("bread", "butter", "chips", "milk"), say(ANSWER)],
)

summarised_history = Scenario(
    name="summarised_history",
    about="Past 900 characters, a model call summarises the older messages, and the summary is sent instead.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=with_history(summarise_over(900, keep=2, summariser=SUMMARISER)),
    mock=[
        *_cards("bread", "butter", "chips"),
        say("Found so far: bread 1.45 a loaf, butter 3.10 a block."),
        *_cards("milk"),
        say(ANSWER),
    ],
)
