"""Deadlines: how long a tool may take, and what a timeout means.

The service client waits a fixed time for each part of an answer
(``RetryPolicy.timeout``, 2 seconds). A timeout is not a "no": the service
may still be working on the call. A lookup can simply be asked again; an
order cannot, since the first one may have landed. The worst case of a lookup
is every attempt timing out: attempts times the timeout, plus the waits
between them. The timeout bounds each wait, not the attempt: a trickling
answer outlasts it, and only a deadline for the whole attempt
(``RetryPolicy.attempt_deadline``) stops that. A busy service that asks for a
longer wait than the client gives (``Retry-After`` past
``RetryPolicy.max_retry_after``) is not called again early: the call gives up.
Code: ``primer/service.py`` (``RetryPolicy``, ``ServiceCall``) and
``primer/mock_service.py`` (``/delay/N`` and ``/drip`` on the virtual clock).
"""

from __future__ import annotations

from typing import Any

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.service import RetryPolicy
from primer.shop import place_order, price_of
from primer.tools import Tool

TOOLS: list[Tool[Any]] = [place_order, price_of]

slow_but_in_time = Scenario(
    name="slow_but_in_time",
    about="The service takes a second, inside the two-second timeout: one attempt, one answer.",
    prompt="How much is bread?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/1"],
    mock=[ask(call("price_of", item="bread")), say("Bread is 1.45.")],
)

lookup_retried_after_timeout = Scenario(
    name="lookup_retried_after_timeout",
    about="The first lookup times out; asking again is harmless, and the second answers.",
    prompt="How much is butter?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10", "/get"],
    mock=[ask(call("price_of", item="butter")), say("Butter is 3.10.")],
)

lookup_never_answers = Scenario(
    name="lookup_never_answers",
    about="Every attempt times out: three timeouts and two waits before the model hears anything.",
    prompt="How much is a bag of chips?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10"],
    mock=[
        ask(call("price_of", item="chips")),
        say("The price list is not answering right now, so I cannot tell you what chips cost."),
    ],
)

order_not_retried = Scenario(
    name="order_not_retried",
    about="The order times out once and is not sent again: it may have landed.",
    prompt="Order 3 loaves of bread.",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/delay/10"],
    mock=[
        ask(call("place_order", item="bread", quantity=3)),
        say("I sent the order for 3 loaves, but it was not confirmed in time. Check before ordering again."),
    ],
)

trickle_outlasts_the_timeout = Scenario(
    name="trickle_outlasts_the_timeout",
    about="The price comes a byte a second: no wait reaches the 2 s timeout, and the attempt takes 4 s.",
    prompt="How much is milk?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/drip?duration=5&numbytes=5"],
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)

deadline_for_the_attempt = Scenario(
    name="deadline_for_the_attempt",
    about="The same trickle with a 2 s deadline on the whole attempt: stopped at 2 s, asked again, answered.",
    prompt="How much is milk?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/drip?duration=5&numbytes=5", "/get"],
    policy=RetryPolicy(attempt_deadline=2.0),
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)

busy_for_too_long = Scenario(
    name="busy_for_too_long",
    about="The service is busy and asks for 30 s; the client waits 2 s at most, so it gives up at once.",
    prompt="How much is butter?",
    tools=TOOLS,
    loop=until_no_tool_calls,
    service=["/status/429?retry_after=30"],
    mock=[
        ask(call("price_of", item="butter")),
        say("The price list is busy for the next half minute, so I cannot tell you what butter costs right now."),
    ],
)
