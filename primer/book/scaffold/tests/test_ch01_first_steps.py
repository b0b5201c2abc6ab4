"""Chapter 1: what its page says the traces show (run with `python -m pytest` from the book's folder)."""

from __PACKAGE__.ch01_first_steps import calls_a_tool, weather_by_hand

from primer.runner import run_scenario


def test_the_tool_runs_and_its_result_goes_back() -> None:
    run = run_scenario(calls_a_tool)  # mock mode: no key, no network
    (spelt,) = run.turns[0].tools
    assert spelt.name == "spell"
    assert spelt.result == "T-R-A-C-E"
    assert run.ending.reason == "no_tool_calls"


def test_the_hand_written_loop_calls_its_service() -> None:
    run = run_scenario(weather_by_hand)  # the scripted provider and the mock weather service
    assert len(run.turns) == 2
    (weather,) = run.turns[0].tools
    assert weather.name == "weather_in"
    assert run.error is None
