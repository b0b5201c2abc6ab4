"""Reasoning models: effort, reasoning tokens in usage, reasoning in a stream, a limit spent thinking.

A reasoning model writes reasoning before it answers, and is paid for it:
the reasoning is counted in ``usage`` as output tokens the answer never
shows. ``reasoning_effort`` asks for less or more; a token limit counts the
reasoning too. The mock model's reasoning and token counts are scripted, as
a provider would report them, and its notes say so.
Code: ``primer/reasoning.py`` (``effort``, ``thinking``,
``until_answer_or_thought_out``), ``primer/models/mock.py`` (a reply's
``reasoning`` and ``usage``), ``primer/streaming.py`` (reasoning deltas
assembled) and ``primer/models/live.py`` (``_usage``).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_answer
from primer.models.mock import Pacing, ask, call, cut, say
from primer.reasoning import effort, until_answer_or_thought_out
from primer.scenario import Scenario
from primer.shop import shelf_price_of as price_of
from primer.tools import Tool
from primer.trace import Usage

TOOLS: list[Tool[Any]] = [price_of]
PROMPT = "I have 5.00 and want one loaf of bread. How many bottles of milk can I buy with what is left?"
ANSWER = "2 bottles: the bread (1.45) leaves 3.55, and 2 bottles of milk cost 2.40."

thinks_a_little = Scenario(
    name="thinks_a_little",
    about="reasoning_effort=low: a few reasoning tokens before each reply.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=until_answer,
    settings=effort("low"),
    mock=[
        ask(
            call("price_of", item="bread"),
            call("price_of", item="milk"),
            reasoning="I need both prices.",
            usage=Usage(input_tokens=182, output_tokens=58, reasoning_tokens=16),
        ),
        say(
            ANSWER,
            reasoning="5.00 - 1.45 = 3.55. 3.55 / 1.20 is 2 and a bit: 2 bottles.",
            usage=Usage(input_tokens=268, output_tokens=79, reasoning_tokens=41),
        ),
    ],
)

thinks_hard = Scenario(
    name="thinks_hard",
    about="reasoning_effort=high: the same question, the same answer, many more reasoning tokens.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=until_answer,
    settings=effort("high"),
    mock=[
        ask(
            call("price_of", item="bread"),
            call("price_of", item="milk"),
            reasoning=(
                "The customer wants one loaf and as much milk as the rest buys. I should not guess the prices: "
                "look up bread and milk. Both at once, since neither depends on the other."
            ),
            usage=Usage(input_tokens=182, output_tokens=296, reasoning_tokens=254),
        ),
        say(
            ANSWER,
            reasoning=(
                "Bread 1.45, milk 1.20. 5.00 - 1.45 = 3.55. Two bottles are 2.40, three are 3.60: 3.60 > 3.55, "
                "so two. Left over: 3.55 - 2.40 = 1.15. Check: 1.45 + 2.40 + 1.15 = 5.00. Should I suggest "
                "a second loaf instead? They asked for one. Answer: 2 bottles, 1.15 over."
            ),
            usage=Usage(input_tokens=268, output_tokens=1174, reasoning_tokens=1136),
        ),
    ],
)

reasoning_streams_first = Scenario(
    name="reasoning_streams_first",
    about="Streamed, the reasoning comes first, in reasoning_content deltas; the answer's first word after it.",
    prompt="Bread is 1.45 and milk 1.20. I have 5.00 and want one loaf: how many bottles of milk can I add?",
    tools=[],
    loop=until_answer,
    settings=effort("medium", stream=True),
    mock=[
        say(
            "Two bottles, with 1.15 left over.",
            reasoning="5.00 - 1.45 = 3.55. Three bottles cost 3.60: too much. Two cost 2.40.",
            usage=Usage(input_tokens=64, output_tokens=52, reasoning_tokens=40),
            pacing=Pacing(first=0.8, every=0.05, words=2),
        )
    ],
)

limit_spent_thinking = Scenario(
    name="limit_spent_thinking",
    about="max_completion_tokens=64: the model spends every token reasoning; the reply is empty, usage says why.",
    prompt=PROMPT,
    tools=[],
    loop=until_answer_or_thought_out,
    settings=effort("high", max_completion_tokens=64),
    mock=[
        cut(
            reasoning="The customer wants one loaf and as much milk as the rest buys. I do not know the prices",
            usage=Usage(input_tokens=61, output_tokens=64, reasoning_tokens=64),
        )
    ],
)
