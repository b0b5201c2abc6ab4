"""Run scenarios in mock or live mode and return their traces.

Mock mode wires a scenario to its scripted model, the grocery service's mock
transport and a virtual clock. Live mode wires it to the provider and the
service from the settings. Either way the scenario's loop runs the same code,
and an exception inside it ends that scenario (recorded), not the run.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from primer.agent import Agent
from primer.approval import ScriptedApprover
from primer.clock import Clock, RealClock, VirtualClock
from primer.errors import ConfigError
from primer.locator import ChapterLocator
from primer.mock_service import GroceryService
from primer.models.base import Model
from primer.models.mock import MockModel
from primer.offsets import place
from primer.redact import Redactor
from primer.scenario import Scenario
from primer.script_check import note_unused
from primer.service import RetryPolicy, ServiceClient, ServiceScript, numbered_keys
from primer.settings import DEFAULT_SERVICE_KEY, Settings
from primer.trace import ChapterRun, Ending, ErrorInfo, Message, Mode, ScenarioRun, Timing

if TYPE_CHECKING:
    import httpx
    import httpx2

__all__ = ["Environment", "error_run", "mock_environment", "run_chapter", "run_mock", "run_scenario"]

#: What live mode without a key says.
NEEDS_KEY = "Live mode needs PRIMER_API_KEY: set it to your provider's key and run again."
#: Where mock runs pretend the service lives (the seeds' httpbin).
MOCK_SERVICE_URL = "https://httpbin.org"


@dataclass
class Environment:
    """The model, service and clock one scenario run is wired to."""

    model: Model
    service: ServiceClient
    clock: Clock
    redactor: Redactor

    def close(self) -> None:
        """Release connections."""
        self.service.close()
        close = getattr(self.model, "close", None)
        if callable(close):
            close()


def mock_environment(scenario: Scenario, settings: Settings) -> Environment:
    """Scripted model, mock grocery service, virtual clock: no network, no sleeping."""
    clock = VirtualClock()
    redactor = Redactor([DEFAULT_SERVICE_KEY, *settings.secrets()])
    service = ServiceClient(
        base_url=MOCK_SERVICE_URL,
        clock=clock,
        transport=GroceryService(clock).transport(),
        policy=scenario.policy or RetryPolicy(),
        token=DEFAULT_SERVICE_KEY,
        script=ServiceScript(scenario.service),
        redactor=redactor,
        # Idempotency keys that are the same every run, as the rest of a mock trace is.
        new_key=numbered_keys(scenario.name),
    )
    return Environment(MockModel(scenario.mock, clock, scenario=scenario.name), service, clock, redactor)


def live_environment(
    scenario: Scenario,
    settings: Settings,
    *,
    clock: Clock | None = None,
    model_transport: httpx2.BaseTransport | None = None,
    service_transport: httpx.BaseTransport | None = None,
) -> Environment:
    """The provider and the service from the settings, on the real clock.

    ``clock`` is for tests: a ``VirtualClock`` makes the backoffs free while
    the wire stays real. The service's timeout is ``settings.service_timeout``
    (the seeds' 2 s unless set). ``model_transport`` and ``service_transport``
    stand in for the network under the recorders (``primer.replay`` answers
    from a recording through them); everything above them runs as live.
    """
    if settings.api_key is None:
        raise ConfigError(NEEDS_KEY)
    from primer.models.live import LiveModel  # the openai SDK is only needed live
    from primer.wire import RecordingClient

    clock = clock if clock is not None else RealClock()
    redactor = settings.redactor()
    http_client = None
    if model_transport is not None:
        http_client = RecordingClient(clock=clock, redactor=redactor, transport=model_transport)
    model = LiveModel.from_settings(settings, clock=clock, redactor=redactor, http_client=http_client)
    service = ServiceClient(
        base_url=settings.service_url,
        clock=clock,
        transport=service_transport,
        policy=dataclasses.replace(scenario.policy or RetryPolicy(), timeout=settings.service_timeout),
        token=settings.service_key.get_secret_value(),
        script=ServiceScript(scenario.service),
        redactor=redactor,
    )
    return Environment(model, service, clock, redactor)


EnvironmentFactory = Callable[[Scenario, Settings], Environment]
_FACTORIES: dict[str, EnvironmentFactory] = {"mock": mock_environment, "live": live_environment}


def run_scenario(
    scenario: Scenario,
    mode: Mode = "mock",
    settings: Settings | None = None,
    environment: Environment | None = None,
) -> ScenarioRun:
    """Run one scenario and return its trace; never raises for the scenario's faults.

    A ``CodeScenario`` (the author's own code) runs under the HTTP seam
    instead (``primer.code_runner``); an ``environment`` given for it is
    closed unused, since its code builds its own clients.
    """
    settings = settings or Settings()
    # Not imported here: a book of Agent scenarios never loads the seam, its services and httpx2.
    # A CodeScenario exists only once its module is loaded.
    code = sys.modules.get("primer.code_scenario")
    if code is not None and isinstance(scenario, code.CodeScenario):
        if environment is not None:
            environment.close()
        from primer.code_runner import run_code  # the seam and the SDK: only for code scenarios

        return run_code(scenario, mode, settings)
    env = environment or _FACTORIES[mode](scenario, settings)
    agent = Agent(
        model=env.model,
        tools=scenario.tools,
        clock=env.clock,
        service=env.service,
        settings=scenario.settings,
        redactor=env.redactor,
        # The person asked before a tool with side effects runs is scripted, mock and live (chapter 14).
        approver=ScriptedApprover(scenario.approvals, scenario=scenario.name) if scenario.approvals else None,
    )
    context = [Message(role="system", content=scenario.system), Message(role="human", content=scenario.prompt)]
    started = env.clock.now()
    # Only a live run has a moment: a mock run is the same whenever it runs.
    began = datetime.now(UTC) if mode == "live" else None
    error: ErrorInfo | None = None
    try:
        ending = scenario.loop(agent, context, scenario.max_turns)
    except Exception as exc:  # noqa: BLE001 - a broken scenario is shown, not fatal
        error = ErrorInfo.of(exc, env.redactor.text)
        ending = Ending(reason="scenario_error", detail=f"{error.type}: {error.message}")
    finally:
        env.close()
    run = ScenarioRun(
        name=scenario.name,
        mode=mode,
        title=scenario.about or None,
        tools=[t.name for t in scenario.tools],
        settings=dict(scenario.settings),
        timing=Timing(total_ms=(env.clock.now() - started) * 1000),
        started_at=began,
        simulated_seconds=round(getattr(env.clock, "simulated", 0.0), 6),
        turns=agent.turns,
        transcript=context,
        ending=ending,
        error=error,
    )
    # Every part was stamped with the clock's reading: offsets from the scenario's start.
    place(run, started * 1000)
    if mode == "mock":
        # A script the run did not use up tells a longer story than the trace: say so.
        note_unused(run, scenario.mock, scenario.approvals, scenario.undeclared)
    return run


def error_run(name: str, mode: Mode, error: BaseException | ErrorInfo | str, redactor: Redactor) -> ScenarioRun:
    """A scenario run that ended in ``scenario_error``: an exception, or a sentence saying why (a time limit).

    An ``ErrorInfo`` is an exception described already, as a worker in another interpreter sends one.
    """
    if isinstance(error, ErrorInfo):
        info = error
    elif isinstance(error, BaseException):
        info = ErrorInfo.of(error, redactor.text)
    else:
        info = ErrorInfo(type="TimeoutError", message=redactor.text(error))
    ending = Ending(reason="scenario_error", detail=f"{info.type}: {info.message}")
    return ScenarioRun(name=name, mode=mode, ending=ending, error=info)


#: Seconds after which a mock scenario still running is said to be: it takes milliseconds, so one that has run
#: this long is waiting or looping in its own code, and a build that ran it would otherwise say nothing at all.
SLOW_MOCK = 30.0


def run_mock(
    chapter: str, scenarios: Sequence[Scenario], settings: Settings, *, slow: Callable[[str], object] | None = None
) -> ChapterRun:
    """The chapter's scenarios in mock mode; one that cannot even start is its ``error_run``.

    ``slow`` (by default, standard error: a worker's output is its JSON) is told, naming it, of a scenario still
    running after ``SLOW_MOCK`` seconds.
    """
    runs = []
    for scenario in scenarios:
        said = f"{chapter} / {scenario.name} (mock) has run for {SLOW_MOCK:g} s, where a mock run takes milliseconds:"
        said += " its code may wait or loop for ever (Ctrl+C stops the build; the traceback shows where)"
        watch = threading.Timer(SLOW_MOCK, slow or functools.partial(print, file=sys.stderr), [said])
        watch.daemon = True  # never keeps the process alive
        watch.start()
        try:
            runs.append(run_scenario(scenario, "mock", settings))
        except Exception as error:  # noqa: BLE001 - shown on the page, never fatal
            runs.append(error_run(scenario.name, "mock", error, settings.redactor()))
        finally:
            watch.cancel()
    return ChapterRun(chapter=chapter, mode="mock", model="mock", scenarios=runs)


def run_chapter(
    chapter: str,
    mode: Mode = "mock",
    *,
    only: str | None = None,
    settings: Settings | None = None,
    chapters: ChapterLocator | None = None,
    time_limit: float = 300.0,
    progress: Callable[[str], None] | None = None,
) -> ChapterRun:
    """Run a chapter's scenarios (or one of them) in one mode.

    The chapter is looked for in ``chapters``, by default the package the
    settings name (``PRIMER_CHAPTERS``, else ``primer.chapters``). Live, the
    scenarios run through the book build's pool (``primer.live_pool``), one at
    a time and in order, each within ``time_limit`` seconds, ``progress`` told
    how it goes; without a key, ``ConfigError`` says what to set.
    """
    settings = settings or Settings()
    chapters = chapters or ChapterLocator(settings.chapters_package())
    scenarios = [chapters.scenario(chapter, only)] if only is not None else chapters.scenarios(chapter)
    if mode == "mock":
        return run_mock(chapter, scenarios, settings)
    if settings.api_key is None:  # every scenario would fail alike: said once, as a usage error
        raise ConfigError(NEEDS_KEY)
    from primer.live_pool import run_live_jobs

    # Only live runs are dated: a mock run is the same whenever it runs.
    recorded = datetime.now(UTC).isoformat(timespec="seconds")
    jobs = [(chapter, scenario) for scenario in scenarios]
    runs = run_live_jobs(jobs, settings, time_limit=time_limit, progress=progress, workers=1)
    return ChapterRun(chapter=chapter, mode=mode, recorded_at=recorded, model=settings.model, scenarios=runs)
