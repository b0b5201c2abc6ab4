"""Guardrails: checks in plain code before the model sees a message and before the customer sees a reply.

An input check stops a message before any model call: a card number never
reaches the provider. An output check rejects an answer the shop cannot
stand behind and asks the model again. And a check near its line lets a
message through, with a note in the trace for a person to look at.
Code: ``primer/guardrails.py`` (``guarded``, ``Verdict``, the shop's checks).
"""

from __future__ import annotations

from primer.guardrails import Check, guarded, no_card_numbers, no_discount_promises
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import place_order, shelf_price_of

INPUT: list[Check] = [no_card_numbers]
OUTPUT: list[Check] = [no_discount_promises]

card_number_stopped = Scenario(
    name="card_number_stopped",
    about="The second message holds a card number: the input check stops it before any model call.",
    prompt="How much is milk?",
    tools=[shelf_price_of, place_order],
    loop=guarded(
        input_checks=INPUT, output_checks=OUTPUT, then=["Then order 2 bottles and charge my card 4111 1111 1111 1111."]
    ),
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)

promise_rejected = Scenario(
    name="promise_rejected",
    about="The answer promises a discount: the output check does not send it, and the model answers again.",
    prompt="Is milk cheaper if I buy ten bottles?",
    tools=[shelf_price_of, place_order],
    loop=guarded(input_checks=INPUT, output_checks=OUTPUT),
    mock=[
        ask(call("price_of", item="milk")),
        say("Yes! Buy ten and you get 10% off: ten bottles for 10.80."),
        say("No: milk is 1.20 a bottle however many you buy, so ten cost 12.00."),
    ],
)

loyalty_number_let_through = Scenario(
    name="loyalty_number_let_through",
    about="A 16-digit loyalty number is no card number: the check lets it through, with a note.",
    prompt="Order 2 bottles of milk for loyalty card 6012 3456 7890 1235, please.",
    tools=[shelf_price_of, place_order],
    loop=guarded(input_checks=INPUT, output_checks=OUTPUT),
    mock=[ask(call("place_order", item="milk", quantity=2)), say("Ordered 2 bottles of milk.")],
)
