"""OTLP JSON, written from the traces: each scenario one trace of GenAI spans, as the book publishes it.

The spans are named and attributed as the GenAI semantic conventions say, and
as OpenInference says too (``primer.export.otlp`` has the tree). They are
written here in OTLP's JSON encoding, straight from the trace: the protobuf
JSON mapping with OTLP's differences (hex trace and span ids, enums as
numbers, 64-bit integers and times as strings of nanoseconds). The SDK is not
needed to write it, and not imported: its tracer, encoder and the protobuf
JSON mapping took 0.4 s of a cold build of this book for 22 small files, and
made the same bytes (``primer.export.otlp`` reads them back into the SDK's
spans, to send or to move, and its tests hold the two to each other).

Ids are derived from what they name (chapter, mode, scenario and moment), so
writing the same run twice gives the same ids. Attribute names come from the
semantic conventions' packages (the ``otel`` extra), never typed by hand.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from primer.errors import MissingExtra
from primer.export._runs import Placed, address, placed, provider_name, server
from primer.offsets import model_waits
from primer.trace import (
    Attempt,
    Backoff,
    ChapterRun,
    DeclaredTool,
    Exchange,
    Message,
    ModelCall,
    ToolRun,
    Turn,
    WireResponse,
)

try:
    from openinference.semconv.resource import ResourceAttributes
    from openinference.semconv.trace import MessageAttributes as oi_message
    from openinference.semconv.trace import OpenInferenceMimeTypeValues as Mime
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as oi
    from openinference.semconv.trace import ToolAttributes as oi_tool
    from openinference.semconv.trace import ToolCallAttributes as oi_call
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv.attributes import (
        error_attributes,
        http_attributes,
        server_attributes,
        service_attributes,
        url_attributes,
    )
except ImportError as missing:
    raise MissingExtra("The OTLP export", "otel", missing) from None

__all__ = ["MODE", "RECORDED_AT", "SERVICE_NAME", "chapter_data", "chapter_json"]

#: The ``service.name`` of every span: the book's library.
SERVICE_NAME = "trace-book"
#: The instrumentation scope the spans are made in.
_SCOPE = "primer"

# The book's own attributes, for what the conventions have no name for.
_CHAPTER = "primer.chapter"
MODE = "primer.mode"
_TURN = "primer.turn"
_ENDING = "primer.ending.reason"
_ENDING_FINISH = "primer.ending.finish_reason"
_ENDING_DETAIL = "primer.ending.detail"
_SIMULATED = "primer.simulated_seconds"
_ATTEMPT = "primer.attempt"
_RETRYABLE = "primer.failure.retryable"
_IDEMPOTENT = "primer.failure.idempotent"
_CALLER_CAN_FIX = "primer.failure.caller_can_fix"
_SERVICE = "primer.tool.service"
_TOOL_MESSAGE = "primer.tool.message"
_BACKOFF_SECONDS = "primer.backoff.seconds"
_BACKOFF_SOURCE = "primer.backoff.source"
_BACKOFF_BEFORE = "primer.backoff.before_attempt"
_NOTE_DATA = "primer.note.data"
RECORDED_AT = "primer.recorded_at"

_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
#: A provider's finish reason as the conventions' output messages spell it.
_FINISH = {"tool_calls": "tool_call"}
#: The sampling settings the conventions name, by the name a scenario sets.
_SAMPLING = {
    "max_tokens": gen_ai.GEN_AI_REQUEST_MAX_TOKENS,
    "temperature": gen_ai.GEN_AI_REQUEST_TEMPERATURE,
    "top_p": gen_ai.GEN_AI_REQUEST_TOP_P,
    "seed": gen_ai.GEN_AI_REQUEST_SEED,
    "stream": gen_ai.GEN_AI_REQUEST_STREAM,
}

#: A provider as OpenInference's ``llm.provider`` spells it, where that differs from the GenAI name.
_OI_PROVIDER = {"mistral_ai": "mistralai", "x_ai": "xai"}

Attributes = dict[str, Any]

#: OTLP's span kinds, as its JSON numbers them.
_INTERNAL, _CLIENT = 1, 3
#: A span's ``flags``: its parent's remoteness is known (and none is remote), as the SDK's encoder writes.
_FLAGS = 0x100
_ERROR = 2  # OTLP's ``STATUS_CODE_ERROR``


def chapter_json(*runs: ChapterRun | None, start: datetime | None = None, at: datetime | None = None) -> str:
    """The runs in OTLP's JSON encoding, one line (a file of such lines is what collectors read).

    ``start`` places scenarios that have no moment of their own (mock ones):
    the first of each run begins then, the next where it ended; by default,
    now. ``at`` moves every run there, live ones too (``primer.export._runs.placed``).
    """
    return json.dumps(chapter_data(*runs, start=start, at=at), ensure_ascii=False, separators=(",", ":")) + "\n"


def chapter_data(*runs: ChapterRun | None, start: datetime | None = None, at: datetime | None = None) -> dict[str, Any]:
    """The runs as one OTLP JSON request (``chapter_json`` before it is text): every scenario's spans, parents first."""
    spans: list[dict[str, Any]] = []
    for scenario in placed(runs, start, at=at):
        _Spans(spans, scenario).scenario()
    if not spans:
        return {}
    resource = {service_attributes.SERVICE_NAME: SERVICE_NAME, ResourceAttributes.PROJECT_NAME: SERVICE_NAME}
    # The project Phoenix files the traces under (else its "default").
    scope = {"scope": {"name": _SCOPE}, "spans": spans}
    return {"resourceSpans": [{"resource": {"attributes": _attributes(resource)}, "scopeSpans": [scope]}]}


def _attributes(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any(value)} for key, value in attributes.items() if value is not None]


def _any(value: Any) -> dict[str, Any]:
    """A value as OTLP's JSON ``AnyValue`` writes it (a 64-bit integer as a string, as the mapping says)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [_any(item) for item in value]} if value else {}}
    raise TypeError(f"an attribute value of the type {type(value).__name__} is not one a span carries")


class _Ids:
    """Ids that follow from what they name: the same run, written again, has the same ids."""

    def __init__(self, *parts: str) -> None:
        self._seed = "\x1f".join(parts).encode()
        self._count = 0

    def next(self, size: int) -> str:
        """The next id of the trace, ``size`` bytes in hex (the trace's own first, then each span's)."""
        self._count += 1
        digest = hashlib.sha256(self._seed + b"\x00" + str(self._count).encode()).digest()
        # All zeros is the invalid id; a hash is that with odds of 2**-64 or less.
        return (digest[:size] if any(digest[:size]) else (1).to_bytes(size, "big")).hex()


class _Spans:
    """The spans of one scenario, made at the moments it recorded."""

    def __init__(self, spans: list[dict[str, Any]], scenario: Placed) -> None:
        self.spans = spans
        self.at = scenario.nanoseconds
        run = scenario.run
        self.ids = _Ids(scenario.chapter.chapter, scenario.chapter.mode, run.name, scenario.began.isoformat())
        self.trace_id = self.ids.next(16)
        self.scenario_run = scenario
        self.run = scenario.run

    def _span(
        self,
        name: str,
        kind: int,
        parent: str | None,
        *,
        start_ms: float | None,
        total_ms: float,
        attributes: Attributes,
        error: str | None = None,
        events: Sequence[tuple[str, Attributes]] = (),
    ) -> str:
        """One span (its id): ``events`` happen at its start (the notes of a model call)."""
        start = self.at(start_ms)
        span: dict[str, Any] = {"traceId": self.trace_id, "spanId": self.ids.next(8)}
        if parent is not None:
            span["parentSpanId"] = parent
        span |= {
            "name": name,
            "kind": kind,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + round(total_ms * 1_000_000)),
            "attributes": _attributes(attributes),
        }
        if events:
            when = str(start)
            span["events"] = [{"timeUnixNano": when, "name": n, "attributes": _attributes(a)} for n, a in events]
        # Every key in protobuf's field order, as its JSON mapping writes them (a status's message before its code).
        span["status"] = {**({"message": error} if error else {}), "code": _ERROR} if error is not None else {}
        span["flags"] = _FLAGS
        self.spans.append(span)
        return str(span["spanId"])

    def scenario(self) -> None:
        """The ``invoke_agent`` span and everything under it."""
        run, chapter = self.run, self.scenario_run.chapter
        first = run.turns[0].model_call if run.turns else None
        system = [m for m in run.transcript if m.role == "system"]
        asked = [m for m in run.transcript[: _first_reply(run.transcript)] if m.role != "system"]
        answer = run.transcript[-1] if run.transcript and run.transcript[-1].role == "ai" else None
        question = "\n\n".join(m.content for m in asked if m.role == "human" and m.content)
        recorded = self.scenario_run.recorded
        attributes: Attributes = {
            **_kind(Kind.AGENT),
            **_value("input", question or None),
            # A run that ended without an answer says so where the list shows the answer.
            **_value("output", (answer.content if answer else None) or f"(no answer: ended {run.ending.label})"),
            oi.AGENT_NAME: run.name,
            oi.METADATA: _json({"chapter": chapter.chapter, "mode": run.mode, "ending": run.ending.reason}),
            RECORDED_AT: recorded.astimezone(UTC).isoformat() if recorded is not None else None,
            gen_ai.GEN_AI_OPERATION_NAME: gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value,
            gen_ai.GEN_AI_AGENT_NAME: run.name,
            gen_ai.GEN_AI_AGENT_DESCRIPTION: run.title,
            gen_ai.GEN_AI_PROVIDER_NAME: provider_name(first) if first is not None else None,
            gen_ai.GEN_AI_REQUEST_MODEL: first.model if first is not None else chapter.model,
            gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS: _json([_text(m.content or "") for m in system]) if system else None,
            gen_ai.GEN_AI_INPUT_MESSAGES: _json([_message(m) for m in asked]) if asked else None,
            gen_ai.GEN_AI_OUTPUT_MESSAGES: _json([_output(answer, run.ending.finish_reason)]) if answer else None,
            _CHAPTER: chapter.chapter,
            MODE: run.mode,
            _ENDING: run.ending.reason,
            _ENDING_FINISH: run.ending.finish_reason,
            _ENDING_DETAIL: run.ending.detail,
            _SIMULATED: run.simulated_seconds or None,
        }
        if run.ending.failed:
            attributes[error_attributes.ERROR_TYPE] = run.error.type if run.error else run.ending.reason
        error = (run.ending.detail or run.ending.label) if run.ending.failed else None
        name = f"{gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value} {run.name}"
        root = self._span(
            name,
            _INTERNAL,
            None,
            start_ms=0.0,
            total_ms=run.timing.total_ms,
            attributes=attributes,
            error=error,
        )
        for turn in run.turns:
            self.chat(root, turn)
            for tool in turn.tools:
                self.tool(root, turn, tool)

    def chat(self, parent: str, turn: Turn) -> None:
        """The ``chat`` span of a turn's model call, its attempts and waits under it."""
        call = turn.model_call
        host, port = server(call)
        operation = gen_ai.GenAiOperationNameValues.CHAT.value
        provider = provider_name(call)
        attributes: Attributes = {
            **_kind(Kind.LLM),
            **_llm(call, provider),
            gen_ai.GEN_AI_OPERATION_NAME: operation,
            gen_ai.GEN_AI_PROVIDER_NAME: provider,
            gen_ai.GEN_AI_REQUEST_MODEL: call.model,
            gen_ai.GEN_AI_INPUT_MESSAGES: _json([_message(m) for m in call.context]),
            gen_ai.GEN_AI_TOOL_DEFINITIONS: _json([_definition(t) for t in call.tools]) if call.tools else None,
            server_attributes.SERVER_ADDRESS: host,
            server_attributes.SERVER_PORT: port,
            _TURN: turn.number,
            **_sampling(call.settings),
            **_response(call),
        }
        if call.reply is not None:
            attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES] = _json([_output(call.reply, call.finish_reason)])
        if call.finish_reason is not None:
            attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = [call.finish_reason]
        if call.usage is not None:
            attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] = call.usage.input_tokens
            attributes[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] = call.usage.output_tokens
            attributes[gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = call.usage.cached_tokens
            attributes[gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = call.usage.reasoning_tokens
        stream = call.streamed
        if stream is not None and stream.first_token_ms is not None:
            attributes[gen_ai.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = stream.first_token_ms / 1000
        if call.error is not None:
            attributes[error_attributes.ERROR_TYPE] = call.error.type or error_attributes.ErrorTypeValues.OTHER.value
        error = call.error.message if call.error is not None else None
        # The recorder's honest remarks (what a mock model ignored, what a broken stream
        # had brought) as events; a backoff note is a span of its own, below.
        notes = [(note.label, {_NOTE_DATA: _json(note.data)}) for note in call.notes if note.label != "backoff"]
        span = self._span(
            f"{operation} {call.model}",
            _CLIENT,
            parent,
            start_ms=call.timing.start_ms,
            total_ms=call.timing.total_ms,
            attributes=attributes,
            error=error,
            events=notes,
        )
        waits = model_waits(call)
        previous: Exchange | None = None
        for exchange in call.exchanges:
            wait = waits.get(exchange.attempt)
            if previous is not None and previous.attempt != exchange.attempt and wait is not None:
                self.backoff(span, wait, previous.timing.end_ms)
            self.exchange(span, exchange)
            previous = exchange

    def exchange(self, parent: str, exchange: Exchange) -> None:
        """An HTTP ``CLIENT`` span for one attempt on the model's wire."""
        self._http(
            parent,
            method=exchange.request.method,
            url=exchange.request.url,
            response=exchange.response,
            number=exchange.attempt,
            failure=exchange.failure.message if exchange.failure else None,
            start_ms=exchange.timing.start_ms,
            total_ms=exchange.timing.total_ms,
        )

    def tool(self, parent: str, turn: Turn, run: ToolRun) -> None:
        """The ``execute_tool`` span of a tool call, its attempts and waits under it."""
        operation = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
        declared = next((t for t in turn.model_call.tools if t.name == run.name), None)
        attributes: Attributes = {
            **_kind(Kind.TOOL),
            **_value("input", _json(run.arguments), Mime.JSON),
            # What came back: the result, or the message the model was sent in its place.
            **_value("output", run.result if run.failure is None else run.message),
            oi.TOOL_NAME: run.name,
            oi.TOOL_ID: run.call_id,
            oi.TOOL_DESCRIPTION: declared.description if declared else None,
            oi.TOOL_PARAMETERS: _json(declared.parameters) if declared else None,
            gen_ai.GEN_AI_OPERATION_NAME: operation,
            gen_ai.GEN_AI_TOOL_NAME: run.name,
            gen_ai.GEN_AI_TOOL_TYPE: "function",
            gen_ai.GEN_AI_TOOL_CALL_ID: run.call_id,
            gen_ai.GEN_AI_TOOL_DESCRIPTION: declared.description if declared else None,
            gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS: _json(run.arguments),
            gen_ai.GEN_AI_TOOL_CALL_RESULT: run.result if run.failure is None else None,
            _TOOL_MESSAGE: run.message,
            _SERVICE: run.service,
            _TURN: turn.number,
        }
        error = None
        if run.failure is not None:
            attributes |= _classified(run.failure.retryable, run.failure.idempotent, run.failure.caller_can_fix)
            attributes[error_attributes.ERROR_TYPE] = run.error.type if run.error else "ToolFailed"
            error = run.failure.message
        span = self._span(
            f"{operation} {run.name}",
            _INTERNAL,
            parent,
            start_ms=run.timing.start_ms,
            total_ms=run.timing.total_ms,
            attributes=attributes,
            error=error,
        )
        for step in run.steps:
            if isinstance(step, Backoff):
                self.backoff(span, step, step.start_ms)
            elif step.request is not None:  # an attempt refused before anything went out has no wire
                self.attempt(span, step)

    def attempt(self, parent: str, step: Attempt) -> None:
        """An HTTP ``CLIENT`` span for one attempt at the service."""
        request = step.request
        if request is None:
            return
        extra = (
            _classified(step.failure.retryable, step.failure.idempotent, step.failure.caller_can_fix)
            if step.failure
            else {}
        )
        self._http(
            parent,
            method=request.method,
            url=request.url,
            response=step.response,
            number=step.number,
            failure=step.failure.message if step.failure else None,
            start_ms=step.timing.start_ms,
            total_ms=step.timing.total_ms,
            extra=extra,
        )

    def _http(
        self,
        parent: str,
        *,
        method: str,
        url: str,
        response: WireResponse | None,
        number: int,
        failure: str | None,
        start_ms: float | None,
        total_ms: float,
        extra: Attributes | None = None,
    ) -> None:
        host, port = address(url)
        attributes: Attributes = {
            **_kind(Kind.CHAIN),
            **_value("input", f"{method} {url}"),
            **_value("output", failure or (str(response.status) if response is not None else None)),
            http_attributes.HTTP_REQUEST_METHOD: method,
            url_attributes.URL_FULL: url,
            server_attributes.SERVER_ADDRESS: host,
            server_attributes.SERVER_PORT: port,
            http_attributes.HTTP_REQUEST_RESEND_COUNT: number - 1 if number > 1 else None,
            _ATTEMPT: number,
            **(extra or {}),
        }
        if response is not None:
            attributes[http_attributes.HTTP_RESPONSE_STATUS_CODE] = response.status
        if failure is not None:
            # A status is the error's type when one came; else the cause is in the description.
            error_type = str(response.status) if response is not None and response.status >= 400 else None
            attributes[error_attributes.ERROR_TYPE] = error_type or error_attributes.ErrorTypeValues.OTHER.value
        self._span(
            method,
            _CLIENT,
            parent,
            start_ms=start_ms,
            total_ms=total_ms,
            attributes=attributes,
            error=failure,
        )

    def backoff(self, parent: str, wait: Backoff, start_ms: float | None) -> None:
        """An ``INTERNAL`` span for a wait between two attempts."""
        attributes: Attributes = {
            **_kind(Kind.CHAIN),
            _BACKOFF_SECONDS: wait.seconds,
            _BACKOFF_SOURCE: wait.source,
            _BACKOFF_BEFORE: wait.before_attempt,
        }
        self._span("backoff", _INTERNAL, parent, start_ms=start_ms, total_ms=wait.seconds * 1000, attributes=attributes)


def _kind(kind: Kind) -> Attributes:
    return {oi.OPENINFERENCE_SPAN_KIND: kind.value}


def _value(which: str, value: str | None, mime: Mime = Mime.TEXT) -> Attributes:
    """OpenInference's ``input.value``/``output.value`` and its mime type: what its viewers list."""
    if value is None:
        return {}
    if which == "input":
        return {oi.INPUT_VALUE: value, oi.INPUT_MIME_TYPE: mime.value}
    return {oi.OUTPUT_VALUE: value, oi.OUTPUT_MIME_TYPE: mime.value}


def _llm(call: ModelCall, provider: str) -> Attributes:
    """A model call as OpenInference's ``llm.*`` attributes: messages flattened by index, tools, tokens."""
    context = [_openai(m) for m in call.context]
    attributes: Attributes = {
        **_value("input", _json({"messages": context}), Mime.JSON),
        oi.LLM_MODEL_NAME: call.model,
        oi.LLM_PROVIDER: _OI_PROVIDER.get(provider, provider),
        oi.LLM_SYSTEM: "openai" if call.kind != "mock" else provider,  # the API every live model here speaks
        oi.LLM_INVOCATION_PARAMETERS: _json(call.settings) if call.settings else None,
    }
    for index, message in enumerate(call.context):
        attributes |= _flat_message(f"{oi.LLM_INPUT_MESSAGES}.{index}.", message)
    for index, tool in enumerate(call.tools):
        function = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        schema = _json({"type": "function", "function": function})
        attributes[f"{oi.LLM_TOOLS}.{index}.{oi_tool.TOOL_JSON_SCHEMA}"] = schema
    if call.reply is not None:
        attributes |= _flat_message(f"{oi.LLM_OUTPUT_MESSAGES}.0.", call.reply)
        reply = call.reply
        if reply.tool_calls:
            attributes |= _value("output", _json(_openai(reply)), Mime.JSON)
        else:
            attributes |= _value("output", reply.content or "")
    if call.usage is not None:
        attributes |= {
            oi.LLM_TOKEN_COUNT_PROMPT: call.usage.input_tokens,
            oi.LLM_TOKEN_COUNT_COMPLETION: call.usage.output_tokens,
            oi.LLM_TOKEN_COUNT_TOTAL: call.usage.input_tokens + call.usage.output_tokens,
            oi.LLM_TOKEN_COUNT_PROMPT_DETAILS_CACHE_READ: call.usage.cached_tokens,
            oi.LLM_TOKEN_COUNT_COMPLETION_DETAILS_REASONING: call.usage.reasoning_tokens,
        }
    return attributes


def _flat_message(prefix: str, message: Message) -> Attributes:
    """One message as OpenInference flattens it: ``PREFIX message.role``, ``PREFIX message.tool_calls.0...``."""
    attributes: Attributes = {
        prefix + oi_message.MESSAGE_ROLE: _ROLES[message.role],
        prefix + oi_message.MESSAGE_CONTENT: message.content,
        prefix + oi_message.MESSAGE_TOOL_CALL_ID: message.tool_call_id,
    }
    for index, call in enumerate(message.tool_calls):
        at = f"{prefix}{oi_message.MESSAGE_TOOL_CALLS}.{index}."
        attributes |= {
            at + oi_call.TOOL_CALL_ID: call.id,
            at + oi_call.TOOL_CALL_FUNCTION_NAME: call.name,
            at + oi_call.TOOL_CALL_FUNCTION_ARGUMENTS_JSON: _arguments(call.arguments, call.raw_arguments),
        }
    return attributes


def _arguments(arguments: Any, raw: str | None) -> str:
    """A tool call's arguments as the model wrote them: the raw text when it was not a JSON object."""
    return raw if raw is not None else _json(arguments)


def _openai(message: Message) -> dict[str, Any]:
    """A message as the chat completions API has it, the shape OpenInference viewers show as JSON."""
    shaped: dict[str, Any] = {"role": _ROLES[message.role], "content": message.content}
    if message.tool_call_id is not None:
        shaped["tool_call_id"] = message.tool_call_id
    if message.tool_calls:
        shaped["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call.arguments, call.raw_arguments)},
            }
            for call in message.tool_calls
        ]
    return shaped


def _first_reply(transcript: Sequence[Message]) -> int:
    return next((index for index, message in enumerate(transcript) if message.role == "ai"), len(transcript))


#: ``json.dumps(value, ensure_ascii=False)``, with one encoder for the 2,800 values of a book's export, not one each.
_json = json.JSONEncoder(ensure_ascii=False).encode


def _text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def _parts(message: Message) -> list[dict[str, Any]]:
    """A message's parts, as the conventions' message schema has them."""
    parts: list[dict[str, Any]] = []
    if message.reasoning:
        parts.append({"type": "reasoning", "content": message.reasoning})
    if message.role == "tool":
        parts.append({"type": "tool_call_response", "id": message.tool_call_id, "response": message.content or ""})
    elif message.content:
        parts.append(_text(message.content))
    for call in message.tool_calls:
        arguments: Any = call.arguments if call.raw_arguments is None else call.raw_arguments
        parts.append({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
    return parts


def _message(message: Message) -> dict[str, Any]:
    return {"role": _ROLES[message.role], "parts": _parts(message)}


def _output(message: Message, finish_reason: str | None) -> dict[str, Any]:
    reason = _FINISH.get(finish_reason or "", finish_reason or "stop")
    return {**_message(message), "finish_reason": reason}


def _definition(tool: DeclaredTool) -> dict[str, Any]:
    return {"type": "function", "name": tool.name, "description": tool.description, "parameters": tool.parameters}


def _sampling(settings: Mapping[str, Any]) -> Attributes:
    attributes: Attributes = {}
    for key, value in settings.items():
        if key in _SAMPLING and isinstance(value, (int, float, bool)):
            attributes[_SAMPLING[key]] = value
    stop = settings.get("stop")
    if isinstance(stop, str):
        attributes[gen_ai.GEN_AI_REQUEST_STOP_SEQUENCES] = [stop]
    elif isinstance(stop, list) and all(isinstance(item, str) for item in stop):
        attributes[gen_ai.GEN_AI_REQUEST_STOP_SEQUENCES] = stop
    return attributes


def _response(call: ModelCall) -> Attributes:
    """The response's id and model, as the provider named them (the last exchange that answered)."""
    for exchange in reversed(call.exchanges):
        response = exchange.response
        if response is None:
            continue
        bodies: Iterable[Any] = [response.json_body]
        if response.stream is not None:
            bodies = (event.data for event in response.stream.events)
        for body in bodies:
            if isinstance(body, dict) and isinstance(body.get("id"), str):
                model = body.get("model")
                return {
                    gen_ai.GEN_AI_RESPONSE_ID: body["id"],
                    gen_ai.GEN_AI_RESPONSE_MODEL: model if isinstance(model, str) else None,
                }
    return {}


def _classified(retryable: bool, idempotent: bool, caller_can_fix: bool) -> Attributes:
    return {_RETRYABLE: retryable, _IDEMPOTENT: idempotent, _CALLER_CAN_FIX: caller_can_fix}
