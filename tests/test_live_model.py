"""The live model's parts: messages and tools on the wire, reading a reply, the recorded wire.

These use the real SDK over an ``httpx2.MockTransport`` (no socket): the transport is
injected into the ``RecordingClient`` the model gives the SDK.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from primer.chapters import load_chapter
from primer.clock import VirtualClock
from primer.errors import ConfigError
from primer.models.base import SAMPLING_PARAMETERS
from primer.models.live import MODEL_RETRY_POLICY, LiveModel, wire_message, wire_tool
from primer.redact import NOT_RECORDED, SCRUBBED, Redactor
from primer.settings import Settings
from primer.trace import Message, ModelCall, ToolCall
from primer.wire import RecordingClient
from tests.servers.provider import ReplayProvider, scenario_file

KEY = "sk-model-0a9b8c"
BASE_URL = "https://provider.test/v1"
CH09 = load_chapter("ch09_who_retries")


def model_over(answer: Callable[[httpx2.Request], httpx2.Response], **options: Any) -> LiveModel:
    clock = VirtualClock()
    redactor = Redactor()
    client = RecordingClient(clock=clock, redactor=redactor, transport=httpx2.MockTransport(answer))
    return LiveModel(
        base_url=BASE_URL,
        api_key=KEY,
        model="deepseek-flash",
        clock=clock,
        redactor=redactor,
        http_client=client,
        **options,
    )


def json_answer(body: Any, *, gzipped: bool = False) -> Callable[[httpx2.Request], httpx2.Response]:
    def answer(request: httpx2.Request) -> httpx2.Response:
        content = json.dumps(body).encode()
        headers = {"content-type": "application/json", "x-request-id": "req-1"}
        if gzipped:
            content = gzip.compress(content)
            headers["content-encoding"] = "gzip"
        return httpx2.Response(200, headers=headers, content=content)

    return answer


CONTEXT = [Message(role="system", content="Be brief."), Message(role="human", content="How much is milk?")]


# -- messages and tools as the wire has them --------------------------------------------------


def test_each_role_goes_on_the_wire_as_the_api_names_it() -> None:
    calls = [ToolCall(id="c1", name="price_of", arguments={"item": "milk"})]
    assert wire_message(Message(role="system", content="S")) == {"content": "S", "role": "system"}
    assert wire_message(Message(role="human", content="H")) == {"content": "H", "role": "user"}
    assert wire_message(Message(role="ai", content="A")) == {"content": "A", "role": "assistant"}
    assert wire_message(Message(role="ai", content="", tool_calls=calls, reasoning="think")) == {
        "content": None,
        "role": "assistant",
        "tool_calls": [
            {"type": "function", "id": "c1", "function": {"name": "price_of", "arguments": '{"item": "milk"}'}}
        ],
        "reasoning_content": "think",
    }
    assert wire_message(Message(role="tool", content="1.20", tool_call_id="c1")) == {
        "content": "1.20",
        "role": "tool",
        "tool_call_id": "c1",
    }
    raw = [ToolCall(id="c2", name="price_of", raw_arguments="{oops")]
    sent = wire_message(Message(role="ai", content="Trying.", tool_calls=raw))
    assert sent["content"] == "Trying."
    assert sent["tool_calls"][0]["function"]["arguments"] == "{oops"


def test_tools_are_declared_exactly_as_the_seeds_declared_them() -> None:
    recorded = json.loads(scenario_file("ch09_who_retries", "service_is_busy").read_text())
    assert [wire_tool(t) for t in CH09.TOOLS] == recorded["exchanges"][0]["request"]["tools"]


# -- one call, over the injected transport ------------------------------------------------------


def test_a_reply_is_read_and_the_wire_recorded_decoded(request: pytest.FixtureRequest) -> None:
    body = ReplayProvider.completion(
        tool_calls=[("price_of", {"item": "milk"}), ("place_order", "")],
        reasoning_content="Look it up.",
        usage={
            "prompt_tokens": 40,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 32},
            "completion_tokens_details": {"reasoning_tokens": 3},
        },
    )
    seen: list[httpx2.Request] = []

    def answer(sent: httpx2.Request) -> httpx2.Response:
        seen.append(sent)
        return json_answer(body, gzipped=True)(sent)

    model = model_over(answer)
    request.addfinalizer(model.close)
    call: ModelCall = model.complete(CONTEXT, CH09.TOOLS, {"temperature": 0, "reasoning_effort": "low"})

    assert call.kind == "live"
    assert call.model == "deepseek-flash"
    assert call.error is None
    assert call.reply is not None
    assert call.reply.content is None
    assert call.reply.reasoning == "Look it up."
    assert [(c.name, c.arguments, c.raw_arguments) for c in call.reply.tool_calls] == [
        ("price_of", {"item": "milk"}, None),
        ("place_order", {}, None),  # an empty argument string is no arguments
    ]
    assert call.finish_reason == "tool_calls"
    assert call.usage is not None
    assert call.usage.model_dump() == {
        "input_tokens": 40,
        "output_tokens": 7,
        "cached_tokens": 32,
        "reasoning_tokens": 3,
    }
    [exchange] = call.exchanges
    assert exchange.attempt == 1
    assert exchange.request.url == f"{BASE_URL}/chat/completions"
    sent = json.loads(seen[0].content)
    assert exchange.request.json_body == sent
    assert sent["temperature"] == 0
    assert sent["reasoning_effort"] == "low"  # not a sampling parameter: passed through as it is
    assert sent["stream"] is False
    assert exchange.request.defaulted == [p for p in SAMPLING_PARAMETERS if p != "temperature"]
    assert ("authorization", NOT_RECORDED) in exchange.request.headers
    assert seen[0].headers["authorization"] == f"Bearer {KEY}"
    assert seen[0].headers["x-stainless-retry-count"] == "0"
    assert exchange.response is not None
    assert exchange.response.json_body == body  # gunzipped for the record
    assert call.timing.outside_ms == exchange.timing.outside_ms
    assert call.timing.total_ms >= exchange.timing.total_ms


@pytest.mark.parametrize(
    ("arguments", "parsed", "raw"),
    [
        ('{"item": "milk"}', {"item": "milk"}, None),
        ("[1, 2]", {}, "[1, 2]"),
        ("null", {}, "null"),
        ('{"item": ', {}, '{"item": '),
    ],
)
def test_tool_arguments_that_are_not_an_object_are_kept_raw(
    arguments: str, parsed: dict[str, Any], raw: str | None
) -> None:
    model = model_over(json_answer(ReplayProvider.completion(tool_calls=[("price_of", arguments)])))
    try:
        call = model.complete(CONTEXT, CH09.TOOLS, {})
    finally:
        model.close()
    assert call.reply is not None
    [tool_call] = call.reply.tool_calls
    assert (tool_call.arguments, tool_call.raw_arguments) == (parsed, raw)


def test_a_secret_the_model_repeats_is_scrubbed_from_the_reply() -> None:
    body = ReplayProvider.completion(f"The key is {KEY}.", reasoning_content=f"I saw {KEY}")
    model = model_over(json_answer(body))
    try:
        call = model.complete(CONTEXT, [], {})
    finally:
        model.close()
    assert call.reply is not None
    assert call.reply.content == f"The key is {SCRUBBED}."
    assert call.reply.reasoning == f"I saw {SCRUBBED}"
    assert KEY not in call.model_dump_json()
    assert "tools" not in (call.exchanges[0].request.json_body or {})  # no tools, none declared


def test_a_body_with_an_unreadable_tool_call_is_a_failure_not_a_crash() -> None:
    body = ReplayProvider.completion("x")
    body["choices"][0]["message"]["tool_calls"] = [{"id": "c", "type": "function", "function": {}}]
    model = model_over(json_answer(body))
    try:
        call = model.complete(CONTEXT, CH09.TOOLS, {})
    finally:
        model.close()
    assert call.reply is None
    assert call.error is not None
    assert call.error.message.startswith(
        f"The provider at {BASE_URL} answered 200 with tool calls that name no function"
    )
    assert len(call.exchanges) == 1  # not retried: the same answer would come again


# -- construction ----------------------------------------------------------------------


def test_from_settings_needs_a_key() -> None:
    with pytest.raises(ConfigError, match="PRIMER_API_KEY"):
        LiveModel.from_settings(Settings())


def test_from_settings_takes_the_endpoint_model_and_timeout() -> None:
    settings = Settings(api_key=KEY, base_url=BASE_URL, model="m-1", model_timeout=7)  # type: ignore[arg-type]
    model = LiveModel.from_settings(settings, clock=VirtualClock())
    try:
        assert (model.base_url, model.model) == (BASE_URL, "m-1")
        assert model.policy.timeout == 7
        assert model.policy.max_attempts == MODEL_RETRY_POLICY.max_attempts
        assert KEY in model.redactor.secrets
        assert settings.service_key.get_secret_value() in model.redactor.secrets
    finally:
        model.close()
