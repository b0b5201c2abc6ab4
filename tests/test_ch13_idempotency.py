"""Chapter 13: idempotency keys make an order that may have landed safe to send again.

The chapter's mock stories (the key on every attempt of one call, the second
attempt answered from the first, one key per call), the key kept in the
trace as sent, and the page's pointers into the traces.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from primer.clock import VirtualClock
from primer.redact import SENSITIVE_FIELDS, SENSITIVE_HEADERS, Redactor
from primer.runner import run_chapter
from primer.service import IDEMPOTENCY_KEY, ServiceClient, random_key
from primer.summary import scenario_line
from primer.trace import Attempt, Backoff, ScenarioRun, ToolRun

PAGE = " ".join((Path(__file__).resolve().parent.parent / "docs" / "ch13_idempotency_keys.md").read_text().split())


@pytest.fixture(scope="module")
def runs() -> dict[str, ScenarioRun]:
    return {s.name: s for s in run_chapter("ch13_idempotency_keys").scenarios}


def tools_of(run: ScenarioRun) -> list[ToolRun]:
    return [tool for turn in run.turns for tool in turn.tools]


def key_of(attempt: Attempt) -> str:
    assert attempt.request is not None
    return dict(attempt.request.headers)[IDEMPOTENCY_KEY]


def test_a_key_the_service_is_not_known_to_keep_changes_nothing(runs: dict[str, ScenarioRun]) -> None:
    (order,) = tools_of(runs["key_alone_changes_nothing"])
    (attempt,) = order.attempts
    assert attempt.request is not None
    assert (attempt.request.method, attempt.request.url) == ("POST", "https://httpbin.org/delay/10")
    assert attempt.request.json_body == {"item": "milk", "quantity": 2}
    assert uuid.UUID(key_of(attempt))
    assert order.message.endswith("It may have taken effect. Do not call it again; say what is uncertain.")
    assert "It may have taken effect. Do not call it again; say what is uncertain." in PAGE


def test_the_order_sent_again_with_its_key_is_answered_from_the_first(runs: dict[str, ScenarioRun]) -> None:
    run = runs["retried_with_the_same_key"]
    (order,) = tools_of(run)
    first, backoff, second = order.steps
    assert isinstance(first, Attempt)
    assert isinstance(backoff, Backoff)
    assert isinstance(second, Attempt)
    assert first.failure is not None
    assert first.failure.message.endswith("did not answer in time, and the call may have been received")
    assert (first.failure.retryable, first.failure.idempotent) == (True, False)
    assert backoff.seconds == 0.05
    assert key_of(first) == key_of(second)
    assert second.request is not None
    assert (second.request.method, second.request.url) == ("POST", "https://httpbin.org/post")
    assert second.response is not None
    assert ("idempotent-replayed", "true") in second.response.headers
    assert second.response.json_body["reference"] == "ord-8812"
    assert order.result == "ordered 2 x milk (reference ord-8812)"
    assert run.simulated_seconds == pytest.approx(2.05)
    assert "(2.05s simulated)" in scenario_line(run)
    for fact in (
        "`attempts: 2`",
        "`idempotent-replayed: true`",
        "`(2.05s simulated)`",
        "`retryable: true, idempotent: false`",
    ):
        assert fact in PAGE


def test_two_calls_are_two_keys_and_two_orders(runs: dict[str, ScenarioRun]) -> None:
    first, second = tools_of(runs["two_orders_two_keys"])
    assert first.arguments == second.arguments
    assert key_of(first.attempts[0]) != key_of(second.attempts[0])
    references = [tool.attempts[0].response.json_body["reference"] for tool in (first, second)]  # type: ignore[union-attr]
    assert references == ["ord-8812", "ord-8813"]
    assert "`ord-8812` and `ord-8813`" in PAGE


def test_mock_keys_are_the_same_every_run_so_the_trace_is(runs: dict[str, ScenarioRun]) -> None:
    again = {s.name: s for s in run_chapter("ch13_idempotency_keys").scenarios}
    for name, run in runs.items():
        assert [key_of(a) for t in tools_of(run) for a in t.attempts] == [
            key_of(a) for t in tools_of(again[name]) for a in t.attempts
        ]


def test_the_key_is_not_a_secret_and_is_recorded_as_sent() -> None:
    key = random_key()
    assert IDEMPOTENCY_KEY not in SENSITIVE_HEADERS
    assert IDEMPOTENCY_KEY not in SENSITIVE_FIELDS
    redactor = Redactor(["sk-provider-0a9b8c", "svc-key-77f1"])
    assert redactor.headers([("Idempotency-Key", key)]) == [("idempotency-key", key)]
    # Echoed back in a body, as httpbin does, it is kept too.
    assert redactor.json({"headers": {"Idempotency-Key": key}}) == {"headers": {"Idempotency-Key": key}}


def test_a_live_client_makes_a_fresh_random_key_for_each_call() -> None:
    client = ServiceClient(base_url="https://httpbin.org", clock=VirtualClock())
    try:
        keys = {client.new_key() for _ in range(3)}
    finally:
        client.close()
    assert len(keys) == 3
    assert all(uuid.UUID(key).version == 4 for key in keys)
