"""The trace schema: one typed tree for everything a run did.

The recorder writes it, the JSON store keeps it and the renderer reads it, all
through these models, so the writer and the reader cannot drift apart::

    ChapterRun            one chapter, one mode (mock or live)
      ScenarioRun         one scenario: settings, turns, how it ended
        Turn              one round of the loop
          ModelCall       what was sent to the model and what came back
            Exchange      one HTTP attempt on the wire (live only)
              Stream      a reply that came as server-sent events, each timed
            Stream        the mock model's simulated stream (no wire)
          ToolRun         one tool call the model asked for
            Attempt       one try at the service, classified
            Backoff       a wait between two attempts
        Ending            why the loop stopped

Timings are in milliseconds. ``outside_ms`` is the part spent at the outside
party (the model provider or the service, first byte to last on the wire);
the library's share is the rest, so it is derived, never stored twice. Of
the outside time, ``setup_ms`` is what opening the connection took (DNS,
TCP, TLS), when a live request opened one; it is optional, and a trace
recorded without it reads and shows as before.

A streamed reply keeps its events with their arrival times (``at_ms``, from
the moment the request was handed over); time to first token and to last
token are derived from them (``Stream``), never stored.

Every turn, model call, exchange, tool run, attempt and backoff also says
when it began: ``start_ms``, milliseconds since its scenario began (on the
virtual clock in mock mode, measured live), so a trace can be drawn on a
timeline; a live scenario also keeps the moment it began (``started_at``).

Version 2 added the streams (``WireResponse.stream``, ``ModelCall.stream``),
version 3 the start offsets. A file of an older version (``READABLE_VERSIONS``)
validates as it is and is migrated by the one reader of trace files,
``primer.trace_file``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from traceback import format_exception
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
)

__all__ = [
    "FAILED_ENDINGS",
    "READABLE_VERSIONS",
    "SCHEMA_VERSION",
    "Approval",
    "Attempt",
    "Backoff",
    "ChapterRun",
    "DeclaredTool",
    "Ending",
    "ErrorInfo",
    "Exchange",
    "Failure",
    "Message",
    "ModelCall",
    "Note",
    "ScenarioRun",
    "Stream",
    "StreamEvent",
    "Timing",
    "ToolCall",
    "ToolRun",
    "Turn",
    "Usage",
    "WireRequest",
    "WireResponse",
    "setup_total",
    "versions_read",
]

#: A traceback's frame line: ``File "path", line N``.
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')

#: Bumped whenever a stored trace could no longer be read by these models,
#: or an older reader could not read what these write.
SCHEMA_VERSION = 3

#: The versions these models read: each older one is a subset of the newest
#: (it lacks fields that are optional here), migrated by ``primer.trace_file``.
READABLE_VERSIONS = (1, 2, 3)


def versions_read() -> str:
    """The versions a reader accepts, for an error message: ``versions 1, 2 and 3``."""
    *older, newest = READABLE_VERSIONS
    if not older:
        return f"version {newest}"
    return f"versions {', '.join(map(str, older))} and {newest}"


Role = Literal["system", "human", "ai", "tool"]
Mode = Literal["mock", "live"]


class _Model(BaseModel):
    # Frozen-ish and strict about unknown fields: a trace written by another
    # schema must fail loudly on load rather than render half. No NaN or
    # infinity either: JSON readers accept them, but a timing of "nanms" is
    # a corrupt file, not a measurement.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Timing(_Model):
    """When something began, how long it took, and how much of it was spent outside."""

    #: When it began, in milliseconds since its scenario began (None only in
    #: a record not yet placed in a scenario, such as one made by hand).
    start_ms: float | None = None
    total_ms: float = 0.0
    #: Time at the outside party (model provider or service); None when
    #: nothing went over a wire.
    outside_ms: float | None = None
    #: Time spent waiting on purpose between attempts (backoff).
    waited_ms: float | None = None
    #: Of ``outside_ms``, the part spent opening a connection before the
    #: request could be sent (DNS lookup, TCP connect, TLS handshake), as
    #: httpcore reports it live; 0.0 when a pooled connection was reused; None
    #: when it was not timed: a mock answered (no connection), or a live trip
    #: recorded before set-up was timed, whose set-up is in ``library_ms``.
    #: Left out of the JSON when None, so older traces keep their bytes.
    setup_ms: float | None = Field(default=None, exclude_if=lambda value: value is None)

    @field_validator("start_ms", "total_ms", "outside_ms", "waited_ms", "setup_ms")
    @classmethod
    def _microseconds(cls, value: float | None) -> float | None:
        # Finer than a microsecond is noise, and it bloats every trace file.
        return None if value is None else round(value, 3)

    @property
    def end_ms(self) -> float | None:
        """When it ended, in milliseconds since its scenario began (None if its start is not known)."""
        return None if self.start_ms is None else round(self.start_ms + self.total_ms, 3)

    @property
    def library_ms(self) -> float:
        """Everything that was neither the outside party nor waiting: our own code."""
        return max(self.total_ms - (self.outside_ms or 0.0) - (self.waited_ms or 0.0), 0.0)

    @property
    def answering_ms(self) -> float | None:
        """The outside party's time less the connection's set-up: its own answering (None with no wire)."""
        if self.outside_ms is None:
            return None
        return max(self.outside_ms - (self.setup_ms or 0.0), 0.0)


def setup_total(timings: Iterable[Timing]) -> float | None:
    """The set-up time of several trips together (a call's attempts); None when none was timed."""
    setups = [timing.setup_ms for timing in timings if timing.setup_ms is not None]
    return sum(setups) if setups else None


class ToolCall(_Model):
    """A tool call as the model asked for it."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: The raw argument text when the model sent something that is not a
    #: JSON object; ``arguments`` is then empty.
    raw_arguments: str | None = None

    def written(self) -> str:
        """The call as a context table shows it: ``name({"json": "args"})``."""
        import json

        if self.raw_arguments is not None:
            return f"{self.name}({self.raw_arguments})"
        return f"{self.name}({json.dumps(self.arguments, ensure_ascii=False)})"


class Message(_Model):
    """One message of the context: system, human, ai or tool."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    #: For a tool message: which call it answers.
    tool_call_id: str | None = None
    #: Reasoning text some providers return next to the answer.
    reasoning: str | None = None

    def written(self) -> str:
        """The message as one cell of a context table."""
        parts = [self.content] if self.content else []
        parts += [call.written() for call in self.tool_calls]
        return " ".join(parts)


class DeclaredTool(_Model):
    """A tool as it was declared to the model."""

    name: str
    description: str
    #: The JSON schema pydantic produced (``$defs``, titles, required).
    parameters: dict[str, Any]


class Note(_Model):
    """An honest remark the recorder adds, shown as ``label {json}``."""

    label: str
    data: dict[str, Any] = Field(default_factory=dict)


class WireRequest(_Model):
    """An HTTP request as it left the library (secrets not recorded)."""

    method: str
    url: str
    headers: list[tuple[str, str]] = Field(default_factory=list)
    #: The body parsed as JSON when it is JSON.
    json_body: Any = None
    #: The body as text when it is not JSON (or None when empty).
    text_body: str | None = None
    #: Model sampling parameters left to the provider's default. Only for
    #: model requests: they mean nothing on a plain GET to a service.
    defaulted: list[str] | None = None


class StreamEvent(_Model):
    """One server-sent event, as it arrived (secrets not recorded).

    A chat-completions stream sends each ``chat.completion.chunk`` as the
    ``data`` of one event, and ends with ``data: [DONE]``.
    """

    #: When it arrived, in milliseconds since the request was handed over
    #: (the mock model's: since the call began, on its virtual clock).
    at_ms: float
    #: The event's ``event:`` name, when it had one.
    event: str | None = None
    #: The event's data parsed as JSON (a chunk).
    data: Any = None
    #: The event's data when it is not JSON: ``[DONE]``, or what could not be read.
    text: str | None = None

    @field_validator("at_ms")
    @classmethod
    def _microseconds(cls, value: float) -> float:
        return round(value, 3)

    @property
    def done(self) -> bool:
        """Whether this is the end-of-stream marker ``[DONE]``."""
        return self.text is not None and self.text.strip() == "[DONE]"

    @property
    def carries_token(self) -> bool:
        """Whether the event brought part of the reply: text, reasoning or a tool call."""
        return _carries_token(self.data)


def _carries_token(data: Any) -> bool:
    # Read loosely: the trace shows what came, however malformed.
    choices = data.get("choices") if isinstance(data, dict) else None
    for choice in choices if isinstance(choices, list) else ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if isinstance(delta, dict) and (
            delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls")
        ):
            return True
    return False


class Stream(_Model):
    """A reply that arrived as a stream of events, each with its arrival time."""

    #: When the response began (status and headers in), since the request
    #: was handed over; None for the mock model, which has no wire.
    first_byte_ms: float | None = None
    events: list[StreamEvent] = Field(default_factory=list)

    @field_validator("first_byte_ms")
    @classmethod
    def _microseconds(cls, value: float | None) -> float | None:
        return None if value is None else round(value, 3)

    @property
    def done(self) -> bool:
        """Whether the end-of-stream marker ``[DONE]`` arrived."""
        return any(event.done for event in self.events)

    @property
    def fragments(self) -> int:
        """How many events brought part of the reply."""
        return sum(event.carries_token for event in self.events)

    @property
    def first_token_ms(self) -> float | None:
        """When the first part of the reply arrived: time to first token."""
        return next((event.at_ms for event in self.events if event.carries_token), None)

    @property
    def last_token_ms(self) -> float | None:
        """When the last part of the reply arrived."""
        return next((event.at_ms for event in reversed(self.events) if event.carries_token), None)


class WireResponse(_Model):
    """An HTTP response as it arrived (secrets not recorded)."""

    status: int
    headers: list[tuple[str, str]] = Field(default_factory=list)
    json_body: Any = None
    text_body: str | None = None
    #: A body of server-sent events, event by event (then there is no
    #: ``json_body`` or ``text_body``).
    stream: Stream | None = None


class Failure(_Model):
    """Why an attempt or a tool call failed, and what that means for retrying."""

    message: str
    retryable: bool
    idempotent: bool
    caller_can_fix: bool


class Exchange(_Model):
    """One HTTP attempt to the model provider."""

    attempt: int
    request: WireRequest
    response: WireResponse | None = None
    #: Set when the attempt got no usable response (timeout, refused, ...).
    failure: Failure | None = None
    timing: Timing = Field(default_factory=Timing)


class Usage(_Model):
    """Tokens as the provider counted them."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


class ErrorInfo(_Model):
    """An exception, as text with secrets scrubbed."""

    type: str
    message: str
    traceback: str | None = None

    @classmethod
    def of(cls, error: BaseException, scrub: Callable[[str], str] = str) -> ErrorInfo:
        """An exception as a trace holds it: its type, and its message and traceback as ``scrub`` leaves them."""
        trace = scrub("".join(format_exception(error)))
        return cls(type=type(error).__name__, message=scrub(str(error)), traceback=trace)

    def __str__(self) -> str:
        return f"{self.type}: {self.message}"

    def where(self) -> str:
        """`` (path, line N)``: its traceback's last frame of code on disk (a SyntaxError's: its bad line), or ""."""
        frames = [frame for frame in _FRAME.findall(self.traceback or "") if not frame[0].startswith("<")]
        if not frames:
            return ""
        path, line = frames[-1]
        shown = os.path.relpath(path) if Path(path).is_relative_to(Path.cwd()) else path
        if f"line {line})" in self.message:  # a SyntaxError's says the line, and of the file only its name
            return "" if f"({shown}," in self.message else f" (in {shown})"
        return f" ({shown}, line {line})"


class ModelCall(_Model):
    """One call to the model: context and tools sent, reply received."""

    kind: Mode
    #: Model name (``deepseek-flash``) or ``mock``.
    model: str = "mock"
    timing: Timing = Field(default_factory=Timing)
    context: list[Message]
    tools: list[DeclaredTool] = Field(default_factory=list)
    #: Sampling settings the caller set (``max_tokens=24``).
    settings: dict[str, Any] = Field(default_factory=dict)
    exchanges: list[Exchange] = Field(default_factory=list)
    reply: Message | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    notes: list[Note] = Field(default_factory=list)
    error: ErrorInfo | None = None
    #: The mock model's simulated stream. A live call's stream is where it
    #: arrived, on its exchange's response (``streamed`` finds either).
    stream: Stream | None = None

    @property
    def streamed(self) -> Stream | None:
        """The stream the reply came in, if it was streamed: the mock's, or the last one on the wire."""
        if self.stream is not None:
            return self.stream
        for exchange in reversed(self.exchanges):
            if exchange.response is not None and exchange.response.stream is not None:
                return exchange.response.stream
        return None


class Attempt(_Model):
    """One try at the service on behalf of a tool."""

    kind: Literal["attempt"] = "attempt"
    number: int
    request: WireRequest | None = None
    response: WireResponse | None = None
    #: None when the attempt succeeded.
    failure: Failure | None = None
    timing: Timing = Field(default_factory=Timing)


class Backoff(_Model):
    """A wait between two attempts."""

    kind: Literal["backoff"] = "backoff"
    seconds: float
    before_attempt: int
    #: Why this long: ``retry-after`` (the service said) or ``backoff``.
    source: Literal["retry-after", "backoff"] = "backoff"
    #: When the wait began, in milliseconds since its scenario began.
    start_ms: float | None = None

    @field_validator("start_ms")
    @classmethod
    def _microseconds(cls, value: float | None) -> float | None:
        return None if value is None else round(value, 3)


Step = Annotated[Attempt | Backoff, Field(discriminator="kind")]


class Approval(_Model):
    """A person's say on a tool call with side effects, asked before it ran (``primer.approval``)."""

    #: The question as it was put.
    question: str
    approved: bool
    #: Who answered: ``scripted approver``, or nobody when there was no one to ask.
    by: str
    #: Why, when the answer gave a reason (a refusal's is told to the model).
    reason: str | None = None


class ToolRun(_Model):
    """A tool call the model asked for, and what became of it."""

    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: Who the tool talks to (``https://httpbin.org``), if anyone.
    service: str | None = None
    timing: Timing = Field(default_factory=Timing)
    steps: list[Step] = Field(default_factory=list)
    result: str | None = None
    failure: Failure | None = None
    #: An unexpected exception the tool raised (a bug, not a refusal).
    error: ErrorInfo | None = None
    #: The approval asked for before the call ran, if the tool needs one.
    approval: Approval | None = None
    #: The tool message sent back to the model.
    message: str

    @property
    def attempts(self) -> list[Attempt]:
        """The attempts among the steps."""
        return [step for step in self.steps if isinstance(step, Attempt)]


class Turn(_Model):
    """One round of the loop: a model call and the tools it asked for."""

    number: int
    timing: Timing = Field(default_factory=Timing)
    model_call: ModelCall
    tools: list[ToolRun] = Field(default_factory=list)
    #: The agent's own code between the turn's calls, in a run rebuilt from the wire (``primer.from_wire``):
    #: a framework or the author's loop deciding what to do next. None for primer's loop, whose moment is tiny.
    code_ms: float | None = None


EndingReason = Literal[
    "no_tool_calls",
    "answer_received",
    "tokens_exhausted",
    "turn_limit",
    "scenario_error",
    "provider_failure",
    "refused",
    # A guardrail stopped the run: an input check before any model call, or an output check (chapter 22).
    "guardrail_tripped",
]


#: Endings that mean the scenario did not run as written: not a story's outcome
#: but a fault for the author (or the provider) to fix.
FAILED_ENDINGS = frozenset({"scenario_error", "provider_failure"})


class Ending(_Model):
    """Why the loop stopped."""

    reason: EndingReason
    finish_reason: str | None = None
    detail: str | None = None

    @property
    def failed(self) -> bool:
        """Whether the scenario broke rather than ended."""
        return self.reason in FAILED_ENDINGS

    @property
    def label(self) -> str:
        """The ending as the seeds print it."""
        if self.finish_reason is not None:
            return f"{self.reason} (finish_reason = {self.finish_reason})"
        return self.reason


class ScenarioRun(_Model):
    """One scenario run in one mode."""

    name: str
    mode: Mode
    title: str | None = None
    tools: list[str] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)
    timing: Timing = Field(default_factory=Timing)
    #: When it began, as a moment (live runs only: a mock run is the same whenever it runs).
    started_at: AwareDatetime | None = None
    #: Seconds the virtual clock advanced instead of sleeping (mock mode).
    simulated_seconds: float = 0.0
    turns: list[Turn] = Field(default_factory=list)
    #: The whole transcript at the end, the final reply included.
    transcript: list[Message] = Field(default_factory=list)
    ending: Ending
    error: ErrorInfo | None = None


class ChapterRun(_Model):
    """All scenarios of one chapter in one mode: what a trace file holds."""

    schema_version: int = SCHEMA_VERSION
    chapter: str
    mode: Mode
    #: Hash of the code and data the runs depended on (set by the store).
    source_hash: str | None = None
    recorded_at: str | None = None
    #: The day a live trace was last verified by replaying its own recording
    #: against changed code (``primer.replay``); None if it never was (and in
    #: files written before the field existed, which still load).
    verified_at: str | None = None
    model: str | None = None
    scenarios: list[ScenarioRun] = Field(default_factory=list)

    @field_validator("schema_version")
    @classmethod
    def _readable(cls, value: int) -> int:
        if value not in READABLE_VERSIONS:
            raise ValueError(f"schema version {value} is not one these models read ({versions_read()})")
        return value

    @property
    def turns(self) -> int:
        """Turns over all scenarios (the seeds' ``turns=9``)."""
        return sum(len(s.turns) for s in self.scenarios)

    @property
    def messages(self) -> int:
        """Messages in all final transcripts (the seeds' ``messages=22``)."""
        return sum(len(s.transcript) for s in self.scenarios)

    def scenario(self, name: str) -> ScenarioRun:
        """The run of one scenario by name."""
        for run in self.scenarios:
            if run.name == name:
                return run
        raise KeyError(name)
