"""Workflows: routing and evaluator-optimizer, built from the loop of chapter 3.

Not every job needs the model to choose its own path. A workflow is a path
written in code: each step is one model call (or one small loop) with its
own system prompt and tools, and code decides what comes next. Routing sends
a message to the step that handles its kind; evaluator-optimizer has one
model draft and another check, round after round.
Code: ``primer/workflows.py`` (``Step``, ``run_step``, ``routing``,
``evaluator_optimizer``, ``chain``).
"""

from __future__ import annotations

from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order, shelf_price_of
from primer.workflows import Step, evaluator_optimizer, routing

ROUTES = {
    "orders": Step(
        name="orders",
        about="the customer wants to order something",
        system="You place the orders customers ask for. Use the tools you are given, then confirm briefly.",
        tools=[place_order],
    ),
    "prices": Step(
        name="prices",
        about="the customer asks what something costs",
        system="You answer questions about prices. Look each price up; never guess.",
        tools=[shelf_price_of],
    ),
    "other": Step(
        name="other",
        about="anything else",
        system="You answer briefly and politely. You cannot order or look anything up.",
    ),
}

routed_to_orders = Scenario(
    name="routed_to_orders",
    about="One call sorts the message (orders); the orders step, with only place_order, handles it.",
    prompt="Could you send over 2 bottles of milk?",
    tools=[place_order, shelf_price_of],
    loop=routing(ROUTES, default="other"),
    mock=[
        say("orders"),
        ask(call("place_order", item="milk", quantity=2)),
        say("Ordered 2 bottles of milk."),
    ],
)

router_answers_no_route = Scenario(
    name="router_answers_no_route",
    about="The router answers with a word that is no route: code sends the message to the default.",
    prompt="Do you deliver on Sundays?",
    tools=[place_order, shelf_price_of],
    loop=routing(ROUTES, default="other"),
    mock=[
        say("delivery"),
        say("I cannot check deliveries from here: please ask at the counter."),
    ],
)

WRITER = Step(
    name="writer",
    system="You write shelf labels for a grocery shop: one line, at most 12 words. Look up what you need.",
    tools=[shelf_price_of],
)
EVALUATOR = Step(
    name="evaluator",
    system=(
        "You check a shelf label against the task. If it does everything the task asks, answer PASS and nothing "
        "else. Otherwise answer FIX: and say what is missing."
    ),
)

label_reviewed_until_right = Scenario(
    name="label_reviewed_until_right",
    about="The writer's first label has no price; the evaluator says so; the second passes.",
    prompt="Write a shelf label for butter that gives its price.",
    tools=[shelf_price_of],
    loop=evaluator_optimizer(WRITER, EVALUATOR, rounds=3),
    mock=[
        say("Butter: creamy, and it spreads straight from the fridge."),
        say("FIX: the label gives no price."),
        ask(call("price_of", item="butter")),
        say("Butter: creamy, spreads straight from the fridge. 3.10"),
        say("PASS"),
    ],
)
