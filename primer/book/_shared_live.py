"""Live runs whose SDK import and connections are made once and shared by every thread.

Each scenario of a pool of live runs importing the SDK and opening its own connections cost about a
second and a half before the first request. ``SharedLive`` does that once, before the pool starts::

    with SharedLive() as runner:
        run = runner(scenario, settings)      # from any thread

``httpx``'s transports are safe to share between threads; each scenario still wraps them in a
recording client of its own (``primer.runner.live_environment``), so its trace holds its own exchanges.
"""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import openai  # noqa: F401 - the SDK, imported here once rather than in every thread

from primer.runner import live_environment, run_scenario
from primer.scenario import Scenario
from primer.settings import Settings
from primer.trace import ScenarioRun

__all__ = ["SharedLive"]


class _Kept:
    """A shared transport as one scenario's client holds it: closing that client does not close it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def handle_request(self, request: Any) -> Any:
        """Send through the shared transport."""
        return self.inner.handle_request(request)

    def close(self) -> None:
        """Let go, leaving it open for the other scenarios: ``SharedLive.close`` closes it."""


class _KeptModelTransport(_Kept, httpx2.BaseTransport):
    """The shared transport to the provider (the SDK's ``httpx2``)."""


class _KeptServiceTransport(_Kept, httpx.BaseTransport):
    """The shared transport to the service."""


class SharedLive:
    """A live runner (``LiveRunner``) over one SDK import and one set of connections."""

    def __init__(self) -> None:
        self._model = httpx2.HTTPTransport()
        self._service = httpx.HTTPTransport()
        self._kept_model = _KeptModelTransport(self._model)
        self._kept_service = _KeptServiceTransport(self._service)

    def __enter__(self) -> SharedLive:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __call__(self, scenario: Scenario, settings: Settings) -> ScenarioRun:
        """Run one scenario live over the shared connections."""
        environment = live_environment(
            scenario, settings, model_transport=self._kept_model, service_transport=self._kept_service
        )
        return run_scenario(scenario, "live", settings, environment=environment)

    def close(self) -> None:
        """Close the shared connections."""
        self._model.close()
        self._service.close()
