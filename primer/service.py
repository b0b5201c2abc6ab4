"""Calling a service over HTTP: attempts, classification, backoff.

Every attempt is classified with three questions:

* ``retryable``: could the same call succeed if made again (a 429, a 503,
  a timeout) or will it fail the same way (a 404)?
* ``idempotent``: is making it twice the same as making it once? A price
  lookup is; placing an order is not.
* ``caller_can_fix``: would different arguments help (a 400, a 422)?

A call is retried only when it is retryable *and* retrying cannot do harm:
either it is idempotent, or the service cannot have acted on it (it was
refused before it arrived, or answered 429/503), or it carries an
idempotency key that the service is known to keep (chapter 13). A timeout on
an order is retryable in principle, but the order may have been received, so
it is not retried: the model is told what is uncertain instead.

A lookup is a ``GET`` (``ServiceCall.get``); an order is a ``POST``
(``ServiceCall.post``), which carries an ``Idempotency-Key`` header, the same
on every attempt of one call, so a service that keeps keys can answer a
repeat with the first answer instead of acting twice.

Waiting, three limits (chapter 8):

* ``RetryPolicy.timeout`` bounds each *phase* of an attempt: connecting,
  sending, and each wait for the next bytes of the answer. It does not bound
  the attempt: a service that sends a byte a second never trips a 2 s timeout.
* ``RetryPolicy.attempt_deadline``, when set, bounds the whole attempt: no
  phase may wait past it, and the answer is checked against it as it arrives.
* ``RetryPolicy.max_retry_after`` is the longest wait a ``Retry-After`` is
  honoured for. A service that asks for longer is not called again early,
  against its word: the call gives up and says how long it was asked to wait.

The transport and the clock are injected: mock runs pass the grocery
service's ``MockTransport`` and a ``VirtualClock`` and never sleep.
"""

from __future__ import annotations

import email.utils
import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from primer.clock import Clock
from primer.errors import ServiceFailed, quoted
from primer.http_record import SetUp, record_request, record_response
from primer.redact import Redactor
from primer.trace import Attempt, Backoff, Failure, Timing

__all__ = [
    "IDEMPOTENCY_KEY",
    "RetryPolicy",
    "ServiceCall",
    "ServiceClient",
    "ServiceScript",
    "classify_status",
    "numbered_keys",
    "random_key",
    "retry_delay",
]

# --8<-- [start:rules]
# 429 and 503 say "not now" before doing anything: safe to repeat even for
# a call that is not idempotent. Other 5xx answers may come after the service
# acted; a 4xx is a refusal, so the service did not act.
_REFUSED_UNDONE = frozenset({429, 503})
_RETRYABLE = frozenset({408, 425, 429, 500, 502, 503, 504})
_CALLER_CAN_FIX = frozenset({400, 409, 422})
# --8<-- [end:rules]

#: The header that names one intended operation, whatever its attempts (IETF
#: draft "The Idempotency-Key HTTP Header Field"; Stripe's API).
IDEMPOTENCY_KEY = "idempotency-key"

#: httpbin's endpoint that answers each method, where a scenario's script
#: names no path.
_ECHO = {"GET": "/get", "POST": "/post"}


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, how long to wait for each and between them."""

    max_attempts: int = 3
    #: First wait; doubled before each further attempt.
    backoff: float = 0.05
    #: The longest wait a ``Retry-After`` header is honoured for. A service
    #: that asks for longer is not retried: retrying sooner would go against
    #: its word, so the call gives up and says how long it was asked to wait.
    max_retry_after: float = 2.0
    #: Seconds each phase of an attempt may wait: connecting, sending, and
    #: each wait for the next bytes of the answer (httpx's timeout). Not the
    #: attempt as a whole: that is ``attempt_deadline``.
    timeout: float = 2.0
    #: Seconds the whole attempt may take, first byte sent to last received;
    #: None leaves only the per-phase ``timeout``.
    attempt_deadline: float | None = None
    #: Whether the service is known to keep idempotency keys (it answers a
    #: repeated key with the first call's answer and does not act again).
    #: Only then is a keyed call that may have taken effect sent again, with
    #: the same key. The client cannot check this: it is the service's promise.
    trust_idempotency_keys: bool = False

    def __post_init__(self) -> None:
        if self.attempt_deadline is not None and not self.attempt_deadline > 0:
            raise ValueError(f"attempt_deadline must be a number of seconds above 0, not {self.attempt_deadline!r}.")


@dataclass
class ServiceScript:
    """Which service path each attempt goes to, in order; the last repeats.

    Scenarios use httpbin's endpoints to make the service misbehave on cue:
    ``ServiceScript(["/status/429", "/get"])`` is busy once, then answers.
    With no paths, every attempt goes to httpbin's endpoint for its method:
    ``/get`` for a lookup, ``/post`` for an order.
    """

    paths: Sequence[str] = ()
    _used: int = 0

    def next_path(self, method: str = "GET") -> str:
        """The path for the next attempt, made with ``method``."""
        if not self.paths:
            return _ECHO.get(method, "/anything")
        path = self.paths[min(self._used, len(self.paths) - 1)]
        self._used += 1
        return path


def random_key() -> str:
    """A fresh idempotency key: a random UUID, as the live client sends."""
    return str(uuid.uuid4())


def numbered_keys(seed: str) -> Callable[[], str]:
    """Idempotency keys that are the same every run (for mock runs): UUIDs named by ``seed`` and a count."""
    count = 0

    def next_key() -> str:
        nonlocal count
        count += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"primer:{seed}:{count}"))

    return next_key


# --8<-- [start:classify]
def classify_status(service: str, status: int, *, idempotent: bool) -> Failure:
    """What an HTTP error status means for retrying."""
    return Failure(
        message=f"{quoted(service)} answered {quoted(status)}",
        retryable=status in _RETRYABLE,
        idempotent=idempotent,
        caller_can_fix=status in _CALLER_CAN_FIX,
    )


def retry_delay(policy: RetryPolicy, before_attempt: int, retry_after: str | None) -> Backoff | None:
    """How long to wait before an attempt: what ``Retry-After`` says if given, else the backoff.

    None when ``Retry-After`` asks for longer than ``policy.max_retry_after``:
    the caller gives up rather than call again before the service said to.
    """
    if retry_after:
        seconds = _parse_retry_after(retry_after)
        if seconds is not None:
            if seconds > policy.max_retry_after:
                return None
            return Backoff(seconds=round(seconds, 3), before_attempt=before_attempt, source="retry-after")
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


# --8<-- [end:classify]


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
    #: Makes the idempotency key of each call that is not idempotent.
    new_key: Callable[[], str] = random_key
    #: Sent with every request, as a protocol on top of HTTP asks (MCP's ``accept``, chapter 19).
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        headers = {**self.headers, **({"authorization": f"Bearer {self.token}"} if self.token else {})}
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
    response: httpx.Response | None = None
    #: The answer's body, decoded, as far as it came.
    content: bytes = b""
    retry_after: str | None = None
    #: False when the service may have acted on a call that failed.
    safe_to_repeat: bool = True


class _PastDeadline(Exception):
    """The attempt's deadline passed while the answer was still coming."""


# --8<-- [start:call]
@dataclass
class ServiceCall:
    """The service as one tool call sees it: its attempts are recorded here."""

    client: ServiceClient
    steps: list[Attempt | Backoff] = field(default_factory=list)
    outside_ms: float = 0.0

    def get(self, params: Mapping[str, str | int], *, idempotent: bool) -> Any:
        """GET with the retry rules; the parsed JSON body, or ServiceFailed."""
        return self._call("GET", idempotent=idempotent, params=params)

    def post(self, body: Mapping[str, Any], *, idempotent: bool = False) -> Any:
        """POST a JSON body with the retry rules; the parsed JSON body, or ServiceFailed.

        A call that is not idempotent carries an ``Idempotency-Key``, the
        same on every attempt of this call: a service that keeps keys answers
        a repeat with the first answer instead of acting twice.
        """
        key = None if idempotent else self.client.new_key()
        return self._call("POST", idempotent=idempotent, body=body, key=key)

    def _call(
        self,
        method: str,
        *,
        idempotent: bool,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
        key: str | None = None,
    ) -> Any:
        policy = self.client.policy
        # A repeat with the same key is answered, not acted on: if the service keeps keys.
        keyed = key is not None and policy.trust_idempotency_keys
        # Whether some attempt so far may have been acted on: once one may have, the call stays uncertain.
        uncertain = False
        attempt = 0
        while True:
            attempt += 1
            outcome = self._attempt(attempt, method, params, body, key, idempotent=idempotent)
            if outcome.failure is None:
                return self._body()
            failure = outcome.failure
            acted = not (failure.idempotent or outcome.safe_to_repeat)
            uncertain = uncertain or acted
            if not (failure.retryable and (keyed or not acted) and attempt < policy.max_attempts):
                raise ServiceFailed(failure, may_have_taken_effect=uncertain)
            backoff = retry_delay(policy, attempt + 1, outcome.retry_after)
            if backoff is None:
                too_long = self._asked_too_long(failure, outcome.retry_after or "")
                raise ServiceFailed(too_long, may_have_taken_effect=uncertain)
            backoff.start_ms = round(self.client.clock.now() * 1000, 3)
            self.steps.append(backoff)
            self.client.clock.sleep(backoff.seconds)

    def _body(self) -> Any:
        last = self.steps[-1]
        return last.response.json_body if isinstance(last, Attempt) and last.response is not None else None

    def _asked_too_long(self, failure: Failure, retry_after: str) -> Failure:
        """The failure, saying the service asked for a longer wait than this client gives it."""
        limit = self.client.policy.max_retry_after
        longer = failure.model_copy(
            update={
                "message": f"{failure.message} and asked for a wait of {quoted(retry_after)} seconds, "
                f"longer than this client waits ({limit:g} s)"
            }
        )
        # The attempt's record says why nobody tried again.
        last = self.steps[-1]
        if isinstance(last, Attempt):
            last.failure = longer
        return longer

    def _attempt(
        self,
        number: int,
        method: str,
        params: Mapping[str, str | int] | None,
        body: Mapping[str, Any] | None,
        key: str | None,
        *,
        idempotent: bool,
    ) -> _Outcome:
        client, clock = self.client, self.client.clock
        # A scripted path may carry a query of its own (httpbin's /drip?duration=5): httpx would
        # replace it with the call's parameters, so the two are merged, the path's first.
        path, _, query = client.script.next_path(method).partition("?")
        merged = {**dict(httpx.QueryParams(query)), **(params or {})}
        request = client._http.build_request(
            method,
            path,
            params=merged or None,
            json=dict(body) if body is not None else None,
            headers={IDEMPOTENCY_KEY: key} if key is not None else None,
        )
        url = str(request.url)
        # Credentials in this URL stay out of the answer's record too (an echo repeats them).
        redactor = client.redactor.with_url_credentials(url)
        recorded = record_request(
            request.method, url, request.headers.multi_items(), request.content, redactor=redactor
        )
        record = Attempt(number=number, request=recorded)
        self.steps.append(record)
        setup = SetUp(clock)
        started = clock.now()
        outcome = self._send(request, idempotent, setup)
        elapsed = (clock.now() - started) * 1000
        # The transport's time is the service's (opening the connection is part of it,
        # and ``setup_ms`` says how much); building and recording is ours.
        record.timing = Timing(start_ms=started * 1000, total_ms=elapsed, outside_ms=elapsed, setup_ms=setup.ms)
        self.outside_ms += elapsed
        record.failure = outcome.failure
        if outcome.response is not None:
            response = outcome.response
            record.response = record_response(
                response.status_code, response.headers.multi_items(), outcome.content, redactor=redactor
            )
        return outcome

    def _send(self, request: httpx.Request, idempotent: bool, setup: SetUp) -> _Outcome:
        name = quoted(self.client.name)
        clock, deadline = self.client.clock, self.client.policy.attempt_deadline
        started = clock.now()
        if deadline is not None:
            _bound(request, clock, started, deadline)
        setup.watch(request.extensions)  # after the deadline's listener, which it passes every event on to
        try:
            response = self.client._http.send(request, stream=True)
            try:
                content = b"".join(_pieces(response, clock, started, deadline))
            finally:
                response.close()
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
        except (httpx.TimeoutException, _PastDeadline):
            if deadline is not None and clock.now() - started >= deadline:
                message = f"{name} did not finish answering within the {deadline:g} s deadline"
            else:
                message = f"{name} did not answer in time"
            if not idempotent:
                message += ", and the call may have been received"
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
        if response.is_success:
            return _Outcome(response=response, content=content)
        return _Outcome(
            classify_status(self.client.name, response.status_code, idempotent=idempotent),
            response=response,
            content=content,
            retry_after=response.headers.get("retry-after"),
            safe_to_repeat=response.status_code < 500 or response.status_code in _REFUSED_UNDONE,
        )


# --8<-- [end:call]


#: The shortest limit a phase is given once its deadline has all but passed:
#: a socket read with no timeout at all would wait for ever.
_SOONEST = 0.001


def _bound(request: httpx.Request, clock: Clock, started: float, deadline: float) -> None:
    """Keep every wait of the attempt inside its deadline.

    No phase may wait longer than the whole deadline; and before each phase
    begins (httpcore reports it through the ``trace`` extension) its limit
    shrinks to the time left, so connecting slowly leaves less time to read.
    """
    timeouts: dict[str, float] = {
        phase: deadline if limit is None else min(limit, deadline)
        for phase, limit in request.extensions.get("timeout", {}).items()
    }
    request.extensions["timeout"] = timeouts

    def shrink(event: str, info: object) -> None:  # httpcore's trace signature: (event name, details)
        if event.endswith(".started"):
            left = max(deadline - (clock.now() - started), _SOONEST)
            for phase, limit in timeouts.items():
                timeouts[phase] = min(limit, left)

    request.extensions["trace"] = shrink


def _pieces(response: httpx.Response, clock: Clock, started: float, deadline: float | None) -> Iterator[bytes]:
    """The body, decoded, as it arrives; a piece that arrives at or past the deadline is ``_PastDeadline``.

    Late is late: an answer that is still arriving when the deadline passes
    did not finish within it. The check is made as each piece arrives, so a
    service that trickles its answer is stopped at the first piece past the
    deadline (within one wait for a piece, which ``_bound`` keeps inside the
    time that was left when the body began).
    """
    for piece in response.iter_bytes():
        if deadline is not None and clock.now() - started >= deadline:
            raise _PastDeadline
        yield piece
