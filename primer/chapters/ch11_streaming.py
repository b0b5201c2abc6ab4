"""Streaming: the reply in pieces, as the model writes it.

Asked to stream (``settings={"stream": True}``), a provider sends the reply as
server-sent events while the model writes it: each event a chunk with the
next few words, or the next piece of a tool call's arguments, and ``[DONE]``
at the end. The library puts the pieces together into the same reply a whole
answer gives, so the loop does not change; what changes is when the first
words arrive, and the trace shows each event with its arrival time.
Code: ``primer/streaming.py`` (``Assembler``), ``primer/wire.py`` (the events
recorded as they pass), ``primer/models/live.py`` (``LiveModel._streamed``)
and ``primer/models/mock.py`` (``Pacing``).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_answer, until_no_tool_calls
from primer.models.mock import Pacing, ask, call, cut, say
from primer.scenario import Scenario
from primer.shop import lowest_stock_item
from primer.shop import shelf_price_of as price_of
from primer.tools import Tool

TOOLS: list[Tool[Any]] = [lowest_stock_item, price_of]

words_as_they_come = Scenario(
    name="words_as_they_come",
    about="A streamed answer: the first word after 0.4 s, then one word every 0.05 s.",
    prompt="In two short sentences: what makes a good breakfast from bread, butter and milk?",
    tools=[],
    loop=until_answer,
    settings={"stream": True},
    mock=[
        say(
            "Toast the bread and spread it with butter. Drink a glass of milk with it.",
            pacing=Pacing(first=0.4, every=0.05),
        )
    ],
)

two_calls_in_pieces = Scenario(
    name="two_calls_in_pieces",
    about="Two tool calls in one streamed reply: each named first, then its arguments five characters at a time.",
    prompt="What do bread and milk cost?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    settings={"stream": True},
    mock=[
        ask(
            call("price_of", item="bread"),
            call("price_of", item="milk"),
            pacing=Pacing(first=0.5, every=0.03, characters=5),
        ),
        say("Bread is 1.45 and milk 1.20.", pacing=Pacing(first=0.3, every=0.04)),
    ],
)

cut_mid_sentence = Scenario(
    name="cut_mid_sentence",
    about="max_tokens=12 cuts a streamed answer off: the stream ends with [DONE], the answer does not.",
    prompt="Describe each thing the shop sells in one sentence.",
    tools=[],
    loop=until_answer,
    settings={"stream": True, "max_tokens": 12},
    mock=[cut("Bread is baked fresh every morning. Butter comes in", pacing=Pacing(first=0.4, every=0.05))],
)
