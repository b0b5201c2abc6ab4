"""Every way the provider can fail becomes an ending with its attempts recorded, never a crash.

Real SDK, real HTTP: the replay provider on 127.0.0.1 misbehaves on cue and then replays the
seed traffic of ``service_says_no``; the service is a local httpbin. The clock is virtual, so
backoffs and Retry-After waits are recorded without being slept.
"""

from __future__ import annotations

from typing import Any

import pytest

from primer.chapters import scenarios_of
from primer.clock import VirtualClock
from primer.models.live import MAX_TIMEOUTS, MODEL_RETRY_POLICY
from primer.runner import live_environment, run_scenario
from primer.settings import Settings
from primer.trace import ModelCall, ScenarioRun
from tests.servers.provider import ReplayProvider, closed_port, error_body
from tests.servers.service import LocalHttpbin

pytestmark = pytest.mark.slow

API_KEY = "sk-faults-7c1e94"
SERVICE_KEY = "svc-faults-2b8d63"
SCENARIO = next(s for s in scenarios_of("ch09_who_retries") if s.name == "service_says_no")


def run_live(provider: ReplayProvider, httpbin: LocalHttpbin, **overrides: Any) -> ScenarioRun:
    """service_says_no, live, against the provider as the test set it up."""
    values: dict[str, Any] = {
        "api_key": API_KEY,
        "base_url": provider.base_url,
        "model": "deepseek-flash",
        "service_url": httpbin.url,
        "service_key": SERVICE_KEY,
    }
    values.update(overrides)
    settings = Settings(**values)
    environment = live_environment(SCENARIO, settings, clock=VirtualClock())
    return run_scenario(SCENARIO, "live", settings, environment=environment)


def first_call(run: ScenarioRun) -> ModelCall:
    return run.turns[0].model_call


def statuses(call: ModelCall) -> list[int | None]:
    return [e.response.status if e.response else None for e in call.exchanges]


def assert_provider_failure(run: ScenarioRun, message_start: str) -> ModelCall:
    """One turn, no reply, the error in the call and in the ending."""
    assert run.ending.reason == "provider_failure"
    assert len(run.turns) == 1
    call = first_call(run)
    assert call.reply is None
    assert call.error is not None
    assert call.error.message.startswith(message_start), call.error.message
    assert run.ending.detail == call.error.message
    assert run.error is None  # a provider failure is an ending, not a crash of the scenario
    # Only the context sent: no reply was appended.
    assert [m.role for m in run.transcript] == ["system", "human"]
    return call


@pytest.fixture
def provider(replay_provider: ReplayProvider) -> ReplayProvider:
    replay_provider.load("ch09_who_retries.service_says_no")
    return replay_provider


# -- refused: not retried --------------------------------------------------------------


def test_bad_key_401_is_not_retried_and_says_which_variable(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.fail(401)
    run = run_live(provider, httpbin)
    call = assert_provider_failure(
        run, f"The provider at {provider.base_url} refused the key (401): check PRIMER_API_KEY."
    )
    assert "Incorrect API key provided." in call.error.message  # type: ignore[union-attr]
    assert statuses(call) == [401]
    failure = call.exchanges[0].failure
    assert failure is not None
    assert failure.retryable is False
    assert failure.message == f"['{provider.base_url}'] answered ['401']"
    assert call.error.type == "openai.AuthenticationError"  # type: ignore[union-attr]
    assert len(provider.requests) == 1
    assert call.notes == []  # no backoff


def test_unknown_model_404_names_the_model(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.fail(404)
    run = run_live(provider, httpbin, model="deepseek-nonesuch")
    call = assert_provider_failure(
        run,
        f"The provider at {provider.base_url} does not know the model 'deepseek-nonesuch' (404): check PRIMER_MODEL",
    )
    assert statuses(call) == [404]
    assert provider.requests[0].body["model"] == "deepseek-nonesuch"
    assert len(provider.requests) == 1


def test_bad_request_400_is_not_retried(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.fail(400, body=error_body("max_tokens is too large", code="invalid_value"))
    run = run_live(provider, httpbin)
    call = assert_provider_failure(run, f"The provider at {provider.base_url} rejected the request (400)")
    assert "['max_tokens is too large']" in call.error.message  # type: ignore[union-attr]
    assert statuses(call) == [400]
    assert call.exchanges[0].failure is not None
    assert call.exchanges[0].failure.caller_can_fix is True


# -- busy: retried, as the provider asks ------------------------------------------------


def test_429_with_retry_after_is_waited_out_then_the_call_succeeds(
    provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    provider.fail(429, headers={"retry-after": "3"})
    run = run_live(provider, httpbin)
    assert run.ending.reason == "no_tool_calls"  # the seed story goes on as recorded
    call = first_call(run)
    assert statuses(call) == [429, 200]
    assert [e.attempt for e in call.exchanges] == [1, 2]
    assert call.exchanges[0].failure is not None
    assert call.exchanges[0].failure.retryable is True
    assert call.exchanges[1].failure is None
    assert ("retry-after", "3") in call.exchanges[0].response.headers  # type: ignore[union-attr]
    assert [n.data for n in call.notes if n.label == "backoff"] == [
        {"seconds": 3.0, "before_attempt": 2, "source": "retry-after"}
    ]
    assert call.timing.waited_ms == 3000.0
    assert call.error is None
    assert call.reply is not None
    # The SDK's own retries are off: each attempt was the SDK's first.
    assert [r.headers["x-stainless-retry-count"] for r in provider.requests[:2]] == ["0", "0"]


def test_429_retry_after_within_the_limit_is_waited_in_full(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.fail(429, headers={"retry-after": "7"})
    call = first_call(run_live(provider, httpbin))
    assert statuses(call) == [429, 200]
    assert (call.notes[0].data["seconds"], call.notes[0].data["source"]) == (7.0, "retry-after")


def test_429_retry_after_past_the_limit_is_not_retried_early(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    # Asking again after 10 s when the provider said an hour would go against its word: give up, and say why.
    provider.fail(429, headers={"retry-after": "3600"})
    run = run_live(provider, httpbin)
    call = assert_provider_failure(run, f"The provider at {provider.base_url} kept limiting the rate (429):")
    assert statuses(call) == [429]
    assert call.notes == []
    assert call.error is not None
    assert call.error.message.endswith(
        f"It asked for a wait of ['3600'] seconds, longer than the {MODEL_RETRY_POLICY.max_retry_after:g} s "
        "the library waits."
    )


def test_429_without_retry_after_backs_off_then_gives_up(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.fail(429, times=None)
    run = run_live(provider, httpbin)
    attempts = MODEL_RETRY_POLICY.max_attempts
    call = assert_provider_failure(
        run, f"The provider at {provider.base_url} kept limiting the rate (429) over {attempts} attempts:"
    )
    assert statuses(call) == [429] * attempts
    assert [e.attempt for e in call.exchanges] == list(range(1, attempts + 1))
    backoffs = [n.data for n in call.notes]
    assert [b["source"] for b in backoffs] == ["backoff"] * (attempts - 1)
    assert [b["seconds"] for b in backoffs] == [MODEL_RETRY_POLICY.backoff * 2**i for i in range(attempts - 1)]
    assert len(provider.requests) == attempts


def test_503_once_is_retried(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.fail(503)
    run = run_live(provider, httpbin)
    assert run.ending.reason == "no_tool_calls"
    assert statuses(first_call(run)) == [503, 200]


def test_500_every_time_ends_as_the_providers_fault(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.fail(500, times=None)
    run = run_live(provider, httpbin)
    call = assert_provider_failure(run, f"The provider at {provider.base_url} failed (500) over 3 attempts:")
    assert "the fault is the provider's" in call.error.message  # type: ignore[union-attr]
    assert statuses(call) == [500, 500, 500]
    assert all(e.failure is not None and e.failure.retryable for e in call.exchanges)


# -- no answer at all ---------------------------------------------------------------------


def test_nothing_listening_is_a_connect_error_retried_then_reported(
    provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    base_url = closed_port()
    run = run_live(provider, httpbin, base_url=base_url)
    call = assert_provider_failure(run, f"The provider at {base_url} could not be reached over 3 attempts:")
    assert "check PRIMER_BASE_URL" in call.error.message  # type: ignore[union-attr]
    assert call.error.type == "openai.APIConnectionError"  # type: ignore[union-attr]
    assert statuses(call) == [None, None, None]
    for exchange in call.exchanges:
        assert exchange.request.url == f"{base_url}/chat/completions"
        assert exchange.failure is not None
        assert exchange.failure.message == f"['{base_url}'] could not be reached"
        assert exchange.failure.retryable is True
    assert provider.requests == []  # the replay provider was not the one asked


def test_read_timeout_is_retried_once_then_reported(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.delay(5, times=None)
    run = run_live(provider, httpbin, model_timeout=0.2)
    call = assert_provider_failure(
        run, f"The provider at {provider.base_url} did not answer within 0.2s over 2 attempts"
    )
    assert "PRIMER_MODEL_TIMEOUT" in call.error.message  # type: ignore[union-attr]
    assert call.error.type == "openai.APITimeoutError"  # type: ignore[union-attr]
    assert len(call.exchanges) == MAX_TIMEOUTS
    for exchange in call.exchanges:
        assert exchange.response is None
        assert exchange.failure is not None
        assert exchange.failure.message == f"['{provider.base_url}'] did not answer within 0.2s"
        # The wire time is the wait for the answer that never came.
        assert exchange.timing.outside_ms is not None
        assert exchange.timing.outside_ms >= 150


def test_one_read_timeout_then_the_answer(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.delay(5)
    run = run_live(provider, httpbin, model_timeout=0.2)
    assert run.ending.reason == "no_tool_calls"
    assert statuses(first_call(run)) == [None, 200]


def test_connection_dropped_mid_call_is_retried(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.drop()
    run = run_live(provider, httpbin)
    assert run.ending.reason == "no_tool_calls"
    call = first_call(run)
    assert statuses(call) == [None, 200]
    assert call.exchanges[0].failure is not None
    assert call.exchanges[0].failure.message == f"['{provider.base_url}'] broke off the answer"


# -- an answer that is not a reply ------------------------------------------------------


@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "application/json"])
def test_body_that_is_not_json_is_not_retried(
    provider: ReplayProvider, httpbin: LocalHttpbin, content_type: str
) -> None:
    provider.not_json(content_type=content_type)
    run = run_live(provider, httpbin)
    call = assert_provider_failure(
        run, f"The provider at {provider.base_url} answered 200 with a body that is not JSON ({content_type})"
    )
    assert "check that PRIMER_BASE_URL" in call.error.message  # type: ignore[union-attr]
    assert statuses(call) == [200]
    response = call.exchanges[0].response
    assert response is not None
    assert response.json_body is None
    assert response.text_body is not None
    assert "Bad Gateway" in response.text_body
    assert call.exchanges[0].failure is not None
    assert call.exchanges[0].failure.retryable is False


def test_reply_with_no_choices(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    body = ReplayProvider.completion("unused")
    body["choices"] = []
    provider.reply(body)
    run = run_live(provider, httpbin)
    call = assert_provider_failure(run, f"The provider at {provider.base_url} answered 200 without any choice")
    assert statuses(call) == [200]
    assert call.exchanges[0].response is not None
    assert call.exchanges[0].response.json_body["choices"] == []


def test_ok_status_carrying_an_error_instead_of_a_reply(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.reply(error_body("Upstream model timed out", "server_error"))
    run = run_live(provider, httpbin)
    call = assert_provider_failure(run, f"The provider at {provider.base_url} answered 200 without any choice")
    assert call.error is not None
    assert call.error.message.endswith("It said: ['Upstream model timed out'].")
    assert len(call.exchanges) == 1


# -- a reply the agent has to deal with ---------------------------------------------------


def test_tool_arguments_that_are_not_json_go_back_to_the_model(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.reset()
    provider.reply(ReplayProvider.completion(tool_calls=[("price_of", '{"item": "milk"')]))
    provider.reply(ReplayProvider.completion("Sorry, I sent that badly."))
    run = run_live(provider, httpbin)
    assert run.ending.reason == "no_tool_calls"
    call = first_call(run).reply.tool_calls[0]  # type: ignore[union-attr]
    assert call.raw_arguments == '{"item": "milk"'
    assert call.arguments == {}
    tool = run.turns[0].tools[0]
    assert tool.failure is not None
    assert tool.failure.caller_can_fix is True
    assert tool.attempts[0].request is None  # nothing went to the service
    assert "are not a JSON object" in tool.message
    # The model sees its own text again, and what to do about it.
    sent = provider.requests[1].body["messages"]
    assert sent[2]["tool_calls"][0]["function"]["arguments"] == '{"item": "milk"'
    assert sent[3] == {"content": tool.message, "role": "tool", "tool_call_id": call.id}


def test_tool_that_was_not_declared(provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    provider.reset()
    provider.reply(ReplayProvider.completion(tool_calls=[("discount_of", {"item": "milk"})]))
    provider.reply(ReplayProvider.completion("There is no discount tool."))
    run = run_live(provider, httpbin)
    assert run.ending.reason == "no_tool_calls"
    tool = run.turns[0].tools[0]
    assert tool.name == "discount_of"
    assert tool.failure is not None
    assert tool.failure.caller_can_fix is True
    assert "there is no such tool" in tool.message
    assert "place_order, price_of" in tool.message
    assert provider.requests[1].body["messages"][-1]["content"] == tool.message
