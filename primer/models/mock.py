"""A scripted model: it replies from a list, in order, whatever it is sent.

It is honest about that: every call it records notes that it did not consult
the declared tools and did not read the context, so a reader of a mock trace
is never misled into thinking the model chose its answer::

    model = MockModel([ask(call("price_of", item="milk")), say("Milk is 1.20.")])

Asked to stream (``{"stream": True}`` in the settings), it sends the same
reply as a stream of chat completion chunks, on its clock: the first after
``Pacing.first`` seconds, the next ones ``Pacing.every`` seconds apart, text a
few words at a time and tool-call arguments a few characters at a time. On a
``VirtualClock`` the waits are simulated, so a mock stream takes no real time
and its events arrive at the same offsets every run::

    say("Milk is 1.20.", pacing=Pacing(first=0.4, every=0.05))

A reply may carry reasoning, as reasoning models return it, and the token
counts a provider would report (chapter 21). Neither is measured: both are
the script's, and the call's notes say so. Streamed, the reasoning comes
first, in ``reasoning_content`` deltas, and the counts in a last chunk::

    say("Milk is 1.20.", reasoning="The shelf says 1.20.", usage=Usage(input_tokens=40, output_tokens=90,
        reasoning_tokens=84))
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from primer.clock import Clock, RealClock
from primer.errors import ScriptDisobeys, ScriptExhausted
from primer.models.base import STREAM
from primer.streaming import DONE
from primer.tool_choice import asked_of, disobeyed
from primer.tools import Tool
from primer.trace import ErrorInfo, Message, ModelCall, Note, Stream, StreamEvent, Timing, ToolCall, Usage

__all__ = [
    "DEFAULT_PACING",
    "MockModel",
    "MockReply",
    "Pacing",
    "ask",
    "call",
    "cut",
    "say",
    "scripted_message",
    "stream_chunks",
    "wire_usage",
]


@dataclass(frozen=True)
class Pacing:
    """How a scripted reply streams: when its events come and how big their pieces are."""

    #: Seconds before the first event: the time to first token.
    first: float = 0.3
    #: Seconds between one event and the next; a sequence is used in turn, over and over.
    every: float | tuple[float, ...] = 0.03
    #: Words of text per event.
    words: int = 1
    #: Characters of a tool call's arguments per event.
    characters: int = 6

    def __post_init__(self) -> None:
        every = self.every if isinstance(self.every, tuple) else (self.every,)
        if self.first < 0 or not every or any(delay < 0 for delay in every) or self.words < 1 or self.characters < 1:
            raise ValueError(
                f"{self!r} cannot pace a stream: waits must be zero or more seconds, and at least one word "
                "and one character must go in each event."
            )

    def delays(self) -> Iterator[float]:
        """The wait before each event, in order: ``first``, then ``every`` over and over."""
        yield self.first
        yield from itertools.cycle(self.every if isinstance(self.every, tuple) else (self.every,))


#: How a reply streams when its script does not say.
DEFAULT_PACING = Pacing()


@dataclass(frozen=True)
class MockReply:
    """One scripted reply: text, tool calls and a finish reason (and how it streams, if asked to)."""

    text: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    finish_reason: str = "stop"
    #: How the reply streams when the call asks for a stream (the model's pacing if None).
    pacing: Pacing | None = None
    #: The reasoning a reasoning model returns beside the reply (chapter 21).
    reasoning: str | None = None
    #: The token counts the provider would report: scripted, never measured.
    usage: Usage | None = None


def call(name: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    """A tool call for a scripted reply: ``call("price_of", item="milk")``."""
    return (name, arguments)


def ask(
    *calls: tuple[str, dict[str, Any]],
    text: str | None = None,
    pacing: Pacing | None = None,
    finish_reason: str = "tool_calls",
    reasoning: str | None = None,
    usage: Usage | None = None,
) -> MockReply:
    """A reply that asks for tools (several calls run in that order).

    ``finish_reason="stop"`` plays what OpenAI-compatible servers send when
    ``tool_choice`` names a function: tool calls, and ``stop`` (chapter 12).
    """
    return MockReply(
        text=text, calls=tuple(calls), finish_reason=finish_reason, pacing=pacing, reasoning=reasoning, usage=usage
    )


def say(
    text: str, *, pacing: Pacing | None = None, reasoning: str | None = None, usage: Usage | None = None
) -> MockReply:
    """A reply that answers in text and asks for nothing."""
    return MockReply(text=text, finish_reason="stop", pacing=pacing, reasoning=reasoning, usage=usage)


def cut(
    text: str | None = None,
    *,
    pacing: Pacing | None = None,
    reasoning: str | None = None,
    usage: Usage | None = None,
) -> MockReply:
    """A reply cut short by the token limit (``finish_reason = length``): empty, or the text it got to."""
    return MockReply(text=text, finish_reason="length", pacing=pacing, reasoning=reasoning, usage=usage)


@dataclass
class MockModel:
    """Replies from a script, records honestly that it read nothing."""

    replies: Sequence[MockReply]
    clock: Clock = field(default_factory=RealClock)
    #: Which scenario the script belongs to, for the error when it runs out.
    scenario: str = "this scenario"
    #: How a reply streams when its script does not say.
    pacing: Pacing = DEFAULT_PACING
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
            record.reply = scripted_message(scripted, turn)
            record.finish_reason = scripted.finish_reason
            if scripted.usage is not None:
                record.usage = scripted.usage
                record.notes.append(Note(label="usage scripted for the mock model", data=wire_usage(scripted.usage)))
            self._hold_to(record, settings, tools, turn)
            if record.reply is not None and settings.get(STREAM):
                pacing = scripted.pacing or self.pacing
                record.stream = self._stream(record.reply, scripted.finish_reason, pacing, turn, scripted.usage)
                record.notes.append(
                    Note(
                        label="stream simulated by the mock model",
                        data={
                            "events": len(record.stream.events),
                            "first_s": pacing.first,
                            "every_s": pacing.every,
                            "virtual_clock": True,
                        },
                    )
                )
        record.timing = Timing(start_ms=started * 1000, total_ms=(self.clock.now() - started) * 1000)
        return record

    def _hold_to(self, record: ModelCall, settings: Mapping[str, Any], tools: Sequence[Tool[Any]], turn: int) -> None:
        """Note what the settings asked of the reply; a scripted reply no provider would send is an error."""
        asked = asked_of(settings, tools)
        if not asked or record.reply is None:
            return
        problems = disobeyed(settings, tools, record.reply, record.finish_reason)
        record.notes.append(Note(label="the script kept to what was asked", data={**asked, "kept": not problems}))
        if problems:
            error = ScriptDisobeys(
                f"Reply {turn} of the mock model of {self.scenario} does not do what was asked: "
                f"{'; '.join(problems)}. Change the scripted reply, or what the scenario asks."
            )
            record.error = ErrorInfo(type=type(error).__name__, message=str(error))
            record.reply = None

    def _stream(self, reply: Message, finish_reason: str, pacing: Pacing, turn: int, usage: Usage | None) -> Stream:
        """The reply as a provider would stream it, each event after its scripted wait on the clock."""
        events = []
        offset = 0.0
        pieces = _chunks(reply, finish_reason, pacing, f"mock-{turn}", usage)
        for delay, data in zip(pacing.delays(), pieces, strict=False):
            self.clock.sleep(delay)
            # The offset is the scripted one, not the clock's reading, so it is the same every run.
            offset += delay
            events.append(StreamEvent(at_ms=offset * 1000, data=data))
        # [DONE] follows the last chunk at once, as providers send it.
        events.append(StreamEvent(at_ms=offset * 1000, text=DONE))
        return Stream(events=events)


def scripted_message(scripted: MockReply, turn: int) -> Message:
    """A scripted reply as the message it stands for; its calls' ids say which reply they came in."""
    return Message(
        role="ai",
        content=scripted.text,
        tool_calls=[
            ToolCall(id=f"mock_{turn}_{index}", name=name, arguments=dict(arguments))
            for index, (name, arguments) in enumerate(scripted.calls)
        ],
        reasoning=scripted.reasoning,
    )


def stream_chunks(scripted: MockReply, turn: int, stream_id: str, pacing: Pacing) -> Iterator[dict[str, Any]]:
    """A scripted reply as the chat completion chunks a provider would stream (the scripted provider's)."""
    return _chunks(scripted_message(scripted, turn), scripted.finish_reason, pacing, stream_id, scripted.usage)


def wire_usage(usage: Usage) -> dict[str, Any]:
    """Token counts as a chat completion's ``usage`` names them."""
    wire: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    if usage.cached_tokens is not None:
        wire["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    if usage.reasoning_tokens is not None:
        wire["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return wire


def _chunks(
    reply: Message, finish_reason: str, pacing: Pacing, stream_id: str, usage: Usage | None = None
) -> Iterator[dict[str, Any]]:
    """The reply in chat completion chunks: reasoning and text by words, each call named then its arguments."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": stream_id, "object": "chat.completion.chunk", "model": "mock", "choices": [choice]}

    first: dict[str, Any] = {"role": "assistant"}
    # A reasoning model thinks before it answers: its reasoning streams first.
    thoughts = re.findall(r"\s*\S+\s*", reply.reasoning or "")
    for start in range(0, len(thoughts), pacing.words):
        yield chunk({**first, "reasoning_content": "".join(thoughts[start : start + pacing.words])})
        first = {}
    words = re.findall(r"\s*\S+\s*", reply.content or "")
    for start in range(0, len(words), pacing.words):
        yield chunk({**first, "content": "".join(words[start : start + pacing.words])})
        first = {}
    for index, tool_call in enumerate(reply.tool_calls):
        named = {"index": index, "id": tool_call.id, "type": "function"}
        yield chunk({**first, "tool_calls": [{**named, "function": {"name": tool_call.name, "arguments": ""}}]})
        first = {}
        arguments = json.dumps(tool_call.arguments, ensure_ascii=False)
        for start in range(0, len(arguments), pacing.characters):
            piece = arguments[start : start + pacing.characters]
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk(first, finish_reason)
    if usage is not None:
        # As a provider sends it when asked to (stream_options.include_usage): a last chunk with no choices.
        yield {
            "id": stream_id,
            "object": "chat.completion.chunk",
            "model": "mock",
            "choices": [],
            "usage": wire_usage(usage),
        }
