"""The service client: how each attempt is classified, and who retries what.

Every test drives a real ``ServiceClient`` through an ``httpx.MockTransport``
on a ``VirtualClock``: what is asserted is the decision (retry or not), the
record of it (attempts, backoffs, classification) and the message the model
would be sent, never a sleep.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable

import httpx
import pytest

from primer.agent import Agent, message_for_model
from primer.chapters import ch09_who_retries
from primer.clock import VirtualClock
from primer.errors import ServiceFailed
from primer.mock_service import ORDER_REFERENCE, GroceryService
from primer.models.mock import MockModel
from primer.service import RetryPolicy, ServiceClient, ServiceScript, classify_status, numbered_keys, retry_delay
from primer.trace import Attempt, Backoff, ToolCall

SERVICE = "https://grocer.test"
HTTPBIN = "https://httpbin.org"

# The messages the model is sent back, verbatim from DESIGN.md (and the seeds).
CALLER_CAN_FIX = (
    "['place_order'] rejected the arguments: quantity ['20'] must be between 1 and 12. Correct them and call it again."
)
NOT_RETRYABLE = "['price_of'] failed: ['https://httpbin.org'] answered ['404']. It will not succeed. Answer without it."
MAY_HAVE_TAKEN_EFFECT = (
    "['place_order'] did not confirm: ['https://httpbin.org'] did not answer in time, and the call may have been "
    "received. It may have taken effect. Do not call it again; say what is uncertain."
)

Answer = int | tuple[int, dict[str, str]] | type[httpx.TransportError]


class Scripted:
    """A transport handler that answers from a list (the last answer repeats)."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = answers
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        if isinstance(answer, type):
            raise answer("scripted failure", request=request)
        status, headers = answer if isinstance(answer, tuple) else (answer, {})
        if status == 200:
            return httpx.Response(200, json={"ok": True, "n": len(self.requests)}, headers=headers)
        return httpx.Response(status, headers=headers)


def make_client(
    handler: Callable[[httpx.Request], httpx.Response],
    *,
    paths: tuple[str, ...] = ("/get",),
    policy: RetryPolicy | None = None,
    token: str | None = None,
    base_url: str = SERVICE,
) -> ServiceClient:
    return ServiceClient(
        base_url=base_url,
        clock=VirtualClock(),
        transport=httpx.MockTransport(handler),
        policy=policy or RetryPolicy(),
        token=token,
        script=ServiceScript(paths),
    )


def grocery_client(*paths: str, policy: RetryPolicy | None = None) -> tuple[ServiceClient, GroceryService]:
    clock = VirtualClock()
    service = GroceryService(clock)
    client = ServiceClient(
        base_url=HTTPBIN,
        clock=clock,
        transport=service.transport(),
        policy=policy or RetryPolicy(),
        token="primer-demo-key",
        script=ServiceScript(paths),
    )
    return client, service


def kinds(steps: list[Attempt | Backoff]) -> list[str]:
    return [step.kind for step in steps]


def simulated(client: ServiceClient) -> float:
    clock = client.clock
    assert isinstance(clock, VirtualClock)
    return clock.simulated


@pytest.fixture(autouse=True)
def no_real_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every wait in these tests is virtual; a real one is a bug.
    def refuse(seconds: float) -> None:
        raise AssertionError(f"time.sleep({seconds}) was called during a mock service call")

    monkeypatch.setattr(time, "sleep", refuse)


# -- the seed cases ---------------------------------------------------------------------------------------------------


def test_busy_service_is_retried_after_its_retry_after_and_answers_on_attempt_2() -> None:
    client, service = grocery_client("/status/429", "/get")
    call = client.session()

    body = call.get({"item": "milk"}, idempotent=True)

    assert body == {"args": {"item": "milk"}, "price": "1.20"}
    assert kinds(call.steps) == ["attempt", "backoff", "attempt"]
    first, backoff, second = call.steps
    assert isinstance(first, Attempt)
    assert isinstance(second, Attempt)
    assert isinstance(backoff, Backoff)
    assert first.number == 1
    assert first.failure is not None
    assert first.failure.model_dump() == {
        "message": "['https://httpbin.org'] answered ['429']",
        "retryable": True,
        "idempotent": True,
        "caller_can_fix": False,
    }
    assert first.response is not None
    assert first.response.status == 429
    assert ("retry-after", "1") in first.response.headers
    # The seed page's mock waited 0.05 s and ignored the service's `retry-after: 1`: we honour it.
    assert (backoff.seconds, backoff.before_attempt, backoff.source) == (1.0, 2, "retry-after")
    assert second.number == 2
    assert second.failure is None
    assert second.response is not None
    assert second.response.status == 200
    assert [str(r.url) for r in service.received] == [
        "https://httpbin.org/status/429?item=milk",
        "https://httpbin.org/get?item=milk",
    ]
    assert simulated(client) == 1.0


def test_not_found_is_not_retried_and_the_model_is_told_it_will_not_succeed() -> None:
    client, service = grocery_client("/status/404", "/get")
    call = client.session()

    with pytest.raises(ServiceFailed) as raised:
        call.get({"item": "milk"}, idempotent=True)

    failure = raised.value.failure
    assert (failure.retryable, failure.idempotent, failure.caller_can_fix) == (False, True, False)
    assert failure.message == "['https://httpbin.org'] answered ['404']"
    assert not raised.value.may_have_taken_effect
    assert kinds(call.steps) == ["attempt"]
    assert len(service.received) == 1
    assert simulated(client) == 0.0
    assert message_for_model("price_of", failure, attempts=1) == NOT_RETRYABLE


def test_an_order_that_times_out_is_not_retried_because_it_may_have_been_received() -> None:
    client, service = grocery_client("/delay/10", "/get", policy=RetryPolicy(timeout=2.0))
    call = client.session()

    with pytest.raises(ServiceFailed) as raised:
        call.get({"item": "milk", "quantity": 2}, idempotent=False)

    failure = raised.value.failure
    assert (failure.retryable, failure.idempotent, failure.caller_can_fix) == (True, False, False)
    assert failure.message == "['https://httpbin.org'] did not answer in time, and the call may have been received"
    assert raised.value.may_have_taken_effect
    (attempt,) = call.steps
    assert isinstance(attempt, Attempt)
    assert attempt.request is not None
    assert attempt.request.url == "https://httpbin.org/delay/10?item=milk&quantity=2"
    assert attempt.response is None
    # It did reach the service, once: that is what makes it uncertain.
    assert len(service.received) == 1
    # The client gave up at its timeout, on the virtual clock.
    assert simulated(client) == 2.0
    assert attempt.timing.outside_ms == pytest.approx(2000.0, abs=50)
    message = message_for_model("place_order", failure, may_have_taken_effect=True, attempts=1)
    assert message == MAY_HAVE_TAKEN_EFFECT


def test_a_quantity_the_tool_refuses_is_the_callers_to_fix_and_nothing_goes_on_the_wire() -> None:
    client, service = grocery_client("/get")
    agent = Agent(model=MockModel([]), tools=ch09_who_retries.TOOLS, clock=client.clock, service=client)

    run = agent.run_tool(ToolCall(id="c1", name="place_order", arguments={"item": "milk", "quantity": 20}))

    assert run.failure is not None
    assert run.failure.model_dump() == {
        "message": "quantity ['20'] must be between 1 and 12",
        "retryable": False,
        "idempotent": False,
        "caller_can_fix": True,
    }
    # Still one classified attempt, as the seed shows, but no request.
    assert run.steps == [Attempt(number=1, failure=run.failure)]
    assert run.service is None
    assert run.timing.outside_ms is None
    assert service.received == []
    assert run.message == CALLER_CAN_FIX


def test_an_order_within_the_limit_goes_through_once() -> None:
    client, service = grocery_client("/get")
    agent = Agent(model=MockModel([]), tools=ch09_who_retries.TOOLS, clock=client.clock, service=client)

    run = agent.run_tool(ToolCall(id="c1", name="place_order", arguments={"item": "milk", "quantity": 12}))

    assert run.failure is None
    assert run.result == run.message == "ordered 12 x milk"
    assert run.service == HTTPBIN
    (attempt,) = run.attempts
    assert attempt.response is not None
    assert attempt.response.json_body["reference"] == ORDER_REFERENCE
    assert [dict(r.url.params) for r in service.received] == [{"item": "milk", "quantity": "12"}]


# -- the rules beyond the seeds ---------------------------------------------------------------------------------------


def test_503_on_a_call_that_is_not_idempotent_is_retried_since_the_service_did_not_act() -> None:
    handler = Scripted(503, 200)
    call = make_client(handler).session()

    body = call.get({"item": "milk", "quantity": 1}, idempotent=False)

    assert body == {"ok": True, "n": 2}
    assert kinds(call.steps) == ["attempt", "backoff", "attempt"]
    first = call.steps[0]
    assert isinstance(first, Attempt)
    assert first.failure is not None
    assert (first.failure.retryable, first.failure.idempotent) == (True, False)
    assert len(handler.requests) == 2


def test_500_on_a_call_that_is_not_idempotent_is_not_retried_the_service_may_have_acted() -> None:
    handler = Scripted(500, 200)
    call = make_client(handler, base_url=HTTPBIN).session()

    with pytest.raises(ServiceFailed) as raised:
        call.get({"item": "milk", "quantity": 1}, idempotent=False)

    assert raised.value.failure.retryable
    assert raised.value.may_have_taken_effect
    assert len(handler.requests) == 1
    assert kinds(call.steps) == ["attempt"]
    message = message_for_model("place_order", raised.value.failure, may_have_taken_effect=True)
    assert message.startswith("['place_order'] did not confirm: ['https://httpbin.org'] answered ['500'].")


def test_500_on_an_idempotent_call_is_retried_until_attempts_run_out() -> None:
    handler = Scripted(500)
    call = make_client(handler, base_url=HTTPBIN, policy=RetryPolicy(max_attempts=3)).session()

    with pytest.raises(ServiceFailed) as raised:
        call.get({"item": "milk"}, idempotent=True)

    assert len(handler.requests) == 3
    assert not raised.value.may_have_taken_effect
    assert message_for_model("price_of", raised.value.failure, attempts=3) == (
        "['price_of'] failed: ['https://httpbin.org'] answered ['500'], 3 times. It may work later. Answer without it."
    )


def test_a_refusal_of_an_order_is_not_reported_as_possibly_placed() -> None:
    # A 4xx is the service saying no: nothing happened, so "it may have taken effect" would mislead.
    handler = Scripted(404)
    call = make_client(handler, base_url=HTTPBIN).session()

    with pytest.raises(ServiceFailed) as raised:
        call.get({"item": "milk", "quantity": 1}, idempotent=False)

    assert not raised.value.may_have_taken_effect
    assert len(handler.requests) == 1
    assert "will not succeed" in message_for_model("place_order", raised.value.failure)


@pytest.mark.parametrize("status", [400, 409, 422])
def test_statuses_that_blame_the_arguments_are_the_callers_to_fix_and_not_retried(status: int) -> None:
    handler = Scripted(status, 200)
    call = make_client(handler).session()

    with pytest.raises(ServiceFailed) as raised:
        call.get({"item": "milk"}, idempotent=True)

    assert raised.value.failure.caller_can_fix
    assert not raised.value.failure.retryable
    assert len(handler.requests) == 1


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_connect_error_is_retried_whatever_the_call_since_nothing_arrived(idempotent: bool) -> None:
    handler = Scripted(httpx.ConnectError, 200)
    call = make_client(handler).session()

    assert call.get({"item": "milk"}, idempotent=idempotent) == {"ok": True, "n": 2}

    first = call.steps[0]
    assert isinstance(first, Attempt)
    assert first.failure is not None
    assert first.failure.message == f"{[SERVICE]} could not be reached"
    assert first.response is None
    assert kinds(call.steps) == ["attempt", "backoff", "attempt"]


def test_a_connect_timeout_on_an_order_is_retried_since_it_never_connected() -> None:
    handler = Scripted(httpx.ConnectTimeout, 200)
    call = make_client(handler).session()

    assert call.get({"item": "milk", "quantity": 1}, idempotent=False) == {"ok": True, "n": 2}
    assert len(handler.requests) == 2


def test_an_idempotent_timeout_is_retried() -> None:
    handler = Scripted(httpx.ReadTimeout, 200)
    call = make_client(handler).session()

    assert call.get({"item": "milk"}, idempotent=True) == {"ok": True, "n": 2}

    first = call.steps[0]
    assert isinstance(first, Attempt)
    assert first.failure is not None
    assert first.failure.message == f"{[SERVICE]} did not answer in time"
    assert "may have been received" not in first.failure.message
    assert len(handler.requests) == 2


def test_an_idempotent_lookup_against_the_slow_grocery_service_times_out_and_retries() -> None:
    client, service = grocery_client("/delay/10", "/get", policy=RetryPolicy(timeout=2.0))
    call = client.session()

    assert call.get({"item": "milk"}, idempotent=True)["price"] == "1.20"
    assert len(service.received) == 2
    # The 2 s timeout, then the first backoff: no retry-after on a timeout.
    assert simulated(client) == pytest.approx(2.0 + RetryPolicy().backoff)


@pytest.mark.parametrize("max_attempts", [1, 2, 4])
def test_max_attempts_is_respected_with_exponential_backoff_between(max_attempts: int) -> None:
    handler = Scripted(503)
    policy = RetryPolicy(max_attempts=max_attempts, backoff=0.05)
    client = make_client(handler, policy=policy)
    call = client.session()

    with pytest.raises(ServiceFailed):
        call.get({"item": "milk"}, idempotent=True)

    assert len(handler.requests) == max_attempts
    attempts = [s for s in call.steps if isinstance(s, Attempt)]
    backoffs = [s for s in call.steps if isinstance(s, Backoff)]
    assert [a.number for a in attempts] == list(range(1, max_attempts + 1))
    assert [(b.before_attempt, b.seconds, b.source) for b in backoffs] == [
        (n, round(0.05 * 2 ** (n - 2), 3), "backoff") for n in range(2, max_attempts + 1)
    ]
    # Steps alternate: attempt, backoff, attempt, ...
    assert kinds(call.steps) == ["attempt", *(["backoff", "attempt"] * (max_attempts - 1))]
    assert simulated(client) == pytest.approx(sum(b.seconds for b in backoffs))


# -- Retry-After ------------------------------------------------------------------------------------------------------


def http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


@pytest.mark.parametrize(
    ("header", "limit", "expected"),
    [
        ("1", 2.0, 1.0),
        ("0", 2.0, 0.0),
        ("1.5", 2.0, 1.5),
        ("2", 2.0, 2.0),
        ("-3", 2.0, 0.0),
        ("30", 60.0, 30.0),
    ],
)
def test_retry_after_in_seconds_is_honoured_up_to_the_limit(header: str, limit: float, expected: float) -> None:
    backoff = retry_delay(RetryPolicy(max_retry_after=limit), 2, header)
    assert backoff is not None
    assert (backoff.seconds, backoff.source, backoff.before_attempt) == (expected, "retry-after", 2)


@pytest.mark.parametrize("header", ["30", "2.001", "1e400", "inf"])
def test_retry_after_past_the_limit_is_no_retry_rather_than_an_early_one(header: str) -> None:
    # Waiting 2 s and calling again would go against the service's word: there is no wait that honours it.
    assert retry_delay(RetryPolicy(max_retry_after=2.0), 2, header) is None


def test_retry_after_as_an_http_date_is_honoured() -> None:
    backoff = retry_delay(RetryPolicy(max_retry_after=3600), 2, http_date(600))
    assert backoff is not None
    assert backoff.source == "retry-after"
    assert backoff.seconds == pytest.approx(600, abs=3)


def test_retry_after_as_an_http_date_past_the_limit_is_no_retry() -> None:
    assert retry_delay(RetryPolicy(max_retry_after=2.0), 2, http_date(600)) is None


def test_retry_after_as_a_date_in_the_past_means_now() -> None:
    backoff = retry_delay(RetryPolicy(), 2, http_date(-600))
    assert backoff is not None
    assert (backoff.seconds, backoff.source) == (0.0, "retry-after")


@pytest.mark.parametrize("header", [None, "", "soon", "nan", "Blursday, 99 Foo 2024"])
def test_without_a_usable_retry_after_the_backoff_is_exponential(header: str | None) -> None:
    policy = RetryPolicy(backoff=0.05)
    delays = [retry_delay(policy, n, header) for n in (2, 3, 4)]
    assert [(d.seconds, d.source) for d in delays if d is not None] == [
        (0.05, "backoff"),
        (0.1, "backoff"),
        (0.2, "backoff"),
    ]


def test_the_client_waits_what_retry_after_says_and_records_it() -> None:
    handler = Scripted((429, {"retry-after": "4"}), (503, {"retry-after": "5"}), 200)
    client = make_client(handler, policy=RetryPolicy(max_attempts=3, max_retry_after=5.0))
    call = client.session()

    call.get({"item": "milk"}, idempotent=True)

    backoffs = [s for s in call.steps if isinstance(s, Backoff)]
    assert [(b.seconds, b.before_attempt, b.source) for b in backoffs] == [
        (4.0, 2, "retry-after"),
        (5.0, 3, "retry-after"),
    ]
    assert simulated(client) == 9.0


def test_a_retry_after_past_the_limit_gives_up_at_once_and_says_how_long_was_asked() -> None:
    handler = Scripted((429, {"retry-after": "120"}), 200)
    client = make_client(handler, base_url=HTTPBIN, policy=RetryPolicy(max_retry_after=5.0))
    call = client.session()

    with pytest.raises(ServiceFailed) as raised:
        call.get({"item": "milk"}, idempotent=True)

    # Not retried early against the service's word, and no wait on the clock.
    assert len(handler.requests) == 1
    assert kinds(call.steps) == ["attempt"]
    assert simulated(client) == 0.0
    failure = raised.value.failure
    assert failure.message == (
        "['https://httpbin.org'] answered ['429'] and asked for a wait of ['120'] seconds, "
        "longer than this client waits (5 s)"
    )
    assert failure.retryable
    assert not raised.value.may_have_taken_effect, "a 429 is a refusal: nothing was done"
    # The attempt's record says why nobody tried again.
    attempt = call.steps[0]
    assert isinstance(attempt, Attempt)
    assert attempt.failure == failure
    assert message_for_model("price_of", failure, attempts=1) == (
        "['price_of'] failed: ['https://httpbin.org'] answered ['429'] and asked for a wait of ['120'] seconds, "
        "longer than this client waits (5 s). It may work later. Answer without it."
    )


def test_the_grocery_services_retry_after_is_what_the_client_waits() -> None:
    clock = VirtualClock()
    service = GroceryService(clock, retry_after="2")
    client = ServiceClient(
        base_url=HTTPBIN, clock=clock, transport=service.transport(), script=ServiceScript(["/status/503", "/get"])
    )
    call = client.session()
    call.get({"item": "bread"}, idempotent=True)
    assert [(s.seconds, s.source) for s in call.steps if isinstance(s, Backoff)] == [(2.0, "retry-after")]
    assert clock.simulated == 2.0  # 2 s asked for: within the default limit, so waited in full


def test_a_scripted_retry_after_comes_from_the_path_and_past_the_limit_ends_the_call() -> None:
    client, service = grocery_client("/status/429?retry_after=30", "/get")
    call = client.session()
    with pytest.raises(ServiceFailed):
        call.get({"item": "bread"}, idempotent=True)
    assert len(service.received) == 1
    first = call.steps[0]
    assert isinstance(first, Attempt)
    assert first.response is not None
    assert ("retry-after", "30") in first.response.headers


# -- classification helpers and the record -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retryable", "caller_can_fix"),
    [(400, False, True), (401, False, False), (404, False, False), (408, True, False), (409, False, True),
     (422, False, True), (429, True, False), (500, True, False), (502, True, False), (503, True, False),
     (504, True, False)],
)  # fmt: skip
def test_classify_status(status: int, retryable: bool, caller_can_fix: bool) -> None:
    failure = classify_status(HTTPBIN, status, idempotent=False)
    assert (failure.retryable, failure.caller_can_fix, failure.idempotent) == (retryable, caller_can_fix, False)
    assert failure.message == f"['https://httpbin.org'] answered ['{status}']"


def test_the_service_token_is_sent_but_never_recorded_even_when_echoed() -> None:
    token = "tok-5f1e9c0d2b"

    def echo(request: httpx.Request) -> httpx.Response:
        # httpbin echoes the request headers into its body: the seed page leaked the key this way.
        headers = {"Authorization": request.headers["authorization"], "X-Echo": request.headers["authorization"]}
        return httpx.Response(200, json={"headers": headers, "url": str(request.url)})

    client = make_client(echo, token=token)
    call = client.session()
    body = call.get({"item": "milk"}, idempotent=True)

    (attempt,) = call.steps
    assert isinstance(attempt, Attempt)
    assert attempt.request is not None
    assert attempt.response is not None
    assert ("authorization", "not recorded") in attempt.request.headers
    recorded = json.dumps([step.model_dump(mode="json") for step in call.steps])
    assert token not in recorded
    assert token not in json.dumps(body)
    assert body["headers"]["Authorization"] == "not recorded"


def test_each_attempt_records_its_request_and_response_and_its_time_at_the_service() -> None:
    client, _ = grocery_client("/status/429", "/get")
    call = client.session()
    call.get({"item": "milk"}, idempotent=True)

    attempts = [s for s in call.steps if isinstance(s, Attempt)]
    assert [(a.request.method, a.request.url) for a in attempts if a.request] == [
        ("GET", "https://httpbin.org/status/429?item=milk"),
        ("GET", "https://httpbin.org/get?item=milk"),
    ]
    # The six request headers the seed lists (values vary with the httpx install, but not the names).
    assert attempts[0].request is not None
    assert [name for name, _ in attempts[0].request.headers] == [
        "accept",
        "accept-encoding",
        "authorization",
        "connection",
        "host",
        "user-agent",
    ]
    assert attempts[1].response is not None
    assert attempts[1].response.headers == [("content-length", "39"), ("content-type", "application/json")]
    for attempt in attempts:
        assert attempt.timing.outside_ms == attempt.timing.total_ms
    assert call.outside_ms == pytest.approx(sum(a.timing.total_ms for a in attempts), abs=0.01)


def test_credentials_in_the_service_url_are_in_no_message_and_no_record() -> None:
    # A user and password in the base URL, a key in the query: the service echoes both back.
    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"url": str(request.url), "said": "pw-7c1e9d0a and abc123, both wrong"})

    client = make_client(echo, base_url="https://user:pw-7c1e9d0a@grocer.test", paths=("/status/404",))
    call = client.session()
    with pytest.raises(ServiceFailed) as failed:
        call.get({"item": "milk", "api_key": "abc123"}, idempotent=True)

    assert failed.value.failure.message == "['https://not-recorded@grocer.test'] answered ['404']"
    (attempt,) = call.steps
    assert isinstance(attempt, Attempt)
    assert attempt.request is not None
    assert attempt.request.url == "https://not-recorded@grocer.test/status/404?item=milk&api_key=not+recorded"
    assert attempt.response is not None
    assert attempt.response.json_body == {
        "url": "https://not-recorded@grocer.test/status/404?item=milk&api_key=not+recorded",
        "said": "[secret] and [secret], both wrong",
    }
    recorded = json.dumps([step.model_dump(mode="json") for step in call.steps])
    assert "pw-7c1e9d0a" not in recorded
    assert "abc123" not in recorded


# -- POST, idempotency keys -------------------------------------------------------------------------------------------


def test_an_order_is_a_post_with_a_json_body_and_an_idempotency_key_that_is_recorded() -> None:
    client, service = grocery_client()
    call = client.session()

    body = call.post({"item": "milk", "quantity": 2})

    assert body == {"args": {}, "json": {"item": "milk", "quantity": 2}, "reference": ORDER_REFERENCE}
    (sent,) = service.received
    assert (sent.method, sent.url.path) == ("POST", "/post")
    key = sent.headers["idempotency-key"]
    assert len(key) == 36  # a UUID
    (attempt,) = call.steps
    assert isinstance(attempt, Attempt)
    assert attempt.request is not None
    assert attempt.request.method == "POST"
    assert attempt.request.json_body == {"item": "milk", "quantity": 2}
    # Not a credential: recorded as sent, so a reader can match attempts by it.
    assert ("idempotency-key", key) in attempt.request.headers


def test_an_idempotent_post_and_a_get_carry_no_key() -> None:
    client, service = grocery_client()
    client.session().post({"item": "milk"}, idempotent=True)
    client.session().get({"item": "milk"}, idempotent=False)
    assert ["idempotency-key" in r.headers for r in service.received] == [False, False]


def test_without_a_script_each_method_goes_to_httpbins_endpoint_for_it() -> None:
    script = ServiceScript()
    paths = [script.next_path("GET"), script.next_path("POST"), script.next_path("PUT")]
    assert paths == ["/get", "/post", "/anything"]
    scripted = ServiceScript(["/status/503", "/get"])
    assert [scripted.next_path("POST") for _ in range(3)] == ["/status/503", "/get", "/get"]


def test_numbered_keys_are_the_same_every_run_and_differ_from_call_to_call() -> None:
    first, again = numbered_keys("a_scenario"), numbered_keys("a_scenario")
    keys = [first(), first()]
    assert keys == [again(), again()]
    assert keys[0] != keys[1]
    assert numbered_keys("another")() not in keys


def test_every_attempt_of_one_order_carries_the_same_key_and_each_order_its_own() -> None:
    handler = Scripted(503, 200)
    client = make_client(handler)
    client.session().post({"item": "milk", "quantity": 1})
    client.session().post({"item": "milk", "quantity": 1})
    keys = [r.headers["idempotency-key"] for r in handler.requests]
    # A 503 is retried (nothing was done); the retry is the same operation, the second order a new one.
    assert len(keys) == 3
    assert keys[0] == keys[1] != keys[2]


def trusting_client(*paths: str) -> tuple[ServiceClient, GroceryService]:
    return grocery_client(*paths, policy=RetryPolicy(trust_idempotency_keys=True))


def test_a_keyed_order_that_timed_out_is_retried_with_its_key_and_answered_from_the_first() -> None:
    client, service = trusting_client("/delay/10", "/post")
    call = client.session()

    body = call.post({"item": "milk", "quantity": 2})

    assert body["reference"] == ORDER_REFERENCE
    assert kinds(call.steps) == ["attempt", "backoff", "attempt"]
    first, _, second = call.steps
    assert isinstance(first, Attempt)
    assert isinstance(second, Attempt)
    assert first.failure is not None
    assert first.failure.message.endswith("did not answer in time, and the call may have been received")
    assert second.response is not None
    assert ("idempotent-replayed", "true") in second.response.headers
    assert first.request is not None
    assert second.request is not None
    assert dict(first.request.headers)["idempotency-key"] == dict(second.request.headers)["idempotency-key"]
    # Two requests reached the shop; one order was placed.
    assert len(service.received) == 2
    assert list(service.orders) == [ORDER_REFERENCE]
    assert simulated(client) == pytest.approx(2.0 + RetryPolicy().backoff)


def test_a_key_is_not_trusted_unless_the_policy_says_the_service_keeps_keys() -> None:
    # httpbin echoes a key and keeps nothing: sending one proves nothing about the service.
    client, service = grocery_client("/delay/10", "/post")
    call = client.session()

    with pytest.raises(ServiceFailed) as raised:
        call.post({"item": "milk", "quantity": 2})

    assert raised.value.may_have_taken_effect
    assert len(service.received) == 1


def test_a_keyed_order_refused_with_500_is_retried_when_keys_are_trusted() -> None:
    handler = Scripted(500, 200)
    client = make_client(handler, policy=RetryPolicy(trust_idempotency_keys=True))
    assert client.session().post({"item": "milk", "quantity": 1}) == {"ok": True, "n": 2}
    assert len(handler.requests) == 2


# -- the deadline of one attempt --------------------------------------------------------------------------------------


def test_a_trickle_never_trips_the_per_phase_timeout() -> None:
    # A byte a second for 5 bytes: each wait is 1 s, inside the 2 s timeout, so the attempt takes 4 s.
    client, _ = grocery_client("/drip?duration=5&numbytes=5")
    call = client.session()

    assert call.get({"item": "milk"}, idempotent=True) is None  # "*****" is no JSON body

    (attempt,) = call.steps
    assert isinstance(attempt, Attempt)
    assert attempt.failure is None
    assert attempt.response is not None
    assert attempt.response.text_body == "*****"
    assert attempt.request is not None
    assert attempt.request.url == "https://httpbin.org/drip?duration=5&numbytes=5&item=milk"
    assert simulated(client) == pytest.approx(4.0)


def test_an_attempt_deadline_stops_the_trickle_at_the_deadline_and_the_lookup_is_retried() -> None:
    client, service = grocery_client("/drip?duration=5&numbytes=5", "/get", policy=RetryPolicy(attempt_deadline=2.0))
    call = client.session()

    assert call.get({"item": "milk"}, idempotent=True)["price"] == "1.20"

    first = call.steps[0]
    assert isinstance(first, Attempt)
    assert first.failure is not None
    assert first.failure.message == "['https://httpbin.org'] did not finish answering within the 2 s deadline"
    assert (first.failure.retryable, first.failure.idempotent) == (True, True)
    assert kinds(call.steps) == ["attempt", "backoff", "attempt"]
    assert len(service.received) == 2
    assert simulated(client) == pytest.approx(2.0 + RetryPolicy().backoff)


def test_an_attempt_deadline_shorter_than_the_timeout_bounds_a_slow_answer() -> None:
    client, _ = grocery_client("/delay/10", policy=RetryPolicy(timeout=5.0, attempt_deadline=1.5, max_attempts=1))
    call = client.session()
    with pytest.raises(ServiceFailed) as raised:
        call.post({"item": "milk", "quantity": 1})
    assert raised.value.failure.message == (
        "['https://httpbin.org'] did not finish answering within the 1.5 s deadline, "
        "and the call may have been received"
    )
    assert raised.value.may_have_taken_effect
    assert simulated(client) == pytest.approx(1.5)


def test_an_answer_in_time_is_not_affected_by_the_deadline() -> None:
    client, _ = grocery_client("/delay/1", policy=RetryPolicy(attempt_deadline=2.0))
    assert client.session().get({"item": "bread"}, idempotent=True)["price"] == "1.45"
    assert simulated(client) == pytest.approx(1.0)


@pytest.mark.parametrize("deadline", [0, -1.0])
def test_a_deadline_must_be_some_time(deadline: float) -> None:
    with pytest.raises(ValueError, match="attempt_deadline must be a number of seconds above 0"):
        RetryPolicy(attempt_deadline=deadline)


def test_before_each_phase_its_limit_shrinks_to_the_time_the_deadline_has_left() -> None:
    # httpcore calls the request's "trace" extension as each phase starts, and reads the phase's
    # timeout just after: a slow connect leaves less time to wait for the answer.
    from primer.service import _bound

    clock = VirtualClock()
    request = httpx.Request("GET", "https://grocer.test/get", extensions={"timeout": httpx.Timeout(5.0).as_dict()})
    _bound(request, clock, clock.now(), 2.0)
    timeouts = request.extensions["timeout"]
    assert timeouts == {"connect": 2.0, "read": 2.0, "write": 2.0, "pool": 2.0}

    clock.sleep(1.5)  # connecting took 1.5 s
    request.extensions["trace"]("http11.receive_response_headers.started", {})
    assert timeouts["read"] == pytest.approx(0.5, abs=0.01)
    clock.sleep(1.0)  # past the deadline: the next phase still gets a limit, the smallest
    request.extensions["trace"]("http11.receive_response_body.started", {})
    assert timeouts["read"] == 0.001


def test_a_keyed_order_that_never_gets_an_answer_is_still_reported_as_possibly_placed() -> None:
    # Retried with its key, every attempt timed out: the shop may hold the order, and the model must hear so.
    client, service = trusting_client("/delay/10")
    with pytest.raises(ServiceFailed) as raised:
        client.session().post({"item": "milk", "quantity": 2})
    assert len(service.received) == RetryPolicy().max_attempts
    assert raised.value.may_have_taken_effect
    assert list(service.orders) == [ORDER_REFERENCE], "one order, however many attempts carried its key"


def test_an_order_that_may_have_landed_stays_uncertain_when_a_later_attempt_is_refused() -> None:
    handler = Scripted(httpx.ReadTimeout, 503, 503)
    client = make_client(handler, policy=RetryPolicy(trust_idempotency_keys=True))
    with pytest.raises(ServiceFailed) as raised:
        client.session().post({"item": "milk", "quantity": 1})
    assert len(handler.requests) == 3
    # The last answer was a refusal, but the first attempt may have been acted on.
    assert raised.value.may_have_taken_effect
