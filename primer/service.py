"""Calling a service over HTTP: attempts, classification, backoff.

Every attempt is classified with three questions:

* ``retryable``: could the same call succeed if made again (a 429, a 503,
  a timeout) or will it fail the same way (a 404)?
* ``idempotent``: is making it twice the same as making it once? A price
  lookup is; placing an order is not.
* ``caller_can_fix``: would different arguments help (a 400, a 422)?

A call is retried only when it is retryable *and* retrying cannot do harm:
either it is idempotent, or the service cannot have acted on it (it was
refused before it arrived, or answered 429/503). A timeout on an order is
retryable in principle, but the order may have been received, so it is not
retried: the model is told what is uncertain instead.

The transport and the clock are injected: mock runs pass the grocery
service's ``MockTransport`` and a ``VirtualClock`` and never sleep.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from primer.clock import Clock
from primer.errors import ServiceFailed, quoted
from primer.http_record import record_request, record_response
from primer.redact import Redactor
from primer.trace import Attempt, Backoff, Failure, Timing

__all__ = ["RetryPolicy", "ServiceCall", "ServiceClient", "ServiceScript", "classify_status", "retry_delay"]

# 429 and 503 say "not now" before doing anything: safe to repeat even for
# a call that is not idempotent. Other 5xx answers may come after the service
# acted; a 4xx is a refusal, so the service did not act.
_REFUSED_UNDONE = frozenset({429, 503})
_RETRYABLE = frozenset({408, 425, 429, 500, 502, 503, 504})
_CALLER_CAN_FIX = frozenset({400, 409, 422})


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, how long to wait between them."""

    max_attempts: int = 3
    #: First wait; doubled before each further attempt.
    backoff: float = 0.05
    #: The most a ``Retry-After`` header is allowed to make us wait.
    max_retry_after: float = 2.0
    #: Seconds to wait for an answer (the seeds' 2 s).
    timeout: float = 2.0


@dataclass
class ServiceScript:
    """Which service path each attempt goes to, in order; the last repeats.

    Scenarios use httpbin's endpoints to make the service misbehave on cue:
    ``ServiceScript(["/status/429", "/get"])`` is busy once, then answers.
    """

    paths: Sequence[str] = ("/get",)
    _used: int = 0

    def next_path(self) -> str:
        """The path for the next attempt."""
        path = self.paths[min(self._used, len(self.paths) - 1)]
        self._used += 1
        return path


def classify_status(service: str, status: int, *, idempotent: bool) -> Failure:
    """What an HTTP error status means for retrying."""
    return Failure(
        message=f"{quoted(service)} answered {quoted(status)}",
        retryable=status in _RETRYABLE,
        idempotent=idempotent,
        caller_can_fix=status in _CALLER_CAN_FIX,
    )


def retry_delay(policy: RetryPolicy, before_attempt: int, retry_after: str | None) -> Backoff:
    """How long to wait before an attempt: ``Retry-After`` if given, capped."""
    if retry_after:
        seconds = _parse_retry_after(retry_after)
        if seconds is not None:
            return Backoff(
                seconds=round(min(seconds, policy.max_retry_after), 3),
                before_attempt=before_attempt,
                source="retry-after",
            )
    return Backoff(
        seconds=round(policy.backoff * 2 ** (before_attempt - 2), 3),
        before_attempt=before_attempt,
        source="backoff",
    )


def _parse_retry_after(value: str) -> float | None:
    # Either delta-seconds or an HTTP date (RFC 9110, 10.2.3).
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        # "nan" parses as a float: an untrusted header must not make the wait NaN.
        return None if math.isnan(seconds) else max(seconds, 0.0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = email.utils.parsedate_to_datetime(email.utils.formatdate(usegmt=True))
    return max((when - now).total_seconds(), 0.0)


@dataclass
class ServiceClient:
    """A client for one service: base URL, transport, clock and policy."""

    base_url: str
    clock: Clock
    transport: httpx.BaseTransport | None = None
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    #: Sent as ``Authorization: Bearer ...``; never recorded.
    token: str | None = None
    script: ServiceScript = field(default_factory=ServiceScript)
    redactor: Redactor = field(default_factory=Redactor)

    def __post_init__(self) -> None:
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        self._http = httpx.Client(
            base_url=self.base_url,
            transport=self.transport,
            headers=headers,
            timeout=self.policy.timeout,
        )
        self.redactor = self.redactor.with_secrets(self.token).with_url_credentials(self.base_url)

    @property
    def name(self) -> str:
        """How messages name the service: its origin, without any credential in it."""
        return self.redactor.url(self.base_url.rstrip("/"))

    def session(self) -> ServiceCall:
        """A fresh record for one tool call."""
        return ServiceCall(self)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()


@dataclass
class _Outcome:
    failure: Failure | None = None
    body: Any = None
    retry_after: str | None = None
    #: False when the service may have acted on a call that failed.
    safe_to_repeat: bool = True


@dataclass
class ServiceCall:
    """The service as one tool call sees it: its attempts are recorded here."""

    client: ServiceClient
    steps: list[Attempt | Backoff] = field(default_factory=list)
    outside_ms: float = 0.0

    def get(self, params: Mapping[str, str | int], *, idempotent: bool) -> Any:
        """GET with the retry rules; the parsed JSON body, or ServiceFailed."""
        policy = self.client.policy
        attempt = 0
        while True:
            attempt += 1
            outcome = self._attempt(attempt, params, idempotent=idempotent)
            if outcome.failure is None:
                return outcome.body
            failure = outcome.failure
            repeatable = failure.idempotent or outcome.safe_to_repeat
            if not (failure.retryable and repeatable and attempt < policy.max_attempts):
                raise ServiceFailed(failure, may_have_taken_effect=not repeatable)
            backoff = retry_delay(policy, attempt + 1, outcome.retry_after)
            self.steps.append(backoff)
            self.client.clock.sleep(backoff.seconds)

    def _attempt(self, number: int, params: Mapping[str, str | int], *, idempotent: bool) -> _Outcome:
        client, clock = self.client, self.client.clock
        request = client._http.build_request("GET", client.script.next_path(), params=dict(params))
        url = str(request.url)
        # Credentials in this URL stay out of the answer's record too (an echo repeats them).
        redactor = client.redactor.with_url_credentials(url)
        recorded = record_request(
            request.method, url, request.headers.multi_items(), request.content, redactor=redactor
        )
        record = Attempt(number=number, request=recorded)
        self.steps.append(record)
        started = clock.now()
        outcome = self._send(request, idempotent)
        elapsed = (clock.now() - started) * 1000
        # The transport's time is the service's; building and recording is ours.
        record.timing = Timing(total_ms=elapsed, outside_ms=elapsed)
        self.outside_ms += elapsed
        record.failure = outcome.failure
        if isinstance(outcome.body, httpx.Response):
            response = outcome.body
            record.response = record_response(
                response.status_code, response.headers.multi_items(), response.content, redactor=redactor
            )
            outcome.body = record.response.json_body
        return outcome

    def _send(self, request: httpx.Request, idempotent: bool) -> _Outcome:
        name = quoted(self.client.name)
        try:
            response = self.client._http.send(request)
        except httpx.ConnectTimeout:
            # Never connected: the service cannot have acted on it.
            return _Outcome(
                Failure(
                    message=f"{name} could not be reached in time",
                    retryable=True,
                    idempotent=idempotent,
                    caller_can_fix=False,
                )
            )
        except httpx.TimeoutException:
            if idempotent:
                message = f"{name} did not answer in time"
            else:
                message = f"{name} did not answer in time, and the call may have been received"
            return _Outcome(
                Failure(message=message, retryable=True, idempotent=idempotent, caller_can_fix=False),
                safe_to_repeat=False,
            )
        except httpx.ConnectError:
            return _Outcome(
                Failure(
                    message=f"{name} could not be reached", retryable=True, idempotent=idempotent, caller_can_fix=False
                )
            )
        except httpx.TransportError:
            return _Outcome(
                Failure(
                    message=f"{name} broke off the answer, and the call may have been received",
                    retryable=True,
                    idempotent=idempotent,
                    caller_can_fix=False,
                ),
                safe_to_repeat=False,
            )
        response.read()
        if response.is_success:
            return _Outcome(body=response)
        return _Outcome(
            classify_status(self.client.name, response.status_code, idempotent=idempotent),
            body=response,
            retry_after=response.headers.get("retry-after"),
            safe_to_repeat=response.status_code < 500 or response.status_code in _REFUSED_UNDONE,
        )
