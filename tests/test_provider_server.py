"""The fake provider, driven by the real ``openai`` SDK over real HTTP on 127.0.0.1.

These tests pin two things: the recorded seed traffic replays faithfully through the SDK,
and each injected fault surfaces as the SDK exception the library under test will see.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import openai
import pytest

from tests.servers.provider import FIXTURE_DIR, ReplayProvider, closed_port, error_body, scenario_file

API_KEY = "test-key"
SCENARIOS = sorted(path.stem for path in FIXTURE_DIR.glob("*.json"))


@contextmanager
def sdk(base_url: str, **options: Any) -> Iterator[openai.OpenAI]:
    """A real SDK client that never retries unless a test asks, closed afterwards."""
    options.setdefault("max_retries", 0)
    with openai.OpenAI(base_url=base_url, api_key=API_KEY, **options) as client:
        yield client


def recorded(chapter: str, scenario: str) -> list[dict[str, Any]]:
    exchanges: list[dict[str, Any]] = json.loads(scenario_file(chapter, scenario).read_text())["exchanges"]
    return exchanges


def ask(client: openai.OpenAI, request: dict[str, Any]) -> Any:
    """Send a recorded request body exactly as recorded."""
    return client.chat.completions.create(**request)


# -- the fixtures themselves ----------------------------------------------------------


def test_fixtures_hold_every_live_model_call() -> None:
    counts = {name: len(json.loads((FIXTURE_DIR / f"{name}.json").read_text())["exchanges"]) for name in SCENARIOS}
    assert counts == {
        "ch05_loop_endings.tokens_exhausted": 1,
        "ch05_loop_endings.within_token_limit": 3,
        "ch09_who_retries.arguments_are_wrong": 3,
        "ch09_who_retries.order_may_have_landed": 2,
        "ch09_who_retries.service_is_busy": 2,
        "ch09_who_retries.service_says_no": 2,
    }
    for name in SCENARIOS:
        text = (FIXTURE_DIR / f"{name}.json").read_text()
        assert "primer-demo-key" not in text  # the httpbin echo of a secret stayed out
        document = json.loads(text)
        assert f"{document['chapter']}.{document['scenario']}" == name
        for exchange in document["exchanges"]:
            assert set(exchange) == {"request", "status", "headers", "response"}
            assert exchange["status"] == 200
            assert exchange["headers"]["content-type"] == "application/json"


# -- replay ---------------------------------------------------------------------------


def test_first_exchange_replays_reasoning_and_cached_tokens(replay_provider: ReplayProvider) -> None:
    exchanges = replay_provider.load("ch05_loop_endings.within_token_limit")
    with sdk(replay_provider.base_url) as client:
        reply = ask(client, exchanges[0]["request"])

    want = exchanges[0]["response"]
    message = reply.choices[0].message
    assert reply.id == want["id"]
    assert message.model_extra["reasoning_content"] == want["choices"][0]["message"]["reasoning_content"]
    assert message.tool_calls[0].function.name == "lowest_stock_item"
    assert reply.choices[0].finish_reason == "tool_calls"
    assert reply.usage is not None
    assert reply.usage.prompt_tokens_details is not None
    assert reply.usage.prompt_tokens_details.cached_tokens == want["usage"]["prompt_tokens_details"]["cached_tokens"]
    # What the SDK put on the wire is the recorded request body, byte for byte in meaning.
    assert replay_provider.requests[0].body == exchanges[0]["request"]
    assert replay_provider.requests[0].outcome == "replay ch05_loop_endings.within_token_limit#0"


def test_recorded_headers_are_replayed_without_transport_ones(replay_provider: ReplayProvider) -> None:
    exchanges = replay_provider.load("ch09_who_retries.service_is_busy")
    with sdk(replay_provider.base_url) as client:
        raw = client.chat.completions.with_raw_response.create(**exchanges[0]["request"])
    assert raw.headers["x-ds-trace-id"] == exchanges[0]["headers"]["x-ds-trace-id"]
    assert raw.headers["content-type"] == "application/json"
    assert "content-encoding" not in raw.headers  # the replayed body is plain, not gzip
    assert raw.parse().id == exchanges[0]["response"]["id"]


def test_parallel_tool_calls_of_arguments_are_wrong_turn_2(replay_provider: ReplayProvider) -> None:
    exchanges = replay_provider.load(scenario_file("ch09_who_retries", "arguments_are_wrong"))
    with sdk(replay_provider.base_url) as client:
        # Turn 2 asked first: matched by conversation and turn, not by arrival order.
        reply = ask(client, exchanges[1]["request"])

    message = reply.choices[0].message
    assert message.content == "The max per order is 12, so I'll split it into two orders (12 + 8 = 20)."
    assert [call.function.name for call in message.tool_calls] == ["place_order", "place_order"]
    assert [json.loads(call.function.arguments) for call in message.tool_calls] == [
        {"item": "milk", "quantity": 12},
        {"item": "milk", "quantity": 8},
    ]
    assert len({call.id for call in message.tool_calls}) == 2
    assert replay_provider.pending == 2


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_seed_scenario_replays_in_full(replay_provider: ReplayProvider, name: str) -> None:
    exchanges = replay_provider.load(name)
    with sdk(replay_provider.base_url) as client:
        for exchange in exchanges:
            reply = ask(client, exchange["request"])
            want = exchange["response"]
            assert reply.id == want["id"]
            assert reply.choices[0].finish_reason == want["choices"][0]["finish_reason"]
            assert reply.choices[0].message.content == want["choices"][0]["message"]["content"]
    assert replay_provider.pending == 0


def test_unmatched_conversation_falls_back_to_order(replay_provider: ReplayProvider) -> None:
    exchanges = replay_provider.load("ch09_who_retries.service_is_busy")
    with sdk(replay_provider.base_url) as client:
        reply = client.chat.completions.create(
            model="deepseek-flash", messages=[{"role": "user", "content": "a prompt nobody recorded"}]
        )
    assert reply.id == exchanges[0]["response"]["id"]
    assert replay_provider.requests[0].outcome.endswith("(by order)")


def test_nothing_queued_is_a_loud_500(replay_provider: ReplayProvider) -> None:
    with sdk(replay_provider.base_url) as client, pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert "no replay queued" in str(caught.value)


# -- what the server records ----------------------------------------------------------


def test_records_the_request_but_never_the_key(replay_provider: ReplayProvider) -> None:
    replay_provider.reply(ReplayProvider.completion(content="ok"))
    with sdk(replay_provider.base_url) as client:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"echo {API_KEY}"}])

    [seen] = replay_provider.requests
    assert (seen.method, seen.path, seen.has_api_key) == ("POST", "/v1/chat/completions", True)
    assert "authorization" not in seen.headers
    assert seen.headers["x-stainless-retry-count"] == "0"
    assert seen.body["messages"][0]["content"] == "echo [redacted]"
    assert API_KEY not in repr(replay_provider.requests)


def test_missing_key_is_401(replay_provider: ReplayProvider) -> None:
    with httpx2.Client() as http:
        response = http.post(f"{replay_provider.base_url}/chat/completions", json={"model": "m", "messages": []})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert replay_provider.requests[0].has_api_key is False


# -- faults -> SDK exceptions -----------------------------------------------------------

HELLO: dict[str, Any] = {"model": "deepseek-flash", "messages": [{"role": "user", "content": "hello"}]}


@pytest.mark.parametrize(
    ("status", "exception"),
    [
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_status_faults_raise_the_sdk_exception(
    replay_provider: ReplayProvider, status: int, exception: type[openai.APIStatusError]
) -> None:
    replay_provider.fail(status)
    with sdk(replay_provider.base_url) as client, pytest.raises(exception) as caught:
        client.chat.completions.create(**HELLO)
    assert caught.value.status_code == status
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["type"]  # an OpenAI-style error, unwrapped by the SDK


def test_unknown_model_404_carries_the_error_body(replay_provider: ReplayProvider) -> None:
    replay_provider.fail(404, error_body("The model `nope` does not exist.", code="model_not_found"))
    with sdk(replay_provider.base_url) as client, pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(**{**HELLO, "model": "nope"})
    assert caught.value.code == "model_not_found"


@pytest.mark.parametrize("retry_after", ["1", None])
def test_429_with_and_without_retry_after(replay_provider: ReplayProvider, retry_after: str | None) -> None:
    replay_provider.fail(429, headers={"retry-after": retry_after} if retry_after else None)
    with sdk(replay_provider.base_url) as client, pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(**HELLO)
    assert caught.value.response.headers.get("retry-after") == retry_after


def test_sdk_retry_after_a_503_gets_the_replay(replay_provider: ReplayProvider) -> None:
    exchanges = replay_provider.load("ch09_who_retries.service_is_busy")
    replay_provider.fail(503, headers={"retry-after-ms": "10"})  # keep the SDK's backoff short
    with sdk(replay_provider.base_url, max_retries=1) as client:
        reply = ask(client, exchanges[0]["request"])
    assert reply.id == exchanges[0]["response"]["id"]
    attempts = replay_provider.requests
    assert [r.outcome.split(" ")[0:2] for r in attempts] == [
        ["fail", "503"],
        ["replay", "ch09_who_retries.service_is_busy#0"],
    ]
    assert [r.headers["x-stainless-retry-count"] for r in attempts] == ["0", "1"]


def test_persistent_fault_keeps_failing(replay_provider: ReplayProvider) -> None:
    replay_provider.fail(500, times=None)
    with sdk(replay_provider.base_url) as client:
        for _ in range(3):
            with pytest.raises(openai.InternalServerError):
                client.chat.completions.create(**HELLO)


def test_delay_trips_the_client_timeout_and_the_retry_still_gets_its_answer(
    replay_provider: ReplayProvider,
) -> None:
    exchanges = replay_provider.load("ch05_loop_endings.tokens_exhausted")
    replay_provider.delay(5)
    with sdk(replay_provider.base_url, timeout=0.3) as client:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            ask(client, exchanges[0]["request"])
        assert time.monotonic() - started < 2
        reply = ask(client, exchanges[0]["request"])
    assert reply.choices[0].finish_reason == "length"
    deadline = time.monotonic() + 2  # the abandoned attempt is logged once the server notices
    while len(replay_provider.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    outcomes = sorted(r.outcome for r in replay_provider.requests)
    assert outcomes == ["abandoned after delay 5", "replay ch05_loop_endings.tokens_exhausted#0"]


def test_short_delay_still_answers(replay_provider: ReplayProvider) -> None:
    replay_provider.delay(0.1)
    replay_provider.reply(ReplayProvider.completion(content="late but here"))
    with sdk(replay_provider.base_url, timeout=5) as client:
        assert client.chat.completions.create(**HELLO).choices[0].message.content == "late but here"


def test_drop_is_a_connection_error(replay_provider: ReplayProvider) -> None:
    replay_provider.drop()
    with sdk(replay_provider.base_url) as client, pytest.raises(openai.APIConnectionError) as caught:
        client.chat.completions.create(**HELLO)
    assert not isinstance(caught.value, openai.APITimeoutError)


def test_closed_port_is_a_connection_error() -> None:
    with sdk(closed_port()) as client, pytest.raises(openai.APIConnectionError) as caught:
        client.chat.completions.create(**HELLO)
    assert not isinstance(caught.value, openai.APITimeoutError)


def test_not_json_with_html_type_comes_back_as_text(replay_provider: ReplayProvider) -> None:
    # The SDK does not raise here: it hands back the text, and the caller must notice.
    replay_provider.not_json()
    with sdk(replay_provider.base_url) as client:
        reply: Any = client.chat.completions.create(**HELLO)
    assert isinstance(reply, str)
    assert "Bad Gateway" in reply


def test_not_json_claiming_json_raises_a_decode_error(replay_provider: ReplayProvider) -> None:
    replay_provider.not_json(body="{not json", content_type="application/json")
    with sdk(replay_provider.base_url) as client, pytest.raises(json.JSONDecodeError):
        client.chat.completions.create(**HELLO)


# -- malformed but well-formed-JSON completions pass through the SDK untouched ------------


def test_tool_arguments_that_are_not_json_pass_through(replay_provider: ReplayProvider) -> None:
    replay_provider.reply(ReplayProvider.completion(tool_calls=[("place_order", '{"item": "milk", "quantity": ')]))
    with sdk(replay_provider.base_url) as client:
        message = client.chat.completions.create(**HELLO).choices[0].message
    assert message.tool_calls[0].function.arguments == '{"item": "milk", "quantity": '


def test_undeclared_tool_name_passes_through(replay_provider: ReplayProvider) -> None:
    replay_provider.reply(ReplayProvider.completion(tool_calls=[("launch_rocket", {"target": "moon"})]))
    with sdk(replay_provider.base_url) as client:
        reply = client.chat.completions.create(**HELLO)
    assert reply.choices[0].finish_reason == "tool_calls"
    assert reply.choices[0].message.tool_calls[0].function.name == "launch_rocket"


def test_empty_choices_pass_through(replay_provider: ReplayProvider) -> None:
    body = ReplayProvider.completion(content="unused")
    body["choices"] = []
    replay_provider.reply(body)
    with sdk(replay_provider.base_url) as client:
        assert client.chat.completions.create(**HELLO).choices == []


def test_unknown_url_is_404(replay_provider: ReplayProvider) -> None:
    with sdk(replay_provider.base_url) as client, pytest.raises(openai.NotFoundError):
        client.models.list()
    assert replay_provider.requests[0].outcome == "unknown url"


def test_context_manager_stops_the_server() -> None:
    with ReplayProvider() as provider:
        base_url = provider.base_url
    with sdk(base_url) as client, pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(**HELLO)
