"""Running a ``CodeScenario``: the code under the seam, its trace rebuilt from the wire.

Three wirings, one way of running (``run_code``):

* **mock** (``mock_wiring``): the scripted provider answers the model
  requests from the scenario's ``mock`` list and each service's mock
  answers its own; a ``VirtualClock`` times them, so a scripted stream's
  pacing costs no real time. Nothing leaves the machine: a request to any
  other host stops the code with an error naming its URL.
* **live** (``live_wiring``): the provider and model the settings name, each
  service at its live URL (``PRIMER_SERVICES``, else the one it declares);
  every request goes over the real transport, recorded.
* **replay** (``primer.replay``): every request answered from a recording.

Whatever the code does wrong ends its scenario, never the run: an exception
it raises, a request the seam stopped (an unmocked host, the script run
out), a function that never called the model, a tool result that answers no
call. Each is a ``scenario_error`` whose detail names it, so the page shows
it and the book's build warns.
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from primer.clock import Clock, RealClock, VirtualClock
from primer.code_scenario import MOCK_API_KEY, CodeScenario, Reach
from primer.errors import ConfigError
from primer.from_wire import rebuild
from primer.offsets import place
from primer.redact import Redactor
from primer.script_check import note_unused
from primer.scripted_provider import MOCK_PROVIDER_URL, ScriptedProvider
from primer.seam import PROVIDER, Answerer, Seam, SeamStop
from primer.services import ServiceAnswerer
from primer.settings import Settings
from primer.trace import Ending, ErrorInfo, Mode, Note, ScenarioRun

__all__ = ["SERVICES_NOTE", "Wiring", "live_wiring", "mock_wiring", "run_code"]

#: The note on a run's first model call that says where each service was (a replay reads it back).
SERVICES_NOTE = "services the code was given"


@dataclass
class Wiring:
    """Where the code's requests go, and who answers them."""

    base_url: str
    api_key: str
    model: str
    services: dict[str, str]
    answerers: dict[str, Answerer]
    live: bool
    clock: Clock
    redactor: Redactor
    timeout: float = 60.0
    #: The scripted provider, when there is one (its script's use is checked after the run).
    provider: ScriptedProvider | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def mock_wiring(scenario: CodeScenario, settings: Settings) -> Wiring:
    """The scripted provider and the services' mocks, on a virtual clock."""
    provider = ScriptedProvider(scenario.mock, scenario=scenario.name)
    answerers: dict[str, Answerer] = {PROVIDER: provider}
    answerers.update({service.name: ServiceAnswerer(service) for service in scenario.services})
    return Wiring(
        base_url=MOCK_PROVIDER_URL,
        api_key=MOCK_API_KEY,
        model="mock",
        services={service.name: service.mock_url() for service in scenario.services},
        answerers=answerers,
        live=False,
        clock=VirtualClock(),
        redactor=Redactor([MOCK_API_KEY, *settings.secrets()]),
        provider=provider,
    )


def live_wiring(scenario: CodeScenario, settings: Settings) -> Wiring:
    """The provider and services the settings name, on the real clock."""
    if settings.api_key is None:
        raise ConfigError("Live mode needs PRIMER_API_KEY: set it to your provider's key and run again.")
    return Wiring(
        base_url=settings.base_url,
        api_key=settings.api_key.get_secret_value(),
        model=settings.model,
        services={service.name: service.live_url(settings.services) for service in scenario.services},
        answerers={},
        live=True,
        clock=RealClock(),
        redactor=settings.redactor(),
        timeout=settings.model_timeout,
    )


def _router(wiring: Wiring) -> Callable[[str], str | None]:
    parties = [(PROVIDER, wiring.base_url), *wiring.services.items()]
    # The longest root first: a service under the provider's host is still the service.
    parties.sort(key=lambda party: len(party[1]), reverse=True)

    def route(url: str) -> str | None:
        for party, base in parties:
            root = base.rstrip("/")
            if url == root or url.startswith((root + "/", root + "?")):
                return party
        return None

    return route


def run_code(scenario: CodeScenario, mode: Mode, settings: Settings, wiring: Wiring | None = None) -> ScenarioRun:
    """Run the scenario's code once under the seam; its trace. Never raises for the code's faults."""
    if wiring is None:
        wiring = mock_wiring(scenario, settings) if mode == "mock" else live_wiring(scenario, settings)
    reach = Reach(
        base_url=wiring.base_url,
        api_key=wiring.api_key,
        model=wiring.model,
        services=dict(wiring.services),
        timeout=wiring.timeout,
    )
    seam = Seam(_router(wiring), wiring.answerers, live=wiring.live, clock=wiring.clock, redactor=wiring.redactor)
    if wiring.provider is not None:
        wiring.provider.seam = seam
    began = datetime.now(UTC) if mode == "live" else None
    started = wiring.clock.now()
    raised: BaseException | None = None
    with seam:
        try:
            _call(scenario.code, reach)
        except SeamStop:
            pass  # the seam has the reason
        except BaseExceptionGroup as group:  # a framework's task group: what is inside counts
            raised = _inside(group)
        except Exception as error:  # noqa: BLE001 - the code's fault is shown, not fatal
            raised = error
    run = _run(scenario, mode, seam, wiring, raised)
    run.started_at = began
    # Through the model, so the value is rounded as every recorded duration is
    # (a JSON round trip then gives the same trace back).
    total_ms = (wiring.clock.now() - started) * 1000
    run.timing = run.timing.model_validate({**run.timing.model_dump(), "total_ms": total_ms})
    run.simulated_seconds = round(getattr(wiring.clock, "simulated", 0.0), 6)
    place(run, started * 1000)
    if mode == "mock" and wiring.provider is not None:
        note_unused(run, scenario.mock, undeclared=scenario.undeclared)
    return run


def _call(code: Callable[[Reach], Any], reach: Reach) -> None:
    """Call the code, sync or async; close the clients it was given."""
    try:
        result = code(reach)
        if inspect.isawaitable(result):
            asyncio.run(_closing(result, reach))
    finally:
        if "openai" in vars(reach):
            reach.openai.close()


async def _closing(result: Awaitable[Any], reach: Reach) -> None:
    try:
        await result
    finally:
        if "async_openai" in vars(reach):
            await reach.async_openai.close()


def _inside(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The error a task group carried: a stop is the seam's; anything that is no error goes on up."""
    leaves: list[BaseException] = []

    def walk(error: BaseException) -> None:
        if isinstance(error, BaseExceptionGroup):
            for inner in error.exceptions:
                walk(inner)
        else:
            leaves.append(error)

    walk(group)
    for leaf in leaves:
        if not isinstance(leaf, Exception | SeamStop):
            raise leaf  # an interrupt, or a replay's own stop
    return next((leaf for leaf in leaves if isinstance(leaf, Exception)), None)


def _run(scenario: CodeScenario, mode: Mode, seam: Seam, wiring: Wiring, raised: BaseException | None) -> ScenarioRun:
    story = rebuild(seam.crossings, mode, wiring.redactor)
    redactor = wiring.redactor
    error: ErrorInfo | None = None
    if seam.error is not None:
        fault: BaseException | None = seam.error
    else:
        fault = raised
    if fault is not None:
        message = redactor.text(str(fault))
        error = ErrorInfo(type=type(fault).__name__, message=message)
        if fault is raised:
            error.traceback = redactor.text("".join(traceback.format_exception(fault)))
        ending = Ending(reason="scenario_error", detail=f"{error.type}: {message}")
    elif not story.turns:
        message = (
            f"The code of {scenario.name} returned without calling the model: send its requests through "
            "reach.openai or reach.async_openai, or point its framework at reach.base_url."
        )
        error = ErrorInfo(type="NoModelCall", message=message)
        ending = Ending(reason="scenario_error", detail=f"NoModelCall: {message}")
    else:
        ending = story.ending()
        if ending.failed and story.problem is not None:
            error = ErrorInfo(type="WireStory", message=story.problem)
    if story.turns and wiring.services:
        story.turns[0].model_call.notes.append(Note(label=SERVICES_NOTE, data=dict(wiring.services)))
    return ScenarioRun(
        name=scenario.name,
        mode=mode,
        title=scenario.about or None,
        tools=story.tools,
        settings=story.settings,
        turns=story.turns,
        transcript=story.transcript,
        ending=ending,
        error=error,
    )


def services_of(run: ScenarioRun) -> Mapping[str, str]:
    """Where each service was in a recorded run (from ``SERVICES_NOTE``)."""
    for turn in run.turns[:1]:
        for note in turn.model_call.notes:
            if note.label == SERVICES_NOTE:
                return {str(k): str(v) for k, v in note.data.items()}
    return {}
