"""Every chapter of the book runs in mock mode, through the command line, and tells its story.

Each chapter's scenarios are scripted to show one idea; the tests below check
that the run really shows it (the ending, the failure classification, the
message the model is sent back, the simulated seconds), so a change in the
library that would make a chapter's prose wrong fails here first.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from primer.chapters import chapter_names, scenarios_of
from primer.cli import main
from primer.context_cost import context_cost
from primer.runner import run_chapter
from primer.script_check import unused_warnings
from primer.summary import scenario_line
from primer.tools import wire_parameters
from primer.trace import Backoff, ChapterRun, ScenarioRun, ToolRun

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: The ending each scenario is written to reach, chapter by chapter.
ENDINGS: dict[str, dict[str, str]] = {
    "ch01_one_call": {
        "plain_question": "answer_received",
        "one_word_answers": "answer_received",
        "settings_on_the_wire": "answer_received",
    },
    "ch02_declaring_a_tool": {
        "tool_it_needs": "no_tool_calls",
        "tool_it_ignores": "no_tool_calls",
        "how_many_left": "no_tool_calls",
    },
    "ch03_the_loop": {"one_thing_leads_to_another": "no_tool_calls", "keeps_asking": "turn_limit"},
    "ch04_context_grows": {"one_price_per_turn": "no_tool_calls", "long_tool_answer": "no_tool_calls"},
    "ch05_loop_endings": {"within_token_limit": "answer_received", "tokens_exhausted": "tokens_exhausted"},
    "ch06_several_calls": {
        "three_prices_at_once": "no_tool_calls",
        "one_of_three_fails": "no_tool_calls",
        "split_order": "no_tool_calls",
    },
    "ch07_wrong_arguments": {
        "item_not_sold": "no_tool_calls",
        "quantity_missing": "no_tool_calls",
        "tool_that_does_not_exist": "no_tool_calls",
    },
    "ch08_deadlines": {
        "slow_but_in_time": "no_tool_calls",
        "lookup_retried_after_timeout": "no_tool_calls",
        "lookup_never_answers": "no_tool_calls",
        "order_not_retried": "no_tool_calls",
        "trickle_outlasts_the_timeout": "no_tool_calls",
        "deadline_for_the_attempt": "no_tool_calls",
        "busy_for_too_long": "no_tool_calls",
    },
    "ch09_who_retries": {
        "service_is_busy": "no_tool_calls",
        "order_may_have_landed": "no_tool_calls",
        "arguments_are_wrong": "no_tool_calls",
        "service_says_no": "no_tool_calls",
    },
    "ch10_testing_agents": {
        "fake_service_answers": "no_tool_calls",
        "waits_are_simulated": "no_tool_calls",
        "script_does_not_read": "no_tool_calls",
    },
    "ch11_streaming": {
        "words_as_they_come": "answer_received",
        "two_calls_in_pieces": "no_tool_calls",
        "cut_mid_sentence": "tokens_exhausted",
    },
    "ch12_tool_choice": {
        "must_call_a_tool": "answer_received",
        "named_tool_says_stop": "answer_received",
        "no_tools_this_time": "answer_received",
        "one_call_at_a_time": "answer_received",
        "answer_as_json": "answer_received",
    },
    "ch13_idempotency_keys": {
        "key_alone_changes_nothing": "no_tool_calls",
        "retried_with_the_same_key": "no_tool_calls",
        "two_orders_two_keys": "no_tool_calls",
    },
    "ch14_untrusted_output": {
        "instruction_in_a_review": "no_tool_calls",
        "review_talks_the_model_round": "no_tool_calls",
        "order_approved": "no_tool_calls",
    },
    "ch15_workflows": {
        "routed_to_orders": "no_tool_calls",
        "router_answers_no_route": "no_tool_calls",
        "label_reviewed_until_right": "no_tool_calls",
    },
    "ch16_evaluation": {"same_script_every_time": "no_tool_calls", "a_flaky_model": "no_tool_calls"},
    "ch17_long_contexts": {
        "whole_history": "no_tool_calls",
        "last_messages_only": "no_tool_calls",
        "summarised_history": "no_tool_calls",
    },
    "ch18_three_ways": {
        "own_loop": "no_tool_calls",
        "pydantic_ai": "answer_received",
        "agents_sdk": "answer_received",
    },
    "ch19_mcp_tools": {
        "tool_found_and_called": "no_tool_calls",
        "tool_list_changed": "no_tool_calls",
        "tool_reports_an_error": "no_tool_calls",
    },
    "ch20_handoffs": {
        "handed_over_with_the_history": "no_tool_calls",
        "handed_over_with_a_brief": "no_tool_calls",
        "triage_answers_itself": "no_tool_calls",
        "handed_over_by_the_agents_sdk": "answer_received",
    },
    "ch21_reasoning_models": {
        "thinks_a_little": "answer_received",
        "thinks_hard": "answer_received",
        "reasoning_streams_first": "answer_received",
        "limit_spent_thinking": "tokens_exhausted",
    },
    "ch22_guardrails": {
        "card_number_stopped": "guardrail_tripped",
        "promise_rejected": "no_tool_calls",
        "loyalty_number_let_through": "no_tool_calls",
    },
}


def mock_env() -> dict[str, str]:
    """The environment with every PRIMER_ variable removed: no key, mock only."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}


def run(chapter: str) -> dict[str, ScenarioRun]:
    return {s.name: s for s in run_chapter(chapter).scenarios}


def tools_of(scenario: ScenarioRun) -> list[ToolRun]:
    return [tool for turn in scenario.turns for tool in turn.tools]


def page(chapter: str) -> str:
    return " ".join((DOCS / f"{chapter}.md").read_text(encoding="utf-8").split())


# --- the book as a whole -------------------------------------------------------------------


def test_the_book_has_ten_chapters_in_order_with_the_seeds_in_their_places() -> None:
    names = chapter_names()
    assert [name[:4] for name in names] == [f"ch{n:02d}" for n in range(1, len(names) + 1)]
    assert len(names) >= 10
    assert names[4] == "ch05_loop_endings"
    assert names[8] == "ch09_who_retries"
    assert set(ENDINGS) == set(names), "every chapter's intended endings are listed here"


@pytest.mark.parametrize("chapter", chapter_names())
def test_every_chapter_has_at_least_two_scenarios_each_explained(chapter: str) -> None:
    scenarios = scenarios_of(chapter)
    assert len(scenarios) >= 2
    assert [s.name for s in scenarios] == list(ENDINGS[chapter])
    for scenario in scenarios:
        assert scenario.about, f"{chapter}.{scenario.name} says in one line what it shows"
        assert scenario.mock, f"{chapter}.{scenario.name} runs in mock mode"


@pytest.mark.parametrize("chapter", chapter_names())
def test_the_command_line_runs_every_chapter_without_a_key(
    chapter: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # In this process (a fresh one per chapter imported chapter 18's frameworks each time, 5 s apiece);
    # `python -m primer` as a command is run below and in tests/test_cli.py.
    for name in set(os.environ) - set(mock_env()):
        monkeypatch.delenv(name)
    monkeypatch.chdir(ROOT)
    status = main(["run", chapter])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == chapter
    assert lines[1].startswith("mock turns=")
    for name, reason in ENDINGS[chapter].items():
        (line,) = [line for line in lines if line.startswith(f"scenario {name} ")]
        assert f"ended: {reason}" in line


def test_the_command_line_prints_one_scenario_as_json() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "primer", "run", "ch08_deadlines", "--scenario", "lookup_never_answers", "--json"],
        capture_output=True,
        text=True,
        env=mock_env(),
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    chapter = ChapterRun.model_validate_json(result.stdout)
    (scenario,) = chapter.scenarios
    assert scenario.name == "lookup_never_answers"
    assert scenario.simulated_seconds == pytest.approx(6.15)


@pytest.mark.parametrize("chapter", chapter_names())
def test_every_scenario_ends_as_its_chapter_intends(chapter: str) -> None:
    for name, scenario in run(chapter).items():
        assert scenario.ending.reason == ENDINGS[chapter][name], scenario_line(scenario)
        assert scenario.error is None
        assert all(tool.error is None for tool in tools_of(scenario)), "no tool raised by accident"


@pytest.mark.parametrize("chapter", chapter_names())
def test_every_scenario_uses_its_whole_mock_script(chapter: str) -> None:
    # A reply (or an approval) the run never reaches tells a story the trace does not show.
    for scenario in run(chapter).values():
        assert unused_warnings(scenario) == []


def _without_ms(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ms(v) for k, v in value.items() if not k.endswith("_ms")}
    if isinstance(value, list):
        return [_without_ms(item) for item in value]
    return value


@pytest.mark.parametrize("chapter", chapter_names())
def test_mock_runs_are_the_same_every_time_apart_from_timings(chapter: str) -> None:
    first, second = (_without_ms(json.loads(run_chapter(chapter).model_dump_json())) for _ in range(2))
    assert first == second


# --- chapter by chapter: the runs show what the pages say --------------------------------------


def test_ch01_one_call_sends_two_messages_and_no_tools() -> None:
    runs = run("ch01_one_call")
    for scenario in runs.values():
        (turn,) = scenario.turns
        assert [m.role for m in turn.model_call.context] == ["system", "human"]
        assert turn.model_call.tools == []
        assert turn.model_call.finish_reason == "stop"
    assert runs["one_word_answers"].turns[0].model_call.context[0].content == "You answer in exactly one word."
    assert runs["settings_on_the_wire"].turns[0].model_call.settings == {"temperature": 0}
    assert runs["plain_question"].turns[0].model_call.settings == {}


def test_ch02_declaring_a_tool_offers_tools_the_model_may_ignore() -> None:
    runs = run("ch02_declaring_a_tool")
    assert [t.name for t in tools_of(runs["tool_it_needs"])] == ["price_of"]
    assert tools_of(runs["tool_it_needs"])[0].result == "0.95"
    ignored = runs["tool_it_ignores"]
    assert len(ignored.turns) == 1
    assert [t.name for t in ignored.turns[0].model_call.tools] == ["price_of", "stock_of"]
    (stock_of,) = [t for t in runs["how_many_left"].turns[0].model_call.tools if t.name == "stock_of"]
    assert stock_of.description == "How many of an item are on the shelf right now."
    assert "The shop sells nothing else." in stock_of.parameters["properties"]["item"]["description"]
    assert tools_of(runs["how_many_left"])[0].result == "9"
    # On the wire the $ref is inlined; the field's description must survive that.
    wire = wire_parameters(stock_of.parameters)
    assert wire["properties"]["item"]["description"] == "The item to count. The shop sells nothing else."
    assert wire["properties"]["item"]["enum"] == ["bread", "butter", "chips", "milk"]


def test_ch03_the_loop_waits_a_turn_for_an_answer_and_stops_at_its_limit() -> None:
    runs = run("ch03_the_loop")
    chain = runs["one_thing_leads_to_another"]
    second = chain.turns[1].model_call.context
    assert (second[-1].role, second[-1].content) == ("tool", "butter")
    assert tools_of(chain)[1].result == "ordered 1 x butter (reference ord-8812)"
    limited = runs["keeps_asking"]
    assert len(limited.turns) == 3
    assert limited.ending.detail == "stopped after 3 turns"


def test_ch04_the_page_quotes_the_context_cost_the_runs_show() -> None:
    runs = run("ch04_context_grows")
    text = page("ch04_context_grows")
    per_turn = context_cost(runs["one_price_per_turn"])
    sent = [t.messages for t in per_turn.turns]
    assert sent == [2, 4, 6, 8]
    assert "2, 4, 6 and 8 messages" in text
    assert f"{per_turn.messages_sent} messages in all" in text
    assert f"a transcript of {per_turn.transcript_messages}" in text
    long = runs["long_tool_answer"]
    report = tools_of(long)[0].result or ""
    cost = context_cost(long)
    resent = len(report) * (len(long.turns) - 1)
    assert f"{len(report)} characters" in text
    assert f"{resent:,} of the {cost.characters_sent:,} characters" in text


def test_ch06_several_calls_answer_each_call_by_its_id() -> None:
    runs = run("ch06_several_calls")
    for scenario in runs.values():
        first = scenario.turns[0]
        calls = first.model_call.reply.tool_calls if first.model_call.reply else []
        assert len(calls) >= 2
        answers = scenario.turns[1].model_call.context[-len(calls) :]
        assert [m.tool_call_id for m in answers] == [c.id for c in calls]
        assert all(m.role == "tool" for m in answers)
    failed = [t.failure is not None for t in tools_of(runs["one_of_three_fails"])]
    assert failed == [False, True, False]
    assert tools_of(runs["one_of_three_fails"])[1].message.endswith("It will not succeed. Answer without it.")
    split = runs["split_order"].turns[0].model_call.reply
    assert split is not None
    assert split.content
    assert [c.arguments["quantity"] for c in split.tool_calls] == [12, 8]
    text = page("ch06_several_calls")
    assert f"{context_cost(runs['three_prices_at_once']).messages_sent} messages" in text


def test_ch07_wrong_calls_are_the_callers_to_fix_and_send_nothing() -> None:
    runs = run("ch07_wrong_arguments")
    for scenario in runs.values():
        first = tools_of(scenario)[0]
        assert first.failure is not None
        assert first.failure.caller_can_fix
        assert not first.failure.retryable
        assert first.message.endswith("Correct them and call it again.")
        assert all(a.request is None for a in first.attempts), "nothing went to the service"
    assert "item ['cheese'] input should be 'bread', 'butter', 'chips' or 'milk'" in (
        tools_of(runs["item_not_sold"])[0].message
    )
    assert tools_of(runs["quantity_missing"])[0].failure.message == "quantity is required"  # type: ignore[union-attr]
    undeclared = tools_of(runs["tool_that_does_not_exist"])[0]
    assert undeclared.name == "stock_levels"
    assert undeclared.message == (
        "['stock_levels'] rejected the arguments: there is no such tool; "
        "the tools are ['lowest_stock_item, place_order, price_of']. Correct them and call it again."
    )
    assert tools_of(runs["tool_that_does_not_exist"])[1].result == "butter"
    assert tools_of(runs["item_not_sold"])[0].message in page("ch07_wrong_arguments"), "the page quotes it verbatim"


def test_ch08_deadlines_retry_a_lookup_but_never_an_order() -> None:
    runs = run("ch08_deadlines")
    text = page("ch08_deadlines")
    expected = {
        "slow_but_in_time": (1.0, 1, None),
        "lookup_retried_after_timeout": (2.05, 2, None),
        "lookup_never_answers": (6.15, 3, "It may work later. Answer without it."),
        "order_not_retried": (2.0, 1, "Do not call it again; say what is uncertain."),
        "trickle_outlasts_the_timeout": (4.0, 1, None),
        "deadline_for_the_attempt": (2.05, 2, None),
    }
    for name, (seconds, attempts, ends_with) in expected.items():
        scenario = runs[name]
        (tool,) = tools_of(scenario)
        assert scenario.simulated_seconds == pytest.approx(seconds)
        assert f"{seconds:g} s" in text, f"the page gives {name}'s {seconds:g} s"
        assert len(tool.attempts) == attempts
        if ends_with is None:
            assert tool.failure is None
        else:
            assert tool.message.endswith(ends_with)
    never = tools_of(runs["lookup_never_answers"])[0]
    assert [s.seconds for s in never.steps if isinstance(s, Backoff)] == [0.05, 0.1]
    # timeout=2.0 bounds each wait: the trickle's attempt took 4 s and never timed out.
    (trickle,) = tools_of(runs["trickle_outlasts_the_timeout"])
    assert trickle.attempts[0].response is not None
    assert trickle.attempts[0].response.text_body == "*****"
    assert "(4s simulated)" in scenario_line(runs["trickle_outlasts_the_timeout"])
    (bounded,) = tools_of(runs["deadline_for_the_attempt"])
    assert bounded.attempts[0].failure is not None
    assert bounded.attempts[0].failure.message.endswith("did not finish answering within the 2 s deadline")
    assert bounded.attempts[0].failure.message.split("] ", 1)[1] in text
    # A Retry-After past the limit: one attempt, no backoff, no simulated time, the asked wait in the message.
    busy = runs["busy_for_too_long"]
    (refused,) = tools_of(busy)
    assert [s.kind for s in refused.steps] == ["attempt"]
    assert busy.simulated_seconds == 0.0
    assert refused.failure is not None
    assert refused.failure.message in " ".join(text.split()).replace("` `", " ")
    assert refused.message.endswith("It may work later. Answer without it.")


def test_ch09_who_retries_sends_the_seed_messages() -> None:
    runs = run("ch09_who_retries")
    assert tools_of(runs["arguments_are_wrong"])[0].message == (
        "['place_order'] rejected the arguments: quantity ['20'] must be between 1 and 12. "
        "Correct them and call it again."
    )
    assert tools_of(runs["service_says_no"])[0].message == (
        "['price_of'] failed: ['https://httpbin.org'] answered ['404']. It will not succeed. Answer without it."
    )
    assert tools_of(runs["order_may_have_landed"])[0].message == (
        "['place_order'] did not confirm: ['https://httpbin.org'] did not answer in time, and the call may have "
        "been received. It may have taken effect. Do not call it again; say what is uncertain."
    )
    assert len(tools_of(runs["service_is_busy"])[0].attempts) == 2


def test_ch10_the_page_includes_its_example_test_whole() -> None:
    # The example is a real test (tests/test_ch10_example.py): the page must show it, not a copy.
    text = (DOCS / "ch10_testing_agents.md").read_text(encoding="utf-8")
    assert re.search(r'^ *--8<-- "tests/test_ch10_example\.py"$', text, re.M)
