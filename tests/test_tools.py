"""Tools declared from pydantic models: schemas exactly as the seeds print them, and refusals.

The schema strings below are copied from the seed pages' "declared tools"
tables (printed there with sorted keys); the wire forms from the seeds' live
requests.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict

from primer.chapters import ch05_loop_endings, ch09_who_retries
from primer.errors import ArgumentsRejected
from primer.grocery import LowestStockItem, PlaceOrder, PriceOf
from primer.tools import Tool, ToolContext, tool, wire_parameters
from primer.trace import Message, ToolCall

SEED_SCHEMAS = {
    "lowest_stock_item": (
        '{"description": "Which item there is least of in stock.", "properties": {}, '
        '"title": "lowest_stock_item", "type": "object"}'
    ),
    "price_of": (
        '{"$defs": {"GroceryItem": {"enum": ["bread", "butter", "chips", "milk"], "type": "string"}}, '
        '"description": "The current shelf price of one of an item, in pounds.", '
        '"properties": {"item": {"$ref": "#/$defs/GroceryItem"}}, "required": ["item"], '
        '"title": "price_of", "type": "object"}'
    ),
    "place_order": (
        '{"$defs": {"GroceryItem": {"enum": ["bread", "butter", "chips", "milk"], "type": "string"}}, '
        '"description": "Order a quantity of an item. Placing an order twice orders it twice.", '
        '"properties": {"item": {"$ref": "#/$defs/GroceryItem"}, "quantity": {"title": "Quantity", '
        '"type": "integer"}}, "required": ["item", "quantity"], "title": "place_order", "type": "object"}'
    ),
}

SEED_DESCRIPTIONS = {
    "lowest_stock_item": "Which item there is least of in stock.",
    "price_of": "The current shelf price of one of an item, in pounds.",
    "place_order": "Order a quantity of an item. Placing an order twice orders it twice.",
}

ENUM = {"enum": ["bread", "butter", "chips", "milk"], "type": "string"}
SEED_WIRE = {
    "lowest_stock_item": {"properties": {}, "type": "object"},
    "price_of": {"properties": {"item": ENUM}, "required": ["item"], "type": "object"},
    "place_order": {
        "properties": {"item": ENUM, "quantity": {"type": "integer"}},
        "required": ["item", "quantity"],
        "type": "object",
    },
}

ALL_TOOLS = {t.name: t for t in [*ch05_loop_endings.TOOLS, *ch09_who_retries.TOOLS]}


@pytest.mark.parametrize("name", sorted(SEED_SCHEMAS))
def test_declared_schema_is_exactly_the_seeds(name: str) -> None:
    declared = ALL_TOOLS[name].declared()
    assert declared.name == name
    assert declared.description == SEED_DESCRIPTIONS[name]
    assert json.dumps(declared.parameters, sort_keys=True) == SEED_SCHEMAS[name]


@pytest.mark.parametrize("name", sorted(SEED_WIRE))
def test_wire_parameters_are_the_seeds_live_request(name: str) -> None:
    schema = ALL_TOOLS[name].schema()
    assert wire_parameters(schema) == SEED_WIRE[name]
    # Inlining must not change the declared schema it was made from.
    assert json.dumps(schema, sort_keys=True) == SEED_SCHEMAS[name]


def test_both_chapters_declare_the_same_argument_models_the_same_way() -> None:
    assert ch05_loop_endings.price_of.declared() == ch09_who_retries.price_of.declared()
    assert [t.name for t in ch09_who_retries.TOOLS] == ["place_order", "price_of"]
    assert [t.name for t in ch05_loop_endings.TOOLS] == ["lowest_stock_item", "price_of"]
    assert {PriceOf, PlaceOrder, LowestStockItem} == {t.args for t in ALL_TOOLS.values()}


def test_a_tool_without_a_title_is_named_by_its_class_and_described_by_its_docstring() -> None:
    class look_up(BaseModel):
        """Find a thing."""

        what: str

    @tool(look_up)
    def run(args: look_up, ctx: ToolContext) -> str:
        return args.what.upper()

    assert (run.name, run.description) == ("look_up", "Find a thing.")
    assert run({"what": "milk"}, ToolContext()) == "MILK"


# -- refusals ---------------------------------------------------------------------------------------------------------


def test_the_order_limit_is_the_tools_own_refusal_and_the_caller_can_fix_it() -> None:
    with pytest.raises(ArgumentsRejected) as raised:
        ch09_who_retries.place_order({"item": "milk", "quantity": 20}, ToolContext())
    failure = raised.value.failure
    assert failure.message == "quantity ['20'] must be between 1 and 12"
    assert (failure.caller_can_fix, failure.retryable, failure.idempotent) == (True, False, False)


@pytest.mark.parametrize("quantity", [0, -1, 13])
def test_quantities_outside_1_to_12_are_refused_before_any_service_is_needed(quantity: int) -> None:
    # No service in the context: reaching for it would raise a RuntimeError instead.
    with pytest.raises(ArgumentsRejected, match=r"must be between 1 and 12"):
        ch09_who_retries.place_order({"item": "milk", "quantity": quantity}, ToolContext())


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"item": "cheese"}, "item ['cheese'] input should be 'bread', 'butter', 'chips' or 'milk'"),
        ({}, "item is required"),
        ({"item": ["milk"]}, "item [\"['milk']\"] input should be 'bread', 'butter', 'chips' or 'milk'"),
    ],
)
def test_arguments_that_do_not_fit_the_model_are_the_callers_to_fix(
    arguments: dict[str, object], expected: str
) -> None:
    with pytest.raises(ArgumentsRejected) as raised:
        ch05_loop_endings.price_of(arguments, ToolContext())
    assert raised.value.failure.message == expected
    assert raised.value.failure.caller_can_fix


def test_a_tool_that_needs_a_service_says_so_when_it_has_none() -> None:
    with pytest.raises(RuntimeError, match="calls a service"):
        ch09_who_retries.price_of({"item": "milk"}, ToolContext())


def test_a_tool_is_typed_by_its_argument_model() -> None:
    seen: list[PriceOf] = []

    @tool(PriceOf)
    def spy(args: PriceOf, ctx: ToolContext) -> str:
        seen.append(args)
        return "ok"

    assert isinstance(spy, Tool)
    spy({"item": "bread"}, ToolContext())
    assert seen == [PriceOf(item="bread")]  # type: ignore[arg-type]


# -- how calls are written in a context table ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "written"),
    [
        (ToolCall(id="1", name="lowest_stock_item"), "lowest_stock_item({})"),
        (ToolCall(id="2", name="price_of", arguments={"item": "butter"}), 'price_of({"item": "butter"})'),
        (
            ToolCall(id="3", name="place_order", arguments={"item": "milk", "quantity": 20}),
            'place_order({"item": "milk", "quantity": 20})',
        ),
        (ToolCall(id="4", name="price_of", raw_arguments="{item: milk"), "price_of({item: milk)"),
        (ToolCall(id="5", name="say", arguments={"text": "£3.10"}), 'say({"text": "£3.10"})'),
    ],
)
def test_a_tool_call_is_written_as_the_seeds_write_it(call: ToolCall, written: str) -> None:
    assert call.written() == written


def test_a_message_is_written_as_one_cell() -> None:
    assert Message(role="tool", content="1.20", tool_call_id="1").written() == "1.20"
    ai = Message(role="ai", content=None, tool_calls=[ToolCall(id="1", name="price_of", arguments={"item": "milk"})])
    assert ai.written() == 'price_of({"item": "milk"})'
    assert Message(role="ai").written() == ""


def test_the_model_config_title_is_not_leaked_into_descriptions() -> None:
    class Quiet(BaseModel):
        """Say nothing."""

        model_config = ConfigDict(title="quiet")

    declared = Tool(args=Quiet, function=lambda args, ctx: "").declared()
    assert declared.parameters == {"description": "Say nothing.", "properties": {}, "title": "quiet", "type": "object"}
    assert wire_parameters(declared.parameters) == {"properties": {}, "type": "object"}


def test_each_schema_is_a_fresh_copy_so_editing_one_cannot_change_the_next() -> None:
    price_of = ALL_TOOLS["price_of"]
    first = price_of.schema()
    first["$defs"]["GroceryItem"]["enum"].append("cheese")
    first["title"] = "changed"
    declared = price_of.declared()
    declared.parameters["$defs"]["GroceryItem"]["enum"].clear()
    assert json.dumps(price_of.schema(), sort_keys=True) == SEED_SCHEMAS["price_of"]
    assert json.dumps(price_of.declared().parameters, sort_keys=True) == SEED_SCHEMAS["price_of"]
