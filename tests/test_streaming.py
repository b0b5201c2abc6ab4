"""Streaming: chunks assembled into the reply, every event recorded with its arrival time, shown on the page.

The live path runs the real ``openai`` SDK against the loopback replay provider, which
streams any answer as server-sent events and breaks streams on cue; the mock path runs on
the virtual clock and must never really sleep; the page is rendered by a real Markdown
instance with the book's extension.
"""

from __future__ import annotations

import base64
import gzip
import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import markdown
import pytest

from primer.book._cache import CorruptTrace
from primer.book._render import render_traces
from primer.book._render_views import stream_view
from primer.book._source import ChapterTraces, LiveStatus
from primer.book.markdown import TraceExtension
from primer.chapters import scenarios_of
from primer.clock import VirtualClock
from primer.errors import ChapterError
from primer.models.live import LiveModel
from primer.models.mock import MockModel, Pacing, ask, call, say
from primer.redact import SCRUBBED, Redactor
from primer.replay import replay_settings, verify_chapter
from primer.runner import live_environment, run_chapter, run_scenario
from primer.scenario import Scenario
from primer.settings import Settings
from primer.shop import shelf_price_of
from primer.streaming import Assembler, EventParser, InvalidChunk, scrub_fragments, sse_text
from primer.trace import (
    SCHEMA_VERSION,
    ChapterRun,
    Ending,
    Message,
    ModelCall,
    ScenarioRun,
    Stream,
    StreamEvent,
    Turn,
)
from primer.trace_file import parse
from primer.wire import RecordingClient
from tests.servers import live_settings
from tests.servers.provider import ReplayProvider, completion_chunks, scenario_file
from tests.servers.service import LocalHttpbin
from tests.test_render_data import LATER, Node
from tests.test_render_data import parse as parse_html

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "sk-stream-5f3e9a71c2"
SERVICE_KEY = "svc-stream-8d41b6e0"
CONTEXT = [Message(role="system", content="Be brief."), Message(role="human", content="What do bread and milk cost?")]
TWO_CALLS = ReplayProvider.completion(
    content="Looking both up.",
    reasoning_content="Two prices, two lookups.",
    tool_calls=[("price_of", {"item": "bread"}), ("price_of", {"item": "milk"})],
    usage={"prompt_tokens": 41, "completion_tokens": 23, "completion_tokens_details": {"reasoning_tokens": 6}},
)
CH11 = {scenario.name: scenario for scenario in scenarios_of("ch11_streaming")}


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def live_model(provider: ReplayProvider, *, timeout: float = 60.0) -> LiveModel:
    """The live model against the provider, both keys known to its redactor (a model call uses no service)."""
    settings = Settings(
        api_key=API_KEY,
        base_url=provider.base_url,
        model="deepseek-flash",
        service_key=SERVICE_KEY,
        model_timeout=timeout,
    )
    return LiveModel.from_settings(settings, clock=VirtualClock())


@pytest.fixture
def model(replay_provider: ReplayProvider) -> Iterator[LiveModel]:
    model = live_model(replay_provider)
    yield model
    model.close()


# -- assembling deltas ------------------------------------------------------------------------


def test_text_and_reasoning_are_joined_and_usage_comes_from_the_last_chunk() -> None:
    assembler = Assembler()
    for piece in [
        chunk({"role": "assistant", "content": "", "reasoning_content": "Mil"}),
        chunk({"reasoning_content": "k first."}),
        chunk({"content": "Milk is"}),
        chunk({"content": " 1.20."}),
        chunk({}, "stop"),
        {"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}},
    ]:
        assembler.add(piece)
    assert assembler.completion() == {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Milk is 1.20.", "reasoning_content": "Milk first."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
    }


def test_interleaved_tool_calls_are_assembled_by_index_with_their_arguments_across_fragments() -> None:
    assembler = Assembler()
    pieces = [
        chunk({"tool_calls": [{"index": 1, "id": "c1", "type": "function", "function": {"name": "price_of"}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "c0", "type": "function", "function": {"name": "place_order"}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": '{"it'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"item": "mi'}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": 'em": "bread"}'}}]}),
        # Two pieces in one chunk, one of each call.
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "function": {"arguments": 'lk", "quan'}},
                    {"index": 0, "function": {"arguments": 'tity": 2}'}},
                ]
            }
        ),
        chunk({}, "tool_calls"),
    ]
    for piece in pieces:
        assembler.add(piece)
    message = assembler.completion()["choices"][0]["message"]
    assert message["content"] is None
    assert [(c["index"], c["id"], c["function"]["name"]) for c in message["tool_calls"]] == [
        (0, "c0", "place_order"),
        (1, "c1", "price_of"),
    ]
    assert [json.loads(c["function"]["arguments"]) for c in message["tool_calls"]] == [
        {"item": "milk", "quantity": 2},
        {"item": "bread"},
    ]


def test_pieces_without_an_index_follow_the_call_their_id_started() -> None:
    assembler = Assembler()
    for piece in [
        chunk({"tool_calls": [{"id": "a", "function": {"name": "price_of", "arguments": '{"item":'}}]}),
        chunk({"tool_calls": [{"function": {"arguments": ' "milk"}'}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "price_of", "arguments": "{}"}}]}),
    ]:
        assembler.add(piece)
    calls = assembler.completion()["choices"][0]["message"]["tool_calls"]
    assert [(c["id"], c["function"]["arguments"]) for c in calls] == [("a", '{"item": "milk"}'), ("b", "{}")]


@pytest.mark.parametrize(
    ("piece", "says"),
    [
        ([1, 2], "is not a JSON object"),
        ({"choices": {"index": 0}}, "choices that are not a list"),
        ({"choices": [{"delta": "text"}]}, "a delta that is not an object"),
        ({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]}, "function is not an object"),
    ],
)
def test_a_chunk_the_library_cannot_read_says_what_is_wrong_with_it(piece: Any, says: str) -> None:
    with pytest.raises(InvalidChunk, match=says):
        Assembler().add(piece)


def test_the_event_parser_reads_sse_split_anywhere_with_any_line_ending() -> None:
    wire = b'data: {"a": 1}\r\n\r\n: keep-alive\n\nevent: note\ndata: two\ndata: lines\r\rdata: [DONE]\n\n'
    whole = EventParser().feed(wire)
    for size in (1, 2, 3, 7):
        parser = EventParser()
        pieces = [parser.feed(wire[start : start + size]) for start in range(0, len(wire), size)]
        assert [event for found in pieces for event in found] == whole, size
    assert [(e.event, e.data) for e in whole] == [(None, '{"a": 1}'), ("note", "two\nlines"), (None, "[DONE]")]
    cut = EventParser()
    assert cut.feed(b'data: {"half') == []
    assert cut.pending


# -- the live path, through the SDK and the streaming replay provider ------------------------------


def test_the_provider_streams_calls_in_turn_when_asked_and_usage_only_when_asked() -> None:
    chunks = completion_chunks(TWO_CALLS, fragment=5, interleave=True, include_usage=True)
    indexes = [
        c["choices"][0]["delta"]["tool_calls"][0]["index"]
        for c in chunks
        if c["choices"] and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert indexes[:4] == [0, 1, 0, 1]
    assert chunks[-1] == {
        **{k: chunks[0][k] for k in ("id", "object", "created", "model")},
        "choices": [],
        "usage": TWO_CALLS["usage"],
    }
    in_order = completion_chunks(TWO_CALLS, fragment=5)
    assert "usage" not in in_order[-1]
    ordered = [
        c["choices"][0]["delta"]["tool_calls"][0]["index"] for c in in_order if "tool_calls" in c["choices"][0]["delta"]
    ]
    assert ordered == sorted(ordered)
    assert len(chunks) == len(in_order) + 1


def test_a_streamed_call_gives_the_same_model_call_as_a_whole_one(
    replay_provider: ReplayProvider, model: LiveModel
) -> None:
    recorded = json.loads(scenario_file("ch09_who_retries", "service_is_busy").read_text())["exchanges"][0]["response"]
    replay_provider.stream_pacing(fragment=3, interleave=True)
    replay_provider.reply(recorded, times=2)
    whole = model.complete(CONTEXT, [shelf_price_of], {})
    streamed = model.complete(CONTEXT, [shelf_price_of], {"stream": True})

    assert streamed.error is None
    assert streamed.reply == whole.reply
    assert streamed.finish_reason == whole.finish_reason
    assert streamed.usage == whole.usage
    assert streamed.usage is not None
    assert streamed.usage.cached_tokens is not None  # the details came through the last chunk
    assert whole.streamed is None
    sent = streamed.exchanges[0].request.json_body
    assert (sent["stream"], sent["stream_options"]) == (True, {"include_usage": True})
    assert whole.exchanges[0].request.json_body["stream"] is False
    assert "stream_options" not in whole.exchanges[0].request.json_body
    stream = streamed.streamed
    assert stream is not None
    assert streamed.exchanges[0].response is not None
    assert streamed.exchanges[0].response.json_body is None  # the body is the events
    chunks = completion_chunks(recorded, fragment=3, interleave=True, include_usage=True)
    assert [e.data for e in stream.events[:-1]] == chunks
    assert stream.events[-1].done
    assert stream.events[-2].data["usage"] == recorded["usage"]


def test_each_event_is_timed_as_it_arrives(replay_provider: ReplayProvider, model: LiveModel) -> None:
    replay_provider.stream_pacing(first=0.05, every=0.02, fragment=4)
    replay_provider.reply(TWO_CALLS)
    result = model.complete(CONTEXT, [shelf_price_of], {"stream": True})
    stream = result.streamed
    assert stream is not None
    assert stream.first_byte_ms is not None
    times = [event.at_ms for event in stream.events]
    assert times == sorted(times)
    # On the recorder's clock, from the request's start, event N came no sooner than the server's
    # waits before it (`first`, then `every` each): a loaded machine only makes events later, and
    # may bring several in one read, so gaps between them are not measured here (that each event
    # is stamped as it arrives, on a clock the test drives: the test after this one).
    assert all(at >= 0.9 * (50 + 20 * number) for number, at in enumerate(times))
    assert stream.first_byte_ms < stream.events[0].at_ms
    assert stream.first_token_ms == stream.events[1].at_ms  # the role chunk brings no token
    assert stream.last_token_ms is not None
    assert stream.last_token_ms <= times[-1]
    exchange = result.exchanges[0]
    assert exchange.timing.outside_ms is not None
    assert exchange.timing.outside_ms >= times[-1]  # the wire's time ends with the stream


def test_the_recorder_passes_each_chunk_on_before_the_next_one_exists() -> None:
    produced: list[int] = []
    clock = VirtualClock()
    events = [json.dumps(chunk({"content": word})) for word in ("Milk", " is", " 1.20.")] + ["[DONE]"]

    class Slow(httpx2.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            for number, data in enumerate(events):
                clock.sleep(0.01)
                produced.append(number)
                yield f"data: {data}\n\n".encode()

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Slow())

    client = RecordingClient(clock=clock, transport=httpx2.MockTransport(answer))
    started = time.perf_counter()
    with client.stream("POST", "https://provider.test/v1/chat/completions", json={"stream": True}) as response:
        received = response.iter_bytes()
        assert next(received).startswith(b"data:")
        assert produced == [0]  # the caller has event 1 before event 2 is even made
        rest = b"".join(received)
    assert rest.count(b"data:") == 3
    [wired] = client.recorder.take()
    assert wired.exchange.response is not None
    stream = wired.exchange.response.stream
    assert stream is not None
    # Each event is timed as it arrives: 10 ms of simulated wait apiece, plus the real time the
    # test took, which a loaded machine stretches (it read 10/40/70/90 once): bounded by the wall.
    wall_ms = (time.perf_counter() - started) * 1000
    at = [e.at_ms for e in stream.events]
    assert all(later - earlier >= 9.999 for earlier, later in zip([0.0, *at], at, strict=False))
    assert at[-1] <= 40 + wall_ms
    client.close()


def test_a_gzipped_stream_is_recorded_event_by_event() -> None:
    body = gzip.compress(
        b"".join(
            f"data: {json.dumps(piece)}\n\n".encode()
            for piece in [chunk({"role": "assistant", "content": "Milk is 1.20."}), chunk({}, "stop")]
        )
        + b"data: [DONE]\n\n"
    )

    def answer(request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
        return httpx2.Response(200, headers=headers, content=body)

    clock = VirtualClock()
    client = RecordingClient(clock=clock, transport=httpx2.MockTransport(answer))
    model = LiveModel(base_url="https://provider.test/v1", api_key=API_KEY, model="m", clock=clock, http_client=client)
    result = model.complete(CONTEXT, [], {"stream": True})
    model.close()
    assert result.error is None
    assert result.reply is not None
    assert result.reply.content == "Milk is 1.20."
    assert result.streamed is not None
    assert len(result.streamed.events) == 3


#: What each break is called, and how many events the trace keeps of a stream that had
#: eight (role, four pieces of text, finish reason, usage, [DONE]).
BREAKS = {
    "no_done": ("ended the stream after 7 events without [DONE], so the reply may be cut short", 7),
    "malformed": ("sent an event that is not JSON (event 3 of 3)", 3),
    "after_done": ("sent an event after [DONE] (event 9 of 9)", 9),
    "drop": ("broke off the stream after 2 events", 2),
}


@pytest.mark.parametrize("fault", list(BREAKS))
def test_a_broken_stream_ends_the_call_naming_what_broke_and_keeps_what_arrived(
    replay_provider: ReplayProvider, model: LiveModel, fault: str
) -> None:
    replay_provider.stream_pacing(fragment=4)
    replay_provider.break_stream(fault, after=2)  # type: ignore[arg-type]
    replay_provider.reply(ReplayProvider.completion(content="Bread is 1.45."), times=2)
    result = model.complete(CONTEXT, [], {"stream": True})

    said, kept = BREAKS[fault]
    assert result.reply is None
    assert result.error is not None
    assert result.error.message.startswith(f"The provider at {replay_provider.base_url} {said}: ")
    assert "what had arrived is kept in the trace" in result.error.message
    [exchange] = result.exchanges  # part of the reply came: not asked again
    assert exchange.failure is not None
    assert exchange.failure.message == f"['{replay_provider.base_url}'] {said}"
    assert (exchange.failure.retryable, exchange.failure.caller_can_fix) == (False, False)
    assert exchange.response is not None
    assert exchange.response.status == 200
    stream = exchange.response.stream
    assert stream is not None
    assert len(stream.events) == kept
    [note] = [n for n in result.notes if n.label == "received before the stream failed"]
    assert note.data["content"].startswith("Brea")
    assert len(replay_provider.requests) == 1


def test_a_broken_stream_ends_the_run_as_a_provider_failure(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    replay_provider.break_stream("drop", after=3)
    replay_provider.reply(TWO_CALLS)
    scenario = CH11["two_calls_in_pieces"]
    settings = live_settings(replay_provider, httpbin, api_key=API_KEY, service_key=SERVICE_KEY)
    run = run_scenario(scenario, "live", settings, environment=live_environment(scenario, settings))
    assert run.ending.reason == "provider_failure"
    assert run.ending.detail is not None
    assert "broke off the stream after 3 events" in run.ending.detail
    assert [m.role for m in run.transcript] == ["system", "human"]


def test_a_stream_that_drops_before_any_event_is_asked_again(replay_provider: ReplayProvider, model: LiveModel) -> None:
    replay_provider.break_stream("drop", after=0)
    replay_provider.reply(ReplayProvider.completion(content="Bread is 1.45."), times=2)
    result = model.complete(CONTEXT, [], {"stream": True})
    assert result.error is None
    assert result.reply is not None
    assert result.reply.content == "Bread is 1.45."
    first, second = result.exchanges
    assert first.failure is not None
    assert first.failure.retryable
    assert first.failure.message == f"['{replay_provider.base_url}'] broke off the answer"
    assert second.failure is None


def test_an_error_sent_in_the_stream_is_quoted(replay_provider: ReplayProvider, model: LiveModel) -> None:
    replay_provider.reply({"error": {"message": "The model overloaded mid-answer.", "type": "server_error"}})
    result = model.complete(CONTEXT, [], {"stream": True})
    assert result.error is not None
    assert "sent an error in the stream (event 1): " in result.error.message
    assert result.error.message.endswith("It said: ['The model overloaded mid-answer.'].")
    assert len(result.exchanges) == 1


def test_a_stream_that_stalls_is_stopped_at_the_timeout(replay_provider: ReplayProvider) -> None:
    model = live_model(replay_provider, timeout=0.3)
    replay_provider.stream_pacing(every=2.0)
    replay_provider.reply(ReplayProvider.completion(content="Bread is 1.45."))
    try:
        result = model.complete(CONTEXT, [], {"stream": True})
    finally:
        model.close()
    assert result.error is not None
    assert "stopped sending events for 0.3s after 1 event:" in result.error.message
    assert len(result.exchanges) == 1


def test_a_provider_that_answers_whole_when_asked_to_stream_is_read_whole() -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=ReplayProvider.completion(content="Whole."))

    clock = VirtualClock()
    client = RecordingClient(clock=clock, transport=httpx2.MockTransport(answer))
    whole = LiveModel(base_url="https://provider.test/v1", api_key=API_KEY, model="m", clock=clock, http_client=client)
    result = whole.complete(CONTEXT, [], {"stream": True})
    whole.close()
    assert result.reply is not None
    assert result.reply.content == "Whole."
    assert result.streamed is None


# -- secrets inside events ---------------------------------------------------------------------


def test_a_secret_split_across_events_is_scrubbed_from_every_piece(
    replay_provider: ReplayProvider, model: LiveModel
) -> None:
    basic = base64.b64encode(f"user:{API_KEY}".encode()).decode()
    content = f"Your key is {API_KEY}, as Basic {basic}; the service's is {SERVICE_KEY}."
    replay_provider.stream_pacing(fragment=3)
    replay_provider.reply(
        ReplayProvider.completion(content=content, tool_calls=[("price_of", {"item": "milk", "note": SERVICE_KEY})])
    )
    result = model.complete(CONTEXT, [shelf_price_of], {"stream": True})
    dumped = result.model_dump_json()
    for secret in (API_KEY, SERVICE_KEY, API_KEY[3:12], SERVICE_KEY[4:14], basic[8:20]):
        assert secret not in dumped, secret
    assert result.reply is not None
    # Scrubbed as the same text is when it comes whole.
    assert result.reply.content == Redactor([API_KEY, SERVICE_KEY]).text(content)
    assert result.reply.content.startswith(f"Your key is {SCRUBBED}, as Basic ")
    stream = result.streamed
    assert stream is not None
    pieces = "".join(
        e.data["choices"][0]["delta"].get("content") or ""
        for e in stream.events
        if isinstance(e.data, dict) and e.data.get("choices")
    )
    assert pieces == result.reply.content  # the pieces still join up into what the reply says
    assert API_KEY not in sse_text(stream)
    assert result.reply.tool_calls[0].arguments == {"item": "milk", "note": SCRUBBED}


def test_a_secret_inside_one_event_and_a_credential_field_are_not_recorded() -> None:
    redactor = Redactor([API_KEY])
    events = [
        StreamEvent(at_ms=1, data=redactor.json(chunk({"content": f"key {API_KEY} here"}, api_key="x-123"))),
        StreamEvent(at_ms=2, data=chunk({"content": "sk-str"})),
        StreamEvent(at_ms=3, data=chunk({"content": "eam-5f3e"})),
        StreamEvent(at_ms=4, data=chunk({"content": "9a71c2 done"})),
    ]
    scrub_fragments(events, redactor)
    texts = [e.data["choices"][0]["delta"]["content"] for e in events]
    assert texts[0] == f"key {SCRUBBED} here"
    assert "".join(texts) == f"key {SCRUBBED} here{SCRUBBED} done"
    assert not any(part in "".join(texts[1:]) for part in ("sk-str", "5f3e", "9a71c2"))
    assert events[0].data["api_key"] == "not recorded"


# -- the mock stream ---------------------------------------------------------------------------


def test_the_mock_stream_is_the_same_every_run_and_never_sleeps(sleeps: list[float]) -> None:
    started = time.perf_counter()
    first, second = run_chapter("ch11_streaming"), run_chapter("ch11_streaming")
    assert time.perf_counter() - started < 2.0
    assert sleeps == []

    def streams(run: ChapterRun) -> list[Any]:
        return [t.model_call.stream.model_dump() for s in run.scenarios for t in s.turns if t.model_call.stream]

    assert streams(first) == streams(second)
    assert len(streams(first)) == 4
    words = first.scenario("words_as_they_come")
    stream = words.turns[0].model_call.streamed
    assert stream is not None
    assert [e.at_ms for e in stream.events[:3]] == [400.0, 450.0, 500.0]
    assert (stream.first_token_ms, stream.last_token_ms) == (400.0, 1100.0)
    assert words.simulated_seconds == pytest.approx(1.15)
    assert words.turns[0].model_call.timing.total_ms >= 1150.0


def test_the_mock_streams_the_reply_it_would_have_sent_whole() -> None:
    script = [
        ask(call("price_of", item="bread"), call("price_of", item="milk"), text="Two lookups."),
        say("Bread is 1.45 and milk 1.20."),
    ]
    whole_clock, streamed_clock = VirtualClock(), VirtualClock()
    whole = MockModel(script, whole_clock)
    pacing = Pacing(first=0.2, every=(0.01, 0.03), words=2, characters=4)
    streamed = MockModel(script, streamed_clock, pacing=pacing)
    for _ in script:
        a = whole.complete(CONTEXT, [shelf_price_of], {})
        b = streamed.complete(CONTEXT, [shelf_price_of], {"stream": True})
        assert b.reply == a.reply
        assert b.stream is not None
        assembler = Assembler()
        for event in b.stream.events:
            if event.data is not None:
                assembler.add(event.data)
        assembled = assembler.completion()["choices"][0]
        assert assembled["finish_reason"] == b.finish_reason
        assert b.reply is not None
        assert assembled["message"]["content"] == b.reply.content
        assert [c["function"]["name"] for c in assembled["message"].get("tool_calls", [])] == [
            c.name for c in b.reply.tool_calls
        ]
        offsets = [e.at_ms for e in b.stream.events]
        assert offsets[0] == 200.0
        assert [round(y - x, 3) for x, y in itertools.pairwise(offsets[:-1])][:3] == [10.0, 30.0, 10.0]
    assert streamed_clock.simulated > whole_clock.simulated == 0.0


def test_pacing_that_cannot_pace_says_so() -> None:
    with pytest.raises(ValueError, match="cannot pace a stream"):
        Pacing(every=())
    with pytest.raises(ValueError, match="cannot pace a stream"):
        Pacing(first=-1)


def test_a_stream_setting_that_is_not_true_or_false_names_the_scenario() -> None:
    with pytest.raises(ChapterError, match=r"Scenario 'chatty' sets 'stream' to 'yes'"):
        Scenario(name="chatty", prompt="Hi", tools=[], mock=[say("Hi.")], settings={"stream": "yes"})


# -- the chapter -------------------------------------------------------------------------------


def test_the_chapter_page_quotes_what_its_runs_show() -> None:
    page = " ".join((ROOT / "docs" / "ch11_streaming.md").read_text(encoding="utf-8").split())
    run = run_chapter("ch11_streaming")
    words = run.scenario("words_as_they_come").turns[0].model_call
    view = stream_view(words)
    assert view is not None
    assert "`17 events · first token 400.0ms · last token 1100.0ms`" in page
    assert view.line.startswith("17 events · first token 400.0ms · last token 1100.0ms")
    # The terminal shows the same line under the streamed call's own line.
    from primer.cli import summary_lines
    from primer.summary import model_line

    lines = summary_lines(run)
    at = lines.index("    " + model_line(words))
    assert lines[at + 1] == f"      stream: {view.line}"
    assert "(1.15s simulated)" in page
    calls = run.scenario("two_calls_in_pieces").turns[0].model_call
    assert calls.stream is not None
    assert f"*events ({len(calls.stream.events)})*" in page
    pieces = [e.data["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for e in calls.stream.events[1:5]]
    assert pieces == ['{"ite', 'm": "', "bread", '"}']
    assert '`{"ite`, `m": "`, `bread` and `"}`' in page
    cut_stream = run.scenario("cut_mid_sentence").turns[0].model_call
    assert cut_stream.reply is not None
    assert cut_stream.reply.content is not None
    assert cut_stream.reply.content.endswith("Butter comes in")
    assert "Butter comes in" in page


# -- the live chapter through the provider, replayed -----------------------------------------


@pytest.fixture
def live_ch11(replay_provider: ReplayProvider, httpbin: LocalHttpbin) -> ChapterRun:
    """Chapter 11 run live against the streaming provider: interleaved calls, a cut answer."""
    replay_provider.stream_pacing(every=0.001, fragment=5, interleave=True)
    replies = [
        ReplayProvider.completion(content="Toast with butter, and a glass of milk."),
        TWO_CALLS,
        ReplayProvider.completion(content="Bread is 1.45 and milk 1.20."),
        ReplayProvider.completion(content="Bread is baked fresh every", finish_reason="length"),
    ]
    for body in replies:
        replay_provider.reply(body)
    settings = live_settings(replay_provider, httpbin, api_key=API_KEY, service_key=SERVICE_KEY)
    return run_chapter("ch11_streaming", "live", settings=settings)


def test_the_chapter_runs_live_through_the_sdk_and_its_recording_replays(live_ch11: ChapterRun) -> None:
    assert [s.ending.reason for s in live_ch11.scenarios] == ["answer_received", "no_tool_calls", "tokens_exhausted"]
    calls = live_ch11.scenario("two_calls_in_pieces")
    reply = calls.turns[0].model_call.reply
    assert reply is not None
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("price_of", {"item": "bread"}),
        ("price_of", {"item": "milk"}),
    ]
    assert [t.result for t in calls.turns[0].tools] == ["1.45", "1.20"]
    assert calls.turns[0].model_call.usage is not None
    assert calls.turns[0].model_call.usage.reasoning_tokens == 6
    # The recording, stored and read back, verifies by replay: the streams are sent again as SSE.
    stored = ChapterRun.model_validate_json(live_ch11.model_dump_json())
    check = verify_chapter(stored, scenarios_of("ch11_streaming"))
    assert check.verified, [c.line() for c in check.scenarios]
    assert replay_settings(stored).model == "deepseek-flash"


# -- the page ----------------------------------------------------------------------------------


class _Source:
    def __init__(self, live: ChapterRun | None) -> None:
        self.live = live

    def traces(self, chapter: str) -> ChapterTraces:
        state = LiveStatus(state="current") if self.live else LiveStatus(state="missing", reason="no key yet")
        return ChapterTraces(chapter=chapter, mock=run_chapter(chapter), live=self.live, live_status=state)


def _bodies_hold_no_div(tree: Node) -> None:
    for body in tree.find("div", class_="tr-body"):
        assert not body.find("div"), "a payload block must hold no div (Material's search)"


def test_the_page_shows_each_streamed_call_with_its_events_folded(live_ch11: ChapterRun) -> None:
    html = markdown.Markdown(extensions=[TraceExtension(source=_Source(live_ch11))]).convert("::: trace ch11_streaming")
    tree = parse_html(html)
    lines = [p.text for p in tree.find("p", class_="tr-stream")]
    assert len(lines) == 8  # four streamed calls, mock and live
    assert "stream 17 events · first token 400.0ms · last token 1100.0ms · 20.0 pieces/s · ended with [DONE]" in lines
    live_lines = [line for line in lines if "first byte" in line]
    assert len(live_lines) == 4
    assert all("tokens/s" in line for line in live_lines)
    mock_words = "ch11_streaming-words_as_they_come-mock-turn-1-model"
    timeline = tree.by_id(f"{mock_words}-stream-events")
    assert timeline.tag == "pre"
    assert timeline.text.count("\n") == 16  # one line per event
    assert "400.0ms" in timeline.text.splitlines()[0]
    assert timeline.text.splitlines()[-1].endswith("[DONE]")
    sse = tree.by_id(f"{mock_words}-stream-sse")
    assert sse.text.count("data: ") == 17
    assert sse.text.endswith("data: [DONE]\n\n")
    notes = [p.text for p in tree.find("p", class_="tr-note") if "server-sent event" in p.text]
    assert len(notes) == 4  # each live wire response points at its events instead of "no body"
    ids = [node.attrs["id"] for node in tree.elements() if node.attrs.get("id")]
    assert len(ids) == len(set(ids))
    _bodies_hold_no_div(tree)


def test_the_pages_live_prose_shows_only_with_a_live_run(live_ch11: ChapterRun) -> None:
    page = (ROOT / "docs" / "ch11_streaming.md").read_text(encoding="utf-8")
    block = page[page.index("::: live ch11_streaming") : page.index("::: end live") + len("::: end live")]
    text = f"::: trace ch11_streaming words_as_they_come\n\n{block}\n"
    for live, shown in ((live_ch11, True), (None, False)):
        html = markdown.Markdown(extensions=[TraceExtension(source=_Source(live))]).convert(text)
        assert ("In the live run, open a model call" in html) is shown
    # What it says is so: the live request asks for usage in the stream.
    sent = live_ch11.scenario("words_as_they_come").turns[0].model_call.exchanges[0].request.json_body
    assert '`"stream_options": {"include_usage": true}`' in page
    assert sent["stream_options"] == {"include_usage": True}


def _streamed_run(events: int, content: str = "word ") -> ChapterRun:
    stream = Stream(
        events=[StreamEvent(at_ms=10.0 * n, data=chunk({"content": content})) for n in range(events)]
        + [StreamEvent(at_ms=10.0 * events, text="[DONE]")]
    )
    model_call = ModelCall(
        kind="mock",
        context=CONTEXT,
        reply=Message(role="ai", content=content * events),
        finish_reason="stop",
        settings={"stream": True},
        stream=stream,
    )
    run = ScenarioRun(
        name="long_stream",
        mode="mock",
        turns=[Turn(number=1, model_call=model_call)],
        transcript=[*CONTEXT, Message(role="ai", content=content * events)],
        ending=Ending(reason="answer_received", finish_reason="stop"),
    )
    return ChapterRun(chapter="ch_stream", mode="mock", scenarios=[run])


def test_streamed_text_is_escaped_on_the_page() -> None:
    hostile = "<script>alert(1)</script>"
    traces = ChapterTraces(
        chapter="ch_stream",
        mock=_streamed_run(3, hostile),
        live=None,
        live_status=LiveStatus(state="missing", reason="none"),
    )
    tree = parse_html(render_traces(traces))
    assert [n.source for n in tree.find("script")] == [LATER]  # the renderer's own only
    sse = tree.by_id("ch_stream-long_stream-mock-turn-1-model-stream-sse")
    assert hostile in sse.text  # shown, as text


def test_page_weight_grows_linearly_with_the_events() -> None:
    def size(events: int) -> int:
        traces = ChapterTraces(
            chapter="ch_stream",
            mock=_streamed_run(events),
            live=None,
            live_status=LiveStatus(state="missing", reason="none"),
        )
        return len(render_traces(traces))

    base, one, two = size(1), size(1001), size(2001)
    per_event = (one - base) / 1000
    assert (two - one) / 1000 == pytest.approx(per_event, rel=0.05)
    # The reply itself grows too (5 characters an event, twice: reply and transcript), so the
    # events' own share is what is left: a timeline line and an SSE line, a few hundred bytes.
    assert per_event < 400


# -- the schema --------------------------------------------------------------------------------


def test_a_version_1_trace_is_still_read_and_is_read_as_the_current_version(tmp_path: Path) -> None:
    data = json.loads(run_chapter("ch05_loop_endings").model_dump_json())

    def without_streams(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_streams(v) for k, v in value.items() if k != "stream"}
        if isinstance(value, list):
            return [without_streams(v) for v in value]
        return value

    old = {**without_streams(data), "schema_version": 1}
    run = parse(json.dumps(old).encode(), tmp_path / "ch05_loop_endings.mock.json")
    assert run.schema_version == SCHEMA_VERSION == 3
    assert run.turns == 4
    with pytest.raises(
        CorruptTrace, match="its schema version is 4, and this version of primer reads versions 1, 2 and 3"
    ):
        parse(json.dumps({**old, "schema_version": 4}).encode(), tmp_path / "x.mock.json")


def test_a_streamed_trace_survives_a_json_round_trip(live_ch11: ChapterRun) -> None:
    mock = run_chapter("ch11_streaming")
    for run in (mock, live_ch11):
        again = ChapterRun.model_validate_json(run.model_dump_json())
        assert again == run
        assert [t.model_call.streamed for s in again.scenarios for t in s.turns] == [
            t.model_call.streamed for s in run.scenarios for t in s.turns
        ]
