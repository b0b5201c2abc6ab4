"""Chapter 10's example: testing an agent on a scripted model and a fake service.

The chapter page shows this file whole, so keep it short and readable.
"""

import time

from primer.chapters.ch10_testing_agents import script_does_not_read, waits_are_simulated
from primer.runner import run_scenario
from primer.trace import Backoff


def test_a_busy_service_is_waited_for_on_the_virtual_clock() -> None:
    started = time.perf_counter()
    run = run_scenario(waits_are_simulated)  # mock mode: no key, no network
    took = time.perf_counter() - started

    (price_of,) = run.turns[0].tools
    statuses = [a.response.status for a in price_of.attempts if a.response]
    assert statuses == [503, 503, 200]
    assert [s.seconds for s in price_of.steps if isinstance(s, Backoff)] == [1.0, 1.0]
    assert run.simulated_seconds == 2.0  # what the trace says was waited...
    assert took < run.simulated_seconds  # ...and nobody waited it


def test_a_script_is_checked_on_what_the_agent_did() -> None:
    run = run_scenario(script_does_not_read)
    (price_of,) = run.turns[0].tools
    assert price_of.failure is not None
    assert not price_of.failure.retryable
    assert run.transcript[-2].content == price_of.message  # the model was told
    # The last message says "Milk is 1.20." whatever happened: it was scripted.
