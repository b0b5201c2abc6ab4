"""Strict schemas and structured output: JSON the provider must keep to.

Two places a model writes JSON: a tool call's arguments, and (when asked) its
answer. In both, *strict* mode asks the provider to constrain what the model
writes to the schema, instead of hoping. Strict mode accepts only *closed*
schemas: every object lists all its properties as required and allows no
others (``additionalProperties: false``). A pydantic model is closed when it
forbids extra fields and gives no field a default::

    class PriceAnswer(BaseModel):
        '''The answer: an item and its price.'''
        model_config = ConfigDict(title="price_answer", extra="forbid")
        item: GroceryItem
        price: str

    settings = {"response_format": answer_format(PriceAnswer)}

``strict_problems`` says why a schema is not closed; ``schema_problems``
checks a value against a schema, in the keywords strict schemas use (the mock
model uses it to keep its scripted answers to the format asked for).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from primer.tools import wire_parameters

__all__ = ["answer_format", "schema_problems", "strict_problems"]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def answer_format(model: type[BaseModel]) -> dict[str, Any]:
    """A ``response_format`` asking for the answer as JSON matching ``model``, strictly.

    Named by the model's title; its docstring is the description. Raises
    ``ValueError`` naming the model when its schema is not closed.
    """
    name = str(model.model_config.get("title") or model.__name__)
    schema = wire_parameters(model.model_json_schema())
    problems = strict_problems(schema)
    if problems:
        raise ValueError(
            f"The answer format {name!r} ({model.__qualname__}) cannot be strict: {'; '.join(problems)}. "
            "Give the model model_config = ConfigDict(extra='forbid') and no defaults."
        )
    spec: dict[str, Any] = {"name": name, "schema": schema, "strict": True}
    if model.__doc__:
        spec["description"] = model.__doc__.strip()
    return {"type": "json_schema", "json_schema": spec}


def strict_problems(schema: Mapping[str, Any], where: str = "arguments") -> list[str]:
    """Why a schema (refs inlined) is not closed, object by object; empty when it is."""
    problems: list[str] = []
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            problems.append(f"{where} allows properties it does not list")
        missing = sorted(set(properties) - set(schema.get("required", [])))
        if missing:
            problems.append(f"{where} does not require {', '.join(missing)}")
        for key, value in properties.items():
            if isinstance(value, Mapping):
                problems += strict_problems(value, f"{where}.{key}")
    if isinstance(schema.get("items"), Mapping):
        problems += strict_problems(schema["items"], f"{where}[]")
    for option in schema.get("anyOf", []):
        if isinstance(option, Mapping):
            problems += strict_problems(option, where)
    return problems


def schema_problems(value: Any, schema: Mapping[str, Any], where: str = "answer") -> list[str]:  # noqa: PLR0911 - one return per keyword
    """How ``value`` breaks ``schema``; empty when it keeps to it.

    The keywords checked are the ones strict schemas use: ``type``, ``enum``,
    ``properties``, ``required``, ``additionalProperties: false``, ``items``
    and ``anyOf``. Others are not checked.
    """
    if "anyOf" in schema:
        options = [option for option in schema["anyOf"] if isinstance(option, Mapping)]
        if any(not schema_problems(value, option, where) for option in options):
            return []
        return [f"{where} matches none of its {len(options)} allowed forms"]
    kinds = schema.get("type")
    if kinds is not None:
        allowed = [kinds] if isinstance(kinds, str) else list(kinds)
        ok = any(_is(value, kind) for kind in allowed)
        if not ok:
            return [f"{where} should be {' or '.join(allowed)}, not {value!r}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where} should be one of {', '.join(map(repr, schema['enum']))}, not {value!r}"]
    if isinstance(value, dict):
        return _object_problems(value, schema, where)
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [p for i, item in enumerate(value) for p in schema_problems(item, schema["items"], f"{where}[{i}]")]
    return []


def _object_problems(value: dict[str, Any], schema: Mapping[str, Any], where: str) -> list[str]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems = [f"{where}.{key} is required" for key in schema.get("required", []) if key not in value]
    if schema.get("additionalProperties") is False:
        problems += [f"{where}.{key} is not allowed" for key in value if key not in properties]
    for key, item in value.items():
        if key in properties and isinstance(properties[key], Mapping):
            problems += schema_problems(item, properties[key], f"{where}.{key}")
    return problems


def _is(value: Any, kind: str) -> bool:
    # JSON has one kind of number: a bool is not one, and 1.0 is an integer.
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(kind, ()))
