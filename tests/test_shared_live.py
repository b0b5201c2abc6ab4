"""The live pool's runs share one SDK import and one set of connections, and each records its own.

Against the loopback servers: the replay provider answers ch09's scenarios
with the seed's recorded traffic, a local httpbin is the service.
"""

from __future__ import annotations

import pytest

from primer.book._run import run_live_jobs, shared_live
from primer.chapters import scenarios_of
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
