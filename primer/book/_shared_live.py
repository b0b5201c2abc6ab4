"""Live runs over one SDK import and one set of connections, shared by every thread of the pool.

Each scenario importing the SDK and opening its own connections cost about 1.5 s before its first
request. ``httpx``'s transports are safe to share between threads; each scenario still wraps them
in a recording client of its own (``primer.runner.live_environment``), so its trace holds its own
exchanges::

    with shared_live() as runner:
        run = runner(scenario, settings)      # from any thread
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import httpx2
import openai  # noqa: F401 - the SDK, imported here once rather than in every thread

from primer.runner import live_environment, run_scenario
from primer.scenario import Scenario
from primer.settings import Settings
from primer.trace import ScenarioRun

__all__ = ["shared_live"]


class _Kept:
    """A shared transport as one scenario's client holds it: closing that client does not close it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def handle_request(self, request: Any) -> Any:
        """Send through the shared transport."""
        return self.inner.handle_request(request)

    def close(self) -> None:
        """Let go, leaving it open for the other scenarios: ``shared_live`` closes it."""


class _KeptModelTransport(_Kept, httpx2.BaseTransport):
    """The shared transport to the provider (the SDK's ``httpx2``)."""


class _KeptServiceTransport(_Kept, httpx.BaseTransport):
    """The shared transport to the service."""


@contextmanager
def shared_live() -> Iterator[Callable[[Scenario, Settings], ScenarioRun]]:
    """A live runner (``primer.book._run.LiveRunner``) over one SDK import and one set of connections."""
    model, service = httpx2.HTTPTransport(), httpx.HTTPTransport()
    kept_model, kept_service = _KeptModelTransport(model), _KeptServiceTransport(service)

    def run(scenario: Scenario, settings: Settings) -> ScenarioRun:
        environment = live_environment(scenario, settings, model_transport=kept_model, service_transport=kept_service)
        return run_scenario(scenario, "live", settings, environment=environment)

    try:
        yield run
    finally:
        model.close()
        service.close()
