"""Traces as OpenTelemetry sees them: GenAI spans, as OTLP JSON or over OTLP/HTTP.

Each scenario is one trace, its spans named and attributed as the GenAI
semantic conventions say, and as OpenInference says too, which is what
Phoenix, Arize and the other OpenInference viewers list by (the span kind,
``input.value`` and ``output.value``, the ``llm.*`` messages and token
counts). Attribute names come from the ``opentelemetry-semantic-conventions``
and ``openinference-semantic-conventions`` packages, never typed by hand::

    invoke_agent SCENARIO       INTERNAL AGENT  the scenario: its question, its answer, how it ended
      chat MODEL                CLIENT   LLM    one per turn: context, reply, tokens, finish reason
        POST                    CLIENT   CHAIN  each attempt on the wire (live)
        backoff                 INTERNAL CHAIN  a wait between two attempts
      execute_tool TOOL         INTERNAL TOOL   each tool call: id, arguments, result
        GET                     CLIENT   CHAIN  each attempt at the service
        backoff                 INTERNAL CHAIN  a wait between two attempts

A failed part (an attempt answered 429, a tool call that failed, a broken
scenario) has the ``ERROR`` status, with what went wrong as its message.

The spans are made by the OpenTelemetry SDK itself, at the moments the
trace recorded (a scenario's ``started_at`` plus each part's ``start_ms``),
and encoded by its OTLP encoder; ``chapter_json`` writes that request in
OTLP's JSON encoding (hex trace and span ids, times as strings of
nanoseconds), ``send`` hands the spans to the official OTLP/HTTP exporter::

    Path("ch09.otlp.json").write_text(chapter_json(run_chapter("ch09_who_retries")))
    send([frozen_live_run], "http://127.0.0.1:4318/v1/traces")

A viewer that lists the last few days by default hides a run recorded
months ago: ``at`` moves the runs to a moment (``datetime.now(UTC)``), each
live scenario keeping its recording moment in ``primer.recorded_at``. A
published OTLP JSON file is read back into spans (``file_spans``, moved too
when asked) and sent as protobuf, which every OTLP/HTTP endpoint takes
(Phoenix takes no JSON).

The content (messages, tool arguments and results) is included: the trace
holds it already, redacted when it was recorded, and so does the export.
Ids are derived from what they name (chapter, mode, scenario and moment),
so exporting the same run twice gives the same ids. Needs the ``otel``
extra: ``pip install 'trace-book[otel]'``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from primer.errors import ExportFailed, MissingExtra, NotFound
from primer.export._runs import Placed, address, placed, provider_name, server, unix_nanoseconds
from primer.offsets import model_waits
from primer.redact import Redactor
from primer.settings import Settings
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
    from google.protobuf import json_format
    from openinference.semconv.resource import ResourceAttributes
    from openinference.semconv.trace import MessageAttributes as oi_message
    from openinference.semconv.trace import OpenInferenceMimeTypeValues as Mime
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as oi
    from openinference.semconv.trace import ToolAttributes as oi_tool
    from openinference.semconv.trace import ToolCallAttributes as oi_call
    from opentelemetry import trace as trace_api
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan, Span, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.id_generator import IdGenerator
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv.attributes import (
        error_attributes,
        http_attributes,
        server_attributes,
        service_attributes,
        url_attributes,
    )
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
except ImportError as missing:
    raise MissingExtra("The OTLP export", "otel", missing) from None

__all__ = [
    "SERVICE_NAME",
    "chapter_json",
    "chapter_request",
    "chapter_spans",
    "file_spans",
    "send",
    "send_spans",
    "shown_url",
    "spans_json",
    "traces_url",
]

#: The ``service.name`` of every span: the book's library.
SERVICE_NAME = "trace-book"
#: The instrumentation scope the spans are made in.
_SCOPE = "primer"

# The book's own attributes, for what the conventions have no name for.
_CHAPTER = "primer.chapter"
_MODE = "primer.mode"
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
_RECORDED_AT = "primer.recorded_at"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

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

_SWITCHED_OFF = (
    "The OpenTelemetry SDK made no spans: it is switched off in this environment (OTEL_SDK_DISABLED is set); "
    "unset it to export."
)


def chapter_spans(
    *runs: ChapterRun | None, start: datetime | None = None, at: datetime | None = None
) -> list[ReadableSpan]:
    """The spans of every scenario of the runs (one trace each), parents before children.

    ``start`` places scenarios that have no moment of their own (mock ones):
    the first of each run begins then, the next where it ended; by default,
    now. ``at`` moves every run there, live ones too (``primer.export._runs.placed``).
    """
    ids = _Ids()
    memory = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_ON, resource=_resource(), id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(_SCOPE)
    scenarios = list(placed(runs, start, at=at))
    for scenario in scenarios:
        ids.name(scenario.chapter.chapter, scenario.chapter.mode, scenario.run.name, scenario.began.isoformat())
        _Spans(tracer, scenario).scenario()
    provider.shutdown()
    return list(memory.get_finished_spans())


def _resource() -> Resource:
    # The project Phoenix files the traces under (else its "default").
    return Resource({service_attributes.SERVICE_NAME: SERVICE_NAME, ResourceAttributes.PROJECT_NAME: SERVICE_NAME})


def chapter_request(
    *runs: ChapterRun | None, start: datetime | None = None, at: datetime | None = None
) -> ExportTraceServiceRequest:
    """The runs as one OTLP ``ExportTraceServiceRequest``, as an exporter would send it."""
    return encode_spans(chapter_spans(*runs, start=start, at=at))


def chapter_json(*runs: ChapterRun | None, start: datetime | None = None, at: datetime | None = None) -> str:
    """The runs in OTLP's JSON encoding, one line (a file of such lines is what collectors read).

    The protobuf JSON mapping with OTLP's differences: trace and span ids in
    hex rather than base64, enums as numbers; times are strings of
    nanoseconds since the Unix epoch, as the mapping writes 64-bit integers.
    """
    return spans_json(chapter_spans(*runs, start=start, at=at))


def spans_json(spans: Sequence[ReadableSpan]) -> str:
    """Spans in OTLP's JSON encoding, one line, as ``chapter_json`` writes them."""
    data = json_format.MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                _hex_ids(span)
                for link in span.get("links", []):
                    _hex_ids(link)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def shown_url(endpoint: str) -> str:
    """An endpoint as messages show it: no user, password or query, and its path only if it is OTLP's own.

    A collector's key can sit anywhere in its URL, the path included
    (``https://collector.test/KEY/v1/traces``): any other path is shown as
    ``/…``, and the keys the environment sets are scrubbed besides.
    """
    parts = urlsplit(endpoint)
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is no number: part of a key, perhaps, as much as of a host
        host, port = None, None
    if host and ":" in host:
        host = f"[{host}]"
    origin = f"{parts.scheme}://{host}{f':{port}' if port else ''}" if host else f"{parts.scheme}://…"
    path = parts.path if parts.path in ("", "/", _TRACES_PATH) else "/…"
    return Redactor(Settings.keys_from_env().values()).text(origin + path)


def _hex_ids(item: dict[str, Any]) -> None:
    for key in ("traceId", "spanId", "parentSpanId"):
        if item.get(key):
            item[key] = base64.b64decode(item[key]).hex()


_TRACES_PATH = "/v1/traces"


def traces_url(endpoint: str) -> str:
    """The URL to send traces to: ``endpoint`` as given, or with ``/v1/traces`` when it has no path.

    Raises ``ValueError`` for anything but an http(s) URL with a host.
    """
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"The OTLP endpoint must be an http or https URL, such as http://127.0.0.1:4318/v1/traces, "
            f"not {shown_url(endpoint)!r}."
        )
    if parts.path in ("", "/"):
        parts = parts._replace(path=_TRACES_PATH)
    return urlunsplit(parts)


def file_spans(path: Path, *, at: datetime | None = None) -> list[ReadableSpan]:
    """The spans of an OTLP JSON file: one the book published (``traces/CHAPTER.otlp.json``) or ``chapter_json`` wrote.

    Each line is one request in OTLP's JSON encoding (hex ids). With ``at``,
    the traces of each mode are moved so that the first begins then, the rest
    keeping their places after it; a live trace's root keeps the moment it was
    recorded in ``primer.recorded_at``. Raises ``NotFound`` for a file that is
    not there and ``ExportFailed`` for one that is not OTLP JSON.
    """
    if path.exists() and not path.is_file():  # a device or a pipe could be read for ever
        raise ExportFailed(f"{path} is not a regular file: give the path of an OTLP JSON file.")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise NotFound(f"There is no file {path}: give the path of an OTLP JSON file.") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ExportFailed(f"{path} cannot be read ({error}): give the path of an OTLP JSON file.") from None
    requests = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            requests.append(_parsed(json.loads(line)))
        except (ValueError, TypeError, AttributeError, RecursionError, json_format.Error) as error:
            raise ExportFailed(
                f"{path}, line {number}, is not OTLP JSON ({type(error).__name__}): give a file the book published "
                "(site/traces/CHAPTER.otlp.json) or `python -m primer export otlp -o FILE` wrote."
            ) from None
    messages = [span for request in requests for _, _, span in _each_span(request)]
    spans = []
    resources: dict[int, Resource] = {}
    try:
        moves = _moves(messages, unix_nanoseconds(at)) if at is not None else {}
        for request in requests:
            for resource, scope, span in _each_span(request):
                kept = resources.setdefault(id(resource), Resource(_values(resource.attributes)))
                spans.append(_readable(span, kept, scope, moves.get(span.trace_id, 0)))
    except (ValueError, KeyError) as error:  # a value the JSON mapping takes but a span cannot hold
        raise ExportFailed(
            f"{path} holds a span that is not OTLP's ({error}): give a file the book published "
            "(site/traces/CHAPTER.otlp.json) or `python -m primer export otlp -o FILE` wrote."
        ) from None
    return spans


def _parsed(data: Any) -> ExportTraceServiceRequest:
    """OTLP JSON read into the protobuf request: its hex ids made the bytes the message holds."""
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for item in [span, *span.get("links", [])]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if item.get(key):
                            item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return json_format.ParseDict(data, ExportTraceServiceRequest())


def _each_span(request: ExportTraceServiceRequest) -> Iterator[tuple[Any, InstrumentationScope, SpanMessage]]:
    for resource_spans in request.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            scope = InstrumentationScope(scope_spans.scope.name, scope_spans.scope.version or None)
            for span in scope_spans.spans:
                yield resource_spans.resource, scope, span


def _moves(spans: Sequence[SpanMessage], to: int) -> dict[bytes, int]:
    """How far each trace moves so the first of its mode's traces begins at ``to``, in nanoseconds."""
    modes = {span.trace_id: _values(span.attributes).get(_MODE, "") for span in spans if not span.parent_span_id}
    first: dict[str, int] = {}
    for span in spans:
        mode = modes.get(span.trace_id, "")
        first[mode] = min(first.get(mode, span.start_time_unix_nano), span.start_time_unix_nano)
    return {span.trace_id: to - first[modes.get(span.trace_id, "")] for span in spans}


#: OTLP's span kinds as the SDK numbers them (OTLP counts "unspecified" first).
_KINDS = {
    SpanMessage.SPAN_KIND_UNSPECIFIED: SpanKind.INTERNAL,
    SpanMessage.SPAN_KIND_INTERNAL: SpanKind.INTERNAL,
    SpanMessage.SPAN_KIND_SERVER: SpanKind.SERVER,
    SpanMessage.SPAN_KIND_CLIENT: SpanKind.CLIENT,
    SpanMessage.SPAN_KIND_PRODUCER: SpanKind.PRODUCER,
    SpanMessage.SPAN_KIND_CONSUMER: SpanKind.CONSUMER,
}


def _readable(span: SpanMessage, resource: Resource, scope: InstrumentationScope, move: int) -> ReadableSpan:
    """A span of a file as the SDK holds it, ``move`` nanoseconds later."""

    def context(span_id: bytes) -> SpanContext:
        trace_id = int.from_bytes(span.trace_id, "big")
        return SpanContext(trace_id, int.from_bytes(span_id, "big"), is_remote=False, trace_flags=TraceFlags(1))

    attributes = _values(span.attributes)
    if move and not span.parent_span_id and attributes.get(_MODE) == "live":
        recorded = _EPOCH + timedelta(microseconds=span.start_time_unix_nano // 1000)
        attributes.setdefault(_RECORDED_AT, recorded.isoformat())
    status = Status(StatusCode(span.status.code), span.status.message or None)
    return ReadableSpan(
        name=span.name,
        context=context(span.span_id),
        parent=context(span.parent_span_id) if span.parent_span_id else None,
        resource=resource,
        attributes=attributes,
        events=[Event(e.name, _values(e.attributes), e.time_unix_nano + move) for e in span.events],
        links=[
            Link(SpanContext(int.from_bytes(link.trace_id, "big"), int.from_bytes(link.span_id, "big"), False))
            for link in span.links
        ],
        kind=_KINDS[span.kind],
        status=status if status.status_code is not StatusCode.UNSET else Status(),
        start_time=span.start_time_unix_nano + move,
        end_time=span.end_time_unix_nano + move,
        instrumentation_scope=scope,
    )


def _values(pairs: Iterable[KeyValue]) -> Attributes:
    """OTLP key-value pairs as the SDK's attributes (the scalar values and arrays of them spans carry)."""
    return {pair.key: _plain(pair.value) for pair in pairs}


def _plain(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_plain(item) for item in value.array_value.values)
    if kind in ("string_value", "bool_value", "int_value", "double_value", "bytes_value"):
        return getattr(value, kind)
    raise ValueError(f"an attribute value of the kind {kind} is not one a span carries")


def send(
    runs: Sequence[ChapterRun | None],
    endpoint: str,
    *,
    start: datetime | None = None,
    at: datetime | None = None,
    timeout: float = 10.0,
) -> int:
    """Send the runs' spans to an OTLP/HTTP endpoint (protobuf), with the official exporter; how many went.

    Raises ``ExportFailed`` when the endpoint does not take them (``send_spans``).
    """
    return send_spans(chapter_spans(*runs, start=start, at=at), endpoint, timeout=timeout)


def send_spans(spans: Sequence[ReadableSpan], endpoint: str, *, timeout: float = 10.0) -> int:
    """Send spans to an OTLP/HTTP endpoint as ``send`` does (a file's, from ``file_spans``); how many went.

    Raises ``ExportFailed`` when the endpoint does not take them: any answer
    but a 2xx, a redirect included (none is followed: it could send the
    spans, and the headers, to another host), naming the status. The
    exporter retries what is worth retrying within ``timeout`` seconds; its
    own log is silenced meanwhile, since it may quote the endpoint's answer,
    and this function says what went wrong instead.
    """
    import requests  # the exporter's HTTP library, with it in the otel extra

    url = traces_url(endpoint)
    statuses: list[int] = []

    class _NoRedirects(requests.Session):
        def get_redirect_target(self, response: requests.Response) -> None:
            return None

    session = _NoRedirects()
    session.hooks["response"].append(lambda response, *args, **kwargs: statuses.append(response.status_code))
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout, session=session)
    quiet = logging.getLogger("opentelemetry")  # every logger of the exporter's, which inherit its level
    was = quiet.level
    quiet.setLevel(logging.CRITICAL + 1)
    try:
        result = exporter.export(spans)
    finally:
        quiet.setLevel(was)
        exporter.shutdown()  # type: ignore[no-untyped-call]  # the exporter's own signature lacks a return type
    where = shown_url(url)
    if statuses and not 200 <= statuses[-1] < 300:
        status = statuses[-1]
        redirect = " (a redirect, which is not followed: give the address it points to)" if status < 400 else ""
        raise ExportFailed(
            f"The OTLP endpoint {where} did not take the {len(spans)} spans: it answered {status}{redirect}."
        )
    if result is not SpanExportResult.SUCCESS:
        raise ExportFailed(
            f"The OTLP endpoint {where} did not take the {len(spans)} spans: nothing answered; check that a "
            "collector listens there for OTLP/HTTP."
        )
    return len(spans)


class _Ids(IdGenerator):
    """Ids that follow from what they name: the same run, exported again, has the same ids."""

    def __init__(self) -> None:
        self._seed = b""
        self._count = 0

    def name(self, *parts: str) -> None:
        """Start the ids of one trace, named by ``parts``."""
        self._seed = "\x1f".join(parts).encode()
        self._count = 0

    def _next(self, size: int) -> int:
        self._count += 1
        digest = hashlib.sha256(self._seed + b"\x00" + str(self._count).encode()).digest()
        # All zeros is the invalid id; a hash is that with odds of 2**-64 or less.
        return int.from_bytes(digest[:size], "big") or 1

    def generate_span_id(self) -> int:
        """The next span id of the trace."""
        return self._next(8)

    def generate_trace_id(self) -> int:
        """The trace's id."""
        return self._next(16)


class _Spans:
    """The spans of one scenario, made at the moments it recorded."""

    def __init__(self, tracer: trace_api.Tracer, scenario: Placed) -> None:
        self.tracer = tracer
        self.at = scenario.nanoseconds
        self.scenario_run = scenario
        self.run = scenario.run

    def _span(
        self,
        name: str,
        kind: SpanKind,
        parent: Span | None,
        *,
        start_ms: float | None,
        total_ms: float,
        attributes: Attributes,
        error: str | None = None,
        events: Sequence[tuple[str, Attributes]] = (),
    ) -> Span:
        """One span, ended at once: its end is known, and its children need only its context.

        ``events`` happen at its start (the notes of a model call).
        """
        context = trace_api.set_span_in_context(parent) if parent is not None else None
        start = self.at(start_ms)
        clean = {key: value for key, value in attributes.items() if value is not None}
        span = self.tracer.start_span(name, context=context, kind=kind, attributes=clean, start_time=start)
        for event, data in events:
            span.add_event(event, data, timestamp=start)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        if not isinstance(span, Span):  # the SDK's own span, unless the SDK is switched off
            raise ExportFailed(_SWITCHED_OFF)
        span.end(end_time=start + round(total_ms * 1_000_000))
        return span

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
            _RECORDED_AT: recorded.astimezone(UTC).isoformat() if recorded is not None else None,
            gen_ai.GEN_AI_OPERATION_NAME: gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value,
            gen_ai.GEN_AI_AGENT_NAME: run.name,
            gen_ai.GEN_AI_AGENT_DESCRIPTION: run.title,
            gen_ai.GEN_AI_PROVIDER_NAME: provider_name(first) if first is not None else None,
            gen_ai.GEN_AI_REQUEST_MODEL: first.model if first is not None else chapter.model,
            gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS: _json([_text(m.content or "") for m in system]) if system else None,
            gen_ai.GEN_AI_INPUT_MESSAGES: _json([_message(m) for m in asked]) if asked else None,
            gen_ai.GEN_AI_OUTPUT_MESSAGES: _json([_output(answer, run.ending.finish_reason)]) if answer else None,
            _CHAPTER: chapter.chapter,
            _MODE: run.mode,
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
            SpanKind.INTERNAL,
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

    def chat(self, parent: Span, turn: Turn) -> None:
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
            SpanKind.CLIENT,
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

    def exchange(self, parent: Span, exchange: Exchange) -> None:
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

    def tool(self, parent: Span, turn: Turn, run: ToolRun) -> None:
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
            SpanKind.INTERNAL,
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

    def attempt(self, parent: Span, step: Attempt) -> None:
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
        parent: Span,
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
            SpanKind.CLIENT,
            parent,
            start_ms=start_ms,
            total_ms=total_ms,
            attributes=attributes,
            error=failure,
        )

    def backoff(self, parent: Span, wait: Backoff, start_ms: float | None) -> None:
        """An ``INTERNAL`` span for a wait between two attempts."""
        attributes: Attributes = {
            **_kind(Kind.CHAIN),
            _BACKOFF_SECONDS: wait.seconds,
            _BACKOFF_SOURCE: wait.source,
            _BACKOFF_BEFORE: wait.before_attempt,
        }
        self._span(
            "backoff", SpanKind.INTERNAL, parent, start_ms=start_ms, total_ms=wait.seconds * 1000, attributes=attributes
        )


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


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


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
