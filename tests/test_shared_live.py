"""The live pool's runs share one SDK import and one set of connections, and each records its own.

Against the loopback servers: the replay provider answers ch09's scenarios
with the seed's recorded traffic, a local httpbin is the service.
"""

from __future__ import annotations

import socket
import time

import pytest

from primer.chapters import scenarios_of
from primer.errors import ConfigError
from primer.live_pool import run_live_jobs, shared_live
from primer.runner import run_chapter
from primer.settings import Settings
from tests.servers import live_settings
from tests.servers.provider import ReplayProvider, scenario_file
from tests.servers.service import LocalHttpbin

pytestmark = pytest.mark.slow

CHAPTER = "ch09_who_retries"


def test_the_pool_shares_its_connections_and_each_trace_holds_its_own_exchanges(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    scenarios = scenarios_of(CHAPTER)
    recorded = {s.name: replay_provider.load(scenario_file(CHAPTER, s.name)) for s in scenarios}
    settings = live_settings(replay_provider, httpbin, api_key="sk-shared-0123456789", service_key="svc-shared-0123")
    runs = run_live_jobs([(CHAPTER, s) for s in scenarios], settings, None, time_limit=60, progress=lambda _p: None)
    assert [run.name for run in runs] == [s.name for s in scenarios]
    for run in runs:
        assert not run.ending.failed, run.ending
        # One model exchange per recorded turn: no other scenario's request in this trace.
        assert len(run.turns) == len(recorded[run.name])
        prompts = {
            exchange.request.json_body["messages"][1]["content"]
            for turn in run.turns
            for exchange in turn.model_call.exchanges
        }
        assert prompts == {next(s.prompt for s in scenarios if s.name == run.name)}


def test_a_scenarios_client_closing_leaves_the_shared_connections_open(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    first, second = scenarios_of(CHAPTER)[:2]
    for scenario in (first, second):
        replay_provider.load(scenario_file(CHAPTER, scenario.name))
    settings = live_settings(replay_provider, httpbin, api_key="sk-shared-0123456789", service_key="svc-shared-0123")
    with shared_live() as runner:
        one = runner(first, settings)
        two = runner(second, settings)  # after the first one's clients were closed
    assert not one.ending.failed, one.ending
    assert not two.ending.failed, two.ending


def test_the_terminal_ends_a_live_scenario_past_its_time_limit_and_says_where_it_is(httpbin: LocalHttpbin) -> None:
    # A provider that takes the connection and never answers: only the time limit ends the run.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        settings = Settings(
            api_key="sk-silent-0123456789",
            base_url=f"http://127.0.0.1:{silent.getsockname()[1]}/v1",
            model="deepseek-flash",
            service_url=httpbin.url,
            service_key="svc-silent-0123",
        )
        said: list[str] = []
        started = time.monotonic()
        run = run_chapter(
            CHAPTER, "live", only="service_is_busy", settings=settings, time_limit=1.5, progress=said.append
        )
        waited = time.monotonic() - started
    [scenario] = run.scenarios
    assert scenario.ending.reason == "scenario_error"
    assert scenario.ending.detail == "TimeoutError: no result within the 1.5s wall-clock limit"
    assert waited < 30  # the SDK's own timeout (and retries) would take minutes
    assert any(line.endswith(f"running {CHAPTER}/service_is_busy") for line in said)


def test_the_terminal_without_a_key_says_what_to_set_once() -> None:
    with pytest.raises(ConfigError, match="Live mode needs PRIMER_API_KEY"):
        run_chapter(CHAPTER, "live", settings=Settings(api_key=None))
