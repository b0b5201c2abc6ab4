"""Chapter 12: tool choice, parallel calls, strict schemas and structured output.

The chapter's mock stories (what each turn was sent and how each run ends),
the library behind them (settings checked when a scenario is declared, the
mock held to what was asked, closed schemas, the live request's body), and
the page's pointers into the traces.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel, ConfigDict

from primer.chapters import ch12_tool_choice as ch12
from primer.clock import VirtualClock
from primer.errors import ChapterError
from primer.grocery import GroceryItem, PriceOf
from primer.loop import until_answer
from primer.models.live import LiveModel
from primer.models.mock import MockReply, ask, call, say
from primer.redact import Redactor
from primer.runner import run_chapter, run_scenario
from primer.scenario import Scenario
from primer.structured import answer_format, schema_problems, strict_problems
from primer.summary import scenario_line
from primer.tool_choice import named
from primer.tools import ToolContext, tool, wire_parameters
from primer.trace import Message, ScenarioRun
from primer.wire import RecordingClient
from tests.servers.provider import ReplayProvider

ITEMS = "'bread', 'butter', 'chips', 'milk'"
PAGE = " ".join((Path(__file__).resolve().parent.parent / "docs" / "ch12_tool_choice.md").read_text().split())


@pytest.fixture(scope="module")
def runs() -> dict[str, ScenarioRun]:
    return {s.name: s for s in run_chapter("ch12_tool_choice").scenarios}


def kept_note(run: ScenarioRun, turn: int) -> dict[str, Any]:
    (note,) = [n for n in run.turns[turn - 1].model_call.notes if n.label == "the script kept to what was asked"]
    return note.data


# -- the chapter's stories --------------------------------------------------------------------------------------------


def test_required_forces_the_first_call_and_the_next_turn_is_sent_auto(runs: dict[str, ScenarioRun]) -> None:
    run = runs["must_call_a_tool"]
    assert [t.model_call.settings["tool_choice"] for t in run.turns] == ["required", "auto"]
    assert kept_note(run, 1) == {"tool_choice": "required", "kept": True}
    assert kept_note(run, 2) == {"tool_choice": "auto", "kept": True}
    assert [tool.name for tool in run.turns[0].tools] == ["price_of"]
    assert "tool_choice=required" in scenario_line(run)
    assert '`"tool_choice": "auto"`' in PAGE


def test_a_named_tool_comes_back_with_stop_and_the_loop_still_runs_it(runs: dict[str, ScenarioRun]) -> None:
    run = runs["named_tool_says_stop"]
    first, second = run.turns
    assert first.model_call.finish_reason == "stop"
    assert first.model_call.reply is not None
    assert [(c.name, c.arguments) for c in first.model_call.reply.tool_calls] == [("price_of", {"item": "butter"})]
    assert [t.result for t in first.tools] == ["3.10"]
    assert second.model_call.settings == {"tool_choice": "auto"}
    assert (run.ending.reason, run.ending.finish_reason) == ("answer_received", "stop")
    assert "tool_choice=function:price_of" in scenario_line(run)
    assert "`tool_choice=function:price_of`" in PAGE
    assert "`returned: 3.10`" in PAGE


def test_none_keeps_the_tools_declared_and_the_reply_in_text(runs: dict[str, ScenarioRun]) -> None:
    run = runs["no_tools_this_time"]
    (turn,) = run.turns
    assert [t.name for t in turn.model_call.tools] == ["lowest_stock_item", "price_of"]
    assert turn.model_call.reply is not None
    assert turn.model_call.reply.tool_calls == []
    assert kept_note(run, 1) == {"tool_choice": "none", "kept": True}


def test_one_call_per_reply_takes_a_turn_per_price(runs: dict[str, ScenarioRun]) -> None:
    run = runs["one_call_at_a_time"]
    assert len(run.turns) == 3
    assert [len(t.tools) for t in run.turns] == [1, 1, 0]
    assert all(t.model_call.settings == {"parallel_tool_calls": False} for t in run.turns)
    assert "Three turns instead of two" in PAGE


def test_a_strict_tool_and_an_answer_that_fits_the_schema(runs: dict[str, ScenarioRun]) -> None:
    run = runs["answer_as_json"]
    declared = {t.name: t for t in run.turns[0].model_call.tools}
    assert declared["price_of"].parameters["additionalProperties"] is False
    assert kept_note(run, 1) == {"response_format": "price_answer", "strict_tools": ["price_of"], "kept": True}
    answer = run.turns[-1].model_call.reply
    assert answer is not None
    assert ch12.PriceAnswer.model_validate_json(answer.content or "").item == GroceryItem.chips
    assert "response_format=json_schema:price_answer" in scenario_line(run)
    assert "`response_format=json_schema:price_answer`" in PAGE


# -- settings checked when a scenario is declared ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"tool_choice": "always"}, "tool_choice is 'always': use 'auto', 'none', 'required' or named('a_tool')"),
        ({"tool_choice": named("stock_of")}, "tool_choice names 'stock_of', which is not one of its tools"),
        ({"parallel_tool_calls": "no"}, "parallel_tool_calls is 'no': use True or False"),
        ({"response_format": {"type": "json_schema"}}, "response_format is"),
    ],
)
def test_a_scenario_with_settings_no_provider_would_take_is_an_error_naming_it(
    settings: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ChapterError, match=r"^Scenario 'wrong': ") as raised:
        Scenario(name="wrong", prompt="?", tools=ch12.TOOLS, mock=[say("x")], settings=settings)
    assert problem in str(raised.value)


def test_required_without_tools_is_an_error() -> None:
    with pytest.raises(ChapterError, match="tool_choice is 'required', but it declares no tools"):
        Scenario(name="bare", prompt="?", tools=[], mock=[say("x")], settings={"tool_choice": "required"})


# -- the mock model held to what was asked ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "reply", "broken"),
    [
        ({"tool_choice": "none"}, ask(call("price_of", item="milk")), "it calls price_of, but tool_choice is 'none'"),
        ({"tool_choice": "required"}, say("1.20"), "it calls no tool, but tool_choice is 'required'"),
        (
            {"tool_choice": named("price_of")},
            ask(call("lowest_stock_item")),
            "it calls lowest_stock_item, but tool_choice names 'price_of' alone",
        ),
        (
            {"parallel_tool_calls": False},
            ask(call("price_of", item="milk"), call("price_of", item="bread")),
            "it makes 2 calls at once, but parallel_tool_calls is False",
        ),
        (
            {"response_format": answer_format(ch12.PriceAnswer)},
            say('{"item": "milk", "price": 1.2}'),
            "its JSON does not match the schema: answer.note is required; answer.price should be string, not 1.2",
        ),
        ({"response_format": {"type": "json_object"}}, say("Milk is 1.20."), "its text is not JSON"),
    ],
)
def test_a_script_that_breaks_what_was_asked_ends_the_scenario_naming_it(
    settings: dict[str, Any], reply: MockReply, broken: str
) -> None:
    scenario = Scenario(
        name="disobeys", prompt="?", tools=ch12.TOOLS, mock=[reply, say("x")], settings=settings, loop=until_answer
    )
    run = run_scenario(scenario)
    assert run.ending.reason == "scenario_error"
    (turn,) = run.turns
    assert turn.model_call.reply is None
    assert turn.model_call.error is not None
    assert turn.model_call.error.type == "ScriptDisobeys"
    message = turn.model_call.error.message
    assert message.startswith("Reply 1 of the mock model of disobeys does not do what was asked: ")
    assert broken in message
    assert message.endswith("Change the scripted reply, or what the scenario asks.")
    assert kept_note(run, 1)["kept"] is False


def test_a_strict_tools_scripted_arguments_are_held_to_its_schema() -> None:
    scenario = Scenario(
        name="cheese", prompt="?", tools=[ch12.strict_price_of], mock=[ask(call("price_of", item="cheese"))]
    )
    run = run_scenario(scenario)
    assert run.turns[0].model_call.error is not None
    assert "price_of's arguments.item should be one of 'bread', 'butter', 'chips', 'milk', not 'cheese', " in (
        run.turns[0].model_call.error.message
    )
    assert "but price_of is strict" in run.turns[0].model_call.error.message


def test_a_reply_cut_off_by_the_token_limit_is_not_held_to_the_answer_format() -> None:
    scenario = Scenario(
        name="cut",
        prompt="?",
        tools=ch12.TOOLS,
        mock=[MockReply(text='{"item": "mi', finish_reason="length")],
        settings={"response_format": answer_format(ch12.PriceAnswer)},
        loop=until_answer,
    )
    assert run_scenario(scenario).ending.reason == "tokens_exhausted"


# -- closed schemas ---------------------------------------------------------------------------------------------------


class Open(BaseModel):
    """Not closed: extra fields allowed, and a default."""

    model_config = ConfigDict(title="open")
    item: GroceryItem
    quantity: int = 1


def test_a_strict_tool_must_have_a_closed_schema_and_the_error_names_it() -> None:
    with pytest.raises(ChapterError) as raised:

        @tool(Open, strict=True)
        def open_tool(args: Open, ctx: ToolContext) -> str:
            return ""

    message = str(raised.value)
    assert message.startswith("The tool 'open' is declared strict, but its schema is not closed: ")
    assert "open allows properties it does not list; open does not require quantity" in message
    assert "ConfigDict(extra='forbid')" in message


def test_an_answer_format_must_be_closed() -> None:
    with pytest.raises(ValueError, match=r"The answer format 'open' \(Open\) cannot be strict"):
        answer_format(Open)


def test_strict_problems_look_inside_nested_objects_and_arrays() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["lines"],
        "properties": {"lines": {"type": "array", "items": {"type": "object", "properties": {"item": {}}}}},
    }
    assert strict_problems(schema) == [
        "arguments.lines[] allows properties it does not list",
        "arguments.lines[] does not require item",
    ]
    assert strict_problems(wire_parameters(ch12.StrictPriceOf.model_json_schema())) == []
    assert strict_problems(wire_parameters(PriceOf.model_json_schema())) == [
        "arguments allows properties it does not list"
    ]


@pytest.mark.parametrize(
    ("value", "problems"),
    [
        ({"item": "milk", "price": "1.20", "note": "ok"}, []),
        ({"item": "milk", "price": "1.20", "note": "ok", "x": 1}, ["answer.x is not allowed"]),
        ({"item": "tea", "price": "1.20", "note": "ok"}, [f"answer.item should be one of {ITEMS}, not 'tea'"]),
        (["milk"], ["answer should be object, not ['milk']"]),
    ],
)  # fmt: skip
def test_schema_problems_check_what_strict_schemas_say(value: Any, problems: list[str]) -> None:
    schema = answer_format(ch12.PriceAnswer)["json_schema"]["schema"]
    assert schema_problems(value, schema) == problems


def test_schema_problems_know_json_numbers_and_any_of() -> None:
    assert schema_problems(True, {"type": "integer"}) == ["answer should be integer, not True"]
    assert schema_problems(2.0, {"type": "integer"}) == []
    assert schema_problems(None, {"anyOf": [{"type": "string"}, {"type": "null"}]}) == []
    assert schema_problems(1, {"anyOf": [{"type": "string"}, {"type": "null"}]}) == [
        "answer matches none of its 2 allowed forms"
    ]


def test_an_answer_format_is_named_described_and_strict() -> None:
    assert answer_format(ch12.PriceAnswer) == {
        "type": "json_schema",
        "json_schema": {
            "name": "price_answer",
            "schema": {
                "additionalProperties": False,
                "properties": {
                    "item": {"enum": ["bread", "butter", "chips", "milk"], "type": "string"},
                    "price": {"type": "string"},
                    "note": {"type": "string"},
                },
                "required": ["item", "price", "note"],
                "type": "object",
            },
            "strict": True,
            "description": "The answer: the item, its price in pounds, and one short sentence about it.",
        },
    }


# -- the live request -------------------------------------------------------------------------------------------------


def live_model(answer: Callable[[httpx2.Request], httpx2.Response]) -> LiveModel:
    clock = VirtualClock()
    client = RecordingClient(clock=clock, redactor=Redactor(), transport=httpx2.MockTransport(answer))
    return LiveModel(
        base_url="https://provider.test/v1", api_key="sk-test-1234", model="m", clock=clock, http_client=client
    )


def test_the_live_request_carries_the_settings_and_the_strict_declaration() -> None:
    sent: list[dict[str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        body = ReplayProvider.completion(tool_calls=[("price_of", {"item": "milk"})], finish_reason="stop")
        return httpx2.Response(200, json=body)

    model = live_model(answer)
    settings = {
        "tool_choice": named("price_of"),
        "parallel_tool_calls": False,
        "response_format": answer_format(ch12.PriceAnswer),
    }
    try:
        record = model.complete(
            [Message(role="human", content="?")], [ch12.strict_price_of, ch12.lowest_stock_item], settings
        )
    finally:
        model.close()

    (body,) = sent
    assert body["tool_choice"] == {"type": "function", "function": {"name": "price_of"}}
    assert body["parallel_tool_calls"] is False
    assert body["response_format"]["json_schema"]["name"] == "price_answer"
    assert [t["function"].get("strict") for t in body["tools"]] == [True, None]
    # Shaping settings are not sampling parameters: not listed as left to the provider.
    defaulted = record.exchanges[0].request.defaulted or []
    assert "parallel_tool_calls" not in defaulted
    assert "tool_choice" not in defaulted
    # The reply that names a tool and says stop is read as both.
    assert record.finish_reason == "stop"
    assert record.reply is not None
    assert [c.name for c in record.reply.tool_calls] == ["price_of"]
