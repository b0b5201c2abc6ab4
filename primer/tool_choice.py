"""Asking for a kind of reply: ``tool_choice``, ``parallel_tool_calls``, structured output.

Settings a scenario sends with every request (chapter 12), as the
chat-completions API names them:

* ``tool_choice``: ``"auto"`` (the default: the model decides), ``"none"``
  (answer in text, call nothing), ``"required"`` (call at least one tool), or
  a named function, ``named("price_of")``, which is
  ``{"type": "function", "function": {"name": "price_of"}}`` (call that one).
* ``parallel_tool_calls``: ``False`` asks for at most one call per reply.
* ``response_format``: ``answer_format(Model)`` (``primer.structured``) asks
  for the answer as JSON that matches ``Model``'s schema.

A *forced* choice (``required``, or a named function) holds for one call:
sent on every turn it would force a call every time, and the loop would
never hear an answer. So once a forced turn has asked for its tools, the
loop sends ``relaxed(settings)`` from then on: ``tool_choice`` is ``"auto"``,
and each turn's record shows what it was sent.

The mock model cannot choose, but it can obey: ``disobeyed`` lists how a
scripted reply breaks what the settings asked, so a script that does what no
provider would is an error naming the scenario, not a trace that lies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from primer.structured import schema_problems
from primer.tools import Tool, wire_parameters
from primer.trace import Message

__all__ = [
    "PARALLEL_TOOL_CALLS",
    "RESPONSE_FORMAT",
    "TOOL_CHOICE",
    "asked_of",
    "choice_problems",
    "disobeyed",
    "forced",
    "named",
    "named_function",
    "relaxed",
]

TOOL_CHOICE = "tool_choice"
PARALLEL_TOOL_CALLS = "parallel_tool_calls"
RESPONSE_FORMAT = "response_format"

_WORDS = ("auto", "none", "required")


def named(tool: str) -> dict[str, Any]:
    """A ``tool_choice`` that names one function: the model must call it."""
    return {"type": "function", "function": {"name": tool}}


def named_function(choice: object) -> str | None:
    """The function a ``tool_choice`` names, or None when it names none."""
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        function = choice.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return str(function["name"])
    return None


def forced(settings: Mapping[str, Any]) -> bool:
    """Whether the settings force a tool call (``required``, or a named function)."""
    choice = settings.get(TOOL_CHOICE)
    return choice == "required" or named_function(choice) is not None


def relaxed(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings for the turns after a forced call: the model decides again (``auto``)."""
    return {**settings, TOOL_CHOICE: "auto"} if forced(settings) else dict(settings)


def choice_problems(settings: Mapping[str, Any], tools: Sequence[str]) -> list[str]:
    """What is wrong with these settings for a scenario declaring ``tools``; empty when nothing is."""
    problems = []
    if TOOL_CHOICE in settings:
        choice = settings[TOOL_CHOICE]
        name = named_function(choice)
        if choice not in _WORDS and name is None:
            problems.append(f"{TOOL_CHOICE} is {choice!r}: use 'auto', 'none', 'required' or named('a_tool')")
        elif name is not None and name not in tools:
            problems.append(
                f"{TOOL_CHOICE} names {name!r}, which is not one of its tools ({', '.join(tools) or 'none'})"
            )
        elif choice in ("required", "none") and not tools:
            problems.append(f"{TOOL_CHOICE} is {choice!r}, but it declares no tools")
    if PARALLEL_TOOL_CALLS in settings and not isinstance(settings[PARALLEL_TOOL_CALLS], bool):
        problems.append(f"{PARALLEL_TOOL_CALLS} is {settings[PARALLEL_TOOL_CALLS]!r}: use True or False")
    if RESPONSE_FORMAT in settings:
        problems += _format_problems(settings[RESPONSE_FORMAT])
    return problems


def _format_problems(value: object) -> list[str]:
    kind = value.get("type") if isinstance(value, Mapping) else None
    if kind in ("text", "json_object"):
        return []
    if kind == "json_schema":
        spec = value.get("json_schema") if isinstance(value, Mapping) else None
        if isinstance(spec, Mapping) and isinstance(spec.get("name"), str) and isinstance(spec.get("schema"), Mapping):
            return []
    return [f"{RESPONSE_FORMAT} is {value!r}: use answer_format(AModel), or {{'type': 'json_object'}}"]


def asked_of(settings: Mapping[str, Any], tools: Sequence[Tool[Any]]) -> dict[str, Any]:
    """What the settings and the tools' declarations ask of a reply; empty when they ask nothing."""
    asked: dict[str, Any] = {key: settings[key] for key in (TOOL_CHOICE, PARALLEL_TOOL_CALLS) if key in settings}
    answer_format = settings.get(RESPONSE_FORMAT)
    if isinstance(answer_format, Mapping):
        spec = answer_format.get("json_schema")
        asked[RESPONSE_FORMAT] = spec.get("name") if isinstance(spec, Mapping) else answer_format.get("type")
    strict = [tool.name for tool in tools if tool.strict]
    if strict:
        asked["strict_tools"] = strict
    return asked


def disobeyed(
    settings: Mapping[str, Any], tools: Sequence[Tool[Any]], reply: Message, finish_reason: str | None
) -> list[str]:
    """How a reply breaks what the settings and the strict tools ask for; empty when it obeys.

    A reply cut off by the token limit (``length``) is not held to the
    answer's format: it is not an answer.
    """
    calls = [call.name for call in reply.tool_calls]
    problems = []
    strict = {tool.name: tool for tool in tools if tool.strict}
    for call in reply.tool_calls:
        if call.name in strict:
            schema = wire_parameters(strict[call.name].schema())
            found = schema_problems(call.arguments, schema, f"{call.name}'s arguments")
            problems += [f"{problem}, but {call.name} is strict" for problem in found]
    choice = settings.get(TOOL_CHOICE)
    name = named_function(choice)
    if choice == "none" and calls:
        problems.append(f"it calls {', '.join(calls)}, but tool_choice is 'none'")
    if choice == "required" and not calls:
        problems.append("it calls no tool, but tool_choice is 'required'")
    if name is not None and calls != [name]:
        problems.append(f"it calls {', '.join(calls) or 'nothing'}, but tool_choice names {name!r} alone")
    if settings.get(PARALLEL_TOOL_CALLS) is False and len(calls) > 1:
        problems.append(f"it makes {len(calls)} calls at once, but parallel_tool_calls is False")
    answer_format = settings.get(RESPONSE_FORMAT)
    if isinstance(answer_format, Mapping) and not calls and finish_reason != "length":
        problems += _answer_problems(answer_format, reply.content or "")
    return problems


def _answer_problems(answer_format: Mapping[str, Any], text: str) -> list[str]:
    kind = answer_format.get("type")
    if kind not in ("json_object", "json_schema"):
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return [f"its text is not JSON, but response_format asks for {kind}"]
    if kind == "json_object":
        return [] if isinstance(value, dict) else ["its JSON is not an object, but response_format asks for one"]
    schema = answer_format["json_schema"]["schema"]
    problems = schema_problems(value, schema)
    return [f"its JSON does not match the schema: {'; '.join(problems)}"] if problems else []
