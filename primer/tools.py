"""Tools declared from pydantic models.

A tool is a function plus a pydantic model of its arguments. The model's
title is the tool's name and its docstring the description, so the schema the
model sees is generated from the same class that validates what the model
sends back::

    class PriceOf(BaseModel):
        '''The current shelf price of one of an item, in pounds.'''
        model_config = ConfigDict(title="price_of")
        item: GroceryItem

    @tool(PriceOf)
    def price_of(args: PriceOf, ctx: ToolContext) -> str:
        return SHELF[args.item].price
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from primer.errors import ArgumentsRejected, ChapterError, quoted
from primer.trace import DeclaredTool

if TYPE_CHECKING:
    from primer.service import ServiceCall

__all__ = ["Tool", "ToolContext", "tool", "wire_parameters"]

A = TypeVar("A", bound=BaseModel)


@dataclass
class ToolContext:
    """What a tool is given besides its arguments: the service, if any."""

    service: ServiceCall | None = None

    def require_service(self) -> ServiceCall:
        """The service, or a clear error when the scenario gave none."""
        if self.service is None:
            raise RuntimeError("This tool calls a service, but the scenario runs without one.")
        return self.service


@dataclass(frozen=True)
class Tool(Generic[A]):
    """A tool: a name, a description, an argument model and the function.

    ``needs_approval``: the call has side effects, so a person is asked
    before it runs (``primer.approval``). ``untrusted_output``: the result
    carries text others wrote, so it is sent back marked as data
    (``primer.untrusted``). Neither changes what the model is declared.
    """

    args: type[A]
    function: Callable[[A, ToolContext], str]
    needs_approval: bool = False
    untrusted_output: bool = False
    #: Declared ``strict`` (chapter 12): the provider keeps the arguments to
    #: the schema, which must then be closed (``primer.structured``).
    strict: bool = False

    def __post_init__(self) -> None:
        if self.strict:
            # Imported here: primer.structured builds on this module.
            from primer.structured import strict_problems

            problems = strict_problems(wire_parameters(self.schema()), self.name)
            if problems:
                raise ChapterError(
                    f"The tool {self.name!r} is declared strict, but its schema is not closed: "
                    f"{'; '.join(problems)}. Give {self.args.__qualname__} model_config = "
                    "ConfigDict(extra='forbid') and no defaults, or declare it without strict=True."
                )

    @property
    def name(self) -> str:
        """The name the model calls the tool by (the model's title)."""
        return str(self.args.model_config.get("title") or self.args.__name__)

    @property
    def description(self) -> str:
        """What the model is told the tool does (the model's docstring)."""
        return (self.args.__doc__ or "").strip()

    def schema(self) -> dict[str, Any]:
        """The JSON schema pydantic generates for the arguments."""
        # Every model call declares every tool, and generating a schema costs
        # about a millisecond: generate once per argument model, hand out
        # fresh copies (parsing the kept JSON is the cheapest deep copy).
        return dict(json.loads(_schema_json(self.args)))

    def declared(self) -> DeclaredTool:
        """The tool as a trace records its declaration."""
        return DeclaredTool(name=self.name, description=self.description, parameters=self.schema())

    def parse(self, arguments: dict[str, Any]) -> A:
        """Validate the model's arguments; wrong ones are the caller's to fix."""
        try:
            return self.args.model_validate(arguments)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'} {quoted(e.get('input', ''))} {e['msg'].lower()}"
                if e["type"] != "missing"
                else f"{'.'.join(str(p) for p in e['loc'])} is required"
                for e in error.errors()
            )
            raise ArgumentsRejected(problems) from None

    def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        """Validate, then run the function."""
        return self.function(self.parse(arguments), ctx)


@functools.cache
def _schema_json(args: type[BaseModel]) -> str:
    return json.dumps(args.model_json_schema())


def tool(
    args: type[A], *, needs_approval: bool = False, untrusted_output: bool = False, strict: bool = False
) -> Callable[[Callable[[A, ToolContext], str]], Tool[A]]:
    """Declare a tool from its argument model (used as a decorator)."""

    def wrap(function: Callable[[A, ToolContext], str]) -> Tool[A]:
        return Tool(
            args=args,
            function=function,
            needs_approval=needs_approval,
            untrusted_output=untrusted_output,
            strict=strict,
        )

    return wrap


def wire_parameters(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as it goes on the wire: refs inlined, titles dropped.

    Providers read ``$ref`` unevenly, and titles and the top description
    repeat what the function's name and description already say.
    """
    defs = schema.get("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = inline(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]))
                # Keywords beside the $ref (a field's description) describe the field: keep them.
                return {**target, **{k: inline(v) for k, v in node.items() if k not in ("$ref", "title")}}
            return {k: inline(v) for k, v in node.items() if k not in ("title", "$defs")}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    wire = inline(schema)
    wire.pop("description", None)
    return dict(wire)
