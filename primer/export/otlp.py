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

The spans are placed at the moments the trace recorded (a scenario's
``started_at`` plus each part's ``start_ms``). ``chapter_json`` writes them
in OTLP's JSON encoding (hex trace and span ids, times as strings of
nanoseconds) without the SDK (``primer.export.otlp_json``, what a book's
build publishes); ``send`` reads that into the SDK's spans and hands them to
the official OTLP/HTTP exporter::

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
import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from primer.errors import ExportFailed, MissingExtra, NotFound
from primer.export._runs import unix_nanoseconds
from primer.export.otlp_json import MODE, RECORDED_AT, SERVICE_NAME, chapter_data, chapter_json
from primer.settings import Settings
from primer.trace import ChapterRun

try:
    from google.protobuf import json_format
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanMessage
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
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

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Attributes = dict[str, Any]


def chapter_spans(
    *runs: ChapterRun | None, start: datetime | None = None, at: datetime | None = None
) -> list[ReadableSpan]:
    """The spans of every scenario of the runs (one trace each), parents before children, as the SDK holds them.

    ``start`` places scenarios that have no moment of their own (mock ones):
    the first of each run begins then, the next where it ended; by default,
    now. ``at`` moves every run there, live ones too (``primer.export._runs.placed``).
    """
    return _spans(chapter_request(*runs, start=start, at=at))


def chapter_request(
    *runs: ChapterRun | None, start: datetime | None = None, at: datetime | None = None
) -> ExportTraceServiceRequest:
    """The runs as one OTLP ``ExportTraceServiceRequest``, as an exporter would send it."""
    return _parsed(chapter_data(*runs, start=start, at=at))


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
    return Settings.keys_redactor().text(origin + path)


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
    try:
        spans = _spans(*requests, at=at)
    except (ValueError, KeyError) as error:  # a value the JSON mapping takes but a span cannot hold
        raise ExportFailed(
            f"{path} holds a span that is not OTLP's ({error}): give a file the book published "
            "(site/traces/CHAPTER.otlp.json) or `python -m primer export otlp -o FILE` wrote."
        ) from None
    if not spans:  # an empty file, or `{}`: nothing to send, which is not what was meant
        raise ExportFailed(
            f"{path} holds no spans: give a file the book published (site/traces/CHAPTER.otlp.json) "
            "or `python -m primer export otlp -o FILE` wrote."
        )
    return spans


def _spans(*requests: ExportTraceServiceRequest, at: datetime | None = None) -> list[ReadableSpan]:
    """The requests' spans as the SDK holds them; with ``at``, moved as ``file_spans`` says."""
    messages = [span for request in requests for _, _, span in _each_span(request)]
    moves = _moves(messages, unix_nanoseconds(at)) if at is not None else {}
    spans = []
    resources: dict[int, Resource] = {}
    for request in requests:
        for resource, scope, span in _each_span(request):
            kept = resources.setdefault(id(resource), Resource(_values(resource.attributes)))
            spans.append(_readable(span, kept, scope, moves.get(span.trace_id, 0)))
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
    modes = {span.trace_id: _values(span.attributes).get(MODE, "") for span in spans if not span.parent_span_id}
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
    if move and not span.parent_span_id and attributes.get(MODE) == "live":
        recorded = _EPOCH + timedelta(microseconds=span.start_time_unix_nano // 1000)
        attributes.setdefault(RECORDED_AT, recorded.isoformat())
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
