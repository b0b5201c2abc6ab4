"""The OpenTelemetry export: GenAI spans as OTLP JSON, over OTLP/HTTP, and published by the book.

The JSON is read back into the real protobuf messages (``opentelemetry-proto``), the ids
turned from OTLP's hex into the bytes the messages hold, and compared with the request the
SDK's own encoder makes. The span tree, kinds, names, attributes and times are checked against
the trace they came from, for ch09 in mock mode (run now) and live (the frozen recording). A
receiver on 127.0.0.1, started by the test, takes the protobuf export; a live run against the
loopback provider and httpbin, with keys, is exported and searched for every form of them.
"""

from __future__ import annotations

import base64
import builtins
import gzip
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

from primer.book._book import Prepared, Report
from primer.book._cache import TraceCache
from primer.book._publish import publish
from primer.book._source import ChapterTraces, LiveStatus
from primer.chapters import scenarios_of
from primer.cli import main
from primer.errors import ExportFailed, MissingExtra
from primer.export import _runs
from primer.export.otlp import SERVICE_NAME, chapter_json, chapter_request, chapter_spans, send, spans_json, traces_url
from primer.replay import read_trace
from primer.runner import run_chapter
from primer.settings import DEFAULT_SERVICE_KEY
from primer.trace import Attempt, Backoff, ChapterRun, ScenarioRun
from tests.books import make_book, shown_of
from tests.secret_forms import leaks
from tests.servers import live_settings
from tests.servers.provider import ReplayProvider
from tests.servers.service import LocalHttpbin

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "docs" / "traces"
CHAPTER = "ch09_who_retries"
#: Where the mock scenarios are placed: they have no moment of their own.
START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

INTERNAL, CLIENT = Span.SPAN_KIND_INTERNAL, Span.SPAN_KIND_CLIENT
ERROR = 2  # Status.STATUS_CODE_ERROR


@pytest.fixture(scope="module")
def runs() -> dict[str, ChapterRun]:
    return {"mock": run_chapter(CHAPTER), "live": read_trace(TRACES / f"{CHAPTER}.live.json")}


def parsed(text: str) -> ExportTraceServiceRequest:
    """OTLP JSON read into the protobuf request: hex ids become the bytes the message holds."""
    data = json.loads(text)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.ParseDict(data, ExportTraceServiceRequest())


def spans_of(request: ExportTraceServiceRequest) -> list[Span]:
    return [span for resource in request.resource_spans for scope in resource.scope_spans for span in scope.spans]


def attributes(span: Span) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in span.attributes:
        value = item.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            found[item.key] = [getattr(v, v.WhichOneof("value")) for v in value.array_value.values]
        else:
            found[item.key] = getattr(value, kind)
    return found


def children(spans: list[Span], parent: Span) -> list[Span]:
    return [span for span in spans if span.parent_span_id == parent.span_id and span.trace_id == parent.trace_id]


# -- the JSON encoding ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["mock", "live"])
def test_the_json_is_the_sdks_request_with_hex_ids_and_nanosecond_strings(
    runs: dict[str, ChapterRun], mode: str
) -> None:
    text = chapter_json(runs[mode], start=START)
    assert text.endswith("\n")
    assert text.count("\n") == 1, "one line: a file of such lines is what a collector's file receiver reads"
    data = json.loads(text)
    raw = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span in raw:
        assert len(span["traceId"]) == 32
        assert len(span["spanId"]) == 16
        assert all(c in "0123456789abcdef" for c in span["traceId"] + span["spanId"] + span.get("parentSpanId", ""))
        assert isinstance(span["startTimeUnixNano"], str)
        assert span["startTimeUnixNano"].isdigit()
        assert isinstance(span["kind"], int)
    # Written without the SDK, it is byte for byte what the SDK's encoder and protobuf's JSON mapping make of it.
    assert spans_json(chapter_spans(runs[mode], start=START)) == text
    request = parsed(text)
    assert request == chapter_request(runs[mode], start=START)
    spans = spans_of(request)
    assert [bytes(s.trace_id).hex() for s in spans] == [s["traceId"] for s in raw]
    assert [bytes(s.span_id).hex() for s in spans] == [s["spanId"] for s in raw]
    resource = {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}
    assert resource == {"service.name": SERVICE_NAME, "openinference.project.name": SERVICE_NAME}


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.live.json")), ids=lambda path: path.name.split(".")[0])
def test_every_frozen_live_trace_is_written_as_the_sdks_encoder_writes_it(path: Path) -> None:
    run = read_trace(path)
    text = chapter_json(run)
    assert text.count('"spanId"') > len(run.scenarios), "a span for each scenario, and more under it"
    assert spans_json(chapter_spans(run)) == text


def test_each_kind_of_attribute_value_is_written_as_otlp_json_says() -> None:
    from primer.export import otlp_json

    values = [True, 0, -3, 2**40, 0.05, 1.0, "", "text", ["stop"], []]
    written = [otlp_json._any(value) for value in values]
    assert written == [
        {"boolValue": True},
        {"intValue": "0"},
        {"intValue": "-3"},
        {"intValue": str(2**40)},
        {"doubleValue": 0.05},
        {"doubleValue": 1.0},
        {"stringValue": ""},
        {"stringValue": "text"},
        {"arrayValue": {"values": [{"stringValue": "stop"}]}},
        {"arrayValue": {}},
    ]
    for value, json_value in zip(values, written, strict=True):  # as protobuf's own mapping reads and writes it
        message = json_format.ParseDict(json_value, AnyValue())
        assert json_format.MessageToDict(message) == json_value, value
    with pytest.raises(TypeError, match="dict"):
        otlp_json._any({"a": 1})


def test_the_same_run_exported_twice_has_the_same_ids_and_mock_runs_start_where_told(
    runs: dict[str, ChapterRun],
) -> None:
    assert chapter_json(runs["live"]) == chapter_json(runs["live"]), "a live run has its own moments"
    assert chapter_json(runs["mock"], start=START) == chapter_json(runs["mock"], start=START)
    first = spans_of(chapter_request(runs["mock"], start=START))[0]
    assert first.start_time_unix_nano == int(START.timestamp()) * 10**9


# -- the span tree -----------------------------------------------------------------------


def expected_tree(run: ScenarioRun) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """(name, kind, [(child name, kind)]) for each child of the root, from the trace itself."""
    tree = []
    for turn in run.turns:
        call = turn.model_call
        wire = []
        previous = None
        for exchange in call.exchanges:
            if previous is not None and previous != exchange.attempt:
                wire.append(("backoff", INTERNAL))
            wire.append((exchange.request.method, CLIENT))
            previous = exchange.attempt
        tree.append((f"chat {call.model}", CLIENT, wire))
        for tool in turn.tools:
            steps = [
                ("backoff", INTERNAL) if isinstance(step, Backoff) else (step.request.method, CLIENT)
                for step in tool.steps
                if isinstance(step, Backoff) or step.request is not None
            ]
            tree.append((f"execute_tool {tool.name}", INTERNAL, steps))
    return tree


@pytest.mark.parametrize("mode", ["mock", "live"])
def test_one_trace_per_scenario_invoke_agent_then_chat_and_execute_tool_then_http(
    runs: dict[str, ChapterRun], mode: str
) -> None:
    run = runs[mode]
    spans = spans_of(parsed(chapter_json(run, start=START)))
    roots = [span for span in spans if not span.parent_span_id]
    assert [root.name for root in roots] == [f"invoke_agent {s.name}" for s in run.scenarios]
    assert len({root.trace_id for root in roots}) == len(run.scenarios), "one trace per scenario"
    for root, scenario in zip(roots, run.scenarios, strict=True):
        assert root.kind == INTERNAL
        tree = [
            (child.name, child.kind, [(grand.name, grand.kind) for grand in children(spans, child)])
            for child in children(spans, root)
        ]
        assert tree == expected_tree(scenario)
    assert len(spans) == sum(1 + sum(1 + len(kids) for _, _, kids in expected_tree(s)) for s in run.scenarios)


def test_the_live_spans_carry_the_genai_attributes(runs: dict[str, ChapterRun]) -> None:
    run = runs["live"]
    spans = spans_of(parsed(chapter_json(run)))
    scenario = run.scenario("service_is_busy")
    root = next(span for span in spans if span.name == "invoke_agent service_is_busy")
    chat, tool, second_chat = children(spans, root)
    call = scenario.turns[0].model_call
    chat_attributes = attributes(chat)
    assert chat_attributes[gen_ai.GEN_AI_OPERATION_NAME] == "chat"
    assert chat_attributes[gen_ai.GEN_AI_PROVIDER_NAME] == "deepseek"
    assert chat_attributes[gen_ai.GEN_AI_REQUEST_MODEL] == "deepseek-flash"
    assert call.usage is not None
    assert chat_attributes[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] == call.usage.input_tokens
    assert chat_attributes[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] == call.usage.output_tokens
    assert chat_attributes[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] == [call.finish_reason] == ["tool_calls"]
    assert chat_attributes["server.address"] == "api.deepseek.com"
    assert chat_attributes["server.port"] == 443
    sent = json.loads(chat_attributes[gen_ai.GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[1]["parts"] == [{"type": "text", "content": call.context[1].content}]
    [answer] = json.loads(chat_attributes[gen_ai.GEN_AI_OUTPUT_MESSAGES])
    assert answer["role"] == "assistant"
    assert answer["finish_reason"] == "tool_call"
    [asked] = [part for part in answer["parts"] if part["type"] == "tool_call"]
    run_ = scenario.turns[0].tools[0]
    assert (asked["id"], asked["name"], asked["arguments"]) == (run_.call_id, run_.name, run_.arguments)
    definitions = json.loads(chat_attributes[gen_ai.GEN_AI_TOOL_DEFINITIONS])
    assert [d["name"] for d in definitions] == [t.name for t in call.tools]

    tool_attributes = attributes(tool)
    assert tool_attributes[gen_ai.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert tool_attributes[gen_ai.GEN_AI_TOOL_CALL_ID] == run_.call_id
    assert json.loads(tool_attributes[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS]) == run_.arguments
    assert tool_attributes[gen_ai.GEN_AI_TOOL_CALL_RESULT] == run_.result
    busy, wait, answered = children(spans, tool)
    assert (busy.status.code, attributes(busy)["http.response.status_code"], attributes(busy)["error.type"]) == (
        ERROR,
        429,
        "429",
    )
    assert attributes(wait)["primer.backoff.seconds"] == 0.05
    assert attributes(answered)["http.request.resend_count"] == 1
    assert attributes(answered)["url.full"].startswith("https://httpbin.org/")

    ending = attributes(root)
    assert ending[gen_ai.GEN_AI_AGENT_NAME] == "service_is_busy"
    assert ending["primer.ending.reason"] == "no_tool_calls"
    assert (
        json.loads(ending[gen_ai.GEN_AI_OUTPUT_MESSAGES])[0]["parts"][-1]["content"] == scenario.transcript[-1].content
    )
    assert second_chat.name == "chat deepseek-flash"


def test_a_failed_tool_call_is_an_error_span_with_the_message_the_model_got(runs: dict[str, ChapterRun]) -> None:
    spans = spans_of(parsed(chapter_json(runs["live"])))
    landed = runs["live"].scenario("order_may_have_landed").turns[0].tools[0]
    span = next(s for s in spans if s.name == "execute_tool place_order" and attributes(s)["primer.turn"] == 1)
    assert span.status.code == ERROR
    assert landed.failure is not None
    assert span.status.message == landed.failure.message
    found = attributes(span)
    assert gen_ai.GEN_AI_TOOL_CALL_RESULT not in found, "a result only when the call succeeded"
    assert found["primer.tool.message"] == landed.message
    assert found["primer.failure.retryable"] is True
    assert found["primer.failure.idempotent"] is False


def test_the_mock_model_says_what_it_ignored_as_events(runs: dict[str, ChapterRun]) -> None:
    spans = spans_of(parsed(chapter_json(runs["mock"], start=START)))
    chat = next(span for span in spans if span.name == "chat mock")
    assert attributes(chat)[gen_ai.GEN_AI_PROVIDER_NAME] == _runs.MOCK_PROVIDER
    assert [event.name for event in chat.events] == [
        "tools declared to the mock model",
        "context ignored by the mock model",
    ]
    assert all(event.time_unix_nano == chat.start_time_unix_nano for event in chat.events)


def test_every_known_provider_name_is_one_the_conventions_list() -> None:
    listed = {value.value for value in gen_ai.GenAiProviderNameValues}
    assert set(_runs._KNOWN_PROVIDERS) <= listed


# -- times -------------------------------------------------------------------------------


def spans_in_time(spans: list[Span], parent: Span) -> Iterator[str]:
    previous = None
    for child in children(spans, parent):
        if not parent.start_time_unix_nano <= child.start_time_unix_nano <= child.end_time_unix_nano:
            yield f"{child.name} starts before {parent.name} or ends before it starts"
        # A microsecond of rounding either way.
        if child.end_time_unix_nano > parent.end_time_unix_nano + 2_000:
            yield f"{child.name} ends after {parent.name}"
        if previous is not None and child.start_time_unix_nano < previous.end_time_unix_nano - 2_000:
            yield f"{child.name} starts before {previous.name} ended"
        previous = child
        yield from spans_in_time(spans, child)


@pytest.mark.parametrize("mode", ["mock", "live"])
def test_spans_are_at_the_recorded_moments_children_inside_parents(runs: dict[str, ChapterRun], mode: str) -> None:
    run = runs[mode]
    spans = spans_of(parsed(chapter_json(run, start=START)))
    roots = [span for span in spans if not span.parent_span_id]
    began = START
    for root, scenario in zip(roots, run.scenarios, strict=True):
        if scenario.started_at is not None:
            began = scenario.started_at
        at = began.timestamp()
        assert root.start_time_unix_nano == pytest.approx(at * 10**9, abs=1_000)
        assert root.end_time_unix_nano - root.start_time_unix_nano == round(scenario.timing.total_ms * 10**6)
        assert list(spans_in_time(spans, root)) == []
        first_tool = next((tool for turn in scenario.turns for tool in turn.tools), None)
        if first_tool is not None:
            span = next(s for s in children(spans, root) if s.name == f"execute_tool {first_tool.name}")
            assert first_tool.timing.start_ms is not None
            assert span.start_time_unix_nano - root.start_time_unix_nano == round(first_tool.timing.start_ms * 10**6)
        began += timedelta(milliseconds=scenario.timing.total_ms)


# -- OTLP/HTTP -----------------------------------------------------------------------------


class Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP traces endpoint: decodes each ExportTraceServiceRequest it is sent."""

    received: ClassVar[list[tuple[str, bytes]]] = []
    #: The authorization header of each request ("" when none came).
    authorizations: ClassVar[list[str]] = []
    status: ClassVar[int] = 200

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        type(self).received.append((self.headers.get("content-type", ""), body))
        type(self).authorizations.append(self.headers.get("authorization", ""))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(type(self).status)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[Receiver]]]:
    handler = type("OneReceiver", (Receiver,), {"received": [], "authorizations": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_loopback_receiver_gets_the_protobuf_export(
    runs: dict[str, ChapterRun], receiver: tuple[str, type[Receiver]]
) -> None:
    url, handler = receiver
    assert send([runs["live"]], url + "/v1/traces", timeout=5) == len(spans_of(chapter_request(runs["live"])))
    [(content_type, body)] = handler.received
    assert content_type == "application/x-protobuf"
    got = ExportTraceServiceRequest.FromString(body)
    # The same spans as the JSON: one encoding, two ways to hand it over.
    assert spans_of(got) == spans_of(parsed(chapter_json(runs["live"])))


def test_the_command_sends_to_an_endpoint_and_says_so(
    receiver: tuple[str, type[Receiver]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, handler = receiver
    assert main(["export", "otlp", CHAPTER, "--mode", "live", "--traces", str(TRACES), "--endpoint", url]) == 0
    out = capsys.readouterr().out
    [(_, body)] = handler.received
    spans = spans_of(ExportTraceServiceRequest.FromString(body))
    assert out.strip() == f"sent {len(spans)} spans in 4 traces (live runs of {CHAPTER}) to {url}"
    assert traces_url(url) == url + "/v1/traces", "a bare endpoint gets OTLP's traces path"


def test_an_endpoint_that_refuses_is_an_error_naming_it(
    runs: dict[str, ChapterRun], receiver: tuple[str, type[Receiver]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, handler = receiver
    handler.status = 400  # not worth retrying: the exporter gives up at once
    logging.getLogger("opentelemetry").disabled = True  # the exporter's own warning is not the test's output
    try:
        with pytest.raises(ExportFailed, match=r"/v1/traces did not take the \d+ spans"):
            send([runs["live"]], url, timeout=5)
        assert main(["export", "otlp", CHAPTER, "--endpoint", url]) == 1
    finally:
        logging.getLogger("opentelemetry").disabled = False
    assert f"error: The OTLP endpoint {url}/v1/traces did not take" in capsys.readouterr().err


@pytest.mark.parametrize("endpoint", ["ftp://127.0.0.1/v1/traces", "127.0.0.1:4318", "http://"])
def test_an_endpoint_that_is_not_an_http_url_is_a_usage_error(
    endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "otlp", CHAPTER, "--endpoint", endpoint]) == 2
    assert "must be an http or https URL" in capsys.readouterr().err


# -- the command -------------------------------------------------------------------------


def test_the_command_writes_the_json_of_a_mock_run_or_of_the_frozen_live_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "ch09.otlp.json"
    assert main(["export", "otlp", CHAPTER, "--mode", "live", "--traces", str(TRACES), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}: 4 traces (live runs of {CHAPTER})"
    assert parsed(out.read_text()) == chapter_request(read_trace(TRACES / f"{CHAPTER}.live.json"))
    assert main(["export", "otlp", CHAPTER]) == 0
    printed = capsys.readouterr().out
    names = [span.name for span in spans_of(parsed(printed)) if not span.parent_span_id]
    assert names == [f"invoke_agent {s.name}" for s in scenarios_of(CHAPTER)]


def test_the_command_names_a_missing_live_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "otlp", "ch01_one_call", "--mode", "live", "--traces", str(tmp_path)]) == 2
    assert f"There is no live trace of ch01_one_call at {tmp_path / 'ch01_one_call.live.json'}" in (
        capsys.readouterr().err
    )


# -- secrets ---------------------------------------------------------------------------------

API_KEY = "sk-otlp/Te+st=9c2e71"
SERVICE_KEY = "svc-otlp+Se/cret=41d0b8"


@pytest.mark.slow
def test_no_key_in_any_export_of_a_live_run(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin, receiver: tuple[str, type[Receiver]], tmp_path: Path
) -> None:
    for scenario in scenarios_of(CHAPTER):
        replay_provider.load(f"{CHAPTER}.{scenario.name}")
    settings = live_settings(replay_provider, httpbin, api_key=API_KEY, service_key=SERVICE_KEY)
    run = run_chapter(CHAPTER, "live", settings=settings)
    # httpbin was sent the service key and echoed it back: the trace holds the echo, redacted.
    assert any(step.response for t in run.scenarios[0].turns for tool in t.tools for step in tool.attempts)
    text = chapter_json(run)
    url, handler = receiver
    send([run], url, timeout=5)
    [(_, body)] = handler.received
    from primer.export.inspect_log import write

    inspect_text = write(run, tmp_path / "log.json").read_text()
    for name, output in [
        ("OTLP JSON", text),
        ("OTLP protobuf", body.decode("utf-8", "replace")),
        ("Inspect", inspect_text),
    ]:
        assert leaks(output, [API_KEY, SERVICE_KEY]) == [], name
    assert gen_ai.GEN_AI_INPUT_MESSAGES in text, "the content is exported: what was sent, what came back"


@pytest.mark.parametrize("chapter", ["ch05_loop_endings", CHAPTER])
def test_no_key_in_the_export_of_the_frozen_traces(chapter: str) -> None:
    text = chapter_json(run_chapter(chapter), read_trace(TRACES / f"{chapter}.live.json"), start=START)
    # The key the seed recording and the mock runs were made with.
    assert leaks(text, [DEFAULT_SERVICE_KEY]) == []
    assert "Bearer" not in text


# -- the book --------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_book_publishes_the_otlp_json_beside_the_trace_json_and_links_it(tmp_path: Path) -> None:
    book = make_book(tmp_path)
    build = book.build("--strict")
    assert build.returncode == 0, build.log
    published = book.root / "site" / "traces" / "ch_alpha.otlp.json"
    spans = spans_of(parsed(published.read_text()))
    assert [s.name for s in spans if not s.parent_span_id] == [
        "invoke_agent asks_price",
        "invoke_agent answers_at_once",
    ]
    page = (book.root / "site" / "index.html").read_text()
    assert 'href="traces/ch_alpha.otlp.json"' in page or 'data-tr-root-relative="traces/ch_alpha.otlp.json"' in page


@pytest.mark.slow
def test_the_book_builds_without_the_otel_packages_and_says_so(tmp_path: Path) -> None:
    # A package that cannot be imported stands first on the path, as if none were installed.
    blocker = tmp_path / "blocker" / "opentelemetry"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text('raise ImportError("not installed", name="opentelemetry")\n')
    book = make_book(tmp_path / "book")
    path = [str(blocker.parent), str(book.root), str(ROOT)]
    build = book.build("--strict", PYTHONPATH=":".join(path))
    assert build.returncode == 0, build.log
    assert (book.root / "site" / "traces" / "ch_alpha.json").is_file()
    assert not (book.root / "site" / "traces" / "ch_alpha.otlp.json").exists()
    [said] = build.lines("no OTLP JSON is published")
    assert "INFO" in said
    assert "opentelemetry could not be imported: pip install -e '.[otel]' in a checkout of trace-book" in said


def test_the_store_says_it_once_and_publishes_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # As if the otel extra were not installed: importing any of its modules raises ImportError.
    for name in [n for n in sys.modules if n.split(".")[0] in ("opentelemetry", "openinference")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.delitem(sys.modules, "primer.export.otlp", raising=False)
    monkeypatch.delitem(sys.modules, "primer.export.otlp_json", raising=False)
    store = TraceCache(tmp_path / "cache", tmp_path / "live")
    tried, importing = [], builtins.__import__

    def counting(name: str, *args: Any, **kwargs: Any) -> Any:
        tried.extend([name] if name == "primer.export.otlp_json" else [])
        return importing(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", counting)
    shown, runs = {}, {}
    for chapter in ("ch_a", "ch_b"):
        run = ChapterRun(chapter=chapter, mode="mock")
        runs[chapter] = ChapterTraces(chapter, run, None, LiveStatus("missing"), f"traces/{chapter}.json")
        shown[chapter] = shown_of(runs[chapter])
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.primer.book"):
        written = publish(tmp_path / "site", Prepared(Report(), shown, store, runs=runs), {})
    assert [path.name for path in written] == ["ch_a.json", "ch_a.payloads.html", "ch_b.json", "ch_b.payloads.html"]
    said = [r.getMessage() for r in caplog.records if "OTLP" in r.getMessage()]
    assert len(said) == 1
    assert tried == ["primer.export.otlp_json"], "a missing export is looked for once a build, not once a chapter"
    with pytest.raises(MissingExtra, match=r"trace-book\[otel\]"):
        import primer.export.otlp  # noqa: F401


def test_an_attempt_refused_before_anything_went_out_has_no_http_span(runs: dict[str, ChapterRun]) -> None:
    scenario = runs["mock"].scenario("arguments_are_wrong")
    refused = scenario.turns[0].tools[0]
    assert isinstance(refused.steps[0], Attempt)
    assert refused.steps[0].request is None
    spans = spans_of(parsed(chapter_json(runs["mock"], start=START)))
    root = next(s for s in spans if s.name == "invoke_agent arguments_are_wrong")
    tool = next(s for s in children(spans, root) if s.name == "execute_tool place_order")
    assert children(spans, tool) == []
    assert attributes(tool)["primer.failure.caller_can_fix"] is True


def test_an_sdk_switched_off_by_the_environment_does_not_change_what_is_written(
    runs: dict[str, ChapterRun], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The variable switches off a process's own telemetry; the file is written from a trace, by no tracer.
    before = chapter_json(runs["mock"], start=START)
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert chapter_json(runs["mock"], start=START) == before
    assert len(chapter_spans(runs["mock"], start=START)) == before.count('"spanId"')


def test_a_credential_in_the_endpoint_is_never_shown(
    receiver: tuple[str, type[Receiver]], capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    url, handler = receiver
    secret = "collector-pass-5e1f"
    with_credential = url.replace("http://", f"http://user:{secret}@") + "/v1/traces?api_key=" + secret
    handler.status = 400
    # The exporter's own log too (urllib3's debug log names the path it sends to: a debugging aid, off by default).
    with caplog.at_level(logging.INFO):
        assert main(["export", "otlp", CHAPTER, "--endpoint", with_credential]) == 1
    err = capsys.readouterr().err
    assert "did not take" in err
    assert secret not in err
    assert secret not in caplog.text
    assert main(["export", "otlp", CHAPTER, "--endpoint", f"ftp://user:{secret}@host"]) == 2
    assert secret not in capsys.readouterr().err


def _links(blocked: bool) -> str:
    # A process of its own: whether the otel extra is there is decided once per process.
    script = (
        ("import sys; sys.modules['opentelemetry'] = None\n" if blocked else "")
        + "from primer.book._render import render_traces\n"
        + "from tests.test_render_data import FixtureSource\n"
        + "print(render_traces(FixtureSource().traces('ch09_who_retries')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


@pytest.mark.slow
def test_a_chapter_links_its_otlp_json_only_when_the_book_can_publish_it() -> None:
    with_extra = _links(blocked=False)
    assert 'class="tr-otlp" href="traces/ch09_who_retries.otlp.json"' in with_extra
    # What the file is for, and how to load it: viewers such as Phoenix take OTLP as protobuf only.
    assert ">OTLP JSON for trace viewers</a>" in with_extra
    assert "python -m primer export otlp --from FILE --endpoint URL" in with_extra
    without = _links(blocked=True)
    assert 'class="tr-download" href="traces/ch09_who_retries.json"' in without
    assert "tr-otlp" not in without
    assert "otlp.json" not in without


# -- what OpenInference viewers (Phoenix) list ----------------------------------------------

#: The OpenInference span kind each span of the tree has, by the start of its name.
KINDS = {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL", "GET": "CHAIN", "POST": "CHAIN"}


def received_spans(handler: type[Receiver]) -> list[Span]:
    """Every span a loopback receiver was sent, decoded from the protobuf."""
    assert {content_type for content_type, _ in handler.received} == {"application/x-protobuf"}
    return [span for _, body in handler.received for span in spans_of(ExportTraceServiceRequest.FromString(body))]


@pytest.mark.parametrize("mode", ["mock", "live"])
def test_every_span_has_its_openinference_kind_and_the_roots_the_question_and_the_answer(
    runs: dict[str, ChapterRun], mode: str
) -> None:
    run = runs[mode]
    spans = spans_of(chapter_request(run, start=START))
    for span in spans:
        assert attributes(span)["openinference.span.kind"] == KINDS.get(span.name.split()[0], "CHAIN"), span.name
    roots = [span for span in spans if not span.parent_span_id]
    for root, scenario in zip(roots, run.scenarios, strict=True):
        found = attributes(root)
        [question] = [m.content for m in scenario.transcript if m.role == "human"]
        assert (found["input.value"], found["input.mime_type"]) == (question, "text/plain"), "the question, no system"
        assert found["output.value"] == scenario.transcript[-1].content
        assert found["output.mime_type"] == "text/plain"
        assert found["agent.name"] == scenario.name
        assert json.loads(found["metadata"])["ending"] == scenario.ending.reason


@pytest.mark.parametrize(
    ("chapter", "scenario"), [("ch03_the_loop", "keeps_asking"), ("ch05_loop_endings", "tokens_exhausted")]
)
def test_a_run_that_ended_without_an_answer_says_so_as_its_output(chapter: str, scenario: str) -> None:
    run = run_chapter(chapter)
    ending = run.scenario(scenario).ending
    root = next(s for s in spans_of(chapter_request(run, start=START)) if s.name == f"invoke_agent {scenario}")
    assert attributes(root)["output.value"] == f"(no answer: ended {ending.label})"


def test_a_chat_span_carries_the_llm_messages_tools_and_token_counts(runs: dict[str, ChapterRun]) -> None:
    run = runs["live"]
    spans = spans_of(chapter_request(run))
    scenario = run.scenario("service_is_busy")
    root = next(span for span in spans if span.name == "invoke_agent service_is_busy")
    chat, tool, _ = children(spans, root)
    call = scenario.turns[0].model_call
    found = attributes(chat)
    assert call.usage is not None
    assert (found["llm.token_count.prompt"], found["llm.token_count.completion"], found["llm.token_count.total"]) == (
        call.usage.input_tokens,
        call.usage.output_tokens,
        call.usage.input_tokens + call.usage.output_tokens,
    )
    assert (found["llm.model_name"], found["llm.provider"], found["llm.system"]) == (
        "deepseek-flash",
        "deepseek",
        "openai",
    )
    assert found["llm.input_messages.0.message.role"] == "system"
    assert found["llm.input_messages.1.message.content"] == call.context[1].content
    asked = scenario.turns[0].tools[0]
    assert found["llm.output_messages.0.message.role"] == "assistant"
    assert found["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == asked.name
    assert json.loads(found["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"]) == (
        asked.arguments
    )
    assert found["llm.output_messages.0.message.tool_calls.0.tool_call.id"] == asked.call_id
    schema = json.loads(found["llm.tools.0.tool.json_schema"])
    assert schema["function"]["name"] == call.tools[0].name
    assert json.loads(found["input.value"])["messages"][1] == {"role": "user", "content": call.context[1].content}
    assert json.loads(found["output.value"])["tool_calls"][0]["function"]["name"] == asked.name
    assert found["output.mime_type"] == "application/json"

    tool_found = attributes(tool)
    assert (tool_found["tool.name"], tool_found["tool.id"]) == (asked.name, asked.call_id)
    assert json.loads(tool_found["input.value"]) == asked.arguments
    assert tool_found["input.mime_type"] == "application/json"
    assert tool_found["output.value"] == asked.result
    [declared] = [t for t in call.tools if t.name == asked.name]
    assert json.loads(tool_found["tool.parameters"]) == declared.parameters


def test_the_error_spans_are_the_failed_attempts_and_tool_calls_with_what_the_model_was_told(
    runs: dict[str, ChapterRun],
) -> None:
    run = runs["live"]
    spans = spans_of(chapter_request(run))
    failed = [(tool, step) for s in run.scenarios for t in s.turns for tool in t.tools for step in tool.attempts]
    expected = sum(tool.failure is not None for s in run.scenarios for t in s.turns for tool in t.tools) + sum(
        step.failure is not None and step.request is not None for _, step in failed
    )
    errors = [span for span in spans if span.status.code == ERROR]
    assert len(errors) == expected == 6, "the six failures of ch09's live run: three tool calls, three attempts"
    for span in errors:
        found = attributes(span)
        assert found["output.value"], span.name
        if span.name.startswith("execute_tool"):
            assert found["output.value"] == found["primer.tool.message"], "what the model was sent back"


def test_at_moves_a_recorded_run_and_keeps_when_it_was_recorded(runs: dict[str, ChapterRun]) -> None:
    run = runs["live"]
    now = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    recorded = spans_of(chapter_request(run))
    moved = spans_of(chapter_request(run, at=now))
    assert len(moved) == len(recorded)
    first = min(span.start_time_unix_nano for span in moved)
    assert first == int(now.timestamp()) * 10**9
    shift = first - min(span.start_time_unix_nano for span in recorded)
    for before, after in zip(recorded, moved, strict=True):
        assert after.start_time_unix_nano - before.start_time_unix_nano == shift, "every span, the same shift"
        assert after.end_time_unix_nano - after.start_time_unix_nano == (
            before.end_time_unix_nano - before.start_time_unix_nano
        )
    roots = [span for span in moved if not span.parent_span_id]
    for root, scenario in zip(roots, run.scenarios, strict=True):
        assert scenario.started_at is not None
        assert attributes(root)["primer.recorded_at"] == scenario.started_at.isoformat()
    mock_root = spans_of(chapter_request(runs["mock"], at=now))[0]
    assert mock_root.start_time_unix_nano == first
    assert "primer.recorded_at" not in attributes(mock_root), "a mock run was recorded at no moment"


def published(runs: dict[str, ChapterRun], folder: Path) -> Path:
    """The chapter's OTLP JSON as the book publishes it: mock and live runs, the mock ones at MOCK_EPOCH."""
    from primer.book._publish import MOCK_EPOCH

    path = folder / f"{CHAPTER}.otlp.json"
    path.write_text(chapter_json(runs["mock"], runs["live"], start=MOCK_EPOCH), encoding="utf-8")
    return path


def test_a_published_file_reads_back_into_the_same_spans(runs: dict[str, ChapterRun], tmp_path: Path) -> None:
    from primer.export.otlp import file_spans, spans_json

    path = published(runs, tmp_path)
    assert spans_json(file_spans(path)) == path.read_text(), "byte for byte: ids, times, attributes, events"


def test_the_command_sends_a_published_file_as_protobuf_moved_to_now(
    runs: dict[str, ChapterRun],
    receiver: tuple[str, type[Receiver]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, handler = receiver
    path = published(runs, tmp_path)
    before = datetime.now(UTC)
    assert main(["export", "otlp", "--from", str(path), "--endpoint", url, "--at", "now"]) == 0
    spans = received_spans(handler)
    in_file = spans_of(parsed(path.read_text()))
    assert capsys.readouterr().out.strip() == f"sent {len(in_file)} spans in 8 traces (from {path}) to {url}"
    assert [(s.trace_id, s.span_id, s.name) for s in spans] == [(s.trace_id, s.span_id, s.name) for s in in_file]
    assert [s.attributes for s in spans if s.parent_span_id] == [s.attributes for s in in_file if s.parent_span_id]
    # Each mode's traces begin now: the mock ones recorded at no moment, the live ones months ago.
    roots = [span for span in spans if not span.parent_span_id]
    modes = {mode: [root for root in roots if attributes(root)["primer.mode"] == mode] for mode in ("mock", "live")}
    for mode, those in modes.items():
        assert len(those) == 4
        first = min(root.start_time_unix_nano for root in those)
        assert int(before.timestamp()) * 10**9 <= first <= int(datetime.now(UTC).timestamp() + 1) * 10**9, mode
    for root in modes["live"]:
        recorded = attributes(root)["primer.recorded_at"]
        assert recorded.startswith("2026-09-13"), "the recording moment, kept"
    assert all("primer.recorded_at" not in attributes(root) for root in modes["mock"])


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("not json\n", "line 1, is not OTLP JSON (JSONDecodeError)"),
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}\n', "line 1, is not OTLP JSON"),
        ('{"resourceSpans": 3}\n', "line 1, is not OTLP JSON"),
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"kind": 42}]}]}]}\n', "holds a span that is not OTLP's"),
        ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"status": {"code": 9}}]}]}]}\n', "holds a span that is"),
        (
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": '
            '[{"key": "k", "value": {"kvlistValue": {}}}]}]}]}]}\n',
            "holds a span that is not OTLP's",
        ),
    ],
)
def test_a_file_that_is_not_otlp_json_is_named_and_nothing_is_sent(
    content: str, said: str, receiver: tuple[str, type[Receiver]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, handler = receiver
    path = tmp_path / "broken.otlp.json"
    path.write_text(content)
    assert main(["export", "otlp", "--from", str(path), "--endpoint", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}")
    assert said in err
    assert handler.received == []
    assert main(["export", "otlp", "--from", str(tmp_path / "none.json"), "--endpoint", url]) == 2
    assert f"There is no file {tmp_path / 'none.json'}" in capsys.readouterr().err
    assert main(["export", "otlp", "--from", "/dev/zero", "--endpoint", url]) == 2
    assert "/dev/zero is not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ([CHAPTER, "--at", "yesterday"], "--at takes now or an ISO time with its zone"),
        ([CHAPTER, "--at", "2026-12-01T09:00"], "--at takes now or an ISO time with its zone"),
        ([CHAPTER, "--from", "x.json"], "Give a chapter to export, or --from FILE"),
        ([], "Give a chapter to export, or --from FILE"),
    ],
)
def test_the_command_says_what_is_wrong_with_its_arguments(
    arguments: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "otlp", *arguments]) == 2
    assert said in capsys.readouterr().err


def test_an_endpoint_that_wants_a_key_gets_it_from_the_environment_as_opentelemetry_says(
    receiver: tuple[str, type[Receiver]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Langfuse's OTLP endpoint takes Basic auth; OTEL_EXPORTER_OTLP_HEADERS is where an exporter finds it.
    url, handler = receiver
    secret = "cGstbGYtMTIzOnNrLWxmLTQ1Ng=="
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Basic {secret}")
    assert main(["export", "otlp", CHAPTER, "--at", "now", "--endpoint", url]) == 0
    assert handler.authorizations == [f"Basic {secret}"]
    assert secret not in capsys.readouterr().out


def test_the_exports_version_is_in_every_chapters_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A new export (its code, its packages) is a new key: a warm cache never publishes the old file.
    # (Its code is in the key as every module the pages are drawn with: tests/test_fingerprints.py.)
    # Installed while a process runs (`mkdocs serve`), it is a new key, and a new mock run, in that process.
    from primer.book._cache import TraceCache, renderer_version

    cache = TraceCache(tmp_path / "cache")
    before, ran = renderer_version(), cache.mock_name("code")
    monkeypatch.syspath_prepend(str(tmp_path))
    cache.reset()  # as a build begins
    assert (renderer_version(), cache.mock_name("code")) == (before, ran)  # a folder of no distribution
    (tmp_path / "opentelemetry_sdk-99.0.dist-info").mkdir()
    cache.reset()
    assert renderer_version() != before
    assert cache.mock_name("code") != ran
    monkeypatch.undo()
    cache.reset()
    assert (renderer_version(), cache.mock_name("code")) == (before, ran)


def test_what_a_viewer_lists_reaches_a_loopback_receiver_as_protobuf(
    runs: dict[str, ChapterRun], receiver: tuple[str, type[Receiver]]
) -> None:
    # What benchmarks/phoenix.py checks in Phoenix itself, checked here on the wire: the trace list's
    # Input and Output (the root spans' input.value and output.value), within the last 7 days, and
    # the error spans, each with its message.
    url, handler = receiver
    before = datetime.now(UTC)
    assert main(["export", "otlp", CHAPTER, "--mode", "live", "--at", "now", "--endpoint", url]) == 0
    spans = received_spans(handler)
    run = runs["live"]
    listed = [
        (span.name, attributes(span)["input.value"], attributes(span)["output.value"])
        for span in spans
        if not span.parent_span_id
    ]
    assert listed == [
        (f"invoke_agent {s.name}", s.transcript[1].content, s.transcript[-1].content) for s in run.scenarios
    ]
    assert all(s.transcript[1].role == "human" for s in run.scenarios)
    week = int((before - timedelta(days=7)).timestamp()) * 10**9
    assert all(span.start_time_unix_nano >= week for span in spans), "in a viewer's default window"
    errors = [span for span in spans if span.status.code == ERROR]
    assert len(errors) == 6
    assert all(span.status.message for span in errors)
    assert {attributes(span)["openinference.span.kind"] for span in errors} == {"TOOL", "CHAIN"}
