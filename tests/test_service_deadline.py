"""Per-phase timeouts against a deadline for the whole attempt, on a real socket.

The mock service plays ``/delay`` and ``/drip`` on a virtual clock; these
tests check that the same rules hold over a real connection to the local
httpbin (tests/servers/service.py), with httpcore reading the timeouts, so
the times are real and kept short.
"""

from __future__ import annotations

import time

import pytest

from primer.clock import RealClock
from primer.errors import ServiceFailed
from primer.service import RetryPolicy, ServiceClient, ServiceScript
from primer.trace import Attempt
from tests.servers.service import LocalHttpbin


def client_for(httpbin: LocalHttpbin, path: str, policy: RetryPolicy) -> ServiceClient:
    return ServiceClient(base_url=httpbin.url, clock=RealClock(), policy=policy, script=ServiceScript([path]))


def test_a_trickle_outlasts_a_per_phase_timeout_on_a_real_socket(httpbin: LocalHttpbin) -> None:
    # Bytes at 0, 0.3, 0.6 and 0.9 s: no wait reaches the 0.5 s timeout, and the attempt takes 0.9 s.
    client = client_for(httpbin, "/drip?duration=1.2&numbytes=4", RetryPolicy(timeout=0.5, max_attempts=1))
    started = time.perf_counter()
    try:
        client.session().get({"item": "milk"}, idempotent=True)
    finally:
        client.close()
    assert time.perf_counter() - started >= 0.85


def test_a_deadline_stops_a_real_slow_answer_at_the_deadline(httpbin: LocalHttpbin) -> None:
    # The per-phase timeout (5 s) would wait for the whole 2 s delay; the 0.4 s deadline does not.
    client = client_for(httpbin, "/delay/2", RetryPolicy(timeout=5.0, attempt_deadline=0.4, max_attempts=1))
    call = client.session()
    started = time.perf_counter()
    try:
        with pytest.raises(ServiceFailed) as raised:
            call.get({"item": "milk"}, idempotent=True)
    finally:
        client.close()
    elapsed = time.perf_counter() - started
    assert 0.35 <= elapsed < 1.5
    assert raised.value.failure.message.endswith("did not finish answering within the 0.4 s deadline")


def test_a_deadline_stops_a_real_trickle_within_one_wait_of_the_deadline(httpbin: LocalHttpbin) -> None:
    # Bytes 0.3 s apart for 1.5 s; the 0.5 s deadline is caught at the first byte past it.
    path = "/drip?duration=1.5&numbytes=5"
    client = client_for(httpbin, path, RetryPolicy(timeout=1.0, attempt_deadline=0.5, max_attempts=1))
    call = client.session()
    started = time.perf_counter()
    try:
        with pytest.raises(ServiceFailed):
            call.get({"item": "milk"}, idempotent=True)
    finally:
        client.close()
    elapsed = time.perf_counter() - started
    assert 0.45 <= elapsed < 1.2, "stopped near the deadline, not after the whole 1.2 s trickle"
    (attempt,) = call.steps
    assert isinstance(attempt, Attempt)
    assert attempt.response is None
