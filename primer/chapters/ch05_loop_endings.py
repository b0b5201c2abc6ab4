"""Loop endings: how the loop knows the model is done.

This chapter's loop reads the finish reason instead of looking for tool
calls: ``stop`` is an answer, ``length`` means the token limit cut the reply
off, which is not an answer at all even though it asks for no tool.
Code: ``primer/loop.py`` (``until_answer``).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_answer
from primer.models.mock import ask, call, cut, say
from primer.scenario import Scenario
from primer.shop import lowest_stock_item
from primer.shop import shelf_price_of as price_of
from primer.tools import Tool

TOOLS: list[Tool[Any]] = [lowest_stock_item, price_of]
PROMPT = "Whatever we are lowest on -- what does one of them cost, and why is it low?"

within_token_limit = Scenario(
    name="within_token_limit",
    about="Two tool calls, then an answer: finish_reason = stop ends the loop.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=until_answer,
    mock=[
        ask(call("lowest_stock_item")),
        ask(call("price_of", item="butter")),
        say("Butter, at 3.10 -- there is only one left, so it is the lowest we hold."),
    ],
)

tokens_exhausted = Scenario(
    name="tokens_exhausted",
    about="max_tokens=24 cuts the reply off before it says anything: finish_reason = length.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=until_answer,
    settings={"max_tokens": 24},
    mock=[cut()],
)
