"""A scripted model: it replies from a list, in order, whatever it is sent.

It is honest about that: every call it records notes that it did not consult
the declared tools and did not read the context, so a reader of a mock trace
is never misled into thinking the model chose its answer::

    model = MockModel([ask(call("price_of", item="milk")), say("Milk is 1.20.")])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from primer.clock import Clock, RealClock
from primer.errors import ScriptExhausted
from primer.tools import Tool
from primer.trace import ErrorInfo, Message, ModelCall, Note, Timing, ToolCall

__all__ = ["MockModel", "MockReply", "ask", "call", "cut", "say"]


@dataclass(frozen=True)
class MockReply:
    """One scripted reply: text, tool calls and a finish reason."""

    text: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    finish_reason: str = "stop"


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """A tool call for a scripted reply: ``call("price_of", item="milk")``."""
    return (name, arguments)


def ask(*calls: tuple[str, dict[str, Any]], text: str | None = None) -> MockReply:
    """A reply that asks for tools (several calls run in that order)."""
    return MockReply(text=text, calls=tuple(calls), finish_reason="tool_calls")


def say(text: str) -> MockReply:
    """A reply that answers in text and asks for nothing."""
    return MockReply(text=text, finish_reason="stop")


def cut() -> MockReply:
    """An empty reply cut short by the token limit (``finish_reason = length``)."""
    return MockReply(text=None, finish_reason="length")


@dataclass
class MockModel:
    """Replies from a script, records honestly that it read nothing."""

    replies: Sequence[MockReply]
    clock: Clock = field(default_factory=RealClock)
    #: Which scenario the script belongs to, for the error when it runs out.
    scenario: str = "this scenario"
    _used: int = 0

    def complete(
        self,
        context: Sequence[Message],
        tools: Sequence[Tool[Any]],
        settings: Mapping[str, Any],
    ) -> ModelCall:
        """The next scripted reply, recorded with the notes a mock owes."""
        started = self.clock.now()
        record = ModelCall(
            kind="mock",
            context=list(context),
            tools=[t.declared() for t in tools],
            settings=dict(settings),
            notes=[
                Note(
                    label="tools declared to the mock model",
                    data={"names": [t.name for t in tools], "consulted": False},
                ),
                Note(
                    label="context ignored by the mock model",
                    data={"messages": len(context), "roles": [m.role for m in context]},
                ),
            ],
        )
        if self._used >= len(self.replies):
            error = ScriptExhausted(
                f"The mock model of {self.scenario} was asked for reply {self._used + 1} "
                f"but its script holds {len(self.replies)}: add a reply to the scenario's mock list."
            )
            record.error = ErrorInfo(type=type(error).__name__, message=str(error))
        else:
            scripted = self.replies[self._used]
            turn = self._used + 1
            self._used += 1
            record.reply = Message(
                role="ai",
                content=scripted.text,
                tool_calls=[
                    ToolCall(id=f"mock_{turn}_{index}", name=name, arguments=dict(arguments))
                    for index, (name, arguments) in enumerate(scripted.calls)
                ],
            )
            record.finish_reason = scripted.finish_reason
        record.timing = Timing(total_ms=(self.clock.now() - started) * 1000)
        return record
