"""Evaluation: the same question asked five times, each answer checked, the pass rate and the cost counted.

A model may answer differently every time, so one good run proves little.
An evaluation runs a scenario many times, checks every trial with plain
code, and reports how many passed and what they cost. A mock model gives the
same answer whenever its script does: five identical replies pass five
times. A script whose replies vary plays a flaky model, and gives a pass
rate worth reading; a live run gives the real one.
Code: ``primer/evaluate.py`` (``repeated``, the checks, ``Evaluation``).
"""

from __future__ import annotations

from typing import Any

from primer.evaluate import all_of, answer_contains, called, repeated
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import shelf_price_of
from primer.tools import Tool

TOOLS: list[Tool[Any]] = [shelf_price_of]
PROMPT = "How much is a bottle of milk? Look it up."
TRIALS = 5

#: A trial passes when the model looked the price up and gave it.
CHECK = all_of(called("price_of"), answer_contains("1.20"))

same_script_every_time = Scenario(
    name="same_script_every_time",
    about="Five trials of one scripted story: 5 of 5 pass, because the script cannot do otherwise.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=repeated(TRIALS, CHECK),
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")] * TRIALS,
)

a_flaky_model = Scenario(
    name="a_flaky_model",
    about="A script that varies as a real model might: a guess, a wrong item. 3 of 5 pass.",
    prompt=PROMPT,
    tools=TOOLS,
    loop=repeated(TRIALS, CHECK),
    mock=[
        # trial 1: looks it up, answers
        ask(call("price_of", item="milk")),
        say("Milk is 1.20."),
        # trial 2: answers from memory, without the tool
        say("Milk is about 1.00."),
        # trial 3: looks it up, answers
        ask(call("price_of", item="milk")),
        say("A bottle of milk is 1.20."),
        # trial 4: looks up the wrong item
        ask(call("price_of", item="butter")),
        say("Milk is 3.10."),
        # trial 5: looks it up, answers
        ask(call("price_of", item="milk")),
        say("1.20 for a bottle of milk."),
    ],
)
