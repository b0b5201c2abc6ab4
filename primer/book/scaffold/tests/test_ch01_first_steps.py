"""Chapter 1: what its page says the traces show (run with `python -m pytest` from the book's folder)."""

from __future__ import annotations

from __PACKAGE__.ch01_first_steps import answers_at_once, calls_a_tool

from primer.runner import run_scenario


def test_an_answer_at_once_takes_one_turn() -> None:
    run = run_scenario(answers_at_once)  # mock mode: no key, no network
    assert len(run.turns) == 1
    assert run.ending.reason == "no_tool_calls"


def test_the_tool_runs_and_its_result_goes_back() -> None:
    run = run_scenario(calls_a_tool)
    (spelt,) = run.turns[0].tools
    assert spelt.name == "spell"
    assert spelt.result == "T-R-A-C-E"
    assert run.turns[-1].model_call.reply is not None
